// The OpenCL-free parts of examples/: splitting, comparison and the whole-buffer model.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.hpp"
#include "examples/halo_pingpong.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {
namespace {

TEST(SplitEvenly, CoversTheRangeWithContiguousBlocksDifferingByAtMostOne) {
  for (std::uint64_t total = 1; total < 40; ++total) {
    for (unsigned parts = 1; parts <= total && parts <= 7; ++parts) {
      SCOPED_TRACE("total=" + std::to_string(total) + " parts=" + std::to_string(parts));
      const std::vector<Block> blocks = split_evenly(total, parts);
      ASSERT_EQ(blocks.size(), parts);
      std::uint64_t next = 0;
      std::uint64_t smallest = total;
      std::uint64_t largest = 0;
      for (const Block& b : blocks) {
        EXPECT_EQ(b.begin, next);
        EXPECT_GE(b.size(), 1u);
        smallest = std::min(smallest, b.size());
        largest = std::max(largest, b.size());
        next = b.end;
      }
      EXPECT_EQ(next, total);
      EXPECT_LE(largest - smallest, 1u);
    }
  }
  EXPECT_THROW((void)split_evenly(2, 3), PreconditionError);
  EXPECT_THROW((void)split_evenly(5, 0), PreconditionError);
}

TEST(HaloBlocks, HoldTheOwnBlockPlusTheHaloClippedToTheGrid) {
  const std::vector<HaloBlock> blocks = halo_blocks(10, 3, 1);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].own.begin, 0u);
  EXPECT_EQ(blocks[0].own.end, 4u);
  EXPECT_EQ(blocks[0].held.begin, 0u);
  EXPECT_EQ(blocks[0].held.end, 5u);
  EXPECT_EQ(blocks[1].held.begin, 3u);
  EXPECT_EQ(blocks[1].held.end, 8u);
  EXPECT_EQ(blocks[2].held.begin, 6u);
  EXPECT_EQ(blocks[2].held.end, 10u);
  // 10 rows of 8 bytes, 3 devices, 4 steps: upload 10 + 4 halo rows, 3 exchanges of 4 rows.
  EXPECT_EQ(halo_pingpong_bytes(10, 8, 3, 1, 4), (TransferBytes{14 * 8, 10 * 8, 3 * 4 * 8}));
  EXPECT_EQ(halo_pingpong_bytes(10, 8, 1, 1, 4), (TransferBytes{10 * 8, 10 * 8, 0}));
}

TEST(Compare, IsBitwiseWithoutToleranceAndNamesTheFirstMismatch) {
  const Arrays want{{"x", {1.0f, 2.0f, 3.0f}}};
  EXPECT_TRUE(compare(want, want, {}).ok);
  Arrays got = want;
  got["x"][1] = std::nextafter(2.0f, 3.0f);
  const Comparison bitwise = compare(got, want, {});
  EXPECT_FALSE(bitwise.ok);
  EXPECT_EQ(bitwise.mismatches, 1u);
  EXPECT_NE(bitwise.first_mismatch.find("x[1]"), std::string::npos) << bitwise.first_mismatch;
  EXPECT_TRUE(compare(got, want, {0.0, 1e-6}).ok);
  got["x"][2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(compare(got, want, {1.0, 1.0}).ok);
  EXPECT_FALSE(compare(Arrays{}, want, {}).ok);
  EXPECT_FALSE(compare(Arrays{{"x", {1.0f}}}, want, {}).ok);
  // -0 and +0 differ bitwise.
  EXPECT_FALSE(compare(Arrays{{"z", {-0.0f}}}, Arrays{{"z", {0.0f}}}, {}).ok);
}

TEST(RandomFloats, AreDeterministicPerSeedAndInRange) {
  const std::vector<float> a = random_floats(1000, 7, -2.0f, 3.0f);
  EXPECT_EQ(a, random_floats(1000, 7, -2.0f, 3.0f));
  EXPECT_NE(a, random_floats(1000, 8, -2.0f, 3.0f));
  for (float v : a) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LT(v, 3.0f);
  }
}

TEST(WholeBufferBytes, MovesWholeBuffersAndMergesPartialWritesOnTheHost) {
  BufferPlan plan;
  plan.buffer_bytes = {{"in", 100}, {"out", 10}};
  plan.launches = {{"k", {"in"}, {"out"}}, {"k", {"in"}, {"out"}}};
  plan.host_reads = {"out"};
  // One device: upload both once (the writer needs the bytes it does not write), download once.
  EXPECT_EQ(whole_buffer_bytes(plan, 1), (TransferBytes{110, 10, 0}));
  // Two devices: both upload both; each launch merges out on the host (2 x 10); the second launch
  // re-uploads the merged out to both devices; the host copy is valid at the end.
  EXPECT_EQ(whole_buffer_bytes(plan, 2), (TransferBytes{220 + 20, 40, 0}));
  plan.launches.push_back({"k", {"nope"}, {}});
  EXPECT_THROW((void)whole_buffer_bytes(plan, 2), PreconditionError);
}

TEST(Workloads, HaveUniqueNamesAndBytesMinNeverAboveWholeBuffer) {
  std::vector<std::string> names;
  for (const auto& w : all_workloads()) {
    SCOPED_TRACE(w->name());
    EXPECT_EQ(std::count(names.begin(), names.end(), w->name()), 0);
    names.push_back(w->name());
    EXPECT_EQ(find_workload(w->name())->name(), w->name());
    EXPECT_FALSE(w->kernel_sources().empty());
    for (const Problem& p : {w->small_problem(), w->medium_problem()}) {
      for (unsigned d = 1; d <= 3; ++d) {
        EXPECT_LE(w->bytes_min(p, d).total(true), w->bytes_whole_buffer(p, d).total(true));
      }
    }
  }
  EXPECT_THROW((void)find_workload("no-such-workload"), PreconditionError);
}

std::string validation_error(const std::string& workload, Problem problem, unsigned devices) {
  try {
    find_workload(workload)->validate(problem, devices);
  } catch (const PreconditionError& e) {
    return e.what();
  }
  return "";
}

TEST(Workloads, ValidateNamesTheWorkloadTheSizeAndTheLimit) {
  using ::testing::HasSubstr;
  EXPECT_EQ(validation_error("stencil2d", {48, 4}, 3), "");
  EXPECT_THAT(validation_error("stencil2d", {48, 4}, 0),
              HasSubstr("stencil2d needs at least one device"));
  EXPECT_THAT(validation_error("heat3d", {14, 0}, 1), HasSubstr("heat3d needs at least one step"));
  // Workloads with a fixed launch sequence ignore steps.
  EXPECT_EQ(validation_error("matmul", {48, 0}, 1), "");
  EXPECT_THAT(validation_error("stencil2d", {2, 4}, 3),
              HasSubstr("stencil2d: size 2 has fewer rows than the 3 devices"));
  EXPECT_THAT(validation_error("nbody", {2, 1}, 3), HasSubstr("fewer bodies than the 3 devices"));
  EXPECT_THAT(validation_error("hotspot", {50000, 1}, 1),
              HasSubstr("hotspot: size 50000 is too large (at most 46000"));
  EXPECT_THAT(validation_error("heat3d", {1281, 1}, 1), HasSubstr("at most 1280"));
  EXPECT_THAT(validation_error("fdtd2d", {1, 1}, 1),
              HasSubstr("fdtd2d: size 1 is too small (at least 2)"));
}

TEST(Workloads, PingPongPlanAlternatesTheGridAndKeepsTheOtherBuffers) {
  const BufferPlan plan = pingpong_plan("k", "pos", 100, 3, {{"power", 10}}, {{"vel", 20}});
  ASSERT_EQ(plan.launches.size(), 3u);
  EXPECT_EQ(plan.launches[0].reads, (std::vector<std::string>{"pos a", "power", "vel"}));
  EXPECT_EQ(plan.launches[0].writes, (std::vector<std::string>{"pos b", "vel"}));
  EXPECT_EQ(plan.launches[1].reads.front(), "pos b");
  EXPECT_EQ(plan.launches[1].writes.front(), "pos a");
  EXPECT_EQ(plan.host_reads, (std::vector<std::string>{"pos b", "vel"}));
  EXPECT_EQ(plan.buffer_bytes.size(), 4u);
}

}  // namespace
}  // namespace unimem::examples
