#include "analysis/access_class.hpp"

#include <set>

namespace unimem {

const char* to_string(AccessClass c) {
  switch (c) {
    case AccessClass::Affine:
      return "affine";
    case AccessClass::AffineRectangular:
      return "affine, rectangular constraints";
    case AccessClass::AffineGeneral:
      return "affine, general constraints";
    case AccessClass::Indirect:
      return "indirect";
    case AccessClass::NonAffine:
      return "non-affine";
    case AccessClass::UnknownCall:
      return "unknown call";
  }
  return "?";
}

void AccessStats::add(AccessClass c) {
  ++total;
  switch (c) {
    case AccessClass::Affine:
      ++affine;
      break;
    case AccessClass::AffineRectangular:
      ++affine_rectangular;
      break;
    case AccessClass::AffineGeneral:
      ++affine_general;
      break;
    case AccessClass::Indirect:
      ++indirect;
      break;
    case AccessClass::NonAffine:
      ++non_affine;
      break;
    case AccessClass::UnknownCall:
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
    const ParamPoly w = e.coefficient({Var::Kind::GroupId, d});
    const ParamPoly l = e.coefficient({Var::Kind::LocalId, d});
    if (!w.is_zero() && !l.is_zero() && w == l * ParamPoly::param({Param::Kind::LocalSize, d})) {
      merged_dims.insert(d);
      ++count;
    }
  }
  for (const auto& [v, c] : e.coefficients) {
    if (v.kind != Var::Kind::Loop && merged_dims.count(v.index) != 0) continue;
    ++count;
  }
  return count;
}

AccessClass affine_access_class(const std::vector<Constraint>& constraints) {
  AccessClass c = AccessClass::Affine;
  for (const Constraint& k : constraints) {
    const std::size_t vars = coupled_variable_count(k.expr);
    if (vars >= 2) return AccessClass::AffineGeneral;
    const bool loop_bound = vars == 1 && k.expr.coefficients.size() == 1 &&
                            k.expr.coefficients.begin()->first.kind == Var::Kind::Loop &&
                            k.relation == Constraint::Relation::GreaterEqualZero;
    if (!loop_bound) c = AccessClass::AffineRectangular;
  }
  return c;
}

}  // namespace unimem
