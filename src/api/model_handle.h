// model_handle.h — the struct behind the opaque waste_model handle, shared by
// the C API files.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/grammar_slots.h"
#include "chat/chat_format.h"
#include "format/container.h"
#include "model/vision_tower.h"
#include "runtime/engine.h"
#include "runtime/memory_plan.h"
#include "runtime/memory_reserve.h"
#include "waste/waste.h"

struct waste_model {
    std::unique_ptr<waste::format::Container> container;
    waste_open_options options{};
    waste::runtime::MemoryPlan plan;
    std::unique_ptr<waste::runtime::Engine> engine;  // null when opened metadata-only
    std::unique_ptr<waste::model::VisionTower> vision;  // options.vision, with an engine
    std::string usage_path;                  // the learned hotlist's file
    std::vector<uint64_t> usage_at_open;     // its counts when read at open (else empty)
    std::string hotlist_note;                // what happened to it, for info
    uint64_t hotlist_warmed = 0;             // records it warmed
    bool trunk_locked = false;
    std::string mlock_note;                  // empty unless WASTE_OPEN_MLOCK_TRUNK
    // The plan's snapshot reserve; shared with every snapshot, which gives its
    // bytes back when freed, even after the model is closed.
    std::shared_ptr<waste::runtime::MemoryReserve> snapshot_reserve;
    // The plan's grammar reserve (options.grammars slots), shared with the
    // tokenizers taken from the model and what is compiled with them.
    std::shared_ptr<waste::api::GrammarSlots> grammar_slots;
    // Live sessions: at most options.sessions when that is set, else unbounded.
    std::unique_ptr<waste::runtime::MemoryReserve> session_slots;
    // The chat format (tokenizer, XTML markers, chat.json), read on first use
    // by waste_chat_render_json / waste_reply_parser_create and kept: a
    // server renders every request with it (chat_request_api.cpp).
    mutable std::mutex chat_format_mutex;
    mutable std::shared_ptr<const waste::chat::ChatFormat> chat_format;
    // The reply format (chat/replies/reply_formats.h), chosen on first use
    // (model_reply_format) under chat_format_mutex and kept.
    mutable std::string reply_format;
    ~waste_model();
};

namespace waste::api {
// The model's chat format, read on first use and cached (chat_request_api.cpp).
std::shared_ptr<const chat::ChatFormat> model_chat_format(const waste_model& model);
// The name of the model's reply format, chosen on first use and kept (reply_parser_api.cpp).
std::string model_reply_format(const waste_model& model);
}  // namespace waste::api
