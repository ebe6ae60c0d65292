/*
 * waste.h — the public C API of libwaste, the Weight-Aware Streaming Tensor
 * Engine.
 *
 * Everything a client (the CLI, a server, a binding) can do goes through this
 * header. Rules every function keeps:
 *   - no global state: all state lives behind the opaque handles;
 *   - never prints, never exits, never aborts on bad input;
 *   - returns a waste_status; on failure, fills the caller's waste_error (when
 *     not NULL) with a message that names the offending object and value;
 *   - strings returned to the caller are owned by the caller and released with
 *     waste_string_free.
 *
 * Status codes are stable; their numeric values never change meaning.
 */
#ifndef WASTE_WASTE_H
#define WASTE_WASTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WASTE_API __declspec(dllexport)
#else
#define WASTE_API __attribute__((visibility("default")))
#endif

typedef enum waste_status {
    WASTE_OK = 0,
    WASTE_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, an out-of-range option   */
    WASTE_ERR_IO = 2,               /* a file could not be opened, read, written */
    WASTE_ERR_FORMAT = 3,           /* a container breaks a rule of format v0     */
    WASTE_ERR_CORRUPT = 4,          /* a record failed its checks or checksum     */
    WASTE_ERR_UNSUPPORTED = 5,      /* valid, but not something this build runs   */
    WASTE_ERR_OUT_OF_MEMORY = 6,    /* an allocation failed                        */
    WASTE_ERR_BUDGET = 7,           /* the memory budget is below the floor        */
    WASTE_ERR_CONTEXT_FULL = 8,     /* the session's context length is exhausted   */
    WASTE_ERR_CANCELLED = 9,        /* a callback asked to stop                    */
    WASTE_ERR_INTERNAL = 10         /* a broken invariant: a bug, please report it */
} waste_status;

/* The message buffer a failing call fills. Always NUL-terminated. */
#define WASTE_ERROR_MESSAGE_BYTES 1024
typedef struct waste_error {
    waste_status status;
    char message[WASTE_ERROR_MESSAGE_BYTES];
} waste_error;

/* A short, static, human name for a status ("format error"). Never NULL. */
WASTE_API const char* waste_status_name(waste_status status);

/* The library's version string, e.g. "0.1.0". Never NULL. */
WASTE_API const char* waste_version(void);

/* Releases a string returned by this library. NULL is ignored. */
WASTE_API void waste_string_free(char* string);

/* ------------------------------------------------------------------ model */

typedef struct waste_model waste_model;

typedef enum waste_open_flags {
    /* Read and validate the manifest, codebooks and bank sizes, but do not
     * load the trunk: enough for info and plan on any size of container. */
    WASTE_OPEN_METADATA_ONLY = 1u << 0,
    /* Check every expert record's CRC-32 when it is read (--verify). */
    WASTE_OPEN_VERIFY_CHECKSUMS = 1u << 1,
    /* Do not try direct I/O; read through the page cache (reported as such). */
    WASTE_OPEN_BUFFERED_IO = 1u << 2
} waste_open_flags;

/* Which cached expert record to evict when a new one must be read. Placement
 * only: every policy gives bit-identical output, at different hit rates
 * (docs/BENCHMARKS.md, "Expert cache policies"). The numbers are stable. */
typedef enum waste_cache_policy {
    WASTE_CACHE_POLICY_DEFAULT = 0, /* the library's choice: today REUSE            */
    WASTE_CACHE_POLICY_REUSE = 1,   /* "reuse": the fewest expected hits per unit of
                                       cache space-time, from a reuse curve learned
                                       online per layer visit                        */
    WASTE_CACHE_POLICY_LRU = 2,     /* "lru": least recently used                    */
    WASTE_CACHE_POLICY_LFRU = 3     /* "lfru": upstream's, the least often used of 16
                                       random samples (then least recently)          */
} waste_cache_policy;

typedef struct waste_open_options {
    uint32_t flags;            /* a set of waste_open_flags                     */
    uint64_t budget_bytes;     /* RAM ceiling; 0 = the default budget            */
    uint32_t context_length;   /* tokens a session may hold; 0 = 4096            */
    uint32_t threads;          /* compute threads; 0 = one per core              */
    uint32_t cache_policy;     /* a waste_cache_policy; 0 = the default (REUSE)  */
} waste_open_options;

/* Fills *options with the defaults (all zero today; call it anyway so that
 * fields added later get their defaults). */
WASTE_API void waste_open_options_init(waste_open_options* options);

/* Opens the container directory at path. On success *out_model owns it. */
WASTE_API waste_status waste_model_open(const char* path, const waste_open_options* options,
                                        waste_model** out_model, waste_error* error);

WASTE_API void waste_model_close(waste_model* model);

/* A JSON object describing the model: architecture, layers, KDA/MLA split,
 * experts, top-k, hidden, parameters (total, active, trunk), quantisation,
 * bytes per expert record, container size, direct-I/O status.
 * Documented in docs/CLI.md ("waste info --json"). */
WASTE_API waste_status waste_model_info_json(const waste_model* model, char** out_json,
                                             waste_error* error);

typedef struct waste_plan_options {
    uint32_t context_length;   /* 0 = 4096                                     */
    uint64_t budget_bytes;     /* 0 = the default budget                        */
} waste_plan_options;

/* The memory plan for this model: trunk, state at the context length,
 * scratch, minimum expert cache, floor, recommended, physical and usable RAM
 * (cgroup v2 aware), the resolved budget and expert cache. A JSON object,
 * documented in docs/CLI.md ("waste plan --json"). A budget below the floor
 * is not an error here: the plan says so in "budget_ok": false. */
WASTE_API waste_status waste_model_plan_json(const waste_model* model,
                                             const waste_plan_options* options, char** out_json,
                                             waste_error* error);

/* Verifies the CRC-32 of every expert record in the container. Calls
 * progress(done, total, user) now and then; a non-zero return cancels. */
typedef int (*waste_progress_fn)(uint64_t done, uint64_t total, void* user);
WASTE_API waste_status waste_model_verify(const waste_model* model, waste_progress_fn progress,
                                          void* user, waste_error* error);

/* ---------------------------------------------------------------- session */

/* A conversation over an opened model: its attention state, position and
 * next-token logits. Sessions of one model run one call at a time. */
typedef struct waste_session waste_session;

/* Creates a session; the model must have been opened without
 * WASTE_OPEN_METADATA_ONLY. Its context length is the model's. */
WASTE_API waste_status waste_session_create(waste_model* model, waste_session** out_session, waste_error* error);
WASTE_API void waste_session_free(waste_session* session);

/* Forgets every token: position 0, empty state. */
WASTE_API waste_status waste_session_reset(waste_session* session, waste_error* error);

/* Appends tokens to the session; afterwards waste_session_logits gives the
 * next-token distribution. More tokens than the context holds is
 * WASTE_ERR_CONTEXT_FULL and appends nothing. A failure part-way (a corrupt
 * expert record, say) resets the session. */
WASTE_API waste_status waste_session_eval(waste_session* session, const int32_t* tokens, size_t count,
                                          waste_error* error);

/* Like waste_session_eval, and also writes every layer's hidden state to
 * hidden: [layers + 1][count][hidden_size] f32 — slot 0 the embeddings, slot
 * L+1 the residual stream after layer L (the WHID layout of python/README.md,
 * for bisecting a divergence from the PyTorch reference to its layer).
 * hidden_floats must be exactly (layers + 1) * count * hidden_size. */
WASTE_API waste_status waste_session_eval_hidden(waste_session* session, const int32_t* tokens, size_t count,
                                                 float* hidden, size_t hidden_floats, waste_error* error);

/* Prefill chunk size: prompts are evaluated in chunks of up to this many
 * tokens (1..64, default 64; 1 = token by token). Chunks read each distinct
 * expert once and the trunk once per chunk; results agree with
 * token-by-token evaluation within rounding (1e-3 on logits). */
WASTE_API waste_status waste_session_set_prefill_chunk(waste_session* session, uint32_t tokens, waste_error* error);

/* The logits after the last evaluated token: *out_logits points to
 * *out_vocab floats owned by the session, valid until its next call. */
WASTE_API waste_status waste_session_logits(const waste_session* session, const float** out_logits,
                                            size_t* out_vocab, waste_error* error);

/* Tokens the session holds, and the most it may hold. */
WASTE_API uint32_t waste_session_position(const waste_session* session);
WASTE_API uint32_t waste_session_context_length(const waste_session* session);

/* Called once per generated token; return non-zero to stop. */
typedef int (*waste_token_fn)(int32_t token, void* user);

/* Greedy generation: appends up to max_tokens argmax tokens (ties -> the
 * lower id), writing them to out_tokens (room for max_tokens) and their
 * number to *out_count. Stops early when on_token returns non-zero or the
 * model's EOS token is produced (it is included). */
WASTE_API waste_status waste_session_generate_greedy(waste_session* session, size_t max_tokens,
                                                     int32_t* out_tokens, size_t* out_count,
                                                     waste_token_fn on_token, void* user,
                                                     waste_error* error);

/* Cumulative counters of a session since creation. */
typedef struct waste_session_stats {
    uint64_t tokens;          /* tokens evaluated                             */
    uint64_t expert_hits;     /* expert records served from the cache         */
    uint64_t expert_misses;   /* records read from disk                       */
    uint64_t bytes_read;      /* bytes of expert records read                 */
    double io_seconds;        /* time spent waiting on expert reads           */
    double compute_seconds;   /* the rest of the evaluation time              */
} waste_session_stats;

WASTE_API waste_status waste_session_stats_get(const waste_session* session, waste_session_stats* out_stats,
                                               waste_error* error);

/* Profiling: when on, each evaluation records where its time goes.
 * waste_session_profile_json returns {"tokens":N,"seconds":{"trunk_matvec":s,
 * "lut_build":s,"lut_apply":s,"kda":s,"mla":s,"router":s,"lm_head":s,
 * "expert_wait":s,"other":s}} accumulated since profiling was turned on. */
WASTE_API waste_status waste_session_set_profiling(waste_session* session, int on, waste_error* error);
WASTE_API waste_status waste_session_profile_json(const waste_session* session, char** out_json, waste_error* error);

/* Fills the expert cache from disk, layer by layer, until it is full or
 * holds every expert; *out_records gets how many it holds. For benchmarks of
 * the cached steady state. */
WASTE_API waste_status waste_model_warm_cache(waste_model* model, uint64_t* out_records, waste_error* error);

/* Bytes one decode token touches on this model with every expert cached:
 * {"trunk_bytes":B,"expert_bytes":B,"lut_bytes":B,"lookups":N,"total_bytes":B}
 * (trunk matrices read once per token, top-k records per MoE layer, the
 * lookup tables built, and the table lookups made). */
WASTE_API waste_status waste_model_token_traffic_json(const waste_model* model, char** out_json, waste_error* error);

/* The machine's DRAM read bandwidth, measured now with `threads` threads
 * (0 = one per core) over a 512 MiB buffer: the best of 5 passes, bytes/s. */
WASTE_API waste_status waste_measure_memory_bandwidth(uint32_t threads, double* out_bytes_per_second,
                                                      waste_error* error);

/* Direct-I/O read bandwidth of the disk under `directory` for expert-sized
 * random reads: writes a scratch file with O_DIRECT (bypassing the page
 * cache, so the reads cannot come from RAM), reads random records at a queue
 * depth, removes the file. options_json (may be NULL): {"file_bytes":N,
 * "record_bytes":N, "depth":N, "backend":"io_uring"|"pread", "threads":N,
 * "seconds":S}. Result JSON documented in docs/CLI.md ("waste diskbench"). */
WASTE_API waste_status waste_diskbench_json(const char* directory, const char* options_json, char** out_json,
                                            waste_error* error);

/* The name of a cache policy ("reuse", "lru", "lfru"; DEFAULT names the
 * policy it stands for); NULL for a value that is none of them. */
WASTE_API const char* waste_cache_policy_name(uint32_t policy);

/* "reuse", "lru", "lfru" or "default" -> *out_policy; any other name is
 * WASTE_ERR_INVALID_ARGUMENT naming it. */
WASTE_API waste_status waste_cache_policy_parse(const char* name, uint32_t* out_policy, waste_error* error);

/* --------------------------------------------------------------- simulate */

/* Replays a routing trace through the expert cache's own bookkeeping — the
 * code the engine runs — token by token, MoE layer by layer, each layer's
 * distinct experts looked up in ascending id and pinned until the layer is
 * done, and reports the hit rate of each policy asked for beside Belady's
 * clairvoyant optimum at the same size and under the same pinning.
 *
 * trace_path: JSON lines, one token a line:
 *   {"tok": 0, "layers": [[expert ids of MoE layer 0], [.. of layer 1], ...]}
 * (an entry may also be {"experts": [...], ...}); NULL when options_json
 * asks for a synthetic trace. Bad lines fail with WASTE_ERR_FORMAT naming
 * the line; a file over 64 MiB with WASTE_ERR_IO.
 *
 * options_json, a JSON object:
 *   "slots": N or [N, ...]          cache sizes in records, or
 *   "multiple": X or [X, ...]       sizes as X × one token's working set
 *                                   (layers × top-k), rounded; one of the two
 *   "policy": "reuse"|"lru"|"lfru"|"default"|"all"   default "default"
 *   "belady": true|false            default true
 *   "experts": E                    a trace file's ids must be below E (default:
 *                                   any below 2^20)
 *   "synthetic": {"tokens", "layers", "experts", "top_k", "zipf",
 *                 "stickiness", "shift_every", "shift_fraction", "seed"}
 *                 a seeded Zipf-with-drift trace instead of a file (every
 *                 member optional; docs/BENCHMARKS.md gives the defaults)
 *
 * *out_json:
 *   {"trace": path or "synthetic", "tokens": T, "layers": L, "top_k": K,
 *    "experts": E, "working_set": L*K, "accesses": A, "distinct_records": D,
 *    "runs": [{"slots": S, "multiple": S / working_set,
 *              "policies": [{"policy": "reuse", "hits": H, "misses": M,
 *                            "hit_rate": H / A}, ...],
 *              "belady": {"hits": H, "misses": M, "hit_rate": H / A}}, ...]}
 * ("belady" absent when not asked for). A size below one layer's experts
 * fails as the engine would, with WASTE_ERR_BUDGET. */
WASTE_API waste_status waste_simulate_trace_json(const char* trace_path, const char* options_json, char** out_json,
                                                 waste_error* error);

/* ------------------------------------------------------------------ synth */

/* Writes a seeded synthetic container of the Kimi family to out_dir.
 * preset: "tiny", "tiny-k3", "mid", "k3" (docs/CLI.md lists them).
 * overrides_json: NULL, or a JSON object of config keys to replace
 * (e.g. {"num_hidden_layers": 8, "num_experts": 64}).
 * The same preset, seed and overrides give a byte-identical container. */
WASTE_API waste_status waste_synth(const char* out_dir, const char* preset, uint64_t seed,
                                   const char* overrides_json, waste_progress_fn progress,
                                   void* user, waste_error* error);

/* The names of the synth presets, as a JSON array of {"name","summary"}. */
WASTE_API waste_status waste_synth_presets_json(char** out_json, waste_error* error);

/* -------------------------------------------------------------- tokenizer */

/* A tiktoken-family BPE tokenizer (models.md §9): a rank file, a pre-tokenizer
 * pattern and special tokens. Immutable: one tokenizer may be used from any
 * number of threads at once. It owns everything it needs, so it may outlive
 * the model it came from. */
typedef struct waste_tokenizer waste_tokenizer;

typedef enum waste_tokenize_flags {
    /* Markup mode: special tokens ("<|open|>", "[BOS]") are recognised in the
     * text (leftmost first, the longest of those starting there). Without it
     * (plain mode) a special's text is ordinary bytes. Encode a prompt's
     * template markup in markup mode and every user-, document- or
     * tool-supplied string in plain mode, or a user can forge control tokens.
     * For detokenization: a special token is written as its text in markup
     * mode and left out in plain mode. */
    WASTE_TOKENIZE_MARKUP = 1u << 0
} waste_tokenize_flags;

/* The tokenizer of an opened model (any open flags), from the container's
 * tokenizer.model and specials.json. A container without tokenizer.model is
 * WASTE_ERR_UNSUPPORTED ("... has no tokenizer.model").
 * pattern: the pre-tokenizer — "kimi", "o200k", "cl100k" or "gpt2" (also
 * "o200k_base", "cl100k_base", "r50k_base", "p50k_base") — or NULL for the
 * container's default. Format v0 does not record the pattern; the default is
 * o200k for config.model_type "gpt_oss" and Kimi's pattern for every other
 * container (v0 is the Kimi family's format).
 * BOS is config.bos_token_id, else the number of ranks; EOS is
 * config.eos_token_id, else none. */
WASTE_API waste_status waste_model_tokenizer(const waste_model* model, const char* pattern,
                                             waste_tokenizer** out_tokenizer, waste_error* error);

/* A tokenizer from a rank file (lines "base64(bytes) rank") and a pattern
 * name (required), with optional specials_json in specials.json's form
 * ([{"id": N, "text": "..."}], NULL for none). BOS/EOS are the specials
 * named "[BOS]"/"[EOS]" if present, else none. For checking the tokenizer
 * against tiktoken with its own rank files. */
WASTE_API waste_status waste_tokenizer_open(const char* rank_file_path, const char* pattern,
                                            const char* specials_json, waste_tokenizer** out_tokenizer,
                                            waste_error* error);

WASTE_API void waste_tokenizer_free(waste_tokenizer* tokenizer);

/* Text (length bytes of UTF-8; invalid UTF-8 is WASTE_ERR_INVALID_ARGUMENT
 * naming the byte offset) to token ids, as tiktoken encodes it. flags: a set
 * of waste_tokenize_flags. *out_tokens is allocated by the library (NULL when
 * *out_count is 0) and released with waste_tokens_free. No BOS is added. */
WASTE_API waste_status waste_tokenizer_tokenize(const waste_tokenizer* tokenizer, const char* text, size_t length,
                                                uint32_t flags, int32_t** out_tokens, size_t* out_count,
                                                waste_error* error);

/* Releases ids returned by waste_tokenizer_tokenize. NULL is ignored. */
WASTE_API void waste_tokens_free(int32_t* tokens);

/* Token ids to bytes: *out_text (NUL-terminated, but it may hold NULs and
 * need not be valid UTF-8 — *out_length counts its bytes) is released with
 * waste_string_free. An id outside the vocabulary is
 * WASTE_ERR_INVALID_ARGUMENT naming it. */
WASTE_API waste_status waste_tokenizer_detokenize(const waste_tokenizer* tokenizer, const int32_t* tokens,
                                                  size_t count, uint32_t flags, char** out_text,
                                                  size_t* out_length, waste_error* error);

/* Ids are 0 .. waste_tokenizer_token_count() - 1 (ranks and specials; an id
 * in a gap of the rank file has no bytes). */
WASTE_API uint32_t waste_tokenizer_token_count(const waste_tokenizer* tokenizer);
/* The BOS and EOS ids, -1 when there is none. */
WASTE_API int32_t waste_tokenizer_bos(const waste_tokenizer* tokenizer);
WASTE_API int32_t waste_tokenizer_eos(const waste_tokenizer* tokenizer);
/* The id of the special token with exactly this text, -1 if none. */
WASTE_API int32_t waste_tokenizer_special_id(const waste_tokenizer* tokenizer, const char* text);
/* The pre-tokenizer pattern in use: "kimi", "o200k", "cl100k" or "gpt2". */
WASTE_API const char* waste_tokenizer_pattern(const waste_tokenizer* tokenizer);
/* The specials as JSON, [{"id": N, "text": "..."}, ...]; free with waste_string_free. */
WASTE_API waste_status waste_tokenizer_specials_json(const waste_tokenizer* tokenizer, char** out_json,
                                                     waste_error* error);

/* Streaming detokenization for generated text: feed ids one at a time; each
 * push gives the bytes now complete, holding back an incomplete UTF-8
 * character (at most 3 bytes) split across tokens until a later token
 * completes it. Everything pushed plus finish() equals
 * waste_tokenizer_detokenize of the same ids, byte for byte. The detokenizer
 * keeps its tokenizer alive; it is one thread's. */
typedef struct waste_detokenizer waste_detokenizer;

WASTE_API waste_status waste_detokenizer_create(const waste_tokenizer* tokenizer, uint32_t flags,
                                                waste_detokenizer** out_detokenizer, waste_error* error);
WASTE_API void waste_detokenizer_free(waste_detokenizer* detokenizer);
/* *out_bytes points to *out_length bytes owned by the detokenizer, valid
 * until its next call (not NUL-terminated; may be 0 bytes). */
WASTE_API waste_status waste_detokenizer_push(waste_detokenizer* detokenizer, int32_t token,
                                              const char** out_bytes, size_t* out_length, waste_error* error);
/* The bytes still held at the end of the stream; the detokenizer then starts
 * afresh. */
WASTE_API waste_status waste_detokenizer_finish(waste_detokenizer* detokenizer, const char** out_bytes,
                                                size_t* out_length, waste_error* error);

#ifdef __cplusplus
}
#endif

#endif /* WASTE_WASTE_H */
