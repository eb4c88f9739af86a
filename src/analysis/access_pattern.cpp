#include "analysis/access_pattern.hpp"

#include <algorithm>

namespace unimem {

ExprNames KernelAccessInfo::names() const {
  ExprNames n;
  for (const ArgumentAccess& a : args) {
    if (n.scalar_args.size() <= a.index) n.scalar_args.resize(a.index + 1);
    n.scalar_args[a.index] = a.name;
  }
  n.loops = loop_names;
  return n;
}

const ArgumentAccess* KernelAccessInfo::find_arg(const std::string& arg_name) const {
  for (const ArgumentAccess& a : args) {
    if (a.name == arg_name) return &a;
  }
  return nullptr;
}

const KernelAccessInfo* ProgramAccessInfo::find_kernel(const std::string& kernel_name) const {
  for (const KernelAccessInfo& k : kernels) {
    if (k.name == kernel_name) return &k;
  }
  return nullptr;
}

std::string to_string(const AccessPiece& piece, const ExprNames& names) {
  std::string out;
  if (is_affine(piece.access_class)) {
    out = to_string(piece.byte_offset, names);
    out += " [" + std::to_string(piece.width) + " B]";
    for (std::size_t i = 0; i < piece.constraints.size(); ++i) {
      out += (i == 0 ? ", " : " && ") + to_string(piece.constraints[i], names);
    }
  } else {
    out = "whole buffer (" + piece.reason + ")";
  }
  out += std::string("  -- ") + to_string(piece.access_class);
  if (piece.conditions_dropped) out += ", may (condition dropped)";
  if (piece.atomic) out += ", atomic";
  return out;
}

std::string to_string(const KernelAccessInfo& kernel) {
  const ExprNames names = kernel.names();
  std::string out = kernel.name + "\n";
  for (const ArgumentAccess& a : kernel.args) {
    if (!a.is_buffer()) continue;
    out += "  " + a.name + " (arg " + std::to_string(a.index) + ", " + a.type_name + ")\n";
    out += "    Read:\n";
    for (const AccessPiece& p : a.reads) out += "      " + to_string(p, names) + "\n";
    out += "    Write:\n";
    for (const AccessPiece& p : a.writes) out += "      " + to_string(p, names) + "\n";
  }
  if (!kernel.statically_splittable) out += "  unsplittable: " + kernel.unsplittable_reason + "\n";
  return out;
}

const char* to_string(WriteInjectivity w) {
  switch (w) {
    case WriteInjectivity::injective:
      return "injective";
    case WriteInjectivity::not_injective:
      return "not injective";
    case WriteInjectivity::parametric:
      return "depends on launch parameters";
  }
  return "?";
}

std::uint32_t used_dimensions(const KernelAccessInfo& kernel, bool writes_only) {
  std::uint32_t dims = 1;
  auto see_poly = [&dims](const ParamPoly& p) {
    for (const auto& [monomial, c] : p.terms()) {
      for (const Param& q : monomial) {
        if (q.kind != Param::Kind::scalar_arg) dims = std::max(dims, q.index + 1);
      }
    }
  };
  auto see = [&](const AffineExpr& e) {
    see_poly(e.constant);
    for (const auto& [v, c] : e.coefficients) {
      if (v.kind != Var::Kind::loop) dims = std::max(dims, v.index + 1);
      see_poly(c);
    }
  };
  for (const ArgumentAccess& arg : kernel.args) {
    for (const auto* pieces : {&arg.reads, &arg.writes}) {
      if (writes_only && pieces == &arg.reads) continue;
      for (const AccessPiece& p : *pieces) {
        see(p.byte_offset);
        for (const Constraint& c : p.constraints) see(c.expr);
      }
    }
  }
  return std::min<std::uint32_t>(dims, 3);
}

std::vector<bool> scalars_in_accesses(const KernelAccessInfo& kernel) {
  std::vector<bool> used(kernel.args.size(), false);
  const auto see_poly = [&used](const ParamPoly& p) {
    for (const auto& [monomial, c] : p.terms()) {
      for (const Param& q : monomial) {
        if (q.kind != Param::Kind::scalar_arg) continue;
        if (q.index >= used.size()) used.resize(q.index + 1, false);
        used[q.index] = true;
      }
    }
  };
  const auto see = [&see_poly](const AffineExpr& e) {
    see_poly(e.constant);
    for (const auto& [v, c] : e.coefficients) see_poly(c);
  };
  for (const ArgumentAccess& arg : kernel.args) {
    for (const auto* pieces : {&arg.reads, &arg.writes}) {
      for (const AccessPiece& p : *pieces) {
        see(p.byte_offset);
        for (const Constraint& c : p.constraints) see(c.expr);
      }
    }
  }
  return used;
}

}  // namespace unimem
