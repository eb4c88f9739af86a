#include "analysis/access_class.hpp"

#include <set>

namespace unimem {

const char* to_string(AccessClass c) {
  switch (c) {
    case AccessClass::affine:
      return "affine";
    case AccessClass::affine_rectangular:
      return "affine, rectangular constraints";
    case AccessClass::affine_general:
      return "affine, general constraints";
    case AccessClass::indirect:
      return "indirect";
    case AccessClass::non_affine:
      return "non-affine";
    case AccessClass::unknown_call:
      return "unknown call";
  }
  return "?";
}

void AccessStats::add(AccessClass c) {
  ++total;
  switch (c) {
    case AccessClass::affine:
      ++affine;
      break;
    case AccessClass::affine_rectangular:
      ++affine_rectangular;
      break;
    case AccessClass::affine_general:
      ++affine_general;
      break;
    case AccessClass::indirect:
      ++indirect;
      break;
    case AccessClass::non_affine:
      ++non_affine;
      break;
    case AccessClass::unknown_call:
      ++unknown_call;
      break;
  }
}

AccessStats& AccessStats::operator+=(const AccessStats& o) {
  total += o.total;
  affine += o.affine;
  affine_rectangular += o.affine_rectangular;
  affine_general += o.affine_general;
  indirect += o.indirect;
  non_affine += o.non_affine;
  unknown_call += o.unknown_call;
  return *this;
}

std::size_t coupled_variable_count(const AffineExpr& e) {
  std::size_t count = 0;
  std::set<std::uint32_t> merged_dims;
  for (std::uint32_t d = 0; d < 3; ++d) {
    const ParamPoly w = e.coefficient({Var::Kind::group_id, d});
    const ParamPoly l = e.coefficient({Var::Kind::local_id, d});
    if (!w.is_zero() && !l.is_zero() && w == l * ParamPoly::param({Param::Kind::local_size, d})) {
      merged_dims.insert(d);
      ++count;
    }
  }
  for (const auto& [v, c] : e.coefficients) {
    if (v.kind != Var::Kind::loop && merged_dims.count(v.index) != 0) continue;
    ++count;
  }
  return count;
}

AccessClass affine_access_class(const std::vector<Constraint>& constraints) {
  AccessClass c = AccessClass::affine;
  for (const Constraint& k : constraints) {
    const std::size_t vars = coupled_variable_count(k.expr);
    if (vars >= 2) return AccessClass::affine_general;
    const bool loop_bound = vars == 1 && k.expr.coefficients.size() == 1 &&
                            k.expr.coefficients.begin()->first.kind == Var::Kind::loop &&
                            k.relation == Constraint::Relation::greater_equal_zero;
    if (!loop_bound) c = AccessClass::affine_rectangular;
  }
  return c;
}

}  // namespace unimem
