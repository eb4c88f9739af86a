// Write injectivity over work-groups decided at analysis time with isl parameters (issue 5, Matz
// et al. section 4.1): kernels injective for every launch, never injective, and injective only
// for some scalar values or NDRange sizes. Every answer is compared with an execution oracle (a
// C++ mirror of the kernel run over every work-item, recording which group wrote each byte) and
// with the concrete launch-time isl check.
#include <gtest/gtest.h>

#include <map>

#include "analysis/isl/write_injectivity.hpp"
#include "analysis/test_support.hpp"

namespace unimem {
namespace {

using test::Item;
using test::nd;
using test::Touched;

struct Launch {
  NDRange range;
  std::vector<std::pair<std::uint32_t, std::int64_t>> scalars;
};

LaunchArguments arguments(const Launch& l) {
  LaunchArguments a;
  for (const auto& [i, v] : l.scalars) a.set_scalar(i, v);
  return a;
}

std::string describe(const Launch& l) {
  std::string s = "global " + std::to_string(l.range.global[0]) + "x" +
                  std::to_string(l.range.global[1]) + " local " + std::to_string(l.range.local[0]) +
                  "x" + std::to_string(l.range.local[1]);
  for (const auto& [i, v] : l.scalars) s += " arg" + std::to_string(i) + "=" + std::to_string(v);
  return s;
}

/// Oracle: whether two different work-groups write a common byte of any argument.
bool groups_collide(const NDRange& range, const std::function<void(const Item&, Touched&)>& k) {
  std::map<std::string, std::map<std::uint64_t, std::array<std::int64_t, 3>>> writer;
  const Box<3> all = all_groups(range);
  bool collide = false;
  test::execute(range, all, [&](const Item& it, Touched& unused) {
    (void)unused;
    Touched t;
    k(it, t);
    for (const auto& [arg, bytes] : t.write) {
      for (std::uint64_t b : bytes) {
        auto [pos, inserted] = writer[arg].emplace(b, it.group_id);
        if (!inserted && pos->second != it.group_id) collide = true;
      }
    }
  });
  return collide;
}

/// Checks the analysis-time verdict and, for every launch, splittable() against the oracle and
/// the concrete isl check. Returns the generator's count of launch-time isl checks.
using Mirror = std::function<void(const Launch&, const Item&, Touched&)>;

std::size_t check_launches(const KernelAccessInfo& k, WriteInjectivity expected,
                           const std::vector<Launch>& launches, const Mirror& mirror) {
  EXPECT_EQ(k.write_injectivity, expected)
      << "got " << to_string(k.write_injectivity) << ": " << k.write_injectivity_reason;
  const KernelRangeGenerator gen(k);
  for (const Launch& l : launches) {
    SCOPED_TRACE(describe(l));
    const LaunchArguments args = arguments(l);
    const bool collide =
        groups_collide(l.range, [&](const Item& it, Touched& t) { mirror(l, it, t); });
    std::string reason;
    EXPECT_EQ(gen.splittable(l.range, args, &reason), !collide) << reason;
    // The concrete check agrees with the oracle too.
    KernelAccessInfo concrete = k;
    concrete.write_injectivity = WriteInjectivity::parametric;
    EXPECT_EQ(KernelRangeGenerator(concrete).splittable(l.range, args), !collide);
    // Asking again is answered from the cache (or from the analysis).
    const std::size_t before = gen.launch_time_checks();
    (void)gen.splittable(l.range, args);
    EXPECT_EQ(gen.launch_time_checks(), before);
  }
  return gen.launch_time_checks();
}

TEST(ParametricWriteInjectivity, GlobalIdWriteIsInjectiveForEveryLaunch) {
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, __global int* b, int n, int off) {
      int i = get_global_id(0);
      if (i < n) a[i + off] = 1;
      if (get_local_id(0) < 64) b[get_group_id(0) * 64 + get_local_id(0)] = 2;
    })",
                                                  "k");
  const std::vector<Launch> launches = {
      {nd({64, 1, 1}, {8, 1, 1}, 1), {{2, 64}, {3, 0}}},
      {nd({64, 1, 1}, {16, 1, 1}, 1), {{2, 40}, {3, 5}}},
      {nd({32, 1, 1}, {32, 1, 1}, 1), {{2, 100}, {3, 3}}},
  };
  const std::size_t checks = check_launches(
      k, WriteInjectivity::injective, launches, [](const Launch& l, const Item& it, Touched& t) {
        const std::int64_t i = it.global_id[0];
        if (i < l.scalars[0].second) t.store("a", i + l.scalars[1].second, 4);
        if (it.local_id[0] < 64) t.store("b", it.group_id[0] * 64 + it.local_id[0], 4);
      });
  EXPECT_EQ(checks, 0U) << "no launch-time isl call for a kernel injective for every launch";
}

TEST(ParametricWriteInjectivity, TwoDimensionalRowMajorWithConstantWidthIsInjective) {
  const KernelAccessInfo k = test::analyze_kernel(R"(
    #define W 32
    __kernel void k(__global float* out) {
      int x = get_global_id(0);
      int y = get_global_id(1);
      if (x < W) out[y * W + x] = 0.0f;
    })",
                                                  "k");
  EXPECT_EQ(k.write_injectivity, WriteInjectivity::injective) << k.write_injectivity_reason;
}

TEST(ParametricWriteInjectivity, EveryGroupWritingTheSameElementsIsNeverInjective) {
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, __global int* flag) {
      a[get_local_id(0)] = 1;
      flag[0] = 1;
    })",
                                                  "k");
  EXPECT_NE(k.write_injectivity_reason.find("'a'"), std::string::npos)
      << k.write_injectivity_reason;
  const std::vector<Launch> launches = {
      {nd({64, 1, 1}, {8, 1, 1}, 1), {}},
      {nd({8, 1, 1}, {8, 1, 1}, 1), {}},  // one work-group: nothing to collide with
      {nd({4, 6, 1}, {4, 3, 1}, 2), {}},  // beyond the dimensions the writes use: concrete check
  };
  const std::size_t checks = check_launches(k, WriteInjectivity::not_injective, launches,
                                            [](const Launch& l, const Item& it, Touched& t) {
                                              (void)l;
                                              t.store("a", it.local_id[0], 4);
                                              t.store("flag", 0, 4);
                                            });
  EXPECT_EQ(k.write_injectivity_dims, 1U);
  EXPECT_EQ(checks, 1U) << "only the 2-D launch of this 1-D kernel needs a launch-time check";
}

TEST(ParametricWriteInjectivity, ScaledIndexDependsOnTheScalar) {
  // a[i * s]: injective for s != 0, every item writes a[0] for s == 0.
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, int s) { a[get_global_id(0) * s] = 1; })",
                                                  "k");
  std::vector<Launch> launches;
  for (std::int64_t s : {0, 1, 3}) launches.push_back({nd({32, 1, 1}, {8, 1, 1}, 1), {{1, s}}});
  launches.push_back({nd({8, 1, 1}, {8, 1, 1}, 1), {{1, 0}}});
  const std::size_t checks = check_launches(
      k, WriteInjectivity::parametric, launches, [](const Launch& l, const Item& it, Touched& t) {
        t.store("a", it.global_id[0] * l.scalars[0].second, 4);
      });
  EXPECT_EQ(checks, launches.size()) << "one concrete check per distinct launch";
}

TEST(ParametricWriteInjectivity, ScalarsNoWriteUsesShareOneCheck) {
  // The write depends on s, the read on k (as floyd-warshall's pivot): launches that differ only
  // in k ask isl once per value of s, and each answer is still the oracle's.
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, __global const int* b, int s, int k) {
      a[get_global_id(0) * s] = b[k];
    })",
                                                  "k");
  std::vector<Launch> launches;
  for (std::int64_t s : {0, 2}) {
    for (std::int64_t pivot : {0, 5, 17, 31}) {
      launches.push_back({nd({32, 1, 1}, {8, 1, 1}, 1), {{2, s}, {3, pivot}}});
    }
  }
  const std::size_t checks = check_launches(
      k, WriteInjectivity::parametric, launches, [](const Launch& l, const Item& it, Touched& t) {
        t.store("a", it.global_id[0] * l.scalars[0].second, 4);
      });
  EXPECT_EQ(checks, 2U) << "one concrete check per value of s, whatever k";
}

TEST(ParametricWriteInjectivity, GuardedBlockDependsOnScalarAndLocalSize) {
  // Groups write [8 w, 8 w + min(n, local size)): they overlap only when that exceeds 8.
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, int n) {
      if (get_local_id(0) < n) a[get_group_id(0) * 8 + get_local_id(0)] = 1;
    })",
                                                  "k");
  std::vector<Launch> launches;
  for (std::int64_t n : {4, 8, 9, 12}) {
    launches.push_back({nd({64, 1, 1}, {16, 1, 1}, 1), {{1, n}}});
    launches.push_back({nd({64, 1, 1}, {8, 1, 1}, 1), {{1, n}}});
  }
  const std::size_t checks = check_launches(
      k, WriteInjectivity::parametric, launches, [](const Launch& l, const Item& it, Touched& t) {
        if (it.local_id[0] < l.scalars[0].second)
          t.store("a", it.group_id[0] * 8 + it.local_id[0], 4);
      });
  EXPECT_EQ(checks, launches.size());
}

TEST(ParametricWriteInjectivity, NeighbourWriteCollidesAcrossGroupsOnly) {
  // Items collide (a[i + 1] of item i is a[i] of item i + 1): the merged global-id map cannot
  // prove anything, so the launch decides (one work-group: splittable).
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global float* a) {
      int i = get_global_id(0);
      a[i] = 0.0f;
      a[i + 1] = 1.0f;
    })",
                                                  "k");
  const std::vector<Launch> launches = {
      {nd({16, 1, 1}, {4, 1, 1}, 1), {}},
      {nd({4, 1, 1}, {4, 1, 1}, 1), {}},
  };
  check_launches(k, WriteInjectivity::parametric, launches,
                 [](const Launch& l, const Item& it, Touched& t) {
                   (void)l;
                   t.store("a", it.global_id[0], 4);
                   t.store("a", it.global_id[0] + 1, 4);
                 });
}

TEST(ParametricWriteInjectivity, UnsplittableKernelsAreLeftToTheStaticVerdict) {
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, __global const int* idx) {
      a[idx[get_global_id(0)]] = 1;
    })",
                                                  "k");
  EXPECT_FALSE(k.statically_splittable);
  EXPECT_EQ(k.write_injectivity, WriteInjectivity::parametric);
  EXPECT_FALSE(KernelRangeGenerator(k).splittable(nd({16, 1, 1}, {4, 1, 1}, 1), {}));
}

TEST(ParametricWriteInjectivity, ALaunchLikeTheLastButInOneThingItsWritesReadIsDecidedAgain) {
  // Each launch differs from the one before in one thing the write map reads (the scalar n, the
  // global offset, the global size, the work-group size) and gets the other verdict, so the
  // verdict splittable() remembers for the last launch (KernelRangeGenerator::LastVerdict) must
  // not answer it. Groups whose items all have a global id >= n write a[0, local size): one such
  // group is injective, two collide. The scalar v, which no subscript or guard reads, changes
  // nothing and is answered from the remembered verdict.
  KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, int n, int v) {
      if (get_global_id(0) >= n) a[get_local_id(0)] = v;
    })",
                                            "k");
  k.write_injectivity = WriteInjectivity::parametric;  // decided per launch
  const auto launch = [](std::uint64_t global, std::uint64_t local, std::uint64_t offset,
                         std::int64_t n, std::int64_t v) {
    Launch l{nd({global, 1, 1}, {local, 1, 1}, 1), {{1, n}, {2, v}}};
    l.range.offset[0] = offset;
    return l;
  };
  const std::vector<Launch> launches = {
      launch(32, 8, 0, 24, 0),  // groups from 24 on: one
      launch(32, 8, 0, 16, 0),  // n: two
      launch(32, 8, 0, 16, 7),  // v alone: two (no new check)
      launch(32, 8, 0, 24, 7),  // n: one
      launch(32, 8, 8, 24, 7),  // offset: items 8..39, two groups from 24 on
      launch(32, 8, 0, 24, 7),  // offset: one
      launch(40, 8, 0, 24, 7),  // global size: two
      launch(32, 8, 0, 24, 7),  // global size: one
      launch(32, 4, 0, 24, 7),  // work-group size: two
  };
  const KernelRangeGenerator gen(k);
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    SCOPED_TRACE(describe(l) + " offset " + std::to_string(l.range.offset[0]));
    const bool collide = groups_collide(l.range, [&](const Item& it, Touched& t) {
      if (it.global_id[0] >= l.scalars[0].second) t.store("a", it.local_id[0], 4);
    });
    const std::size_t checks = gen.launch_time_checks();
    std::string reason;
    EXPECT_EQ(gen.splittable(l.range, arguments(l), &reason), !collide) << reason;
    EXPECT_EQ(reason.empty(), !collide) << reason;
    if (i == 2) {
      EXPECT_EQ(gen.launch_time_checks(), checks) << "v alone needs no new check";
    }
  }
}

TEST(ParametricWriteInjectivity, MapTextHasParametersAndMergedGlobalIds) {
  const KernelAccessInfo k = test::analyze_kernel(R"(
    __kernel void k(__global int* a, int off) { a[get_global_id(0) + off] = 1; })",
                                                  "k");
  const std::optional<detail::ParametricWriteMap> m = detail::parametric_write_map(k.args[0], 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->merged[0]);
  EXPECT_NE(m->map.find("s1"), std::string::npos) << m->map;
  EXPECT_NE(m->map.find("gs0"), std::string::npos) << m->map;
  EXPECT_NE(m->map.find("[g0] -> [b]"), std::string::npos) << m->map;
  EXPECT_NE(m->context.find("gs0 >= 1"), std::string::npos) << m->context;
  // A coefficient that is a scalar cannot be written for isl.
  const KernelAccessInfo scaled = test::analyze_kernel(R"(
    __kernel void k(__global int* a, int s) { a[get_global_id(0) * s] = 1; })",
                                                       "k");
  EXPECT_FALSE(detail::parametric_write_map(scaled.args[0], 1).has_value());
}

}  // namespace
}  // namespace unimem
