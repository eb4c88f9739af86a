// Partitioner and launch planning: splits by work-groups with weights, uneven sizes, the byte sets
// of affine descriptors against a brute-force oracle, may-writes, and the fallback when two
// partitions would write the same bytes.

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "common/check.hpp"
#include "schedule/launch_plan.hpp"
#include "schedule/partitioner.hpp"

namespace unimem {
namespace {

NDRange range_2d(std::uint64_t x, std::uint64_t y, std::uint64_t lx = 0, std::uint64_t ly = 0) {
  NDRange r;
  r.dims = 2;
  r.global = {x, y, 1};
  r.local = {lx, ly, 0};
  return r;
}

TEST(Partitioner, EqualWeightsGiveLargerBlocksFirstAndCoverTheRange) {
  const NDRange r = range_2d(8, 10);
  const std::vector<std::size_t> devices{0, 1, 2};
  const std::vector<double> weights{1, 1, 1};
  const auto parts = split_by_groups(r, 1, devices, weights);
  ASSERT_EQ(parts.size(), 3U);
  EXPECT_EQ(parts[0].range.global[1], 4U);
  EXPECT_EQ(parts[1].range.global[1], 3U);
  EXPECT_EQ(parts[2].range.global[1], 3U);
  EXPECT_EQ(parts[0].range.offset[1], 0U);
  EXPECT_EQ(parts[1].range.offset[1], 4U);
  EXPECT_EQ(parts[2].range.offset[1], 7U);
  for (const auto& p : parts) EXPECT_EQ(p.range.global[0], 8U);  // other dimensions untouched
}

TEST(Partitioner, SplitsByWorkGroupsInProportionToWeights) {
  const NDRange r = range_2d(4, 64, 4, 8);  // 8 groups of 8 rows
  const std::vector<std::size_t> devices{3, 5};
  const std::vector<double> weights{3, 1};
  const auto parts = split_by_groups(r, 1, devices, weights);
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].device, 3U);
  EXPECT_EQ(parts[0].group_end - parts[0].group_begin, 6U);
  EXPECT_EQ(parts[0].range.global[1], 48U);
  EXPECT_EQ(parts[1].range.offset[1], 48U);
  EXPECT_EQ(parts[1].range.global[1], 16U);
  EXPECT_EQ(parts[1].range.global[1] % r.local[1], 0U);  // whole work-groups only
}

TEST(Partitioner, DevicesWithoutWorkGetNoPartitionAndAnOffsetIsKept) {
  NDRange r = range_2d(4, 2);
  r.offset = {0, 10, 0};
  const std::vector<std::size_t> devices{0, 1, 2};
  const std::vector<double> weights{1, 1, 1};
  const auto parts = split_by_groups(r, 1, devices, weights);
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].range.offset[1], 10U);
  EXPECT_EQ(parts[1].range.offset[1], 11U);
}

TEST(Partitioner, RandomWeightsAlwaysTileTheRange) {
  for (std::uint32_t seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937 rng(seed);
    const std::uint64_t groups = 1 + rng() % 50;
    const std::uint64_t local = 1 + rng() % 4;
    NDRange r;
    r.dims = 1;
    r.global = {groups * local, 1, 1};
    r.local = {local, 0, 0};
    const std::size_t k = 1 + rng() % 5;
    std::vector<std::size_t> devices(k);
    std::vector<double> weights(k);
    for (std::size_t i = 0; i < k; ++i) {
      devices[i] = i;
      weights[i] = static_cast<double>(rng() % 10);
    }
    weights[rng() % k] += 1;  // at least one positive
    const auto parts = split_by_groups(r, 0, devices, weights);
    std::uint64_t next = 0;
    for (const auto& p : parts) {
      EXPECT_EQ(p.range.offset[0], next);
      EXPECT_GT(p.range.global[0], 0U);
      EXPECT_EQ(p.range.global[0] % local, 0U);
      EXPECT_GT(weights[p.device], 0.0);
      next += p.range.global[0];
    }
    EXPECT_EQ(next, r.global[0]);
  }
}

TEST(Partitioner, RejectsBadInput) {
  const std::vector<std::size_t> devices{0};
  const std::vector<double> zero{0};
  EXPECT_THROW((void)split_by_groups(range_2d(4, 4), 1, devices, zero), PreconditionError);
  EXPECT_THROW((void)split_dimension(range_2d(4, 4), 2), PreconditionError);
  EXPECT_EQ(split_dimension(range_2d(4, 4), std::nullopt), 1U);
  EXPECT_THROW((void)group_count(range_2d(4, 6, 0, 4), 1), PreconditionError);
}

TEST(ThroughputProfile, WeightsFollowMeasuredThroughputOnceEveryDeviceIsTimed) {
  ThroughputProfile profile(1);
  const std::vector<std::size_t> devices{0, 1};
  profile.record("k", 0, 1000, 1.0);
  EXPECT_FALSE(profile.weights("k", devices).has_value());
  profile.record("k", 1, 1000, 0.25);
  profile.record("k", 1, 1000, 100.0);  // beyond the sample count: ignored
  const auto w = profile.weights("k", devices);
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ((*w)[1] / (*w)[0], 4.0);
  EXPECT_FALSE(profile.weights("other", devices).has_value());
}

TEST(ThroughputProfile, SkipsWarmUpLaunches) {
  ThroughputProfile profile(1, 1);
  const std::vector<std::size_t> devices{0};
  profile.record("k", 0, 1000, 50.0);  // first launch: compilation
  EXPECT_FALSE(profile.weights("k", devices).has_value());
  profile.record("k", 0, 1000, 2.0);
  ASSERT_TRUE(profile.weights("k", devices).has_value());
  EXPECT_DOUBLE_EQ((*profile.weights("k", devices))[0], 500.0);
}

// Oracle: enumerate every work-item of the slice and every loop value.
IntervalSet brute_force(const AffinePiece& piece, const NDRange& slice) {
  IntervalSet out;
  std::vector<std::pair<IndexVar, std::pair<std::int64_t, std::int64_t>>> domains;
  for (const SubscriptTerm& t : piece.terms) {
    std::int64_t lo = -1000000;
    std::int64_t hi = 1000000;
    if (t.var.kind == IndexVar::Kind::global_id) {
      lo = static_cast<std::int64_t>(slice.offset[t.var.index]);
      hi = lo + static_cast<std::int64_t>(slice.global[t.var.index]) - 1;
    }
    for (const VarBound& b : piece.bounds) {
      if (b.var == t.var) {
        lo = std::max(lo, b.lower);
        hi = std::min(hi, b.upper);
      }
    }
    domains.push_back({t.var, {lo, hi}});
  }
  std::vector<std::int64_t> value(domains.size());
  for (std::size_t i = 0; i < domains.size(); ++i) {
    if (domains[i].second.second < domains[i].second.first) return out;
    value[i] = domains[i].second.first;
  }
  while (true) {
    std::int64_t e = piece.constant;
    for (std::size_t i = 0; i < domains.size(); ++i) e += piece.terms[i].coefficient * value[i];
    const auto b = static_cast<std::uint64_t>(e) * piece.element_size;
    out.insert({b, b + piece.element_size});
    std::size_t i = 0;
    for (; i < domains.size(); ++i) {
      if (++value[i] <= domains[i].second.second) break;
      value[i] = domains[i].second.first;
    }
    if (i == domains.size()) return out;
  }
}

TEST(AccessBytes, AffinePiecesMatchBruteForceOnRandomSlices) {
  for (std::uint32_t seed = 0; seed < 150; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937 rng(seed);
    const std::int64_t cols = 2 + rng() % 10;
    const std::int64_t rows = 2 + rng() % 10;
    NDRange slice = range_2d(static_cast<std::uint64_t>(cols), 1 + rng() % rows);
    slice.offset[1] = rng() % (rows - slice.global[1] + 1);
    AffinePiece p = row_major_piece(1 + rng() % 8, {1, cols});
    p.constant = (rng() % 3 == 0) ? cols : 0;
    if (rng() % 2 == 0) {
      p.bounds.push_back({IndexVar::global_id(1), 1, rows - 2});
      p.constant = -cols;
    }
    if (rng() % 3 == 0) {  // a loop over a few columns of the row
      p.terms.push_back({IndexVar::loop(0), static_cast<std::int64_t>(1 + rng() % 3)});
      p.bounds.push_back({IndexVar::loop(0), 0, static_cast<std::int64_t>(rng() % 4)});
    }
    const std::uint64_t size = static_cast<std::uint64_t>(rows * cols + 64) * p.element_size;
    const KernelAccess acc{AccessDescriptor::affine(0, AccessMode::read, {p})};
    const AccessBytes got = partition_bytes("k", acc, 0, size, slice);
    EXPECT_EQ(got.reads, brute_force(p, slice)) << p.to_string();
    EXPECT_TRUE(got.writes.empty());
    EXPECT_TRUE(got.may_writes.empty());
  }
}

TEST(AccessBytes, ModesMapToReadWriteAndMayWriteSets) {
  const NDRange slice = range_2d(4, 2);
  const AffinePiece own = row_major_piece(4, {1, 4});
  const KernelAccess acc{AccessDescriptor::affine(0, AccessMode::read_write, {own}),
                         AccessDescriptor::affine(1, AccessMode::may_write, {own}),
                         AccessDescriptor::whole(2, AccessMode::write)};
  const AccessBytes rw = partition_bytes("k", acc, 0, 64, slice);
  EXPECT_EQ(rw.reads, IntervalSet(Interval{0, 32}));
  EXPECT_EQ(rw.writes, IntervalSet(Interval{0, 32}));
  const AccessBytes may = partition_bytes("k", acc, 1, 64, slice);
  EXPECT_TRUE(may.writes.empty());
  EXPECT_EQ(may.may_writes, IntervalSet(Interval{0, 32}));
  // A whole-buffer write is not known to write every byte: a may-write (fetched first).
  const AccessBytes whole = partition_bytes("k", acc, 2, 64, slice);
  EXPECT_TRUE(whole.writes.empty());
  EXPECT_EQ(whole.may_writes, IntervalSet(Interval{0, 64}));
  // No descriptor at all: read and maybe written in whole.
  const AccessBytes none = partition_bytes("k", acc, 3, 16, slice);
  EXPECT_EQ(none.may_writes, IntervalSet(Interval{0, 16}));
}

TEST(AccessBytes, MalformedPiecesAreRejectedWithTheKernelAndArgument) {
  AffinePiece unbounded;
  unbounded.terms = {{IndexVar::loop(0), 1}};
  const KernelAccess acc{AccessDescriptor::affine(2, AccessMode::read, {unbounded})};
  try {
    (void)partition_bytes("mykernel", acc, 2, 64, range_2d(4, 4));
    FAIL() << "no exception";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("mykernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("argument 2"), std::string::npos) << e.what();
  }
  AffinePiece negative = row_major_piece(4, {1, 4}, -4);
  const KernelAccess neg{AccessDescriptor::affine(0, AccessMode::read, {negative})};
  EXPECT_THROW((void)partition_bytes("k", neg, 0, 64, range_2d(4, 4)), PreconditionError);
}

PlanRequest stencil_request(unsigned devices) {
  PlanRequest r;
  r.kernel = "stencil";
  r.range = range_2d(8, 12);
  for (unsigned d = 0; d < devices; ++d) r.devices.push_back(d);
  r.args = {{true, 8 * 12 * 4, "in"}, {true, 8 * 12 * 4, "out"}, {false, 0, ""}};
  const IndexVar row = IndexVar::global_id(1);
  r.accesses = {AccessDescriptor::affine(
                    0, AccessMode::read,
                    {row_major_piece(4, {1, 8}), row_major_piece(4, {1, 8}, -8, {{row, 1, 11}}),
                     row_major_piece(4, {1, 8}, 8, {{row, 0, 10}})}),
                AccessDescriptor::affine(1, AccessMode::write, {row_major_piece(4, {1, 8})})};
  return r;
}

TEST(LaunchPlan, StencilPartitionsReadTheirRowsPlusHalosAndWriteDisjointRows) {
  const LaunchPlan plan = plan_launch(stencil_request(3));
  EXPECT_TRUE(plan.fallback_reason.empty());
  ASSERT_EQ(plan.partitions.size(), 3U);
  const std::uint64_t row = 8 * 4;
  EXPECT_EQ(plan.partitions[0].accesses.at(0).reads, IntervalSet(Interval{0, 5 * row}));
  EXPECT_EQ(plan.partitions[1].accesses.at(0).reads, IntervalSet(Interval{3 * row, 9 * row}));
  EXPECT_EQ(plan.partitions[2].accesses.at(0).reads, IntervalSet(Interval{7 * row, 12 * row}));
  EXPECT_EQ(plan.partitions[1].accesses.at(1).writes, IntervalSet(Interval{4 * row, 8 * row}));
  EXPECT_FALSE(plan.partitions[0].accesses.contains(2));  // scalars have no bytes
}

TEST(LaunchPlan, OverlappingWritesFallBackToOneDeviceAndSayWhy) {
  PlanRequest r = stencil_request(3);
  // Every work-item also writes element 0 of "out": partitions would race on it.
  r.accesses.push_back(AccessDescriptor::affine(1, AccessMode::write, {row_major_piece(4, {0})}));
  const LaunchPlan plan = plan_launch(r);
  ASSERT_EQ(plan.partitions.size(), 1U);
  EXPECT_EQ(plan.partitions[0].range.global[1], 12U);
  EXPECT_NE(plan.fallback_reason.find("stencil"), std::string::npos) << plan.fallback_reason;
  EXPECT_NE(plan.fallback_reason.find("'out'"), std::string::npos) << plan.fallback_reason;
  EXPECT_NE(plan.fallback_reason.find("[0, 4)"), std::string::npos) << plan.fallback_reason;
}

TEST(LaunchPlan, OverlapBetweenLaterPartitionsFallsBackToFewerDevices) {
  PlanRequest r = stencil_request(3);
  // Work-items of rows 7..11 may also write row 7: on 3 devices (rows 0-3, 4-7, 8-11) partitions
  // 1 and 2 would both write it; on 2 devices (rows 0-5, 6-11) only partition 1 does.
  r.accesses.push_back(AccessDescriptor::affine(
      1, AccessMode::may_write,
      {row_major_piece(4, {1, 0}, 7 * 8, {{IndexVar::global_id(1), 7, 11}})}));
  const LaunchPlan plan = plan_launch(r);
  EXPECT_EQ(plan.partitions.size(), 2U);
  EXPECT_NE(plan.fallback_reason.find("partitions 1 and 2"), std::string::npos)
      << plan.fallback_reason;
  // The may-write is fetched first: it shows up in may_writes, not in writes.
  EXPECT_FALSE(plan.partitions[1].accesses.at(1).may_writes.empty());
}

TEST(LaunchPlan, WholeBufferWritesRunOnOneDevice) {
  PlanRequest r = stencil_request(2);
  r.accesses = {AccessDescriptor::whole(0, AccessMode::read),
                AccessDescriptor::whole(1, AccessMode::write)};
  const LaunchPlan plan = plan_launch(r);
  EXPECT_EQ(plan.partitions.size(), 1U);
  EXPECT_FALSE(plan.fallback_reason.empty());
}

TEST(LaunchPlan, DerivedBytesFillArgumentsWithoutDescriptorsAndDescriptorsOverrideThem) {
  PlanRequest r = stencil_request(2);
  r.accesses.erase(r.accesses.begin());  // argument 0 now comes from the derived source
  int calls = 0;
  r.derived = [&](const RangePartition& p) {
    ++calls;
    AccessBytes in;
    in.reads = IntervalSet(Interval{p.range.offset[1] * 32, (p.range.offset[1] + 1) * 32});
    AccessBytes out;  // ignored: argument 1 has a descriptor
    out.may_writes = IntervalSet(Interval{0, 384});
    return std::map<std::uint32_t, AccessBytes>{{0, in}, {1, out}};
  };
  const LaunchPlan plan = plan_launch(r);
  ASSERT_EQ(plan.partitions.size(), 2U);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(plan.partitions[1].accesses.at(0).reads, IntervalSet(Interval{6 * 32, 7 * 32}));
  EXPECT_EQ(plan.partitions[1].accesses.at(1).writes, IntervalSet(Interval{6 * 32, 12 * 32}));
  EXPECT_TRUE(plan.partitions[1].accesses.at(1).may_writes.empty());
}

TEST(LaunchPlan, UnsplittableLaunchesRunOnOneDeviceAndSayWhy) {
  PlanRequest r = stencil_request(3);
  r.unsplittable_reason = "write to out[idx[i]] is indirect";
  const LaunchPlan plan = plan_launch(r);
  ASSERT_EQ(plan.partitions.size(), 1U);
  EXPECT_NE(plan.fallback_reason.find("indirect"), std::string::npos);
}

TEST(LaunchPlan, DescriptorsForNonBufferArgumentsAreRejected) {
  PlanRequest r = stencil_request(2);
  r.accesses.push_back(AccessDescriptor::whole(2, AccessMode::read));
  EXPECT_THROW((void)plan_launch(r), PreconditionError);
}

TEST(AccessDescriptor, OverridesReplaceWholeArguments) {
  const KernelAccess base{AccessDescriptor::whole(0, AccessMode::read),
                          AccessDescriptor::whole(1, AccessMode::write),
                          AccessDescriptor::whole(1, AccessMode::read)};
  const KernelAccess over{
      AccessDescriptor::affine(1, AccessMode::write, {row_major_piece(4, {1})})};
  const KernelAccess merged = override_accesses(base, over);
  ASSERT_EQ(merged.size(), 2U);
  EXPECT_EQ(merged[0].arg, 0U);
  EXPECT_FALSE(merged[1].is_whole());
}

}  // namespace
}  // namespace unimem
