#include "analysis/isl/write_injectivity.hpp"

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/version.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

#include "analysis/kernel_ranges.hpp"
#include "common/check.hpp"

namespace unimem {

namespace {

struct CtxDeleter {
  void operator()(isl_ctx* c) const { isl_ctx_free(c); }
};
struct MapDeleter {
  void operator()(isl_map* m) const { isl_map_free(m); }
};
struct SetDeleter {
  void operator()(isl_set* s) const { isl_set_free(s); }
};
using CtxPtr = std::unique_ptr<isl_ctx, CtxDeleter>;
using MapPtr = std::unique_ptr<isl_map, MapDeleter>;
using SetPtr = std::unique_ptr<isl_set, SetDeleter>;

// isl work bound of one parametric check; beyond it the answer is parametric (launch-time check).
constexpr unsigned long kMaxIslOperations = 2'000'000;

std::string param_name(const Param& p) {
  const std::string i = std::to_string(p.index);
  switch (p.kind) {
    case Param::Kind::scalar_arg:
      return "s" + i;
    case Param::Kind::local_size:
      return "ls" + i;
    case Param::Kind::num_groups:
      return "ng" + i;
    case Param::Kind::global_size:
      return "gs" + i;
    case Param::Kind::global_offset:
      return "off" + i;
  }
  return "?";
}

/// " + k*name" or " - |k|*name" (isl's parser wants plain integers before '*'); name "" for a
/// constant term.
std::string signed_term(std::int64_t k, const std::string& name) {
  const std::uint64_t m =
      k < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(k) : static_cast<std::uint64_t>(k);
  return std::string(k < 0 ? " - " : " + ") + std::to_string(m) + (name.empty() ? "" : "*" + name);
}

/// "c + k1*p1 + ..." for a polynomial of degree <= 1 in the parameters; nullopt otherwise. Every
/// parameter used is added to params.
std::optional<std::string> affine_param_text(const ParamPoly& p, std::set<Param>& params) {
  std::string out = "0";
  for (const auto& [monomial, c] : p.terms()) {
    if (monomial.size() > 1) return std::nullopt;
    if (monomial.empty()) {
      out += signed_term(c, "");
    } else {
      params.insert(monomial.front());
      out += signed_term(c, param_name(monomial.front()));
    }
  }
  return out;
}

/// The name of variable v in the parametric map, given the merged dimensions.
std::string parametric_var_name(const Var& v, const std::array<bool, 3>& merged) {
  switch (v.kind) {
    case Var::Kind::group_id:
      return "w" + std::to_string(v.index);
    case Var::Kind::local_id:
      return (merged[v.index] ? "g" : "l") + std::to_string(v.index);
    case Var::Kind::loop:
      return "i" + std::to_string(v.index);
  }
  return "?";
}

/// constant + sum(coefficient * var) with integer coefficients and an affine-in-parameters
/// constant; nullopt if the expression needs more. Merged dimensions drop the group id (its
/// coefficient was checked to be the local size times that of the local id, now a global id).
std::optional<std::string> parametric_linear_text(const AffineExpr& e,
                                                  const std::array<bool, 3>& merged,
                                                  std::set<Param>& params, std::set<Var>& vars) {
  std::optional<std::string> out = affine_param_text(e.constant, params);
  if (!out) return std::nullopt;
  for (const auto& [v, c] : e.coefficients) {
    if (v.kind == Var::Kind::group_id && merged[v.index]) continue;
    const std::optional<std::int64_t> k = c.constant_value();
    if (!k) return std::nullopt;
    vars.insert(v);
    *out += signed_term(*k, parametric_var_name(v, merged));
  }
  return out;
}

/// Whether, in every write piece, the group id of dimension d only occurs as part of the global
/// id (its coefficient is the local size times that of the local id) and the local id occurs.
bool global_id_only(const ArgumentAccess& arg, std::uint32_t d) {
  const Var w{Var::Kind::group_id, d};
  const Var l{Var::Kind::local_id, d};
  const ParamPoly ls = ParamPoly::param(Param{Param::Kind::local_size, d});
  bool local_id_used = false;
  auto ok = [&](const AffineExpr& e) {
    local_id_used = local_id_used || !e.coefficient(l).is_zero();
    return e.coefficient(w) == ls * e.coefficient(l);
  };
  for (const AccessPiece& p : arg.writes) {
    if (!ok(p.byte_offset)) return false;
    for (const Constraint& c : p.constraints) {
      if (!ok(c.expr)) return false;
    }
  }
  return local_id_used;  // an unused dimension stays a work-group dimension
}

std::string var_name(const Var& v) {
  switch (v.kind) {
    case Var::Kind::group_id:
      return "w" + std::to_string(v.index);
    case Var::Kind::local_id:
      return "l" + std::to_string(v.index);
    case Var::Kind::loop:
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
      if (v.kind == Var::Kind::group_id) continue;
      exist += ", " + var_name(v);
      if (v.kind == Var::Kind::local_id) {
        cond += " and 0 <= " + var_name(v) + " < " + std::to_string(range.local[v.index]);
      } else {
        cond += " and " + var_name(v) + " >= 0";
      }
    }
    for (const Constraint& k : p.constraints) {
      const std::string e = linear_text(k.expr, values);
      switch (k.relation) {
        case Constraint::Relation::greater_equal_zero:
          cond += " and " + e + " >= 0";
          break;
        case Constraint::Relation::equal_zero:
          cond += " and " + e + " = 0";
          break;
        case Constraint::Relation::not_equal_zero:
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

std::optional<ParametricWriteMap> parametric_write_map(const ArgumentAccess& arg,
                                                       std::uint32_t dims) {
  ParametricWriteMap out;
  for (std::uint32_t d = 0; d < dims; ++d) out.merged[d] = global_id_only(arg, d);
  const std::array<bool, 3>& merged = out.merged;
  std::set<Param> params;
  for (std::uint32_t d = 0; d < dims; ++d) {
    params.insert(Param{merged[d] ? Param::Kind::global_size : Param::Kind::num_groups, d});
  }
  std::string domain;
  for (std::uint32_t d = 0; d < dims; ++d) {
    domain += std::string(d == 0 ? "" : ", ") + (merged[d] ? "g" : "w") + std::to_string(d);
  }
  std::string body;
  for (const AccessPiece& p : arg.writes) {
    if (!is_affine(p.access_class)) return std::nullopt;
    std::set<Var> vars;
    std::string cond = "0 <= t < " + std::to_string(p.width);
    for (const Constraint& k : p.constraints) {
      const std::optional<std::string> e = parametric_linear_text(k.expr, merged, params, vars);
      if (!e) return std::nullopt;
      switch (k.relation) {
        case Constraint::Relation::greater_equal_zero:
          cond += " and " + *e + " >= 0";
          break;
        case Constraint::Relation::equal_zero:
          cond += " and " + *e + " = 0";
          break;
        case Constraint::Relation::not_equal_zero:
          cond += " and (" + *e + " < 0 or " + *e + " > 0)";
          break;
      }
    }
    const std::optional<std::string> b =
        parametric_linear_text(p.byte_offset, merged, params, vars);
    if (!b) return std::nullopt;
    cond += " and b = " + *b + " + t";
    std::string exist = "t";
    for (std::uint32_t d = 0; d < dims; ++d) {
      const std::string n = std::to_string(d);
      cond += merged[d] ? " and 0 <= g" + n + " < gs" + n : " and 0 <= w" + n + " < ng" + n;
    }
    for (const Var& v : vars) {
      if (v.kind == Var::Kind::group_id || (v.kind == Var::Kind::local_id && merged[v.index]))
        continue;  // domain variables
      const std::string n = parametric_var_name(v, merged);
      exist += ", " + n;
      if (v.kind == Var::Kind::local_id) {
        params.insert(Param{Param::Kind::local_size, v.index});
        cond += " and 0 <= " + n + " < ls" + std::to_string(v.index);
      } else {
        cond += " and " + n + " >= 0";
      }
    }
    body += std::string(body.empty() ? "" : "; ") + "[" + domain + "] -> [b] : exists (" + exist +
            " : " + cond + ")";
  }
  // The parameter values a launch can have (a superset: gs = ng * ls is not expressible).
  std::string names;
  std::string context;
  for (const Param& q : params) {
    const std::string n = param_name(q);
    names += std::string(names.empty() ? "" : ", ") + n;
    const char* bound = q.kind == Param::Kind::scalar_arg      ? nullptr
                        : q.kind == Param::Kind::global_offset ? " >= 0"
                                                               : " >= 1";
    if (bound != nullptr) context += std::string(context.empty() ? "" : " and ") + n + bound;
  }
  out.map = "[" + names + "] -> { " + body + " }";
  out.context = "[" + names + "] -> { : " + (context.empty() ? "true" : context) + " }";
  return out;
}

}  // namespace detail

WriteInjectivity parametric_write_injectivity(const KernelAccessInfo& kernel, std::string* reason,
                                              std::uint32_t* dims) {
  if (reason != nullptr) reason->clear();
  // Dimensions beyond the last one the writes use have one work-group (else every group along
  // them would write the same bytes): the verdict covers those launches only.
  const std::uint32_t used = used_dimensions(kernel, /*writes_only=*/true);
  if (dims != nullptr) *dims = used;
  if (!kernel.statically_splittable) return WriteInjectivity::parametric;
  CtxPtr ctx(isl_ctx_alloc());
  UNIMEM_REQUIRE(ctx != nullptr, "isl context allocation failed");
  isl_options_set_on_error(ctx.get(), ISL_ON_ERROR_CONTINUE);
  isl_ctx_set_max_operations(ctx.get(), kMaxIslOperations);
  bool all_injective = true;
  for (const ArgumentAccess& arg : kernel.args) {
    if (!arg.is_buffer() || arg.writes.empty()) continue;
    const std::optional<detail::ParametricWriteMap> text = detail::parametric_write_map(arg, used);
    if (!text) {
      all_injective = false;
      continue;
    }
    const std::array<bool, 3>& merged = text->merged;
    MapPtr map(isl_map_read_from_str(ctx.get(), text->map.c_str()));
    SetPtr ctx_set(isl_set_read_from_str(ctx.get(), text->context.c_str()));
    if (!map || !ctx_set) {
      all_injective = false;
      continue;
    }
    ctx_set.reset(isl_set_align_params(ctx_set.release(), isl_map_get_space(map.get())));
    map.reset(isl_map_intersect_params(map.release(), isl_set_copy(ctx_set.get())));
    // Pairs of different domain points (work-groups, or work-items in merged dimensions) that
    // write a common byte, and the parameter values for which there is one.
    isl_space* domain = isl_space_domain(isl_map_get_space(map.get()));
    MapPtr pairs(
        isl_map_apply_range(isl_map_copy(map.get()), isl_map_reverse(isl_map_copy(map.get()))));
    pairs.reset(
        isl_map_subtract(pairs.release(), isl_map_identity(isl_space_map_from_set(domain))));
    SetPtr colliding(isl_map_params(pairs.release()));
    const isl_bool none = colliding ? isl_set_is_empty(colliding.get()) : isl_bool_error;
    if (none == isl_bool_true) continue;
    all_injective = false;
    if (none != isl_bool_false) continue;               // isl gave up: launch-time check
    if (merged[0] || merged[1] || merged[2]) continue;  // items collide, groups may not
    // Group-level map: not injective for every launch of two or more groups?
    std::string names;
    std::string any;
    for (std::uint32_t d = 0; d < used; ++d) {
      const std::string n = "ng" + std::to_string(d);
      names += std::string(d == 0 ? "" : ", ") + n;
      any += std::string(d == 0 ? "" : " or ") + n + " >= 2";
    }
    SetPtr several(
        isl_set_read_from_str(ctx.get(), ("[" + names + "] -> { : " + any + " }").c_str()));
    several.reset(isl_set_align_params(several.release(), isl_set_get_space(ctx_set.get())));
    several.reset(isl_set_intersect(several.release(), ctx_set.release()));
    several.reset(isl_set_align_params(several.release(), isl_set_get_space(colliding.get())));
    if (several && isl_set_is_subset(several.get(), colliding.get()) == isl_bool_true) {
      if (reason != nullptr) {
        *reason = "two work-groups write the same bytes of '" + arg.name +
                  "' for every launch of more than one work-group";
      }
      return WriteInjectivity::not_injective;
    }
  }
  return all_injective ? WriteInjectivity::injective : WriteInjectivity::parametric;
}

// The inputs writes_injective_over_groups reads, in its order: each written buffer argument's
// map text, up to the first argument with a write that is not affine (which decides alone).
std::string injectivity_key(const KernelAccessInfo& kernel, const NDRange& range,
                            const ParamValues& values) {
  std::string key;
  for (std::size_t i = 0; i < kernel.args.size(); ++i) {
    const ArgumentAccess& arg = kernel.args[i];
    if (!arg.is_buffer() || arg.writes.empty()) continue;
    key += std::to_string(i);
    if (std::any_of(arg.writes.begin(), arg.writes.end(),
                    [](const AccessPiece& p) { return !is_affine(p.access_class); })) {
      key += ": not affine";
      return key;
    }
    key += ": ";
    key += detail::write_map_text(arg, range, values);
    key += '\n';
  }
  return key;
}

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
