// cache_random.h — splitmix64, the fixed pseudo-random sequence of the cache
// code (LFRU's samples, synthetic routing traces): the same seed gives the
// same numbers on every platform and library, so hit rates repeat exactly.
#pragma once

#include <cstdint>

namespace waste::runtime {

class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // In [0, n), n >= 1 (modulo bias below 2^-40 for the sizes used here).
    uint64_t below(uint64_t n) { return next() % n; }
    // In (0, 1): 53 random bits, never 0.
    double unit() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

private:
    uint64_t state_;
};

}  // namespace waste::runtime
