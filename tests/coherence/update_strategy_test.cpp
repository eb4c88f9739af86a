// Table-driven tests of the four update strategies (DSOM section 4.2.3, seed
// 000_7b2a075be0870d8f.txt; DESIGN.md), run through the Runtime on host-driver devices.
#include <gtest/gtest.h>

#include <numeric>
#include <utility>
#include <vector>

#include "api/runtime_core.hpp"
#include "coherence/update_strategy.hpp"
#include "device/host/host_platform.hpp"

namespace unimem {
namespace {

constexpr std::uint64_t kSize = 64;

std::shared_ptr<HostKernel> fill_kernel(std::string name, std::byte value) {
  return std::make_shared<HostKernel>(std::move(name), [value](const HostKernelContext& ctx) {
    auto* p = ctx.buffer<std::byte>(0);
    const auto first = ctx.scalar<std::uint64_t>(1);
    const auto last = ctx.scalar<std::uint64_t>(2);
    for (std::uint64_t i = first; i < last; ++i) p[i] = value;
  });
}

// Sums bytes [first, last) of argument 0 into the first byte of argument 3.
std::shared_ptr<HostKernel> sum_kernel(std::string name) {
  return std::make_shared<HostKernel>(std::move(name), [](const HostKernelContext& ctx) {
    const auto* p = ctx.buffer<std::byte>(0);
    const auto first = ctx.scalar<std::uint64_t>(1);
    const auto last = ctx.scalar<std::uint64_t>(2);
    unsigned sum = 0;
    for (std::uint64_t i = first; i < last; ++i) sum += std::to_integer<unsigned>(p[i]);
    ctx.buffer<std::byte>(3)[0] = static_cast<std::byte>(sum & 0xFF);
  });
}

Launch fill(std::size_t device, BufferId b, std::uint64_t first, std::uint64_t last,
            std::byte value, std::string name = "fill") {
  Launch l;
  l.device = device;
  l.kernel = fill_kernel(std::move(name), value);
  l.args = {LaunchArg::of_buffer(b, {}, IntervalSet{{first, last}}), LaunchArg::of_scalar(first),
            LaunchArg::of_scalar(last)};
  return l;
}

Launch sum(std::size_t device, BufferId in, std::uint64_t first, std::uint64_t last, BufferId out) {
  Launch l;
  l.device = device;
  l.kernel = sum_kernel("sum");
  l.args = {LaunchArg::of_buffer(in, IntervalSet{{first, last}}, {}), LaunchArg::of_scalar(first),
            LaunchArg::of_scalar(last), LaunchArg::of_buffer(out, {}, IntervalSet{{0, 1}})};
  return l;
}

struct StrategyRow {
  UpdateStrategy strategy;
  bool peer;
  // Copies right after: host write of the whole buffer, then a kernel on d0 writing [0, 32).
  CopyCount h2d, d2h, d2d;
  AgentMask mask_of_written;  // mask of byte 0 afterwards
};

AgentMask agents(std::initializer_list<Agent> list) {
  AgentMask m;
  for (Agent a : list) m = m.with(a);
  return m;
}

class UpdateStrategyTable : public ::testing::TestWithParam<StrategyRow> {};

TEST_P(UpdateStrategyTable, CopiesAfterHostWriteAndKernelWrite) {
  const StrategyRow& row = GetParam();
  HostDeviceOptions opt;
  opt.peer_copies = row.peer;
  Runtime rt(make_host_devices(3, opt), RuntimeOptions{row.strategy});
  BufferId b = rt.create_buffer(kSize, "data");
  std::vector<std::byte> init(kSize, std::byte{1});
  rt.write_blocking(b, 0, init);
  rt.core().launch(fill(0, b, 0, 32, std::byte{7}));
  rt.finish();
  const TransferStats s = rt.buffer_stats(b);
  EXPECT_EQ(s.host_to_device, row.h2d);
  EXPECT_EQ(s.device_to_host, row.d2h);
  EXPECT_EQ(s.device_to_device, row.d2d);
  EXPECT_EQ(rt.core().valid_agents(b, 0), row.mask_of_written);
  // Whatever moved when, everyone sees the same bytes.
  BufferId out = rt.create_buffer(1, "sum");
  for (std::size_t d = 0; d < 3; ++d) {
    rt.core().launch(sum(d, b, 0, kSize, out));
    std::byte got{};
    rt.read_blocking(out, 0, std::span(&got, 1));
    EXPECT_EQ(std::to_integer<unsigned>(got), (32u * 7u + 32u * 1u) & 0xFF) << "device " << d;
  }
}

const Agent H = kHostAgent, D0 = agent_of_device(0), D1 = agent_of_device(1),
            D2 = agent_of_device(2);

INSTANTIATE_TEST_SUITE_P(
    Strategies, UpdateStrategyTable,
    ::testing::Values(
        // lazy: nothing moves until someone reads.
        StrategyRow{UpdateStrategy::lazy, true, {}, {}, {}, agents({D0})},
        // balance: the kernel's result is written back to the host only.
        StrategyRow{UpdateStrategy::balance, true, {}, {32, 1}, {}, agents({H, D0})},
        // batch: the host write and the kernel result go to every device that holds an
        // allocation for them (BBMM section 8.1; none does here: the kernel's device holds only
        // the bytes it wrote), the kernel result back home.
        StrategyRow{UpdateStrategy::batch, true, {}, {32, 1}, {}, agents({H, D0})},
        StrategyRow{UpdateStrategy::batch, false, {}, {32, 1}, {}, agents({H, D0})},
        // adaptive: lazy until a history repeats.
        StrategyRow{UpdateStrategy::adaptive, true, {}, {}, {}, agents({D0})}),
    [](const ::testing::TestParamInfo<StrategyRow>& param_info) {
      return std::string(to_string(param_info.param.strategy)) +
             (param_info.param.peer ? "_peer" : "_nopeer");
    });

// Batch under partial residency (BBMM section 8.1): a written byte goes to every device whose
// allocations hold it, and only there.
TEST(UpdateStrategy, BatchUpdatesTheDevicesThatHoldTheBytes) {
  Runtime rt(make_host_devices(3), RuntimeOptions{UpdateStrategy::batch});
  BufferId b = rt.create_buffer(kSize, "data");
  BufferId out = rt.create_buffer(1, "sum");
  rt.core().launch(sum(1, b, 0, 16, out));  // d1 holds bytes [0, 16), d2 none
  rt.finish();
  const TransferStats before = rt.buffer_stats(b);
  rt.core().launch(fill(0, b, 0, 32, std::byte{5}));
  rt.finish();
  const TransferStats after = rt.buffer_stats(b);
  EXPECT_EQ(after.device_to_host.bytes - before.device_to_host.bytes, 32u);  // home
  EXPECT_EQ((after.host_to_device.bytes + after.device_to_device.bytes) -
                (before.host_to_device.bytes + before.device_to_device.bytes),
            16u);  // d1's bytes [0, 16)
  const Agent d0 = agent_of_device(0), d1 = agent_of_device(1), d2 = agent_of_device(2);
  EXPECT_TRUE(rt.core().valid_agents(b, 0).contains(d1));
  EXPECT_FALSE(rt.core().valid_agents(b, 0).contains(d2));
  EXPECT_FALSE(rt.core().valid_agents(b, 20).contains(d1));
  EXPECT_TRUE(rt.core().valid_agents(b, 20).contains(d0));
  rt.core().launch(sum(1, b, 0, 16, out));
  std::byte got{};
  rt.read_blocking(out, 0, std::span(&got, 1));
  EXPECT_EQ(std::to_integer<unsigned>(got), 16u * 5u);
}

// The DSOM Fig. 7 pattern: a producer on d0 and a consumer on d1 in a loop. Lazy fetches after
// each production; adaptive learns the sequence and pushes it the moment the producer completes.
TEST(AdaptiveStrategy, LearnsRepeatingLoopAndReplaysEagerly) {
  Runtime rt(make_host_devices(2));  // default strategy: adaptive
  ASSERT_EQ(rt.strategy(), UpdateStrategy::adaptive);
  BufferId a = rt.create_buffer(kSize, "a");
  BufferId out = rt.create_buffer(1, "out");
  for (int it = 0; it < 6; ++it) {
    const auto v = static_cast<std::byte>(it + 1);
    rt.core().launch(fill(0, a, 0, 32, v, "produce"));
    if (it >= 2) {
      // Replayed at submission: d1 already counts as holding the new bytes (copy in flight).
      EXPECT_TRUE(rt.core().valid_agents(a, 0).contains(D1)) << "iteration " << it;
    } else {
      EXPECT_FALSE(rt.core().valid_agents(a, 0).contains(D1)) << "iteration " << it;
    }
    rt.core().launch(sum(1, a, 0, 32, out));
    std::byte got{};
    rt.read_blocking(out, 0, std::span(&got, 1));
    EXPECT_EQ(std::to_integer<unsigned>(got), (32u * static_cast<unsigned>(it + 1)) & 0xFF);
  }
  const TransferStats s = rt.buffer_stats(a);
  EXPECT_EQ(s.replays, 4u);
  EXPECT_EQ(s.mispredictions, 0u);
  EXPECT_EQ(s.prefetch_bytes, 4u * 32u);
  EXPECT_EQ(s.device_to_device.bytes, 6u * 32u);  // no more than lazy
  EXPECT_EQ(s.host_to_device.bytes, 0u);
  EXPECT_EQ(s.prefetch_unread_bytes, 0u);  // every replayed byte was read
}

// After the last iteration of a loop the replay still fires (the runtime cannot know the loop
// ended): its bytes are counted as moved and as unread, and moved minus unread equals lazy.
TEST(AdaptiveStrategy, TrailingReplayIsCountedAsUnread) {
  auto run = [](UpdateStrategy strategy, std::byte& last_seen) {
    Runtime rt(make_host_devices(2), RuntimeOptions{strategy});
    BufferId a = rt.create_buffer(kSize, "a");
    BufferId out = rt.create_buffer(1, "out");
    for (int it = 0; it < 5; ++it) {
      rt.core().launch(fill(0, a, 0, 32, static_cast<std::byte>(it + 1), "produce"));
      rt.core().launch(sum(1, a, 0, 24, out));  // reads 24 of the 32 bytes written
    }
    rt.core().launch(
        fill(0, a, 0, 32, std::byte{9}, "produce"));  // the loop's tail: nobody reads it
    rt.read_blocking(out, 0, std::span(&last_seen, 1));
    return rt.buffer_stats(a);
  };
  std::byte lazy_out{};
  std::byte adaptive_out{};
  const TransferStats lazy = run(UpdateStrategy::lazy, lazy_out);
  const TransferStats adaptive = run(UpdateStrategy::adaptive, adaptive_out);
  EXPECT_EQ(lazy_out, adaptive_out);
  EXPECT_EQ(lazy.device_to_device.bytes, 5u * 24u);
  EXPECT_EQ(lazy.prefetch_unread_bytes, 0u);
  // Learned after two productions; replays after productions 2, 3, 4 (read) and the tail
  // (unread): 4 x 24 bytes copied early.
  EXPECT_EQ(adaptive.replays, 4u);
  EXPECT_EQ(adaptive.prefetch_bytes, 4u * 24u);
  EXPECT_EQ(adaptive.prefetch_unread_bytes, 24u);
  EXPECT_EQ(adaptive.device_to_device.bytes - adaptive.prefetch_unread_bytes,
            lazy.device_to_device.bytes);
}

TEST(AdaptiveStrategy, WrongPredictionCostsBytesOnlyAndStopsReplaying) {
  Runtime rt(make_host_devices(3), RuntimeOptions{UpdateStrategy::adaptive});
  BufferId a = rt.create_buffer(kSize, "a");
  BufferId out = rt.create_buffer(1, "out");
  auto iteration = [&](int it, std::size_t consumer) {
    rt.core().launch(fill(0, a, 0, 32, static_cast<std::byte>(it), "produce"));
    rt.core().launch(sum(consumer, a, 0, 32, out));
    std::byte got{};
    rt.read_blocking(out, 0, std::span(&got, 1));
    EXPECT_EQ(std::to_integer<unsigned>(got), (32u * static_cast<unsigned>(it)) & 0xFF);
  };
  for (int it = 1; it <= 3; ++it) iteration(it, 1);  // learned; iteration 3 replays to d1
  EXPECT_EQ(rt.buffer_stats(a).replays, 1u);
  iteration(4, 2);  // replays to d1 again, but d2 reads: wrong
  iteration(5, 2);  // the wrong guess is noticed here and not replayed
  const TransferStats s = rt.buffer_stats(a);
  EXPECT_EQ(s.replays, 2u);
  EXPECT_EQ(s.mispredictions, 1u);
  EXPECT_EQ(s.device_to_device.bytes, 6u * 32u);  // 5 needed + 1 wasted prediction
  EXPECT_EQ(s.prefetch_unread_bytes, 32u);        // the wasted one, never read on d1
}

TEST(UpdateStrategy, PerBufferOverrideBeatsRuntimeDefault) {
  Runtime rt(make_host_devices(2), RuntimeOptions{UpdateStrategy::lazy});
  BufferId lazy = rt.create_buffer(kSize, "lazy");
  BufferId balanced = rt.create_buffer(kSize, "balanced", UpdateStrategy::balance);
  rt.core().launch(fill(0, lazy, 0, 16, std::byte{3}));
  rt.core().launch(fill(0, balanced, 0, 16, std::byte{3}));
  rt.finish();
  EXPECT_EQ(rt.buffer_stats(lazy).device_to_host.bytes, 0u);
  EXPECT_EQ(rt.buffer_stats(balanced).device_to_host.bytes, 16u);
  rt.set_buffer_strategy(lazy, UpdateStrategy::batch);
  rt.set_buffer_strategy(balanced, std::nullopt);
  rt.core().launch(fill(0, lazy, 16, 32, std::byte{3}));
  rt.core().launch(fill(0, balanced, 16, 32, std::byte{3}));
  rt.finish();
  EXPECT_EQ(rt.buffer_stats(lazy).device_to_host.bytes, 16u);
  EXPECT_EQ(rt.buffer_stats(lazy).host_to_device.bytes, 0u);       // d1 holds none of it
  EXPECT_EQ(rt.buffer_stats(balanced).device_to_host.bytes, 16u);  // now lazy: no new copy
  EXPECT_EQ(parse_update_strategy("adaptive"), UpdateStrategy::adaptive);
  EXPECT_EQ(parse_update_strategy("eager"), std::nullopt);
}

// UpdatePolicy alone: each strategy's post-write copies, in issue order, without devices.
TEST(UpdatePolicy, PostWriteCopiesOfEachStrategy) {
  const UpdatePolicy policy(kSize, 3);
  AdaptiveHistory history;
  const IntervalSet w0{{0, 16}};
  const IntervalSet w2{{32, 40}};
  const std::vector<std::pair<Agent, IntervalSet>> writes{{D0, w0}, {D2, w2}};
  auto copies = [&](UpdateStrategy s) {
    return policy.after_device_writes(s, writes, "k", history).copies;
  };
  EXPECT_TRUE(copies(UpdateStrategy::lazy).empty());
  EXPECT_EQ(copies(UpdateStrategy::balance), (std::vector<EagerCopy>{{H, w0}, {H, w2}}));
  EXPECT_EQ(copies(UpdateStrategy::batch), (std::vector<EagerCopy>{{H, w0},
                                                                   {D0, w0},
                                                                   {D1, w0},
                                                                   {D2, w0},  //
                                                                   {H, w2},
                                                                   {D0, w2},
                                                                   {D1, w2},
                                                                   {D2, w2}}));
  EXPECT_TRUE(policy.after_host_write(UpdateStrategy::lazy, w0).copies.empty());
  EXPECT_TRUE(policy.after_host_write(UpdateStrategy::balance, w0).copies.empty());
  EXPECT_TRUE(policy.after_host_write(UpdateStrategy::adaptive, w0).copies.empty());
  EXPECT_EQ(policy.after_host_write(UpdateStrategy::batch, w0).copies,
            (std::vector<EagerCopy>{{D0, w0}, {D1, w0}, {D2, w0}}));
  EXPECT_FALSE(policy.after_device_writes(UpdateStrategy::batch, writes, "k", history).replay);
}

// adaptive opens a recording per kernel x writers and, once the same reads followed two runs,
// replays them; entries that no longer fit the buffer (or name an unknown agent) are dropped.
TEST(UpdatePolicy, AdaptiveReplaysTheLearnedReadsThatFit) {
  const UpdatePolicy policy(kSize, 2);
  AdaptiveHistory history;
  const std::vector<std::pair<Agent, IntervalSet>> writes{{D0, IntervalSet{{0, 32}}}};
  const IntervalSet read{{8, 24}};
  const IntervalSet outside{{60, 70}};
  for (int run = 0; run < 2; ++run) {
    const PostWriteActions a =
        policy.after_device_writes(UpdateStrategy::adaptive, writes, "produce", history);
    EXPECT_FALSE(a.replay) << run;
    EXPECT_TRUE(a.copies.empty()) << run;
    history.observe_read(D1, read, read);
    history.observe_read(D2, read, read);  // agent 3: no such device for this policy
    history.observe_read(H, outside, outside);
  }
  AdaptiveHistory twin = history;
  const PostWriteActions a =
      policy.after_device_writes(UpdateStrategy::adaptive, writes, "produce", history);
  EXPECT_TRUE(a.replay);
  EXPECT_EQ(a.copies, (std::vector<EagerCopy>{{D1, read}}));
  // The same copies read in place (SharedBuffer's path): the prediction's demands that fit.
  const DemandSequence* predicted = policy.adaptive_prediction(writes, "produce", twin);
  ASSERT_NE(predicted, nullptr);
  std::vector<EagerCopy> fitting;
  for (const Demand& d : *predicted) {
    if (policy.replays(d)) fitting.push_back({d.agent, d.bytes});
  }
  EXPECT_EQ(fitting, a.copies);
  EXPECT_EQ(predicted->size(), 3U);  // two of them do not fit: an unknown agent, outside
  // Another kernel has no history yet.
  EXPECT_FALSE(
      policy.after_device_writes(UpdateStrategy::adaptive, writes, "other", history).replay);
}

}  // namespace
}  // namespace unimem
