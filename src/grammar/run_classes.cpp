#include "grammar/run_classes.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "grammar/token_mask.h"
#include "platform/error.h"

namespace waste::grammar {

namespace {


uint64_t size_of(const CharClass& c) {
    uint64_t n = 0;
    for (const CharRange& r : c.ranges) n += r.last - r.first + 1;
    return n;
}

// Whether every code point of [first, last] is in c (its ranges are sorted,
// disjoint and non-adjacent, so a contained interval lies in one range).
bool holds(const CharClass& c, uint32_t first, uint32_t last) {
    auto it = std::upper_bound(c.ranges.begin(), c.ranges.end(), first, [](uint32_t v, CharRange r) { return v < r.first; });
    return it != c.ranges.begin() && first <= std::prev(it)->last && last <= std::prev(it)->last;
}

std::string utf8(uint32_t c) {
    std::string out;
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
    return out;
}

// How a token reads against class K: `chars` characters of K, then either
// the end (pure) or a rest starting at byte `rest` (mixed). Decoding follows
// ByteMatcher::compute_step, so "a character of K" is exactly what that
// matcher moves through with any stack whose class holds K.
struct Reading {
    uint32_t chars = 0;
    size_t rest = 0;
    bool pure = false;
};

Reading read(const std::string& bytes, const CharClass& k) {
    Reading r;
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<uint8_t>(bytes[i]);
        uint32_t value = 0, length = 0;
        if (lead < 0x80) value = lead, length = 1;
        else if (lead >= 0xC2 && lead <= 0xDF) value = lead & 0x1Fu, length = 2;
        else if (lead >= 0xE0 && lead <= 0xEF) value = lead & 0x0Fu, length = 3;
        else if (lead >= 0xF0 && lead <= 0xF4) value = lead & 0x07u, length = 4;
        else break;  // not a lead byte: the rest starts here
        size_t j = 1;
        bool valid = true;
        for (; j < length && i + j < bytes.size(); ++j) {
            const auto b = static_cast<uint8_t>(bytes[i + j]);
            if ((b & 0xC0) != 0x80) {
                valid = false;
                break;
            }
            value = (value << 6) | (b & 0x3Fu);
        }
        if (!valid) break;
        if (j < length) {
            // The token ends inside this character: pure if every completion is in K.
            const uint32_t shift = 6u * static_cast<uint32_t>(length - j);
            const uint32_t first = std::max(value << shift, utf8_smallest_of_length[length]);
            const uint32_t last = std::min((value << shift) | ((1u << shift) - 1), max_code_point);
            if (first > last || !holds(k, first, last)) break;
            r.chars++;
            r.rest = bytes.size();
            r.pure = true;
            return r;
        }
        if (value < utf8_smallest_of_length[length] || (value >= 0xD800 && value <= 0xDFFF) || value > max_code_point ||
            !k.contains(value))
            break;
        r.chars++;
        i += length;
    }
    r.rest = i;
    r.pure = i == bytes.size();
    return r;
}

}  // namespace

RunClasses::RunClasses(const Grammar& grammar, const VocabularyTrie& trie) {
    const uint32_t vocab = trie.vocab();
    words_ = (vocab + 63) / 64;
    size_t with_bytes = 0;
    for (uint32_t id = 0; id < vocab; ++id) with_bytes += !trie.bytes(static_cast<int32_t>(id)).empty();
    std::vector<uint32_t> order(grammar.classes.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return size_of(grammar.classes[a]) > size_of(grammar.classes[b]); });
    std::vector<Reading> readings(vocab);
    // Each candidate costs a read of the whole vocabulary: only the widest
    // few are tried, so compiling stays linear in the vocabulary.
    for (size_t tried = 0; tried < order.size() && tried < max_run_candidates; ++tried) {
        if (runs_.size() == max_run_classes) break;
        const CharClass& k = grammar.classes[order[tried]];
        if (size_of(k) < 2) break;
        size_t pure = 0;
        for (uint32_t id = 0; id < vocab; ++id) {
            const std::string& bytes = trie.bytes(static_cast<int32_t>(id));
            readings[id] = bytes.empty() ? Reading{} : read(bytes, k);
            pure += readings[id].pure && readings[id].chars <= max_run_chars;
        }
        if (pure == 0 || pure * 4 < with_bytes) continue;  // too few tokens to pay for its bit sets
        Run run;
        run.representative = utf8(k.ranges.front().first);
        for (uint32_t id = 0; id < vocab; ++id) {
            Reading& r = readings[id];
            if (trie.bytes(static_cast<int32_t>(id)).empty()) continue;
            if (r.chars > max_run_chars) r = Reading{0, 0, false};  // too long for the chain: checked whole
            if (r.pure) run.chars = std::max(run.chars, r.chars);
        }
        run.pure.assign((run.chars + 1) * words_, 0);
        for (uint32_t id = 0; id < vocab; ++id) {
            const Reading& r = readings[id];
            if (trie.bytes(static_cast<int32_t>(id)).empty()) continue;
            if (r.pure) {
                for (uint32_t l = r.chars; l <= run.chars; ++l) run.pure[l * words_ + id / 64] |= uint64_t{1} << (id % 64);
            } else {
                const size_t length = trie.bytes(static_cast<int32_t>(id)).size() - r.rest;
                run.mixed.push_back(Mixed{static_cast<int32_t>(id), static_cast<uint32_t>(r.rest), static_cast<uint16_t>(length),
                                          static_cast<uint8_t>(r.chars), 0});
            }
        }
        auto rest_of = [&](const Mixed& m) {
            return std::string_view(trie.bytes(m.id)).substr(m.rest);
        };
        std::sort(run.mixed.begin(), run.mixed.end(), [&](const Mixed& a, const Mixed& b) {
            if (a.prefix_chars != b.prefix_chars) return a.prefix_chars < b.prefix_chars;
            const auto ra = rest_of(a), rb = rest_of(b);
            return ra < rb || (ra == rb && a.id < b.id);
        });
        for (size_t i = 1; i < run.mixed.size(); ++i) {
            if (run.mixed[i].prefix_chars != run.mixed[i - 1].prefix_chars) continue;
            const auto a = rest_of(run.mixed[i - 1]), b = rest_of(run.mixed[i]);
            size_t common = 0;
            while (common < a.size() && common < b.size() && common < 255 && a[common] == b[common]) ++common;
            run.mixed[i].common = static_cast<uint8_t>(common);
        }
        for (size_t r = 1; r <= 3; ++r) {
            for (uint32_t id = 0; id < vocab; ++id) {
                const std::string& bytes = trie.bytes(static_cast<int32_t>(id));
                if (bytes.empty()) continue;
                bool starts = true;
                for (size_t i = 0; i < std::min(r, bytes.size()); ++i) starts = starts && (static_cast<uint8_t>(bytes[i]) & 0xC0) == 0x80;
                if (!starts) continue;
                Continued c{static_cast<int32_t>(id), 0, 0, continued_whole};
                if (bytes.size() > r) {
                    const Reading after = read(bytes.substr(r), k);
                    if (after.chars <= max_run_chars) {
                        c.chars = static_cast<uint8_t>(after.chars);
                        c.rest = static_cast<uint8_t>(r + after.rest);
                        c.kind = after.pure ? continued_pure : continued_mixed;
                    }
                }
                run.continued[r - 1].push_back(c);
            }
            // Checked whole ones first (they have fewer than r + 1 bytes and
            // no group), then by their first r bytes.
            auto& list = run.continued[r - 1];
            std::stable_sort(list.begin(), list.end(), [&](const Continued& a, const Continued& b) {
                if ((a.kind == continued_whole) != (b.kind == continued_whole)) return a.kind == continued_whole;
                return std::string_view(trie.bytes(a.id)).substr(0, r) < std::string_view(trie.bytes(b.id)).substr(0, r);
            });
            auto& groups = run.continued_groups[r - 1];
            for (size_t i = 0; i < list.size(); ++i) {
                if (list[i].kind == continued_whole) continue;
                const std::string_view head = std::string_view(trie.bytes(list[i].id)).substr(0, r);
                const bool same = !groups.empty() && std::string_view(groups.back().head, r) == head && groups.back().end == i;
                if (same) {
                    groups.back().end = static_cast<uint32_t>(i + 1);
                } else {
                    Run::Group g{{0, 0, 0}, static_cast<uint32_t>(i + 1)};
                    std::copy(head.begin(), head.end(), g.head);
                    groups.push_back(g);
                }
            }
        }
        // The rests laid out in the entries' order (the check reads them in
        // sequence, not from 163,840 scattered token strings).
        size_t total = 0;
        for (const Mixed& m : run.mixed) total += m.length;
        if (total > std::numeric_limits<uint32_t>::max())
            fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: the vocabulary's bytes pass 4 GiB");
        run.rest_bytes.reserve(total);
        for (Mixed& m : run.mixed) {
            const auto rest = rest_of(m);
            m.rest = static_cast<uint32_t>(run.rest_bytes.size());
            run.rest_bytes += rest;
        }
        run.relations.resize(grammar.classes.size());
        for (size_t g = 0; g < grammar.classes.size(); ++g) {
            bool all = true, any = false;
            for (const CharRange& r : k.ranges) {
                all = all && holds(grammar.classes[g], r.first, r.last);
                any = any || grammar.classes[g].overlaps(r.first, r.last);
            }
            run.relations[g] = all ? Relation::superset : any ? Relation::partial : Relation::disjoint;
        }
        // Run classes only make masks faster: one that would take the
        // grammar past its planned memory (grammar_memory.h) is left out,
        // and the states it would have served walk the trie instead.
        if (memory_bytes() + run_bytes(run) > max_run_class_bytes) continue;
        runs_.push_back(std::move(run));
    }
}

size_t RunClasses::run_bytes(const Run& r) {
    // capacity(): what the vectors hold, not only what they use
    return r.pure.capacity() * sizeof(uint64_t) + r.mixed.capacity() * sizeof(Mixed) + r.rest_bytes.capacity() +
           r.relations.capacity() + r.representative.capacity() +
           (r.continued[0].capacity() + r.continued[1].capacity() + r.continued[2].capacity()) * sizeof(Continued) +
           (r.continued_groups[0].capacity() + r.continued_groups[1].capacity() + r.continued_groups[2].capacity()) *
               sizeof(Run::Group) +
           sizeof(Run);
}

size_t RunClasses::memory_bytes() const {
    size_t n = 0;
    for (const Run& r : runs_) n += run_bytes(r);
    return n;
}

}  // namespace waste::grammar
