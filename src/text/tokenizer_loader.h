// tokenizer_loader.h — building a Tokenizer from files: a container's
// tokenizer.model + specials.json, or a rank file given directly.
//
// Which pre-tokenizer pattern a container uses is not recorded by format v0.
// The rule (documented at waste_model_tokenizer in waste.h): a container
// whose config.model_type is "gpt_oss" uses o200k's pattern (gpt-oss's
// o200k_harmony vocabulary); every other container uses Kimi's, because v0
// is the Kimi family's format and Kimi's tokenizer.model is the tiktoken rank
// file it carries. A caller overrides the rule by naming a pattern.
//
// A container that holds a tokenizer.json (a converted Hugging Face release:
// docs/FORMAT.md) is read by hf_tokenizer_json.h instead, with BOS and EOS
// from config.bos_token_id / eos_token_id (none when absent) and the same
// vocab_size rule; a pattern cannot be named for it.
//
// BOS and EOS (container-v0 §6): BOS is config.bos_token_id, or else the
// number of ranks (the first id after the vocabulary); EOS is
// config.eos_token_id (a list's first), or none; every EOS id of the config
// (ModelConfig::eos_ids) is in eos_ids(). Every rank and special id must be below
// config.vocab_size: a token the model cannot embed is a broken container.
// The ids left over below config.vocab_size (a reserved tail, or gaps) are
// reserved: the model may generate them, and they decode to nothing.
//
// Deliberately not here: the tokenization itself (tokenizer.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "format/container.h"
#include "text/tokenizer.h"

namespace waste::text {

// Bounds on the files (why: Kimi's and o200k's rank files are ~2.5 MB,
// their specials a few KB).
inline constexpr uint64_t max_rank_file_bytes = 256ull << 20;
inline constexpr uint64_t max_specials_file_bytes = 16ull << 20;

PatternKind default_pattern(const format::ModelConfig& config);

// WASTE_ERR_UNSUPPORTED "... has no tokenizer.model or tokenizer.json" for a
// container without either.
std::shared_ptr<const Tokenizer> load_container_tokenizer(const format::Container& container,
                                                          std::optional<PatternKind> pattern);

// The size of the file the container's token bytes are read from
// (tokenizer.json, else tokenizer.model), 0 without one: every token's bytes are spelled there
// in at least as many characters, so it bounds their total (the memory
// plan's grammar reserve, grammar/grammar_memory.h).
uint64_t container_tokenizer_file_bytes(const format::Container& container);

// The container's tokenizer.json at path (the rules above).
std::shared_ptr<const Tokenizer> load_container_tokenizer_json(const format::Container& container,
                                                               const std::string& path,
                                                               std::optional<PatternKind> pattern);

// A rank file and, optionally, the text of a specials.json; no BOS or EOS
// unless the specials name "[BOS]" / "[EOS]" (Kimi's spelling).
std::shared_ptr<const Tokenizer> load_tokenizer_file(const std::string& rank_file_path, PatternKind pattern,
                                                     const std::optional<std::string>& specials_json);

// A whole file, refusing one larger than max_bytes; WASTE_ERR_IO naming the
// path when it cannot be read.
std::string read_bounded_file(const std::string& path, uint64_t max_bytes);

}  // namespace waste::text
