// Launch-time byte ranges of hand-written access patterns (analysis/kernel_ranges.hpp), with no
// frontend: the LLVM-free core on its own. Each pattern is compared with the bytes a direct loop
// over its work-items touches (tests/analysis/llvm/ has the same checks for analysed kernels).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analysis/access_pattern.hpp"
#include "analysis/kernel_ranges.hpp"
#include "common/check.hpp"

namespace unimem {
namespace {

const Var kGroup{Var::Kind::group_id, 0};
const Var kLocal{Var::Kind::local_id, 0};
const Var kLoop{Var::Kind::loop, 0};

AffineExpr term(const Var& v, const ParamPoly& k) { return AffineExpr::of_var(v, k); }
ParamPoly param(Param::Kind kind, std::uint32_t index) { return ParamPoly::param({kind, index}); }
ParamPoly number(std::int64_t k) { return ParamPoly::constant(k); }

/// 4 * (global id), the subscript of a[get_global_id(0)] on int.
AffineExpr global_int() {
  return term(kGroup, param(Param::Kind::local_size, 0).scaled(4)) + term(kLocal, number(4)) +
         AffineExpr::of_constant(param(Param::Kind::global_offset, 0).scaled(4));
}

ArgumentAccess buffer(std::uint32_t index, const std::string& name) {
  ArgumentAccess a;
  a.index = index;
  a.name = name;
  a.kind = ArgKind::global_buffer;
  return a;
}

ArgumentAccess scalar(std::uint32_t index, const std::string& name) {
  ArgumentAccess a;
  a.index = index;
  a.name = name;
  a.kind = ArgKind::scalar;
  a.scalar_bits = 32;
  return a;
}

AccessPiece piece(AffineExpr offset, std::vector<Constraint> constraints, AccessClass c) {
  AccessPiece p;
  p.byte_offset = std::move(offset);
  p.width = 4;
  p.constraints = std::move(constraints);
  p.access_class = c;
  return p;
}

NDRange range_1d(std::uint64_t global, std::uint64_t local) {
  NDRange r;
  r.dims = 1;
  r.global = {global, 1, 1};
  r.local = {local, 1, 1};
  return r;
}

IntervalSet bytes_of(const std::set<std::int64_t>& elements) {
  std::vector<Interval> v;
  for (std::int64_t e : elements) {
    v.emplace_back(static_cast<std::uint64_t>(4 * e), static_cast<std::uint64_t>(4 * e + 4));
  }
  return IntervalSet::from_unsorted(std::move(v));
}

/// if (i < n) out[i] = in[i] + in[i + 1]; with n an argument, over a 1-D range.
KernelAccessInfo guarded_stencil() {
  KernelAccessInfo k;
  k.name = "stencil";
  k.args = {buffer(0, "in"), buffer(1, "out"), scalar(2, "n")};
  const AffineExpr n = AffineExpr::of_constant(param(Param::Kind::scalar_arg, 2));
  const AffineExpr gid = global_int();
  // The guard i < n, over the global id i (the launches here have offset 0).
  const AffineExpr i = term(kGroup, param(Param::Kind::local_size, 0)) + term(kLocal, number(1));
  const Constraint below_n{n - i - AffineExpr::of_constant(number(1)),
                           Constraint::Relation::greater_equal_zero};
  k.args[0].reads = {
      piece(gid, {below_n}, AccessClass::affine_rectangular),
      piece(gid + AffineExpr::of_constant(number(4)), {below_n}, AccessClass::affine_rectangular)};
  k.args[1].writes = {piece(gid, {below_n}, AccessClass::affine_rectangular)};
  k.write_injectivity = WriteInjectivity::injective;
  return k;
}

TEST(KernelRangesOfPatterns, AGuardedStencilMatchesItsWorkItemsPerGroupBox) {
  const KernelRangeGenerator gen(guarded_stencil());
  const NDRange r = range_1d(64, 8);
  LaunchArguments args;
  args.set_scalar(2, 50);
  for (std::int64_t begin = 0; begin < 8; ++begin) {
    for (std::int64_t end = begin + 1; end <= 8; ++end) {
      SCOPED_TRACE("groups [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
      std::set<std::int64_t> read;
      std::set<std::int64_t> written;
      for (std::int64_t i = begin * 8; i < end * 8; ++i) {
        if (i >= 50) continue;
        read.insert(i);
        read.insert(i + 1);
        written.insert(i);
      }
      const LaunchRanges lr = gen.ranges(r, Box<3>({begin, 0, 0}, {end, 1, 1}), args);
      ASSERT_EQ(lr.args.size(), 2U) << "buffer arguments only";
      EXPECT_EQ(lr.find("in")->read, bytes_of(read));
      EXPECT_EQ(lr.find("out")->write, bytes_of(written));
      EXPECT_TRUE(lr.find("in")->read_exact);
      EXPECT_TRUE(lr.find("out")->write_exact);
      EXPECT_TRUE(lr.splittable);
    }
  }
  EXPECT_TRUE(gen.splittable(r, args));
}

TEST(KernelRangesOfPatterns, ATriangleOfCoupledVariablesIsEnumeratedExactly) {
  // for (j = 0; j <= lid; ++j) out[grp * 64 + j * 8 + lid]: j is coupled to the local id.
  KernelAccessInfo k;
  k.name = "triangle";
  k.args = {buffer(0, "out")};
  const AffineExpr offset =
      term(kGroup, number(256)) + term(kLoop, number(32)) + term(kLocal, number(4));
  k.args[0].writes = {piece(offset,
                            {{term(kLocal, number(1)) - term(kLoop, number(1)),
                              Constraint::Relation::greater_equal_zero}},
                            AccessClass::affine_general)};
  k.loop_names = {"i1"};
  const KernelRangeGenerator gen(k);
  const NDRange r = range_1d(16, 8);
  std::set<std::int64_t> written;
  for (std::int64_t g = 0; g < 2; ++g) {
    for (std::int64_t l = 0; l < 8; ++l) {
      for (std::int64_t j = 0; j <= l; ++j) written.insert(g * 64 + j * 8 + l);
    }
  }
  const LaunchRanges lr = gen.ranges(r, all_groups(r), {});
  EXPECT_EQ(lr.find("out")->write, bytes_of(written));
  EXPECT_TRUE(lr.find("out")->write_exact);
}

TEST(KernelRangesOfPatterns, OtherClassesFallBackToTheWholeBufferAndNeedItsSize) {
  KernelAccessInfo k;
  k.name = "scatter";
  k.args = {buffer(0, "out")};
  AccessPiece indirect;
  indirect.access_class = AccessClass::indirect;
  indirect.reason = "subscript depends on loaded data";
  indirect.conditions_dropped = true;
  k.args[0].writes = {indirect};
  k.statically_splittable = false;
  k.unsplittable_reason = "argument 'out' is written through an indirect reference";
  const KernelRangeGenerator gen(k);
  const NDRange r = range_1d(16, 4);
  EXPECT_THROW((void)gen.ranges(r, all_groups(r), {}), PreconditionError);
  LaunchArguments args;
  args.set_buffer_size(0, 1000);
  const LaunchRanges lr = gen.ranges(r, all_groups(r), args);
  const ArgumentRanges* out = lr.find("out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->write, IntervalSet(Interval{0, 1000}));
  EXPECT_FALSE(out->write_exact);
  EXPECT_TRUE(out->write_conditional);
  EXPECT_FALSE(lr.splittable);
  std::string reason;
  EXPECT_FALSE(gen.splittable(r, args, &reason));
  EXPECT_EQ(reason, k.unsplittable_reason);
  // The runtime's view: a write that is not certain is a may-write, fetched first.
  const AccessBytes b = out->access_bytes();
  EXPECT_TRUE(b.writes.empty());
  EXPECT_EQ(b.may_writes, IntervalSet(Interval{0, 1000}));
}

TEST(KernelRangesOfPatterns, AnalysisTimeVerdictsDecideSplittingWithoutALaunchTimeCheck) {
  KernelAccessInfo k = guarded_stencil();
  k.write_injectivity = WriteInjectivity::not_injective;
  k.write_injectivity_reason = "two work-groups may write the same bytes of 'out'";
  const KernelRangeGenerator gen(k);
  std::string reason;
  EXPECT_FALSE(gen.splittable(range_1d(64, 8), {}, &reason));
  EXPECT_EQ(reason, k.write_injectivity_reason);
  EXPECT_TRUE(gen.splittable(range_1d(8, 8), {}, &reason)) << "one work-group cannot collide";
  EXPECT_EQ(gen.launch_time_checks(), 0U);
}

TEST(KernelRangesOfPatterns, EmptyAndOutOfRangeGroupBoxes) {
  const KernelRangeGenerator gen(guarded_stencil());
  const NDRange r = range_1d(64, 8);
  LaunchArguments args;
  args.set_scalar(2, 50);
  const LaunchRanges none = gen.ranges(r, Box<3>(), args);
  EXPECT_TRUE(none.find("in")->read.empty());
  EXPECT_TRUE(none.find("out")->write.empty());
  EXPECT_THROW((void)gen.ranges(r, Box<3>({4, 0, 0}, {9, 1, 1}), args), PreconditionError);
  EXPECT_EQ(all_groups(r), Box<3>({0, 0, 0}, {8, 1, 1}));
}

}  // namespace
}  // namespace unimem
