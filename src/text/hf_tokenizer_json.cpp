// hf_tokenizer_json.cpp — reading and checking a tokenizer.json
// (hf_tokenizer_json.h).
#include "text/hf_tokenizer_json.h"

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "platform/error.h"
#include "text/byte_level.h"
#include "text/hf_pipeline.h"
#include "text/hf_regex.h"

namespace waste::text {
namespace {

using nlohmann::json;

// A short, printable rendering of a JSON value for messages.
std::string shown(const json& value) {
    std::string text = value.dump(-1, ' ', true, json::error_handler_t::replace);
    if (text.size() > 80) text = text.substr(0, 77) + "...";
    return text;
}

[[noreturn]] void unsupported(const std::string& where, const std::string& component, const json& value) {
    fail(WASTE_ERR_UNSUPPORTED, "{}: {} {} is not supported", where, component, shown(value));
}

const json& member(const json& object, const char* key, const std::string& where, const std::string& path) {
    if (!object.is_object()) fail(WASTE_ERR_FORMAT, "{}: {} is not an object", where, path);
    const auto it = object.find(key);
    if (it == object.end()) fail(WASTE_ERR_FORMAT, "{}: {}.{} is missing", where, path, key);
    return *it;
}

// A boolean member, `fallback` when absent or null.
bool flag(const json& object, const char* key, bool fallback, const std::string& where, const std::string& path) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(WASTE_ERR_FORMAT, "{}: {}.{} is {}, not true or false", where, path, key, shown(*it));
    return it->get<bool>();
}

std::string type_of(const json& component, const std::string& where, const std::string& path) {
    const json& type = member(component, "type", where, path);
    if (!type.is_string()) fail(WASTE_ERR_FORMAT, "{}: {}.type is {}, not a string", where, path, shown(type));
    return type.get<std::string>();
}

// NFC or nothing; a Sequence may nest.
void read_normalizer(const json& normalizer, const std::string& where, const std::string& path, bool& nfc, int depth) {
    if (normalizer.is_null()) return;
    if (depth > 8) fail(WASTE_ERR_FORMAT, "{}: {} nests Sequences more than 8 deep", where, path);
    const std::string type = type_of(normalizer, where, path);
    if (type == "NFC") {
        nfc = true;
    } else if (type == "Sequence") {
        const json& list = member(normalizer, "normalizers", where, path);
        if (!list.is_array() || list.size() > 64)
            fail(WASTE_ERR_FORMAT, "{}: {}.normalizers is not an array of at most 64", where, path);
        for (size_t i = 0; i < list.size(); ++i)
            read_normalizer(list[i], where, path + ".normalizers[" + std::to_string(i) + "]", nfc, depth + 1);
    } else {
        unsupported(where, path + " type", type);
    }
}

void read_pre_tokenizer(const json& pre_tokenizer, const std::string& where, std::vector<HfPipeline::Split>& splits) {
    std::vector<std::pair<const json*, std::string>> steps;
    if (pre_tokenizer.is_null()) unsupported(where, "pre_tokenizer", pre_tokenizer);  // needs a ByteLevel step
    if (type_of(pre_tokenizer, where, "pre_tokenizer") == "Sequence") {
        const json& list = member(pre_tokenizer, "pretokenizers", where, "pre_tokenizer");
        if (!list.is_array() || list.empty() || list.size() > 16)
            fail(WASTE_ERR_FORMAT, "{}: pre_tokenizer.pretokenizers is not an array of 1 to 16", where);
        for (size_t i = 0; i < list.size(); ++i)
            steps.emplace_back(&list[i], "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]");
    } else {
        steps.emplace_back(&pre_tokenizer, "pre_tokenizer");
    }
    for (size_t i = 0; i < steps.size(); ++i) {
        const json& step = *steps[i].first;
        const std::string& path = steps[i].second;
        const std::string type = type_of(step, where, path);
        if (type == "ByteLevel") {
            if (i + 1 != steps.size())
                fail(WASTE_ERR_UNSUPPORTED, "{}: {}: ByteLevel before another pre-tokenizer is not supported", where,
                     path);
            if (flag(step, "add_prefix_space", false, where, path))
                unsupported(where, path + ".add_prefix_space", true);
            if (flag(step, "use_regex", true, where, path)) unsupported(where, path + ".use_regex", true);
            return;
        }
        if (type != "Split") unsupported(where, path + " type", type);
        const json& pattern = member(step, "pattern", where, path);
        if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
            unsupported(where, path + ".pattern", pattern);
        const json& behavior = member(step, "behavior", where, path);
        if (behavior != "Isolated") unsupported(where, path + ".behavior", behavior);
        if (flag(step, "invert", false, where, path)) unsupported(where, path + ".invert", true);
        const std::string label = where + " " + path;
        splits.push_back({pcre2_from_hf_regex(pattern["Regex"].get<std::string>(), label), label});
    }
    fail(WASTE_ERR_UNSUPPORTED, "{}: pre_tokenizer has no ByteLevel step (the vocab is byte-level)", where);
}

void check_decoder_and_post_processor(const json& root, const std::string& where) {
    const auto decoder = root.find("decoder");
    if (decoder == root.end() || decoder->is_null() || type_of(*decoder, where, "decoder") != "ByteLevel")
        unsupported(where, "decoder", decoder == root.end() ? json() : *decoder);
    const auto post = root.find("post_processor");
    if (post != root.end() && !post->is_null()) {
        const std::string type = type_of(*post, where, "post_processor");
        if (type == "Sequence") {
            const json& list = member(*post, "processors", where, "post_processor");
            if (!list.is_array() || list.size() > 16)
                fail(WASTE_ERR_FORMAT, "{}: post_processor.processors is not an array of at most 16", where);
            for (const json& processor : list) {
                const std::string inner = type_of(processor, where, "post_processor.processors[]");
                if (inner != "ByteLevel" && inner != "TemplateProcessing")
                    unsupported(where, "post_processor.processors[] type", inner);
            }
        } else if (type != "ByteLevel" && type != "TemplateProcessing") {
            unsupported(where, "post_processor type", type);
        }
    }
    for (const char* key : {"truncation", "padding"})
        if (const auto it = root.find(key); it != root.end() && !it->is_null()) unsupported(where, key, *it);
}

struct AddedToken {
    SpecialToken token;
    bool normalized;
};

std::vector<AddedToken> read_added_tokens(const json& root, const std::string& where) {
    std::vector<AddedToken> tokens;
    const auto list = root.find("added_tokens");
    if (list == root.end() || list->is_null()) return tokens;
    if (!list->is_array()) fail(WASTE_ERR_FORMAT, "{}: added_tokens is not an array", where);
    if (list->size() > max_specials)
        fail(WASTE_ERR_FORMAT, "{}: {} added tokens, more than {}", where, list->size(), max_specials);
    std::unordered_map<std::string, size_t> seen;
    for (size_t i = 0; i < list->size(); ++i) {
        const json& entry = (*list)[i];
        const std::string path = "added_tokens[" + std::to_string(i) + "]";
        const json& id = member(entry, "id", where, path);
        const json& content = member(entry, "content", where, path);
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > max_token_id)
            fail(WASTE_ERR_FORMAT, "{}: {}.id {} is not an integer in [0, {}]", where, path, shown(id), max_token_id);
        if (!content.is_string() || content.get_ref<const std::string&>().empty() ||
            content.get_ref<const std::string&>().size() > max_special_bytes)
            fail(WASTE_ERR_FORMAT, "{}: {}.content {} is not a string of 1 to {} bytes", where, path, shown(content),
                 max_special_bytes);
        // single_word (match only between non-word characters) is refused:
        // the reference here (@huggingface/tokenizers, the JS port) ignores
        // it, so nothing could check an implementation of it.
        if (flag(entry, "single_word", false, where, path)) unsupported(where, path + ".single_word", true);
        const bool special = flag(entry, "special", false, where, path);
        AddedToken token{{static_cast<int32_t>(id.get<int64_t>()), content.get<std::string>(),
                          flag(entry, "lstrip", false, where, path), flag(entry, "rstrip", false, where, path)},
                         flag(entry, "normalized", !special, where, path)};
        if (const auto [it, fresh] = seen.emplace(token.token.text, i); !fresh)
            fail(WASTE_ERR_FORMAT, "{}: {}.content \"{}\" was already added_tokens[{}]", where, path,
                 escape_bytes(token.token.text), it->second);
        tokens.push_back(std::move(token));
    }
    return tokens;
}

struct Model {
    RankTable vocab;
    MergeTable merges;
    bool ignore_merges;
};

Model read_model(const json& root, const std::string& where, const std::vector<AddedToken>& added) {
    const json& model = member(root, "model", where, "");
    const std::string type = type_of(model, where, "model");
    if (type != "BPE") unsupported(where, "model type", type);
    for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"})
        if (const auto it = model.find(key); it != model.end() && !it->is_null() && *it != "")
            unsupported(where, std::string("model.") + key, *it);
    if (flag(model, "byte_fallback", false, where, "model")) unsupported(where, "model.byte_fallback", true);
    const bool ignore_merges = flag(model, "ignore_merges", false, where, "model");

    std::unordered_map<std::string, int32_t> added_ids;
    for (const auto& token : added) added_ids.emplace(token.token.text, token.token.id);

    const json& vocab = member(model, "vocab", where, "model");
    if (!vocab.is_object()) fail(WASTE_ERR_FORMAT, "{}: model.vocab is not an object", where);
    if (vocab.size() > max_vocab_entries)
        fail(WASTE_ERR_FORMAT, "{}: model.vocab has {} tokens, more than {}", where, vocab.size(), max_vocab_entries);
    std::unordered_map<std::string, uint32_t> id_of;  // byte-level spelling -> id
    id_of.reserve(vocab.size());
    std::vector<RankTable::Entry> entries;
    std::string arena;
    size_t position = 0;
    for (const auto& [key, value] : vocab.items()) {
        ++position;
        if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > RankTable::max_rank)
            fail(WASTE_ERR_FORMAT, "{}: model.vocab[\"{}\"] is {}, not an id in [0, {}]", where, escape_bytes(key),
                 shown(value), RankTable::max_rank);
        const auto id = static_cast<uint32_t>(value.get<int64_t>());
        if (key.size() > 4 * RankTable::max_token_bytes)
            fail(WASTE_ERR_FORMAT, "{}: model.vocab token {} is {} bytes long, more than {}", where, id, key.size(),
                 4 * RankTable::max_token_bytes);
        const auto bytes = bytes_of_byte_level(key);
        if (!bytes) {
            const auto it = added_ids.find(key);
            if (it == added_ids.end())
                fail(WASTE_ERR_UNSUPPORTED, "{}: model.vocab[\"{}\"] (id {}) is not a byte-level token", where,
                     escape_bytes(key), id);
            if (static_cast<uint32_t>(it->second) != id)
                fail(WASTE_ERR_FORMAT, "{}: model.vocab gives \"{}\" id {}, added_tokens id {}", where,
                     escape_bytes(key), id, it->second);
            continue;  // an added token the vocab also lists: a special, not a rank
        }
        if (added_ids.count(key) > 0)
            unsupported(where, "added token that is also a byte-level vocab token:", key);
        entries.push_back({id, static_cast<uint32_t>(arena.size()), static_cast<uint32_t>(bytes->size()), position});
        arena += *bytes;
        id_of.emplace(key, id);
    }
    RankTable table = RankTable::from_entries(entries, arena, where + " model.vocab", "entry");

    const json& merges = member(model, "merges", where, "model");
    if (!merges.is_array()) fail(WASTE_ERR_FORMAT, "{}: model.merges is not an array", where);
    if (merges.size() > MergeTable::max_merges)
        fail(WASTE_ERR_FORMAT, "{}: model.merges has {} entries, more than {}", where, merges.size(),
             MergeTable::max_merges);
    MergeTable table_of_merges(merges.size());
    std::string joined;
    for (size_t i = 0; i < merges.size(); ++i) {
        const json& merge = merges[i];
        std::string_view left, right;
        if (merge.is_string()) {
            const std::string& text = merge.get_ref<const std::string&>();
            const size_t space = text.find(' ');
            if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
                fail(WASTE_ERR_FORMAT, "{}: model.merges[{}] {} is not \"left right\"", where, i, shown(merge));
            left = std::string_view(text).substr(0, space);
            right = std::string_view(text).substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            left = merge[0].get_ref<const std::string&>();
            right = merge[1].get_ref<const std::string&>();
        } else {
            fail(WASTE_ERR_FORMAT, "{}: model.merges[{}] {} is neither \"left right\" nor [left, right]", where, i,
                 shown(merge));
        }
        joined.assign(left);
        joined.append(right);
        const auto l = id_of.find(std::string(left));
        const auto r = id_of.find(std::string(right));
        const auto result = id_of.find(joined);
        if (l == id_of.end() || r == id_of.end() || result == id_of.end())
            fail(WASTE_ERR_FORMAT, "{}: model.merges[{}] {}: \"{}\" is not in the vocab", where, i, shown(merge),
                 escape_bytes(l == id_of.end() ? std::string(left) : r == id_of.end() ? std::string(right) : joined));
        table_of_merges.add(l->second, r->second, {static_cast<uint32_t>(i), result->second});
    }
    return {std::move(table), std::move(table_of_merges), ignore_merges};
}

}  // namespace

std::shared_ptr<const Tokenizer> parse_tokenizer_json(std::string_view text, const std::string& where,
                                                      const TokenizerIds& ids) {
    if (text.size() > max_tokenizer_json_bytes)
        fail(WASTE_ERR_FORMAT, "{}: {} bytes, more than the {} allowed", where, text.size(), max_tokenizer_json_bytes);
    json root;
    try {
        root = json::parse(text);
    } catch (const json::exception& error) {
        fail(WASTE_ERR_FORMAT, "{}: not JSON: {}", where, error.what());
    }
    if (!root.is_object()) fail(WASTE_ERR_FORMAT, "{}: not a JSON object", where);

    bool nfc = false;
    if (const auto normalizer = root.find("normalizer"); normalizer != root.end())
        read_normalizer(*normalizer, where, "normalizer", nfc, 0);
    std::vector<HfPipeline::Split> splits;
    read_pre_tokenizer(member(root, "pre_tokenizer", where, ""), where, splits);
    check_decoder_and_post_processor(root, where);
    const std::vector<AddedToken> added = read_added_tokens(root, where);
    Model model = read_model(root, where, added);

    std::vector<SpecialToken> specials, normalized;
    for (const auto& token : added) {
        specials.push_back(token.token);
        if (token.normalized) normalized.push_back(token.token);
    }
    std::shared_ptr<const HfPipeline> pipeline;
    try {
        pipeline = std::make_shared<const HfPipeline>(nfc, splits, std::move(model.merges), model.ignore_merges,
                                                      std::move(normalized));
    } catch (const Error& error) {  // a regex PCRE2 does not compile: the file's fault
        if (error.status() != WASTE_ERR_INTERNAL) throw;
        fail(WASTE_ERR_FORMAT, "{}", error.what());
    }
    try {
        auto tokenizer = std::make_shared<Tokenizer>(std::move(model.vocab), std::move(specials), std::move(pipeline),
                                                     ids.bos, ids.eos, ids.model_vocab);
        tokenizer->add_eos_ids(ids.eos_ids);
        return tokenizer;
    } catch (const Error& error) {
        fail(error.status(), "{}: {}", where, error.what());
    }
}

}  // namespace waste::text
