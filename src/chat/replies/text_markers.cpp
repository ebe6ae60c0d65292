// text_markers.cpp — the incremental text marker scanner (text_markers.h).
#include "chat/replies/text_markers.h"

#include <algorithm>

namespace waste::chat::replies {

TextMarkerScanner::TextMarkerScanner(std::vector<Marker> markers) : markers_(std::move(markers)) {
    std::erase_if(markers_, [](const Marker& m) { return m.text.empty(); });
    // longest first, so that of two markers at one place the longer wins
    std::stable_sort(markers_.begin(), markers_.end(), [](const Marker& a, const Marker& b) { return a.text.size() > b.text.size(); });
}

void TextMarkerScanner::push(std::string_view text, std::vector<Event>& out) {
    if (text.empty()) return;
    held_ += text;
    std::string_view rest = held_;
    std::string pending;
    size_t consumed = 0;
    size_t at = 0;
    while (at < rest.size()) {
        const Marker* hit = nullptr;
        bool could_be = false;
        for (const Marker& m : markers_) {
            const std::string_view tail = rest.substr(at);
            if (tail.substr(0, m.text.size()) == m.text) {
                hit = &m;
                break;
            }
            if (tail.size() < m.text.size() && std::string_view(m.text).substr(0, tail.size()) == tail) could_be = true;
        }
        if (hit) {
            if (at > consumed) out.push_back({false, 0, std::string(rest.substr(consumed, at - consumed))});
            out.push_back({true, hit->index, {}});
            at += hit->text.size();
            consumed = at;
            continue;
        }
        if (could_be) break;  // the rest may still become a marker: hold it
        ++at;
    }
    if (at > consumed) out.push_back({false, 0, std::string(rest.substr(consumed, at - consumed))});
    held_.erase(0, at);
}

void TextMarkerScanner::flush(std::vector<Event>& out) {
    if (!held_.empty()) out.push_back({false, 0, std::move(held_)});
    held_.clear();
}

}  // namespace waste::chat::replies
