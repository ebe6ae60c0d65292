// crc32.cpp — zlib's CRC-32 through libdeflate, with the bulk of a long
// buffer folded 256 bytes a step by 512-bit carry-less multiplies where the
// CPU has them (VPCLMULQDQ with AVX-512: expert records are checked as their
// reads land, and Debian's libdeflate folds 16 bytes a step).
//
// The fold keeps four 512-bit accumulators, 256 bytes of message A, such
// that A followed by the rest of the buffer has the CRC of the whole: the
// starting register is XORed into the first four bytes (a reflected CRC's
// register after four bytes is the same either way), and each step moves
// every 128-bit lane 2,048 bits forward: lane = a·x⁶⁴ + b (a its first
// eight bytes), a·x²¹¹² + b·x²⁰⁴⁸ ≡ a·(x²¹¹¹ mod P)·x + b·(x²⁰⁴⁷ mod P)·x,
// where the trailing x is the reflected carry-less product's one-bit offset;
// the product, under 96 bits, lands in the lane, XORed with the next
// 256 bytes' lane. A and the tail then go through libdeflate: the result is
// libdeflate's bit for bit (tests/container_test.cpp compares them).
#include "platform/crc32.h"

#include <libdeflate.h>

#if defined(__x86_64__)
#define WASTE_CRC_FOLD 1
#include <immintrin.h>

#include "platform/target_region.h"
#else
#define WASTE_CRC_FOLD 0
#endif

namespace waste::platform {
namespace {

#if WASTE_CRC_FOLD
constexpr size_t fold_bytes = 256;       // a step: four 64-byte accumulators
constexpr size_t fold_min_bytes = 4096;  // shorter buffers go to libdeflate whole

WASTE_TARGET_BEGIN("avx512f,vpclmulqdq")

// bytes >= 2 · fold_bytes
uint32_t crc32_folded(const uint8_t* p, size_t bytes, uint32_t previous) {
    // (x^(64+2048-1) mod P) and (x^(2048-1) mod P), degree e at bit 63 − e of
    // a 64-bit word (the reflected order), per lane: low word for a, high for b
    constexpr long long for_first = 0x7cc8e1e700000000LL, for_second = 0x03f9f86300000000LL;
    const __m512i k = _mm512_set_epi64(for_second, for_first, for_second, for_first, for_second, for_first,
                                       for_second, for_first);
    __m512i acc[4];
    for (size_t i = 0; i < 4; ++i) acc[i] = _mm512_loadu_si512(p + 64 * i);
    acc[0] = _mm512_xor_si512(acc[0], _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                       static_cast<int>(~previous)));
    const size_t body = bytes / fold_bytes * fold_bytes;
    for (size_t at = fold_bytes; at < body; at += fold_bytes)
        for (size_t i = 0; i < 4; ++i)
            acc[i] = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc[i], k, 0x00),
                                               _mm512_clmulepi64_epi128(acc[i], k, 0x11),
                                               _mm512_loadu_si512(p + at + 64 * i), 0x96);  // a ^ b ^ c
    alignas(64) uint8_t message[fold_bytes];
    for (size_t i = 0; i < 4; ++i) _mm512_store_si512(message + 64 * i, acc[i]);
    // the register A leaves is the CRC of A from a zero register: zlib's value ~0
    const uint32_t crc = static_cast<uint32_t>(libdeflate_crc32(0xFFFFFFFFu, message, fold_bytes));
    return body == bytes ? crc : static_cast<uint32_t>(libdeflate_crc32(crc, p + body, bytes - body));
}

WASTE_TARGET_END

bool cpu_folds() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
    }();
    return yes;
}
#endif

}  // namespace

uint32_t crc32(const void* data, size_t bytes, uint32_t previous) {
#if WASTE_CRC_FOLD
    if (bytes >= fold_min_bytes && cpu_folds()) return crc32_folded(static_cast<const uint8_t*>(data), bytes, previous);
#endif
    return crc32_library(data, bytes, previous);
}

uint32_t crc32_library(const void* data, size_t bytes, uint32_t previous) {
    // libdeflate treats a NULL buffer as "give me the initial value" and
    // returns 0, which an empty vector's data() can be: an empty span must
    // leave a running CRC unchanged instead.
    if (bytes == 0) return previous;
    return static_cast<uint32_t>(libdeflate_crc32(previous, data, bytes));
}

bool crc32_folds() {
#if WASTE_CRC_FOLD
    return cpu_folds();
#else
    return false;
#endif
}

}  // namespace waste::platform
