// text_corpus.cpp — the seeded text generator (text_corpus.h).
#include "text_corpus.h"

namespace waste_test {

std::string utf8(uint32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

const std::vector<std::vector<Range>> scripts = {
    {{'a', 'z'}, {'A', 'Z'}},                                       // Latin
    {{0xE0, 0xF6}, {0xF8, 0xFF}, {0xC0, 0xD6}, {0x100, 0x17F}},     // Latin-1, Extended-A (with ſ)
    {{0x410, 0x44F}, {0x400, 0x40F}, {0x450, 0x45F}},               // Cyrillic
    {{0x391, 0x3A9}, {0x3B1, 0x3C9}, {0x3AC, 0x3CE}},               // Greek
    {{0x621, 0x64A}, {0x64B, 0x652}},                               // Arabic + harakat
    {{0x5D0, 0x5EA}, {0x5B0, 0x5BD}},                               // Hebrew + niqqud
    {{0x905, 0x939}, {0x93E, 0x94D}},                               // Devanagari + vowel signs
    {{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x20000, 0x2A6DF}},       // Han (BMP, Ext A, Ext B)
    {{0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x30FC, 0x30FC}, {0x3005, 0x3007}},  // Kana, ー, 々〆〇
    {{0xAC00, 0xD7A3}, {0x1100, 0x1112}, {0x1161, 0x1175}},         // Hangul syllables, jamo
    {{0xE01, 0xE30}, {0xE31, 0xE3A}},                               // Thai + marks
    {{0x1D400, 0x1D4FF}},                                           // mathematical letters
};

uint32_t pick(Random& random, const std::vector<Range>& ranges) {
    const Range& range = ranges[random.below(static_cast<uint32_t>(ranges.size()))];
    return random.between(range.first, range.last);
}

const std::vector<std::string> emoji_sequences = {
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466", "\U0001F3F3\uFE0F\u200D\U0001F308",
    "\U0001F469\U0001F3FD\u200D\U0001F4BB", "\U0001F1EA\U0001F1F8", "\U0001F1EF\U0001F1F5", "1\uFE0F\u20E3",
    "#\uFE0F\u20E3", "\u2764\uFE0F", "\U0001F44D\U0001F3FF", "\U0001F9D1\u200D\U0001F91D\u200D\U0001F9D1",
    "\u263A", "\u2603\uFE0E"};
const std::vector<std::string> contractions = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE",
                                               "'Ve", "'M", "'LL", "'lL", "'D", "\u2019s", "'\u017F", "'x", "''"};
const std::vector<uint32_t> spaces = {' ', ' ', ' ', '\t', '\n', '\n', '\r', 0x0B, 0x0C, 0xA0, 0x3000, 0x2028,
                                      0x2029, 0x85, 0x1680, 0x2000, 0x2007, 0x200A, 0x202F, 0x205F,
                                      0x180E /* not White_Space */, 0x200B /* not White_Space */};
const std::vector<uint32_t> controls = {0x00, 0x01, 0x07, 0x08, 0x1B, 0x1F, 0x7F, 0x80, 0x9F, 0xAD, 0x200E,
                                        0x200F, 0xFEFF, 0x2060, 0x200C, 0x200D, 0xFFFD, 0xE000, 0xF8FF};
const std::string ascii_punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const std::vector<std::string> symbols = {"...", "\u2014", "\u2013", "\u00AB", "\u00BB", "\u00BF", "\u00A1",
                                          "\u20AC", "\u00A3", "\u00A5", "\u00B1", "\u00D7", "\u2211", "\u221A",
                                          "\u2192", "\u00A9", "\u2122", "\u2022", "\u2500", "\u3001", "\u3002",
                                          "\u300C", "\u300D", "\uFF01", "\uFF1F", "//", "://", "\u0301"};
const std::vector<std::string> numbers_other = {"\u00B2", "\u00BD", "\u2163", "\u216B", "\u2460", "\uFF10\uFF11",
                                                "\u0663\u0664", "\u096A", "\u3007", "\u4E00", "\u2070"};
const std::vector<std::string> lookalike_specials = {"<|endoftext|>", "<|open|>", "[BOS]", "<|im_start|>", "<|", "|>"};

std::string word(Random& random, const std::vector<Range>& script) {
    std::string out;
    const uint32_t length = random.between(1, random.chance(10) ? 30 : 9);
    const uint32_t casing = random.below(4);  // lower, Capitalised, UPPER, mixed (for scripts with case)
    for (uint32_t i = 0; i < length; ++i) {
        uint32_t cp = pick(random, script);
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
            const bool upper = casing == 2 || (casing == 1 && i == 0) || (casing == 3 && random.chance(50));
            cp = upper ? (cp | 0x20) - 32 : (cp | 0x20);
        }
        out += utf8(cp);
    }
    return out;
}

std::string atom(Random& random) {
    switch (random.below(20)) {
        case 0: case 1: case 2: case 3: case 4:
            return (random.chance(60) ? " " : "") + word(random, scripts[random.below(static_cast<uint32_t>(scripts.size()))]);
        case 5: return word(random, scripts[random.below(2)]) + contractions[random.below(static_cast<uint32_t>(contractions.size()))];
        case 6: {  // digit runs
            std::string digits = random.chance(30) ? " " : "";
            const uint32_t n = random.between(1, 12);
            for (uint32_t i = 0; i < n; ++i) digits += static_cast<char>('0' + random.below(10));
            return digits;
        }
        case 7: return numbers_other[random.below(static_cast<uint32_t>(numbers_other.size()))];
        case 8: case 9: {  // whitespace runs
            std::string run;
            const uint32_t n = random.chance(20) ? random.between(2, 24) : random.between(1, 3);
            for (uint32_t i = 0; i < n; ++i) run += utf8(spaces[random.below(static_cast<uint32_t>(spaces.size()))]);
            if (random.chance(15)) run += "\r\n";
            return run;
        }
        case 10: return utf8(controls[random.below(static_cast<uint32_t>(controls.size()))]);
        case 11: case 12: {
            std::string punctuation = random.chance(30) ? " " : "";
            const uint32_t n = random.between(1, 4);
            for (uint32_t i = 0; i < n; ++i) punctuation += ascii_punctuation[random.below(static_cast<uint32_t>(ascii_punctuation.size()))];
            return punctuation;
        }
        case 13: return symbols[random.below(static_cast<uint32_t>(symbols.size()))];
        case 14: {  // emoji, with modifiers, ZWJ sequences, flags, keycaps
            if (random.chance(50)) return emoji_sequences[random.below(static_cast<uint32_t>(emoji_sequences.size()))];
            std::string emoji = utf8(random.chance(50) ? random.between(0x1F600, 0x1F64F) : random.between(0x1F300, 0x1F5FF));
            if (random.chance(20)) emoji += utf8(random.between(0x1F3FB, 0x1F3FF));
            if (random.chance(10)) emoji += "\uFE0F";
            return emoji;
        }
        case 15: {  // Han runs with CJK punctuation, Kana mixed in (Kimi splits Han apart)
            std::string run;
            const uint32_t n = random.between(1, 12);
            for (uint32_t i = 0; i < n; ++i)
                run += utf8(random.chance(70) ? pick(random, scripts[7]) : pick(random, scripts[8]));
            if (random.chance(30)) run += random.chance(50) ? "\u3002" : "\u3001";
            return run;
        }
        case 16: return lookalike_specials[random.below(static_cast<uint32_t>(lookalike_specials.size()))];
        case 17: {  // a letter followed by combining marks, or marks alone
            std::string marked = random.chance(70) ? utf8(pick(random, scripts[0])) : "";
            const uint32_t n = random.between(1, 3);
            for (uint32_t i = 0; i < n; ++i) marked += utf8(random.between(0x300, 0x36F));
            return marked;
        }
        case 18: return utf8(random.between(0x20, 0x2FF));  // anything near ASCII
        default: {
            // A code point from long-assigned BMP blocks or an unassigned or
            // private-use plane (Cn/Co in every Unicode version).
            switch (random.below(4)) {
                case 0: return utf8(random.between(0x370, 0x1FFF));
                case 1: return utf8(random.between(0x2000, 0x2BFF));
                case 2: return utf8(random.between(0x50000, 0x5FFFF));
                default: return utf8(random.between(0xF0000, 0xFFFFD));
            }
        }
    }
}

std::string generated_text(Random& random, const std::vector<std::string>& specials, uint32_t max_atoms) {
    std::string text;
    const uint32_t atoms = random.between(1, max_atoms);
    for (uint32_t i = 0; i < atoms; ++i) {
        if (!specials.empty() && random.chance(12)) text += specials[random.below(static_cast<uint32_t>(specials.size()))];
        else text += atom(random);
    }
    return text;
}

std::vector<std::string> long_texts(Random& random) {
    std::vector<std::string> texts;
    texts.push_back(std::string(5000, ' '));
    texts.push_back(std::string(3000, ' ') + "x");
    texts.push_back(std::string(3000, 'a'));
    texts.push_back(std::string(2000, '\n') + std::string(100, ' '));
    texts.push_back(std::string(3000, '!'));
    texts.push_back(std::string(2000, '7'));
    std::string letters, han, mixed, emoji;
    for (int i = 0; i < 4000; ++i) letters += static_cast<char>('a' + random.below(26));
    for (int i = 0; i < 1500; ++i) han += utf8(random.between(0x4E00, 0x4FFF));
    for (int i = 0; i < 1200; ++i) mixed += utf8(pick(random, scripts[random.below(static_cast<uint32_t>(scripts.size()))]));
    for (int i = 0; i < 400; ++i) emoji += utf8(random.between(0x1F600, 0x1F64F));
    texts.push_back(letters);
    texts.push_back(han);
    texts.push_back(mixed);
    texts.push_back(emoji);
    return texts;
}

}  // namespace waste_test
