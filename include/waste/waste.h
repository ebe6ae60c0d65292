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
    WASTE_OPEN_BUFFERED_IO = 1u << 2,
    /* Wire the trunk in RAM (mlock). When RLIMIT_MEMLOCK refuses, the open
     * still succeeds and waste_model_info_json says why in "trunk_mlock". */
    WASTE_OPEN_MLOCK_TRUNK = 1u << 3,
    /* Do not warm the expert cache from the learned hotlist (usage.waste)
     * even when one exists. */
    WASTE_OPEN_NO_HOTLIST = 1u << 4
} waste_open_flags;

/* How expert records are read. Placement only: every backend gives
 * bit-identical output. The numbers are stable. */
typedef enum waste_io_backend {
    WASTE_IO_DEFAULT = 0,   /* io_uring where the kernel allows it, else pread */
    WASTE_IO_URING = 1,     /* io_uring, cache slots registered as fixed buffers;
                               WASTE_ERR_UNSUPPORTED when the kernel refuses   */
    WASTE_IO_PREAD = 2,     /* a pool of 4 pread threads                        */
    WASTE_IO_SYNC = 3       /* one synchronous read at a time, no lookahead     */
} waste_io_backend;

/* Which cached expert record to evict when a new one must be read. Placement
 * only: every policy gives bit-identical output, at different hit rates
 * (docs/bench-log/cache-policies.md, "Expert cache policies"). The numbers
 * are stable. */
typedef enum waste_cache_policy {
    WASTE_CACHE_POLICY_DEFAULT = 0, /* the library's choice: today REUSE            */
    WASTE_CACHE_POLICY_REUSE = 1,   /* "reuse": the fewest expected hits per unit of
                                       cache space-time, from a reuse curve learned
                                       online per layer visit                        */
    WASTE_CACHE_POLICY_LRU = 2,     /* "lru": least recently used                    */
    WASTE_CACHE_POLICY_LFRU = 3     /* "lfru": upstream's, the least often used of 16
                                       random samples (then least recently)          */
} waste_cache_policy;

/* The most compute threads a caller may ask for (waste_open_options.threads,
 * waste_measure_memory_bandwidth, waste_convert's "jobs"); more is
 * WASTE_ERR_INVALID_ARGUMENT naming the value, and "one per core" stops
 * there too. Why 256: beyond the CPUs, threads only take turns on the same
 * cores (1,000 threads made a 0.24 s run take 15 s), and each compute thread
 * owns its own expert lookup table (1.2 MB for K3) — while 256 is above the
 * cores of any one CPU socket sold today (192). */
#define WASTE_MAX_THREADS 256u

typedef struct waste_open_options {
    uint32_t flags;            /* a set of waste_open_flags                     */
    uint64_t budget_bytes;     /* RAM ceiling; 0 = the default budget: every
                                  expert cached where 7/8 of the RAM available
                                  at open holds it, else that 7/8 (never below
                                  the floor); waste_model_info_json says which */
    uint32_t context_length;   /* tokens a session may hold; 0 = 4096            */
    uint32_t threads;          /* compute threads; 0 = one per core; at most
                                  WASTE_MAX_THREADS                             */
    uint32_t cache_policy;     /* a waste_cache_policy; 0 = the default (REUSE)  */
    uint32_t io_backend;       /* a waste_io_backend; 0 = the default            */
    /* The learned hotlist: per-expert demand counts, read at open (the cache
     * is warmed with the most used records first, unless
     * WASTE_OPEN_NO_HOTLIST) and written by waste_model_save_usage.
     * NULL = "usage.waste" in the container directory. */
    const char* usage_path;
    uint32_t lut_mode;         /* a waste_lut_mode; 0 = WASTE_LUT_EXACT          */
    /* Sessions the memory plan reserves state for (a server's --parallel):
     * each session's state at the context length and its compute workspace.
     * 0 = one, not enforced (a library caller may create more at its own
     * risk); N > 0 = N in the plan, and waste_session_create refuses the
     * (N+1)-th live session with WASTE_ERR_BUDGET. At most 1024. */
    uint32_t sessions;
    /* RAM the plan reserves for session snapshots (prompt reuse,
     * waste_session_snapshot), part of the floor; 0 = none, and snapshots are
     * refused. At most 2^50 (1 PiB). */
    uint64_t snapshot_bytes;
    /* Grammar slots the plan reserves for constrained decoding: each is one
     * compiled grammar (waste_grammar_compile on this model's tokenizer) and
     * one generation following it (a waste_grammar_state, or a
     * waste_session_generate with a grammar), at their bounded sizes, plus
     * the vocabulary's byte trie once (docs/GRAMMAR.md, "Memory"). 0 = none:
     * a compile on this model's tokenizer is refused with WASTE_ERR_BUDGET,
     * as is any beyond the N-th alive. At most 4096. */
    uint32_t grammars;
    /* 1 = load the container's vision tower (K3; vision.md): the plan adds
     * its tensors, one image's decode or tower pass, and each planned
     * session's image queue (waste_model_plan_json's "vision_bytes"), and
     * the waste_session_image_* calls work. A container without vision.json
     * is then WASTE_ERR_UNSUPPORTED, one whose vision.json or tower tensors
     * are wrong WASTE_ERR_FORMAT naming the key or tensor. 0 = text only:
     * the tower is never read. */
    uint32_t vision;
    /* Prompt tokens a session evaluates together (its prefill chunk; each
     * session's workspace holds that many tokens' activations, in the plan):
     * 0 = the plan's choice: the largest of 512, 256, 128 whose floor fits
     * under 7/8 of usable RAM, else 64 (waste_model_plan_json's
     * "prefill_chunk"; budget_bytes does not change it, so the floor is the
     * same at every budget: a smaller chunk lowers it). At most 8192. A longer
     * chunk reads each expert and the trunk once for more tokens; the
     * results are the same bits at any chunk of at least 1. */
    uint32_t prefill_chunk;
} waste_open_options;

/* The arithmetic of the experts and the trunk's projections. */
typedef enum waste_lut_mode {
    /* f32 throughout: the exact path, the library's default (a zero
     * lut_mode; engine vs the PyTorch reference within 1e-5). The CLI and
     * `waste serve` default to WASTE_LUT_INT8 (docs/QUALITY.md: its cost over
     * this path is a small part of the container's own). */
    WASTE_LUT_EXACT = 0,
    /* An approximation in integers: decode steps read the experts' lookup
     * tables quantised to int8 (one scale per 32 positions); prefill chunks
     * multiply the experts' rows decoded to int8 (held decoded where the
     * budget has room) by int8 inputs; the trunk's Q8G and Q4G projections
     * and the LM head take their inputs quantised to int8 per weight group
     * (the routers stay exact). Identical for every thread count, ISA and
     * budget. Its logit error and perplexity cost: docs/QUALITY.md and
     * docs/bench-log/decode-and-prefill.md ("Decode after the lookup-kernel
     * work": the int8 tables) and llama-cpp-kimi.md (the int8 rows and the
     * trunk's int8 inputs). */
    WASTE_LUT_INT8 = 1
} waste_lut_mode;

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
 * scratch, minimum expert cache, floor, recommended, physical, usable and
 * available RAM (cgroup aware; the availability the model's open saw), the
 * resolved budget and expert cache. A JSON object,
 * documented in docs/CLI.md ("waste plan --json"). A budget below the floor
 * is not an error here: the plan says so in "budget_ok": false. The compute
 * threads, sessions and snapshot reserve are the model's open options. */
WASTE_API waste_status waste_model_plan_json(const waste_model* model,
                                             const waste_plan_options* options, char** out_json,
                                             waste_error* error);

/* Verifies the CRC-32 of every expert record in the container. Calls
 * progress(done, total, user) now and then; a non-zero return cancels. */
typedef int (*waste_progress_fn)(uint64_t done, uint64_t total, void* user);
WASTE_API waste_status waste_model_verify(const waste_model* model, waste_progress_fn progress,
                                          void* user, waste_error* error);

/* Writes the learned hotlist (--learn): the demand count of every expert
 * record since open, added to the counts of the file read at open, to the
 * usage path (waste_open_options.usage_path, else usage.waste in the
 * container directory). Atomic (a temporary file renamed). A directory that
 * is not writable is WASTE_ERR_IO naming the path. The file: u32 magic
 * "WUSE", u32 version 1, u32 layers, u32 experts, then u64 counts
 * [layers][experts] (dense layers all zero), little-endian. */
WASTE_API waste_status waste_model_save_usage(const waste_model* model, waste_error* error);

/* ---------------------------------------------------------------- session */

/* A conversation over an opened model: its attention state, position and
 * next-token logits. Sessions of one model run one call at a time: a caller
 * with several threads serialises, with one lock per model, every call
 * that takes one of its sessions, and waste_model_warm_cache and
 * waste_model_save_usage (they share the expert cache and its counters). */
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

/* A batched decode step: tokens[i] is appended to sessions[i], for count
 * distinct sessions of one model, evaluated together. The trunk's
 * projections run once over the count rows, each distinct routed expert of
 * a layer is read (or found in the cache) once and applied to every session
 * that chose it through that session's own lookup tables, router lookahead
 * prefetches the union (the largest waste_session_set_lookahead of the
 * sessions); attention runs per session over its own state. Groups of up to
 * min(waste_open_options.sessions, 8) sessions are evaluated in turn (each
 * workspace holds that many rows of decode tables; the plan counts them).
 *
 * Bits: a session's logits after a step do not depend on the other
 * sessions, the thread count or the budget. They are waste_session_eval's
 * of that one token but for the trunk's products over several rows, which
 * round as a prefill chunk's do: within 1e-5 of the logits' spread (tested
 * on every family; measured 3e-8 to 4e-7). With count 1 it is
 * waste_session_eval, bit for bit.
 *
 * A session's token generated by waste_session_generate and not evaluated
 * yet is evaluated first, alone. Stats (waste_session_stats_get): each
 * session counts one token and an equal share of the group's expert
 * lookups, reads and time, the shares adding up to the group's. Refused
 * before anything is evaluated, naming the index, when a session is NULL,
 * repeated, of another model, full (WASTE_ERR_CONTEXT_FULL), or has image
 * rows queued, or a token is outside the vocabulary; a failure while
 * evaluating (a read error) resets the group's sessions, as
 * waste_session_eval's does. Threads: one call at a time per model, like
 * every session call. */
WASTE_API waste_status waste_session_eval_batch(waste_session* const* sessions, const int32_t* tokens, size_t count,
                                                waste_error* error);

/* Like waste_session_eval, and also scores the sequence: out_logprobs[i - 1]
 * = log p(tokens[i] | the session's earlier tokens and tokens[0..i-1]) for
 * i = 1 .. count - 1 — the natural log of the softmax of the raw logits at
 * that position, computed in double. logprob_count must be count - 1
 * (out_logprobs may be NULL when it is 0). Each position's logits are the
 * engine's own (the final norm and LM head applied to that row of the
 * chunk), so positions agree with evaluating the prefixes one at a time
 * exactly with a prefill chunk of 1 and within chunking's rounding
 * otherwise; the session's logits afterwards are bit-identical to
 * waste_session_eval's. An id outside the vocabulary is
 * WASTE_ERR_INVALID_ARGUMENT naming its index and value, and leaves the
 * session unchanged. For perplexity (`waste perplexity`). */
WASTE_API waste_status waste_session_eval_logprobs(waste_session* session, const int32_t* tokens, size_t count,
                                                   double* out_logprobs, size_t logprob_count, waste_error* error);

/* Prefill chunk size: prompts are evaluated in chunks of up to this many
 * tokens (1 = token by token; at most, and by default, the model's planned
 * chunk, waste_open_options.prefill_chunk). Chunks read each distinct expert
 * once and the trunk once per chunk. Any chunk of 2 or more gives the same
 * bits; they agree with token-by-token evaluation (1, the decode path's
 * lookup tables) within rounding (1e-3 on logits). */
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

/* Counters of a session: cumulative since creation (waste_session_stats_get)
 * or of its most recent evaluation call, i.e. one decode token
 * (waste_session_stats_last). Hits and misses count demand lookups only;
 * router lookahead's speculative reads are counted apart. */
typedef struct waste_session_stats {
    uint64_t tokens;          /* tokens evaluated                             */
    uint64_t expert_hits;     /* demand lookups served from the cache (incl.
                                 records a prefetch brought in: the cache's
                                 own hits are expert_hits - prefetch_used)    */
    uint64_t expert_misses;   /* demand lookups read from disk                */
    uint64_t bytes_read;      /* bytes of expert records read: demand misses
                                 and prefetches                               */
    double io_seconds;        /* time blocked waiting on expert reads         */
    double compute_seconds;   /* the rest of the evaluation time              */
    /* appended with expert streaming */
    uint64_t prefetched;      /* speculative reads issued by router lookahead */
    uint64_t prefetch_used;   /* demand hits on a prefetched record's first use */
    uint64_t prefetch_bytes;  /* bytes of speculative reads (in bytes_read)   */
    /* appended with lookahead accounting */
    uint64_t prefetch_late;   /* of prefetch_used, those whose read was still
                                 in flight when the demand came (it waited) */
    uint64_t prefetch_wasted; /* prefetched records evicted before any use   */
} waste_session_stats;

WASTE_API waste_status waste_session_stats_get(const waste_session* session, waste_session_stats* out_stats,
                                               waste_error* error);
WASTE_API waste_status waste_session_stats_last(const waste_session* session, waste_session_stats* out_stats,
                                                waste_error* error);

/* Router lookahead: after each layer's attention, the next MoE layer's
 * router runs on the hidden state and its top `experts` are read ahead (a
 * prefill chunk: the union of its tokens' top `experts`, where the cache can
 * pin two layers' experts at once), speculatively: never evicting a pinned
 * record, never changing the output. Default 6; 0 turns it off. Ignored
 * with WASTE_IO_SYNC. */
WASTE_API waste_status waste_session_set_lookahead(waste_session* session, uint32_t experts, waste_error* error);

/* How many MoE layers ahead a decode step's lookahead predicts, each its top
 * `experts` of waste_session_set_lookahead, all from the state after one
 * layer's attention (a farther layer is predicted less well, but its reads
 * have more compute to hide behind; each is predicted again from its nearer
 * states). 1 to 4; default 1. A prefill chunk predicts one layer. Never
 * changes the output. */
WASTE_API waste_status waste_session_set_lookahead_layers(waste_session* session, uint32_t layers, waste_error* error);

/* --dump-route: from now on, each evaluated token's routing is appended to
 * the file at path (created or truncated) as one JSON line per token:
 * {"tok": position, "phase": "prefill"|"decode", "layers": [{"layer": L,
 * "experts": [ids], "weights": [w], "lookahead": [predicted ids]}, ...]}
 * — readable as is by waste_simulate_trace_json. The lines go to PATH.tmp;
 * NULL (or another path) stops and publishes the file (fsync, rename over
 * PATH), returning WASTE_ERR_IO naming it if any write failed (disk full:
 * PATH.tmp is removed, an older PATH left as it was). waste_session_free
 * publishes it too but cannot report a failure. */
WASTE_API waste_status waste_session_set_route_dump(waste_session* session, const char* path, waste_error* error);

/* Profiling: when on, each evaluation records where its time goes.
 * waste_session_profile_json returns {"tokens":N,"seconds":{"trunk_matvec":s,
 * "lut_build":s,"lut_apply":s,"kda":s,"mla":s,"gqa":s,"router":s,"lm_head":s,
 * "expert_wait":s,"other":s}} accumulated since profiling was turned on. */
WASTE_API waste_status waste_session_set_profiling(waste_session* session, int on, waste_error* error);
WASTE_API waste_status waste_session_profile_json(const waste_session* session, char** out_json, waste_error* error);

/* Fills the expert cache from disk, layer by layer, until it is full or
 * holds every expert; *out_records gets how many it holds. For benchmarks of
 * the cached steady state. */
WASTE_API waste_status waste_model_warm_cache(waste_model* model, uint64_t* out_records, waste_error* error);

/* Bytes one decode token touches on this model with every expert cached:
 * {"trunk_bytes":B,"expert_bytes":B,"lut_bytes":B,"lookups":N,"total_bytes":B,
 *  "trunk_multiply_adds":N,"table_multiply_adds":N}
 * (trunk matrices read once per token, top-k records per MoE layer, the
 * lookup tables built, and the table lookups made; the multiply-adds of the
 * trunk's matrix-vector products and of the tables' builds). */
WASTE_API waste_status waste_model_token_traffic_json(const waste_model* model, char** out_json, waste_error* error);

/* The machine's DRAM read bandwidth, measured now with `threads` threads
 * (0 = one per core) over a buffer of buffer_bytes (0 = 512 MiB; at least
 * 1 MiB, else WASTE_ERR_INVALID_ARGUMENT): the best of 5 passes, bytes/s.
 * The buffer is resident while it runs and freed before it returns, so a
 * caller under a RAM budget measures before opening its model, with a buffer
 * the budget holds (waste bench: the budget less the plan's runtime_bytes);
 * a buffer not far beyond the last-level cache measures the cache. */
WASTE_API waste_status waste_measure_memory_bandwidth(uint32_t threads, uint64_t buffer_bytes,
                                                      double* out_bytes_per_second, waste_error* error);

/* The machine's f32 multiply-add rate with the kernels' instruction set
 * (AVX-512, AVX2+FMA, NEON or scalar, as the engine runs), measured now with
 * `threads` threads (0 = one per core): independent FMA chains in registers,
 * no memory traffic, the best of 5 passes of a few milliseconds; multiply-adds
 * per second (an FMA lane counts one). The ceiling waste bench sets a token's
 * multiply-adds against. */
WASTE_API waste_status waste_measure_compute_peak(uint32_t threads, double* out_multiply_adds_per_second,
                                                  waste_error* error);

/* Direct-I/O read bandwidth of the disk under `directory` for expert-sized
 * random reads: writes a scratch file with O_DIRECT (bypassing the page
 * cache, so the reads cannot come from RAM), reads random records at a queue
 * depth, removes the file. options_json (may be NULL): {"file_bytes":N,
 * "record_bytes":N, "depth":N, "backend":"io_uring"|"pread", "threads":N,
 * "seconds":S}. Result JSON documented in docs/CLI.md ("waste diskbench"). */
WASTE_API waste_status waste_diskbench_json(const char* directory, const char* options_json, char** out_json,
                                            waste_error* error);

/* Writes a whole file the way the library writes its own: the bytes go to
 * PATH.tmp in the same directory, every write, the fsync and the close are
 * checked, then PATH.tmp is renamed over PATH. On any failure (ENOSPC,
 * EDQUOT, EIO, ...) PATH.tmp is removed, an existing PATH is left as it
 * was, and WASTE_ERR_IO names PATH and what failed. For clients' own
 * outputs (the CLI's --dump-hidden), so that they need no second mechanism. */
WASTE_API waste_status waste_file_write(const char* path, const void* bytes, size_t size, waste_error* error);

/* The size of the image at PATH, from its header alone (no pixels decoded,
 * no model needed): for building an image's media block before adding it.
 * PNG, JPEG, GIF (first frame: the logical screen), WebP (still) and BMP.
 * A JPEG's size is the upright one: EXIF orientations 5..8 swap width and
 * height (docs/IMAGES.md). WASTE_ERR_IO when the file cannot be read;
 * WASTE_ERR_FORMAT for a corrupt or truncated header, or a width x height
 * outside [1, 64 x 2^20] pixels; WASTE_ERR_UNSUPPORTED for another format
 * (or a CMYK JPEG, an animated WebP). Each message names PATH. */
WASTE_API waste_status waste_image_dimensions(const char* path, uint32_t* out_width, uint32_t* out_height,
                                              waste_error* error);

/* The same for an image in memory; name names it in errors (NULL: "image"). */
WASTE_API waste_status waste_image_dimensions_bytes(const void* bytes, size_t size, const char* name, uint32_t* out_width,
                                                    uint32_t* out_height, waste_error* error);

/* How many positions an image of width x height pixels takes on this model
 * (its patch grid within vision.json's max_patches, four patches a
 * position; vision.md §2.2), without decoding it: for sizing a prompt before
 * the tower runs. WASTE_ERR_UNSUPPORTED unless opened with vision. */
WASTE_API waste_status waste_model_image_tokens(const waste_model* model, uint32_t width, uint32_t height, size_t* out_tokens,
                                                waste_error* error);

/* Images in a session (vision.md §4-§5), on a model opened with
 * waste_open_options.vision (else WASTE_ERR_UNSUPPORTED). Adding decodes the
 * image (any format waste_image_dimensions reads), resizes it to its patch
 * grid within vision.json's max_patches, runs the tower and the projector at
 * once, and queues the image's rows; *out_tokens (when not NULL) is how many
 * positions it takes. At most 32 images are queued (WASTE_ERR_INVALID_ARGUMENT
 * beyond); a bad image is refused here, naming it, never mid-prompt. The
 * prompt then carries one <|media_pad|> (vision.json's
 * media_placeholder_token_id) per queued image, in queue order, inside the
 * block K3 was trained on:
 *   <|media_begin|>image WxH<|media_content|><|media_pad|><|media_end|>
 * (W x H the file's own size, waste_image_dimensions; markup mode);
 * waste_session_image_expand turns each pad into as many as its image has
 * rows. Evaluating (waste_session_eval, _generate ...) puts the rows in
 * place of the pads' embeddings, in the prefill and in single-token steps;
 * the call that used a row clears the queue; one that met no pad leaves it;
 * waste_session_reset and waste_session_image_clear clear it. name names the
 * image in errors (NULL: "image"). */
WASTE_API waste_status waste_session_image_add(waste_session* session, const void* bytes, size_t size, const char* name,
                                               size_t* out_tokens, waste_error* error);
/* The same, reading the file at path (at most 320 MiB). */
WASTE_API waste_status waste_session_image_add_file(waste_session* session, const char* path, size_t* out_tokens,
                                                    waste_error* error);
/* tokens with each pad replaced by its image's count of pads, into a new
 * array (waste_tokens_free). The pads must be as many as the queued images
 * (WASTE_ERR_INVALID_ARGUMENT otherwise: a prompt-assembly bug). */
WASTE_API waste_status waste_session_image_expand(const waste_session* session, const int32_t* tokens, size_t count,
                                                  int32_t** out_tokens, size_t* out_count, waste_error* error);
WASTE_API waste_status waste_session_image_clear(waste_session* session, waste_error* error);
/* Images queued and their rows (0 and 0 without vision). */
WASTE_API void waste_session_image_queue(const waste_session* session, size_t* out_images, size_t* out_rows);

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
 *                 member optional; docs/bench-log/cache-policies.md,
 *                 "Synthetic Zipf-with-drift routing", gives the defaults)
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
 * (e.g. {"num_hidden_layers": 8, "num_experts": 64}) and container options
 * ("tensor_prefix", "expert_quant", "tokenizer", "reserved_tokens": the last
 * N ids of the vocabulary get no token). A key the synth does not use is
 * WASTE_ERR_INVALID_ARGUMENT naming it (src/synth/synth_keys.cpp lists them).
 * The same preset, seed and overrides give a byte-identical container. */
WASTE_API waste_status waste_synth(const char* out_dir, const char* preset, uint64_t seed,
                                   const char* overrides_json, waste_progress_fn progress,
                                   void* user, waste_error* error);

/* The synth presets, as a JSON array of {"name","summary","container_bytes"}
 * (the bytes the preset writes without overrides, manifest.json aside). */
WASTE_API waste_status waste_synth_presets_json(char** out_json, waste_error* error);

/* ---------------------------------------------------------------- convert */

/* An event of a long job, as one JSON object (see waste_convert). */
typedef void (*waste_event_fn)(const char* event_json, void* user);

/* Converts a Hugging Face checkpoint of a family the engine runs
 * (config.json, safetensors shards with or without
 * model.safetensors.index.json, tiktoken.model or tokenizer.json,
 * tokenizer_config.json, chat.json) into a v0 container at out_dir.
 * Every tensor's presence, shape and dtype is checked before anything is
 * written; nothing is published (no manifest.json) unless the whole
 * conversion succeeds. Resumable: a rerun after any interruption continues
 * from the last finished layer and writes a byte-identical container.
 * source_dir may instead be a GGUF file of an architecture docs/GGUF.md lists
 * (its keys as config.json, its vocabulary as tokenizer.json, its chat
 * template; "reclaim" is refused for it).
 *
 * options_json: NULL or a JSON object, every member optional:
 *   "quant": "VQ3R"|"VQ2R"|"VQ4P"   (default "VQ3R")
 *   "stages": 2..4, "entries": 1..256 (defaults: the format's)
 *   "jobs": threads (0 = one per core; at most WASTE_MAX_THREADS), "seed": k-means seed (default 1)
 *   "sample_experts": experts per layer the codebooks are fitted on (16)
 *   "train_vectors": 8-vectors per (layer, kind) for k-means (65536)
 *   "iterations": Lloyd iterations per stage (12)
 *   "reclaim": "off"|"dry"|"on"   delete source shards once converted
 *   "small_matrices": "f32"|"quantized"   2-D trunk tensors under 65,536
 *       values stay F32 (default, container-v0's convention) or are
 *       quantised like large ones (Q8G embedding/LM head, Q4G the rest)
 * progress(done, total, user): bytes of output; non-zero cancels.
 * event(json, user): one object per finished unit ({"unit", "layer",
 *   "seconds", "error", "seconds_per_expert", "resumed"}) and per reclaimed
 *   shard ({"reclaim": file, "deleted": bool}).
 * *out_summary_json (may be NULL): the summary (docs/CLI.md, "waste convert"). */
WASTE_API waste_status waste_convert(const char* source_dir, const char* out_dir, const char* options_json,
                                     waste_progress_fn progress, waste_event_fn event, void* user,
                                     char** out_summary_json, waste_error* error);

/* Checks a container against the checkpoint (or GGUF file) it came from: every expert
 * record's checks and CRC-32, then each expert's dequantised weights against
 * the source (relative error per layer) and each trunk tensor's. options_json:
 * NULL or {"max_expert_error": x}. *out_report_json: {"ok", "layers", "trunk",
 * "failures", "expert_limit"}. Failing comparisons are reported there, not as
 * an error status; unreadable input is an error. */
WASTE_API waste_status waste_verify_source(const char* model_dir, const char* source_dir, const char* options_json,
                                           waste_progress_fn progress, void* user, char** out_report_json,
                                           waste_error* error);

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
 * config.eos_token_id, else none.
 * Its ids are the model's vocabulary (config.vocab_size): an id below it that
 * is neither a rank nor a special (a reserved tail, as K3's 163,840 rows for
 * 163,584 ranks and its specials) is one the model may generate, and it
 * decodes to no bytes. */
WASTE_API waste_status waste_model_tokenizer(const waste_model* model, const char* pattern,
                                             waste_tokenizer** out_tokenizer, waste_error* error);

/* A tokenizer from a rank file (lines "base64(bytes) rank") and a pattern
 * name (required), with optional specials_json in specials.json's form
 * ([{"id": N, "text": "..."}], NULL for none). BOS/EOS are the specials
 * named "[BOS]"/"[EOS]" if present, else none. For checking the tokenizer
 * against tiktoken with its own rank files. Pattern "o200k_harmony" with
 * specials_json NULL gives gpt-oss's specials (<|startoftext|> 199998 ..
 * <|reserved_201087|>; EOS <|endoftext|> 199999) over o200k_base's ranks. */
WASTE_API waste_status waste_tokenizer_open(const char* rank_file_path, const char* pattern,
                                            const char* specials_json, waste_tokenizer** out_tokenizer,
                                            waste_error* error);

/* A tokenizer from a Hugging Face tokenizer.json (byte-level BPE: Qwen3,
 * DeepSeek-V3, gpt-oss; docs/FORMAT.md says which components are read). A
 * component it cannot reproduce exactly is WASTE_ERR_UNSUPPORTED naming it.
 * Its added tokens are the specials (markup mode recognises them; plain mode
 * never does). No BOS or EOS. */
WASTE_API waste_status waste_tokenizer_open_json(const char* tokenizer_json_path, waste_tokenizer** out_tokenizer,
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
 * waste_string_free. A reserved id of a model's tokenizer gives no bytes;
 * an id outside the vocabulary is WASTE_ERR_INVALID_ARGUMENT naming it. */
WASTE_API waste_status waste_tokenizer_detokenize(const waste_tokenizer* tokenizer, const int32_t* tokens,
                                                  size_t count, uint32_t flags, char** out_text,
                                                  size_t* out_length, waste_error* error);

/* Ids are 0 .. waste_tokenizer_token_count() - 1: the ranks and specials,
 * and for a model's tokenizer every id below the model's vocabulary (the
 * reserved ones have no bytes). */
WASTE_API uint32_t waste_tokenizer_token_count(const waste_tokenizer* tokenizer);
/* The BOS and EOS ids, -1 when there is none. For a model's tokenizer the
 * EOS is config.eos_token_id, or its list's first. */
WASTE_API int32_t waste_tokenizer_bos(const waste_tokenizer* tokenizer);
WASTE_API int32_t waste_tokenizer_eos(const waste_tokenizer* tokenizer);
/* Every id that ends a generation as the EOS does (WASTE_STOP_EOS): the EOS
 * first, then the others the model lists — config.eos_token_id given as a
 * list (GLM-4.5: three ids) and generation_config.json's eos_token_id.
 * Writes up to capacity ids to out_ids (NULL with capacity 0 to count) and
 * returns how many there are. */
WASTE_API size_t waste_tokenizer_eos_ids(const waste_tokenizer* tokenizer, int32_t* out_ids, size_t capacity);
/* The id of the special token with exactly this text, -1 if none. */
WASTE_API int32_t waste_tokenizer_special_id(const waste_tokenizer* tokenizer, const char* text);
/* The pre-tokenizer pattern in use: "kimi", "o200k", "cl100k" or "gpt2";
 * "tokenizer.json" for one read from a tokenizer.json. */
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

/* --------------------------------------------------------------- sampling */

/* Picks tokens from logits (docs/CLI.md, "Sampling"): greedy at temperature
 * 0 (the argmax, ties to the lower id); otherwise p = softmax(logits / T),
 * candidates ordered by logit (ties: lower id), then top-k keeps the first
 * k, top-p the shortest prefix whose probability renormalised over the top-k
 * survivors reaches top_p, min-p those with p >= min_p * max p; the
 * survivors are renormalised and one is drawn with the sampler's own PRNG
 * (splitmix64). The same options, seed and logits give the same tokens.
 * A sampler carries its random state from call to call (and across a
 * waste_state_save / waste_state_load of the session it samples for). */
typedef struct waste_sampler waste_sampler;

typedef struct waste_sampler_options {
    double temperature;   /* 0 = greedy; at most 100                      */
    uint32_t top_k;       /* 0 = off                                      */
    double top_p;         /* (0, 1]; 1 = off                              */
    double min_p;         /* [0, 1]; 0 = off                              */
    uint64_t seed;
} waste_sampler_options;

/* Greedy: temperature 0, top_k 0, top_p 1, min_p 0, seed 0. */
WASTE_API void waste_sampler_options_init(waste_sampler_options* options);

/* Which fields of waste_model_sampling_defaults came from the release. */
enum waste_sampling_field {
    WASTE_SAMPLING_TEMPERATURE = 1u << 0,
    WASTE_SAMPLING_TOP_K = 1u << 1,
    WASTE_SAMPLING_TOP_P = 1u << 2,
    WASTE_SAMPLING_MIN_P = 1u << 3
};

/* The sampling this model is meant to run with, for generations whose
 * caller names none (the CLI's run and chat without --temp etc., the
 * server's requests without "temperature" etc.): each of temperature,
 * top_k, top_p and min_p that the release's generation_config.json names
 * (do_sample false: temperature 0, greedy), the engine's default for the
 * rest (temperature 0.8, top_k 0, top_p 0.95, min_p 0); seed 0.
 * *out_from_release (may be NULL) gets the waste_sampling_field bits of the
 * fields the release named. */
WASTE_API waste_status waste_model_sampling_defaults(const waste_model* model, waste_sampler_options* out_options,
                                                     uint32_t* out_from_release, waste_error* error);
/* An out-of-range option is WASTE_ERR_INVALID_ARGUMENT naming it. */
WASTE_API waste_status waste_sampler_create(const waste_sampler_options* options, waste_sampler** out_sampler,
                                            waste_error* error);
WASTE_API void waste_sampler_free(waste_sampler* sampler);
/* One token from vocab logits. *out_logprob (may be NULL) gets the model's
 * log-probability of it: log-softmax of the raw logits, before temperature
 * and truncation, so it is the same whatever the sampling options. */
WASTE_API waste_status waste_sampler_sample(waste_sampler* sampler, const float* logits, size_t vocab,
                                            int32_t* out_token, float* out_logprob, waste_error* error);

/* --------------------------------------------------- constrained decoding */

/* A grammar the output must follow (docs/GRAMMAR.md): llama.cpp's GBNF, a
 * JSON Schema (translated to a grammar; a keyword that cannot be enforced
 * exactly is refused, naming it and its JSON path, never dropped), or any
 * JSON value. Compiled against a tokenizer: the bytes of every token id are
 * laid into a byte trie, so masking a step walks the trie and the grammar
 * together (and remembers the answer for a grammar state seen before).
 * Immutable and shareable: any number of generations, on any threads, may
 * use one compiled grammar at once (each with its own waste_grammar_state). */
typedef struct waste_grammar waste_grammar;

typedef enum waste_grammar_kind {
    WASTE_GRAMMAR_GBNF = 0,         /* text: GBNF; the rule "root" is the output */
    WASTE_GRAMMAR_JSON_SCHEMA = 1,  /* text: a JSON Schema (draft 2020-12 keywords) */
    WASTE_GRAMMAR_JSON = 2          /* any JSON value; text is ignored (may be NULL) */
} waste_grammar_kind;

/* Compiles text (length bytes) of a waste_grammar_kind for the tokenizer's
 * vocabulary (waste_model_tokenizer for a model's). A bad grammar or schema
 * is WASTE_ERR_INVALID_ARGUMENT with its position or path: "grammar line 3:7:
 * expected ')' ...", "grammar: rule 'expr' is left-recursive ...", "json
 * schema at /properties/age: keyword 'multipleOf' cannot be enforced".
 * Size, nesting and repetition counts are bounded (docs/GRAMMAR.md), so
 * hostile text neither hangs nor exhausts memory. Takes about as long as
 * sorting the vocabulary's token bytes (tens of milliseconds at 163,840). */
WASTE_API waste_status waste_grammar_compile(const waste_tokenizer* tokenizer, uint32_t kind, const char* text,
                                             size_t length, waste_grammar** out_grammar, waste_error* error);
WASTE_API void waste_grammar_free(waste_grammar* grammar);
/* The compiled grammar as GBNF, rules generated for groups, repetitions and
 * schemas included (waste_string_free). For debugging and documentation. */
WASTE_API waste_status waste_grammar_gbnf(const waste_grammar* grammar, char** out_gbnf, waste_error* error);
/* A JSON Schema's translation to GBNF, without a tokenizer (waste_string_free). */
WASTE_API waste_status waste_json_schema_to_gbnf(const char* schema, size_t length, char** out_gbnf,
                                                 waste_error* error);

/* One generation's position in a grammar, for a caller that runs its own
 * token loop (the server): per step, waste_grammar_state_mask on the
 * logits, sample, waste_grammar_state_accept the token. end_tokens (e.g. the
 * EOS and the chat format's end-of-message ids) are allowed exactly where
 * the grammar may end; every other token without bytes (specials, reserved
 * ids) is always masked. The state keeps its grammar alive; it is one
 * thread's. Its memory is bounded (an automaton and a cache of masks, reset
 * when they pass 64 MiB each). */
typedef struct waste_grammar_state waste_grammar_state;

WASTE_API waste_status waste_grammar_state_create(const waste_grammar* grammar, const int32_t* end_tokens,
                                                  size_t end_token_count, waste_grammar_state** out_state,
                                                  waste_error* error);
WASTE_API void waste_grammar_state_free(waste_grammar_state* state);
/* Sets the logit of every token the grammar refuses next to -infinity
 * (vocab logits; ids at or past the tokenizer's count are refused).
 * *out_allowed (may be NULL) gets how many tokens remain: 0 means nothing
 * can follow (the output is complete and no end token was given). */
WASTE_API waste_status waste_grammar_state_mask(waste_grammar_state* state, float* logits, size_t vocab,
                                                size_t* out_allowed, waste_error* error);
/* Advances by the token chosen. A token the grammar refuses is
 * WASTE_ERR_INVALID_ARGUMENT naming it, and the state is unchanged. After
 * an end token nothing more is accepted. */
WASTE_API waste_status waste_grammar_state_accept(waste_grammar_state* state, int32_t token, waste_error* error);
/* 1 when the output may end here (a complete sentence of the grammar), else 0. */
WASTE_API int waste_grammar_state_can_end(const waste_grammar_state* state);
/* 1 when the output must end here: the grammar allows no further byte. */
WASTE_API int waste_grammar_state_must_end(const waste_grammar_state* state);

/* ------------------------------------------------------------- generation */

typedef enum waste_generate_flags {
    /* Do not stop at the model's EOS token (config.eos_token_id). */
    WASTE_GENERATE_IGNORE_EOS = 1u << 0
} waste_generate_flags;

typedef struct waste_generate_options {
    uint32_t max_tokens;                /* most tokens to generate              */
    uint32_t flags;                     /* a set of waste_generate_flags        */
    /* Text: with a tokenizer, each token's text is streamed (an incomplete
     * UTF-8 character is held until complete) and stop strings are
     * matched; NULL gives ids only and allows no stop strings. */
    const waste_tokenizer* tokenizer;
    uint32_t detokenize_flags;          /* WASTE_TOKENIZE_MARKUP: specials as text */
    const int32_t* stop_tokens;         /* stop when one of these is generated  */
    size_t stop_token_count;
    /* Stop when the text contains one of these (they may span tokens); the
     * text up to it is delivered, the stop string and what follows are not.
     * Only the bytes that could still begin a stop string are held back. */
    const char* const* stop_strings;
    size_t stop_string_count;
    /* Constrained decoding (NULL = none, and then nothing changes: the same
     * tokens, bit for bit): before each token the tokens the grammar refuses
     * are masked, the EOS (unless WASTE_GENERATE_IGNORE_EOS) and stop_tokens
     * only where the grammar may end. Stop strings and max_tokens still
     * apply: an output cut by them is reported as WASTE_STOP_STRING or
     * WASTE_STOP_LENGTH, never as complete. When nothing may follow and no
     * end token is allowed, WASTE_STOP_GRAMMAR. Each step's logprob is still
     * the model's own, over the unmasked logits. The grammar must have been
     * compiled against this model's tokenizer. */
    const waste_grammar* grammar;
} waste_generate_options;

/* max_tokens 0, no tokenizer, no stops, flags 0, no grammar. */
WASTE_API void waste_generate_options_init(waste_generate_options* options);

/* One step of a generation, given to the callback. text/text_length: the
 * bytes that became ready with this token (may be 0 bytes, not
 * NUL-terminated, valid during the call). The EOS or stop token that ends a
 * generation contributes no text. A last call with token -1 delivers bytes
 * still held when the generation ends (its return value is ignored). */
typedef struct waste_generated {
    int32_t token;
    float logprob;        /* log-softmax of the raw logits (waste_sampler_sample) */
    const char* text;
    size_t text_length;
} waste_generated;

/* Return non-zero to stop after this token (Ctrl-C). */
typedef int (*waste_generate_fn)(const waste_generated* step, void* user);

typedef enum waste_stop_reason {
    WASTE_STOP_LENGTH = 0,    /* max_tokens generated                           */
    WASTE_STOP_EOS = 1,       /* the model's EOS token                          */
    WASTE_STOP_TOKEN = 2,     /* one of stop_tokens (stop_index says which)     */
    WASTE_STOP_STRING = 3,    /* one of stop_strings (stop_index says which)    */
    WASTE_STOP_CALLBACK = 4,  /* the callback returned non-zero                 */
    WASTE_STOP_CONTEXT = 5,   /* the context is full; the token drawn was dropped */
    WASTE_STOP_GRAMMAR = 6    /* the grammar is complete, allows no more bytes, and
                                 no end token was allowed (IGNORE_EOS, no stop tokens) */
} waste_stop_reason;

typedef struct waste_generate_result {
    uint64_t tokens;          /* tokens generated (and now held by the session) */
    uint32_t stop_reason;     /* a waste_stop_reason                             */
    int32_t stop_index;       /* the stop token or string that matched, else -1  */
} waste_generate_result;

/* Generates after what the session holds (evaluate a prompt first), drawing
 * each token with sampler (NULL = greedy). Every generated token, including
 * an EOS or stop token, becomes part of the session, so a later eval or
 * generate continues the conversation; the last one is evaluated lazily, by
 * the next call that needs it (eval, generate, logits, waste_state_save).
 * Any id below the model's vocabulary may be generated; one the tokenizer
 * has no bytes for (a reserved id of a vocabulary larger than the
 * tokenizer) is delivered with no text.
 * Stopping through the callback is not an error (WASTE_STOP_CALLBACK). */
WASTE_API waste_status waste_session_generate(waste_session* session, waste_sampler* sampler,
                                              const waste_generate_options* options, waste_generate_fn on_step,
                                              void* user, waste_generate_result* out_result, waste_error* error);

/* ------------------------------------------------------------------- chat */

/* A chat template: the container's chat.json (container-v0.md §6),
 * {"system": [prefix, suffix], "user": [..], "assistant": [..], "open": ".."}
 * (further roles allowed). Immutable; owns its strings. */
typedef struct waste_chat_template waste_chat_template;

/* The model's chat.json; a container without one is WASTE_ERR_UNSUPPORTED
 * ("... has no chat.json"). A malformed one is WASTE_ERR_FORMAT naming the key. */
WASTE_API waste_status waste_model_chat_template(const waste_model* model, waste_chat_template** out_template,
                                                 waste_error* error);
/* The same from chat.json's text (length bytes); source names it in errors. */
WASTE_API waste_status waste_chat_template_parse(const char* json, size_t length, const char* source,
                                                 waste_chat_template** out_template, waste_error* error);
WASTE_API void waste_chat_template_free(waste_chat_template* chat_template);
/* A role's markup (pointers owned by the template); an unknown role is
 * WASTE_ERR_INVALID_ARGUMENT listing the known ones. */
WASTE_API waste_status waste_chat_template_role(const waste_chat_template* chat_template, const char* role,
                                                const char** out_prefix, const char** out_suffix, waste_error* error);
/* The markup that starts the assistant's answer. Never NULL. */
WASTE_API const char* waste_chat_template_open(const waste_chat_template* chat_template);

typedef struct waste_chat_message {
    const char* role;         /* a key of chat.json: "system", "user", ...     */
    const char* content;      /* UTF-8, content_length bytes                   */
    size_t content_length;
} waste_chat_message;

/* The tokens of messages in order, each prefix + content + suffix, then the
 * open markup when open_answer is non-zero. Markup is encoded in markup mode
 * and content in plain mode, separately, so content can never produce a
 * special token. *out_tokens is released with waste_tokens_free. */
WASTE_API waste_status waste_chat_tokenize(const waste_chat_template* chat_template, const waste_tokenizer* tokenizer,
                                           const waste_chat_message* messages, size_t count, int open_answer,
                                           int32_t** out_tokens, size_t* out_count, waste_error* error);

/* ---------------------------------------------------------- session state */

/* The session's state to a file in the format of container-v0.md §7
 * (temporary file, fsync, rename). The state holds no token history and no
 * sampler: keep the waste_sampler to continue a sampled run identically. */
WASTE_API waste_status waste_state_save(waste_session* session, const char* path, waste_error* error);
/* Replaces the session's state with a saved one; the next token then comes
 * out exactly as it would have from the saved session. A file from a model
 * of another shape is WASTE_ERR_FORMAT naming the field; a truncated or
 * damaged file WASTE_ERR_CORRUPT; either way the session is reset (never
 * partly loaded). */
WASTE_API waste_status waste_state_load(waste_session* session, const char* path, waste_error* error);


/* ------------------------------------------------------- session snapshots */

/* A copy of a session's state in RAM (its attention state, position and
 * next-token logits), for prompt reuse: a server keeps the state at the end
 * of recent prompts and resumes a request whose prompt extends one of them,
 * prefilling only the new tokens. Restoring gives exactly the session that
 * was snapshotted (the next token comes out bit-identical). Snapshots count
 * against waste_open_options.snapshot_bytes: one that would exceed it is
 * WASTE_ERR_BUDGET naming the sizes (free older ones first). A snapshot may
 * outlive its session but not its model; it is immutable and may be
 * restored into any session of the same model, any number of times.
 *
 * What it holds: the KDA states and conv rings, the MLA latent rows up to
 * its position (not the session's whole context allocation), the AttnRes
 * block residuals, the residual stream, the logits, and a generated token
 * not evaluated yet (waste_session_generate evaluates its last token
 * lazily): that token is copied, not evaluated, so taking a snapshot costs
 * no compute and changes nothing about how the session continues, and the
 * restored session evaluates it with the next tokens exactly as the
 * original would. No sampler, stats or settings (prefill chunk, lookahead,
 * route dump): those stay the restored session's own.
 *
 * Resuming a prompt: eval(prefix), snapshot, later restore and eval(rest)
 * gives the greedy tokens of eval(prefix + rest), with logits within
 * chunking's rounding (1e-3, waste_session_set_prefill_chunk), and
 * bit-identical when the prefix ends on a chunk boundary (a multiple of the
 * prefill chunk, e.g. any prefix with chunk 1).
 *
 * Threads: snapshot and restore are calls on a session and follow the
 * sessions' rule (one call at a time per model). waste_snapshot_free,
 * _bytes and _position touch no session: they may run on any thread, also
 * during another session's call, but not while a restore reads the same
 * snapshot. waste_snapshot_free after waste_model_close is safe too. */
typedef struct waste_snapshot waste_snapshot;

/* *out_snapshot is released with waste_snapshot_free. The session is not
 * changed. */
WASTE_API waste_status waste_session_snapshot(waste_session* session, waste_snapshot** out_snapshot,
                                              waste_error* error);
/* Replaces the session's state, logits and pending token with the
 * snapshot's. A snapshot of another model is WASTE_ERR_INVALID_ARGUMENT and
 * leaves the session unchanged. */
WASTE_API waste_status waste_session_restore(waste_session* session, const waste_snapshot* snapshot,
                                             waste_error* error);
/* Gives its bytes back to the reserve. NULL is ignored. */
WASTE_API void waste_snapshot_free(waste_snapshot* snapshot);
/* The bytes it holds (what it counts against snapshot_bytes). */
WASTE_API uint64_t waste_snapshot_bytes(const waste_snapshot* snapshot);
/* The tokens the session held when it was taken (waste_session_position's
 * count: a pending generated token included). */
WASTE_API uint32_t waste_snapshot_position(const waste_snapshot* snapshot);
/* What the snapshot of a session at this many tokens takes, for planning:
 * exactly waste_snapshot_bytes of a snapshot at that position with no
 * generated token pending (one taken right after waste_session_generate
 * holds position - 1 tokens of state and the token: 4 bytes more than a
 * snapshot at position - 1). Grows linearly with position: a fixed part
 * (KDA states, logits) plus the MLA latent rows. */
WASTE_API uint64_t waste_model_snapshot_bytes(const waste_model* model, uint32_t position);

/* ---------------------------------------------------------- chat requests */

/* Renders an OpenAI chat-completions request body (request_json, length bytes, at most 64 MiB) into the
 * model's prompt, with the code the server uses: K3's XTML (shared k3-chat.md) when the model's tokenizer
 * speaks it (§1: <|open|>, <|close|>, <|sep|>, <|end_of_msg|> each encode to exactly one special id);
 * else the model's Jinja chat template (option "chat_template", else the container's chat_template.jinja;
 * format "jinja": the template sees messages and tools as sent, string tool-call arguments parsed,
 * add_generation_prompt, bos_token/eos_token (chat_tokens.json) and the request's "chat_template_kwargs";
 * content never becomes control tokens, docs/ARCHITECTURE.md; raise_exception is a refusal with the
 * template's message; content holding special-token text that the template transforms is refused, code
 * "content_has_special_tokens"); else the container's chat.json (messages with string content or text
 * parts; tools, tool calls, images and a tool_choice that demands a call are refused, since chat.json
 * cannot express them; past reasoning is dropped). The model may be opened metadata-only; its tokenizer
 * and chat format are read on first use and kept.
 * options_json (NULL = defaults), every member optional:
 *   {"chat_template": "..."}      a Jinja template's text (at most 1 MiB) to render with instead of the
 *                                 container's (--chat-template FILE); ignored for XTML
 *   {"thinking": true}            the server's default for the think channel
 *                                 (false: --no-thinking; a request may override)
 *   {"image_sizes": false}        true: honour the request's render-only "image_sizes" and
 *                                 "add_generation_prompt" (waste render); the server leaves it false
 *   {"image_sizes": [[W, H], ...]} the sizes of the request's image parts as
 *                                 the caller read them from the images (a
 *                                 server with the vision tower), in order:
 *                                 each part renders as its media block; a
 *                                 <|kimi_image_placeholder|> typed in a text
 *                                 then counts too, so the counts disagree and
 *                                 the request is refused (k3-chat.md §10)
 *   {"list_images": false}        true: a request with images renders (each part a bare
 *                                 <|kimi_image_placeholder|>) so that "images" lists them, for a caller
 *                                 that reads them and renders again with their "image_sizes"; without
 *                                 either, an image is refused (code "vision_disabled")
 * Only the fields a prompt depends on are validated (messages, tools, tool_choice, response_format,
 * reasoning_effort and its aliases, thinking); sampling fields and unknown keys are the caller's.
 * On success *out_json (waste_string_free) is
 *   {"format": "xtml" | "jinja" | "chat.json",
 *    "text": "...",                         the prompt as one string (jinja: exactly the template's output)
 *    "segments": [[text, is_markup], ...],  never merged (k3-chat.md §2)
 *    "ids": [...],                          each segment encoded on its own
 *    "channel": "think" | "response" | null, what the generation prompt left open (null: none, or
 *                                           chat.json; jinja: think when it ends in an unclosed <think>)
 *    "thinking": bool,
 *    "stop_ids": [...],                     XTML: <|end_of_msg|>'s id; chat.json: the assistant suffix
 *                                           when it is one token, and the EOS; jinja: the family's
 *                                           single-token ends (<|im_end|>, <|eot_id|>, <|call|>...), EOS
 *    "images": [...],                       image references, in block order
 *    "reply_format": "xtml" | "hermes" | ..., the reply parser's format (waste_reply_parser_create's)
 *    "call_syntax": {...}}                  jinja, where that format writes tool calls: how one call is
 *                                           written, for holding a reply to a demanded call (docs/SERVE.md
 *                                           "tool_choice"): {"call": [part...], "think_close": text,
 *                                           "think_masked": [text...]}, each part {"kind": "marker" |
 *                                           "text" | "name" | "arguments" | "each_argument" | "key" |
 *                                           "value", "text"?, "argument"?: [part...]}
 * A request the server would refuse (k3-chat.md §§5-10, §13.12) is WASTE_ERR_INVALID_ARGUMENT; then
 * *out_json is OpenAI's error object {"message", "type": "invalid_request_error", "param", "code"} (code
 * null, or e.g. "vision_disabled": this engine has no vision tower, so an image is refused unless
 * rendered with render-only image_sizes), and error->message the same message. Bad arguments or
 * options_json are WASTE_ERR_INVALID_ARGUMENT with *out_json NULL. */
WASTE_API waste_status waste_chat_render_json(const waste_model* model, const char* request_json, size_t length,
                                              const char* options_json, char** out_json, waste_error* error);

/* The bytes of one image reference as a chat request carries it
 * (k3-chat.md §10): a base64 `data:` URL; with WASTE_IMAGE_LOCAL_FILES in
 * flags (a trusted caller: the CLI's own --image) also any path or `file://` URL.
 * `http://` and `https://` URLs are never fetched. *out_bytes holds
 * *out_size bytes plus a NUL (waste_string_free); at most 64 MiB. A refused
 * reference is WASTE_ERR_INVALID_ARGUMENT with *out_error_json (when
 * out_error_json is not NULL) OpenAI's error object as waste_chat_render_json
 * gives, code "invalid_image_url" (not base64, not a data: URL or path),
 * "image_url_not_fetched", "local_images_disallowed" or "invalid_image" (a
 * file that cannot be read, or too large). */
#define WASTE_IMAGE_LOCAL_FILES 1u
WASTE_API waste_status waste_image_source_read(const char* ref, size_t length, uint32_t flags, char** out_bytes,
                                               size_t* out_size, char** out_error_json, waste_error* error);
/* The same for a server whose clients may name files in one directory
 * (`waste serve --image-dir DIR`), reading no file over max_file_bytes (0:
 * the 64 MiB bound; never more than it; a server passes what the request
 * may still hold): a path (relative ones from image_dir) or
 * `file://` URL is read only when it resolves — links followed, `.` and `..`
 * removed — to a regular file under image_dir's own resolved path; the file
 * is opened without blocking (a FIFO or device never holds the caller) and
 * its type checked before a byte is read. A path that does not resolve
 * there is "local_images_disallowed", in the same words whether or not it
 * exists; a file there that is not a regular file or is over the bound is
 * "invalid_image"; no refusal shows a file's contents. image_dir NULL: no
 * local file; one that is not a directory is WASTE_ERR_INVALID_ARGUMENT. */
WASTE_API waste_status waste_image_source_read_in_dir(const char* ref, size_t length, const char* image_dir, uint64_t max_file_bytes,
                                                      char** out_bytes, size_t* out_size, char** out_error_json, waste_error* error);

/* Reads a generated reply back by token id (k3-chat.md §12): reasoning,
 * content and tool calls, incrementally, in the model's family's format
 * (docs/ARCHITECTURE.md, "Reply formats"). A token is structure only if its
 * id is one of the format's markers as a single special token; everything
 * else is text (its bytes, an incomplete UTF-8 character held until
 * complete), except the markers a format reads from text where the
 * vocabulary has no token for them (DeepSeek-V3.2's DSML, MiniMax-M2's
 * <invoke>). The format is chosen from the model's tokenizer: XTML markers
 * (K3), harmony's <|channel|>/<|message|> (gpt-oss), DeepSeek's tool-call
 * tokens (V3.2's DSML when its chat template writes DSML), Kimi K2's
 * tool-call section, GLM's <arg_key>, MiniMax's <minimax:tool_call>, <tool_call>
 * (Qwen3/Hermes JSON or Qwen3-Coder XML), <think> alone (reasoning only);
 * a chat.json model without a Jinja template, or a tokenizer with none of
 * these, reads every token as content. Never fails on malformed output
 * (each format's rules: docs/ARCHITECTURE.md). One thread's. */
typedef struct waste_reply_parser waste_reply_parser;

/* channel: "think", "response" (what the prompt left open, from
 * waste_chat_render_json's "channel") or NULL for a raw prompt. */
WASTE_API waste_status waste_reply_parser_create(const waste_model* model, const char* channel,
                                                 waste_reply_parser** out_parser, waste_error* error);
WASTE_API void waste_reply_parser_free(waste_reply_parser* parser);
/* Feeds one generated token. *out_delta_json (owned by the parser, valid
 * until its next call) is what this token added:
 *   {"reasoning_content": "...", "content": "...",
 *    "tool_calls": [{"index": i, "id": "...", "name": "..."}]}  calls it opened or touched
 * with empty strings and lists left out ("{}" for a token that added
 * nothing); "index" is the call's 0-based position in the message's
 * tool_calls (OpenAI's streaming index). A call's arguments are complete
 * only at the end (waste_reply_parser_message_json). Concatenated deltas
 * equal the final message exactly. After the format's end of message (<|end_of_msg|>, <|im_end|>, <|call|>…) every token adds
 * nothing. An id outside the vocabulary is WASTE_ERR_INVALID_ARGUMENT. */
WASTE_API waste_status waste_reply_parser_push(waste_reply_parser* parser, int32_t token, const char** out_delta_json,
                                               waste_error* error);
/* Ends the output (§12.5): what was held back, as a last delta. */
WASTE_API waste_status waste_reply_parser_finish(waste_reply_parser* parser, const char** out_delta_json,
                                                 waste_error* error);
/* The message so far, k3-chat.md §12.6: {"role": "assistant", "content": text
 * or null, "reasoning_content"?, "tool_calls"?: [{"id", "type": "function",
 * "function": {"name", "arguments"}}], "finished": bool} (waste_string_free). */
WASTE_API waste_status waste_reply_parser_message_json(const waste_reply_parser* parser, char** out_json,
                                                       waste_error* error);
/* A reply parser for a tokenizer and a format named by the caller:
 * "xtml", "harmony", "deepseek", "dsml" (DeepSeek-V3.2), "kimi-k2", "glm",
 * "minimax" (MiniMax-M2), "hermes", "reasoning", "content", or "auto" (chosen from the tokenizer's specials alone, as
 * waste_reply_parser_create does without a chat template). channel as
 * waste_reply_parser_create's ("think": the reply starts inside reasoning).
 * An unknown name, or a tokenizer that lacks one of the format's required
 * markers as a single special token, is WASTE_ERR_INVALID_ARGUMENT naming it. */
WASTE_API waste_status waste_reply_parser_create_format(const waste_tokenizer* tokenizer, const char* format,
                                                        const char* channel, waste_reply_parser** out_parser,
                                                        waste_error* error);

#ifdef __cplusplus
}
#endif

#endif /* WASTE_WASTE_H */
