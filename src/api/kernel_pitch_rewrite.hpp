#pragma once

// Packed 2-D boxes (issue 10): a kernel whose buffer is held on a device as a rectangle packed
// at its own pitch. When the bytes a partition (an out-of-core chunk) touches of a buffer are
// rows of equal length at a constant pitch, the device allocation can hold just those rows, one
// after another (memory/residency.hpp, ResidentAllocation::pitch). The kernel still indexes the
// buffer from its start, so its subscripts are remapped: rewrite_for_pitches rewrites the source
// as rewrite_for_offsets does (every `__global T* p` takes buffer + byte offset) and, for each
// such parameter that is only ever used as `p[expr]` in its kernel's body, turns every subscript
// into `p[UNIMEM_PACK_<kernel>_<index>(expr)]`, and adds two hidden ulong parameters after its
// offset, `p__um_row0` and `p__um_col0`. A build variant that packs parameter <index> defines
// UNIMEM_PITCH_<kernel>_<index> and UNIMEM_WIDTH_<kernel>_<index> (the buffer's row pitch and
// the packed row width, in elements of p's type: compile-time constants, so the division by the
// pitch becomes shifts or a multiplication); the subscript then becomes the element index in the
// packed allocation:
//   row = i / pitch, col = i % pitch, packed = (row - row0) * width + (col - col0),
// computed in 64-bit unsigned arithmetic. Without those macros the subscript is unchanged.
//
// Why it is correct: the runtime packs a buffer only for a partition whose access sets (exact:
// DESIGN.md invariant 6, never under-approximated, no may-write set) are rectangular, with
// rows [row0, row0 + rows) and columns [col0, col0 + width) of pitch `pitch` (in bytes, each a
// multiple of the element size), and only when p points at the buffer's first byte. Every
// element i the partition dereferences through p lies in the access sets, so i = row * pitch +
// col with row0 <= row < row0 + rows and col0 <= col < col0 + width (i >= 0 since i is a byte
// of the buffer); its packed index (row - row0) * width + (col - col0) lies in [0, rows *
// width), and the packed allocation holds buffer element i exactly there (rows packed one
// after another, each row's elements in order). The remap is exact only for subscripts: a
// pointer formed from p (p + k, &p[k], *p, passing p to a function, assigning it) would step
// through the packed allocation as if it were the buffer, so any use of p other than `p[...]`
// (and any appearance of p's name in a preprocessor line, where a macro could hide such a use)
// makes p ineligible: its buffer keeps 1-D boxes. Comments, string and character literals are
// skipped when reading uses.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unimem {

/// One parameter of a kernel as rewrite_for_pitches rewrote it.
struct PitchedParameter {
  /// A __global pointer: it takes the buffer, then its byte offset as a ulong.
  bool global_pointer = false;
  /// Non-zero (the size of its element type in bytes) when the parameter may be packed: it then
  /// also takes row0 and col0 (ulong, in elements) after the offset.
  std::uint32_t element_size = 0;
  /// How many kernel arguments the parameter takes in the rewritten kernel (1, 2 or 4).
  [[nodiscard]] unsigned argument_count() const {
    return !global_pointer ? 1U : element_size == 0 ? 2U : 4U;
  }
};

struct PitchedSource {
  std::string source;
  /// Per kernel, per original parameter.
  std::map<std::string, std::vector<PitchedParameter>> parameters;
};

/// Throws PreconditionError naming the kernel when a kernel's parameter list or body cannot be
/// read ("cannot rewrite kernel 'k' for packed boxes: ...").
[[nodiscard]] PitchedSource rewrite_for_pitches(const std::string& source);

/// The macros that make parameter `index` of `kernel` packed at `pitch_elements` with rows of
/// `width_elements` (to put before the rewritten source).
[[nodiscard]] std::string pitch_macros(const std::string& kernel, std::size_t index,
                                       std::uint64_t pitch_elements, std::uint64_t width_elements);

}  // namespace unimem
