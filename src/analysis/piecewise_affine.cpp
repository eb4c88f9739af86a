#include "analysis/piecewise_affine.hpp"

#include <set>

namespace unimem {

PiecewiseAffine combine_cases(const PiecewiseAffine& a, const PiecewiseAffine& b, bool multiply,
                              ExtractionFailure& why) {
  PiecewiseAffine out;
  if (a.size() * b.size() > kMaxCases) {
    why = {AccessClass::non_affine, "too many case splits"};
    return out;
  }
  for (const AffineCase& x : a) {
    for (const AffineCase& y : b) {
      AffineCase p;
      if (!multiply) {
        p.expr = x.expr + y.expr;
      } else if (!x.expr.has_vars()) {
        p.expr = y.expr.scaled(x.expr.constant);
      } else if (!y.expr.has_vars()) {
        p.expr = x.expr.scaled(y.expr.constant);
      } else {
        why = {AccessClass::non_affine, "product of two index variables"};
        return {};
      }
      p.constraints = x.constraints;
      p.constraints.insert(p.constraints.end(), y.constraints.begin(), y.constraints.end());
      if (simplify(p.constraints)) out.push_back(std::move(p));
    }
  }
  if (out.empty()) out.push_back(AffineCase{constant_expr(0), {ge0(constant_expr(-1))}});
  return out;
}

std::optional<PiecewiseAffine> min_max_cases(const std::vector<PiecewiseAffine>& ops, bool is_max,
                                             ExtractionFailure& why) {
  if (ops.size() > 4) {
    why = {AccessClass::non_affine, "min/max with many operands"};
    return std::nullopt;
  }
  PiecewiseAffine out;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    for (const AffineCase& chosen : ops[k]) {
      PiecewiseAffine partial{chosen};
      for (std::size_t j = 0; j < ops.size(); ++j) {
        if (j == k) continue;
        PiecewiseAffine next;
        for (const AffineCase& p : partial) {
          for (const AffineCase& other : ops[j]) {
            AffineCase q = p;
            q.constraints.insert(q.constraints.end(), other.constraints.begin(),
                                 other.constraints.end());
            AffineExpr diff = is_max ? chosen.expr - other.expr : other.expr - chosen.expr;
            if (j < k) diff = diff - constant_expr(1);  // strict against earlier operands
            q.constraints.push_back(ge0(diff));
            if (simplify(q.constraints)) next.push_back(std::move(q));
          }
        }
        partial = std::move(next);
        if (partial.size() > kMaxCases) {
          why = {AccessClass::non_affine, "too many case splits"};
          return std::nullopt;
        }
      }
      out.insert(out.end(), partial.begin(), partial.end());
    }
  }
  if (out.size() > kMaxCases) {
    why = {AccessClass::non_affine, "too many case splits"};
    return std::nullopt;
  }
  return out;
}

PiecewiseAffine divide_cases(const PiecewiseAffine& xs, std::int64_t c, DivisionKind kind,
                             bool remainder, std::vector<std::string>& loop_names) {
  PiecewiseAffine out;
  const AffineExpr cc = constant_expr(c);
  for (const AffineCase& x : xs) {
    const Var q{Var::Kind::loop, static_cast<std::uint32_t>(loop_names.size())};
    loop_names.push_back("q" + std::to_string(loop_names.size() + 1));
    const AffineExpr cq = AffineExpr::of_var(q, ParamPoly::constant(c));
    const AffineExpr qe = AffineExpr::of_var(q);
    {
      // x >= 0 (assumed for floor_non_negative): c*q <= x <= c*q + c - 1 for both roundings.
      AffineCase p = x;
      if (kind != DivisionKind::floor_non_negative) p.constraints.push_back(ge0(x.expr));
      p.constraints.push_back(ge0(x.expr - cq));
      p.constraints.push_back(ge0(cq + cc - constant_expr(1) - x.expr));
      p.expr = remainder ? x.expr - cq : qe;
      if (simplify(p.constraints)) out.push_back(std::move(p));
    }
    if (kind == DivisionKind::floor_non_negative) continue;
    // x < 0, quotient -q: floor gives -c*q <= x <= -c*q + c - 1 (q >= 1), toward zero gives
    // -c*q - (c - 1) <= x <= -c*q.
    AffineCase n = x;
    n.constraints.push_back(ge0(constant_expr(-1) - x.expr));
    const AffineExpr minus_cq = cq.scaled(ParamPoly::constant(-1));
    if (kind == DivisionKind::floor) {
      n.constraints.push_back(ge0(x.expr - minus_cq));
      n.constraints.push_back(ge0(minus_cq + cc - constant_expr(1) - x.expr));
    } else {
      n.constraints.push_back(ge0(x.expr - minus_cq + cc - constant_expr(1)));
      n.constraints.push_back(ge0(minus_cq - x.expr));
    }
    n.expr = remainder ? x.expr - minus_cq : qe.scaled(ParamPoly::constant(-1));
    if (simplify(n.constraints)) out.push_back(std::move(n));
  }
  return out;
}

void eliminate_one_sided_existentials(AccessPiece& piece) {
  std::set<Var> vars;
  for (const Constraint& c : piece.constraints) {
    for (const auto& [v, k] : c.expr.coefficients) {
      if (v.kind == Var::Kind::loop && piece.byte_offset.coefficients.count(v) == 0) vars.insert(v);
    }
  }
  for (const Var& v : vars) {
    bool lower_only = true;
    bool upper_only = true;
    for (const Constraint& c : piece.constraints) {
      const ParamPoly a = c.expr.coefficient(v);
      if (a.is_zero()) continue;
      const std::optional<std::int64_t> k = a.constant_value();
      if (!k || c.relation != Constraint::Relation::greater_equal_zero) {
        lower_only = upper_only = false;
        break;
      }
      lower_only = lower_only && *k > 0;
      upper_only = upper_only && *k < 0;
    }
    if (lower_only) {
      std::erase_if(piece.constraints,
                    [&v](const Constraint& c) { return c.expr.coefficients.count(v) != 0; });
    } else if (upper_only) {
      for (Constraint& c : piece.constraints) c.expr.coefficients.erase(v);  // v = 0
    }
  }
}

}  // namespace unimem
