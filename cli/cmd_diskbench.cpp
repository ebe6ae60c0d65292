// cmd_diskbench.cpp — `waste diskbench PATH`: direct-I/O random-read
// bandwidth for expert-sized records (and the sequential direct write).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace waste_cli {
namespace {

struct DiskArgs {
    std::string path;
    std::string record = "598016";
    std::string size = "2G";
    unsigned depth = 8;
    unsigned threads = 0;
    std::string backend = "io_uring";
    double seconds = 5;
    bool json_output = false;
};

}  // namespace

void add_diskbench_command(CLI::App& app) {
    auto args = std::make_shared<DiskArgs>();
    CLI::App* command = app.add_subcommand("diskbench", "Measure direct-I/O random reads of expert-sized records on a disk");
    command->add_option("PATH", args->path, "A directory on the disk to measure (a scratch file is written and removed)")->required();
    command->add_option("--record", args->record, "Record size (a multiple of 4096; default: the mid preset's 598016)")->default_val("598016");
    command->add_option("--size", args->size, "Scratch file size")->default_val("2G");
    command->add_option("--depth", args->depth, "Reads in flight")->default_val(8)->check(CLI::Range(1, 1024));
    add_threads_option(command, args->threads, "--threads", "Reader threads of the pread backend (0 = min(depth, 4))");
    command->add_option("--backend", args->backend, "io_uring or pread")->default_val("io_uring")->check(CLI::IsMember({"io_uring", "pread"}));
    command->add_option("--seconds", args->seconds, "Length of the read phase")->default_val(5)->check(CLI::Range(0.01, 3600.0));
    command->add_flag("--json", args->json_output, "Print JSON (documented in docs/CLI.md)");
    command->callback([args] {
        nlohmann::json options{{"record_bytes", parse_size(args->record)}, {"file_bytes", parse_size(args->size)},
                               {"depth", args->depth}, {"threads", args->threads}, {"backend", args->backend},
                               {"seconds", args->seconds}};
        char* text = nullptr;
        waste_error error{};
        if (waste_diskbench_json(args->path.c_str(), options.dump().c_str(), &text, &error) != WASTE_OK)
            fail_with(error, "diskbench " + args->path);
        const std::string json_text = take_string(text);
        if (args->json_output) {
            fmt::print("{}\n", json_text);
            return;
        }
        const auto r = nlohmann::json::parse(json_text);
        fmt::print("{}: {} reads of {} bytes, depth {}, {} ({})\n", args->path, r["reads"].get<uint64_t>(),
                   r["record_bytes"].get<uint64_t>(), r["depth"].get<unsigned>(), r["backend"].get<std::string>(),
                   r["io_mode"].get<std::string>());
        fmt::print("random read   {:.2f} GB/s, {:.0f} reads/s, latency p50 {:.2f} ms, p99 {:.2f} ms\n",
                   r["read_gb_per_s"].get<double>(), r["reads_per_s"].get<double>(), r["latency_p50_ms"].get<double>(),
                   r["latency_p99_ms"].get<double>());
        fmt::print("seq. write    {:.2f} GB/s ({})\n", r["write_gb_per_s"].get<double>(), r["write_io_mode"].get<std::string>());
        if (r["resident_pages_after"].is_null())
            fmt::print("page cache    unknown: this system does not say which pages of a file it caches\n");
        else
            fmt::print("page cache    {} pages of the file resident afterwards (0 = reads bypassed RAM)\n",
                       r["resident_pages_after"].get<uint64_t>());
    });
}

}  // namespace waste_cli
