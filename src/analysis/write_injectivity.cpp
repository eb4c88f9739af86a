#include "analysis/write_injectivity.hpp"

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/version.h>

#include <memory>
#include <set>

#include "common/check.hpp"

namespace unimem {

namespace {

struct CtxDeleter {
  void operator()(isl_ctx* c) const { isl_ctx_free(c); }
};
struct MapDeleter {
  void operator()(isl_map* m) const { isl_map_free(m); }
};
using CtxPtr = std::unique_ptr<isl_ctx, CtxDeleter>;
using MapPtr = std::unique_ptr<isl_map, MapDeleter>;

std::string var_name(const Var& v) {
  switch (v.kind) {
    case Var::Kind::GroupId:
      return "w" + std::to_string(v.index);
    case Var::Kind::LocalId:
      return "l" + std::to_string(v.index);
    case Var::Kind::Loop:
      return "i" + std::to_string(v.index);
  }
  return "?";
}

std::string linear_text(const AffineExpr& e, const ParamValues& values) {
  std::string out = std::to_string(evaluate(e.constant, values));
  for (const auto& [v, c] : e.coefficients) {
    const std::int64_t k = evaluate(c, values);
    if (k == 0) continue;
    out += (k < 0 ? " - " : " + ") + std::to_string(k < 0 ? -k : k) + "*" + var_name(v);
  }
  return out;
}

}  // namespace

std::string isl_runtime_version() { return isl_version(); }

namespace detail {

std::string write_map_text(const ArgumentAccess& arg, const NDRange& range,
                           const ParamValues& values) {
  const std::array<std::uint64_t, 3> groups = num_groups(range);
  std::string out = "{ ";
  bool first = true;
  for (const AccessPiece& p : arg.writes) {
    std::set<Var> vars;
    for (const auto& [v, c] : p.byte_offset.coefficients) vars.insert(v);
    for (const Constraint& k : p.constraints) {
      for (const auto& [v, c] : k.expr.coefficients) vars.insert(v);
    }
    std::string exist = "t";
    std::string cond = "0 <= t < " + std::to_string(p.width);
    for (std::uint32_t d = 0; d < 3; ++d) {
      cond += " and 0 <= w" + std::to_string(d) + " < " + std::to_string(groups[d]);
    }
    for (const Var& v : vars) {
      if (v.kind == Var::Kind::GroupId) continue;
      exist += ", " + var_name(v);
      if (v.kind == Var::Kind::LocalId) {
        cond += " and 0 <= " + var_name(v) + " < " + std::to_string(range.local[v.index]);
      } else {
        cond += " and " + var_name(v) + " >= 0";
      }
    }
    for (const Constraint& k : p.constraints) {
      const std::string e = linear_text(k.expr, values);
      switch (k.relation) {
        case Constraint::Relation::GreaterEqualZero:
          cond += " and " + e + " >= 0";
          break;
        case Constraint::Relation::EqualZero:
          cond += " and " + e + " = 0";
          break;
        case Constraint::Relation::NotEqualZero:
          cond += " and (" + e + " < 0 or " + e + " > 0)";
          break;
      }
    }
    cond += " and b = " + linear_text(p.byte_offset, values) + " + t";
    out += std::string(first ? "" : "; ") + "[w0, w1, w2] -> [b] : exists (" + exist + " : " +
           cond + ")";
    first = false;
  }
  out += " }";
  return out;
}

}  // namespace detail

bool writes_injective_over_groups(const KernelAccessInfo& kernel, const NDRange& range,
                                  const ParamValues& values, std::string* reason) {
  CtxPtr ctx(isl_ctx_alloc());
  UNIMEM_REQUIRE(ctx != nullptr, "isl context allocation failed");
  for (const ArgumentAccess& arg : kernel.args) {
    if (!arg.is_buffer() || arg.writes.empty()) continue;
    for (const AccessPiece& p : arg.writes) {
      if (!is_affine(p.access_class)) {
        if (reason != nullptr) *reason = "argument '" + arg.name + "' has an unbounded write";
        return false;
      }
    }
    const std::string text = detail::write_map_text(arg, range, values);
    MapPtr map(isl_map_read_from_str(ctx.get(), text.c_str()));
    if (!map) {
      if (reason != nullptr) *reason = "isl could not read the write map of '" + arg.name + "'";
      return false;
    }
    const isl_bool injective = isl_map_is_injective(map.get());
    if (injective != isl_bool_true) {
      if (reason != nullptr) {
        *reason = injective == isl_bool_false
                      ? "two work-groups may write the same bytes of '" + arg.name + "'"
                      : "isl failed on the write map of '" + arg.name + "'";
      }
      return false;
    }
  }
  if (reason != nullptr) reason->clear();
  return true;
}

}  // namespace unimem
