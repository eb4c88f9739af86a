#pragma once

// Affine expressions over the index variables of a work-item (group ids, local ids, loop
// counters) with coefficients that are polynomials in launch parameters, and constraints on them.

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace unimem {

/// A launch-time constant that may multiply a variable in a subscript: a scalar kernel argument or
/// an NDRange quantity. A coefficient that is a product of parameters is fine because every
/// parameter is known when the kernel is launched (e.g. row * N with N a scalar argument).
struct Param {
  enum class Kind : std::uint8_t {
    scalar_arg,
    local_size,
    num_groups,
    global_size,
    global_offset,
  };
  Kind kind = Kind::scalar_arg;
  std::uint32_t index = 0;  // argument index, or dimension 0..2

  friend auto operator<=>(const Param&, const Param&) = default;
};

/// A polynomial over parameters with integer coefficients: sum of c * p1 * p2 * ...
/// Kept canonical (no zero coefficients; monomials sorted), so == is structural equality.
class ParamPoly {
 public:
  using Monomial = std::vector<Param>;  // sorted; empty = the constant 1

  ParamPoly() = default;
  static ParamPoly constant(std::int64_t c);
  static ParamPoly param(Param p);

  [[nodiscard]] bool is_zero() const { return terms_.empty(); }
  [[nodiscard]] std::optional<std::int64_t> constant_value() const;
  [[nodiscard]] const std::map<Monomial, std::int64_t>& terms() const { return terms_; }

  ParamPoly& operator+=(const ParamPoly& o);
  ParamPoly& operator-=(const ParamPoly& o);
  [[nodiscard]] ParamPoly operator+(const ParamPoly& o) const;
  [[nodiscard]] ParamPoly operator-(const ParamPoly& o) const;
  [[nodiscard]] ParamPoly operator*(const ParamPoly& o) const;
  [[nodiscard]] ParamPoly scaled(std::int64_t k) const;

  friend bool operator==(const ParamPoly&, const ParamPoly&) = default;

 private:
  std::map<Monomial, std::int64_t> terms_;
};

/// An index variable of a work-item's execution: work-group id, local id (dimension 0..2) or the
/// iteration counter (0, 1, 2, ...) of a loop (or of an implicit range such as a memcpy length).
struct Var {
  enum class Kind : std::uint8_t { group_id, local_id, loop };
  Kind kind = Kind::group_id;
  std::uint32_t index = 0;

  friend auto operator<=>(const Var&, const Var&) = default;
};

/// constant + sum(coefficient_v * v) with parametric coefficients (DSOM Eq. 1's f and c_i).
struct AffineExpr {
  ParamPoly constant;
  std::map<Var, ParamPoly> coefficients;  // never holds a zero coefficient

  static AffineExpr of_constant(ParamPoly c);
  static AffineExpr of_var(Var v, ParamPoly coefficient = ParamPoly::constant(1));

  [[nodiscard]] bool has_vars() const { return !coefficients.empty(); }
  [[nodiscard]] ParamPoly coefficient(Var v) const;
  AffineExpr& operator+=(const AffineExpr& o);
  [[nodiscard]] AffineExpr operator+(const AffineExpr& o) const;
  [[nodiscard]] AffineExpr operator-(const AffineExpr& o) const;
  /// Multiplies every coefficient by a variable-free factor.
  [[nodiscard]] AffineExpr scaled(const ParamPoly& factor) const;

  friend bool operator==(const AffineExpr&, const AffineExpr&) = default;
};

/// expr >= 0, expr == 0 or expr != 0.
struct Constraint {
  enum class Relation : std::uint8_t { greater_equal_zero, equal_zero, not_equal_zero };
  AffineExpr expr;
  Relation relation = Relation::greater_equal_zero;

  friend bool operator==(const Constraint&, const Constraint&) = default;
};

/// Names used when printing expressions (DSOM Fig. 8 style: w_x, l_x, i1, argument names).
struct ExprNames {
  std::vector<std::string> scalar_args;  // by argument index ("" if not a scalar)
  std::vector<std::string> loops;        // by loop variable index
};

[[nodiscard]] std::string to_string(const Param& p, const ExprNames& names);
[[nodiscard]] std::string to_string(const ParamPoly& p, const ExprNames& names);
[[nodiscard]] std::string to_string(const Var& v, const ExprNames& names);
[[nodiscard]] std::string to_string(const AffineExpr& e, const ExprNames& names);
[[nodiscard]] std::string to_string(const Constraint& c, const ExprNames& names);

/// Values of every parameter for one launch.
struct ParamValues {
  std::vector<std::optional<std::int64_t>> scalar_args;  // by argument index
  std::array<std::int64_t, 3> local_size{1, 1, 1};
  std::array<std::int64_t, 3> num_groups{1, 1, 1};
  std::array<std::int64_t, 3> global_size{1, 1, 1};
  std::array<std::int64_t, 3> global_offset{0, 0, 0};
  std::span<const std::string> scalar_arg_names;  // for error messages (the caller's storage)
};

/// Evaluates a polynomial; throws PreconditionError when a needed scalar argument has no value or
/// on 64-bit overflow.
[[nodiscard]] std::int64_t evaluate(const ParamPoly& p, const ParamValues& values);

}  // namespace unimem
