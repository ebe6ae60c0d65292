#include "runtime/memory_plan.h"

#include <algorithm>

#include "grammar/grammar_memory.h"
#include "image/image.h"
#include "kernels/int8_matmul.h"
#include "model/decoded_experts.h"
#include "model/moe_experts.h"
#include "model/forward.h"
#include "model/vision_tower.h"
#include "runtime/image_queue.h"
#include "model/session_file.h"
#include "platform/error.h"
#include "runtime/expert_cache.h"
#include "text/tokenizer_loader.h"

namespace waste::runtime {

using format::LayerKind;
using format::ModelConfig;

uint64_t session_state_bytes(const ModelConfig& c, uint32_t context_length) {
    uint64_t bytes = 0;
    for (int l = 0; l < c.layers; ++l) {
        const LayerKind kind = c.layer_kinds[l];
        if (format::is_delta_rule(kind)) {
            bytes += c.delta_state_floats() * 4;  // S: [v_heads][D][D] f32
            bytes += c.delta_conv_floats() * 4;   // the q/k/v conv rings
        } else if (kind == LayerKind::gqa) {
            // keys, values [ctx][2][kv*d]; a sliding layer's ring only
            bytes += static_cast<uint64_t>(model::gqa_cache_rows(c, l, context_length)) * model::gqa_cache_row(c) * 4;
        } else {
            bytes += static_cast<uint64_t>(context_length) * (c.kv_lora + c.qk_rope) * 4;  // latent cache [ctx][r+rope]
        }
    }
    if (c.attn_res_block > 0) bytes += static_cast<uint64_t>(c.layers / c.attn_res_block + 2) * c.hidden * 4;
    bytes += static_cast<uint64_t>(c.hidden) * 4;  // the residual stream [H]
    return bytes;
}

uint32_t batch_table_rows(uint32_t sessions) { return std::clamp(sessions, 1u, model::max_batch_rows); }

uint64_t scratch_bytes(const ModelConfig& c, const format::ExpertQuant& quant, uint32_t context_length, unsigned compute_threads,
                       uint32_t prefill_chunk, bool int8_tables, uint32_t table_rows) {
    return workspace_bytes(c, quant, context_length, compute_threads, prefill_chunk, int8_tables, table_rows) +
           std::max(compute_threads, 1u) * compute_thread_stack_bytes;
}

uint64_t workspace_bytes(const ModelConfig& c, const format::ExpertQuant& quant, uint32_t context_length, unsigned compute_threads,
                         uint32_t prefill_chunk, bool int8_tables, uint32_t table_rows) {
    const uint64_t threads = std::max(compute_threads, 1u);
    // Incident: the plan once counted two threads' tables whatever the pool
    // ran, so `--threads 256` on K3 held ~300 MB the budget did not know of.
    uint64_t bytes =
        model::Workspace::planned_bytes(c, c.has_moe() ? &quant : nullptr, compute_threads, prefill_chunk, int8_tables, table_rows);
    // attention's scratch per head (at most one thread a head): the scores
    // over the context and the chunk, MLA's absorbed query; and per thread
    // MLA's W_UK and W_UV rows of a head
    const uint64_t per_head = static_cast<uint64_t>(context_length) + prefill_chunk + 2 * (c.kv_lora + c.qk_rope);
    bytes += 4 * (static_cast<uint64_t>(c.heads) * per_head +
                  threads * static_cast<uint64_t>(c.qk_nope + c.v_head) * c.kv_lora);
    return bytes;
}

uint64_t spare_bytes(const platform::MemoryInfo& memory) {
    const uint64_t usable = memory.usable_bytes / 8 * 7;
    return memory.available_bytes ? std::min(usable, memory.available_bytes / 8 * 7) : usable;
}

const char* recommended_covers(const MemoryPlan& plan) {
    if (plan.recommended_bytes >= plan.everything_bytes) return "everything";
    return plan.recommended_bytes > plan.floor_bytes ? "spare" : "floor";
}

MemoryPlan plan_memory(const format::Container& container, uint32_t context_length, uint64_t requested_budget,
                       const platform::MemoryInfo& memory, unsigned compute_threads, bool int8_tables) {
    PlanRequest request;
    request.context_length = context_length;
    request.budget_bytes = requested_budget;
    request.compute_threads = compute_threads;
    request.int8_tables = int8_tables;
    return plan_memory(container, request, memory);
}

namespace {

// The plan at one prefill chunk (plan_memory's body; the chunk is chosen there).
MemoryPlan plan_at_chunk(const format::Container& container, const PlanRequest& request, const platform::MemoryInfo& memory,
                         uint32_t prefill_chunk) {
    if (request.sessions > max_planned_sessions)
        fail(WASTE_ERR_INVALID_ARGUMENT, "memory plan: sessions {} is above the limit of {}", request.sessions,
             max_planned_sessions);
    if (request.snapshot_bytes > max_snapshot_reserve_bytes)
        fail(WASTE_ERR_INVALID_ARGUMENT, "memory plan: snapshot reserve {} bytes is above the limit of {} bytes (1 PiB)",
             request.snapshot_bytes, max_snapshot_reserve_bytes);
    if (request.grammars > grammar::max_planned_grammars)
        fail(WASTE_ERR_INVALID_ARGUMENT, "memory plan: grammars {} is above the limit of {}", request.grammars,
             grammar::max_planned_grammars);
    const ModelConfig& c = container.config();
    const uint32_t context_length = request.context_length;
    const uint64_t requested_budget = request.budget_bytes;
    const unsigned compute_threads = request.compute_threads;
    MemoryPlan plan;
    plan.compute_threads = compute_threads;
    plan.memory = memory;
    plan.context_length = context_length;
    plan.sessions = std::max(request.sessions, 1u);
    plan.prefill_chunk = prefill_chunk;
    plan.trunk_bytes = container.resident_trunk_bytes();
    plan.session_state_bytes = session_state_bytes(c, context_length);
    plan.state_bytes = plan.sessions * plan.session_state_bytes;
    format::ExpertQuant no_experts;  // a trunk-only container: unit shapes, no tables
    no_experts.stages = no_experts.vec_dim = no_experts.entries = 1;
    plan.session_scratch_bytes = workspace_bytes(c, container.has_experts() ? container.manifest().quant : no_experts,
                                                 context_length, compute_threads, prefill_chunk, request.int8_tables,
                                                 batch_table_rows(plan.sessions));
    plan.scratch_bytes = plan.sessions * plan.session_scratch_bytes +
                         std::max(compute_threads, 1u) * compute_thread_stack_bytes;
    plan.snapshot_bytes = request.snapshot_bytes;
    plan.grammars = request.grammars;
    if (plan.grammars > 0)
        plan.grammar_bytes = grammar::vocabulary_trie_bound_bytes(static_cast<uint64_t>(c.vocab), text::container_tokenizer_file_bytes(container)) +
                             grammar::grammar_compile_scratch_bytes(static_cast<uint64_t>(c.vocab)) + plan.grammars * grammar::grammar_slot_bytes(static_cast<uint64_t>(c.vocab));
    if (request.vision) plan.vision_bytes = vision_bytes(container, plan.sessions);
    uint64_t record = 0, moe_layers = 0;
    for (const auto& [layer, bank] : container.manifest().banks) {
        record = bank.record_bytes;
        plan.all_experts_bytes += bank.bytes;
        ++moe_layers;
    }
    // The minimum cache holds the current layer's top-k records plus as many
    // in flight for the next layer, all pinned at once.
    plan.min_cache_bytes = 2 * static_cast<uint64_t>(c.top_k) * record;
    plan.working_set_bytes = static_cast<uint64_t>(c.top_k) * record * moe_layers;
    plan.io_depth = ExpertCache::default_depth(c);
    plan.io_bytes = container.has_experts()
                        ? ExpertCache::reader_bytes(plan.io_depth) + static_cast<uint64_t>(c.layers) * c.experts * sizeof(uint64_t)
                        : 0;
    // Saving a session's state (waste_session_save, chat's /save) writes
    // through its own buffers on a writer thread. The soak measured the
    // save's 2 MiB as the peak RSS's last step, 0.9 MB under the budget.
    plan.io_bytes += static_cast<uint64_t>(model::session_file_write_buffers) * model::session_file_write_buffer_bytes +
                     compute_thread_stack_bytes;
    plan.runtime_bytes = process_allowance_bytes + container.codebooks().size() * sizeof(float);
    if (request.int8_tables) plan.runtime_bytes += model::int8_codebooks_bytes(container);  // the engine's, in integers
    plan.floor_bytes = plan.trunk_bytes + plan.state_bytes + plan.scratch_bytes + plan.io_bytes + plan.runtime_bytes +
                       plan.snapshot_bytes + plan.grammar_bytes + plan.vision_bytes + plan.min_cache_bytes;

    // The default budget: every expert record (and in the int8 mode every
    // decoded expert) where what the machine can spare holds them, else
    // all it can spare, never below the floor.
    plan.spare_bytes = spare_bytes(memory);
    if (request.int8_tables && container.has_experts())
        plan.all_decoded_bytes = model::DecodedExpert::held_bytes(c.expert_input(), c.moe_intermediate) *
                                 static_cast<uint64_t>(moe_layers) * c.experts;
    plan.everything_bytes = plan.floor_bytes - plan.min_cache_bytes + std::max(plan.all_experts_bytes, plan.min_cache_bytes) +
                            plan.all_decoded_bytes;
    plan.recommended_bytes = std::max(plan.floor_bytes, std::min(plan.everything_bytes, plan.spare_bytes));
    plan.budget_requested = requested_budget != 0;
    plan.budget_bytes = plan.budget_requested ? requested_budget : plan.recommended_bytes;
    plan.budget_ok = plan.budget_bytes >= plan.floor_bytes;
    if (plan.budget_ok) {
        const uint64_t fixed = plan.floor_bytes - plan.min_cache_bytes;
        plan.cache_bytes = std::min(plan.budget_bytes - fixed, std::max(plan.all_experts_bytes, plan.min_cache_bytes));
        plan.cache_records = record ? plan.cache_bytes / record : 0;
        // the int8 mode's decoded experts take what is left once every
        // record is cached
        if (request.int8_tables && container.has_experts()) {
            const uint64_t each = model::DecodedExpert::held_bytes(c.expert_input(), c.moe_intermediate);
            const uint64_t left = plan.budget_bytes - fixed - plan.cache_bytes;
            plan.decoded_bytes = std::min(left, plan.all_decoded_bytes) / each * each;
        }
    }
    return plan;
}

}  // namespace

MemoryPlan plan_memory(const format::Container& container, const PlanRequest& request, const platform::MemoryInfo& memory) {
    if (request.prefill_chunk > model::max_prefill_chunk)
        fail(WASTE_ERR_INVALID_ARGUMENT, "memory plan: prefill chunk {} is above the limit of {} tokens", request.prefill_chunk,
             model::max_prefill_chunk);
    if (request.prefill_chunk != 0) return plan_at_chunk(container, request, memory, request.prefill_chunk);
    // The largest chunk, halving from the default, whose floor fits under
    // the RAM ceiling; else the smallest. The machine decides it, never the
    // budget, so a plan's floor is the same at every budget (a budget below
    // it is refused, and --chunk lowers it).
    for (uint32_t chunk = model::default_prefill_chunk;; chunk /= 2) {
        MemoryPlan plan = plan_at_chunk(container, request, memory, chunk);
        if (plan.floor_bytes <= memory.usable_bytes / 8 * 7 || chunk / 2 < model::min_planned_chunk) return plan;
    }
}

void require_budget(const MemoryPlan& plan) {
    if (!plan.budget_ok)
        fail(WASTE_ERR_BUDGET,
             "memory budget {} bytes is below this model's floor of {} bytes at context {} with {} session{} "
             "(trunk {} + state {} + scratch {} + I/O {} + runtime {} + snapshot reserve {} + grammar reserve {} + "
             "vision {} + minimum expert cache {}; the scratch holds a prefill chunk of {} tokens, which --chunk "
             "lowers); run `waste plan MODEL` to see the plan",
             plan.budget_bytes, plan.floor_bytes, plan.context_length, plan.sessions, plan.sessions == 1 ? "" : "s",
             plan.trunk_bytes, plan.state_bytes, plan.scratch_bytes, plan.io_bytes, plan.runtime_bytes,
             plan.snapshot_bytes, plan.grammar_bytes, plan.vision_bytes, plan.min_cache_bytes, plan.prefill_chunk);
}

uint64_t image_queue_rows(const format::VisionConfig& config) {
    return max_queued_images * static_cast<uint64_t>(config.max_patches / 4);
}

uint64_t vision_bytes(const format::Container& container, uint32_t sessions) {
    const std::optional<format::VisionConfig> config = format::read_vision_config(container.directory(), container.config());
    if (!config)
        fail(WASTE_ERR_UNSUPPORTED, "{} has no vision tower (no vision.json): images cannot be read", container.directory());
    const uint64_t queue = 2 * image_queue_rows(*config) * static_cast<uint64_t>(config->text_hidden) * sizeof(float);
    const uint64_t pass = model::VisionTower::planned_bytes(container, *config);
    const uint64_t weights = model::VisionTower::weight_bytes(container, *config);
    // planned_bytes holds the weights and one pass; a decode instead of the pass.
    return std::max(pass, weights + image::decode_reserve_bytes) + std::max<uint32_t>(sessions, 1) * queue;
}

}  // namespace waste::runtime
