#include "runtime/usage_hotlist.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "platform/direct_file.h"
#include "platform/error.h"
#include "platform/output_file.h"
#include "platform/utf8_path.h"

namespace waste::runtime {
namespace {

constexpr uint32_t usage_magic = 0x45535557;  // "WUSE"
constexpr uint32_t usage_version = 1;
constexpr size_t header_bytes = 16;

uint32_t read_u32(const std::string& bytes, size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
}

}  // namespace

std::string default_usage_path(const format::Container& container) {
    return platform::utf8_text(platform::utf8_path(container.directory()) / "usage.waste");
}

UsageFile read_usage_file(const std::string& path, const format::ModelConfig& c) {
    UsageFile out;
    std::error_code ec;
    if (!std::filesystem::exists(platform::utf8_path(path), ec)) {
        out.note = "none at " + path;
        return out;
    }
    const uint64_t cells = static_cast<uint64_t>(c.layers) * c.experts;
    const uint64_t expected = header_bytes + cells * 8;
    std::string bytes;
    try {
        bytes = platform::read_small_file(path, expected);
    } catch (const Error& error) {
        out.note = fmt::format("{} ignored: {}", path, error.what());
        return out;
    }
    if (bytes.size() < header_bytes || read_u32(bytes, 0) != usage_magic || read_u32(bytes, 4) != usage_version) {
        out.note = fmt::format("{} ignored: not a version-1 usage file", path);
        return out;
    }
    if (read_u32(bytes, 8) != static_cast<uint32_t>(c.layers) || read_u32(bytes, 12) != static_cast<uint32_t>(c.experts) ||
        bytes.size() != expected) {
        out.note = fmt::format("{} ignored: it is for {} layers x {} experts ({} bytes), this model has {} x {}", path,
                               read_u32(bytes, 8), read_u32(bytes, 12), bytes.size(), c.layers, c.experts);
        return out;
    }
    out.counts.resize(cells);
    std::memcpy(out.counts.data(), bytes.data() + header_bytes, cells * 8);
    out.loaded = true;
    out.note = "read " + path;
    return out;
}

void write_usage_file(const std::string& path, const format::ModelConfig& c, const std::vector<uint64_t>& counts) {
    const uint64_t cells = static_cast<uint64_t>(c.layers) * c.experts;
    WASTE_CHECK(counts.size() == cells);
    std::string bytes(header_bytes, '\0');
    const uint32_t header[4] = {usage_magic, usage_version, static_cast<uint32_t>(c.layers), static_cast<uint32_t>(c.experts)};
    std::memcpy(bytes.data(), header, header_bytes);
    bytes.append(reinterpret_cast<const char*>(counts.data()), cells * 8);
    // The one atomic publisher (tmp, checked writes, fsync, rename): a full
    // disk leaves the previous hotlist as it was, never a truncated one.
    try {
        platform::write_small_file(path, bytes);
    } catch (const Error& error) {
        fail(error.status(), "usage hotlist: {} (choose a writable path with --usage FILE)", error.what());
    }
}

std::vector<CacheKey> hotlist_order(const format::ModelConfig& c, const std::vector<uint64_t>& counts) {
    std::vector<CacheKey> keys;
    for (int layer = 0; layer < c.layers; ++layer)
        for (int e = 0; e < c.experts && c.is_moe_layer(layer); ++e)
            if (counts[static_cast<size_t>(layer) * c.experts + e]) keys.push_back(CacheKey{layer, e});
    std::stable_sort(keys.begin(), keys.end(), [&](const CacheKey& a, const CacheKey& b) {
        return counts[static_cast<size_t>(a.layer) * c.experts + a.expert] > counts[static_cast<size_t>(b.layer) * c.experts + b.expert];
    });
    return keys;
}

}  // namespace waste::runtime
