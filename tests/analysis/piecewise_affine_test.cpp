// The LLVM-free algebra of the extraction: piecewise affine cases (analysis/piecewise_affine.hpp),
// DNFs of constraints (analysis/condition_dnf.hpp) and the DSOM Table 2 class of an affine piece
// (analysis/access_class.hpp). Cases are checked by evaluating them at every point of a small
// range against the plain integer operation.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/access_class.hpp"
#include "analysis/condition_dnf.hpp"
#include "analysis/piecewise_affine.hpp"

namespace unimem {
namespace {

const Var kI{Var::Kind::loop, 0};  // the variable the tests range over
const ParamValues kNoParams{};

AffineExpr var(const Var& v, std::int64_t k = 1) {
  return AffineExpr::of_var(v, ParamPoly::constant(k));
}

std::int64_t value(const AffineExpr& e, const std::map<Var, std::int64_t>& at) {
  std::int64_t out = evaluate(e.constant, kNoParams);
  for (const auto& [v, c] : e.coefficients) out += evaluate(c, kNoParams) * at.at(v);
  return out;
}

bool holds(const Conjunction& constraints, const std::map<Var, std::int64_t>& at) {
  for (const Constraint& c : constraints) {
    const std::int64_t x = value(c.expr, at);
    const bool ok = c.relation == Constraint::Relation::greater_equal_zero ? x >= 0
                    : c.relation == Constraint::Relation::equal_zero       ? x == 0
                                                                           : x != 0;
    if (!ok) return false;
  }
  return true;
}

/// The values cases take at v = x, over every value 0..99 of the other (existential) variables
/// the cases introduce (one quotient variable, index 1, at most).
std::set<std::int64_t> values_at(const PiecewiseAffine& cases, std::int64_t x) {
  std::set<std::int64_t> out;
  for (const AffineCase& c : cases) {
    for (std::int64_t q = 0; q < 100; ++q) {
      const std::map<Var, std::int64_t> at{{kI, x}, {Var{Var::Kind::loop, 1}, q}};
      if (holds(c.constraints, at)) out.insert(value(c.expr, at));
    }
  }
  return out;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

TEST(PiecewiseAffine, MinAndMaxPickOneCasePerPoint) {
  // i - 20 against 3 and against 2 * i - 30, for i in [0, 40].
  const PiecewiseAffine a = single_case(var(kI) - constant_expr(20));
  const PiecewiseAffine b = single_case(constant_expr(3));
  const PiecewiseAffine c = single_case(var(kI, 2) - constant_expr(30));
  for (const bool is_max : {true, false}) {
    ExtractionFailure why;
    const std::optional<PiecewiseAffine> m = min_max_cases({a, b, c}, is_max, why);
    ASSERT_TRUE(m.has_value()) << why.reason;
    for (std::int64_t i = 0; i <= 40; ++i) {
      const std::int64_t x = i - 20;
      const std::int64_t y = 2 * i - 30;
      const std::int64_t want =
          is_max ? std::max({x, std::int64_t{3}, y}) : std::min({x, std::int64_t{3}, y});
      std::size_t matching = 0;
      for (const AffineCase& k : *m) matching += holds(k.constraints, {{kI, i}}) ? 1 : 0;
      EXPECT_EQ(matching, 1U) << "i=" << i << ": the cases must partition the domain";
      EXPECT_EQ(values_at(*m, i), std::set<std::int64_t>{want}) << "i=" << i;
    }
  }
}

TEST(PiecewiseAffine, DivisionByAConstantIsExactForEveryRounding) {
  for (const DivisionKind kind :
       {DivisionKind::floor_non_negative, DivisionKind::floor, DivisionKind::toward_zero}) {
    for (const bool remainder : {false, true}) {
      std::vector<std::string> loop_names{"i1"};
      const std::int64_t shift = kind == DivisionKind::floor_non_negative ? 0 : 20;
      const PiecewiseAffine x = single_case(var(kI) - constant_expr(shift));
      const PiecewiseAffine q = divide_cases(x, 3, kind, remainder, loop_names);
      EXPECT_EQ(loop_names.size(), 2U) << "one fresh quotient variable";
      EXPECT_EQ(loop_names.back(), "q2");
      for (std::int64_t i = 0; i <= 40; ++i) {
        const std::int64_t n = i - shift;
        const std::int64_t quotient = kind == DivisionKind::toward_zero ? n / 3 : floor_div(n, 3);
        const std::int64_t want = remainder ? n - 3 * quotient : quotient;
        EXPECT_EQ(values_at(q, i), std::set<std::int64_t>{want})
            << "n=" << n << " kind=" << static_cast<int>(kind) << " remainder=" << remainder;
      }
    }
  }
}

TEST(PiecewiseAffine, ProductsNeedAVariableFreeFactor) {
  ExtractionFailure why;
  const PiecewiseAffine scaled =
      combine_cases(single_case(var(kI)), single_case(constant_expr(4)), true, why);
  ASSERT_EQ(scaled.size(), 1U);
  EXPECT_EQ(scaled[0].expr, var(kI, 4));
  EXPECT_TRUE(combine_cases(single_case(var(kI)), single_case(var(kI)), true, why).empty());
  EXPECT_EQ(why.access_class, AccessClass::non_affine);
  EXPECT_EQ(why.reason, "product of two index variables");
}

TEST(PiecewiseAffine, OneSidedExistentialsVanish) {
  const Var t{Var::Kind::loop, 1};  // only needs to exist: absent from the subscript
  AccessPiece lower;
  lower.byte_offset = var(kI, 4);
  lower.constraints = {ge0(var(t) - constant_expr(5)), ge0(var(kI))};
  eliminate_one_sided_existentials(lower);
  EXPECT_EQ(lower.constraints, Conjunction{ge0(var(kI))});
  AccessPiece upper;
  upper.byte_offset = var(kI, 4);
  upper.constraints = {ge0(constant_expr(5) - var(t) - var(kI))};
  eliminate_one_sided_existentials(upper);  // t = 0 is the best witness
  EXPECT_EQ(upper.constraints, Conjunction{ge0(constant_expr(5) - var(kI))});
}

TEST(ConditionDnf, ConstantConstraintsFoldAndDisjunctsAreBounded) {
  Conjunction c{ge0(constant_expr(1)), ge0(var(kI)), ge0(var(kI))};
  EXPECT_TRUE(simplify(c));
  EXPECT_EQ(c, Conjunction{ge0(var(kI))});
  Conjunction never{eq0(constant_expr(1)), ge0(var(kI))};
  EXPECT_FALSE(simplify(never));

  ExtractionFailure why;
  Dnf out;
  const Dnf a{{ge0(var(kI))}, {eq0(constant_expr(1))}};  // the second disjunct is false
  const Dnf b{{ne0(var(kI) - constant_expr(3))}};
  ASSERT_TRUE(merge_dnf(a, b, /*conjunction=*/true, out, why));
  EXPECT_EQ(out, (Dnf{{ge0(var(kI)), ne0(var(kI) - constant_expr(3))}}));
  ASSERT_TRUE(merge_dnf(a, b, /*conjunction=*/false, out, why));
  EXPECT_EQ(out, (Dnf{{ge0(var(kI))}, {ne0(var(kI) - constant_expr(3))}}));

  Dnf wide;
  for (std::int64_t k = 0; k < 6; ++k) wide.push_back({ge0(var(kI) - constant_expr(k))});
  EXPECT_FALSE(merge_dnf(wide, wide, /*conjunction=*/true, out, why));  // 36 > kMaxDisjuncts
  EXPECT_EQ(why.reason, "condition too complex");
}

TEST(AccessClassTable2, ConstraintsDecideTheClass) {
  const Var w{Var::Kind::group_id, 0};
  const Var l{Var::Kind::local_id, 0};
  const Var j{Var::Kind::loop, 1};
  const AffineExpr global_id =
      AffineExpr::of_var(w, ParamPoly::param({Param::Kind::local_size, 0})) + var(l);
  const AffineExpr n = AffineExpr::of_constant(ParamPoly::param({Param::Kind::scalar_arg, 2}));
  EXPECT_EQ(affine_access_class({}), AccessClass::affine);
  EXPECT_EQ(affine_access_class({ge0(n - var(kI) - constant_expr(1))}), AccessClass::affine)
      << "a loop bound";
  EXPECT_EQ(affine_access_class({ge0(n - global_id - constant_expr(1))}),
            AccessClass::affine_rectangular)
      << "a bound of the global id";
  EXPECT_EQ(affine_access_class({eq0(var(kI) - constant_expr(2))}),
            AccessClass::affine_rectangular);
  EXPECT_EQ(affine_access_class({ge0(var(kI) - var(j))}), AccessClass::affine_general)
      << "a triangle";
  EXPECT_EQ(coupled_variable_count(global_id), 1U);
  EXPECT_EQ(coupled_variable_count(var(w, 3) + var(l)), 2U);
  EXPECT_TRUE(is_affine(AccessClass::affine_general));
  EXPECT_FALSE(is_affine(AccessClass::indirect));
  AccessStats stats;
  stats.add(AccessClass::affine);
  stats.add(AccessClass::unknown_call);
  EXPECT_EQ(stats.total, 2U);
  EXPECT_EQ(stats.unknown_call, 1U);
}

}  // namespace
}  // namespace unimem
