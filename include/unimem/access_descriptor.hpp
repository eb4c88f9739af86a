#pragma once

// What a kernel does to each of its buffer arguments (DESIGN.md "Access patterns"), for
// LaunchOptions::accesses (<unimem/program.hpp>). A descriptor is either "the whole buffer" or a
// union of affine pieces: an element subscript, affine in the global ids and in bounded loop
// variables, with per-variable bounds (DSOM Table 2 classes N1 and N2,
// 000_7b2a075be0870d8f.txt). The kernel analysis derives the same shape from the kernel source
// (Program::launch uses it for every buffer argument without a descriptor); descriptors a caller
// supplies override it argument by argument. The schedule layer turns descriptors into the bytes
// of each launch partition (src/schedule/launch_plan.*, access_descriptor.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace unimem {

/// How a kernel uses the bytes of one pattern.
/// - read: read only; may over-approximate (costs bytes, never correctness).
/// - write: certainly written (every byte of the pattern), so nothing needs fetching first.
/// - read_write: read and certainly written.
/// - may_write: perhaps written (behind a data-dependent condition); fetched before the kernel
///   like a read, so the bytes it does not write stay right (DESIGN.md invariant 6).
enum class AccessMode : std::uint8_t { read, write, read_write, may_write };

[[nodiscard]] const char* to_string(AccessMode mode);

/// An index variable of an affine subscript: a global work-item id of dimension `index`
/// (get_global_id(index), including the launch's global offset) or a loop variable.
struct IndexVar {
  enum class Kind : std::uint8_t { global_id, loop };
  Kind kind = Kind::global_id;
  std::uint32_t index = 0;

  static IndexVar global_id(std::uint32_t dim) { return {Kind::global_id, dim}; }
  static IndexVar loop(std::uint32_t n) { return {Kind::loop, n}; }
  friend bool operator==(const IndexVar&, const IndexVar&) = default;
};

/// A term coefficient * var of a subscript, in elements.
struct SubscriptTerm {
  IndexVar var;
  std::int64_t coefficient = 0;
};

/// Inclusive bounds lower <= var <= upper on one variable. A global id is additionally bounded by
/// the launch partition; a loop variable must be bounded.
struct VarBound {
  IndexVar var;
  std::int64_t lower = 0;
  std::int64_t upper = 0;
};

/// The elements constant + sum(coefficient * var) for every point of the variables' domain, each
/// element_size bytes wide.
struct AffinePiece {
  std::int64_t constant = 0;
  std::vector<SubscriptTerm> terms;
  std::vector<VarBound> bounds;
  std::uint64_t element_size = 1;

  /// "4*(2 + 48*g1 + 1*g0), g1 in [1, 47]" for logs and errors.
  [[nodiscard]] std::string to_string() const;
};

/// Every byte of the buffer.
struct WholeBuffer {};

/// The access of one buffer argument in one mode.
struct AccessDescriptor {
  std::uint32_t arg = 0;  ///< kernel argument index
  AccessMode mode = AccessMode::read;
  std::variant<WholeBuffer, std::vector<AffinePiece>> pattern = WholeBuffer{};

  static AccessDescriptor whole(std::uint32_t arg, AccessMode mode) {
    return {arg, mode, WholeBuffer{}};
  }
  static AccessDescriptor affine(std::uint32_t arg, AccessMode mode,
                                 std::vector<AffinePiece> pieces) {
    return {arg, mode, std::move(pieces)};
  }
  [[nodiscard]] bool is_whole() const { return std::holds_alternative<WholeBuffer>(pattern); }
};

/// Convenience for the common 1:1 patterns: the elements row_pitch*g1 + g0 (2-D) etc. are written
/// with these builders in the examples; `row_major` builds constant + sum(pitch[d] * g_d).
[[nodiscard]] AffinePiece row_major_piece(std::uint64_t element_size,
                                          std::vector<std::int64_t> pitches,
                                          std::int64_t constant = 0,
                                          std::vector<VarBound> bounds = {});

/// The descriptors of one kernel launch (several per argument allowed; they unite).
using KernelAccess = std::vector<AccessDescriptor>;

/// Descriptors of `base` replaced, argument by argument, by those of `overrides` (an argument with
/// any descriptor in `overrides` keeps only those).
[[nodiscard]] KernelAccess override_accesses(const KernelAccess& base,
                                             const KernelAccess& overrides);

}  // namespace unimem
