// waste_api.cpp — the C ABI of include/waste/waste.h over the C++ library.
//
// Every entry point catches everything: exceptions never cross the C ABI.
// waste::Error keeps its status; std::bad_alloc becomes OUT_OF_MEMORY; any
// other exception is INTERNAL.
#include <cstring>
#include <new>

#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "api/cache_api.h"
#include "api/model_handle.h"
#include "format/container.h"
#include "model/model_summary.h"
#include "kernels/compute_peak.h"
#include "platform/memory_bandwidth.h"
#include "platform/memory_lock.h"
#include "platform/thread_pool.h"
#include "runtime/memory_plan.h"
#include "runtime/usage_hotlist.h"

using nlohmann::json;
using waste::api::guarded;
using waste::api::to_c_string;


extern "C" {

const char* waste_status_name(waste_status status) {
    switch (status) {
        case WASTE_OK: return "ok";
        case WASTE_ERR_INVALID_ARGUMENT: return "invalid argument";
        case WASTE_ERR_IO: return "I/O error";
        case WASTE_ERR_FORMAT: return "format error";
        case WASTE_ERR_CORRUPT: return "corrupt data";
        case WASTE_ERR_UNSUPPORTED: return "unsupported";
        case WASTE_ERR_OUT_OF_MEMORY: return "out of memory";
        case WASTE_ERR_BUDGET: return "memory budget below the floor";
        case WASTE_ERR_CONTEXT_FULL: return "context full";
        case WASTE_ERR_CANCELLED: return "cancelled";
        case WASTE_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char* waste_version(void) { return WASTE_VERSION; }

void waste_string_free(char* string) { std::free(string); }

waste_model::~waste_model() {
    engine.reset();  // reads in flight finish before the container goes
    if (trunk_locked) waste::platform::unlock_memory(container->trunk_storage().data(), container->trunk_storage().size());
}

void waste_open_options_init(waste_open_options* options) {
    if (options) *options = waste_open_options{};
}

waste_status waste_model_open(const char* path, const waste_open_options* options, waste_model** out_model,
                              waste_error* error) {
    return guarded(error, [&] {
        if (!path || !out_model) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_open: path and out_model are required");
        *out_model = nullptr;
        auto model = std::make_unique<waste_model>();
        if (options) model->options = *options;
        waste::api::cache_policy_of(model->options.cache_policy);  // refuse a bad value even metadata-only
        waste::format::ContainerOptions container_options;
        container_options.want_direct_io = !(model->options.flags & WASTE_OPEN_BUFFERED_IO);
        container_options.verify_checksums = (model->options.flags & WASTE_OPEN_VERIFY_CHECKSUMS) != 0;
        model->container = waste::format::Container::open(path, container_options);
        const uint32_t context = model->options.context_length ? model->options.context_length : 4096;
        if (model->options.io_backend > WASTE_IO_SYNC)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_open: io_backend {} is not a waste_io_backend", model->options.io_backend);
        waste::api::check_threads(model->options.threads, "waste_model_open: threads");
        if (model->options.lut_mode > WASTE_LUT_INT8)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_open: lut_mode {} is not a waste_lut_mode (0-1)",
                        model->options.lut_mode);
        const bool int8_tables = model->options.lut_mode == WASTE_LUT_INT8;
        waste::runtime::PlanRequest request;
        request.context_length = context;
        request.budget_bytes = model->options.budget_bytes;
        request.compute_threads = waste::platform::resolve_pool_threads(model->options.threads);
        request.int8_tables = int8_tables;
        request.sessions = model->options.sessions;
        request.snapshot_bytes = model->options.snapshot_bytes;
        request.grammars = model->options.grammars;
        request.prefill_chunk = model->options.prefill_chunk;
        if (model->options.vision > 1)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_open: vision {} is not 0 or 1", model->options.vision);
        request.vision = model->options.vision != 0;
        model->plan = waste::runtime::plan_memory(*model->container, request, waste::platform::query_memory_info());
        model->grammar_slots = std::make_shared<waste::api::GrammarSlots>(model->options.grammars);
        model->snapshot_reserve = std::make_shared<waste::runtime::MemoryReserve>(model->options.snapshot_bytes);
        model->session_slots = std::make_unique<waste::runtime::MemoryReserve>(
            model->options.sessions ? model->options.sessions : UINT64_MAX);
        model->usage_path = model->options.usage_path ? model->options.usage_path
                                                      : waste::runtime::default_usage_path(*model->container);
        model->options.usage_path = nullptr;  // the caller's string is not kept
        if (!(model->options.flags & WASTE_OPEN_METADATA_ONLY)) {
            waste::runtime::require_budget(model->plan);
            model->container->load_trunk();
            if (model->options.flags & WASTE_OPEN_MLOCK_TRUNK) {
                const auto trunk = model->container->trunk_storage();
                const auto lock = waste::platform::lock_memory(trunk.data(), trunk.size());
                model->trunk_locked = lock.locked;
                model->mlock_note = lock.note;
            }
            waste::runtime::EngineOptions engine_options;
            engine_options.threads = model->options.threads;
            engine_options.cache_policy = waste::api::cache_policy_of(model->options.cache_policy);
            engine_options.io = static_cast<waste::runtime::ExpertIo>(model->options.io_backend);
            engine_options.lut = int8_tables ? waste::kernels::VqLutMode::int8 : waste::kernels::VqLutMode::exact;
            model->engine = std::make_unique<waste::runtime::Engine>(*model->container, model->plan, engine_options);
            if (request.vision)  // the plan read vision.json already: it exists
                model->vision = waste::model::VisionTower::load(
                    *model->container, *waste::format::read_vision_config(model->container->directory(), model->container->config()));
            if (model->container->has_experts()) {
                auto usage = waste::runtime::read_usage_file(model->usage_path, model->container->config());
                model->hotlist_note = usage.note;
                if (usage.loaded) {
                    model->usage_at_open = std::move(usage.counts);
                    if (!(model->options.flags & WASTE_OPEN_NO_HOTLIST)) {
                        const auto order = waste::runtime::hotlist_order(model->container->config(), model->usage_at_open);
                        model->hotlist_warmed = model->engine->warm_cache(order);
                    }
                }
            }
        }
        *out_model = model.release();
    });
}

void waste_model_close(waste_model* model) { delete model; }

waste_status waste_model_info_json(const waste_model* model, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_info_json: model and out_json are required");
        const auto& container = *model->container;
        const auto& c = container.config();
        const auto summary = waste::model::summarize(container);
        json info;
        info["engine"] = WASTE_VERSION;
        info["arch"] = summary.arch;
        info["model_type"] = c.model_type;
        info["layers"] = c.layers;
        info["dense_layers"] = c.dense_layer_count();
        info["moe_layers"] = container.manifest().banks.size();
        info["kda_layers"] = c.kda_layer_count();
        info["mla_layers"] = c.mla_layer_count();
        info["gqa_layers"] = c.gqa_layer_count();
        info["gdn_layers"] = c.gdn_layer_count();
        if (c.gdn_layer_count() > 0) {  // Qwen3.5's Gated DeltaNet: key heads, value heads, head dim
            info["gdn_key_heads"] = c.kda_heads;
            info["gdn_value_heads"] = c.kda_v_heads;
            info["gdn_head_dim"] = c.kda_head_dim;
        }
        if (c.gqa_layer_count() > 0) {
            info["heads"] = c.heads;
            info["kv_heads"] = c.kv_heads;
            info["head_dim"] = c.head_dim;
            info["rope_dim"] = c.rope_dim;  // rotated dims per head (GLM: head_dim * partial_rotary_factor)
        }
        info["router"] = c.router == waste::format::RouterKind::softmax_topk   ? "softmax_topk"
                         : c.router == waste::format::RouterKind::topk_softmax ? "topk_softmax"
                                                                               : "sigmoid_grouped";
        if (c.sliding_window > 0) {
            int sliding = 0;
            for (int l = 0; l < c.layers; ++l) sliding += c.is_sliding(l);
            info["sliding_layers"] = sliding;  // gpt-oss: layers whose keys are the last sliding_window positions
            info["sliding_window"] = c.sliding_window;
        }
        info["experts"] = c.experts;
        info["top_k"] = c.top_k;
        info["shared_experts"] = c.shared_experts;
        info["hidden"] = c.hidden;
        info["vocab"] = c.vocab;
        info["bos_id"] = c.bos;      // -1: none
        info["eos_ids"] = c.eos_ids; // every id that ends a generation: config.json's, then generation_config.json's
        info["params_total"] = summary.params_total;
        info["params_active"] = summary.params_active;
        info["params_trunk"] = summary.params_trunk;
        info["quantization"] = summary.quantization;
        info["expert_record_bytes"] = container.has_experts() ? container.expert_layout().record_bytes : 0;
        info["expert_bank_bytes"] = model->plan.all_experts_bytes;
        info["trunk_resident_bytes"] = model->plan.trunk_bytes;
        info["container_bytes"] = container.container_bytes();
        info["tensor_prefix"] = container.manifest().tensor_prefix;
        info["direct_io"] = container.expert_io_mode() == waste::platform::IoMode::direct;
        info["io_mode"] = container.expert_io_reason();
        info["budget_bytes"] = model->plan.budget_bytes;
        info["budget_source"] = model->plan.budget_requested ? "requested" : "default";
        info["budget_covers"] = model->plan.budget_requested ? "requested" : waste::runtime::recommended_covers(model->plan);
        info["available_ram_bytes"] = model->plan.memory.available_bytes;
        info["spare_bytes"] = model->plan.spare_bytes;
        info["everything_bytes"] = model->plan.everything_bytes;
        info["expert_cache_bytes"] = model->plan.cache_bytes;
        info["prefill_chunk"] = model->plan.prefill_chunk;  // the tokens a session evaluates together
        if (model->engine) {
            info["expert_io"] = waste::runtime::expert_io_name(model->engine->cache().io());
            info["expert_io_detail"] = model->engine->cache().io_note();
            info["expert_cache_records"] = model->engine->cache().slots();
            if (model->options.lut_mode == WASTE_LUT_INT8) {  // model/decoded_experts.h
                const waste::model::DecodedExperts& decoded = model->engine->decoded();
                info["decoded_experts"] = {{"held", decoded.held()}, {"held_bytes", decoded.held_bytes()},
                                           {"capacity_bytes", decoded.capacity_bytes()}};
            }
        }
        if (model->options.flags & WASTE_OPEN_MLOCK_TRUNK) {
            info["trunk_locked"] = model->trunk_locked;
            info["trunk_mlock"] = model->mlock_note;
        }
        info["usage_path"] = model->usage_path;
        info["lut_mode"] = model->options.lut_mode == WASTE_LUT_INT8 ? "int8" : "exact";
        if (!model->hotlist_note.empty()) info["hotlist"] = {{"note", model->hotlist_note}, {"records_warmed", model->hotlist_warmed}};
        *out_json = to_c_string(info.dump());
    });
}

waste_status waste_model_plan_json(const waste_model* model, const waste_plan_options* options, char** out_json,
                                   waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_plan_json: model and out_json are required");
        waste::runtime::PlanRequest request;
        request.context_length = options && options->context_length ? options->context_length : 4096;
        request.budget_bytes = options ? options->budget_bytes : 0;
        request.compute_threads = model->plan.compute_threads;
        request.int8_tables = model->options.lut_mode == WASTE_LUT_INT8;
        request.sessions = model->options.sessions;
        request.snapshot_bytes = model->options.snapshot_bytes;
        request.grammars = model->options.grammars;
        request.prefill_chunk = model->options.prefill_chunk;
        request.vision = model->options.vision != 0;
        // the RAM the model's open saw: the default budget shown is the one
        // the model holds, not one recomputed around what it already uses
        const auto plan = waste::runtime::plan_memory(*model->container, request, model->plan.memory);
        json out;
        out["ctx"] = plan.context_length;
        out["sessions"] = plan.sessions;
        out["prefill_chunk"] = plan.prefill_chunk;
        out["trunk_bytes"] = plan.trunk_bytes;
        out["session_state_bytes"] = plan.session_state_bytes;
        out["state_bytes"] = plan.state_bytes;
        out["session_scratch_bytes"] = plan.session_scratch_bytes;
        out["scratch_bytes"] = plan.scratch_bytes;
        out["snapshot_bytes"] = plan.snapshot_bytes;
        out["grammars"] = plan.grammars;
        out["grammar_bytes"] = plan.grammar_bytes;
        out["vision_bytes"] = plan.vision_bytes;
        out["compute_threads"] = plan.compute_threads;
        out["io_bytes"] = plan.io_bytes;
        out["runtime_bytes"] = plan.runtime_bytes;
        out["min_expert_cache"] = plan.min_cache_bytes;
        out["floor_bytes"] = plan.floor_bytes;
        out["working_set_bytes"] = plan.working_set_bytes;
        out["all_experts_bytes"] = plan.all_experts_bytes;
        out["everything_bytes"] = plan.everything_bytes;
        out["spare_bytes"] = plan.spare_bytes;
        out["recommended_bytes"] = plan.recommended_bytes;
        out["recommended_covers"] = waste::runtime::recommended_covers(plan);
        out["physical_ram_bytes"] = plan.memory.physical_bytes;
        out["usable_ram_bytes"] = plan.memory.usable_bytes;
        out["available_ram_bytes"] = plan.memory.available_bytes;
        out["cgroup_limit_bytes"] = plan.memory.cgroup_limit_bytes;
        out["budget_bytes"] = plan.budget_bytes;
        out["budget_source"] = plan.budget_requested ? "requested" : "default";
        out["budget_ok"] = plan.budget_ok;
        out["expert_cache_bytes"] = plan.cache_bytes;
        out["expert_cache_records"] = plan.cache_records;
        out["decoded_experts_bytes"] = plan.decoded_bytes;
        out["all_decoded_experts_bytes"] = plan.all_decoded_bytes;
        *out_json = to_c_string(out.dump());
    });
}

waste_status waste_model_verify(const waste_model* model, waste_progress_fn progress, void* user, waste_error* error) {
    return guarded(error, [&] {
        if (!model) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_verify: model is required");
        const auto& container = *model->container;
        uint64_t total = 0, done = 0;
        for (const auto& [layer, bank] : container.manifest().banks) total += bank.experts;
        waste::platform::AlignedBuffer record(container.has_experts() ? container.expert_layout().record_bytes : 0);
        for (const auto& [layer, bank] : container.manifest().banks) {
            for (uint32_t e = 0; e < bank.experts; ++e) {
                container.read_expert(layer, static_cast<int>(e), record.span());
                waste::format::verify_expert_checksum(record.span(), layer, static_cast<int>(e), container.expert_layout());
                ++done;
                if (progress && (done % 64 == 0 || done == total) && progress(done, total, user))
                    waste::fail(WASTE_ERR_CANCELLED, "verify cancelled after {} of {} records", done, total);
            }
        }
    });
}

waste_status waste_model_save_usage(const waste_model* model, waste_error* error) {
    return guarded(error, [&] {
        if (!model) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_save_usage: model is required");
        if (!model->engine) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_save_usage: the model was opened metadata-only");
        std::vector<uint64_t> counts = model->engine->usage();
        for (size_t i = 0; i < counts.size() && i < model->usage_at_open.size(); ++i) counts[i] += model->usage_at_open[i];
        waste::runtime::write_usage_file(model->usage_path, model->container->config(), counts);
    });
}

waste_status waste_model_token_traffic_json(const waste_model* model, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_token_traffic_json: arguments are required");
        const auto traffic = waste::model::token_traffic(*model->container);
        json out;
        out["trunk_bytes"] = traffic.trunk_bytes;
        out["expert_bytes"] = traffic.expert_bytes;
        out["lut_bytes"] = traffic.lut_bytes;
        out["lookups"] = traffic.lookups;
        out["trunk_multiply_adds"] = traffic.trunk_multiply_adds;
        out["table_multiply_adds"] = traffic.table_multiply_adds;
        out["total_bytes"] = traffic.total_bytes();
        *out_json = to_c_string(out.dump());
    });
}

waste_status waste_model_warm_cache(waste_model* model, uint64_t* out_records, waste_error* error) {
    return guarded(error, [&] {
        if (!model || !out_records) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_warm_cache: arguments are required");
        if (!model->engine) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_model_warm_cache: the model was opened metadata-only");
        *out_records = model->engine->warm_cache();
    });
}

waste_status waste_measure_memory_bandwidth(uint32_t threads, uint64_t buffer_bytes, double* out_bytes_per_second,
                                            waste_error* error) {
    return guarded(error, [&] {
        if (!out_bytes_per_second) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_measure_memory_bandwidth: out_bytes_per_second is required");
        waste::api::check_threads(threads, "waste_measure_memory_bandwidth: threads");
        if (buffer_bytes == 0) buffer_bytes = waste::platform::default_bandwidth_buffer_bytes;
        if (buffer_bytes < waste::platform::min_bandwidth_buffer_bytes || buffer_bytes > (uint64_t{1} << 40))
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_measure_memory_bandwidth: buffer_bytes {} is outside [{}, 2^40]",
                        buffer_bytes, waste::platform::min_bandwidth_buffer_bytes);
        waste::platform::ThreadPool pool(threads);
        *out_bytes_per_second = waste::platform::measure_read_bandwidth(pool, static_cast<size_t>(buffer_bytes));
    });
}

waste_status waste_measure_compute_peak(uint32_t threads, double* out_multiply_adds_per_second, waste_error* error) {
    return guarded(error, [&] {
        if (!out_multiply_adds_per_second)
            waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_measure_compute_peak: out_multiply_adds_per_second is required");
        waste::api::check_threads(threads, "waste_measure_compute_peak: threads");
        waste::platform::ThreadPool pool(threads);
        *out_multiply_adds_per_second = waste::kernels::measure_fma_peak(pool, waste::kernels::active_isa());
    });
}

}  // extern "C"
