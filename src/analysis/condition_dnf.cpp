#include "analysis/condition_dnf.hpp"

#include <algorithm>

namespace unimem {

namespace {

/// Cartesian product of two DNFs (conjunction), bounded.
std::optional<Dnf> conjoin(const Dnf& a, const Dnf& b) {
  if (a.size() * b.size() > kMaxDisjuncts) return std::nullopt;
  Dnf out;
  for (const Conjunction& x : a) {
    for (const Conjunction& y : b) {
      Conjunction c = x;
      c.insert(c.end(), y.begin(), y.end());
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

std::optional<bool> constant_truth(const Constraint& c) {
  if (c.expr.has_vars()) return std::nullopt;
  const std::optional<std::int64_t> v = c.expr.constant.constant_value();
  if (!v) return std::nullopt;
  switch (c.relation) {
    case Constraint::Relation::greater_equal_zero:
      return *v >= 0;
    case Constraint::Relation::equal_zero:
      return *v == 0;
    case Constraint::Relation::not_equal_zero:
      return *v != 0;
  }
  return std::nullopt;
}

bool simplify(Conjunction& c) {
  Conjunction out;
  for (Constraint& k : c) {
    const std::optional<bool> t = constant_truth(k);
    if (t.has_value()) {
      if (!*t) return false;
      continue;
    }
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
  }
  c = std::move(out);
  return true;
}

bool merge_dnf(const Dnf& a, const Dnf& b, bool conjunction, Dnf& out, ExtractionFailure& why) {
  if (conjunction) {
    std::optional<Dnf> r = conjoin(a, b);
    if (!r) {
      why = {AccessClass::non_affine, "condition too complex"};
      return false;
    }
    out = std::move(*r);
  } else {
    out = a;
    out.insert(out.end(), b.begin(), b.end());
  }
  Dnf cleaned;
  for (Conjunction& c : out) {
    if (simplify(c)) cleaned.push_back(std::move(c));
  }
  out = std::move(cleaned);
  if (out.size() > kMaxDisjuncts) {
    why = {AccessClass::non_affine, "condition too complex"};
    return false;
  }
  return true;
}

}  // namespace unimem
