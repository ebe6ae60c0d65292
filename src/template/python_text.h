// python_text.h — Python's text rules that a template's output depends on:
// str() and repr() of values, float repr (shortest round trip, 1e+16,
// 1e-05), str.isspace's whitespace, and str indexing/slicing/length by code
// point over UTF-8.
//
// Deliberately not here: JSON text (tojson.h), string methods (methods.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/value.h"

namespace waste::tmpl {

// Python str(value) (what {{ value }} prints; Undefined prints nothing).
std::string python_str(const Value& value);
// Python repr(value), as inside a printed list or dict.
std::string python_repr(const Value& value);
std::string python_float_repr(double value);
std::string python_string_repr(std::string_view text);

// UTF-8 <-> code points. Invalid bytes decode as U+FFFD-free raw bytes
// 0xDC80+byte (Python's surrogateescape), so nothing is lost.
std::vector<char32_t> decode_utf8(std::string_view text);
std::string encode_utf8(const std::vector<char32_t>& code_points, size_t begin = 0, size_t end = SIZE_MAX);
void append_utf8(std::string& out, char32_t code_point);
bool is_ascii(std::string_view text);
size_t code_point_length(std::string_view text);

bool is_python_space(char32_t c);  // str.isspace()
// str.strip/lstrip/rstrip: chars absent means whitespace.
std::string python_strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);

// Python slice semantics over a length: the indices a[start:stop:step] visits.
std::vector<int64_t> slice_indices(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step);

}  // namespace waste::tmpl
