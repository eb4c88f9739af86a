// DSOM Fig. 10 fast range generation (000_7b2a075be0870d8f.txt) against naive enumeration of
// every point, on access patterns the seeds' workloads produce, plus Layout::bytes_of for boxes.
// After the runs a summary prints naive / fast CPU-time ratios per pattern.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "region/layout.hpp"
#include "region/range_generator.hpp"

namespace {

using unimem::AffineAccess;
using unimem::Box;
using unimem::Layout;

constexpr std::uint64_t kFloat = 4;
constexpr std::uint64_t kLimit = std::numeric_limits<std::uint64_t>::max();

struct Pattern {
  std::string name;
  AffineAccess access;
};

std::vector<Pattern> patterns() {
  constexpr std::int64_t n = 8192;  // columns of a large float matrix
  constexpr std::int64_t v = 512;   // edge of a float volume
  return {
      // One work-group reading a contiguous block of 2^20 floats.
      {"row_block_1d", {0, {{1, 1 << 20, (2 << 20) - 1}}}},
      // A 256 x 256 tile (rows 1024.., columns 512..) of an 8192-column matrix.
      {"tile_2d_256x256", {0, {{n, 1024, 1279}, {1, 512, 767}}}},
      // One column (column 17) of all 8192 rows.
      {"column_8192", {17, {{n, 0, n - 1}}}},
      // A 64^3 block of a 512^3 volume read with a one-element halo (66^3 points).
      {"stencil_3d_64cube_halo", {0, {{v * v, 63, 128}, {v, 63, 128}, {1, 63, 128}}}},
      // Work-group x local id x loop, as DSOM Fig. 8 writes subscripts: f = 256*wg + lid + 8192*i.
      {"workgroup_loop_2d", {0, {{256, 0, 31}, {1, 0, 255}, {n, 0, 63}}}},
  };
}

void check_same(const Pattern& p) {
  const auto fast = unimem::generate_ranges(p.access, kFloat, kLimit);
  const auto naive = unimem::enumerate_ranges_naive(p.access, kFloat);
  if (!fast.exact || fast.bytes != naive) {
    std::fprintf(stderr, "range generation mismatch on %s\n", p.name.c_str());
    std::abort();
  }
}

// Both variants report the same counters: points of the domain, intervals of the result.
void set_counters(benchmark::State& state, const Pattern& p, std::uint64_t intervals) {
  std::uint64_t points = 1;
  for (const auto& t : p.access.terms) points *= static_cast<std::uint64_t>(t.upper - t.lower + 1);
  state.counters["points"] = static_cast<double>(points);
  state.counters["intervals"] = static_cast<double>(intervals);
}

void run_fast(benchmark::State& state, const Pattern& p) {
  std::uint64_t intervals = 0;
  for (auto _ : state) {
    auto r = unimem::generate_ranges(p.access, kFloat, kLimit);
    intervals = r.bytes.interval_count();
    benchmark::DoNotOptimize(r);
  }
  set_counters(state, p, intervals);
}

void run_naive(benchmark::State& state, const Pattern& p) {
  std::uint64_t intervals = 0;
  for (auto _ : state) {
    auto r = unimem::enumerate_ranges_naive(p.access, kFloat);
    intervals = r.interval_count();
    benchmark::DoNotOptimize(r);
  }
  set_counters(state, p, intervals);
}

template <std::size_t N>
void run_layout(benchmark::State& state, const Layout& layout, const Box<N>& box) {
  std::uint64_t intervals = 0;
  for (auto _ : state) {
    auto bytes = layout.bytes_of(box);
    intervals = bytes.interval_count();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["points"] = static_cast<double>(box.volume());
  state.counters["intervals"] = static_cast<double>(intervals);
}

// Console output as usual, plus the per-iteration CPU time of every run for the summary (CPU time,
// not wall time, so that other processes on a loaded machine distort the ratio less).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& reports) override {
    for (const Run& r : reports) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) {
        seconds_[r.benchmark_name()] = r.cpu_accumulated_time / static_cast<double>(r.iterations);
      }
    }
    ConsoleReporter::ReportRuns(reports);
  }
  void print_ratios(const std::vector<Pattern>& ps) const {
    std::printf("\nfast range generation vs naive enumeration (CPU time per call)\n");
    std::printf("%-26s %14s %14s %10s\n", "pattern", "naive [us]", "fast [us]", "speedup");
    for (const Pattern& p : ps) {
      const auto naive = seconds_.find("naive/" + p.name);
      const auto fast = seconds_.find("fast/" + p.name);
      if (naive == seconds_.end() || fast == seconds_.end()) continue;
      std::printf("%-26s %14.2f %14.3f %9.0fx\n", p.name.c_str(), naive->second * 1e6,
                  fast->second * 1e6, naive->second / fast->second);
    }
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Pattern> ps = patterns();
  for (const Pattern& p : ps) {
    check_same(p);
    benchmark::RegisterBenchmark(("fast/" + p.name).c_str(),
                                 [&p](benchmark::State& s) { run_fast(s, p); });
    benchmark::RegisterBenchmark(("naive/" + p.name).c_str(), [&p](benchmark::State& s) {
      run_naive(s, p);
    })->Unit(benchmark::kMicrosecond);
  }
  const Layout matrix(kFloat, {8192, 8192});
  const Layout pitched_matrix(kFloat, {8192, 8000}, {8192 * kFloat});
  const Layout volume(kFloat, {512, 512, 512});
  benchmark::RegisterBenchmark("layout_bytes_of/tile_2d_256x256", [&](benchmark::State& s) {
    run_layout(s, matrix, Box<2>({1024, 512}, {1280, 768}));
  });
  benchmark::RegisterBenchmark("layout_bytes_of/full_rows_2d_pitched", [&](benchmark::State& s) {
    run_layout(s, pitched_matrix, Box<2>({0, 0}, {1024, 8000}));
  });
  benchmark::RegisterBenchmark("layout_bytes_of/full_rows_2d_tight", [&](benchmark::State& s) {
    run_layout(s, matrix, Box<2>({0, 0}, {1024, 8192}));
  });
  benchmark::RegisterBenchmark("layout_bytes_of/block_3d_66cube", [&](benchmark::State& s) {
    run_layout(s, volume, Box<3>({63, 63, 63}, {129, 129, 129}));
  });

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios(ps);
  benchmark::Shutdown();
  return 0;
}
