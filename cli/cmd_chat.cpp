// cmd_chat.cpp — `waste chat MODEL`: a conversation on the terminal.
//
// Each line typed is a user turn (wrapped by the container's chat.json, or
// rendered with the whole conversation through a Jinja chat template —
// --chat-template FILE, or the container's, which wins over its chat.json — or
// as it is with --raw); the answer streams back. Commands: /reset, /save F,
// /load F, /stats, /help, /quit. Ctrl-C stops the answer being generated
// (or discards the line being typed) without quitting; Ctrl-D at the prompt
// quits. How Ctrl-C reaches the line reader is the system's (line_input.h).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "chat_jinja.h"
#include "generate_support.h"
#include "image_prompt.h"
#include "input_file.h"
#include "line_input.h"

namespace waste_cli {
namespace {

const char* help_text =
    "Type a message and press Enter. Commands:\n"
    "  /reset     forget the conversation (the system prompt is kept)\n"
    "  /save F    save the conversation state to file F (through a Jinja template,\n"
    "             its messages too, in F.messages.json)\n"
    "  /load F    continue from a state saved with /save (same model)\n"
    "  /image F   attach image file F to your next message (needs --vision or --image)\n"
    "  /stats     tokens held, expert cache hit rate, bytes read\n"
    "  /help      this text\n"
    "  /quit      leave (or Ctrl-D)\n"
    "Ctrl-C stops an answer without leaving.\n";

struct ChatArgs : GenerateArgs {
    std::string chat_template;  // --chat-template FILE ("" = the container's)
};

class ChatLoop {
public:
    ChatLoop(const ChatArgs& args) : args_(args), g_(open_generator(args, true)) {
        if (!g_.tokenizer) throw RuntimeFailure{args.model + " has no tokenizer.model: chat needs text (try waste run --ids)"};
        // The Jinja path wherever the library renders one (--chat-template,
        // or the container's template even beside a chat.json, as `waste
        // serve` and `waste render` do); chat.json alone and K3's XTML keep
        // theirs.
        if (!args.raw) {
            std::string why;
            jinja_ = JinjaChat::open(g_.model.get(), args.chat_template.empty() ? "" : read_chat_template_file(args.chat_template), why);
            if (!jinja_ && !args.chat_template.empty()) throw RuntimeFailure{"--chat-template: " + why};
            if (jinja_) {
                g_.chat.reset();
                stop_tokens_ = jinja_->stop_ids();
            }
        }
        if (args.raw && !args.chat_template.empty()) throw CLI::ValidationError("--chat-template", "--raw skips the chat template");
        if (!args.raw && !g_.chat && !jinja_) throw RuntimeFailure{g_.chat_missing};
        if (args.raw && !args.system.empty()) throw CLI::ValidationError("--system", "--system needs the chat template; --raw skips it");
        if (g_.chat) {
            const char *prefix = nullptr, *suffix = nullptr;
            waste_error error{};
            if (waste_chat_template_role(g_.chat.get(), "assistant", &prefix, &suffix, &error) != WASTE_OK)
                fail_with(error, "chat template");
            answer_suffix_ = tokenize(g_, suffix, WASTE_TOKENIZE_MARKUP);
            if (answer_suffix_.size() == 1) stop_tokens_ = answer_suffix_;
        }
        interactive_ = isatty(STDIN_FILENO);
    }

    void run() {
        install_interrupt_handler();
        if (interactive_ && !args_.quiet)
            fmt::print(stderr, "waste chat — {} ({}). /help for commands, Ctrl-D to quit.\n", args_.model,
                       jinja_ ? "Jinja chat template" : g_.chat ? "chat template" : "raw");
        std::string line;
        for (;;) {
            if (interactive_) {
                fmt::print("> ");
                std::fflush(stdout);
            }
            const LineResult got = read_line(line);
            if (got == LineResult::end) break;
            if (got == LineResult::interrupted) {
                fmt::print("\n");
                continue;
            }
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) continue;
            if (line[0] == '/') {
                if (!command(line)) break;
                continue;
            }
            answer(line);
        }
        if (interactive_) fmt::print("\n");
        finish_stream(args_.stream, g_.model.get(), g_.session.get());
    }

private:
    // Returns false to quit.
    bool command(const std::string& line) {
        const size_t space = line.find(' ');
        const std::string name = line.substr(0, space);
        std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
        while (!argument.empty() && argument.back() == ' ') argument.pop_back();
        waste_error error{};
        if (name == "/quit" || name == "/exit") return false;
        if (name == "/help") {
            fmt::print("{}", help_text);
        } else if (name == "/reset") {
            waste_session_reset(g_.session.get(), &error);
            pending_.clear();
            held_.clear();
            if (jinja_) jinja_->clear();
            system_sent_ = false;
            fmt::print("[conversation reset]\n");
        } else if (jinja_ && (name == "/save" || name == "/load")) {
            if (argument.empty()) fmt::print("usage: {} FILE\n", name);
            else if (name == "/save") save_jinja(argument);
            else load_jinja(argument);
        } else if (name == "/save" || name == "/load") {
            if (argument.empty()) {
                fmt::print("usage: {} FILE\n", name);
            } else if (name == "/save") {
                // The closing markup of the last answer belongs to the state.
                if (!pending_.empty() && waste_session_eval(g_.session.get(), pending_.data(), pending_.size(), &error) != WASTE_OK) {
                    fmt::print("error: {}\n", error.message);
                    return true;
                }
                pending_.clear();
                if (waste_state_save(g_.session.get(), argument.c_str(), &error) != WASTE_OK) fmt::print("error: cannot save: {}\n", error.message);
                else fmt::print("[saved {} tokens to {}]\n", waste_session_position(g_.session.get()), argument);
            } else {
                pending_.clear();
                if (waste_state_load(g_.session.get(), argument.c_str(), &error) != WASTE_OK) {
                    system_sent_ = false;
                    fmt::print("error: cannot load: {}\n[the conversation was reset]\n", error.message);
                } else {
                    system_sent_ = true;  // the saved state holds its own system turn
                    fmt::print("[loaded {} tokens from {}]\n", waste_session_position(g_.session.get()), argument);
                }
            }
        } else if (name == "/image") {
            if (argument.empty()) {
                fmt::print("usage: /image FILE\n");
            } else if (!args_.vision && args_.images.empty()) {
                fmt::print("error: images need the vision tower: restart with --vision\n");
            } else if (images_.size() >= max_prompt_images) {
                fmt::print("error: {} images are attached already, the most one message takes\n", images_.size());
            } else {
                images_.push_back(argument);
                fmt::print("[{} attached to your next message]\n", argument);
            }
        } else if (name == "/stats") {
            waste_session_stats stats{};
            waste_session_stats_get(g_.session.get(), &stats, &error);
            const uint64_t lookups = stats.expert_hits + stats.expert_misses;
            fmt::print("[{} of {} context tokens held | {} tokens evaluated | experts {} hit / {} miss = {:.1f}% | {:.1f} MB read | {:.2f} s reading, {:.2f} s computing]\n",
                       waste_session_position(g_.session.get()) + pending_.size(), waste_session_context_length(g_.session.get()),
                       stats.tokens, stats.expert_hits, stats.expert_misses, lookups ? 100.0 * stats.expert_hits / lookups : 0.0,
                       stats.bytes_read / 1e6, stats.io_seconds, stats.compute_seconds);
        } else {
            fmt::print("unknown command {} (/help lists them)\n", name);
        }
        std::fflush(stdout);
        return true;
    }

    // The attached images' media blocks (each image through the tower now);
    // false when one failed (said, and the attachments dropped).
    bool image_blocks(std::vector<int32_t>& blocks) {
        if (images_.empty()) return true;
        const std::vector<std::string> files = std::move(images_);
        images_.clear();
        try {
            blocks = add_prompt_images(g_.model.get(), g_.session.get(), files);
            return true;
        } catch (const RuntimeFailure& failure) {
            waste_error error{};
            waste_session_image_clear(g_.session.get(), &error);
            fmt::print("error: {}\n[the attached images were dropped]\n", failure.message);
            return false;
        }
    }

    // The answer streamed to the terminal after the prompt is evaluated.
    GenerationOutput generate_answer() {
        GenerationOutput out;
        out.should_stop = interrupt_requested;
        const auto start = std::chrono::steady_clock::now();
        const waste_generate_result result = generate(g_, args_, out, stop_tokens_);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print("\n");
        if (result.stop_reason == WASTE_STOP_CALLBACK) fmt::print("[stopped]\n");
        if (result.stop_reason == WASTE_STOP_CONTEXT) fmt::print("[the context is full: /reset to start over]\n");
        std::fflush(stdout);
        if (!args_.quiet) fmt::print(stderr, "{}\n", summary_line(out, seconds));
        clear_interrupt();
        return out;
    }

    // The Jinja path re-renders the conversation from its messages each
    // turn, which a state file does not hold: /save writes them, with the
    // ids the session holds, beside it in FILE.messages.json.
    static std::string messages_path(const std::string& state) { return state + ".messages.json"; }

    void save_jinja(const std::string& path) {
        waste_error error{};
        if (waste_state_save(g_.session.get(), path.c_str(), &error) != WASTE_OK) {
            fmt::print("error: cannot save: {}\n", error.message);
            return;
        }
        const nlohmann::ordered_json saved = {{"messages", jinja_->messages()}, {"held", held_}};
        const std::string text = saved.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        const std::string file = messages_path(path), partial = file + ".partial";
        std::ofstream out(path_from_utf8(partial), std::ios::binary);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.close();  // sets failbit when the close fails
        std::error_code file_error;
        if (out) std::filesystem::rename(path_from_utf8(partial), path_from_utf8(file), file_error);
        if (!out || file_error) {
            const std::string why = file_error ? file_error.message() : std::strerror(errno);
            std::filesystem::remove(path_from_utf8(partial), file_error);
            fmt::print("error: cannot save the messages to {}: {}\n", file, why);
            return;
        }
        fmt::print("[saved {} tokens to {}, {} messages to {}]\n", waste_session_position(g_.session.get()), path,
                   jinja_->messages().size(), file);
    }

    void load_jinja(const std::string& path) {
        waste_error error{};
        std::string why;
        try {
            why = load_jinja_files(path);
        } catch (const RuntimeFailure& failure) {
            why = failure.message;
        }
        if (why.empty()) {
            fmt::print("[loaded {} tokens from {}, {} messages]\n", held_.size(), path, jinja_->messages().size());
            return;
        }
        waste_session_reset(g_.session.get(), &error);
        held_.clear();
        jinja_->clear();
        fmt::print("error: cannot load: {}\n[the conversation was reset]\n", why);
    }

    // "" when the state and its messages are loaded; else why not.
    std::string load_jinja_files(const std::string& path) {
        const std::string file = messages_path(path);
        // Bound: a conversation that fits any context's ids and text.
        const std::string text = read_input_file(file, 256ull << 20, "the saved messages");
        // The file is the user's, not ours: nesting deeper than a saved
        // conversation's is refused (nlohmann's parser keeps its own stack;
        // the callback drops what lies deeper, so nothing deep is built).
        constexpr int max_depth = 8;
        bool too_deep = false;
        const nlohmann::ordered_json saved = nlohmann::ordered_json::parse(
            text,
            [&](int depth, nlohmann::ordered_json::parse_event_t, nlohmann::ordered_json&) {
                too_deep = too_deep || depth > max_depth;
                return depth <= max_depth;
            },
            false);
        if (too_deep) return file + " nests deeper than a saved conversation does";
        if (saved.is_discarded() || !saved.is_object() || !saved.contains("messages") || !saved.contains("held") ||
            !saved["held"].is_array())
            return file + " is not a saved conversation (an object with 'messages' and 'held')";
        const uint32_t vocabulary = waste_tokenizer_token_count(g_.tokenizer.get());
        std::vector<int32_t> held;
        for (const auto& id : saved["held"]) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocabulary)
                return fmt::format("{} holds the token id {}: ids are 0 to {}", file, id.dump(), vocabulary - 1);
            held.push_back(id.get<int32_t>());
        }
        std::string why;
        if (!jinja_->restore(saved["messages"], why)) return file + ": " + why;
        waste_error error{};
        if (waste_state_load(g_.session.get(), path.c_str(), &error) != WASTE_OK) return error.message;
        if (waste_session_position(g_.session.get()) != held.size())
            return fmt::format("{} holds {} tokens but {} lists {}: not saved together", path,
                               waste_session_position(g_.session.get()), file, held.size());
        held_ = std::move(held);
        return "";
    }

    // A turn through the Jinja template: the whole conversation rendered,
    // the session extended (or started over), the reply kept as the
    // assistant's message.
    void answer_jinja(const std::string& text) {
        if (!images_.empty()) {
            images_.clear();
            fmt::print("error: images are not read through a Jinja chat template\n[the attached images were dropped]\n");
        }
        if (jinja_->empty() && !args_.system.empty()) jinja_->add("system", args_.system);
        jinja_->add("user", text);
        JinjaChat::Prompt prompt;
        try {
            prompt = jinja_->prompt(held_);
        } catch (const RuntimeFailure& failure) {
            jinja_->drop_last();
            fmt::print("error: {}\n", failure.message);
            std::fflush(stdout);
            return;
        }
        waste_error error{};
        if (prompt.start_over) waste_session_reset(g_.session.get(), &error);
        clear_interrupt();
        if (waste_session_eval(g_.session.get(), prompt.ids.data(), prompt.ids.size(), &error) != WASTE_OK) {
            jinja_->drop_last();
            held_.clear();
            waste_session_reset(g_.session.get(), &error);
            fmt::print("error: {}\n", error.message);
            if (error.status == WASTE_ERR_CONTEXT_FULL) fmt::print("[/reset to start over, or restart with a larger --ctx]\n");
            std::fflush(stdout);
            return;
        }
        const GenerationOutput out = generate_answer();
        // What the session holds: the prompt, then the reply tokens it evaluated.
        held_ = prompt.whole;
        held_.insert(held_.end(), out.tokens.begin(), out.tokens.end());
        held_.resize(std::min<size_t>(held_.size(), waste_session_position(g_.session.get())));
        jinja_->add("assistant", out.text);
    }

    void answer(const std::string& text) {
        if (jinja_) {
            answer_jinja(text);
            return;
        }
        std::vector<int32_t> turn = pending_;
        waste_error error{};
        std::vector<int32_t> blocks;
        if (!image_blocks(blocks)) return;
        if (g_.chat && !blocks.empty()) {
            if (!system_sent_ && !args_.system.empty()) {
                const waste_chat_message system{"system", args_.system.data(), args_.system.size()};
                int32_t* ids = nullptr;
                size_t count = 0;
                if (waste_chat_tokenize(g_.chat.get(), g_.tokenizer.get(), &system, 1, 0, &ids, &count, &error) != WASTE_OK) {
                    fmt::print("error: {}\n", error.message);
                    return;
                }
                turn.insert(turn.end(), ids, ids + count);
                waste_tokens_free(ids);
            }
            const std::vector<int32_t> user = user_turn_with_images(g_, blocks, text);
            turn.insert(turn.end(), user.begin(), user.end());
        } else if (g_.chat) {
            std::vector<waste_chat_message> messages;
            if (!system_sent_ && !args_.system.empty()) messages.push_back({"system", args_.system.data(), args_.system.size()});
            messages.push_back({"user", text.data(), text.size()});
            int32_t* ids = nullptr;
            size_t count = 0;
            if (waste_chat_tokenize(g_.chat.get(), g_.tokenizer.get(), messages.data(), messages.size(), 1, &ids, &count, &error) != WASTE_OK) {
                fmt::print("error: {}\n", error.message);
                return;
            }
            turn.insert(turn.end(), ids, ids + count);
            waste_tokens_free(ids);
        } else {
            int32_t* ids = nullptr;
            size_t count = 0;
            if (waste_tokenizer_tokenize(g_.tokenizer.get(), text.data(), text.size(), 0, &ids, &count, &error) != WASTE_OK) {
                fmt::print("error: {}\n", error.message);
                return;
            }
            turn.insert(turn.end(), blocks.begin(), blocks.end());  // raw: the blocks before the text
            turn.insert(turn.end(), ids, ids + count);
            waste_tokens_free(ids);
        }
        if (!blocks.empty()) turn = expand_image_pads(g_.session.get(), turn);
        clear_interrupt();
        if (waste_session_eval(g_.session.get(), turn.data(), turn.size(), &error) != WASTE_OK) {
            fmt::print("error: {}\n", error.message);
            if (error.status == WASTE_ERR_CONTEXT_FULL) fmt::print("[/reset to start over, or restart with a larger --ctx]\n");
            std::fflush(stdout);
            return;
        }
        pending_.clear();
        system_sent_ = true;
        const GenerationOutput out = generate_answer();
        // Close the answer in the context unless the model closed it itself.
        const bool closed = out.tokens.size() >= answer_suffix_.size() && !answer_suffix_.empty() &&
                            std::equal(answer_suffix_.begin(), answer_suffix_.end(), out.tokens.end() - static_cast<long>(answer_suffix_.size()));
        if (g_.chat && !closed) pending_ = answer_suffix_;
    }

    const ChatArgs& args_;
    Generator g_;
    std::unique_ptr<JinjaChat> jinja_;  // null: chat.json, XTML's chat.json, or --raw
    std::vector<int32_t> held_;         // Jinja path: the ids the session holds
    std::vector<int32_t> answer_suffix_, stop_tokens_;
    std::vector<int32_t> pending_;  // markup to evaluate before the next turn
    bool system_sent_ = false;
    bool interactive_ = false;
    std::vector<std::string> images_ = args_.images;  // attached to the next message (--image, /image)
};

}  // namespace

void add_chat_command(CLI::App& app) {
    auto args = std::make_shared<ChatArgs>();
    CLI::App* chat = app.add_subcommand("chat", "Talk with a model: a line in, an answer out (/help inside)");
    add_generate_options(chat, *args, 512);
    chat->add_option("--image", args->images,
                     "An image for the first message (repeatable, at most 32); /image FILE attaches one to the next")
        ->default_str("none");
    chat->add_option("--chat-template", args->chat_template,
                     "A Jinja chat template file to talk through instead of the container's chat format (not for K3's XTML)")
        ->default_str("none");
    chat->add_flag("--vision", args->vision, "Open the vision tower so that /image works (implied by --image)");
    chat->callback([args] { ChatLoop(*args).run(); });
}

}  // namespace waste_cli
