// memory_plan_test.cpp — the plan's scratch covers what a session's
// workspace really allocates, at every thread count and prefill chunk. Each compute thread has
// its own down-projection lookup table and gate/up rows (model/forward.h), so
// a plan that assumed two threads let `--threads 256` hold memory the budget
// never saw (issue 18). Exact bounds, no tolerance: the plan may over-count
// (stacks, the prefill buffers it sizes by the widest layer) but never under.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/container.h"
#include "model/decoded_experts.h"
#include "model/forward.h"
#include "platform/memory_info.h"
#include "runtime/memory_plan.h"
#include "test_support.h"

namespace {

template <typename T, typename A>
uint64_t bytes_of(const std::vector<T, A>& v) {
    return v.capacity() * sizeof(T);
}

template <typename T>
uint64_t bytes_of(const std::vector<std::vector<T>>& vs) {
    uint64_t sum = vs.capacity() * sizeof(std::vector<T>);
    for (const auto& v : vs) sum += bytes_of(v);
    return sum;
}

uint64_t workspace_bytes(const waste::model::Workspace& ws) {
    uint64_t sum = 0;
    for (const auto* v : {&ws.x, &ws.normed, &ws.attn_out, &ws.ffn_out, &ws.ps, &ws.shared_out, &ws.q, &ws.k, &ws.v,
                          &ws.decay, &ws.gate, &ws.head_out, &ws.beta, &ws.small, &ws.ffn_gate, &ws.ffn_up, &ws.router,
                          &ws.expert_in, &ws.moe_acc, &ws.gate_table, &ws.up_table, &ws.slot_out, &ws.logits,
                          &ws.gate_q_scales, &ws.up_q_scales, &ws.blocks, &ws.in_xs})
        sum += bytes_of(*v);
    for (const auto* v : {&ws.expert_x, &ws.expert_out, &ws.expert_gate, &ws.expert_up}) sum += bytes_of(*v);
    sum += bytes_of(ws.gate_q) + bytes_of(ws.up_q) + bytes_of(ws.in_xu);
    sum += bytes_of(ws.thread_down_xu) + bytes_of(ws.thread_down_xs);
    sum += bytes_of(ws.thread_down_table) + bytes_of(ws.thread_gate) + bytes_of(ws.thread_up);
    sum += bytes_of(ws.thread_down_q) + bytes_of(ws.thread_down_q_scales);
    sum += ws.int8_threads.capacity() * sizeof(waste::model::Workspace::Int8ExpertScratch);
    for (const auto& s : ws.int8_threads)
        sum += bytes_of(s.x) + bytes_of(s.out) + bytes_of(s.g) + bytes_of(s.u) + bytes_of(s.xq) + bytes_of(s.hq) + bytes_of(s.xs) +
               bytes_of(s.hs);
    if (ws.int8_expert) sum += waste::model::DecodedExpert::bytes(ws.lat, ws.inter) + sizeof(waste::model::DecodedExpert);
    sum += bytes_of(ws.trunk_int8.q) + bytes_of(ws.trunk_int8.scale) + bytes_of(ws.trunk_int8.sum);  // the trunk's int8 inputs
    return sum;
}

TEST(MemoryPlan, ScratchCoversTheWorkspaceAtEveryThreadCount) {
    for (const char* name : {"tiny.waste", "tiny-prefix.waste"}) {
        waste::format::ContainerOptions options;
        options.want_direct_io = false;
        const auto container = waste::format::Container::open(waste_test::fixture(name).string(), options);
        const auto memory = waste::platform::query_memory_info();
        uint64_t previous = 0;
        for (unsigned threads : {1u, 2u, 3u, 8u, 64u, 256u}) {
            for (bool int8 : {false, true}) {
                SCOPED_TRACE(std::string(name) + ", threads " + std::to_string(threads) + (int8 ? ", int8" : ", exact"));
                const auto plan = waste::runtime::plan_memory(*container, 256, 0, memory, threads, int8);
                EXPECT_EQ(plan.compute_threads, threads);
                waste::model::Workspace ws(container->config(), *container, threads, plan.prefill_chunk);
                if (int8) ws.enable_int8_tables(*container);
                EXPECT_GE(plan.scratch_bytes, workspace_bytes(ws));
                EXPECT_EQ(plan.prefill_chunk, waste::model::default_prefill_chunk) << "a default budget has room for the default chunk";
                if (!int8) {
                    EXPECT_GT(plan.scratch_bytes, previous) << "the scratch must grow with the compute threads";
                    previous = plan.scratch_bytes;
                }
            }
        }
    }
}

// Workspace::planned_bytes is what a workspace allocates at any chunk: never
// less, and at most the MoE step's per-chunk bookkeeping (which lives on the
// forward's stack frame, not in the workspace) plus 1% more — so a plan that
// forgets a buffer, or one that counts a long chunk's rows twice, fails.
TEST(MemoryPlan, WorkspaceBytesMatchWhatAWorkspaceAllocatesAtEveryChunk) {
    for (const char* name : {"tiny.waste", "tiny-prefix.waste"}) {
        waste::format::ContainerOptions options;
        options.want_direct_io = false;
        const auto container = waste::format::Container::open(waste_test::fixture(name).string(), options);
        const waste::format::ModelConfig& c = container->config();
        for (size_t chunk : {size_t{1}, size_t{64}, size_t{512}, size_t{2048}})
            for (unsigned threads : {1u, 3u})
                for (bool int8 : {false, true})
                    for (size_t rows : {size_t{1}, size_t{8}}) {  // a batched decode step's rows of tables
                    SCOPED_TRACE(std::string(name) + ", chunk " + std::to_string(chunk) + ", threads " + std::to_string(threads) +
                                 (int8 ? ", int8" : ", exact") + ", table rows " + std::to_string(rows));
                    waste::model::Workspace ws(c, *container, threads, chunk, rows);
                    if (int8) ws.enable_int8_tables(*container);
                    const uint64_t planned =
                        waste::model::Workspace::planned_bytes(c, &container->manifest().quant, threads, chunk, int8, rows);
                    const uint64_t held = workspace_bytes(ws);
                    const uint64_t bookkeeping = chunk * (sizeof(std::vector<int>) + 32 * c.top_k);
                    EXPECT_GE(planned, held);
                    EXPECT_LE(planned, held + bookkeeping + held / 100);
                }
    }
}

// The plan's chunk is the machine's choice, never the budget's: its floor is
// the same at every budget. An asked-for chunk is kept, and a smaller one
// lowers the floor by its workspace.
TEST(MemoryPlan, PrefillChunkIsTheSameAtEveryBudgetAndKeptWhenAsked) {
    waste::format::ContainerOptions options;
    options.want_direct_io = false;
    const auto container = waste::format::Container::open(waste_test::fixture("tiny.waste").string(), options);
    const auto memory = waste::platform::query_memory_info();
    waste::runtime::PlanRequest request;
    request.context_length = 256;
    request.compute_threads = 2;
    const auto roomy = waste::runtime::plan_memory(*container, request, memory);
    ASSERT_EQ(roomy.prefill_chunk, waste::model::default_prefill_chunk);
    for (uint64_t budget : {roomy.floor_bytes - 1, roomy.floor_bytes, roomy.floor_bytes * 4}) {
        request.budget_bytes = budget;
        const auto plan = waste::runtime::plan_memory(*container, request, memory);
        EXPECT_EQ(plan.prefill_chunk, roomy.prefill_chunk);
        EXPECT_EQ(plan.floor_bytes, roomy.floor_bytes);
        EXPECT_EQ(plan.budget_ok, budget >= roomy.floor_bytes);
    }
    request.budget_bytes = 0;
    request.prefill_chunk = 64;
    const auto small = waste::runtime::plan_memory(*container, request, memory);
    EXPECT_EQ(small.prefill_chunk, 64u);
    EXPECT_EQ(roomy.floor_bytes - small.floor_bytes, roomy.session_scratch_bytes - small.session_scratch_bytes);
    EXPECT_LT(small.floor_bytes, roomy.floor_bytes);
    request.prefill_chunk = waste::model::max_prefill_chunk + 1;
    EXPECT_THROW(waste::runtime::plan_memory(*container, request, memory), std::exception);
}

// The default budget (memory_plan.h: spare_bytes): every record cached where
// 7/8 of the available RAM holds it, else that 7/8, never below the floor;
// availability never moves the floor or the chunk, and a named budget is
// kept whatever the machine has.
TEST(MemoryPlan, DefaultBudgetIsEverythingWithinWhatTheMachineSpares) {
    waste::format::ContainerOptions options;
    options.want_direct_io = false;
    const auto container = waste::format::Container::open(waste_test::fixture("tiny.waste").string(), options);
    auto plan_with = [&](uint64_t usable, uint64_t available, uint64_t budget = 0, bool int8 = false) {
        waste::platform::MemoryInfo memory;
        memory.physical_bytes = memory.usable_bytes = usable;
        memory.available_bytes = available;
        waste::runtime::PlanRequest request;
        request.context_length = 256;
        request.compute_threads = 2;
        request.budget_bytes = budget;
        request.int8_tables = int8;
        return waste::runtime::plan_memory(*container, request, memory);
    };
    const uint64_t roomy = uint64_t{64} << 30;
    const auto all = plan_with(roomy, roomy);
    ASSERT_LT(all.floor_bytes, all.everything_bytes);
    EXPECT_EQ(all.everything_bytes, all.floor_bytes - all.min_cache_bytes + all.all_experts_bytes);
    EXPECT_EQ(all.recommended_bytes, all.everything_bytes);
    EXPECT_EQ(all.budget_bytes, all.everything_bytes);
    EXPECT_EQ(all.cache_bytes, all.all_experts_bytes);
    EXPECT_STREQ(waste::runtime::recommended_covers(all), "everything");
    // the machine spares less than everything: 7/8 of what is available
    const uint64_t between = (all.floor_bytes + all.everything_bytes) / 2;
    const uint64_t available = between / 7 * 8;
    const auto part = plan_with(roomy, available);
    EXPECT_EQ(part.spare_bytes, available / 8 * 7);
    EXPECT_EQ(part.recommended_bytes, available / 8 * 7);
    EXPECT_LT(part.cache_bytes, all.all_experts_bytes);
    EXPECT_STREQ(waste::runtime::recommended_covers(part), "spare");
    EXPECT_EQ(part.floor_bytes, all.floor_bytes);
    EXPECT_EQ(part.prefill_chunk, all.prefill_chunk);
    // usable RAM bounds the spare too (a cgroup's limit), and unknown
    // availability (macOS) falls back to it
    EXPECT_EQ(plan_with(available, roomy).recommended_bytes, available / 8 * 7);
    EXPECT_EQ(plan_with(available, 0).recommended_bytes, available / 8 * 7);
    // less than the floor to spare: the floor (the open then runs at it)
    const auto tight = plan_with(roomy, all.floor_bytes / 2);
    EXPECT_EQ(tight.recommended_bytes, tight.floor_bytes);
    EXPECT_TRUE(tight.budget_ok);
    EXPECT_STREQ(waste::runtime::recommended_covers(tight), "floor");
    // a named budget is the user's, above the spare or not
    EXPECT_EQ(plan_with(roomy, all.floor_bytes / 2, all.everything_bytes).budget_bytes, all.everything_bytes);
    EXPECT_TRUE(plan_with(roomy, all.floor_bytes / 2, all.everything_bytes).budget_requested);
    // the int8 mode's everything holds every expert decoded too
    const auto int8 = plan_with(roomy, roomy, 0, true);
    ASSERT_GT(int8.all_decoded_bytes, 0u);
    EXPECT_EQ(int8.everything_bytes, int8.floor_bytes - int8.min_cache_bytes + int8.all_experts_bytes + int8.all_decoded_bytes);
    EXPECT_EQ(int8.decoded_bytes, int8.all_decoded_bytes);
}

// The int8 mode's decoded experts (model/decoded_experts.h) get what the
// budget leaves once every record is cached, in whole experts, never more;
// by default all of them when everything fits under the RAM ceiling.
TEST(MemoryPlan, DecodedExpertsTakeWhatTheBudgetLeavesAfterEveryRecord) {
    waste::format::ContainerOptions options;
    options.want_direct_io = false;
    const auto container = waste::format::Container::open(waste_test::fixture("tiny.waste").string(), options);
    const auto memory = waste::platform::query_memory_info();
    const waste::format::ModelConfig& c = container->config();
    const uint64_t each = waste::model::DecodedExpert::held_bytes(c.expert_input(), c.moe_intermediate);
    // at one prefill chunk (the plan's choice would move the floor with the budget)
    auto plan_at = [&](uint64_t budget, bool int8) {
        waste::runtime::PlanRequest request;
        request.context_length = 256;
        request.budget_bytes = budget;
        request.compute_threads = 2;
        request.int8_tables = int8;
        request.prefill_chunk = 64;
        return waste::runtime::plan_memory(*container, request, memory);
    };
    const auto exact = plan_at(1ull << 34, false);
    EXPECT_EQ(exact.decoded_bytes, 0u);
    EXPECT_EQ(exact.all_decoded_bytes, 0u);
    const auto probe = plan_at(1ull << 34, true);
    ASSERT_GT(probe.all_decoded_bytes, 0u);
    EXPECT_EQ(probe.all_decoded_bytes % each, 0u);
    EXPECT_EQ(probe.decoded_bytes, probe.all_decoded_bytes);
    const uint64_t records = probe.floor_bytes - probe.min_cache_bytes + probe.all_experts_bytes;
    for (uint64_t extra : {uint64_t{0}, each - 1, each, 5 * each + 7, probe.all_decoded_bytes, probe.all_decoded_bytes + each}) {
        const auto plan = plan_at(records + extra, true);
        SCOPED_TRACE("extra " + std::to_string(extra));
        EXPECT_EQ(plan.cache_bytes, probe.all_experts_bytes);
        EXPECT_EQ(plan.decoded_bytes, std::min(extra, probe.all_decoded_bytes) / each * each);
        EXPECT_LE(plan.floor_bytes - plan.min_cache_bytes + plan.cache_bytes + plan.decoded_bytes, plan.budget_bytes);
    }
    // below every record: nothing decoded
    EXPECT_EQ(plan_at(records - 1, true).decoded_bytes, 0u);
    // the default budget holds everything decoded when it fits (this fixture is ~1 MB)
    const auto defaults = waste::runtime::plan_memory(*container, 256, 0, memory, 2, true);
    EXPECT_EQ(defaults.decoded_bytes, defaults.all_decoded_bytes);
    EXPECT_EQ(waste::runtime::plan_memory(*container, 256, 0, memory, 2, false).decoded_bytes, 0u);
}

}  // namespace
