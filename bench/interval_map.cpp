// IntervalMap and IntervalSet costs against the number of segments / intervals.
//
// Map benchmarks run on a map of n contiguous 16-byte segments with alternating values (n maximal
// segments), touch random segments, and undo every change within the same iteration so the map
// keeps n segments throughout. The time_per_op counter is the cost of one map operation: it should
// grow only logarithmically with n (cache misses in the search), never linearly.
// Set benchmarks report time_per_interval: linear merges should keep it flat.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "region/interval_map.hpp"
#include "region/interval_set.hpp"

namespace {

using unimem::Interval;
using unimem::IntervalMap;
using unimem::IntervalSet;

constexpr std::uint64_t kSegmentBytes = 16;

// The map with n segments [16 i, 16 i + 16) = i % 2, built once per n and shared (every
// benchmark leaves it as it found it).
IntervalMap<int>& map_with_segments(std::int64_t n) {
  static std::map<std::int64_t, std::unique_ptr<IntervalMap<int>>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<IntervalMap<int>>();
    for (std::int64_t i = 0; i < n; ++i) {
      const auto b = static_cast<std::uint64_t>(i) * kSegmentBytes;
      slot->assign({b, b + kSegmentBytes}, static_cast<int>(i % 2));
    }
  }
  return *slot;
}

// Random segment indices, drawn ahead of time so the timed loop does not pay for the generator.
std::vector<std::uint64_t> random_segments(std::int64_t n, std::size_t count) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::uint64_t> pick(0, static_cast<std::uint64_t>(n) - 9);
  std::vector<std::uint64_t> out(count);
  for (auto& i : out) i = pick(rng);
  return out;
}

void set_time_per(benchmark::State& state, const char* name, double units_per_iteration) {
  state.counters[name] =
      benchmark::Counter(units_per_iteration, benchmark::Counter::kIsIterationInvariantRate |
                                                  benchmark::Counter::kInvert);
}

constexpr std::size_t kIndexCount = 1 << 16;

// Assign 4 bytes in the middle of a segment (splitting it in three), then assign them back
// (merging the three again): two assigns per iteration.
void BM_MapAssignPoint(benchmark::State& state) {
  auto& m = map_with_segments(state.range(0));
  const auto idx = random_segments(state.range(0), kIndexCount);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::uint64_t i = idx[k++ & (kIndexCount - 1)];
    const Interval r{i * kSegmentBytes + 4, i * kSegmentBytes + 8};
    m.assign(r, 2);
    m.assign(r, static_cast<int>(i % 2));
  }
  if (m.segment_count() != static_cast<std::size_t>(state.range(0))) state.SkipWithError("drift");
  set_time_per(state, "time_per_op", 2);
}

// The same with update (toggle bit 1 of the value, twice).
void BM_MapUpdatePoint(benchmark::State& state) {
  auto& m = map_with_segments(state.range(0));
  const auto idx = random_segments(state.range(0), kIndexCount);
  std::size_t k = 0;
  const auto toggle = [](int v) { return v ^ 2; };
  for (auto _ : state) {
    const std::uint64_t i = idx[k++ & (kIndexCount - 1)];
    const Interval r{i * kSegmentBytes + 4, i * kSegmentBytes + 8};
    m.update(r, toggle);
    m.update(r, toggle);
  }
  if (m.segment_count() != static_cast<std::size_t>(state.range(0))) state.SkipWithError("drift");
  set_time_per(state, "time_per_op", 2);
}

// Update a range across 8 segments (touching 9): cost should be search + 9 segments.
void BM_MapUpdateEightSegments(benchmark::State& state) {
  auto& m = map_with_segments(state.range(0));
  const auto idx = random_segments(state.range(0), kIndexCount);
  std::size_t k = 0;
  const auto toggle = [](int v) { return v ^ 2; };
  for (auto _ : state) {
    const std::uint64_t i = idx[k++ & (kIndexCount - 1)];
    const Interval r{i * kSegmentBytes + 4, (i + 8) * kSegmentBytes + 4};
    m.update(r, toggle);
    m.update(r, toggle);
  }
  if (m.segment_count() != static_cast<std::size_t>(state.range(0))) state.SkipWithError("drift");
  set_time_per(state, "time_per_op", 2);
}

// Visit the mapped parts of a 64-byte range (5 segments, clipped at both ends).
void BM_MapQuery(benchmark::State& state) {
  const auto& m = map_with_segments(state.range(0));
  const auto idx = random_segments(state.range(0), kIndexCount);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::uint64_t i = idx[k++ & (kIndexCount - 1)];
    std::uint64_t sum = 0;
    m.for_each_in({i * kSegmentBytes + 4, i * kSegmentBytes + 68},
                  [&sum](const Interval& r, int v) { sum += r.size() * static_cast<unsigned>(v); });
    benchmark::DoNotOptimize(sum);
  }
  set_time_per(state, "time_per_op", 1);
}

void BM_MapAt(benchmark::State& state) {
  const auto& m = map_with_segments(state.range(0));
  const auto idx = random_segments(state.range(0), kIndexCount);
  std::size_t k = 0;
  for (auto _ : state) {
    const std::uint64_t i = idx[k++ & (kIndexCount - 1)];
    benchmark::DoNotOptimize(m.at(i * kSegmentBytes + 7));
  }
  set_time_per(state, "time_per_op", 1);
}

BENCHMARK(BM_MapAssignPoint)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_MapUpdatePoint)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_MapUpdateEightSegments)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_MapQuery)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_MapAt)->RangeMultiplier(10)->Range(1000, 1000000);

// Two interleaved sets of n intervals each: a = [8i, 8i + 4 + i % 3), b = [8i + 2, 8i + 6 + i % 2).
std::pair<IntervalSet, IntervalSet> interleaved_sets(std::int64_t n) {
  std::vector<Interval> a;
  std::vector<Interval> b;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto o = static_cast<std::uint64_t>(i) * 8;
    const auto j = static_cast<std::uint64_t>(i);
    a.emplace_back(o, o + 4 + j % 3);
    b.emplace_back(o + 2, o + 6 + j % 2);
  }
  return {IntervalSet::from_normalized(std::move(a)), IntervalSet::from_normalized(std::move(b))};
}

void BM_SetUnion(benchmark::State& state) {
  const auto [a, b] = interleaved_sets(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(a | b);
  set_time_per(state, "time_per_interval", 2.0 * static_cast<double>(state.range(0)));
}

void BM_SetIntersection(benchmark::State& state) {
  const auto [a, b] = interleaved_sets(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(a & b);
  set_time_per(state, "time_per_interval", 2.0 * static_cast<double>(state.range(0)));
}

void BM_SetSubtract(benchmark::State& state) {
  const auto [a, b] = interleaved_sets(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(a - b);
  set_time_per(state, "time_per_interval", 2.0 * static_cast<double>(state.range(0)));
}

BENCHMARK(BM_SetUnion)->RangeMultiplier(10)->Range(100, 100000);
BENCHMARK(BM_SetIntersection)->RangeMultiplier(10)->Range(100, 100000);
BENCHMARK(BM_SetSubtract)->RangeMultiplier(10)->Range(100, 100000);

}  // namespace

BENCHMARK_MAIN();
