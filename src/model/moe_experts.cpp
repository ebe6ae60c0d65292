#include "model/moe_experts.h"

#include <algorithm>
#include <cstring>

#include "format/expert_record.h"
#include "kernels/elementwise.h"
#include "kernels/int8_matmul.h"
#include "kernels/vq_matmul.h"
#include "platform/error.h"

namespace waste::model {

ExpertBooks layer_expert_books(const format::Container& container, int layer) {
    const format::ExpertQuant& quant = container.manifest().quant;
    const format::ModelConfig& c = container.config();
    const size_t book_floats = static_cast<size_t>(quant.entries) * quant.vec_dim;
    const float* books = container.codebooks().data() + static_cast<size_t>(container.bank(layer).codebook_base) * book_floats;
    ExpertBooks out;
    out.in_shape = {static_cast<int>(c.expert_input() / quant.vec_dim), quant.stages, quant.entries, quant.vec_dim};
    out.down_shape = {static_cast<int>(c.moe_intermediate / quant.vec_dim), quant.stages, quant.entries, quant.vec_dim};
    out.packed6 = quant.index_bits == 6;
    out.gate = books;
    out.up = books + 1ull * quant.stages * book_floats;
    out.down = books + 2ull * quant.stages * book_floats;
    return out;
}

std::vector<kernels::VqInt8Book> int8_codebooks(const format::Container& container) {
    const format::ExpertQuant& quant = container.manifest().quant;
    const size_t book_floats = static_cast<size_t>(quant.entries) * quant.vec_dim;
    const std::span<const float> all = container.codebooks();
    std::vector<kernels::VqInt8Book> out;
    out.reserve(all.size() / book_floats);
    for (size_t r = 0; r + book_floats <= all.size(); r += book_floats)
        out.push_back(kernels::quantize_vq_codebook_int8(quant.entries, quant.vec_dim, all.data() + r));
    return out;
}

uint64_t int8_codebooks_bytes(const format::Container& container) {
    const format::ExpertQuant& quant = container.manifest().quant;
    const uint64_t book_floats = static_cast<uint64_t>(quant.entries) * quant.vec_dim;
    if (book_floats == 0) return 0;
    const uint64_t groups = (quant.entries + 15) / 16, dwords = (quant.vec_dim + 3) / 4;
    return container.codebooks().size() / book_floats * (sizeof(kernels::VqInt8Book) + groups * dwords * 64 + groups * 16 * 4);
}

void add_expert_input_biases(const ExpertBooks& books, int expert, size_t inter, size_t n, float* g, float* u) {
    if (!books.gate_bias) return;
    const float* gb = books.gate_bias + static_cast<size_t>(expert) * inter;
    const float* ub = books.up_bias + static_cast<size_t>(expert) * inter;
    for (size_t t = 0; t < n; ++t)
        for (size_t i = 0; i < inter; ++i) {
            g[t * inter + i] += gb[i];
            u[t * inter + i] += ub[i];
        }
}

void add_expert_output_bias(const ExpertBooks& books, int expert, size_t lat, size_t n, float* out) {
    if (!books.down_bias) return;
    const float* db = books.down_bias + static_cast<size_t>(expert) * lat;
    for (size_t t = 0; t < n; ++t)
        for (size_t i = 0; i < lat; ++i) out[t * lat + i] += db[i];
}

namespace {

// The activation row by row: every row's elements take the same SIMD or
// tail path whatever the number of rows, so a token's bits never depend on
// how many tokens share its expert (the chunk; decode's rows are one).
void glu_rows(kernels::Isa isa, const kernels::GluActivation& act, float* g, const float* u, size_t rows, size_t width) {
    for (size_t r = 0; r < rows; ++r) kernels::glu(isa, act, g + r * width, u + r * width, width);
}

}  // namespace

void expert_over_tokens(ForwardContext& ctx, const ExpertBooks& books, const ExpertRun& run, const float* x, size_t ldx) {
    const int expert = run.expert;
    const uint8_t* record = run.record;
    const uint32_t *tokens = run.tokens, *slots = run.slots;
    const size_t n = run.n;
    Workspace& ws = ctx.ws;
    const format::ExpertLayout& layout = ctx.container.expert_layout();
    const size_t lat = ws.lat, inter = ws.inter, top_k = ctx.config.top_k;
    WASTE_CHECK(n >= 1 && n <= ws.chunk_tokens);
    float* xe = ws.expert_x.data();     // [n][lat]
    float* g = ws.expert_gate.data();   // [n][inter]
    float* u = ws.expert_up.data();     // [n][inter]
    float* out = ws.expert_out.data();  // [n][lat]
    for (size_t i = 0; i < n; ++i) std::memcpy(xe + i * lat, x + tokens[i] * ldx, sizeof(float) * lat);
    const uint8_t* scales = record + layout.scales_off;
    const kernels::Isa isa = kernels::active_isa();
    // gate rows [0, inter) and up rows [inter, 2·inter) in one region
    ctx.pool.parallel_for(2 * inter, [&](size_t begin, size_t end) {
        if (begin < inter)
            kernels::vq_matmul_rows(isa, books.in_shape, books.packed6, record + layout.gate_off, scales, books.gate, xe, lat, n,
                                    g, inter, begin, std::min(end, inter));
        if (end > inter)
            kernels::vq_matmul_rows(isa, books.in_shape, books.packed6, record + layout.up_off, scales + 2 * inter, books.up,
                                    xe, lat, n, u, inter, std::max(begin, inter) - inter, end - inter);
    }, 16);
    add_expert_input_biases(books, expert, inter, n, g, u);
    glu_rows(isa, ctx.act, g, u, n, inter);
    ctx.pool.parallel_for(lat, [&](size_t begin, size_t end) {
        kernels::vq_matmul_rows(isa, books.down_shape, books.packed6, record + layout.down_off, scales + 4 * inter, books.down,
                                g, inter, n, out, lat, begin, end);
    }, 16);
    add_expert_output_bias(books, expert, lat, n, out);
    for (size_t i = 0; i < n; ++i)
        std::memcpy(ws.slot_out.data() + (tokens[i] * top_k + slots[i]) * lat, out + i * lat, sizeof(float) * lat);
}

namespace {

// One expert over its tokens from its int8 rows. rows(count, body) runs
// body over [0, count): split over the pool, or all on the calling thread —
// the same bits either way (each (token, row) is one call's).
template <class Rows>
void int8_expert(ForwardContext& ctx, const ExpertBooks& books, const ExpertRun& run, const DecodedExpert& d, const float* x,
                 size_t ldx, Workspace::Int8ExpertScratch& s, Rows&& rows) {
    Workspace& ws = ctx.ws;
    const size_t lat = ws.lat, inter = ws.inter, top_k = ctx.config.top_k, n = run.n;
    const size_t ldx8 = d.gate.ld(), ldh8 = d.down.ld();
    WASTE_CHECK(n >= 1 && n <= ws.chunk_tokens);
    const kernels::Isa isa = kernels::active_isa();
    for (size_t i = 0; i < n; ++i) std::memcpy(s.x.data() + i * lat, x + run.tokens[i] * ldx, sizeof(float) * lat);
    kernels::quantize_int8_activations(isa, s.x.data(), lat, n, lat, s.xq.data(), ldx8, s.xs.data());
    rows(2 * inter, [&](size_t begin, size_t end) {
        if (begin < inter)
            kernels::int8_matmul_rows(isa, d.gate, s.xq.data(), ldx8, s.xs.data(), n, s.g.data(), inter, begin, std::min(end, inter));
        if (end > inter)
            kernels::int8_matmul_rows(isa, d.up, s.xq.data(), ldx8, s.xs.data(), n, s.u.data(), inter,
                                      std::max(begin, inter) - inter, end - inter);
    });
    add_expert_input_biases(books, run.expert, inter, n, s.g.data(), s.u.data());
    glu_rows(isa, ctx.act, s.g.data(), s.u.data(), n, inter);
    kernels::quantize_int8_activations(isa, s.g.data(), inter, n, inter, s.hq.data(), ldh8, s.hs.data());
    rows(lat, [&](size_t begin, size_t end) {
        kernels::int8_matmul_rows(isa, d.down, s.hq.data(), ldh8, s.hs.data(), n, s.out.data(), lat, begin, end);
    });
    add_expert_output_bias(books, run.expert, lat, n, s.out.data());
    for (size_t i = 0; i < n; ++i)
        std::memcpy(ws.slot_out.data() + (run.tokens[i] * top_k + run.slots[i]) * lat, s.out.data() + i * lat,
                    sizeof(float) * lat);
}

}  // namespace

void experts_over_tokens_int8(ForwardContext& ctx, const ExpertBooks& books, int layer, std::span<const ExpertRun> runs,
                              const float* x, size_t ldx) {
    Workspace& ws = ctx.ws;
    WASTE_CHECK(ws.int8_expert && !ws.int8_threads.empty());
    const format::ExpertLayout& layout = ctx.container.expert_layout();
    std::vector<std::pair<const ExpertRun*, const DecodedExpert*>> held;
    size_t held_tokens = 0;
    for (const ExpertRun& run : runs) {
        const DecodedExpert* d =
            ctx.decoded ? ctx.decoded->hold(ctx.pool, books, layout, layer, run.expert, run.record, ws.lat, ws.inter) : nullptr;
        if (d) {
            held.emplace_back(&run, d);
            held_tokens += run.n;
            continue;
        }
        ws.int8_expert->decode(ctx.pool, books, run.record, layout);
        int8_expert(ctx, books, run, *ws.int8_expert, x, ldx, ws.int8_threads[0],
                    [&](size_t count, auto&& body) { ctx.pool.parallel_for(count, body, 16); });
    }
    // slice k takes the held experts whose first token falls in its share of
    // the tokens (contiguous, in order)
    const size_t slices = std::min(ws.int8_threads.size(), held.size());
    if (slices == 0) return;
    std::vector<size_t> first(slices + 1, held.size());
    for (size_t i = 0, before = 0, slice = 0; i < held.size(); before += held[i].first->n, ++i)
        while (slice < slices && before * slices >= slice * held_tokens) first[slice++] = i;
    ctx.pool.parallel_for(slices, [&](size_t slice_begin, size_t slice_end) {
        for (size_t slice = slice_begin; slice < slice_end; ++slice)
            for (size_t i = first[slice]; i < first[slice + 1]; ++i)
                int8_expert(ctx, books, *held[i].first, *held[i].second, x, ldx, ws.int8_threads[slice],
                            [](size_t count, auto&& body) { body(0, count); });
    }, 1);
}

}  // namespace waste::model
