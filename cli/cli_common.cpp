#include "cli_common.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace waste_cli {

void fail_with(const waste_error& error, const std::string& doing) {
    throw RuntimeFailure{fmt::format("{}: {} ({})", doing, error.message, waste_status_name(error.status))};
}

ModelHandle open_model(const std::string& path, const waste_open_options& options) {
    waste_model* model = nullptr;
    waste_error error{};
    if (waste_model_open(path.c_str(), &options, &model, &error) != WASTE_OK) fail_with(error, "cannot open " + path);
    return ModelHandle(model);
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
