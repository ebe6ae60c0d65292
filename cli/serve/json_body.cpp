// json_body.cpp — see json_body.h.
#include "json_body.h"

#include <algorithm>
#include <vector>

namespace waste_serve {

namespace {

using nlohmann::json;

// The terms of parsed_json_bytes, for nlohmann::json 3.11 on libstdc++
// (64-bit), checked with heaptrack on the server:
// - a value is 16 bytes, counted twice more where it sits in an array (a
//   vector grown by doubling holds up to twice its elements) and twice
//   more again for its destruction (nlohmann frees a tree without
//   recursion by moving every value onto a vector of its own, grown by
//   doubling: a 2M-element array peaked at 50 MB there): 64 in all;
// - a string adds its 32-byte std::string on the heap and its characters
//   past the 15 kept inline;
// - the lexer keeps the text it read since its last string, number or
//   literal (whitespace and brackets included: 6.3 MB for a 4 MB run of
//   spaces) in a vector grown by doubling, and builds each string in a
//   second one: twice the longest such run, four times the longest string;
// - an array or object adds its container (24 or 48 bytes), an object's
//   member a map node (32 bytes of links, its key's string, its value);
// - every heap block adds 16 bytes of the allocator's.
// So "[0,0,...]" takes ~64 bytes for 2 of text, and a chat request of long
// strings about 3 times its longest string plus its text.
constexpr uint64_t kBlock = 16;
constexpr uint64_t kValue = 64;
constexpr uint64_t kString = 32 + kBlock;
constexpr uint64_t kArray = 24 + kBlock;
constexpr uint64_t kObject = 48 + kBlock;
constexpr uint64_t kMember = 32 + 32 + kBlock;

uint64_t characters(size_t length) { return length > 15 ? length + 1 + kBlock : 0; }

// The longest stretch of text outside strings, numbers and literals
// (whitespace, brackets, colons, commas), which the lexer keeps whole.
size_t longest_structure_run(const std::string& text) {
    size_t longest = 0;
    size_t run = 0;
    bool in_string = false;
    bool escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            run = 0;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',') {
            longest = std::max(longest, ++run);
        } else {
            run = 0;
        }
    }
    return longest;
}

struct TooDeep {};

// A SAX pass that adds up the terms above and enforces the depth.
class Measure : public nlohmann::json_sax<json> {
public:
    uint64_t bytes = 0;
    size_t longest = 0;  // the longest string or key

    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool string(string_t& text) override {
        longest = std::max(longest, text.size());
        return value() && add(kString + characters(text.size()));
    }
    bool binary(binary_t&) override { return value(); }
    bool start_object(std::size_t) override { return open(false) && add(kObject); }
    bool key(string_t& text) override {
        longest = std::max(longest, text.size());
        return add(kMember + characters(text.size()));
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(true) && add(kArray); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        throw bad_request(std::string("the request body is not valid JSON: ") + e.what());
    }

private:
    bool value() { return add(kValue); }
    bool add(uint64_t n) {
        bytes += n;
        return true;
    }
    bool open(bool array) {
        value();
        if (in_array_.size() > static_cast<size_t>(kMaxJsonDepth)) throw TooDeep{};  // parse() draws the exact line
        in_array_.push_back(array);
        return true;
    }
    bool close() {
        in_array_.pop_back();
        return true;
    }
    std::vector<bool> in_array_;
};

}  // namespace

uint64_t parsed_json_bytes(const std::string& text) {
    if (text.empty()) throw bad_request("the request body is empty: send a JSON object");
    Measure measure;
    try {
        json::sax_parse(text, &measure);
    } catch (const TooDeep&) {
        throw bad_request("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    return measure.bytes + 4 * (measure.longest + kBlock) + 2 * (longest_structure_run(text) + kBlock);
}

json parse_body(const std::string& body, RequestMemory::Reservation* memory, uint64_t* parsed_bytes) {
    if (body.empty()) throw bad_request("the request body is empty: send a JSON object");
    if (memory) {
        const uint64_t parsed = parsed_json_bytes(body);
        memory->grow(parsed, "the request's parsed JSON");
        if (parsed_bytes) *parsed_bytes = parsed;
    }
    json value;
    try {
        value = json::parse(body, [](int depth, json::parse_event_t, json&) {
            if (depth > kMaxJsonDepth) throw TooDeep{};
            return true;
        });
    } catch (const TooDeep&) {
        throw bad_request("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } catch (const json::exception& e) {
        // e.what() names the byte offset and the reason (including ill-formed UTF-8).
        throw bad_request(std::string("the request body is not valid JSON: ") + e.what());
    }
    if (!value.is_object()) throw bad_request(std::string("the request body must be a JSON object, not ") + value.type_name());
    return value;
}

}  // namespace waste_serve
