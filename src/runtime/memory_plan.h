// memory_plan.h — the RAM plan: what must be resident, and what is left for
// the expert cache (docs/ARCHITECTURE.md, "Memory is a planned ceiling").
//
//   floor       = trunk + sessions x (state(ctx) + workspace) + thread stacks
//                 + I/O + runtime + snapshot reserve + minimum cache
//   sessions    = the conversations planned at once (a server's --parallel):
//                 each has its own state and its own compute workspace
//                 (model::Workspace: activations of a prefill chunk, lookup
//                 tables, logits)
//   chunk       = the prefill chunk: as asked, else the largest of 512,
//                 256, 128 whose floor fits under 7/8 of usable RAM, else
//                 64 — the machine's choice, never the budget's, so the
//                 floor is the same at every budget
//   snapshot    = RAM reserved for session snapshots (prompt reuse,
//                 runtime/session_snapshot.h); snapshots beyond it are refused
//   I/O         = the reader (io_uring ring or pread threads), the
//                 hotlist's usage counters, and the state-file writer's
//                 buffers and thread (a save); reads land in cache slots, so
//                 there are no I/O buffers, and router lookahead prefetches
//                 into cache slots too (always leaving top_k for demand)
//   runtime     = the f32 codebooks, and a fixed allowance for the process
//                 itself: code, shared libraries, thread stacks and
//                 allocator slack, so that the budget bounds the peak RSS of
//                 the whole process, not only the engine's allocations
//   working set = one token's experts: top_k records in every MoE layer
//   default     = floor + 3x working set, else 2x, else 1x, whichever first
//                 fits under 7/8 of usable RAM; else the floor
//   cache       = budget - (floor - minimum cache), never more than every
//                 expert of the container
// A budget below the floor is refused with the floor and a pointer to
// `waste plan`.
#pragma once

#include <cstdint>
#include <string>

#include "format/container.h"
#include "format/vision_config.h"
#include "platform/memory_info.h"

namespace waste::runtime {

struct MemoryPlan {
    uint32_t context_length = 0;
    uint32_t sessions = 1;              // states and workspaces planned
    uint32_t prefill_chunk = 0;         // tokens a workspace holds: prompts are evaluated in chunks of this many
    uint64_t trunk_bytes = 0;
    uint64_t session_state_bytes = 0;   // one session's state at the context length
    uint64_t state_bytes = 0;           // sessions x session_state_bytes
    uint64_t session_scratch_bytes = 0; // one session's workspace
    uint64_t scratch_bytes = 0;         // sessions x session_scratch_bytes + compute thread stacks
    uint64_t snapshot_bytes = 0;        // the snapshot reserve
    uint32_t grammars = 0;              // grammar slots planned (constrained decoding)
    uint64_t grammar_bytes = 0;         // their reserve: the vocabulary trie + grammars x a slot
    uint64_t vision_bytes = 0;          // the vision tower, one image's decode or tower pass, the image queue
    unsigned compute_threads = 0;     // the pool the scratch was planned for
    uint64_t io_bytes = 0;            // reader + usage counters + state-file writer
    uint64_t runtime_bytes = 0;       // codebooks + process allowance
    unsigned io_depth = 0;            // reads in flight at most
    uint64_t min_cache_bytes = 0;
    uint64_t floor_bytes = 0;
    uint64_t working_set_bytes = 0;   // one token's expert records
    uint64_t all_experts_bytes = 0;
    uint64_t everything_bytes = 0;    // the floor with every expert record cached (int8: and every expert decoded)
    uint64_t spare_bytes = 0;         // what the machine can spare (spare_bytes below)
    uint64_t recommended_bytes = 0;   // the default budget: everything, within spare, at least the floor
    uint64_t budget_bytes = 0;        // resolved: requested, or the default
    bool budget_requested = false;
    bool budget_ok = true;            // budget >= floor
    uint64_t cache_bytes = 0;         // what the expert cache may hold
    uint64_t cache_records = 0;
    // The int8 mode's decoded experts (model/decoded_experts.h): what the
    // budget has left after the cache holds every record, up to all of them.
    uint64_t decoded_bytes = 0;
    uint64_t all_decoded_bytes = 0;   // every routed expert decoded
    platform::MemoryInfo memory;
};

// What the default budget may take: 7/8 of the RAM available when the plan
// is made (MemoryInfo::available_bytes), at most 7/8 of the usable RAM (all
// of it where availability is unknown). The eighth left is the system's and
// other programs' margin; a budget the user names is not bounded by it.
uint64_t spare_bytes(const platform::MemoryInfo& memory);
// What the default budget covers: "everything" (every expert cached),
// "spare" (all the machine can spare, less than everything) or "floor"
// (the machine spares less than the floor: the floor).
const char* recommended_covers(const MemoryPlan& plan);

// Session state bytes at a context length: KDA state + conv rings, the MLA
// latent cache, AttnRes block residuals and the residual stream.
uint64_t session_state_bytes(const format::ModelConfig& config, uint32_t context_length);

// One session's workspace at a context length (model::Workspace::planned_bytes
// for a chunk of prefill_chunk tokens, and attention's scratch) for a pool of
// compute_threads threads (each has its own down-projection table and
// gate/up rows in every workspace); int8_tables: the int8 lookup-table mode's
// quantised copies too (kernels/vq_lut.h); table_rows: the rows of decode's
// gate/up tables, batch_table_rows(sessions).
uint64_t workspace_bytes(const format::ModelConfig& config, const format::ExpertQuant& quant, uint32_t context_length,
                         unsigned compute_threads, uint32_t prefill_chunk, bool int8_tables = false, uint32_t table_rows = 1);

// The engine's scratch for one session: its workspace and the compute
// threads' stacks.
uint64_t scratch_bytes(const format::ModelConfig& config, const format::ExpertQuant& quant, uint32_t context_length,
                       unsigned compute_threads, uint32_t prefill_chunk, bool int8_tables = false, uint32_t table_rows = 1);

// The rows of decode tables each workspace holds for batched decode steps
// (model::forward_batch) when the plan has `sessions` sessions: one each, up
// to model::max_batch_rows.
uint32_t batch_table_rows(uint32_t sessions);

// The most sessions a plan takes (waste_open_options.sessions): the plan
// multiplies a session's bytes by it, and an engine runs one call at a time,
// so slots beyond a thousand would only hold idle memory.
constexpr uint32_t max_planned_sessions = 1024;
// The largest snapshot reserve (waste_open_options.snapshot_bytes): 1 PiB,
// above any machine's RAM, and small enough that the floor's sum never
// overflows.
constexpr uint64_t max_snapshot_reserve_bytes = 1ull << 50;

struct PlanRequest {
    uint32_t context_length = 4096;
    uint64_t budget_bytes = 0;     // 0 = the recommended budget
    unsigned compute_threads = 1;  // what the engine's pool will run (platform::resolve_pool_threads)
    bool int8_tables = false;
    uint32_t sessions = 1;         // 0 counts as 1; at most max_planned_sessions
    uint64_t snapshot_bytes = 0;   // at most max_snapshot_reserve_bytes
    uint32_t grammars = 0;         // grammar slots (grammar/grammar_memory.h); at most grammar::max_planned_grammars
    bool vision = false;           // images: the container's vision tower (vision_bytes)
    uint32_t prefill_chunk = 0;    // 0 = the plan's choice (see "chunk" above); at most model::max_prefill_chunk
};

// Images (vision.md §5): the tower's tensors, then the larger of one decode
// (image::decode_reserve_bytes) and one tower pass at max_patches (they never
// overlap: the pixels are freed before the tower runs), and two copies of a
// full image queue per session (appending may copy it). Throws
// WASTE_ERR_UNSUPPORTED when the container has no vision.json, and what
// format::read_vision_config throws for a bad one.
uint64_t vision_bytes(const format::Container& container, uint32_t sessions);
// Rows one session's image queue may hold: max_queued_images at max_patches.
uint64_t image_queue_rows(const format::VisionConfig& config);

// Throws WASTE_ERR_INVALID_ARGUMENT for sessions, a snapshot reserve or a
// prefill chunk beyond their bounds.
MemoryPlan plan_memory(const format::Container& container, const PlanRequest& request, const platform::MemoryInfo& memory);

// The same with one session and no snapshot reserve.
MemoryPlan plan_memory(const format::Container& container, uint32_t context_length, uint64_t requested_budget,
                       const platform::MemoryInfo& memory, unsigned compute_threads, bool int8_tables = false);

// The process's own resident memory outside the engine's planned parts:
// `waste --help` peaks at 6.8 MB (binary, libstdc++, PCRE2, ICU, liburing,
// fmt); a tokenizer's tables add ~4–5 MB at 163,840 tokens (`waste tokenize`
// on `mid` peaks at 12.0 MB), and `chat` holds two (the model's handle and
// the chat format's); a compute or reader thread touches well under 64 KiB
// of stack. 20 MiB leaves room for allocator slack and the stacks of a few
// threads (compute threads past that are planned in the scratch:
// compute_thread_stack_bytes).
// Incident: at 16 MiB the five-minute soak peaked at 189.8 of 190.7 MB once
// the template engine, the tokenizer.json tokenizers and ICU joined the
// binary (it had peaked at 186.5–187.8 MB before); a CI machine's layout
// differs by a few MB. Measured on the development VM, GCC 12 -O3
// (tests/streaming_test.cpp and scripts/soak.py check peak RSS against the
// budget). Known gap: the tokenizer is not planned from its file's size.
constexpr uint64_t process_allowance_bytes = 20ull << 20;
constexpr uint64_t compute_thread_stack_bytes = 64ull << 10;

// Throws WASTE_ERR_BUDGET when the plan's budget is below its floor.
void require_budget(const MemoryPlan& plan);

}  // namespace waste::runtime
