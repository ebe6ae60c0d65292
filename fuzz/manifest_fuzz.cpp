// manifest_fuzz.cpp — libFuzzer target over format::parse_manifest.
//
// The input is manifest.json text. A parse either succeeds or throws
// waste::Error; anything else (another exception, a crash, a leak, an ASan or
// UBSan report) is a finding. A manifest that parses is pushed through every
// rule and size computation an open makes before touching payloads: trunk
// extents, codebook bases, the expert record layout and the memory plan's
// state and scratch sizes.
// Seeds: fuzz/seeds/manifest_fuzz/ (the upstream fixtures' manifests).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/expert_record.h"
#include "format/manifest.h"
#include "model/forward.h"
#include "platform/error.h"
#include "platform/thread_pool.h"
#include "runtime/memory_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const waste::format::Manifest manifest = waste::format::parse_manifest(text);
        // The file sizes an open would pass in: the fixtures' (trunk.bin of
        // tiny.waste, 27 codebook records), then some the input decides.
        const uint64_t trunk_sizes[] = {386152, 0, uint64_t{1} << 50, size * uint64_t{977}};
        for (uint64_t trunk_bytes : trunk_sizes) {
            try {
                waste::format::check_trunk_extents(manifest, trunk_bytes);
            } catch (const waste::Error&) {
            }
        }
        for (uint64_t records : {uint64_t{27}, uint64_t{0}, uint64_t{1} << 20}) {
            try {
                waste::format::check_codebook_bases(manifest, records);
            } catch (const waste::Error&) {
            }
        }
        for (const auto& tensor : manifest.trunk) {
            if (manifest.find(tensor.name) != &tensor) __builtin_trap();  // the name index must agree
            if (tensor.bytes != tensor.payload_bytes + tensor.scale_bytes) __builtin_trap();
        }
        const auto& config = manifest.config;
        for (uint32_t context : {1u, 4096u, 1u << 24})
            (void)waste::runtime::session_state_bytes(config, context);
        if (manifest.has_quant) {
            // the most compute threads a pool runs: the largest per-thread products
            (void)waste::runtime::scratch_bytes(config, manifest.quant, 4096, waste::platform::max_pool_threads,
                                                 waste::model::max_prefill_chunk);
            if (!manifest.banks.empty()) (void)waste::format::expert_layout(config, manifest.quant);
        }
    } catch (const waste::Error&) {
        // refused with a message: the expected outcome for most inputs
    }
    return 0;
}
