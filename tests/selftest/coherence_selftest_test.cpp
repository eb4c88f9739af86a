// The randomized differential checker (selftest/coherence_selftest.hpp) with fixed seeds: every
// strategy, 1..16 devices, with and without peer copies and device memory caps. Reproduce a
// failure with `unimem selftest coherence --seed S --ops N --devices D --buffers B --strategy X
// [--no-peer] [--max-buffer-size M --device-memory C]` (the JSON in the failure names them).
#include "selftest/coherence_selftest.hpp"

#include <gtest/gtest.h>

namespace unimem {
namespace {

CoherenceSelftestResult expect_ok(const CoherenceSelftestOptions& o) {
  CoherenceSelftestResult r = run_coherence_selftest(o);
  SCOPED_TRACE(r.to_json(o));
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.mismatched_bytes, 0u);
  if (o.strategy == UpdateStrategy::lazy) {
    EXPECT_EQ(r.bytes_copied, r.minimum_bytes);
  }
  if (o.strategy == UpdateStrategy::adaptive && o.peer_copies) {
    EXPECT_EQ(r.bytes_copied, r.minimum_bytes + r.prefetch_unread_bytes);
  }
  EXPECT_TRUE(r.ok);
  EXPECT_GT(r.launches, 0u);
  return r;
}

class CoherenceSelftest : public ::testing::TestWithParam<UpdateStrategy> {};

TEST_P(CoherenceSelftest, RandomProgramsMatchFlatMemory) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    CoherenceSelftestOptions o;
    o.seed = seed;
    o.ops = 150;
    o.devices = 1 + (seed * 5) % 16;
    o.buffers = 1 + seed % 4;
    o.strategy = GetParam();
    o.peer_copies = seed % 3 != 0;
    expect_ok(o);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, CoherenceSelftest,
                         ::testing::Values(UpdateStrategy::lazy, UpdateStrategy::balance,
                                           UpdateStrategy::batch, UpdateStrategy::adaptive),
                         [](const ::testing::TestParamInfo<UpdateStrategy>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

// Host reads through the home copy (RuntimeOptions::direct_host_reads off): stale bytes are
// copied home once and read from there afterwards, and the oracle counts them that way.
TEST_P(CoherenceSelftest, RandomProgramsReadingThroughTheHomeCopyMatchFlatMemory) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    CoherenceSelftestOptions o;
    o.seed = 500 + seed;
    o.ops = 150;
    o.devices = 1 + seed % 4;
    o.buffers = 1 + seed % 3;
    o.strategy = GetParam();
    o.peer_copies = seed % 3 != 0;
    o.direct_reads = false;
    EXPECT_EQ(expect_ok(o).direct_read_bytes, 0u);
  }
}

// The direct path is taken: under lazy, some host reads copy device bytes straight to the reader,
// and others take home bytes; on 1..4 devices, with and without peer copies.
TEST(CoherenceSelftest, LazyHostReadsCopyDeviceBytesStraightToTheReader) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    CoherenceSelftestOptions o;
    o.seed = 700 + seed;
    o.ops = 200;
    o.devices = 1 + seed % 4;
    o.buffers = 2;
    o.peer_copies = seed % 2 == 0;
    const CoherenceSelftestResult r = run_coherence_selftest(o);
    SCOPED_TRACE(r.to_json(o));
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.bytes_copied, r.minimum_bytes);
    EXPECT_GT(r.direct_read_bytes, 0u);
    EXPECT_GT(r.home_read_bytes, 0u);
  }
}

// Cycles of launches with repeat tokens take the runtime's repeat path, and under lazy and
// adaptive many of the repeats defer their hazard records; no byte is wrong and lazy copies the
// minimum. On 1..3 devices.
TEST(CoherenceSelftest, CyclesRepeatAndDeferTheirRecords) {
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    for (std::size_t devices = 1; devices <= 3; ++devices) {
      CoherenceSelftestOptions o;
      o.seed = 900 + devices;
      o.ops = 600;
      o.devices = devices;
      o.strategy = strategy;
      const CoherenceSelftestResult r = run_coherence_selftest(o);
      SCOPED_TRACE(r.to_json(o));
      EXPECT_TRUE(r.ok);
      if (strategy == UpdateStrategy::lazy) {
        EXPECT_EQ(r.bytes_copied, r.minimum_bytes);
      }
      EXPECT_GT(r.cycle_launches, 0u);
      EXPECT_GT(r.repeated_launches, 0u);
      EXPECT_GT(r.deferred_record_launches, 0u);
      EXPECT_LE(r.deferred_record_launches, r.repeated_launches);
    }
  }
}

// A seed whose cycles include out-of-core partitions under a cap: their boxes replace the boxes
// they meet, so they must not take the repeat path (RuntimeCore::launch_partitioned ignores their
// token); with it, 74368 bytes were wrong.
TEST(CoherenceSelftest, CyclesOfOutOfCorePartitionsUnderACapMatchFlatMemory) {
  CoherenceSelftestOptions o;
  o.seed = 104;
  o.ops = 5000;
  o.devices = 3;
  o.strategy = UpdateStrategy::lazy;
  o.max_buffer_size = 4096;
  o.device_memory = 12 * 1024;
  const CoherenceSelftestResult r = run_coherence_selftest(o);
  SCOPED_TRACE(r.to_json(o));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mismatched_bytes, 0u);
  EXPECT_GT(r.cycle_launches, 0u);
  EXPECT_GT(r.evictions, 0u);
}

// Under a device memory cap of 3 buffers (the most a kernel uses), with partial residency: boxes
// merge and grow, most launches evict, and no byte is ever wrong.
TEST_P(CoherenceSelftest, RandomProgramsUnderATightDeviceMemoryCapMatchFlatMemory) {
  std::uint64_t evictions = 0;
  std::uint64_t relocated = 0;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    CoherenceSelftestOptions o;
    o.seed = 1000 + seed;
    o.ops = 200;
    o.devices = seed;  // 1..16
    o.buffers = 2 + seed % 5;
    o.max_buffer_size = 256;
    o.device_memory = 3 * o.max_buffer_size;
    o.strategy = GetParam();
    o.peer_copies = seed % 3 != 0;
    const CoherenceSelftestResult r = run_coherence_selftest(o);
    SCOPED_TRACE(r.to_json(o));
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.mismatched_bytes, 0u);
    EXPECT_TRUE(r.ok);
    EXPECT_LE(r.peak_device_bytes, o.device_memory);
    evictions += r.evictions;
    relocated += r.relocated_bytes;
  }
  EXPECT_GT(evictions, 0u);
  EXPECT_GT(relocated, 0u);  // boxes merged (their old boxes retired) under the cap too
}

// The adaptive accounting above is only a check when replays happen and some miss: make sure
// these seeds produce both (a 3-device loop-heavy program).
TEST(CoherenceSelftest, AdaptiveSeedsReplayAndSomeReplaysGoUnread) {
  std::uint64_t replays = 0;
  std::uint64_t unread = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    CoherenceSelftestOptions o;
    o.seed = seed;
    o.ops = 400;
    o.devices = 3;
    o.buffers = 2;
    o.strategy = UpdateStrategy::adaptive;
    const CoherenceSelftestResult r = run_coherence_selftest(o);
    SCOPED_TRACE(r.to_json(o));
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.bytes_copied, r.minimum_bytes + r.prefetch_unread_bytes);
    replays += r.replays;
    unread += r.prefetch_unread_bytes;
  }
  EXPECT_GT(replays, 0u);
  EXPECT_GT(unread, 0u);
}

TEST(CoherenceSelftest, SameSeedSameProgram) {
  CoherenceSelftestOptions o;
  o.seed = 99;
  o.ops = 120;
  const auto a = run_coherence_selftest(o);
  auto b = run_coherence_selftest(o);
  // Everything the program decides is the same. When merged-away boxes are freed depends on when
  // the operations still using them finish (timing), so the peak and the reclaims may differ.
  EXPECT_EQ(a.reclaims, 0u);  // no cap: nothing needs reclaiming
  b.peak_device_bytes = a.peak_device_bytes;
  b.reclaims = a.reclaims;
  EXPECT_EQ(a.to_json(o), b.to_json(o));
  o.seed = 100;
  EXPECT_NE(run_coherence_selftest(o).minimum_bytes, a.minimum_bytes);
}

// The same checker with a smaller budget, labelled for the ThreadSanitizer run.
class CoherenceSelftestConcurrency : public ::testing::TestWithParam<UpdateStrategy> {};

TEST_P(CoherenceSelftestConcurrency, RandomProgramsOnManyDevices) {
  for (std::uint64_t seed : {7u, 8u}) {
    CoherenceSelftestOptions o;
    o.seed = seed;
    o.ops = 80;
    o.devices = seed == 7 ? 16 : 4;
    o.buffers = 3;
    o.strategy = GetParam();
    o.peer_copies = seed == 7;
    expect_ok(o);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, CoherenceSelftestConcurrency,
                         ::testing::Values(UpdateStrategy::lazy, UpdateStrategy::balance,
                                           UpdateStrategy::batch, UpdateStrategy::adaptive),
                         [](const ::testing::TestParamInfo<UpdateStrategy>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

}  // namespace
}  // namespace unimem
