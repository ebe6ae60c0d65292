// marked_calls.cpp — the special-token reply parser (see marked_calls.h).
#include "chat/replies/marked_calls.h"

#include <algorithm>

namespace waste::chat::replies {

ReplyFormat marked_calls_format(std::string name, std::vector<std::string> markers, size_t required_markers,
                                std::function<void(MarkedCallsSpec&)> configure) {
    ReplyFormat format;
    format.name = std::move(name);
    format.markers = std::move(markers);
    format.required_markers = required_markers;
    format.make = [markers = format.markers, configure = std::move(configure)](std::string_view channel) {
        MarkedCallsSpec spec;
        spec.markers = markers;
        configure(spec);
        return std::make_unique<MarkedCallsParser>(std::move(spec), channel);
    };
    return format;
}

void sectioned_calls_roles(MarkedCallsSpec& spec, bool separator) {
    size_t next = 0;
    spec.section_open = next++;
    spec.section_close = next++;
    spec.call_open = next++;
    spec.call_close = next++;
    if (separator) spec.call_sep = next++;
    spec.end_markers = {next++};
    spec.think_open = next++;
    spec.think_close = next++;
}

MarkedCallsParser::MarkedCallsParser(MarkedCallsSpec spec, std::string_view channel)
    : spec_(std::move(spec)), reasoning_(channel == "think"), skip_space_(channel == "think") {}

void MarkedCallsParser::stream(std::string_view text, ReplyDelta& delta) {
    if (skip_space_) {
        while (!text.empty() && all_space(text.substr(0, 1))) text.remove_prefix(1);
        if (text.empty()) return;
        skip_space_ = false;
    }
    if (in_section_ && all_space(text)) return;
    if (reasoning_) message_.add_reasoning(text, delta);
    else message_.add_content(text, delta);
}

void MarkedCallsParser::call_as_text(std::string_view also, ReplyDelta& delta) {
    std::string held = std::move(call_->held);
    held += also;
    call_.reset();
    // What the model wrote, whole: none of it is template spacing to drop.
    skip_space_ = false;
    const bool section = in_section_;
    in_section_ = false;
    stream(held, delta);
    in_section_ = section;
}

void MarkedCallsParser::add_to_call(std::string_view text, ReplyDelta& delta) {
    OpenCall& call = *call_;
    if (call.full) return;
    if (call.held.size() + text.size() > max_call_bytes) {
        if (!call.announced) {
            // Too long to be a call: it was text all along.
            call_as_text(text, delta);
            return;
        }
        call.full = true;  // the arguments keep what fits
        return;
    }
    call.held += text;
    if (call.announced || spec_.call_sep == no_marker) call.body += text;
    else call.head += text;
}

void MarkedCallsParser::close_call(ReplyDelta& delta) {
    OpenCall& call = *call_;
    if (call.announced) {
        message_.set_arguments(std::string(trim_space(call.body)), delta);
    } else if (spec_.call_sep == no_marker && spec_.decode_body && message_.can_open_call()) {
        if (auto decoded = spec_.decode_body(call.body, message_)) {
            message_.open_call(std::move(decoded->name), std::move(decoded->id), delta);
            message_.set_arguments(std::move(decoded->arguments), delta);
        } else {
            call_as_text(spec_.markers[spec_.call_close], delta);
            return;
        }
    } else {
        call_as_text(spec_.markers[spec_.call_close], delta);
        return;
    }
    call_.reset();
    skip_space_ = true;
}

void MarkedCallsParser::end_call(ReplyDelta& delta) {
    if (!call_) return;
    if (call_->announced) {
        message_.set_arguments(std::string(trim_space(call_->body)), delta);
        call_.reset();
    } else {
        call_as_text("", delta);
    }
}

ReplyDelta MarkedCallsParser::push_marker(size_t marker) {
    ReplyDelta delta;
    if (message_.finished || ended_ || marker >= spec_.markers.size()) return delta;
    const bool is_end = std::find(spec_.end_markers.begin(), spec_.end_markers.end(), marker) != spec_.end_markers.end();
    if (is_end) {
        end_call(delta);
        message_.finished = true;
        return delta;
    }
    if (call_) {
        if (marker == spec_.call_close) {
            close_call(delta);
        } else if (marker == spec_.call_sep && !call_->announced) {
            std::optional<DecodedCall> head;
            if (spec_.decode_head && message_.can_open_call()) head = spec_.decode_head(call_->head, message_);
            if (head) {
                message_.open_call(std::move(head->name), std::move(head->id), delta);
                call_->announced = true;
                call_->held += spec_.markers[marker];
            } else {
                call_as_text(spec_.markers[marker], delta);
            }
        } else if (marker == spec_.call_open || marker == spec_.section_close) {
            // A call the model left unclosed: it ends here.
            end_call(delta);
            if (marker == spec_.call_open) call_ = OpenCall{spec_.markers[marker], {}, {}, false, false};
            else in_section_ = false;
        } else {
            add_to_call(spec_.markers[marker], delta);
        }
        return delta;
    }
    if (marker == spec_.think_open) {
        reasoning_ = true;
        skip_space_ = true;
    } else if (marker == spec_.think_close) {
        if (reasoning_) skip_space_ = true;
        reasoning_ = false;
    } else if (marker == spec_.section_open) {
        in_section_ = true;
    } else if (marker == spec_.section_close && (in_section_ || !spec_.calls_in_section_only)) {
        in_section_ = false;
        skip_space_ = true;
    } else if (marker == spec_.call_open && (in_section_ || !spec_.calls_in_section_only)) {
        call_ = OpenCall{spec_.markers[marker], {}, {}, false, false};
    } else {
        stream(spec_.markers[marker], delta);
    }
    return delta;
}

ReplyDelta MarkedCallsParser::push_text(std::string_view text) {
    ReplyDelta delta;
    if (message_.finished || ended_ || text.empty()) return delta;
    if (call_) add_to_call(text, delta);
    else stream(text, delta);
    return delta;
}

ReplyDelta MarkedCallsParser::finish() {
    ReplyDelta delta;
    if (ended_) return delta;
    if (!message_.finished) end_call(delta);
    ended_ = true;
    return delta;
}

}  // namespace waste::chat::replies
