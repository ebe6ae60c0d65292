// specials.cpp — specials.json and the markup-mode matcher (specials.h).
#include "text/specials.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "text/rank_table.h"

namespace waste::text {

std::vector<SpecialToken> parse_specials_json(std::string_view json_text, const std::string& where) {
    nlohmann::json document;
    try {
        document = nlohmann::json::parse(json_text.begin(), json_text.end());
    } catch (const nlohmann::json::exception& e) {
        fail_format("{}: not JSON: {}", where, e.what());
    }
    if (!document.is_array()) fail_format("{}: expected an array of {{\"id\", \"text\"}} objects", where);
    if (document.size() > max_specials)
        fail_format("{}: {} specials, more than the {} allowed", where, document.size(), max_specials);
    std::vector<SpecialToken> specials;
    std::unordered_map<std::string, size_t> index_of_text;
    std::unordered_map<int32_t, size_t> index_of_id;
    for (size_t i = 0; i < document.size(); ++i) {
        const auto& entry = document[i];
        if (!entry.is_object()) fail_format("{}[{}]: expected an object, got {}", where, i, entry.dump());
        const auto id = entry.find("id");
        const auto text = entry.find("text");
        if (id == entry.end() || !id->is_number_integer())
            fail_format("{}[{}]: \"id\" must be an integer", where, i);
        if (text == entry.end() || !text->is_string()) fail_format("{}[{}]: \"text\" must be a string", where, i);
        const bool negative = id->is_number_integer() && !id->is_number_unsigned() && id->get<int64_t>() < 0;
        if (negative || id->get<uint64_t>() > static_cast<uint64_t>(max_token_id))
            fail_format("{}[{}]: id {} is out of range [0, {}]", where, i, id->dump(), max_token_id);
        SpecialToken special{static_cast<int32_t>(id->get<int64_t>()), text->get<std::string>()};
        if (special.text.empty() || special.text.size() > max_special_bytes)
            fail_format("{}[{}]: text of {} bytes (1 to {} allowed)", where, i, special.text.size(),
                        max_special_bytes);
        if (auto [it, fresh] = index_of_text.emplace(special.text, i); !fresh)
            fail_format("{}[{}]: text \"{}\" was already given at [{}]", where, i, escape_bytes(special.text),
                        it->second);
        if (auto [it, fresh] = index_of_id.emplace(special.id, i); !fresh)
            fail_format("{}[{}]: id {} was already given at [{}]", where, i, special.id, it->second);
        specials.push_back(std::move(special));
    }
    return specials;
}

SpecialMatcher::SpecialMatcher(const std::vector<SpecialToken>& specials) {
    for (const auto& special : specials) {
        const auto first = static_cast<uint8_t>(special.text[0]);
        by_first_byte_[first].push_back(special);
        starts_[first] = true;
    }
    for (auto& candidates : by_first_byte_)
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const SpecialToken& a, const SpecialToken& b) { return a.text.size() > b.text.size(); });
}

std::optional<SpecialMatcher::Match> SpecialMatcher::find(std::string_view text, size_t from) const {
    for (size_t i = from; i < text.size(); ++i) {
        const auto byte = static_cast<uint8_t>(text[i]);
        if (!starts_[byte]) continue;
        const std::string_view rest = text.substr(i);
        for (const SpecialToken& special : by_first_byte_[byte])
            if (rest.starts_with(special.text)) return Match{i, special.text.size(), special.id, special.lstrip, special.rstrip};
    }
    return std::nullopt;
}

}  // namespace waste::text
