#include "analysis/affine_expr.hpp"

#include <algorithm>

#include "common/check.hpp"

namespace unimem {

namespace {

std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  UNIMEM_REQUIRE(!__builtin_add_overflow(a, b, &r), "affine expression overflows 64 bits");
  return r;
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  UNIMEM_REQUIRE(!__builtin_mul_overflow(a, b, &r), "affine expression overflows 64 bits");
  return r;
}

const char* dim_name(std::uint32_t d) { return d == 0 ? "x" : d == 1 ? "y" : "z"; }

}  // namespace

ParamPoly ParamPoly::constant(std::int64_t c) {
  ParamPoly p;
  if (c != 0) p.terms_[{}] = c;
  return p;
}

ParamPoly ParamPoly::param(Param q) {
  ParamPoly p;
  p.terms_[{q}] = 1;
  return p;
}

std::optional<std::int64_t> ParamPoly::constant_value() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

ParamPoly& ParamPoly::operator+=(const ParamPoly& o) {
  for (const auto& [m, c] : o.terms_) {
    const std::int64_t sum = checked_add(terms_[m], c);
    if (sum == 0) {
      terms_.erase(m);
    } else {
      terms_[m] = sum;
    }
  }
  return *this;
}

ParamPoly& ParamPoly::operator-=(const ParamPoly& o) { return *this += o.scaled(-1); }

ParamPoly ParamPoly::operator+(const ParamPoly& o) const {
  ParamPoly r = *this;
  r += o;
  return r;
}

ParamPoly ParamPoly::operator-(const ParamPoly& o) const {
  ParamPoly r = *this;
  r -= o;
  return r;
}

ParamPoly ParamPoly::operator*(const ParamPoly& o) const {
  ParamPoly r;
  for (const auto& [m1, c1] : terms_) {
    for (const auto& [m2, c2] : o.terms_) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      ParamPoly term;
      term.terms_[m] = checked_mul(c1, c2);
      r += term;
    }
  }
  return r;
}

ParamPoly ParamPoly::scaled(std::int64_t k) const {
  ParamPoly r;
  if (k == 0) return r;
  for (const auto& [m, c] : terms_) r.terms_[m] = checked_mul(c, k);
  return r;
}

AffineExpr AffineExpr::of_constant(ParamPoly c) {
  AffineExpr e;
  e.constant = std::move(c);
  return e;
}

AffineExpr AffineExpr::of_var(Var v, ParamPoly coefficient) {
  AffineExpr e;
  if (!coefficient.is_zero()) e.coefficients[v] = std::move(coefficient);
  return e;
}

ParamPoly AffineExpr::coefficient(Var v) const {
  auto it = coefficients.find(v);
  return it == coefficients.end() ? ParamPoly{} : it->second;
}

AffineExpr& AffineExpr::operator+=(const AffineExpr& o) {
  constant += o.constant;
  for (const auto& [v, c] : o.coefficients) {
    ParamPoly sum = coefficient(v) + c;
    if (sum.is_zero()) {
      coefficients.erase(v);
    } else {
      coefficients[v] = std::move(sum);
    }
  }
  return *this;
}

AffineExpr AffineExpr::operator+(const AffineExpr& o) const {
  AffineExpr r = *this;
  r += o;
  return r;
}

AffineExpr AffineExpr::operator-(const AffineExpr& o) const {
  return *this + o.scaled(ParamPoly::constant(-1));
}

AffineExpr AffineExpr::scaled(const ParamPoly& factor) const {
  AffineExpr r;
  r.constant = constant * factor;
  for (const auto& [v, c] : coefficients) {
    ParamPoly p = c * factor;
    if (!p.is_zero()) r.coefficients[v] = std::move(p);
  }
  return r;
}

std::string to_string(const Param& p, const ExprNames& names) {
  switch (p.kind) {
    case Param::Kind::scalar_arg:
      if (p.index < names.scalar_args.size() && !names.scalar_args[p.index].empty()) {
        return names.scalar_args[p.index];
      }
      return "arg" + std::to_string(p.index);
    case Param::Kind::local_size:
      return std::string("ls_") + dim_name(p.index);
    case Param::Kind::num_groups:
      return std::string("ws_") + dim_name(p.index);
    case Param::Kind::global_size:
      return std::string("gs_") + dim_name(p.index);
    case Param::Kind::global_offset:
      return std::string("off_") + dim_name(p.index);
  }
  return "?";
}

std::string to_string(const ParamPoly& p, const ExprNames& names) {
  if (p.is_zero()) return "0";
  std::string out;
  bool first = true;
  for (const auto& [m, c] : p.terms()) {
    std::int64_t k = c;
    if (!first) {
      out += k < 0 ? " - " : " + ";
      if (k < 0) k = -k;
    }
    first = false;
    std::string mono;
    for (const Param& q : m) mono += (mono.empty() ? "" : "*") + to_string(q, names);
    if (mono.empty()) {
      out += std::to_string(k);
    } else if (k == 1) {
      out += mono;
    } else if (k == -1) {
      out += "-" + mono;
    } else {
      out += std::to_string(k) + "*" + mono;
    }
  }
  return out;
}

std::string to_string(const Var& v, const ExprNames& names) {
  switch (v.kind) {
    case Var::Kind::group_id:
      return std::string("w_") + dim_name(v.index);
    case Var::Kind::local_id:
      return std::string("l_") + dim_name(v.index);
    case Var::Kind::loop:
      if (v.index < names.loops.size()) return names.loops[v.index];
      return "i" + std::to_string(v.index + 1);
  }
  return "?";
}

std::string to_string(const AffineExpr& e, const ExprNames& names) {
  std::string out;
  auto append = [&](const ParamPoly& coeff, const std::string& var) {
    std::string c = to_string(coeff, names);
    const bool compound = coeff.terms().size() > 1;
    std::string term;
    if (var.empty()) {
      term = c;
    } else if (c == "1") {
      term = var;
    } else if (c == "-1") {
      term = "-" + var;
    } else {
      term = (compound ? "(" + c + ")" : c) + "*" + var;
    }
    if (out.empty()) {
      out = term;
    } else if (term.front() == '-' && !compound) {
      out += " - " + term.substr(1);
    } else {
      out += " + " + term;
    }
  };
  for (const auto& [v, c] : e.coefficients) append(c, to_string(v, names));
  if (!e.constant.is_zero() || out.empty()) append(e.constant, "");
  return out;
}

std::string to_string(const Constraint& c, const ExprNames& names) {
  const char* rel = c.relation == Constraint::Relation::greater_equal_zero ? " >= 0"
                    : c.relation == Constraint::Relation::equal_zero       ? " == 0"
                                                                           : " != 0";
  return to_string(c.expr, names) + rel;
}

std::int64_t evaluate(const ParamPoly& p, const ParamValues& values) {
  std::int64_t total = 0;
  for (const auto& [m, c] : p.terms()) {
    std::int64_t term = c;
    for (const Param& q : m) {
      std::int64_t v = 0;
      switch (q.kind) {
        case Param::Kind::scalar_arg: {
          const bool known =
              q.index < values.scalar_args.size() && values.scalar_args[q.index].has_value();
          if (!known) {
            const std::string name =
                q.index < values.scalar_arg_names.size() ? values.scalar_arg_names[q.index] : "";
            throw PreconditionError("access range needs the value of scalar argument " +
                                    std::to_string(q.index) +
                                    (name.empty() ? "" : " '" + name + "'"));
          }
          v = *values.scalar_args[q.index];
          break;
        }
        case Param::Kind::local_size:
          v = values.local_size.at(q.index);
          break;
        case Param::Kind::num_groups:
          v = values.num_groups.at(q.index);
          break;
        case Param::Kind::global_size:
          v = values.global_size.at(q.index);
          break;
        case Param::Kind::global_offset:
          v = values.global_offset.at(q.index);
          break;
      }
      term = checked_mul(term, v);
    }
    total = checked_add(total, term);
  }
  return total;
}

}  // namespace unimem
