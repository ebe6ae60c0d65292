#include "grammar/byte_matcher.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "grammar/grammar_memory.h"
#include "platform/error.h"

namespace waste::grammar {

ByteMatcher::ByteMatcher(const Grammar& grammar) : grammar_(grammar) {
    nodes_.push_back(Node{-1, -1, 0});  // 0: the empty stack
    std::vector<int32_t> stacks;
    for (int32_t start : grammar_.alternatives[grammar_.root]) expand(start, -1, stacks);
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    // check_grammar proved the root productive, so some stack exists
    WASTE_CHECK(!stacks.empty());
    initial_ = intern(std::move(stacks), 0, 0, 0);
}

int32_t ByteMatcher::node(int32_t position, int32_t parent) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(position)) << 32) | static_cast<uint32_t>(parent);
    if (auto it = node_index_.find(key); it != node_index_.end()) return it->second;
    const uint32_t depth = parent >= 0 ? nodes_[static_cast<size_t>(parent)].depth + 1 : 1;
    const auto id = static_cast<int32_t>(nodes_.size());
    grow(sizeof(Node) + 32);  // the node and its hash entry
    nodes_.push_back(Node{position, parent, depth});
    node_index_.emplace(key, id);
    return id;
}

void ByteMatcher::expand(int32_t position, int32_t parent, std::vector<int32_t>& out) {
    // An explicit work list: a chain of nullable rules must not recurse on the C stack.
    std::vector<std::pair<int32_t, int32_t>> work{{position, parent}};
    std::unordered_set<uint64_t> seen;
    while (!work.empty()) {
        auto [p, below] = work.back();
        work.pop_back();
        const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(p)) << 32) | static_cast<uint32_t>(below);
        if (!seen.insert(key).second) continue;  // the same (position, parent): the same stacks
        const Element& e = grammar_.elements[static_cast<size_t>(p)];
        if (e.kind == ElementKind::end) {
            if (below < 0) {
                out.push_back(0);
            } else {
                const Node& n = nodes_[static_cast<size_t>(below)];
                work.emplace_back(n.position, n.parent);
            }
        } else if (e.kind == ElementKind::chars) {
            out.push_back(node(p, below));
        } else {
            int32_t ret = below;
            if (grammar_.elements[static_cast<size_t>(p) + 1].kind != ElementKind::end) {
                if (below >= 0 && nodes_[static_cast<size_t>(below)].depth >= max_stack_depth) continue;  // too deep
                ret = node(p + 1, below);
            }
            for (int32_t start : grammar_.alternatives[e.index]) work.emplace_back(start, ret);
        }
        if (out.size() > max_stacks_per_state * 4) return;  // the caller refuses the state
    }
}

int32_t ByteMatcher::intern(std::vector<int32_t> stacks, uint32_t partial, uint8_t remaining, uint8_t length) {
    std::string key(stacks.size() * sizeof(int32_t) + 6, '\0');
    std::memcpy(key.data(), stacks.data(), stacks.size() * sizeof(int32_t));
    char* tail = key.data() + stacks.size() * sizeof(int32_t);
    std::memcpy(tail, &partial, 4);
    tail[4] = static_cast<char>(remaining);
    tail[5] = static_cast<char>(length);
    if (auto it = state_index_.find(key); it != state_index_.end()) return it->second;
    const auto id = static_cast<int32_t>(states_.size());
    grow(key.size() * 2 + sizeof(State) + 64);
    state_index_.emplace(std::move(key), id);
    State s;
    s.stacks = std::move(stacks);
    s.partial = partial;
    s.remaining = remaining;
    s.length = length;
    states_.push_back(std::move(s));
    return id;
}

void ByteMatcher::allocate_table(State& s) {
    grow(256 * sizeof(int32_t));
    s.next = std::make_unique<int32_t[]>(256);
    std::fill(s.next.get(), s.next.get() + 256, unknown);
}

void ByteMatcher::grow(size_t bytes) {
    // Checked before the structure grows, so a refusal leaves it whole.
    if (memory_ + bytes > max_automaton_bytes)
        fail(WASTE_ERR_BUDGET,
             "grammar: masking one token would take the grammar's automaton past {} MiB ({} states): the grammar branches "
             "too much over this vocabulary to be masked within its planned memory",
             max_automaton_bytes >> 20, states_.size());
    memory_ += bytes;
}

int32_t ByteMatcher::compute_step(int32_t state, uint8_t byte) {
    // copies: intern() may grow states_ and move what a reference points at
    const std::vector<int32_t> stacks = states_[static_cast<size_t>(state)].stacks;
    uint32_t value = states_[static_cast<size_t>(state)].partial;
    uint8_t remaining = states_[static_cast<size_t>(state)].remaining;
    uint8_t length = states_[static_cast<size_t>(state)].length;
    if (remaining == 0) {
        if (byte < 0x80) {
            value = byte;
            length = 1;
        } else if (byte >= 0xC2 && byte <= 0xDF) {
            value = byte & 0x1Fu, remaining = 1, length = 2;
        } else if (byte >= 0xE0 && byte <= 0xEF) {
            value = byte & 0x0Fu, remaining = 2, length = 3;
        } else if (byte >= 0xF0 && byte <= 0xF4) {
            value = byte & 0x07u, remaining = 3, length = 4;
        } else {
            return dead;  // a continuation byte or one UTF-8 never uses
        }
    } else {
        if ((byte & 0xC0) != 0x80) return dead;
        value = (value << 6) | (byte & 0x3Fu);
        --remaining;
    }
    if (remaining > 0) {
        // The code points this prefix can still become, cut to the valid ones of its length.
        const uint32_t shift = 6u * remaining;
        const uint32_t first = std::max(value << shift, utf8_smallest_of_length[length]);
        const uint32_t last = std::min((value << shift) | ((1u << shift) - 1), max_code_point);
        if (first > last) return dead;
        std::vector<int32_t> kept;
        for (int32_t id : stacks) {
            if (id == 0) continue;
            const Element& e = grammar_.elements[static_cast<size_t>(nodes_[static_cast<size_t>(id)].position)];
            if (grammar_.classes[e.index].overlaps(first, last)) kept.push_back(id);
        }
        if (kept.empty()) return dead;
        return intern(std::move(kept), value, remaining, length);
    }
    if (value < utf8_smallest_of_length[length] || (value >= 0xD800 && value <= 0xDFFF) || value > max_code_point) return dead;
    std::vector<int32_t> next;
    for (int32_t id : stacks) {
        if (id == 0) continue;
        const Node n = nodes_[static_cast<size_t>(id)];
        const Element& e = grammar_.elements[static_cast<size_t>(n.position)];
        if (grammar_.classes[e.index].contains(value)) expand(n.position + 1, n.parent, next);
        if (next.size() > max_stacks_per_state * 4) return dead;
    }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    if (next.empty() || next.size() > max_stacks_per_state) return dead;
    return intern(std::move(next), 0, 0, 0);
}

int32_t ByteMatcher::walk(int32_t state, std::string_view bytes) {
    for (char c : bytes) {
        if (state == dead) return dead;
        state = step(state, static_cast<uint8_t>(c));
    }
    return state;
}

bool ByteMatcher::can_end(int32_t state) const {
    const State& s = states_[static_cast<size_t>(state)];
    return s.remaining == 0 && !s.stacks.empty() && s.stacks[0] == 0;
}

bool ByteMatcher::must_end(int32_t state) const {
    const State& s = states_[static_cast<size_t>(state)];
    return s.remaining == 0 && s.stacks.size() == 1 && s.stacks[0] == 0;
}

int32_t ByteMatcher::rebuilt(int32_t state) {
    // The state's stacks as position lists (top first), then everything afresh.
    const State& old = states_[static_cast<size_t>(state)];
    std::vector<std::vector<int32_t>> chains;
    for (int32_t id : old.stacks) {
        std::vector<int32_t> chain;
        for (int32_t n = id; n > 0; n = nodes_[static_cast<size_t>(n)].parent) {
            chain.push_back(nodes_[static_cast<size_t>(n)].position);
            if (nodes_[static_cast<size_t>(n)].parent < 0) break;
        }
        chains.push_back(std::move(chain));
    }
    const uint32_t partial = old.partial;
    const uint8_t remaining = old.remaining, length = old.length;
    nodes_.clear();
    node_index_.clear();
    states_.clear();
    state_index_.clear();
    memory_ = 0;
    nodes_.push_back(Node{-1, -1, 0});
    std::vector<int32_t> stacks;
    for (int32_t start : grammar_.alternatives[grammar_.root]) expand(start, -1, stacks);
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    initial_ = intern(std::move(stacks), 0, 0, 0);
    std::vector<int32_t> again;
    for (const auto& chain : chains) {
        int32_t n = chain.empty() ? 0 : -1;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) n = node(*it, n);
        again.push_back(n);
    }
    std::sort(again.begin(), again.end());
    return intern(std::move(again), partial, remaining, length);
}

}  // namespace waste::grammar
