// Comparisons used as numbers inside subscripts: instcombine turns (j > 0) ? c - 1 : c into
// c + sext(j > 0), (j < n - 1) ? c + 1 : c into c + zext(j < n - 1), 2 * i + flag into an `or`,
// and && / || / != of flags into i1 logic. The analysis splits each into exact affine pieces; an
// execution oracle (a C++ mirror of the kernel) checks every byte range per partition, and the
// ranges must be claimed exact (a whole-buffer fallback would be safe but fails here).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "analysis/test_support.hpp"

namespace unimem {
namespace {

using test::execute;
using test::Item;
using test::nd;
using test::Touched;

void check_exact(const std::string& source, const std::string& kernel, const NDRange& range,
                 const LaunchArguments& args,
                 const std::function<void(const Item&, Touched&)>& mirror, std::uint32_t seed = 5) {
  const KernelAccessInfo info = test::analyze_kernel(source, kernel);
  for (const ArgumentAccess& a : info.args) {
    for (const auto* list : {&a.reads, &a.writes}) {
      for (const AccessPiece& p : *list) {
        EXPECT_TRUE(is_affine(p.access_class)) << a.name << ": " << p.reason;
      }
    }
  }
  const KernelRangeGenerator gen(info);
  EXPECT_TRUE(gen.splittable(range, args));
  for (const Box<3>& g : test::random_group_boxes(range, seed, 8)) {
    SCOPED_TRACE(test::describe(seed, g));
    const LaunchRanges r = gen.ranges(range, g, args);
    test::expect_matches(r, execute(range, g, mirror), test::Claim::exact);
    for (const ArgumentRanges& a : r.args) EXPECT_FALSE(a.write_conditional) << a.name;
  }
}

TEST(FlagSubscripts, ClampedSelectStencil2DWithRowBaseAndOffset) {
  const char* src = R"(
    __kernel void st(__global const float* in, __global float* out, int rows, int cols,
                     int row_base) {
      int j = get_global_id(0);
      int i = get_global_id(1);
      int c = (i - row_base) * cols + j;
      int north = (i > 0) ? c - cols : c;
      int south = (i < rows - 1) ? c + cols : c;
      int west = (j > 0) ? c - 1 : c;
      int east = (j < cols - 1) ? c + 1 : c;
      out[c] = in[c] + in[north] + in[south] + in[west] + in[east];
    })";
  const std::int64_t rows = 12;
  const std::int64_t cols = 8;
  const std::int64_t row_base = 2;  // the buffer starts one halo row above row 3
  NDRange r = nd({8, 9, 1}, {4, 3, 1}, 2);
  r.offset = {0, 3, 0};  // rows 3 .. 11 of the grid, the last one clamped south
  LaunchArguments args;
  args.set_scalar(2, rows);
  args.set_scalar(3, cols);
  args.set_scalar(4, row_base);
  check_exact(src, "st", r, args, [&](const Item& it, Touched& t) {
    const std::int64_t j = it.global_id[0];
    const std::int64_t i = it.global_id[1];
    const std::int64_t c = (i - row_base) * cols + j;
    t.load("in", c, 4);
    t.load("in", i > 0 ? c - cols : c, 4);
    t.load("in", i < rows - 1 ? c + cols : c, 4);
    t.load("in", j > 0 ? c - 1 : c, 4);
    t.load("in", j < cols - 1 ? c + 1 : c, 4);
    t.store("out", c, 4);
  });
}

TEST(FlagSubscripts, ClampedSelectStencil3D) {
  const char* src = R"(
    __kernel void st(__global const float* in, __global float* out, int n) {
      int x = get_global_id(0);
      int y = get_global_id(1);
      int z = get_global_id(2);
      int plane = n * n;
      int c = z * plane + y * n + x;
      out[c] = in[(x > 0) ? c - 1 : c] + in[(x < n - 1) ? c + 1 : c] +
               in[(y > 0) ? c - n : c] + in[(y < n - 1) ? c + n : c] +
               in[(z > 0) ? c - plane : c] + in[(z < n - 1) ? c + plane : c];
    })";
  const std::int64_t n = 6;
  const NDRange r = nd({6, 6, 6}, {3, 2, 3}, 3);
  LaunchArguments args;
  args.set_scalar(2, n);
  check_exact(src, "st", r, args, [&](const Item& it, Touched& t) {
    const std::int64_t x = it.global_id[0];
    const std::int64_t y = it.global_id[1];
    const std::int64_t z = it.global_id[2];
    const std::int64_t c = z * n * n + y * n + x;
    t.load("in", x > 0 ? c - 1 : c, 4);
    t.load("in", x < n - 1 ? c + 1 : c, 4);
    t.load("in", y > 0 ? c - n : c, 4);
    t.load("in", y < n - 1 ? c + n : c, 4);
    t.load("in", z > 0 ? c - n * n : c, 4);
    t.load("in", z < n - 1 ? c + n * n : c, 4);
    t.store("out", c, 4);
  });
}

TEST(FlagSubscripts, ComparisonsAsOffsetsAndInterleavedWrite) {
  const char* src = R"(
    __kernel void k(__global const int* in, __global int* out, int k, int lo, int hi) {
      int i = get_global_id(0);
      int a = in[i + (i >= k)];
      int b = in[2 * i - (i > lo) + (i < hi)];
      out[2 * i + (i >= k)] = a + b;
    })";
  for (const auto& [k, lo, hi] :
       {std::array<std::int64_t, 3>{20, 10, 40}, std::array<std::int64_t, 3>{0, -5, 100},
        std::array<std::int64_t, 3>{64, 50, 3}}) {
    SCOPED_TRACE("k=" + std::to_string(k) + " lo=" + std::to_string(lo) +
                 " hi=" + std::to_string(hi));
    const NDRange r = nd({64, 1, 1}, {8, 1, 1}, 1);
    LaunchArguments args;
    args.set_scalar(2, k);
    args.set_scalar(3, lo);
    args.set_scalar(4, hi);
    check_exact(src, "k", r, args, [&](const Item& it, Touched& t) {
      const std::int64_t i = it.global_id[0];
      t.load("in", i + (i >= k ? 1 : 0), 4);
      t.load("in", 2 * i - (i > lo ? 1 : 0) + (i < hi ? 1 : 0), 4);
      t.store("out", 2 * i + (i >= k ? 1 : 0), 4);
    });
  }
}

TEST(FlagSubscripts, AndOrXorNotOfFlags) {
  const char* src = R"(
    __kernel void k(__global const int* in, __global int* out, int lo, int hi) {
      int i = get_global_id(0);
      int a = in[i + (i > lo && i < hi)];
      int b = in[i + 2 * (i < lo || i > hi)];
      int c = in[i + 4 * ((i > lo) != (i > hi))];
      int d = in[i + 8 * !(i > lo)];
      int e = in[i + ((i > lo && i < hi) ? 16 : 0)];
      out[i] = a + b + c + d + e;
    })";
  for (const auto& [lo, hi] :
       {std::array<std::int64_t, 2>{10, 50}, std::array<std::int64_t, 2>{30, 20},
        std::array<std::int64_t, 2>{-1, 64}}) {
    SCOPED_TRACE("lo=" + std::to_string(lo) + " hi=" + std::to_string(hi));
    const NDRange r = nd({64, 1, 1}, {16, 1, 1}, 1);
    LaunchArguments args;
    args.set_scalar(2, lo);
    args.set_scalar(3, hi);
    check_exact(src, "k", r, args, [&](const Item& it, Touched& t) {
      const std::int64_t i = it.global_id[0];
      t.load("in", i + ((i > lo && i < hi) ? 1 : 0), 4);
      t.load("in", i + 2 * ((i < lo || i > hi) ? 1 : 0), 4);
      t.load("in", i + 4 * (((i > lo) != (i > hi)) ? 1 : 0), 4);
      t.load("in", i + 8 * (!(i > lo) ? 1 : 0), 4);
      t.load("in", i + ((i > lo && i < hi) ? 16 : 0), 4);
      t.store("out", i, 4);
    });
  }
}

TEST(FlagSubscripts, FlagOnANonAffineConditionIsNotExact) {
  // The flag compares loaded data: the read of in[i + flag] cannot be split exactly and must fall
  // back (never be claimed exact with one of its two cases missing).
  const char* src = R"(
    __kernel void k(__global const int* in, __global const int* sel, __global int* out) {
      int i = get_global_id(0);
      out[i] = in[i + (sel[i] > 0)];
    })";
  const KernelAccessInfo info = test::analyze_kernel(src, "k");
  const ArgumentAccess* in = info.find_arg("in");
  ASSERT_NE(in, nullptr);
  ASSERT_FALSE(in->reads.empty());
  bool fallback = false;
  for (const AccessPiece& p : in->reads) fallback = fallback || !is_affine(p.access_class);
  EXPECT_TRUE(fallback);
  const NDRange r = nd({32, 1, 1}, {8, 1, 1}, 1);
  const KernelRangeGenerator gen(info);
  LaunchArguments args;
  args.set_buffer_size(0, 33 * 4);
  args.set_buffer_size(1, 32 * 4);
  args.set_buffer_size(2, 32 * 4);
  const LaunchRanges ranges = gen.ranges(r, all_groups(r), args);
  for (const ArgumentRanges& a : ranges.args) {
    if (a.name == "in") {
      EXPECT_FALSE(a.read_exact);
    }
  }
}

}  // namespace
}  // namespace unimem
