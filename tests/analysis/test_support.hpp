#pragma once

// Helpers for the analysis tests: analyse a source, evaluate a launch, and an execution oracle
// that visits every work-item of a group box and records the bytes a hand-written C++ mirror of
// the kernel touches.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "analysis/program_analyzer.hpp"
#include "analysis/range_generator.hpp"

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

inline Touched execute(const NDRange& range, const GroupBox& groups,
                       const std::function<void(const Item&, Touched&)>& kernel) {
  Touched t;
  Item it{};
  for (std::size_t d = 0; d < 3; ++d) {
    it.global_size[d] = static_cast<std::int64_t>(range.global[d]);
    it.local_size[d] = static_cast<std::int64_t>(range.local[d]);
  }
  for (std::uint64_t gz = groups.begin[2]; gz < groups.end[2]; ++gz)
    for (std::uint64_t gy = groups.begin[1]; gy < groups.end[1]; ++gy)
      for (std::uint64_t gx = groups.begin[0]; gx < groups.end[0]; ++gx)
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

}  // namespace unimem::test
