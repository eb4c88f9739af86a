// End-to-end: OpenCL C source -> analysis -> byte ranges of launch partitions, compared with an
// execution oracle (a C++ mirror of each kernel run over every work-item of the partition).
#include <gtest/gtest.h>

#include <random>

#include "analysis/test_support.hpp"

namespace unimem {
namespace {

using test::execute;
using test::Item;
using test::nd;
using test::to_intervals;
using test::Touched;

void check_kernel(const std::string& source, const std::string& kernel, const NDRange& range,
                  const LaunchArguments& args,
                  const std::function<void(const Item&, Touched&)>& mirror,
                  const std::string& options = "", std::uint32_t seed = 1) {
  const KernelRangeGenerator gen(test::analyze_kernel(source, kernel, options));
  for (const Box<3>& g : test::random_group_boxes(range, seed, 6)) {
    SCOPED_TRACE(test::describe(seed, g));
    test::expect_matches(gen.ranges(range, g, args), execute(range, g, mirror), test::Claim::safe);
  }
}

TEST(KernelRanges, VectorAddIsExactPerPartition) {
  const char* src = R"(
    __kernel void vadd(__global const float* a, __global const float* b, __global float* c) {
      size_t i = get_global_id(0);
      c[i] = a[i] + b[i];
    })";
  const NDRange r = nd({64, 1, 1}, {8, 1, 1}, 1);
  check_kernel(src, "vadd", r, {}, [](const Item& it, Touched& t) {
    t.load("a", it.global_id[0], 4);
    t.load("b", it.global_id[0], 4);
    t.store("c", it.global_id[0], 4);
  });
  const KernelRangeGenerator gen(test::analyze_kernel(src, "vadd"));
  EXPECT_TRUE(gen.splittable(r, {}));
}

TEST(KernelRanges, GlobalOffsetShiftsRanges) {
  const char* src = R"(
    __kernel void scale(__global float* x, int n) {
      int i = get_global_id(0);
      if (i < n) x[i] = 2.0f * x[i];
    })";
  NDRange r = nd({32, 1, 1}, {4, 1, 1}, 1);
  r.offset = {8, 0, 0};
  LaunchArguments args;
  args.set_scalar(1, 30);
  check_kernel(src, "scale", r, args, [](const Item& it, Touched& t) {
    if (it.global_id[0] < 30) {
      t.load("x", it.global_id[0], 4);
      t.store("x", it.global_id[0], 4);
    }
  });
}

TEST(KernelRanges, Stencil2DWithBoundaryGuardAndHelperFunction) {
  const char* src = R"(
    float at(__global const float* g, int x, int y, int w) { return g[y * w + x]; }
    __kernel void stencil(__global const float* in, __global float* out, int w, int h) {
      int x = get_global_id(0);
      int y = get_global_id(1);
      if (x > 0 && x < w - 1 && y > 0 && y < h - 1)
        out[y * w + x] = at(in, x, y, w) + at(in, x - 1, y, w) + at(in, x + 1, y, w)
                       + at(in, x, y - 1, w) + at(in, x, y + 1, w);
    })";
  const NDRange r = nd({16, 12, 1}, {4, 3, 1}, 2);
  LaunchArguments args;
  args.set_scalar(2, 16);
  args.set_scalar(3, 12);
  check_kernel(src, "stencil", r, args, [](const Item& it, Touched& t) {
    const auto x = it.global_id[0];
    const auto y = it.global_id[1];
    if (x > 0 && x < 15 && y > 0 && y < 11) {
      for (auto [dx, dy] : {std::pair{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}}) {
        t.load("in", (y + dy) * 16 + x + dx, 4);
      }
      t.store("out", y * 16 + x, 4);
    }
  });
}

TEST(KernelRanges, Stencil3DWithDefinedSizes) {
  const char* src = R"(
    #define IDX(x, y, z) (((z) * NY + (y)) * NX + (x))
    __kernel void heat(__global const double* u, __global double* v) {
      int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
      if (x >= 1 && x < NX - 1 && y >= 1 && y < NY - 1 && z >= 1 && z < NZ - 1) {
        v[IDX(x, y, z)] = u[IDX(x - 1, y, z)] + u[IDX(x + 1, y, z)] + u[IDX(x, y - 1, z)]
                        + u[IDX(x, y + 1, z)] + u[IDX(x, y, z - 1)] + u[IDX(x, y, z + 1)];
      }
    })";
  const NDRange r = nd({8, 8, 6}, {4, 2, 2}, 3);
  check_kernel(
      src, "heat", r, {},
      [](const Item& it, Touched& t) {
        const auto x = it.global_id[0], y = it.global_id[1], z = it.global_id[2];
        auto idx = [](std::int64_t a, std::int64_t b, std::int64_t c) {
          return (c * 8 + b) * 8 + a;
        };
        if (x >= 1 && x < 7 && y >= 1 && y < 7 && z >= 1 && z < 5) {
          t.store("v", idx(x, y, z), 8);
          t.load("u", idx(x - 1, y, z), 8);
          t.load("u", idx(x + 1, y, z), 8);
          t.load("u", idx(x, y - 1, z), 8);
          t.load("u", idx(x, y + 1, z), 8);
          t.load("u", idx(x, y, z - 1), 8);
          t.load("u", idx(x, y, z + 1), 8);
        }
      },
      "-D NX=8 -DNY=8 -D NZ=6");
}

TEST(KernelRanges, MatmulLoopWithScalarSize) {
  const char* src = R"(
    __kernel void mm(__global const float* A, __global const float* B, __global float* C, int n) {
      int i = get_global_id(1), j = get_global_id(0);
      float s = 0;
      for (int k = 0; k < n; ++k) s += A[i * n + k] * B[k * n + j];
      C[i * n + j] = s;
    })";
  const NDRange r = nd({12, 12, 1}, {4, 4, 1}, 2);
  LaunchArguments args;
  args.set_scalar(3, 12);
  check_kernel(src, "mm", r, args, [](const Item& it, Touched& t) {
    const auto i = it.global_id[1], j = it.global_id[0];
    for (int k = 0; k < 12; ++k) {
      t.load("A", i * 12 + k, 4);
      t.load("B", k * 12 + j, 4);
    }
    t.store("C", i * 12 + j, 4);
  });
}

TEST(KernelRanges, TriangularLoopsAreExact) {
  const char* src = R"(
    __kernel void lower(__global float* a, int n) {
      int i = get_global_id(0);
      for (int j = 0; j <= i; ++j) a[i * n + j] *= 2.0f;
    }
    __kernel void upper(__global const float* a, __global float* b, int n) {
      int i = get_global_id(0);
      float s = 0;
      for (int j = i + 1; j < n; ++j) s += a[i * n + j];
      b[i] = s;
    })";
  const NDRange r = nd({16, 1, 1}, {4, 1, 1}, 1);
  LaunchArguments args;
  args.set_scalar(1, 16);
  check_kernel(src, "lower", r, args, [](const Item& it, Touched& t) {
    for (std::int64_t j = 0; j <= it.global_id[0]; ++j) {
      t.load("a", it.global_id[0] * 16 + j, 4);
      t.store("a", it.global_id[0] * 16 + j, 4);
    }
  });
  LaunchArguments args2;
  args2.set_scalar(2, 16);
  check_kernel(src, "upper", r, args2, [](const Item& it, Touched& t) {
    for (std::int64_t j = it.global_id[0] + 1; j < 16; ++j)
      t.load("a", it.global_id[0] * 16 + j, 4);
    t.store("b", it.global_id[0], 4);
  });
  const KernelAccessInfo k = test::analyze_kernel(src, "lower");
  EXPECT_EQ(k.stats.affine_general, 2U);
}

TEST(KernelRanges, ClampedNeighboursUseMinMaxPieces) {
  const char* src = R"(
    __kernel void blur(__global const int* in, __global int* out, int n) {
      int i = get_global_id(0);
      out[i] = in[clamp(i - 2, 0, n - 1)] + in[min(i + 3, n - 1)];
    })";
  const NDRange r = nd({32, 1, 1}, {8, 1, 1}, 1);
  LaunchArguments args;
  args.set_scalar(2, 32);
  check_kernel(src, "blur", r, args, [](const Item& it, Touched& t) {
    const auto i = it.global_id[0];
    t.load("in", std::clamp<std::int64_t>(i - 2, 0, 31), 4);
    t.load("in", std::min<std::int64_t>(i + 3, 31), 4);
    t.store("out", i, 4);
  });
}

TEST(KernelRanges, StridedColumnAccessWithScalarOffset) {
  const char* src = R"(
    __kernel void column(__global const float* m, __global float* col, int stride, int c, int base) {
      int r = get_global_id(0);
      col[base + r] = m[r * stride + c];
    })";
  const NDRange r = nd({10, 1, 1}, {2, 1, 1}, 1);
  LaunchArguments args;
  args.set_scalar(2, 7);
  args.set_scalar(3, 3);
  args.set_scalar(4, 5);
  check_kernel(src, "column", r, args, [](const Item& it, Touched& t) {
    t.store("col", 5 + it.global_id[0], 4);
    t.load("m", it.global_id[0] * 7 + 3, 4);
  });
}

TEST(KernelRanges, IndirectReadFallsBackToWholeBuffer) {
  const char* src = R"(
    __kernel void gather(__global const float* in, __global const int* idx, __global float* out) {
      int i = get_global_id(0);
      out[i] = in[idx[i]];
    })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "gather"));
  const NDRange r = nd({16, 1, 1}, {4, 1, 1}, 1);
  LaunchArguments args;
  EXPECT_THROW((void)gen.ranges(r, all_groups(r), args), PreconditionError);  // needs size
  args.set_buffer_size(0, 400);
  const Box<3> g({1, 0, 0}, {2, 1, 1});
  const LaunchRanges lr = gen.ranges(r, g, args);
  const ArgumentRanges* in = lr.find("in");
  ASSERT_NE(in, nullptr);
  EXPECT_FALSE(in->read_exact);
  EXPECT_EQ(in->read, IntervalSet(Interval{0, 400}));
  EXPECT_EQ(lr.find("idx")->read, IntervalSet(Interval{16, 32}));
  EXPECT_TRUE(lr.find("idx")->read_exact);
  EXPECT_EQ(lr.find("out")->write, IntervalSet(Interval{16, 32}));
  EXPECT_TRUE(gen.splittable(r, args));
  EXPECT_EQ(gen.kernel().stats.indirect, 1U);
}

TEST(KernelRanges, IndirectWriteMakesKernelUnsplittable) {
  const char* src = R"(
    __kernel void scatter(__global const float* in, __global const int* idx, __global float* out) {
      int i = get_global_id(0);
      out[idx[i]] = in[i];
    })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "scatter"));
  EXPECT_FALSE(gen.kernel().statically_splittable);
  const NDRange r = nd({16, 1, 1}, {4, 1, 1}, 1);
  LaunchArguments args;
  args.set_buffer_size(2, 256);
  const LaunchRanges lr = gen.ranges(r, all_groups(r), args);
  EXPECT_FALSE(lr.splittable);
  EXPECT_EQ(lr.find("out")->write, IntervalSet(Interval{0, 256}));
  EXPECT_TRUE(lr.find("out")->write_conditional);
  EXPECT_FALSE(gen.splittable(r, args));
}

TEST(KernelRanges, DataDependentGuardGivesConditionalWrite) {
  const char* src = R"(
    __kernel void relu(__global const float* in, __global float* out) {
      int i = get_global_id(0);
      if (in[i] > 0.0f) out[i] = in[i];
    })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "relu"));
  const NDRange r = nd({16, 1, 1}, {4, 1, 1}, 1);
  const Box<3> all = all_groups(r);
  const Box<3> g({2, 0, 0}, all.max());
  const LaunchRanges lr = gen.ranges(r, g, {});
  const ArgumentRanges* out = lr.find("out");
  EXPECT_TRUE(out->write_conditional);
  EXPECT_TRUE(out->write_exact);  // exact as a may-write set
  EXPECT_EQ(out->write, IntervalSet(Interval{32, 64}));
  EXPECT_TRUE(gen.splittable(r, {}));
}

TEST(KernelRanges, ReductionByGroupIsSplittableButAtomicSumIsNot) {
  const char* src = R"(
    __kernel void partial(__global const float* in, __global float* sums, __local float* tmp) {
      int l = get_local_id(0);
      tmp[l] = in[get_global_id(0)];
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s) tmp[l] += tmp[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (l == 0) sums[get_group_id(0)] = tmp[0];
    }
    __kernel void total(__global const int* in, __global int* sum) {
      atomic_add(&sum[0], in[get_global_id(0)]);
    })";
  const NDRange r = nd({64, 1, 1}, {16, 1, 1}, 1);
  check_kernel(src, "partial", r, {}, [](const Item& it, Touched& t) {
    t.load("in", it.global_id[0], 4);
    if (it.local_id[0] == 0) t.store("sums", it.group_id[0], 4);
  });
  const KernelRangeGenerator partial(test::analyze_kernel(src, "partial"));
  EXPECT_TRUE(partial.splittable(r, {}));
  // Only the two global references count; __local tmp[] traffic is not shared memory.
  EXPECT_EQ(partial.kernel().stats.total, 2U);
  EXPECT_EQ(partial.kernel().stats.unknown_call, 0U);
  const KernelRangeGenerator total(test::analyze_kernel(src, "total"));
  std::string why;
  EXPECT_FALSE(total.splittable(r, {}, &why));
  EXPECT_NE(why.find("sum"), std::string::npos) << why;
  const LaunchRanges lr = total.ranges(r, all_groups(r), {});
  EXPECT_EQ(lr.find("sum")->write, IntervalSet(Interval{0, 4}));
  EXPECT_EQ(lr.find("sum")->read, IntervalSet(Interval{0, 4}));
}

TEST(KernelRanges, OverlappingWritesAcrossGroupsAreNotSplittable) {
  const char* src = R"(
    __kernel void smear(__global float* a) {
      int i = get_global_id(0);
      a[i] = 0.0f;
      a[i + 1] = 1.0f;
    })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "smear"));
  const NDRange r = nd({16, 1, 1}, {4, 1, 1}, 1);
  EXPECT_FALSE(gen.splittable(r, {}));
  // One work-group per launch: nothing to collide with.
  EXPECT_TRUE(gen.splittable(nd({4, 1, 1}, {4, 1, 1}, 1), {}));
}

TEST(KernelRanges, MissingScalarValueIsReported) {
  const char* src = R"(
    __kernel void row(__global float* a, int n) { a[get_global_id(0) * n] = 1.0f; })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "row"));
  const NDRange r = nd({4, 1, 1}, {4, 1, 1}, 1);
  try {
    (void)gen.ranges(r, all_groups(r), {});
    FAIL() << "expected PreconditionError";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
  }
}

TEST(KernelRanges, ModuloGuardIsExact) {
  // i % 2 == 0 becomes a test of the low bit (a truncation to i1), read as i - 2*q == 0 with an
  // existential quotient q: the write set is exact, not a superset and never a subset.
  const char* src = R"(
    __kernel void even_window(__global int* a, int lo, int hi) {
      int i = get_global_id(0);
      if (i >= lo && i < hi && i % 2 == 0) a[i] = i;
    })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "even_window"));
  const NDRange r = nd({64, 1, 1}, {8, 1, 1}, 1);
  LaunchArguments args;
  args.set_scalar(1, 5);
  args.set_scalar(2, 40);
  const LaunchRanges lr = gen.ranges(r, all_groups(r), args);
  const Touched t = execute(r, all_groups(r), [](const Item& it, Touched& tt) {
    const auto i = it.global_id[0];
    if (i >= 5 && i < 40 && i % 2 == 0) tt.store("a", i, 4);
  });
  EXPECT_EQ(lr.find("a")->write, to_intervals(t.write.at("a")));
  EXPECT_TRUE(lr.find("a")->write_exact);
  EXPECT_FALSE(lr.find("a")->write_conditional);
}

TEST(KernelRanges, DivisionAndRemainderByConstantsAreExact) {
  const char* src = R"(
    __kernel void halves(__global const float* in, __global float* out, __global int* flags) {
      int i = get_global_id(0);
      out[i] = in[i / 2] + in[(i >> 2) + 40];
      if (i % 4 == 1) flags[i / 4] = i;
    })";
  const NDRange r = nd({64, 1, 1}, {8, 1, 1}, 1);
  check_kernel(src, "halves", r, {}, [](const Item& it, Touched& t) {
    const auto i = it.global_id[0];
    t.load("in", i / 2, 4);
    t.load("in", (i >> 2) + 40, 4);
    t.store("out", i, 4);
    if (i % 4 == 1) t.store("flags", i / 4, 4);
  });
  const KernelRangeGenerator gen(test::analyze_kernel(src, "halves"));
  EXPECT_TRUE(gen.splittable(r, {}));
}

}  // namespace
}  // namespace unimem
