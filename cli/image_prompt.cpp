// image_prompt.cpp — see image_prompt.h.
#include "image_prompt.h"

#include <fmt/format.h>

#include "cli_common.h"

namespace waste_cli {

std::vector<int32_t> add_prompt_images(waste_model* model, waste_session* session, const std::vector<std::string>& files) {
    if (files.empty()) return {};
    if (files.size() > max_prompt_images)
        throw RuntimeFailure{fmt::format("--image: {} images, at most {} per prompt", files.size(), max_prompt_images)};
    waste_error error{};
    waste_tokenizer* raw = nullptr;
    if (waste_model_tokenizer(model, nullptr, &raw, &error) != WASTE_OK) fail_with(error, "the tokenizer (for --image's media block)");
    const TokenizerHandle tokenizer(raw);
    std::vector<int32_t> blocks;
    for (const std::string& file : files) {
        uint32_t width = 0, height = 0;
        if (waste_image_dimensions(file.c_str(), &width, &height, &error) != WASTE_OK) fail_with(error, "--image");
        size_t tokens = 0;
        if (waste_session_image_add_file(session, file.c_str(), &tokens, &error) != WASTE_OK) fail_with(error, "--image");
        fmt::print(stderr, "[{}: {} image tokens]\n", file, tokens);
        const std::string block =
            fmt::format("<|media_begin|>image {}x{}<|media_content|><|media_pad|><|media_end|>", width, height);
        int32_t* ids = nullptr;
        size_t count = 0;
        if (waste_tokenizer_tokenize(tokenizer.get(), block.data(), block.size(), WASTE_TOKENIZE_MARKUP, &ids, &count, &error) != WASTE_OK)
            fail_with(error, "tokenizing the media block");
        blocks.insert(blocks.end(), ids, ids + count);
        waste_tokens_free(ids);
    }
    return blocks;
}

std::vector<int32_t> expand_image_pads(waste_session* session, const std::vector<int32_t>& tokens) {
    size_t images = 0;
    waste_session_image_queue(session, &images, nullptr);
    if (images == 0) return tokens;
    int32_t* ids = nullptr;
    size_t count = 0;
    waste_error error{};
    if (waste_session_image_expand(session, tokens.data(), tokens.size(), &ids, &count, &error) != WASTE_OK)
        fail_with(error, "expanding the image pads (does the tokenizer know <|media_pad|>?)");
    std::vector<int32_t> out(ids, ids + count);
    waste_tokens_free(ids);
    return out;
}

}  // namespace waste_cli
