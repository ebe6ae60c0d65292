// gguf_source.h — a GGUF file as the converter's source (issue 39,
// docs/GGUF.md): what its keys say as the release's config.json, its tensors
// under the release's names (each routed expert a slice of its layer's 3-D
// tensor, decoded from the type the file stores), its vocabulary as a
// Hugging Face tokenizer.json, its chat template and sampling defaults.
//
// Architectures read: qwen3moe (Qwen3-MoE: Qwen3-30B-A3B, 235B-A22B). Any
// other is refused naming it. Every hyper-parameter comes from its key (a
// missing required key is refused by name); the layout's facts are llama.cpp
// v0.4.0's (src/llama-arch.cpp, src/llama-model.cpp, convert_hf_to_gguf.py).
//
// Vocabularies read: "none" (no tokenizer: the container has none, as a
// checkpoint without tokenizer files) and "gpt2" (byte-level BPE) with a
// pre-tokenizer named in gguf_pre_tokenizers(). Any other model or
// pre-tokenizer is refused by name, never guessed.
//
// Deliberately not here: the header's own checks, its typed keys and
// has_gguf_magic (format/gguf.h), and the block formats (format/ggml_blocks.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/tokenizer_files.h"
#include "convert/weight_source.h"

namespace waste::convert {

struct GgufRelease {
    nlohmann::ordered_json config;                 // what the release's config.json would say
    TokenizerFiles tokenizer;                      // empty for a "none" vocabulary
    std::optional<std::string> generation_config;  // from general.sampling.* and the end-of-generation ids
    std::unique_ptr<WeightSource> weights;         // the tensors under the release's names; reads the file
};

// Opens and checks the file: every tensor the architecture has, of a type
// the engine decodes, with the shape its keys imply; no tensor it does not
// have. Throws WASTE_ERR_FORMAT / WASTE_ERR_UNSUPPORTED naming the file and
// the key, tensor or value.
GgufRelease open_gguf_release(const std::string& path);
// The same checks, the tensors alone (the vocabulary is not read).
std::unique_ptr<WeightSource> open_gguf_weights(const std::string& path);

// tokenizer.ggml.pre names read, each with the pre-tokenizer regex of the
// release's tokenizer.json that llama.cpp reproduces for it.
struct GgufPreTokenizer {
    std::string_view name;
    std::vector<std::string_view> regexes;  // Split pre-tokenizers, applied in order
    bool nfc;            // the release's tokenizer.json normalises to NFC (llama.cpp does not)
    bool ignore_merges;  // the release's BPE takes a whole-word vocab token before merging
};
const std::vector<GgufPreTokenizer>& gguf_pre_tokenizers();

}  // namespace waste::convert
