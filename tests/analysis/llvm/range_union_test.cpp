// Launch-time range evaluation at sizes where pieces produce many intervals each: pieces are
// united as boxes, boxes with more than the probe limit (64 intervals) are trimmed against the
// bytes other pieces already cover, and enumerated triangles are coalesced. Compared with an
// execution oracle (every work-item of the partition run through a C++ mirror of the kernel).
#include <gtest/gtest.h>

#include <random>

#include "analysis/test_support.hpp"

namespace unimem {
namespace {

using test::execute;
using test::Item;
using test::nd;
using test::Touched;

/// The whole grid, its halves along the slowest dimension and a few random boxes (fixed seed).
std::vector<Box<3>> partitions(const NDRange& range, std::uint32_t seed) {
  const Box<3> all = all_groups(range);
  std::vector<Box<3>> out{all};
  const std::size_t d = range.dims - 1;
  Box<3>::Point middle_max = all.max();
  middle_max[d] /= 2;
  Box<3>::Point middle_min = all.min();
  middle_min[d] = middle_max[d];
  out.emplace_back(all.min(), middle_max);
  out.emplace_back(middle_min, all.max());
  const std::vector<Box<3>> random = test::random_group_boxes(range, seed, 2);
  out.insert(out.end(), random.begin() + 1, random.end());  // [0] is the whole grid again
  return out;
}

void check(const std::string& source, const std::string& kernel, const NDRange& range,
           const LaunchArguments& args, const std::function<void(const Item&, Touched&)>& mirror,
           const std::string& options = "") {
  const KernelRangeGenerator gen(test::analyze_kernel(source, kernel, options));
  const std::uint32_t seed = 7;
  for (const Box<3>& g : partitions(range, seed)) {
    SCOPED_TRACE(test::describe(seed, g));
    test::expect_matches(gen.ranges(range, g, args), execute(range, g, mirror), test::Claim::exact);
  }
}

TEST(RangeUnion, HaloLoadsGuardedByLocalIdAreTrimmedAgainstTheMainRun) {
  // Like stencil1d_local: the halo loads (l < 2) give one short interval per work-group, all but
  // the first inside the main load's run.
  const char* src = R"(
    __kernel void k(__global const float* in, __global float* out) {
      int l = get_local_id(0);
      int g = get_global_id(0);
      int size = get_local_size(0);
      float s = in[g + 2];
      if (l < 2) s += in[g] + in[g + size + 2];
      out[g] = s;
    })";
  check(src, "k", nd({2048, 1, 1}, {16, 1, 1}, 1), {}, [](const Item& it, Touched& t) {
    const std::int64_t g = it.global_id[0];
    t.load("in", g + 2, 4);
    if (it.local_id[0] < 2) {
      t.load("in", g, 4);
      t.load("in", g + 16 + 2, 4);
    }
    t.store("out", g, 4);
  });
}

TEST(RangeUnion, FivePointStencilWithBoundaryBranchGivesWholeRows) {
  const char* src = R"(
    __kernel void k(__global const float* in, __global float* out, int w, int h) {
      int x = get_global_id(0);
      int y = get_global_id(1);
      if (x >= w || y >= h) return;
      if (x > 0 && x < w - 1 && y > 0 && y < h - 1)
        out[y * w + x] = in[y * w + x] + in[y * w + x - 1] + in[y * w + x + 1] +
                         in[(y - 1) * w + x] + in[(y + 1) * w + x];
      else
        out[y * w + x] = in[y * w + x];
    })";
  LaunchArguments args;
  args.set_scalar(2, 96);
  args.set_scalar(3, 72);
  check(src, "k", nd({96, 72, 1}, {16, 8, 1}, 2), args, [](const Item& it, Touched& t) {
    const std::int64_t x = it.global_id[0];
    const std::int64_t y = it.global_id[1];
    if (x > 0 && x < 95 && y > 0 && y < 71) {
      for (auto [dx, dy] : {std::pair{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}}) {
        t.load("in", (y + dy) * 96 + x + dx, 4);
      }
    } else {
      t.load("in", y * 96 + x, 4);
    }
    t.store("out", y * 96 + x, 4);
  });
}

TEST(RangeUnion, InteriorOnlySevenPointStencilIn3D) {
  const char* src = R"(
    __kernel void k(__global const float* in, __global float* out, int n) {
      int x = get_global_id(0);
      int y = get_global_id(1);
      int z = get_global_id(2);
      if (x > 0 && x < n - 1 && y > 0 && y < n - 1 && z > 0 && z < n - 1) {
        int c = (z * n + y) * n + x;
        out[c] = in[c - 1] + in[c + 1] + in[c - n] + in[c + n] + in[c - n * n] + in[c + n * n];
      }
    })";
  LaunchArguments args;
  args.set_scalar(2, 20);
  check(src, "k", nd({20, 20, 20}, {4, 4, 4}, 3), args, [](const Item& it, Touched& t) {
    const std::int64_t x = it.global_id[0];
    const std::int64_t y = it.global_id[1];
    const std::int64_t z = it.global_id[2];
    if (x > 0 && x < 19 && y > 0 && y < 19 && z > 0 && z < 19) {
      const std::int64_t c = (z * 20 + y) * 20 + x;
      for (std::int64_t d : {-1, 1, -20, 20, -20 * 20, 20 * 20}) t.load("in", c + d, 4);
      t.store("out", c, 4);
    }
  });
}

TEST(RangeUnion, LowerTriangleRowsAreCoalescedExactly) {
  // Like syrk_lower: the reads a[j*m + k] for j <= i enumerate i and coalesce.
  const char* src = R"(
    __kernel void k(__global const float* a, __global float* c, int n, int m) {
      int j = get_global_id(0);
      int i = get_global_id(1);
      if (j > i) return;
      float sum = 0.0f;
      for (int k = 0; k < m; ++k) sum += a[i * m + k] * a[j * m + k];
      c[i * n + j] += sum;
    })";
  LaunchArguments args;
  args.set_scalar(2, 96);
  args.set_scalar(3, 5);
  check(src, "k", nd({96, 96, 1}, {8, 8, 1}, 2), args, [](const Item& it, Touched& t) {
    const std::int64_t j = it.global_id[0];
    const std::int64_t i = it.global_id[1];
    if (j > i) return;
    for (std::int64_t k = 0; k < 5; ++k) {
      t.load("a", i * 5 + k, 4);
      t.load("a", j * 5 + k, 4);
    }
    t.load("c", i * 96 + j, 4);
    t.store("c", i * 96 + j, 4);
  });
}

}  // namespace
}  // namespace unimem
