// forward.h — a chunk of tokens through a Kimi-family model (models.md §0–§7).
//
// One code path serves decode (a chunk of 1) and prefill (chunks of up to
// the session's prefill chunk, the memory plan's choice): the chunk goes
// through the model layer by layer, trunk projections run over the whole
// chunk (weights read once per chunk), KDA and MLA run token by token inside
// it, and the MoE reads each distinct routed expert of the chunk once
// (ascending id) and applies it to all the chunk's tokens that chose it.
// Every token's arithmetic is its own: the chunk size changes no bit. Expert records come
// from an ExpertProvider, so caching and reading stay in runtime/ and never
// change the arithmetic.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "format/container.h"
#include "kernels/math.h"
#include "kernels/trunk_int8.h"
#include "kernels/vq_lut.h"
#include "model/decoded_experts.h"
#include "model/profile.h"
#include "model/session_state.h"
#include "model/weights.h"
#include "platform/aligned_vector.h"
#include "platform/thread_pool.h"

namespace waste::model {

// The prefill chunk a plan chooses (runtime/memory_plan.h), as llama.cpp's
// default micro-batch; the plan halves it down to min_planned_chunk where the
// machine's RAM is short (never by the budget). Any chunk from 1 to
// max_prefill_chunk may be asked for.
constexpr uint32_t default_prefill_chunk = 512;
constexpr uint32_t min_planned_chunk = 64;  // upstream's prefill chunk (models.md §7)
constexpr uint32_t max_prefill_chunk = 8192;
// The most rows a batched decode step (forward_batch) takes: each row has
// its own gate and up lookup tables in every workspace of a model planned
// for several sessions (Workspace::table_rows); more sessions step in groups.
constexpr uint32_t max_batch_rows = 8;

// Hands out checked expert records. The MoE step asks for a group of one
// layer's distinct experts at once (request: reads start together), takes
// them as they land (next_ready: at least one per call, arrival order) and
// releases the layer when done. Router lookahead may prefetch a later
// layer's likely experts (speculative: never changes which bytes are used).
class ExpertProvider {
public:
    struct Ready {
        size_t index = 0;               // position in the request
        const uint8_t* record = nullptr;
    };
    virtual ~ExpertProvider() = default;
    virtual void request(int layer, std::span<const int> experts) = 0;
    // Appends the newly ready records to *out; false when all were handed out.
    virtual bool next_ready(std::vector<Ready>* out) = 0;
    virtual void release_layer(int layer) = 0;
    // How many records a request may hold now (at least top_k).
    virtual size_t max_pinned() const = 0;
    // Experts router lookahead prefetches per layer for each token (0 = off;
    // a prefill chunk prefetches the union of its tokens').
    virtual size_t lookahead() const { return 0; }
    // MoE layers ahead a decode step predicts, each from the same state (a
    // chunk predicts one).
    virtual int lookahead_layers() const { return 1; }
    // A layer's predicted experts, best first. Several predictions made at
    // one layer come nearest layer first.
    virtual void prefetch(int /*layer*/, std::span<const int> /*experts*/) {}
};

// What the MoE chose for one token in one layer (for stats and route dumps).
struct RouteChoice {
    std::vector<int> experts;     // selection order
    std::vector<float> weights;   // after renormalisation and scaling
    std::vector<int> lookahead;   // predicted at the previous layer, best first (decode with lookahead)
};

// Scratch for one chunk of up to chunk_tokens tokens, allocated once per
// session. Row-major, one row per token of the chunk; widths in comments.
struct Workspace {
    // table_rows: the rows a batched decode step may hold (1 to
    // max_batch_rows; 1 for a model planned for one session).
    Workspace(const format::ModelConfig& c, const format::Container& container, unsigned threads, size_t chunk_tokens,
              size_t table_rows = 1);
    // What a workspace allocates, enable_int8_tables included when int8 —
    // an upper bound, within a few KiB of what the allocator hands out
    // (tests/memory_plan_test.cpp) — plus the MoE step's per-chunk
    // bookkeeping (routes, assignments). quant: the container's expert
    // quantisation, null for a trunk-only container.
    static uint64_t planned_bytes(const format::ModelConfig& c, const format::ExpertQuant* quant, unsigned threads,
                                  size_t chunk_tokens, bool int8, size_t table_rows = 1);
    size_t chunk_tokens = 0;
    size_t table_rows = 1;  // rows of decode's gate/up tables (and their int8 copies and inputs)
    size_t hidden = 0, attn_width = 0, ffn_width = 0, small_width = 0, lat = 0, inter = 0, table_floats = 0,
           down_table_floats = 0;
    std::vector<float> x, normed, attn_out, ffn_out, ps, shared_out;  // [T][H]
    std::vector<float> q, k, v, decay, gate, head_out;         // [T][attn_width]
    std::vector<float> beta;                                   // [T][kda heads]
    std::vector<float> small;                                  // [T][small_width]: D or q_lora
    std::vector<float> ffn_gate, ffn_up;                       // [T][ffn_width]
    std::vector<float> router, expert_in, moe_acc;             // [T][E], [T][lat], [T][max(lat, H)]
    std::vector<float> gate_table, up_table;                   // [table_rows][positions(lat)][S][entries]: decode only
    // one expert over a prefill chunk, the matrix products' inputs on 64-byte lines
    platform::LineAlignedVector<float> expert_x, expert_out;   // [T][lat]
    platform::LineAlignedVector<float> expert_gate, expert_up; // [T][I]
    std::vector<float> slot_out;                               // [T][top_k][lat]
    std::vector<std::vector<float>> thread_down_table;         // [threads][positions(I)][S][entries]
    std::vector<std::vector<float>> thread_gate, thread_up;    // [threads][I]
    std::vector<float> logits;                                 // [vocab], the chunk's last token
    std::vector<float> blocks;                                 // AttnRes: [T][layers / block + 2][H]
    // The int8 lookup-table mode (kernels/vq_lut.h, decode only): the gate/up
    // tables and each thread's down table quantised, with their block scales.
    // Empty unless enable_int8_tables() was called (ForwardContext::lut).
    std::vector<int8_t> gate_q, up_q;                          // [table_rows][positions(lat)][S][entries]
    std::vector<float> gate_q_scales, up_q_scales;             // [table_rows][blocks of vq_int8_block positions]
    std::vector<std::vector<int8_t>> thread_down_q;            // [threads][positions(I)][S][entries]
    std::vector<std::vector<float>> thread_down_q_scales;      // [threads][blocks]
    // their quantised inputs (kernels/vq_lut.h, quantize_vq_input_int8)
    std::vector<uint8_t> in_xu;                                // [table_rows][positions(lat)][stride]
    std::vector<float> in_xs;                                  // [table_rows][positions(lat)]
    std::vector<std::vector<uint8_t>> thread_down_xu;          // [threads][positions(I)][stride]
    std::vector<std::vector<float>> thread_down_xs;            // [threads][positions(I)]
    // ... and its prefill (kernels/int8_matmul.h): one expert decoded for a
    // chunk when the engine's store does not hold it, and per compute thread
    // (held experts run whole on one thread each) one expert's inputs,
    // gate, up and output over the chunk, the int8 inputs and activations
    // with their group scales.
    struct Int8ExpertScratch {
        platform::LineAlignedVector<float> x, out;  // [T][lat]
        platform::LineAlignedVector<float> g, u;    // [T][I]
        platform::LineAlignedVector<int8_t> xq, hq; // [T][ld(lat)], [T][ld(I)]
        std::vector<float> xs, hs;                  // [T][groups]
    };
    std::unique_ptr<DecodedExpert> int8_expert;
    std::vector<Int8ExpertScratch> int8_threads;
    // ... and its trunk projections (kernels/trunk_int8.h): one chunk's
    // quantised inputs, for the widest projection input.
    kernels::TrunkInt8Input trunk_int8;
    void enable_int8_tables(const format::Container& container);
};

// Image rows in place of pad tokens (vision.md §4): at each position whose
// token is `pad`, while rows remain, the layers' input is rows[next++]
// ([count][hidden]) instead of the embedding table's row — no scaling, no
// norm. `next` carries over from chunk to chunk of one evaluation, so the
// prefill and the single-token step splice alike.
struct EmbeddingSplice {
    int32_t pad = -1;
    const float* rows = nullptr;
    size_t count = 0;
    size_t next = 0;
};

struct ForwardContext {
    const format::Container& container;
    const format::ModelConfig& config;
    const ModelWeights& weights;
    platform::ThreadPool& pool;
    ExpertProvider& experts;
    Workspace& ws;
    kernels::GluActivation act;
    // Optional outputs: routes[t][layer]; hidden [layers+1][T][H].
    std::vector<std::vector<RouteChoice>>* routes = nullptr;
    float* hidden = nullptr;
    Profile* profile = nullptr;  // where the time goes, when not null
    // Optional next-token scoring (perplexity): for rows t < scored_rows of
    // the chunk, next_logprobs[t] = log softmax(row t's logits)[next_tokens[t]],
    // natural log, computed in double from the f32 logits. Row t's logits are
    // the final norm + LM head of row t, computed exactly as the last row's
    // are (through ws.logits, which the last row then overwrites as usual), so
    // scoring never changes the normal path's bits.
    const int32_t* next_tokens = nullptr;
    double* next_logprobs = nullptr;
    size_t scored_rows = 0;
    // How decode's expert matvecs read their tables (the int8 mode needs
    // ws.enable_int8_tables()). Prefill chunks run matrix products either way.
    kernels::VqLutMode lut = kernels::VqLutMode::exact;
    // The int8 mode's decoded experts shared by the engine's sessions (null:
    // each chunk decodes into ws.int8_expert).
    DecodedExperts* decoded = nullptr;
    // The int8 mode's codebooks in integers, one per codebook record
    // (model::int8_codebooks; null: none, decode then fails in the int8 mode).
    const kernels::VqInt8Book* int8_books = nullptr;
    EmbeddingSplice* splice = nullptr;  // queued image rows, when any
    // The chunk's rows are different sessions' decode steps (forward_batch):
    // the MoE applies each row's experts through that row's lookup tables,
    // exactly as a one-token decode step does, not as prefill's products.
    bool batch_rows = false;
};

// Per-token widths of the chunk's buffers (Workspace): the widest attention
// projection (KDA, MLA or GQA heads), the low-rank inner width (KDA's head
// dim, MLA's q_lora), the dense or shared-expert FFN; each at least 1.
size_t attention_width(const format::ModelConfig& c);
size_t low_rank_width(const format::ModelConfig& c);
size_t dense_ffn_width(const format::ModelConfig& c);
// The widest input of any trunk projection (hidden, the widths above, MLA's
// kv_lora, the experts' input): what the int8 mode's quantised inputs hold.
size_t widest_projection_input(const format::ModelConfig& c);

// Y = X Wᵀ over the chunk, timed as trunk_matvec: kernels::matmul, or in the
// int8 mode kernels::trunk_int8_matmul on the tensors it takes.
void project(ForwardContext& ctx, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
             size_t ldy);
// The same with a pool and workspace of one's own (int8: the int8 mode).
void project_with(platform::ThreadPool& pool, Workspace& ws, bool int8, const format::LoadedTensor& w, const float* x,
                  size_t ldx, size_t tokens, float* y, size_t ldy);
// Always kernels::matmul: the routers, whose scores pick discrete experts
// (an int8 input could flip a choice, and their products are small).
void project_exact(ForwardContext& ctx, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
                   size_t ldy);

// Runs tokens[0..count) (count <= ws.chunk_tokens) at the session's
// position; the last token's logits land in ws.logits.
void forward_chunk(ForwardContext& ctx, SessionState& state, const int32_t* tokens, size_t count);

// A batched decode step: tokens[i] (one each) at the position of states[i],
// all as one chunk of states.size() rows (<= ws.table_rows; the states
// distinct). The trunk's projections run once over the rows and each distinct
// routed expert is read once and applied to every row that chose it, through
// each row's own lookup tables as a decode step applies it; attention runs
// per row over its own state. Row i's logits land in logits[i] (vocab
// floats; ws.logits serves as scratch). Every row's arithmetic is its own:
// a row's bits do not depend on the other rows; they are the decode step's
// but for the trunk's products over several rows, which round as a prefill
// chunk's do; with one row it is the decode step. ctx.splice and
// ctx.scored_rows must be unset.
void forward_batch(ForwardContext& ctx, std::span<SessionState* const> states, std::span<float* const> logits,
                   const int32_t* tokens);

// Layers over a chunk of T tokens. x: normed input [T][H]; out: [T][H].
void kda_chunk(ForwardContext& ctx, const KdaWeights& w, LayerState& s, const float* x, size_t tokens, float* out);
void gdn_chunk(ForwardContext& ctx, const GdnWeights& w, LayerState& s, const float* x, size_t tokens, float* out);
void mla_chunk(ForwardContext& ctx, const MlaWeights& w, LayerState& s, uint32_t position, const float* x, size_t tokens,
               float* out);
void gqa_chunk(ForwardContext& ctx, const GqaWeights& w, LayerState& s, uint32_t position, const float* x, size_t tokens,
               float* out);
void dense_ffn_chunk(ForwardContext& ctx, const FfnWeights& w, const float* x, size_t tokens, float* out);
void moe_chunk(ForwardContext& ctx, int layer, const MoeWeights& w, const float* x, size_t tokens, float* out);

// Router lookahead: runs layer next_layer's router on the current hidden
// states x [T][H] and prefetches each token's top ctx.experts.lookahead()
// experts (ranked by biased score); a decode step does the same for the
// ctx.experts.lookahead_layers() - 1 MoE layers after it, from the same x,
// while they are consecutive MoE layers. A decode step (T = 1) records its
// next layer's prediction in the route dump and uses row 1 of ws.normed and ws.router (free
// in a one-token chunk); a chunk prefetches its tokens' union, rows [0, T),
// and only where the cache can pin two layers' experts at once.
void lookahead_prefetch(ForwardContext& ctx, int next_layer, const float* x, size_t tokens);

// out[t] = rmsnorm(x[t]) ⊙ weight for t < tokens, rows of `hidden` floats.
void norm_rows(const float* x, const std::vector<float>& weight, float eps, size_t tokens, size_t hidden, float* out);

// An attention row's softmax, in place over s[0, n): each score times
// scale, minus the row's maximum (a sink logit, gpt-oss's extra column, counts
// for it), e^ of each summed in f64 in order (the sink's term last), then
// each times 1/sum as a float. MLA and GQA both (their bits depend on it).
void softmax_weights(float* s, size_t n, float scale, const float* sink = nullptr);

// log softmax(logits)[token] in double: max-shifted, the sum of exponentials
// accumulated in double. token must be in [0, logits.size()).
double token_logprob(std::span<const float> logits, int32_t token);

}  // namespace waste::model
