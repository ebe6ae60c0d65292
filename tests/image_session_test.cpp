// image_session_test.cpp — images through the public C API (vision.md §4–§5):
// a model opened with its vision tower, an image file added to a session,
// its pads expanded and spliced, the plan and the refusals. On tiny-k3 with
// the synth's tiny tower (synth_vision.h).
//
// Tolerance 0 (bit-exact): the API's logits are compared with the same steps
// done by hand through the internal layers (decode, patches with vision.json's
// mean/std and max_patches, the tower, the queue, the splice); the tower and
// the splice are each checked against their own references in vision_test
// and image_splice_test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/container.h"
#include "format/vision_config.h"
#include "image/image.h"
#include "image/patches.h"
#include "model/vision_tower.h"
#include "platform/memory_info.h"
#include "platform/thread_pool.h"
#include "runtime/engine.h"
#include "runtime/memory_plan.h"
#include "test_images.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

struct Containers {
    waste_test::TempDir dir;
    std::string vision, text;
    Containers() {
        vision = (dir / "vision").string();
        text = (dir / "text").string();
        waste_error error{};
        EXPECT_EQ(waste_synth(vision.c_str(), "tiny-k3", 3, R"({"vision": true})", nullptr, nullptr, &error), WASTE_OK) << error.message;
        EXPECT_EQ(waste_synth(text.c_str(), "tiny-k3", 3, nullptr, nullptr, nullptr, &error), WASTE_OK) << error.message;
    }
};

const Containers& containers() {
    static const Containers made;
    return made;
}

struct Opened {
    waste_model* model = nullptr;
    waste_session* session = nullptr;
    waste_status status = WASTE_OK;
    std::string message;
    Opened(const std::string& path, uint32_t vision, uint64_t budget = 0) {
        waste_open_options options;
        waste_open_options_init(&options);
        options.vision = vision;
        options.budget_bytes = budget;
        options.context_length = 256;
        options.threads = 2;
        waste_error error{};
        status = waste_model_open(path.c_str(), &options, &model, &error);
        if (status == WASTE_OK) status = waste_session_create(model, &session, &error);
        message = error.message;
    }
    ~Opened() {
        waste_session_free(session);
        waste_model_close(model);
    }
    nlohmann::json plan() const {
        char* text = nullptr;
        waste_error error{};
        waste_plan_options options{256, 0};
        EXPECT_EQ(waste_model_plan_json(model, &options, &text, &error), WASTE_OK) << error.message;
        const auto out = nlohmann::json::parse(text);
        waste_string_free(text);
        return out;
    }
};

TEST(ImageSession, AnImageFileIsDecodedEmbeddedExpandedAndSplicedAsTheLayersWouldDoIt) {
    const std::string path = containers().vision;
    Opened opened(path, 1);
    ASSERT_EQ(opened.status, WASTE_OK) << opened.message;
    waste_test::TempDir tmp;
    const std::string image_path = (tmp / "photo.bmp").string();
    const std::string image = waste_test::random_bmp(45, 31, 9);
    waste_test::write_file(image_path, image);

    size_t tokens = 0;
    waste_error error{};
    ASSERT_EQ(waste_session_image_add_file(opened.session, image_path.c_str(), &tokens, &error), WASTE_OK) << error.message;
    const auto container = waste::format::Container::open(path, {});
    const waste::format::VisionConfig config = *waste::format::read_vision_config(path, container->config());
    const waste::image::PatchGrid grid = waste::image::patch_grid(45, 31, static_cast<uint32_t>(config.max_patches));
    EXPECT_EQ(tokens, grid.width * grid.height / 4);
    size_t images = 0, rows = 0;
    waste_session_image_queue(opened.session, &images, &rows);
    EXPECT_EQ(images, 1u);
    EXPECT_EQ(rows, tokens);

    const int32_t pad = static_cast<int32_t>(config.placeholder);
    const std::vector<int32_t> prompt = {5, 17, pad, 40, 41};
    int32_t* expanded = nullptr;
    size_t expanded_count = 0;
    ASSERT_EQ(waste_session_image_expand(opened.session, prompt.data(), prompt.size(), &expanded, &expanded_count, &error), WASTE_OK)
        << error.message;
    const std::vector<int32_t> ids(expanded, expanded + expanded_count);
    waste_tokens_free(expanded);
    ASSERT_EQ(ids.size(), prompt.size() - 1 + tokens);
    ASSERT_EQ(waste_session_eval(opened.session, ids.data(), ids.size(), &error), WASTE_OK) << error.message;
    waste_session_image_queue(opened.session, &images, &rows);
    EXPECT_EQ(images, 0u) << "the evaluation that used the rows cleared the queue";
    const float* logits = nullptr;
    size_t vocab = 0;
    ASSERT_EQ(waste_session_logits(opened.session, &logits, &vocab, &error), WASTE_OK);
    const std::vector<float> got(logits, logits + vocab);

    // By hand: vision.json's normalisation and budget, the tower, the queue.
    container->load_trunk();
    const auto plan = waste::runtime::plan_memory(*container, 256, 0, waste::platform::query_memory_info(), 2);
    waste::runtime::EngineOptions engine_options;
    engine_options.threads = 2;
    waste::runtime::Engine engine(*container, plan, engine_options);
    const auto tower = waste::model::VisionTower::load(*container, config);
    waste::image::Normalisation normalisation{config.mean, config.std};
    const auto patches = waste::image::image_to_patches(waste::image::decode_image(image, "photo.bmp"),
                                                        static_cast<uint32_t>(config.max_patches), normalisation);
    waste::runtime::Session session(engine, 256);
    session.enable_images(pad, 64);
    session.images()->add(tower->embed(engine.pool(), patches.pixels, static_cast<int>(grid.height), static_cast<int>(grid.width)));
    session.eval(ids.data(), ids.size());
    EXPECT_EQ(got, session.logits());

    // The image matters: the pads' own table rows give other logits.
    waste::runtime::Session text_only(engine, 256);
    text_only.eval(ids.data(), ids.size());
    EXPECT_NE(got, text_only.logits());
}

// `waste eval MODEL --image F --ids ... --full --json`: each image's media
// block (tokenized in markup mode, with the file's own size) before the ids,
// as a library caller would build it.
TEST(ImageSession, EvalWithAnImagePutsItsMediaBlockBeforeTheIds) {
    const std::string path = containers().vision;
    waste_test::TempDir tmp;
    const std::string image_path = (tmp / "wide.bmp").string();
    waste_test::write_file(image_path, waste_test::random_bmp(60, 20, 4));
    std::string output;
    const std::string command = "(" + waste_test::cli_path().string() + " eval '" + path + "' --image '" + image_path +
                                "' --ids '5 6 7' --full --json --threads 2 --ctx 256 --lut exact 2>/dev/null)";
    ASSERT_EQ(waste_test::run_command(command, &output), 0) << output;
    const auto printed = nlohmann::json::parse(output);

    Opened opened(path, 1);
    ASSERT_EQ(opened.status, WASTE_OK) << opened.message;
    waste_error error{};
    waste_tokenizer* tokenizer = nullptr;
    ASSERT_EQ(waste_model_tokenizer(opened.model, nullptr, &tokenizer, &error), WASTE_OK) << error.message;
    const std::string block = "<|media_begin|>image 60x20<|media_content|><|media_pad|><|media_end|>";
    int32_t* ids = nullptr;
    size_t count = 0;
    ASSERT_EQ(waste_tokenizer_tokenize(tokenizer, block.data(), block.size(), WASTE_TOKENIZE_MARKUP, &ids, &count, &error), WASTE_OK);
    std::vector<int32_t> prompt(ids, ids + count);
    waste_tokens_free(ids);
    waste_tokenizer_free(tokenizer);
    prompt.insert(prompt.end(), {5, 6, 7});
    ASSERT_EQ(waste_session_image_add_file(opened.session, image_path.c_str(), nullptr, &error), WASTE_OK) << error.message;
    ASSERT_EQ(waste_session_image_expand(opened.session, prompt.data(), prompt.size(), &ids, &count, &error), WASTE_OK);
    const std::vector<int32_t> expanded(ids, ids + count);
    waste_tokens_free(ids);
    ASSERT_EQ(waste_session_eval(opened.session, expanded.data(), expanded.size(), &error), WASTE_OK) << error.message;
    const float* logits = nullptr;
    size_t vocab = 0;
    ASSERT_EQ(waste_session_logits(opened.session, &logits, &vocab, &error), WASTE_OK);
    EXPECT_EQ(printed.at("prompt_tokens"), expanded.size());
    EXPECT_EQ(printed.at("logits").get<std::vector<float>>(), std::vector<float>(logits, logits + vocab));

    // A container without a tower says so; exit 1.
    const std::string text_command = waste_test::cli_path().string() + " eval '" + containers().text + "' --image '" +
                                     image_path + "' --ids 5 2>&1";
    EXPECT_EQ(waste_test::run_command(text_command, &output), 1) << output;
    EXPECT_NE(output.find("no vision tower"), std::string::npos) << output;
}

// `waste run --image`: with --ids the blocks come first (as eval); with a
// chat template they open the user turn — the prompt is the text's own
// templated prompt plus the media block and the pads the image adds.
TEST(ImageSession, RunWithAnImage) {
    const std::string path = containers().vision;
    waste_test::TempDir tmp;
    const std::string image_path = (tmp / "wide.bmp").string();
    waste_test::write_file(image_path, waste_test::random_bmp(60, 20, 4));
    const auto run = [&](const std::string& args) {
        std::string output;
        const std::string command = "(" + waste_test::cli_path().string() + " run '" + path + "' " + args +
                                    " -n 4 --temp 0 --json --threads 2 --ctx 256 2>/dev/null)";
        EXPECT_EQ(waste_test::run_command(command, &output), 0) << command << "\n" << output;
        return nlohmann::json::parse(output);
    };
    const auto eval = [&](const std::string& args) {
        std::string output;
        const std::string command = "(" + waste_test::cli_path().string() + " eval '" + path + "' " + args +
                                    " --json --threads 2 --ctx 256 --top 1 2>/dev/null)";
        EXPECT_EQ(waste_test::run_command(command, &output), 0) << command << "\n" << output;
        return nlohmann::json::parse(output);
    };
    const auto with_ids = run("--ids '5 6 7' --image '" + image_path + "'");
    const auto evaluated = eval("--ids '5 6 7' --image '" + image_path + "'");
    EXPECT_EQ(with_ids.at("prompt_tokens"), evaluated.at("prompt_tokens"));
    EXPECT_EQ(with_ids.at("tokens")[0], evaluated.at("top")[0].at("id")) << "greedy: the first token is eval's argmax";

    const auto text_only = run("'a cat'");
    const auto with_image = run("'a cat' --image '" + image_path + "'");
    ASSERT_TRUE(with_image.at("chat_template").get<bool>());
    const size_t block_and_pads = evaluated.at("prompt_tokens").get<size_t>() - 3;  // eval: blocks then the 3 ids
    EXPECT_EQ(with_image.at("prompt_tokens").get<size_t>(), text_only.at("prompt_tokens").get<size_t>() + block_and_pads);
    EXPECT_NE(with_image.at("tokens"), text_only.at("tokens"));

    // chat: --image goes with the first message, /image FILE with the next;
    // the first answer is run's (the same prompt, greedy).
    const auto chat = [&](const std::string& args, const std::string& input) {
        std::string output;
        const std::string command = "(printf '" + input + "' | " + waste_test::cli_path().string() + " chat '" + path + "' " + args +
                                    " -n 4 --temp 0 -q --threads 2 --ctx 256 2>&1)";
        EXPECT_EQ(waste_test::run_command(command, &output), 0) << command << "\n" << output;
        return output;
    };
    std::string answer;  // run's text as printed (bytes; the JSON's "text" is its UTF-8 repair)
    ASSERT_EQ(waste_test::run_command("(" + waste_test::cli_path().string() + " run '" + path + "' 'a cat' --image '" + image_path +
                                          "' -n 4 --temp 0 -q --threads 2 --ctx 256 2>/dev/null)",
                                      &answer),
              0);
    ASSERT_GE(answer.size(), 2u) << "4 tokens of text";
    const std::string first = chat("--image '" + image_path + "'", "a cat\\n");
    EXPECT_NE(first.find(answer), std::string::npos) << first;
    const std::string later = chat("--vision", "/image " + image_path + "\\na cat\\n");
    EXPECT_NE(later.find(answer), std::string::npos) << later;
    EXPECT_NE(chat("", "/image " + image_path + "\\n").find("restart with --vision"), std::string::npos);
}

TEST(ImageSession, ThePlanHoldsTheTowerAndTheQueue) {
    Opened with(containers().vision, 1), without(containers().vision, 0);
    ASSERT_EQ(with.status, WASTE_OK) << with.message;
    ASSERT_EQ(without.status, WASTE_OK) << without.message;
    const uint64_t vision = with.plan().at("vision_bytes");
    EXPECT_GE(vision, waste::image::decode_reserve_bytes) << "one decode's reserve at least";
    EXPECT_EQ(without.plan().at("vision_bytes"), 0u);
    EXPECT_EQ(with.plan().at("floor_bytes").get<uint64_t>(), without.plan().at("floor_bytes").get<uint64_t>() + vision);
    // A budget that holds the text model but not the tower is refused, naming it.
    const uint64_t floor_without = without.plan().at("floor_bytes");
    Opened short_budget(containers().vision, 1, floor_without + vision / 2);
    EXPECT_EQ(short_budget.status, WASTE_ERR_BUDGET);
    EXPECT_NE(short_budget.message.find("vision"), std::string::npos) << short_budget.message;
}

TEST(ImageSession, RefusalsNameTheImageAndLoseNothing) {
    Opened no_tower(containers().text, 1);
    EXPECT_EQ(no_tower.status, WASTE_ERR_UNSUPPORTED) << no_tower.message;
    EXPECT_NE(no_tower.message.find("vision.json"), std::string::npos) << no_tower.message;

    Opened text_only(containers().vision, 0);
    ASSERT_EQ(text_only.status, WASTE_OK);
    waste_error error{};
    const std::string image = waste_test::random_bmp(8, 8, 1);
    EXPECT_EQ(waste_session_image_add(text_only.session, image.data(), image.size(), "a.bmp", nullptr, &error), WASTE_ERR_UNSUPPORTED);

    Opened opened(containers().vision, 1);
    ASSERT_EQ(opened.status, WASTE_OK);
    const std::string corrupt = image.substr(0, 40);
    EXPECT_NE(waste_session_image_add(opened.session, corrupt.data(), corrupt.size(), "cut.bmp", nullptr, &error), WASTE_OK);
    EXPECT_NE(std::string(error.message).find("cut.bmp"), std::string::npos) << error.message;
    size_t images = 0;
    waste_session_image_queue(opened.session, &images, nullptr);
    EXPECT_EQ(images, 0u);
    for (int i = 0; i < 32; ++i)
        ASSERT_EQ(waste_session_image_add(opened.session, image.data(), image.size(), "a.bmp", nullptr, &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_session_image_add(opened.session, image.data(), image.size(), "a.bmp", nullptr, &error), WASTE_ERR_INVALID_ARGUMENT);
    const int32_t one[] = {1};
    int32_t* out = nullptr;
    size_t count = 0;
    EXPECT_EQ(waste_session_image_expand(opened.session, one, 1, &out, &count, &error), WASTE_ERR_INVALID_ARGUMENT)
        << "32 images, no pad";
    EXPECT_EQ(waste_session_image_clear(opened.session, &error), WASTE_OK);
    waste_session_image_queue(opened.session, &images, nullptr);
    EXPECT_EQ(images, 0u);
}

}  // namespace
