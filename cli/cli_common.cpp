#include "cli_common.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <sched.h>
#endif

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

namespace waste_cli {
namespace {

// The CPUs an affinity can name: a Linux cpu_set_t's, a Windows process
// group's (its affinity mask is one machine word).
#if defined(_WIN32)
constexpr int max_cpus = static_cast<int>(sizeof(DWORD_PTR) * 8);
#elif defined(CPU_SETSIZE)
constexpr int max_cpus = CPU_SETSIZE;
#else
constexpr int max_cpus = 1024;
#endif

}  // namespace

void fail_with(const waste_error& error, const std::string& doing) {
    throw RuntimeFailure{fmt::format("{}: {} ({})", doing, error.message, waste_status_name(error.status))};
}

ModelHandle open_model(const std::string& path, const waste_open_options& options) {
    waste_model* model = nullptr;
    waste_error error{};
    if (waste_model_open(path.c_str(), &options, &model, &error) != WASTE_OK) fail_with(error, "cannot open " + path);
    return ModelHandle(model);
}

std::vector<int32_t> parse_token_ids(const std::string& text, bool allow_empty, const std::string& source) {
    std::vector<int32_t> ids;
    std::string cleaned = text;
    for (char& ch : cleaned)
        if (ch == ',' || ch == '[' || ch == ']') ch = ' ';
    std::istringstream in(cleaned);
    std::string item;
    while (in >> item) {
        size_t used = 0;
        long long value = -1;
        try {
            value = std::stoll(item, &used);
        } catch (...) {
            used = 0;
        }
        if (used != item.size() || value < 0 || value > INT32_MAX)
            throw CLI::ValidationError(source, "'" + item + "' is not a token id (a non-negative integer)");
        ids.push_back(static_cast<int32_t>(value));
    }
    if (ids.empty() && !allow_empty) throw CLI::ValidationError(source, "no token ids given");
    return ids;
}

std::vector<int> parse_cpu_list(const std::string& text) {
    std::vector<int> cpus;
    auto bad = [&](const std::string& why) {
        return CLI::ValidationError("--cpus", fmt::format("\"{}\" {} (expected CPU numbers and ranges, e.g. 0-3,6)", text, why));
    };
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        const size_t dash = item.find('-');
        auto number = [&](const std::string& digits) {
            if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
                throw bad(fmt::format("has \"{}\", not a CPU number", item));
            const int cpu = std::stoi(digits);
            if (cpu >= max_cpus) throw bad(fmt::format("names CPU {}, above {}", cpu, max_cpus - 1));
            return cpu;
        };
        const int first = number(item.substr(0, dash));
        const int last = dash == std::string::npos ? first : number(item.substr(dash + 1));
        if (last < first) throw bad(fmt::format("has the empty range \"{}\"", item));
        for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
        at = comma + 1;
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus;
}

// The process's affinity: sched_setaffinity on Linux; on Windows the
// process affinity mask, which names the CPUs of the process's group (64 at
// most); macOS has no affinity call, so there --cpus is refused.
static bool pin_process_to(const std::vector<int>& cpus) {
#if defined(_WIN32)
    DWORD_PTR mask = 0;
    for (int cpu : cpus) mask |= DWORD_PTR{1} << cpu;
    return ::SetProcessAffinityMask(::GetCurrentProcess(), mask) != 0;
#elif defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
#else
    (void)cpus;
    return false;
#endif
}

void add_cpus_option(CLI::App& app) {
    app.add_option_function<std::string>(
           "--cpus",
           [](const std::string& text) {
               if (!pin_process_to(parse_cpu_list(text)))
                   throw CLI::ValidationError("--cpus", fmt::format("\"{}\": none of these CPUs is available to this process", text));
           },
           "Run only on these CPUs, e.g. 0-3,6 (with --threads 0, one compute thread each)")
        ->default_str("all the process may use");
}

CLI::Option* add_threads_option(CLI::App* command, unsigned& threads, const std::string& name, const std::string& what) {
    return command->add_option(name, threads, fmt::format("{} (at most {})", what, WASTE_MAX_THREADS))
        ->default_val(0)
        ->check(CLI::Range(0u, WASTE_MAX_THREADS));
}

uint64_t parse_size(const std::string& text) {
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (...) {
        throw CLI::ValidationError("size", "'" + text + "' is not a size (e.g. 8G, 512M, 1073741824)");
    }
    std::string unit = text.substr(used);
    for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    double multiplier = 1;
    if (unit.empty() || unit == "B") multiplier = 1;
    else if (unit == "K" || unit == "KB" || unit == "KIB") multiplier = 1024.0;
    else if (unit == "M" || unit == "MB" || unit == "MIB") multiplier = 1024.0 * 1024;
    else if (unit == "G" || unit == "GB" || unit == "GIB") multiplier = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "TB" || unit == "TIB") multiplier = 1024.0 * 1024 * 1024 * 1024;
    else throw CLI::ValidationError("size", "'" + text + "' has an unknown unit (use K, M, G or T)");
    const double bytes = value * multiplier;
    if (!(bytes >= 0) || bytes > 1.8e19) throw CLI::ValidationError("size", "'" + text + "' is out of range");
    return static_cast<uint64_t>(std::llround(bytes));
}

int32_t greedy_token(const waste_session* session) {
    const float* logits = nullptr;
    size_t vocab = 0;
    waste_error error{};
    if (waste_session_logits(session, &logits, &vocab, &error) != WASTE_OK) fail_with(error, "logits");
    return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n == 0 ? 0 : n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string format_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024 && unit < 4) {
        value /= 1024;
        ++unit;
    }
    return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, units[unit]);
}

std::string take_string(char* json) {
    std::string copy = json ? json : "";
    waste_string_free(json);
    return copy;
}

}  // namespace waste_cli
