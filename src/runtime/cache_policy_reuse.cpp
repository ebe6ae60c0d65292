// cache_policy_reuse.cpp — ours: evict the record that is expected to give
// the fewest hits per unit of cache space-time (hit density, after Beckmann
// et al., "LHD", NSDI 2018), with time counted the way a MoE model uses its
// experts.
//
// Time. A decode token visits every MoE layer once, in order, so a record can
// only be used when its own layer comes round again: a record's age is the
// number of visits of its layer since its last use. A visit of layer L
// begins when an access to L follows an access to another layer, or repeats
// a record already used in the current visit (a one-layer model). The
// period — accesses between two visits of a layer — is learned as a running
// mean.
//
// The class of a record: how often it has been used lately — its use count
// decayed by half every 64 visits of its layer (each use adds 1), in
// half-octave steps (1, 1.4, 2, 2.8, 4, ...). A decayed count estimates a
// rate, so a class means the same thing at token 50 and at token 5000: a
// lifetime count does not (on a long run every record of a small model
// climbs into the top class, and the classes stop telling records apart —
// kimi-mini's 96 records did: docs/bench-log/cache-policies.md, "kimi-mini,
// routing it learned").
//
// The hazard h(c, a): the probability that a record idle for a visits of its
// layer is used at the next one, per class c. It is counted exactly for every
// record ever seen, cached or not: at the start of each visit every record of
// the layer is "at risk" at its age, and those used are the events. Counts
// are halved every 128 visits of each layer on average, so the curve follows
// the text as it changes; a cell with few observations leans on the class
// below at the same age (4 pseudo-observations; class 0 on its average).
//
// Density. Looking ahead over the record's expected residence — R visits, R =
// slots / misses per period, what the cache's own miss rate gives a record
// before it would be evicted anyway — with the discount g = 1 - 1/R per
// visit:
//     hits(a)  = h(a) + (1 - h(a)) g hits(a + 1)        expected hits
//     stay(a)  = (1 - h(a)) g (1 + stay(a + 1))         further periods held
//     density  = hits(age) / (until its layer's next visit + period × stay(age))
// (constant hazard past max_age: geometric tails). The unpinned record of
// lowest density is evicted; ties go to the lower slot. A record of the layer
// being visited now, not used yet in this visit, has what is left of its
// chance now: h × the share of the visit's lookups still to come (the visit's
// length is learned as a running mean) — a visit that is nearly over has
// little chance left to give, and counting it whole kept such records over
// the next layer's, which are about to be asked for.
//
// Measured against LRU, upstream's LFRU and Belady on the Kimi-Linear trace,
// on kimi-mini's own routing and on synthetic traces of other shapes:
// docs/bench-log/cache-policies.md (the latest figures: docs/BENCHMARKS.md).
// The only constants are the class and age resolution, the prior weight and
// the two half-lives; cache-policies.md, "Expert cache policies", says how
// far the hit rates move with them.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <unordered_map>

#include "platform/error.h"
#include "runtime/cache_policy.h"

namespace waste::runtime {
namespace {

constexpr int classes = 16;           // decayed use counts 1, 1.4, 2, 2.8, ..., 181+: half-octave buckets
constexpr int max_age = 32;           // ages >= max_age share one cell (the tail)
constexpr double half_life = 128;     // visits of each layer between halvings of the hazard counts
constexpr double use_half_life = 64;  // visits of its layer between halvings of a record's use count
constexpr double prior_weight = 4;    // pseudo-observations of the class below, per cell

class ReusePolicy final : public CachePolicy {
public:
    explicit ReusePolicy(uint64_t slots) : slot_count_(slots), slot_key_(slots, nullptr), slot_layer_(slots, nullptr), slot_layer_id_(slots, 0) {
        refresh();
    }
    CachePolicyKind kind() const override { return CachePolicyKind::reuse; }

    void on_hit(uint64_t, CacheKey key) override { access(key); }
    void on_miss(CacheKey key) override {
        access(key);
        ++misses_;
    }
    void on_fill(uint64_t slot, CacheKey key) override {
        slot_key_[slot] = &keys_.at(key.packed());
        slot_layer_[slot] = &layers_.at(key.layer);
        slot_layer_id_[slot] = key.layer;
    }
    void on_remove(uint64_t slot, CacheKey) override {
        slot_key_[slot] = nullptr;
        slot_layer_[slot] = nullptr;
    }

    uint64_t choose_victim(const SlotView& view) override {
        if (dirty_) refresh();
        uint64_t best = UINT64_MAX;
        double best_density = 0;
        for (uint64_t s = 0; s < slot_count_; ++s) {
            if (view.pinned(s) || !slot_key_[s]) continue;
            const double d = density(*slot_key_[s], *slot_layer_[s], slot_layer_id_[s]);
            if (best == UINT64_MAX || d < best_density) {
                best_density = d;
                best = s;
            }
        }
        WASTE_CHECK(best != UINT64_MAX);
        return best;
    }

private:
    struct KeyInfo {
        int64_t last_visit = -1;  // visit of its layer at the last use; -1 = never used
        double uses = 0;          // use count, decayed by half every use_half_life visits of its layer
        int cls = 0;
    };
    struct LayerInfo {
        int64_t visits = 0;         // visits begun; the current one is visits - 1
        uint64_t visit_start = 0;   // access clock when the current visit began
        // records per class whose last use was visit v, for the last max_age
        // visits (a ring indexed by v % max_age), and those idle longer
        std::array<std::array<double, max_age>, classes> recent{};
        std::array<double, classes> older{};
    };

    // uses >= 1: floor(2 log2 uses), so 1 -> 0, 1.41 -> 1, 2 -> 2, ...
    static int class_of(double uses) { return std::clamp(static_cast<int>(std::floor(2 * std::log2(uses) + 1e-9)), 0, classes - 1); }

    void begin_visit(LayerInfo& layer) {
        if (visits_ > 0) {  // the visit of the previous layer ended at the access before this one
            const double length = static_cast<double>(clock_ - any_visit_start_);
            visit_length_ += (length - visit_length_) / static_cast<double>(std::min<uint64_t>(visits_, 64));
        }
        ++visits_;
        any_visit_start_ = clock_;
        if (layer.visits > 0) {
            const double gap = static_cast<double>(clock_ - layer.visit_start);
            ++periods_;
            period_ += (gap - period_) / static_cast<double>(std::min<uint64_t>(periods_, 64));
        }
        const int64_t v = layer.visits++;
        layer.visit_start = clock_;
        const int ring = static_cast<int>(v % max_age);
        for (int c = 0; c < classes; ++c) {
            layer.older[c] += layer.recent[c][ring];  // last used max_age visits ago
            layer.recent[c][ring] = 0;
            for (int a = 1; a < max_age; ++a) risk_[c][a] += layer.recent[c][static_cast<int>((v - a) % max_age + max_age) % max_age];
            risk_[c][max_age] += layer.older[c];
        }
        if (++visits_since_decay_ >= half_life * static_cast<double>(layers_.size())) {
            visits_since_decay_ = 0;
            for (auto& row : use_)
                for (double& x : row) x *= 0.5;
            for (auto& row : risk_)
                for (double& x : row) x *= 0.5;
        }
        dirty_ = true;
    }

    void access(CacheKey key) {
        ++clock_;
        LayerInfo& layer = layers_[key.layer];
        KeyInfo& info = keys_[key.packed()];
        if (key.layer != last_layer_ || layer.visits == 0 || info.last_visit == layer.visits - 1) begin_visit(layer);
        last_layer_ = key.layer;
        const int64_t v = layer.visits - 1;
        if (info.last_visit >= 0) {
            const int64_t age = v - info.last_visit;
            if (age < max_age) layer.recent[info.cls][static_cast<int>(info.last_visit % max_age)] -= 1;
            else layer.older[info.cls] -= 1;
            use_[info.cls][std::min<int64_t>(age, max_age)] += 1;
        }
        info.uses = info.last_visit >= 0 ? info.uses * std::exp2(-static_cast<double>(v - info.last_visit) / use_half_life) + 1 : 1;
        info.cls = class_of(info.uses);
        info.last_visit = v;
        layer.recent[info.cls][static_cast<int>(v % max_age)] += 1;
    }

    double density(const KeyInfo& info, const LayerInfo& layer, int32_t layer_id) const {
        const int64_t current = layer.visits - 1;
        const double period = std::max(1.0, period_);
        double until;
        int64_t age;
        if (layer_id == last_layer_ && info.last_visit < current) {  // its layer is being visited now, not used yet
            // what is left of this visit's chance, then the next visits'
            const int a = static_cast<int>(std::min<int64_t>(current - info.last_visit, max_age));
            const int next = std::min(a + 1, max_age);
            const double done = static_cast<double>(clock_ - layer.visit_start + 1);  // lookups of this visit so far
            const double left = std::clamp((visit_length_ - done) / std::max(1.0, visit_length_), 0.0, 1.0);
            const double now = hazard_[info.cls][a] * left;
            const double hits = now + (1 - now) * discount_ * hits_[info.cls][next];
            return hits / (period * (1 - now) * discount_ * (1 + stay_[info.cls][next]) + 1);
        } else {
            until = std::clamp(static_cast<double>(layer.visit_start) + period - static_cast<double>(clock_), 0.0, period);
            age = current + 1 - info.last_visit;
        }
        const int a = static_cast<int>(std::min<int64_t>(age, max_age));
        // + 1: a record holds its slot at least for the access that uses it
        // (without it, a record of the layer being visited, until = 0, in a
        // cache too small to keep anything a period (stay = 0), had an
        // unbounded density whatever its hazard)
        return hits_[info.cls][a] / (until + period * stay_[info.cls][a] + 1);
    }

    void refresh() {
        const double miss_rate = (static_cast<double>(misses_) + 1) / (static_cast<double>(clock_) + 1);
        const double residence = static_cast<double>(slot_count_) / (miss_rate * std::max(1.0, period_));
        const double g = std::clamp(1 - 1 / residence, 0.0, 1.0 - 1e-9);
        discount_ = g;
        double all_use = 0, all_risk = 0;
        for (int c = 0; c < classes; ++c)
            for (int a = 1; a <= max_age; ++a) all_use += use_[c][a], all_risk += risk_[c][a];
        const double overall = (all_use + 0.5) / (all_risk + 1);
        std::array<double, max_age + 1> h{}, below{};
        for (int c = 0; c < classes; ++c) {
            // a cell with few observations leans on the class below at the
            // same age (more uses rarely mean less reuse); class 0 on its own
            // average over all ages
            if (c == 0) {
                double class_use = 0, class_risk = 0;
                for (int a = 1; a <= max_age; ++a) class_use += use_[c][a], class_risk += risk_[c][a];
                below.fill((class_use + prior_weight * overall) / (class_risk + prior_weight));
            }
            for (int a = 1; a <= max_age; ++a)
                h[a] = std::clamp((use_[c][a] + prior_weight * below[a]) / (risk_[c][a] + prior_weight), 1e-9, 1.0);
            below = h;
            hazard_[c] = h;
            const double tail = h[max_age];
            hits_[c][max_age] = tail / (1 - (1 - tail) * g);
            stay_[c][max_age] = (1 - tail) * g / (1 - (1 - tail) * g);
            for (int a = max_age - 1; a >= 1; --a) {
                hits_[c][a] = h[a] + (1 - h[a]) * g * hits_[c][a + 1];
                stay_[c][a] = (1 - h[a]) * g * (1 + stay_[c][a + 1]);
            }
            hits_[c][0] = hits_[c][1];
            stay_[c][0] = stay_[c][1];
        }
        dirty_ = false;
    }

    uint64_t slot_count_ = 0;
    std::vector<KeyInfo*> slot_key_;       // [slots]; pointers into keys_ (stable: node-based map)
    std::vector<LayerInfo*> slot_layer_;   // [slots]; pointers into layers_
    std::vector<int32_t> slot_layer_id_;   // [slots]
    std::unordered_map<uint64_t, KeyInfo> keys_;   // every record ever accessed: at most the container's experts
    std::unordered_map<int32_t, LayerInfo> layers_;
    std::array<std::array<double, max_age + 1>, classes> use_{}, risk_{};   // [class][age], age 0 unused
    std::array<std::array<double, max_age + 1>, classes> hits_{}, stay_{};  // [class][age] from the hazard
    std::array<std::array<double, max_age + 1>, classes> hazard_{};         // [class][age], with its prior
    double discount_ = 0;        // g, per visit
    double visit_length_ = 1;    // running mean of the lookups in one visit of a layer
    uint64_t visits_ = 0, any_visit_start_ = 0;
    uint64_t clock_ = 0, misses_ = 0, periods_ = 0;
    int32_t last_layer_ = INT32_MIN;
    double period_ = 1;
    double visits_since_decay_ = 0;
    bool dirty_ = true;
};

}  // namespace

std::unique_ptr<CachePolicy> make_reuse_policy(uint64_t slots) { return std::make_unique<ReusePolicy>(slots); }

}  // namespace waste::runtime
