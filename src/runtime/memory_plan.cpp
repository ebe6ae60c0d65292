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
        if (kind == LayerKind::kda) {
            const uint64_t channels = static_cast<uint64_t>(c.kda_heads) * c.kda_head_dim;
            bytes += channels * c.kda_head_dim * 4;                                      // S: [heads][D][D] f32
            bytes += 3 * channels * static_cast<uint64_t>(std::max(c.conv_kernel - 1, 0)) * 4;  // q/k/v conv rings
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

uint64_t scratch_bytes(const ModelConfig& c, const format::ExpertQuant& quant, uint32_t context_length, unsigned compute_threads,
                       bool int8_tables) {
    return workspace_bytes(c, quant, context_length, compute_threads, int8_tables) +
           std::max(compute_threads, 1u) * compute_thread_stack_bytes;
}

uint64_t workspace_bytes(const ModelConfig& c, const format::ExpertQuant& quant, uint32_t context_length, unsigned compute_threads,
                         bool int8_tables) {
    const uint64_t threads = std::max(compute_threads, 1u);
    constexpr uint64_t prefill_chunk = 64;  // tokens per prefill chunk (models.md §7)
    const uint64_t kda_width = static_cast<uint64_t>(c.kda_heads) * c.kda_head_dim;
    const uint64_t mla_width = static_cast<uint64_t>(c.heads) * std::max(c.qk_nope + c.qk_rope, c.v_head);
    const uint64_t gqa_width = static_cast<uint64_t>(c.heads) * c.head_dim;
    const uint64_t ffn_width = std::max<uint64_t>({static_cast<uint64_t>(c.intermediate),
                                                   static_cast<uint64_t>(c.moe_intermediate) * std::max(c.shared_experts, 1),
                                                   static_cast<uint64_t>(c.moe_intermediate)});
    // per token of a chunk: residual, normed input, attention output, MoE
    // accumulator and latent (8 x hidden); q/k/v/gate/decay of KDA or the MLA
    // query (6 x the widest attention); gate and up of the widest FFN (2x).
    const uint64_t per_token = 8 * static_cast<uint64_t>(c.hidden) + 6 * std::max({kda_width, mla_width, gqa_width}) + 2 * ffn_width +
                               static_cast<uint64_t>(c.kv_lora + c.qk_rope);
    uint64_t floats = prefill_chunk * per_token;
    floats += c.vocab;                                                      // logits
    floats += static_cast<uint64_t>(c.heads) * (context_length + c.kv_lora);  // MLA scores, absorbed queries
    floats += static_cast<uint64_t>(c.experts);                             // router scores
    uint64_t bytes = floats * 4;
    // the int8 mode's trunk projections: one chunk's quantised inputs
    // (kernels/trunk_int8.h), for the widest projection input
    if (int8_tables) bytes += sizeof(kernels::TrunkInt8Input) + kernels::trunk_int8_input_bytes(prefill_chunk, model::widest_projection_input(c));
    // Incident: the plan once counted two threads' tables whatever the pool
    // ran, so `--threads 256` on K3 held ~300 MB the budget did not know of.
    if (c.has_moe()) {
        // decode's lookup tables: [positions][stages][entries] f32 — the gate
        // and up tables shared by the top-k, one down table and one [I] gate
        // and up row per compute thread (forward.h's Workspace); prefill's one
        // expert over a chunk: its inputs and outputs [64][lat], gate and up
        // [64][I] (model/moe_experts.h).
        const uint64_t per_position = static_cast<uint64_t>(quant.stages) * quant.entries * 4;
        bytes += 2 * static_cast<uint64_t>(c.expert_input() / quant.vec_dim) * per_position;
        bytes += threads * static_cast<uint64_t>(c.moe_intermediate / quant.vec_dim) * per_position;
        bytes += threads * 2 * static_cast<uint64_t>(c.moe_intermediate) * 4;
        bytes += prefill_chunk * 2 * (static_cast<uint64_t>(c.expert_input()) + c.moe_intermediate) * 4;
        if (int8_tables) {
            // the same tables at one byte per entry, and their block scales
            // (one f32 per 32 positions, rounded up: a position each)
            const uint64_t positions = 2 * static_cast<uint64_t>(c.expert_input() / quant.vec_dim) +
                                       threads * static_cast<uint64_t>(c.moe_intermediate / quant.vec_dim);
            bytes += positions * (per_position / 4 + 4);
            // ... and their quantised inputs: the bytes of each position and its scale
            bytes += positions * ((quant.vec_dim + 3) / 4 * 4 + 4);
            // its prefill: one expert decoded to int8 rows; per compute
            // thread one expert's f32 inputs, gate, up and outputs over the
            // chunk, its int8 inputs and activations and their group scales
            const size_t lat = c.expert_input(), inter = c.moe_intermediate;
            const kernels::Int8Matrix x_rows{prefill_chunk, lat}, h_rows{prefill_chunk, inter};
            bytes += model::DecodedExpert::bytes(lat, inter) + sizeof(model::DecodedExpert);
            bytes += threads * (sizeof(model::Workspace::Int8ExpertScratch) + prefill_chunk * 2 * (lat + inter) * sizeof(float) +
                                prefill_chunk * (x_rows.ld() + h_rows.ld()) +
                                prefill_chunk * (x_rows.groups() + h_rows.groups()) * sizeof(float));
        }
    }
    return bytes;
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

MemoryPlan plan_memory(const format::Container& container, const PlanRequest& request, const platform::MemoryInfo& memory) {
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
    plan.trunk_bytes = container.resident_trunk_bytes();
    plan.session_state_bytes = session_state_bytes(c, context_length);
    plan.state_bytes = plan.sessions * plan.session_state_bytes;
    format::ExpertQuant no_experts;  // a trunk-only container: unit shapes, no tables
    no_experts.stages = no_experts.vec_dim = no_experts.entries = 1;
    plan.session_scratch_bytes = workspace_bytes(c, container.has_experts() ? container.manifest().quant : no_experts,
                                                 context_length, compute_threads, request.int8_tables);
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

    const uint64_t ceiling = memory.usable_bytes / 8 * 7;
    plan.recommended_bytes = plan.floor_bytes;
    for (uint64_t multiple : {3, 2, 1}) {
        const uint64_t extra = std::min(multiple * plan.working_set_bytes, plan.all_experts_bytes);
        if (plan.floor_bytes + extra <= ceiling) {
            plan.recommended_bytes = plan.floor_bytes + extra;
            break;
        }
    }
    // The int8 mode holds decoded experts where RAM allows (model/decoded_experts.h):
    // by default, all of them and every record when that fits.
    if (request.int8_tables && container.has_experts()) {
        plan.all_decoded_bytes = model::DecodedExpert::held_bytes(c.expert_input(), c.moe_intermediate) *
                                 static_cast<uint64_t>(moe_layers) * c.experts;
        const uint64_t everything = plan.floor_bytes - plan.min_cache_bytes + std::max(plan.all_experts_bytes, plan.min_cache_bytes) +
                                    plan.all_decoded_bytes;
        if (everything <= ceiling) plan.recommended_bytes = std::max(plan.recommended_bytes, everything);
    }
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

void require_budget(const MemoryPlan& plan) {
    if (!plan.budget_ok)
        fail(WASTE_ERR_BUDGET,
             "memory budget {} bytes is below this model's floor of {} bytes at context {} with {} session{} "
             "(trunk {} + state {} + scratch {} + I/O {} + runtime {} + snapshot reserve {} + grammar reserve {} + "
             "vision {} + minimum expert cache {}); run `waste plan MODEL` to see the plan",
             plan.budget_bytes, plan.floor_bytes, plan.context_length, plan.sessions, plan.sessions == 1 ? "" : "s",
             plan.trunk_bytes, plan.state_bytes, plan.scratch_bytes, plan.io_bytes, plan.runtime_bytes,
             plan.snapshot_bytes, plan.grammar_bytes, plan.vision_bytes, plan.min_cache_bytes);
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
