// moe_experts.h — one routed expert over the tokens of a prefill chunk that
// chose it (models.md §3, §7): gate and up as matrix products over those
// tokens (kernels/vq_matmul.h: weights summed from the codebooks once per
// position, no lookup tables), the activation, then down.
//
// Decode (a chunk of one token) keeps the lookup tables built once per token
// and shared by the top-k experts; this path replaces them for chunks of
// several tokens, where each expert serves several tokens and one
// multiply-add per weight beats S lookups per 8 weights. Exact arithmetic in
// both (no approximation), rounded differently: chunked prefill agrees with
// token-by-token decode within 1e-3 (models.md §7). Rows are split over the
// pool; each (token, row) is one thread's, so thread counts change no bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward.h"

namespace waste::model {

// The codebooks of one MoE layer (consecutive S-stage books for gate, up, down).
struct ExpertBooks {
    kernels::VqTableShape in_shape, down_shape;
    bool packed6 = false;
    const float* gate = nullptr;
    const float* up = nullptr;
    const float* down = nullptr;
    // gpt-oss's per-expert biases of the layer (null: none): [E][I], [E][I], [E][lat]
    const float* gate_bias = nullptr;
    const float* up_bias = nullptr;
    const float* down_bias = nullptr;
};

// Layer `layer`'s codebooks and shapes (its bank's, container-v0 §5); no biases.
ExpertBooks layer_expert_books(const format::Container& container, int layer);

// Every codebook record of the container quantised for the int8 mode's
// integer tables (kernels/vq_lut.h, build_vq_table_int8), in record order:
// a layer's gate, up and down books start at its bank's codebook_base.
std::vector<kernels::VqInt8Book> int8_codebooks(const format::Container& container);
// Their bytes, for the memory plan.
uint64_t int8_codebooks_bytes(const format::Container& container);

// Adds expert e's gate and up biases to g, u ([n][inter]) and its down bias to
// out ([n][lat]) when the layer has them (gpt-oss). Used by both the decode
// lookup-table path and the prefill matrix products, so the two add alike.
void add_expert_input_biases(const ExpertBooks& books, int expert, size_t inter, size_t n, float* g, float* u);
void add_expert_output_bias(const ExpertBooks& books, int expert, size_t lat, size_t n, float* out);

// One landed expert's share of a prefill chunk: its record and the (token,
// slot) pairs routed to it (n <= the workspace's chunk_tokens).
struct ExpertRun {
    int expert = 0;
    const uint8_t* record = nullptr;
    const uint32_t* tokens = nullptr;
    const uint32_t* slots = nullptr;
    size_t n = 0;
};

// x: the expert input [T][ldx]. Writes ws.slot_out[(token * top_k + slot) *
// lat ...] for each of the run's pairs; uses ws.expert_x/expert_gate/
// expert_up/expert_out as scratch.
void expert_over_tokens(ForwardContext& ctx, const ExpertBooks& books, const ExpertRun& run, const float* x, size_t ldx);

// expert_over_tokens in the int8 mode (ctx.lut == int8) for a batch of
// landed experts: each expert's rows decoded to int8 (kernels/int8_matmul.h),
// its inputs and activation quantised per token, products in integers. An
// expert ctx.decoded holds (decoding it there first when it has room) runs
// whole on one thread, the held ones split over the pool by their token
// counts; any other is decoded into ws.int8_expert and its rows split over
// the pool. The same bytes and sums either way: placement and thread counts
// change no bit. Writes ws.slot_out like expert_over_tokens.
void experts_over_tokens_int8(ForwardContext& ctx, const ExpertBooks& books, int layer, std::span<const ExpertRun> runs,
                              const float* x, size_t ldx);

}  // namespace waste::model
