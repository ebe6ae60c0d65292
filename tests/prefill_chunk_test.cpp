// prefill_chunk_test.cpp — the prefill chunk decides speed, never a bit.
//
// A prompt evaluated in chunks of 2, 37, 64, 300 or all at once (the plan's
// 512) reads each expert and the trunk once per chunk, but every token's
// arithmetic is its own: the logits after the prompt, each position's
// next-token log-probability, and the decode steps after it must be
// bit-identical across chunks (tolerance 0), for every family's tiny preset
// (KDA + MLA, K3's AttnRes and latent MoE, DeepSeek's MLA, Qwen3's and GLM's
// GQA, gpt-oss's sliding layers: a 300-token chunk crosses their window of 8
// and their 64-token ring) in the exact and the int8 arithmetic. Chunk 1 is
// the decode path (lookup tables), compared with its own tolerance elsewhere
// (test_families_engine.py).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/container.h"
#include "platform/memory_info.h"
#include "runtime/engine.h"
#include "runtime/memory_plan.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

constexpr uint32_t context = 512;
constexpr size_t prompt_tokens = 300;

struct Model {
    waste_test::TempDir dir;
    std::unique_ptr<waste::format::Container> container;
    waste::runtime::MemoryPlan plan;
    std::unique_ptr<waste::runtime::Engine> engine;
};

Model& model(const std::string& preset, bool int8) {
    static std::map<std::string, std::unique_ptr<Model>> made;
    auto& slot = made[preset + (int8 ? "/int8" : "/exact")];
    if (!slot) {
        slot = std::make_unique<Model>();
        const std::string path = (slot->dir.path() / preset).string();
        waste_error error{};
        EXPECT_EQ(waste_synth(path.c_str(), preset.c_str(), 3, nullptr, nullptr, nullptr, &error), WASTE_OK) << error.message;
        slot->container = waste::format::Container::open(path, {});
        slot->container->load_trunk();
        slot->plan = waste::runtime::plan_memory(*slot->container, context, 0, waste::platform::query_memory_info(), 2, int8);
        waste::runtime::EngineOptions options;
        options.threads = 2;
        options.lut = int8 ? waste::kernels::VqLutMode::int8 : waste::kernels::VqLutMode::exact;
        slot->engine = std::make_unique<waste::runtime::Engine>(*slot->container, slot->plan, options);
    }
    return *slot;
}

std::vector<int32_t> prompt(size_t count, int32_t vocab) {
    std::vector<int32_t> out(count);
    uint32_t x = 12345;
    for (int32_t& id : out) {
        x = x * 1664525u + 1013904223u;
        id = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
    }
    return out;
}

struct Outputs {
    std::vector<float> logits;        // after the prompt
    std::vector<double> logprobs;     // each prompt position's next token
    std::vector<float> decode_logits; // after three decode steps
};

Outputs run(Model& m, size_t chunk) {
    const std::vector<int32_t> tokens = prompt(prompt_tokens, m.container->config().vocab);
    waste::runtime::Session session(*m.engine, context);
    session.set_chunk_tokens(chunk);
    Outputs out;
    out.logprobs.assign(tokens.size(), 0.0);
    session.eval(tokens.data(), tokens.size(), nullptr, out.logprobs.data());
    out.logits = session.logits();
    for (const int32_t next : {5, 17, 29}) session.eval(&next, 1);
    out.decode_logits = session.logits();
    return out;
}

struct Case {
    std::string preset;
    bool int8;
};

class PrefillChunk : public testing::TestWithParam<Case> {};

TEST_P(PrefillChunk, EveryChunkGivesTheSameBits) {
    Model& m = model(GetParam().preset, GetParam().int8);
    ASSERT_EQ(m.engine->prefill_chunk(), waste::model::default_prefill_chunk) << "the default plan holds a 512-token chunk";
    const Outputs whole = run(m, m.engine->prefill_chunk());  // the prompt in one chunk
    for (const size_t chunk : {size_t{2}, size_t{37}, size_t{64}, size_t{300}}) {
        SCOPED_TRACE("chunk " + std::to_string(chunk));
        const Outputs part = run(m, chunk);
        EXPECT_EQ(part.logits, whole.logits);
        // the last position has no next token in the prompt (never written)
        EXPECT_EQ(part.logprobs, whole.logprobs);
        EXPECT_EQ(part.decode_logits, whole.decode_logits);
    }
}

// The session refuses a chunk beyond the one its workspace was planned for.
TEST(PrefillChunkLimit, ASessionRefusesAChunkBeyondThePlan) {
    Model& m = model("tiny", false);
    waste::runtime::Session session(*m.engine, context);
    EXPECT_THROW(session.set_chunk_tokens(m.engine->prefill_chunk() + 1), std::exception);
    EXPECT_THROW(session.set_chunk_tokens(0), std::exception);
    session.set_chunk_tokens(m.engine->prefill_chunk());
}

std::vector<Case> cases() {
    std::vector<Case> out;
    for (const char* preset : {"tiny", "tiny-k3", "tiny-deepseek", "tiny-qwen3", "tiny-glm", "tiny-gpt-oss", "tiny-minimax", "tiny-mistral4"})
        for (const bool int8 : {false, true}) out.push_back({preset, int8});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Families, PrefillChunk, testing::ValuesIn(cases()), [](const testing::TestParamInfo<Case>& info) {
    std::string name = info.param.preset + (info.param.int8 ? "_int8" : "_exact");
    for (char& ch : name)
        if (ch == '-') ch = '_';
    return name;
});

}  // namespace
