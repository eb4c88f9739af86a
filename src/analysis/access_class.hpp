#pragma once

// The class of a global-memory reference after DSOM Table 2 (000_7b2a075be0870d8f.txt), how an
// affine reference is classified from its constraints, and the per-class reference counts.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/affine_expr.hpp"

namespace unimem {

/// The class of one global-memory reference, as in DSOM Table 2 (000_7b2a075be0870d8f.txt):
/// N1 = affine subscript, no constraint; N2 = affine with rectangular constraints (each constraint
/// bounds one variable, a global id counting as one); N3 = the rest. N3 is split further: affine
/// with general (coupled) constraints, which unimem still evaluates exactly, and the three kinds of
/// "other" that fall back to the whole buffer.
enum class AccessClass : std::uint8_t {
  affine,              // N1
  affine_rectangular,  // N2
  affine_general,      // N3, evaluated exactly (enumeration of coupled variables / isl)
  indirect,            // N3: subscript depends on loaded data, e.g. a[b[i]]
  non_affine,          // N3: products of variables, divisions, unknown phis
  unknown_call,        // N3: a call the analysis cannot see through, or a pointer of unknown origin
};

[[nodiscard]] const char* to_string(AccessClass c);
[[nodiscard]] inline bool is_affine(AccessClass c) {
  return c == AccessClass::affine || c == AccessClass::affine_rectangular ||
         c == AccessClass::affine_general;
}

/// Why a subscript or condition has no affine form: the "other" class the reference then gets and
/// the reason shown to the user.
struct ExtractionFailure {
  AccessClass access_class = AccessClass::non_affine;
  std::string reason;
};

/// The variables a constraint couples, where w_d and l_d count as one (the global id) when the
/// group id's coefficient is local_size_d times the local id's.
[[nodiscard]] std::size_t coupled_variable_count(const AffineExpr& e);

/// DSOM Table 2 class of an affine piece with these constraints: none beyond single-variable loop
/// bounds (N1); only single-variable constraints (N2); coupled variables (N3, evaluated exactly).
[[nodiscard]] AccessClass affine_access_class(const std::vector<Constraint>& constraints);

/// Per-class reference counts (DSOM Table 2 columns). A reference is one load, store, atomic or
/// memory builtin call on global memory.
struct AccessStats {
  std::uint32_t total = 0;
  std::uint32_t affine = 0;              // N1
  std::uint32_t affine_rectangular = 0;  // N2
  std::uint32_t affine_general = 0;      // N3, still exact here
  std::uint32_t indirect = 0;            // N3
  std::uint32_t non_affine = 0;          // N3
  std::uint32_t unknown_call = 0;        // N3

  void add(AccessClass c);
  AccessStats& operator+=(const AccessStats& o);
};

}  // namespace unimem
