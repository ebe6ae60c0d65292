// pretokenizer.cpp — PCRE2 compilation and the match loop (pretokenizer.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/pretokenizer.h"

#include <pcre2.h>

#include "platform/error.h"

namespace waste::text {
namespace {

std::string pcre2_message(int code) {
    PCRE2_UCHAR buffer[256];
    if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return "PCRE2 error " + std::to_string(code);
    return reinterpret_cast<const char*>(buffer);
}

// Advances past one UTF-8 character (the text is valid).
size_t next_character(std::string_view text, size_t position) {
    ++position;
    while (position < text.size() && (static_cast<uint8_t>(text[position]) & 0xC0) == 0x80) ++position;
    return position;
}

}  // namespace

Pretokenizer::Pretokenizer(PatternKind kind) : kind_(kind), label_(pattern_name(kind)) {
    compile(pattern_source(kind));
}

Pretokenizer::Pretokenizer(std::string_view source, PatternKind reported_kind)
    : kind_(reported_kind), label_(pattern_name(reported_kind)) {
    compile(source);
}

Pretokenizer::Pretokenizer(std::string_view source, std::string label)
    : kind_(PatternKind::o200k), label_(std::move(label)) {
    compile(source);
}

void Pretokenizer::compile(std::string_view source) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &error_code, &error_offset,
                                     nullptr);
    if (!code)
        fail(WASTE_ERR_INTERNAL, "pre-tokenizer pattern {}: {} at offset {}", label_,
             pcre2_message(error_code), error_offset);
    code_ = code;
    // Without JIT (a platform PCRE2 lacks it for) matching still works, slower.
    jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Pretokenizer::~Pretokenizer() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Pretokenizer::Cursor::Cursor(const Pretokenizer& pretokenizer, std::string_view text)
    : owner_(pretokenizer), text_(text) {
    match_data_ = pcre2_match_data_create(1, nullptr);
    if (!match_data_) throw std::bad_alloc();
}

Pretokenizer::Cursor::~Cursor() { pcre2_match_data_free(static_cast<pcre2_match_data*>(match_data_)); }

bool Pretokenizer::Cursor::next(std::string_view& piece) {
    auto* code = static_cast<const pcre2_code*>(owner_.code_);
    auto* match_data = static_cast<pcre2_match_data*>(match_data_);
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text_.data());
    while (position_ < text_.size()) {
        // The text was validated once by the caller: checking it again on
        // every call would make a long text quadratic.
        int result = owner_.jit_ ? pcre2_jit_match(code, subject, text_.size(), position_, 0, match_data, nullptr)
                                 : PCRE2_ERROR_JIT_BADOPTION;
        if (result == PCRE2_ERROR_JIT_STACKLIMIT || result == PCRE2_ERROR_JIT_BADOPTION)
            result = pcre2_match(code, subject, text_.size(), position_, PCRE2_NO_UTF_CHECK, match_data, nullptr);
        if (result == PCRE2_ERROR_NOMATCH) break;
        if (result < 0)
            fail(WASTE_ERR_INTERNAL, "pre-tokenizer {}: matching at byte {} failed: {}", owner_.label_,
                 position_, pcre2_message(result));
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
        const size_t begin = ovector[0], end = ovector[1];
        WASTE_CHECK(begin >= position_ && end >= begin && end <= text_.size());
        if (end == begin) {
            // No pattern here matches empty; were one to, step over a
            // character as find_iter does rather than loop.
            position_ = next_character(text_, begin);
            continue;
        }
        piece = text_.substr(begin, end - begin);
        position_ = end;
        return true;
    }
    position_ = text_.size();
    return false;
}

}  // namespace waste::text
