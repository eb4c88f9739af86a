#pragma once

// What the analysis learns about a program: per kernel argument, the access pieces of its reads
// and writes (DSOM Eq. 1 and Fig. 8), and per kernel, splittability and write injectivity.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/access_class.hpp"
#include "analysis/affine_expr.hpp"

namespace unimem {

/// One piece of an argument's access pattern: the bytes [offset, offset + width) for every point
/// of the variables satisfying all constraints (DSOM Eq. 1, subscript in bytes). Loop variables
/// count iterations from 0; a loop variable without an upper bound makes the piece unbounded.
struct AccessPiece {
  AffineExpr byte_offset;
  std::uint32_t width = 1;
  std::vector<Constraint> constraints;
  AccessClass access_class = AccessClass::affine;
  /// Some guarding condition could not be expressed (data-dependent, non-affine, early loop exit)
  /// and was dropped: the piece over-approximates (a may-access).
  bool conditions_dropped = false;
  /// Atomic read-modify-write (counts as read and write).
  bool atomic = false;
  /// For "other" classes: why (shown to the user).
  std::string reason;
  /// The source reference this piece comes from (instruction text or builtin name), for printing.
  std::string origin;
};

enum class ArgKind : std::uint8_t {
  global_buffer,
  constant_buffer,
  local_buffer,
  scalar,
  other,
};

struct ArgumentAccess {
  std::uint32_t index = 0;
  std::string name;
  std::string type_name;
  /// The type with typedefs resolved (kernel_arg_base_type), e.g. "uint" for a typedef'd index.
  std::string base_type_name;
  ArgKind kind = ArgKind::scalar;
  /// For scalars: the width in bits and whether the type is floating-point (float, double, half).
  std::uint32_t scalar_bits = 0;
  bool scalar_floating = false;
  std::vector<AccessPiece> reads;
  std::vector<AccessPiece> writes;

  [[nodiscard]] bool is_buffer() const {
    return kind == ArgKind::global_buffer || kind == ArgKind::constant_buffer;
  }
};

/// Injectivity of the write maps over work-groups (Matz et al. section 4.1) as decided at analysis
/// time with isl, scalar arguments and NDRange sizes as parameters
/// (analysis/isl/write_injectivity.hpp).
enum class WriteInjectivity : std::uint8_t {
  injective,      // for every launch: no launch-time check
  not_injective,  // for every launch of two or more work-groups: unsplittable
  parametric,     // depends on the launch parameters (or undecided): checked per launch, cached
};

[[nodiscard]] const char* to_string(WriteInjectivity w);

struct KernelAccessInfo {
  std::string name;
  std::vector<ArgumentAccess> args;
  /// Names of loop variables (i1, i2, ...), by Var::index of Kind::loop.
  std::vector<std::string> loop_names;
  /// False when some write can never be bounded (indirect or non-affine subscript, unknown call);
  /// injectivity over work-groups is decided per launch (see KernelRangeGenerator).
  bool statically_splittable = true;
  std::string unsplittable_reason;
  /// Set by analyze_program; parametric (check every distinct launch) unless proven otherwise.
  WriteInjectivity write_injectivity = WriteInjectivity::parametric;
  std::string write_injectivity_reason;  // for not_injective: which argument and why
  /// write_injectivity holds for launches with one work-group in every dimension >= this one.
  std::uint32_t write_injectivity_dims = 3;
  AccessStats stats;

  [[nodiscard]] ExprNames names() const;
  [[nodiscard]] const ArgumentAccess* find_arg(const std::string& arg_name) const;
};

/// The number of NDRange dimensions (1 to 3) a kernel's patterns refer to: one past the highest
/// dimension of a work-group or local id or of an NDRange parameter (sizes, offsets) in a
/// subscript or condition; 1 if none. writes_only: only the write pieces count.
[[nodiscard]] std::uint32_t used_dimensions(const KernelAccessInfo& kernel, bool writes_only);

/// Per argument index (kernel.args.size() entries), whether a scalar argument's value appears in
/// some access piece of the kernel (a subscript, a coefficient, a guard or loop bound, of a read
/// or a write): the only way an argument's value reaches what the analysis derives for a launch
/// (byte ranges, splittability, write injectivity). An argument it is false for may take any
/// value without changing any of those (ProgramCore's scalar twins rely on it).
[[nodiscard]] std::vector<bool> scalars_in_accesses(const KernelAccessInfo& kernel);

/// Everything the analysis learnt about one program (source + build options).
struct ProgramAccessInfo {
  std::vector<KernelAccessInfo> kernels;
  double frontend_ms = 0;     // Clang: OpenCL C -> LLVM IR
  double transform_ms = 0;    // canonicalization passes
  double extraction_ms = 0;   // access extraction
  double injectivity_ms = 0;  // parametric write-injectivity check (isl)
  [[nodiscard]] double total_ms() const {
    return frontend_ms + transform_ms + extraction_ms + injectivity_ms;
  }
  [[nodiscard]] const KernelAccessInfo* find_kernel(const std::string& kernel_name) const;
};

/// Human-readable patterns in the spirit of DSOM Fig. 8: per buffer argument, Read: and Write:
/// lines "subscript [width], conditions -- class".
[[nodiscard]] std::string to_string(const AccessPiece& piece, const ExprNames& names);
[[nodiscard]] std::string to_string(const KernelAccessInfo& kernel);

}  // namespace unimem
