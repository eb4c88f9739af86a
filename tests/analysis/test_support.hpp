#pragma once

// Helpers for the analysis tests: analyse a source, evaluate a launch, and an execution oracle
// that visits every work-item of a group box and records the bytes a hand-written C++ mirror of
// the kernel touches.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/kernel_ranges.hpp"
#include "analysis/program_analyzer.hpp"

namespace unimem::test {

inline KernelAccessInfo analyze_kernel(const std::string& source, const std::string& kernel,
                                       const std::string& options = "") {
  const ProgramAccessInfo program = analyze_program(source, options);
  const KernelAccessInfo* k = program.find_kernel(kernel);
  if (k == nullptr) throw std::runtime_error("no kernel " + kernel);
  return *k;
}

inline NDRange nd(std::array<std::uint64_t, 3> global, std::array<std::uint64_t, 3> local,
                  std::uint32_t dims) {
  NDRange r;
  r.dims = dims;
  r.global = global;
  r.local = local;
  return r;
}

/// One work-item as the oracle sees it.
struct Item {
  std::array<std::int64_t, 3> global_id;
  std::array<std::int64_t, 3> local_id;
  std::array<std::int64_t, 3> group_id;
  std::array<std::int64_t, 3> global_size;
  std::array<std::int64_t, 3> local_size;
};

/// Bytes touched per argument name, as the oracle records them.
struct Touched {
  std::map<std::string, std::set<std::uint64_t>> read;
  std::map<std::string, std::set<std::uint64_t>> write;
  void load(const std::string& arg, std::int64_t element, std::uint64_t size) {
    for (std::uint64_t b = 0; b < size; ++b) read[arg].insert(element * size + b);
  }
  void store(const std::string& arg, std::int64_t element, std::uint64_t size) {
    for (std::uint64_t b = 0; b < size; ++b) write[arg].insert(element * size + b);
  }
};

inline Touched execute(const NDRange& range, const Box<3>& groups,
                       const std::function<void(const Item&, Touched&)>& kernel) {
  Touched t;
  Item it{};
  for (std::size_t d = 0; d < 3; ++d) {
    it.global_size[d] = static_cast<std::int64_t>(range.global[d]);
    it.local_size[d] = static_cast<std::int64_t>(range.local[d]);
  }
  const auto begin = [&groups](std::size_t d) {
    return static_cast<std::uint64_t>(groups.min()[d]);
  };
  const auto end = [&groups](std::size_t d) { return static_cast<std::uint64_t>(groups.max()[d]); };
  for (std::uint64_t gz = begin(2); gz < end(2); ++gz)
    for (std::uint64_t gy = begin(1); gy < end(1); ++gy)
      for (std::uint64_t gx = begin(0); gx < end(0); ++gx)
        for (std::uint64_t lz = 0; lz < range.local[2]; ++lz)
          for (std::uint64_t ly = 0; ly < range.local[1]; ++ly)
            for (std::uint64_t lx = 0; lx < range.local[0]; ++lx) {
              const std::array<std::uint64_t, 3> g{gx, gy, gz};
              const std::array<std::uint64_t, 3> l{lx, ly, lz};
              for (std::size_t d = 0; d < 3; ++d) {
                it.group_id[d] = static_cast<std::int64_t>(g[d]);
                it.local_id[d] = static_cast<std::int64_t>(l[d]);
                it.global_id[d] =
                    static_cast<std::int64_t>(g[d] * range.local[d] + l[d] + range.offset[d]);
              }
              kernel(it, t);
            }
  return t;
}

inline IntervalSet to_intervals(const std::set<std::uint64_t>& bytes) {
  std::vector<Interval> v;
  for (std::uint64_t b : bytes) v.emplace_back(b, b + 1);
  return IntervalSet::from_unsorted(std::move(v));
}

/// The whole group grid plus `count` random non-empty sub-boxes of it (fixed seed).
inline std::vector<Box<3>> random_group_boxes(const NDRange& range, std::uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<Box<3>> out{all_groups(range)};
  const auto n = num_groups(range);
  for (int i = 0; i < count; ++i) {
    Box<3>::Point begin{};
    Box<3>::Point end{};
    for (std::size_t d = 0; d < 3; ++d) {
      std::uniform_int_distribution<std::uint64_t> pick(0, n[d] - 1);
      std::uint64_t x = pick(rng);
      std::uint64_t y = pick(rng);
      if (x > y) std::swap(x, y);
      begin[d] = static_cast<std::int64_t>(x);
      end[d] = static_cast<std::int64_t>(y + 1);
    }
    out.emplace_back(begin, end);
  }
  return out;
}

/// "seed=S groups x[a,b) y[c,d) z[e,f)", for SCOPED_TRACE.
inline std::string describe(std::uint32_t seed, const Box<3>& g) {
  std::string out = "seed=" + std::to_string(seed) + " groups";
  for (std::size_t d = 0; d < 3; ++d) {
    out += std::string(" ") + "xyz"[d] + "[" + std::to_string(g.min()[d]) + "," +
           std::to_string(g.max()[d]) + ")";
  }
  return out;
}

/// What the analysis must claim for a launch partition, compared with the execution oracle.
enum class Claim {
  exact,  ///< read and write claimed exact, and equal to what the kernel touched
  safe,   ///< equal where claimed exact, a superset where claimed approximate
};

/// Checks every buffer argument of r against the bytes the oracle recorded.
inline void expect_matches(const LaunchRanges& r, const Touched& t, Claim claim) {
  for (const ArgumentRanges& a : r.args) {
    SCOPED_TRACE("argument " + a.name);
    const IntervalSet read = t.read.count(a.name) ? to_intervals(t.read.at(a.name)) : IntervalSet{};
    const IntervalSet write =
        t.write.count(a.name) ? to_intervals(t.write.at(a.name)) : IntervalSet{};
    if (claim == Claim::exact) {
      EXPECT_TRUE(a.read_exact);
      EXPECT_TRUE(a.write_exact);
    }
    if (a.read_exact) {
      EXPECT_EQ(a.read, read) << "analysis " << a.read.to_string() << " oracle "
                              << read.to_string();
    } else {
      EXPECT_TRUE(a.read.contains(read)) << a.read.to_string() << " misses " << read.to_string();
    }
    if (a.write_exact) {
      EXPECT_EQ(a.write, write) << "analysis " << a.write.to_string() << " oracle "
                                << write.to_string();
    } else {
      EXPECT_TRUE(a.write.contains(write))
          << a.write.to_string() << " misses " << write.to_string();
    }
  }
}

}  // namespace unimem::test
