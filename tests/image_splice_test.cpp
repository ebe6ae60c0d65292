// image_splice_test.cpp — queued image rows spliced at pad positions
// (vision.md §4, runtime/image_queue.h), on synthetic containers "tiny"
// (KDA + MLA) and "tiny-k3" (AttnRes, gated MLA).
//
// The check needs no tower: a queued row that is the embedding table's row of
// token Y must give exactly the logits of evaluating Y at that position,
// because the layers then see the same input floats. Tolerance 0 (bit-exact),
// in the prefill path (chunks of 64) and the single-token step (chunks of 1,
// and a pad as the last token of a 65-token prompt, whose last chunk is one).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/container.h"
#include "platform/error.h"
#include "platform/memory_info.h"
#include "runtime/engine.h"
#include "runtime/image_queue.h"
#include "runtime/memory_plan.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

constexpr int32_t pad = 7;  // any id of the tiny vocabularies (316) serves as the placeholder

struct Model {
    waste_test::TempDir dir;
    std::unique_ptr<waste::format::Container> container;
    waste::runtime::MemoryPlan plan;
    std::unique_ptr<waste::runtime::Engine> engine;
};

Model& model(const std::string& preset) {
    static std::map<std::string, std::unique_ptr<Model>> made;
    auto& slot = made[preset];
    if (!slot) {
        slot = std::make_unique<Model>();
        const std::string path = (slot->dir.path() / preset).string();
        waste_error error{};
        EXPECT_EQ(waste_synth(path.c_str(), preset.c_str(), 5, nullptr, nullptr, nullptr, &error), WASTE_OK) << error.message;
        slot->container = waste::format::Container::open(path, {});
        slot->container->load_trunk();
        slot->plan = waste::runtime::plan_memory(*slot->container, 256, 0, waste::platform::query_memory_info(), 2);
        waste::runtime::EngineOptions options;
        options.threads = 2;
        slot->engine = std::make_unique<waste::runtime::Engine>(*slot->container, slot->plan, options);
    }
    return *slot;
}

std::vector<int32_t> prompt(size_t count, uint32_t seed) {
    std::vector<int32_t> out(count);
    uint32_t x = seed;
    for (int32_t& id : out) {
        do {
            x = x * 1664525u + 1013904223u;
            id = static_cast<int32_t>((x >> 8) % 300);
        } while (id == pad);
    }
    return out;
}

std::vector<float> table_rows(Model& m, const std::vector<int32_t>& ids) {
    const size_t hidden = m.container->config().hidden;
    std::vector<float> rows(ids.size() * hidden);
    for (size_t i = 0; i < ids.size(); ++i) m.engine->weights().embed->row(ids[i], std::span<float>(rows.data() + i * hidden, hidden));
    return rows;
}

std::vector<float> logits_of(Model& m, const std::vector<int32_t>& tokens, size_t chunk) {
    waste::runtime::Session session(*m.engine, 256);
    session.set_chunk_tokens(chunk);
    session.eval(tokens.data(), tokens.size());
    return session.logits();
}

class ImageSplice : public testing::TestWithParam<std::string> {};

// Two images (3 and 2 rows) anywhere in the prompt, one of them at its very
// end; each row is the table row of a stand-in token.
TEST_P(ImageSplice, ARowIsTheTokenWhoseTableRowItIs) {
    Model& m = model(GetParam());
    const std::vector<int32_t> first = {11, 200, 13}, second = {250, 42};
    for (const size_t length : {20, 65}) {
        std::vector<int32_t> text = prompt(length - 1, static_cast<uint32_t>(length));
        text[4] = pad;       // the first image early in the prompt
        text.push_back(pad);  // the second as the last token
        for (const size_t chunk : {size_t{1}, size_t{64}}) {
            waste::runtime::Session session(*m.engine, 256);
            session.set_chunk_tokens(chunk);
            session.enable_images(pad, 64);
            waste::runtime::ImageQueue& queue = *session.images();
            EXPECT_EQ(queue.add(table_rows(m, first)), 3u);
            EXPECT_EQ(queue.add(table_rows(m, second)), 2u);
            const std::vector<int32_t> expanded = queue.expand(text);
            ASSERT_EQ(expanded.size(), text.size() + 3);
            session.eval(expanded.data(), expanded.size());
            EXPECT_EQ(queue.images(), 0u) << "an evaluation that used the rows clears the queue";

            std::vector<int32_t> stand_in;  // the same prompt with each pad copy replaced by its token
            size_t next = 0;
            const std::vector<int32_t> all = {11, 200, 13, 250, 42};
            for (const int32_t token : expanded) stand_in.push_back(token == pad ? all[next++] : token);
            EXPECT_EQ(session.logits(), logits_of(m, stand_in, chunk)) << "length " << length << ", chunk " << chunk;
        }
    }
}

// Queue lifetime: a call that meets no pad leaves the queue; pads beyond the
// queued rows take the table's row; reset clears it.
TEST_P(ImageSplice, QueueLifetime) {
    Model& m = model(GetParam());
    waste::runtime::Session session(*m.engine, 256);
    session.enable_images(pad, 64);
    waste::runtime::ImageQueue& queue = *session.images();
    queue.add(table_rows(m, {99}));
    const std::vector<int32_t> text = prompt(5, 3);
    session.eval(text.data(), text.size());
    EXPECT_EQ(queue.images(), 1u) << "no pad met: the queue stays";
    const std::vector<int32_t> two_pads = {pad, pad};  // one row queued, two pads
    session.eval(two_pads.data(), two_pads.size());
    EXPECT_EQ(queue.images(), 0u);

    std::vector<int32_t> expected = text;
    expected.insert(expected.end(), {99, pad});  // the second pad met the table's own row
    EXPECT_EQ(session.logits(), logits_of(m, expected, 64));

    queue.add(table_rows(m, {1}));
    session.reset();
    EXPECT_EQ(queue.images(), 0u) << "reset starts over, images included";
}

TEST_P(ImageSplice, BoundsAndMismatchesAreRefusedAndLoseNothing) {
    Model& m = model(GetParam());
    const size_t hidden = m.container->config().hidden;
    waste::runtime::ImageQueue queue(hidden, pad, 40);
    const std::vector<float> row(hidden, 0.5f);
    const auto status_of = [](auto&& call) {
        try {
            call();
        } catch (const waste::Error& e) {
            return e.status();
        }
        return WASTE_OK;
    };
    EXPECT_EQ(status_of([&] { queue.add(std::span<const float>(row.data(), hidden - 1)); }), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status_of([&] { queue.add({}); }), WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(queue.images(), 0u);
    EXPECT_EQ(status_of([&] { queue.expand(std::vector<int32_t>{1, pad}); }), WASTE_ERR_INVALID_ARGUMENT)
        << "a pad without an image is a prompt-assembly bug";
    for (size_t i = 0; i < waste::runtime::max_queued_images; ++i) queue.add(row);
    EXPECT_EQ(status_of([&] { queue.add(row); }), WASTE_ERR_INVALID_ARGUMENT) << "33rd image";
    EXPECT_EQ(queue.images(), waste::runtime::max_queued_images);
    EXPECT_EQ(status_of([&] { queue.expand(std::vector<int32_t>{pad}); }), WASTE_ERR_INVALID_ARGUMENT) << "32 images, 1 pad";
    queue.clear();
    std::vector<float> big(41 * hidden, 0.0f);
    EXPECT_EQ(status_of([&] { queue.add(big); }), WASTE_ERR_BUDGET) << "more rows than the plan holds";
    EXPECT_EQ(queue.rows(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Presets, ImageSplice, testing::Values("tiny", "tiny-k3"),
                         [](const testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

}  // namespace
