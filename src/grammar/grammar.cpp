#include "grammar/grammar.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "platform/error.h"

namespace waste::grammar {

namespace {

constexpr uint32_t surrogate_first = 0xD800, surrogate_last = 0xDFFF;

// Sorted, merged, surrogates cut out.
std::vector<CharRange> normalise(std::vector<CharRange> ranges) {
    std::vector<CharRange> cut;
    for (CharRange r : ranges) {
        r.last = std::min(r.last, max_code_point);
        if (r.first > r.last) continue;
        if (r.first < surrogate_first && r.last > surrogate_last) {
            cut.push_back({r.first, surrogate_first - 1});
            cut.push_back({surrogate_last + 1, r.last});
        } else if (r.first >= surrogate_first && r.last <= surrogate_last) {
            continue;
        } else if (r.first >= surrogate_first && r.first <= surrogate_last) {
            cut.push_back({surrogate_last + 1, r.last});
        } else if (r.last >= surrogate_first && r.last <= surrogate_last) {
            cut.push_back({r.first, surrogate_first - 1});
        } else {
            cut.push_back(r);
        }
    }
    return merged_ranges(std::move(cut));
}

std::string escape_code_point(uint32_t c, bool in_class) {
    if (c == '"' || c == '\\' || (in_class && (c == ']' || c == '-' || c == '^' || c == '[')))
        return fmt::format("\\{}", static_cast<char>(c));
    if (c == '\n') return "\\n";
    if (c == '\r') return "\\r";
    if (c == '\t') return "\\t";
    if (c < 0x20 || c == 0x7F) return fmt::format("\\x{:02X}", c);
    if (c < 0x80) return std::string(1, static_cast<char>(c));
    if (c <= 0xFFFF) return fmt::format("\\u{:04X}", c);
    return fmt::format("\\U{:08X}", c);
}

}  // namespace

std::vector<CharRange> merged_ranges(std::vector<CharRange> ranges) {
    std::sort(ranges.begin(), ranges.end(), [](CharRange a, CharRange b) { return a.first < b.first; });
    std::vector<CharRange> merged;
    for (CharRange r : ranges) {
        if (!merged.empty() && r.first <= merged.back().last + 1)
            merged.back().last = std::max(merged.back().last, r.last);
        else
            merged.push_back(r);
    }
    return merged;
}

std::vector<CharRange> complement_ranges(const std::vector<CharRange>& merged) {
    std::vector<CharRange> out;
    uint32_t next = 0;
    for (CharRange r : merged) {
        if (r.first > next) out.push_back({next, r.first - 1});
        next = r.last + 1;
    }
    if (next <= max_code_point) out.push_back({next, max_code_point});
    return out;
}

bool CharClass::contains(uint32_t c) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), c, [](uint32_t v, CharRange r) { return v < r.first; });
    return it != ranges.begin() && c <= std::prev(it)->last;
}

bool CharClass::overlaps(uint32_t first, uint32_t last) const {
    // the first range that ends at or after `first`
    auto it = std::lower_bound(ranges.begin(), ranges.end(), first, [](CharRange r, uint32_t v) { return r.last < v; });
    return it != ranges.end() && it->first <= last;
}

uint32_t GrammarBuilder::rule(const std::string& name) {
    if (auto it = index_.find(name); it != index_.end()) return it->second;
    if (names_.size() >= max_grammar_rules)
        fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: more than {} rules (at rule '{}')", max_grammar_rules, name);
    const auto id = static_cast<uint32_t>(names_.size());
    names_.push_back(name);
    index_.emplace(name, id);
    bodies_.emplace_back();
    defined_.push_back(false);
    return id;
}

uint32_t GrammarBuilder::generated_rule(const std::string& parent) {
    std::string name;
    do name = fmt::format("{}-{}", parent, ++generated_);
    while (index_.count(name));
    return rule(name);
}

void GrammarBuilder::charge(size_t elements, const std::string& where) {
    elements_ += elements;
    if (elements_ > max_grammar_elements)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: the grammar grows past {} elements (repetition counts multiply)", where,
             max_grammar_elements);
}

void GrammarBuilder::define(uint32_t rule, std::vector<Sequence> alternatives, const std::string& where) {
    if (defined_[rule]) fail(WASTE_ERR_INVALID_ARGUMENT, "{}: rule '{}' is defined twice", where, names_[rule]);
    size_t size = 0;
    for (const auto& a : alternatives) size += a.size() + 1;
    charge(size, where);
    bodies_[rule] = std::move(alternatives);
    defined_[rule] = true;
}

uint32_t GrammarBuilder::char_class(std::vector<CharRange> ranges, bool negated) {
    auto set = normalise(std::move(ranges));
    if (negated) set = normalise(complement_ranges(set));
    std::vector<std::pair<uint32_t, uint32_t>> key;
    for (auto r : set) key.emplace_back(r.first, r.last);
    if (auto it = class_index_.find(key); it != class_index_.end()) return it->second;
    const auto id = static_cast<uint32_t>(classes_.size());
    classes_.push_back(CharClass{std::move(set)});
    class_index_.emplace(std::move(key), id);
    return id;
}

void GrammarBuilder::repeat(const std::string& parent, Item item, size_t min, long long max, Sequence& out,
                            const std::string& where) {
    if (min > max_repetition_count || max > static_cast<long long>(max_repetition_count))
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: a repetition count above {}", where, max_repetition_count);
    if (max >= 0 && static_cast<long long>(min) > max)
        fail(WASTE_ERR_INVALID_ARGUMENT, "{}: repetition {{{},{}}} has min above max", where, min, max);
    charge(min, where);
    for (size_t i = 0; i < min; ++i) out.push_back(item);
    if (max < 0) {
        // star ::= item star | ""   (right recursion: the matcher's tail call keeps stacks flat)
        const uint32_t star = generated_rule(parent);
        define(star, {{item, Item{true, star}}, {}}, where);
        out.push_back(Item{true, star});
        return;
    }
    // (item (item (...)?)?)? nested max - min deep: linear in the count.
    uint32_t inner = 0;
    bool has_inner = false;
    for (long long i = max - static_cast<long long>(min); i > 0; --i) {
        const uint32_t optional = generated_rule(parent);
        Sequence body{item};
        if (has_inner) body.push_back(Item{true, inner});
        define(optional, {body, {}}, where);
        inner = optional;
        has_inner = true;
    }
    if (has_inner) out.push_back(Item{true, inner});
}

Grammar GrammarBuilder::finish(const std::string& root_name) {
    auto root = index_.find(root_name);
    if (root == index_.end() || !defined_[root->second])
        fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: no rule '{}' (the root) is defined", root_name);
    Grammar g;
    g.root = root->second;
    g.rule_names = names_;
    g.classes = classes_;
    g.alternatives.resize(names_.size());
    for (size_t r = 0; r < names_.size(); ++r) {
        if (!defined_[r]) fail(WASTE_ERR_INVALID_ARGUMENT, "grammar: rule '{}' is used but never defined", names_[r]);
        for (const auto& seq : bodies_[r]) {
            g.alternatives[r].push_back(static_cast<int32_t>(g.elements.size()));
            for (const Item& item : seq)
                g.elements.push_back(Element{item.is_rule ? ElementKind::rule : ElementKind::chars, item.index});
            g.elements.push_back(Element{ElementKind::end, 0});
        }
    }
    check_grammar(g);
    return g;
}

void check_grammar(const Grammar& g) {
    const size_t rules = g.alternatives.size();
    // Nullable and productive rules: fixed points over the rules (each pass
    // is linear; at most `rules` passes change anything).
    std::vector<bool> nullable(rules, false), productive(rules, false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < rules; ++r) {
            for (int32_t start : g.alternatives[r]) {
                bool all_nullable = true, all_productive = true;
                for (int32_t p = start; g.elements[p].kind != ElementKind::end; ++p) {
                    const Element& e = g.elements[p];
                    if (e.kind == ElementKind::chars) {
                        all_nullable = false;
                        if (g.classes[e.index].ranges.empty()) all_productive = false;
                    } else {
                        all_nullable = all_nullable && nullable[e.index];
                        all_productive = all_productive && productive[e.index];
                    }
                }
                if (all_nullable && !nullable[r]) nullable[r] = changed = true;
                if (all_productive && !productive[r]) productive[r] = changed = true;
            }
        }
    }
    if (!productive[g.root])
        fail(WASTE_ERR_INVALID_ARGUMENT,
             "grammar: rule '{}' (the root) derives no finite string: the language is empty", g.rule_names[g.root]);
    // Left recursion: a cycle in "r can begin with s" (through nullable prefixes).
    std::vector<std::vector<uint32_t>> left(rules);
    for (size_t r = 0; r < rules; ++r)
        for (int32_t start : g.alternatives[r])
            for (int32_t p = start; g.elements[p].kind == ElementKind::rule; ++p) {
                left[r].push_back(g.elements[p].index);
                if (!nullable[g.elements[p].index]) break;
            }
    std::vector<uint8_t> colour(rules, 0);  // 0 new, 1 on the path, 2 done
    for (size_t r0 = 0; r0 < rules; ++r0) {
        if (colour[r0]) continue;
        // iterative DFS (a grammar of 65,536 rules must not overflow the C stack)
        std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(r0), 0}};
        colour[r0] = 1;
        while (!path.empty()) {
            auto& [r, next] = path.back();
            if (next == left[r].size()) {
                colour[r] = 2;
                path.pop_back();
                continue;
            }
            const uint32_t s = left[r][next++];
            if (colour[s] == 1)
                fail(WASTE_ERR_INVALID_ARGUMENT,
                     "grammar: rule '{}' is left-recursive (it can begin with itself through '{}'); rewrite it with "
                     "repetition, e.g. list ::= item (\",\" item)*",
                     g.rule_names[s], g.rule_names[r]);
            if (colour[s] == 0) {
                colour[s] = 1;
                path.emplace_back(s, 0);
            }
        }
    }
}

std::string to_gbnf(const Grammar& g) {
    std::string out;
    for (size_t r = 0; r < g.alternatives.size(); ++r) {
        out += g.rule_names[r] + " ::=";
        bool first = true;
        for (int32_t start : g.alternatives[r]) {
            out += first ? " " : " | ";
            first = false;
            bool empty = true;
            for (int32_t p = start; g.elements[p].kind != ElementKind::end; ++p) {
                if (!empty) out += ' ';
                empty = false;
                const Element& e = g.elements[p];
                if (e.kind == ElementKind::rule) {
                    out += g.rule_names[e.index];
                    continue;
                }
                const auto& ranges = g.classes[e.index].ranges;
                if (ranges.size() == 1 && ranges[0].first == ranges[0].last) {
                    out += '"' + escape_code_point(ranges[0].first, false) + '"';
                    continue;
                }
                out += '[';
                for (auto range : ranges) {
                    out += escape_code_point(range.first, true);
                    if (range.last != range.first) out += '-' + escape_code_point(range.last, true);
                }
                out += ']';
            }
            if (empty) out += "\"\"";
        }
        out += '\n';
    }
    return out;
}

}  // namespace waste::grammar
