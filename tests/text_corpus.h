// text_corpus.h — the seeded text generator the tokenizer tests share:
// multi-script words, contractions, digit and whitespace runs, controls,
// punctuation, emoji sequences, Han and Kana runs, lookalike specials,
// combining marks and unassigned code points, mixed into strings; the same
// strings on every machine (splitmix64).
//
// Deliberately not here: the oracles and the comparisons (each test's own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace waste_test {

// The UTF-8 bytes of one code point.
std::string utf8(uint32_t cp);

// splitmix64: the same strings on every machine and library.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
    uint32_t between(uint32_t low, uint32_t high) { return low + below(high - low + 1); }  // inclusive
    bool chance(uint32_t percent) { return below(100) < percent; }

private:
    uint64_t state_;
};

struct Range {
    uint32_t first, last;
};

// Letters (and the marks that go with them) of each script the generator mixes.
extern const std::vector<std::vector<Range>> scripts;
uint32_t pick(Random& random, const std::vector<Range>& ranges);

// One word of a script, in a random casing.
std::string word(Random& random, const std::vector<Range>& script);
// One of the generator's kinds of text, chosen at random.
std::string atom(Random& random);
// 1 to max_atoms atoms, with one of specials instead of an atom 12% of the time.
std::string generated_text(Random& random, const std::vector<std::string>& specials, uint32_t max_atoms = 30);
// Long single pieces: the heap merge, and the regex on long runs.
std::vector<std::string> long_texts(Random& random);

}  // namespace waste_test
