// Box<N> and BoxSet<N> benchmarks: BBMM Table I subtract, BoxSet union / subtract with growing
// numbers of boxes, and BBMM Algorithm 2 (disjoint_decomposition) against BoxSet normalization of
// the same boxes (001_9219257c3045faa0.txt).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "region/box.hpp"
#include "region/box_decomposition.hpp"
#include "region/box_set.hpp"

namespace {

using unimem::Box;
using unimem::BoxSet;

template <std::size_t N>
Box<N> cube(std::int64_t lo, std::int64_t hi) {
  typename Box<N>::Point min{};
  typename Box<N>::Point max{};
  min.fill(lo);
  max.fill(hi);
  return Box<N>(min, max);
}

// k boxes with sides in [1, max_side] at random positions (fixed seed). The universe grows with k
// (side = 60 * k^(1/N), at least 1000) so that the density of boxes, and with it the share that
// overlap, stays about the same as k grows.
template <std::size_t N>
std::vector<Box<N>> random_boxes(std::size_t k, std::int64_t max_side, std::uint64_t seed) {
  const auto side = std::max<std::int64_t>(
      1000, static_cast<std::int64_t>(60.0 * std::pow(static_cast<double>(k), 1.0 / N)));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pos(0, side - 1);
  std::uniform_int_distribution<std::int64_t> extent(1, max_side);
  std::vector<Box<N>> out;
  out.reserve(k);
  for (std::size_t i = 0; i < k; ++i) {
    typename Box<N>::Point lo{};
    typename Box<N>::Point hi{};
    for (std::size_t d = 0; d < N; ++d) {
      lo[d] = pos(rng);
      hi[d] = lo[d] + extent(rng);
    }
    out.push_back(Box<N>(lo, hi));
  }
  return out;
}

// Interior hole: the worst case, 2N pieces.
template <std::size_t N>
void BM_BoxSubtractHole(benchmark::State& state) {
  const Box<N> a = cube<N>(0, 100);
  Box<N> b = cube<N>(25, 75);
  for (auto _ : state) {
    benchmark::DoNotOptimize(b);
    auto pieces = a.subtract(b);
    benchmark::DoNotOptimize(pieces);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_BoxSubtractHole<1>);
BENCHMARK(BM_BoxSubtractHole<2>);
BENCHMARK(BM_BoxSubtractHole<3>);

// Random pairs (mix of disjoint, overlapping and nested).
template <std::size_t N>
void BM_BoxSubtractRandom(benchmark::State& state) {
  const std::vector<Box<N>> boxes = random_boxes<N>(1024, 500, 42);
  std::size_t i = 0;
  for (auto _ : state) {
    auto pieces = boxes[i % 1024].subtract(boxes[(i + 1) % 1024]);
    benchmark::DoNotOptimize(pieces);
    ++i;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_BoxSubtractRandom<1>);
BENCHMARK(BM_BoxSubtractRandom<2>);
BENCHMARK(BM_BoxSubtractRandom<3>);

// Union of two canonical sets, each built from k small scattered boxes.
template <std::size_t N>
void BM_BoxSetUnite(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  const BoxSet<N> a = BoxSet<N>::from_boxes(random_boxes<N>(k, 20, 1));
  const BoxSet<N> b = BoxSet<N>::from_boxes(random_boxes<N>(k, 20, 2));
  std::size_t result_boxes = 0;
  for (auto _ : state) {
    BoxSet<N> u = a.unite(b);
    result_boxes = u.box_count();
    benchmark::DoNotOptimize(u);
  }
  state.counters["boxes_in"] = static_cast<double>(a.box_count() + b.box_count());
  state.counters["boxes_out"] = static_cast<double>(result_boxes);
}
BENCHMARK(BM_BoxSetUnite<1>)->RangeMultiplier(4)->Range(4, 1024);
BENCHMARK(BM_BoxSetUnite<2>)->RangeMultiplier(4)->Range(4, 1024);
BENCHMARK(BM_BoxSetUnite<3>)->RangeMultiplier(4)->Range(4, 1024);

// Set minus set: k scattered boxes minus k other scattered boxes.
template <std::size_t N>
void BM_BoxSetSubtract(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  const BoxSet<N> a = BoxSet<N>::from_boxes(random_boxes<N>(k, 40, 3));
  const BoxSet<N> b = BoxSet<N>::from_boxes(random_boxes<N>(k, 40, 4));
  std::size_t result_boxes = 0;
  for (auto _ : state) {
    BoxSet<N> d = a.subtract(b);
    result_boxes = d.box_count();
    benchmark::DoNotOptimize(d);
  }
  state.counters["boxes_in"] = static_cast<double>(a.box_count() + b.box_count());
  state.counters["boxes_out"] = static_cast<double>(result_boxes);
}
BENCHMARK(BM_BoxSetSubtract<1>)->RangeMultiplier(4)->Range(4, 1024);
BENCHMARK(BM_BoxSetSubtract<2>)->RangeMultiplier(4)->Range(4, 1024);
BENCHMARK(BM_BoxSetSubtract<3>)->RangeMultiplier(4)->Range(4, 1024);

// Inserting k boxes one at a time (each insert re-normalizes the whole set).
template <std::size_t N>
void BM_BoxSetInsertEach(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  const std::vector<Box<N>> boxes = random_boxes<N>(k, 20, 5);
  for (auto _ : state) {
    BoxSet<N> s;
    for (const Box<N>& box : boxes) s.insert(box);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * k));
}
BENCHMARK(BM_BoxSetInsertEach<2>)->RangeMultiplier(4)->Range(4, 256);

// BBMM Algorithm 2 on k overlapping boxes (large sides, so they overlap a lot), versus
// BoxSet::from_boxes on the same list; both give disjoint boxes covering the union.
template <std::size_t N>
void BM_DisjointDecomposition(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  const std::vector<Box<N>> boxes = random_boxes<N>(k, 300, 6);
  std::size_t pieces = 0;
  for (auto _ : state) {
    std::vector<Box<N>> out = unimem::disjoint_decomposition(boxes);
    pieces = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["pieces"] = static_cast<double>(pieces);
}
BENCHMARK(BM_DisjointDecomposition<1>)->RangeMultiplier(2)->Range(2, 64);
BENCHMARK(BM_DisjointDecomposition<2>)->RangeMultiplier(2)->Range(2, 64);
BENCHMARK(BM_DisjointDecomposition<3>)->RangeMultiplier(2)->Range(2, 64);

template <std::size_t N>
void BM_NormalizeBoxList(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  const std::vector<Box<N>> boxes = random_boxes<N>(k, 300, 6);
  std::size_t pieces = 0;
  for (auto _ : state) {
    BoxSet<N> s = BoxSet<N>::from_boxes(boxes);
    pieces = s.box_count();
    benchmark::DoNotOptimize(s);
  }
  state.counters["pieces"] = static_cast<double>(pieces);
}
BENCHMARK(BM_NormalizeBoxList<1>)->RangeMultiplier(2)->Range(2, 64);
BENCHMARK(BM_NormalizeBoxList<2>)->RangeMultiplier(2)->Range(2, 64);
BENCHMARK(BM_NormalizeBoxList<3>)->RangeMultiplier(2)->Range(2, 64);

}  // namespace

BENCHMARK_MAIN();
