// synth_random.h — the seeded random numbers of synthetic containers.
//
// Owns determinism across machines: xoshiro256** seeded through splitmix64,
// and every distribution computed with integer arithmetic and one exact float
// multiply — never std::*_distribution (their output differs between standard
// libraries) and no libm transcendental (not correctly rounded everywhere).
// Each tensor, codebook and expert draws from its own stream, derived from
// (seed, a tag naming the object, up to two indices), so a value does not
// depend on what was generated before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace waste::synth {

inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The seed of the stream of one object: FNV-1a of the tag, mixed with the
// container seed and the indices.
inline uint64_t stream_seed(uint64_t seed, std::string_view tag, uint64_t a = 0, uint64_t b = 0) {
    uint64_t hash = 0xCBF29CE484222325ull;
    for (char c : tag) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
    uint64_t state = seed ^ hash;
    uint64_t mixed = splitmix64(state);
    state = mixed ^ (a * 0x9E3779B97F4A7C15ull);
    mixed = splitmix64(state);
    state = mixed ^ (b * 0xD1B54A32D192ED03ull);
    return splitmix64(state);
}

class Random {
public:
    explicit Random(uint64_t seed) {
        for (uint64_t& word : s_) word = splitmix64(seed);
    }

    uint64_t next() {  // xoshiro256**
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 24 bits.
    float uniform() { return static_cast<float>(next() >> 40) * 0x1p-24f; }

    // Approximately standard normal: the Irwin-Hall sum of four 16-bit
    // uniforms, centred and scaled to unit variance (bounded by ±3.46).
    float normal() {
        const uint64_t r = next();
        const int64_t sum = static_cast<int64_t>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48));
        // Σ(x_i + 1/2)/65536 has mean 2 and variance 4/12: centre, then scale by sqrt(3).
        return static_cast<float>(2 * sum + 4 - 4 * 65536) * (1.7320508075688772f / 131072.0f);
    }

    void fill(uint8_t* out, size_t bytes) {
        size_t i = 0;
        for (; i + 8 <= bytes; i += 8) {
            const uint64_t r = next();
            std::memcpy(out + i, &r, 8);  // byte order is fixed by the host, little-endian (checked in platform)
        }
        if (i < bytes) {
            const uint64_t r = next();
            std::memcpy(out + i, &r, bytes - i);
        }
    }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace waste::synth
