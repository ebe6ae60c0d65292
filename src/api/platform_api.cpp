// platform_api.cpp — C API entry points over the platform layer: measuring
// the disk, and the atomic file writer for clients' outputs.
#include <nlohmann/json.hpp>

#include "api/api_support.h"
#include "platform/disk_bench.h"
#include "platform/output_file.h"

using nlohmann::json;
using waste::api::guarded;

extern "C" {

waste_status waste_file_write(const char* path, const void* bytes, size_t size, waste_error* error) {
    return guarded(error, [&] {
        if (!path || (!bytes && size > 0)) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_file_write: path and bytes are required");
        waste::platform::write_small_file(path, {static_cast<const char*>(bytes), size});
    });
}

waste_status waste_diskbench_json(const char* directory, const char* options_json, char** out_json, waste_error* error) {
    return guarded(error, [&] {
        if (!directory || !out_json) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "waste_diskbench_json: directory and out_json are required");
        waste::platform::DiskBenchOptions o;
        o.directory = directory;
        if (options_json && *options_json) {
            const json in = json::parse(options_json, nullptr, false);
            if (in.is_discarded() || !in.is_object()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench options: not a JSON object");
            auto number = [&](const char* key, double low, double high, double fallback) {
                if (!in.contains(key)) return fallback;
                if (!in[key].is_number()) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench options: {} is not a number", key);
                const double v = in[key].get<double>();
                if (!(v >= low && v <= high)) waste::fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench options: {} {} is out of range [{}, {}]", key, v, low, high);
                return v;
            };
            o.file_bytes = static_cast<uint64_t>(number("file_bytes", 8192, 1e13, static_cast<double>(o.file_bytes)));
            o.record_bytes = static_cast<uint64_t>(number("record_bytes", 4096, 1 << 30, static_cast<double>(o.record_bytes)));
            o.depth = static_cast<unsigned>(number("depth", 1, 1024, o.depth));
            o.pread_threads = static_cast<unsigned>(number("threads", 0, 256, 0));
            o.seconds = number("seconds", 0.01, 3600, o.seconds);
            if (in.contains("backend")) {
                const std::string backend = in["backend"].is_string() ? in["backend"].get<std::string>() : "";
                if (backend == "io_uring") o.backend = waste::platform::IoBackend::io_uring;
                else if (backend == "pread") o.backend = waste::platform::IoBackend::pread;
                else waste::fail(WASTE_ERR_INVALID_ARGUMENT, "diskbench options: backend {} is not io_uring or pread", in["backend"].dump());
            }
        }
        const auto r = waste::platform::run_disk_bench(o);
        json out;
        out["backend"] = r.backend;
        out["io_mode"] = r.io_mode;
        out["write_io_mode"] = r.write_io_mode;
        out["file_bytes"] = r.file_bytes;
        out["record_bytes"] = r.record_bytes;
        out["depth"] = r.depth;
        out["reads"] = r.reads;
        out["bytes_read"] = r.bytes_read;
        out["write_gb_per_s"] = r.write_gb_per_s;
        out["read_gb_per_s"] = r.read_gb_per_s;
        out["reads_per_s"] = r.reads_per_s;
        out["latency_p50_ms"] = r.latency_p50_ms;
        out["latency_p99_ms"] = r.latency_p99_ms;
        if (r.resident_pages_after >= 0) out["resident_pages_after"] = r.resident_pages_after;
        else out["resident_pages_after"] = nullptr;  // the system cannot tell
        *out_json = waste::api::to_c_string(out.dump());
    });
}

}  // extern "C"
