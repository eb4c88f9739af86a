#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "region/box.hpp"
#include "region/buffer_rect.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// Row and slice pitch of a Layout in bytes; 0 means tight (no padding).
struct LayoutPitches {
  std::uint64_t row_bytes = 0;
  std::uint64_t slice_bytes = 0;
};

/// A row-major array of 1 to 3 dimensions inside a buffer. Extents are given slowest-varying first,
/// like Box<N>: for 3-D, {slices, rows, columns}. Element (s, r, c) starts at byte
///   base_offset + s * slice_pitch + r * row_pitch + c * element_size.
/// Pitches default to tight; a given row pitch must be >= columns * element_size, a given slice
/// pitch >= rows * row_pitch and a multiple of row_pitch (the rule OpenCL's rectangular copies
/// impose, so every box of the array is exactly one BufferRect).
class Layout {
 public:
  Layout(std::uint64_t element_size, const std::vector<std::uint64_t>& extents,
         LayoutPitches pitches = {}, std::uint64_t base_offset = 0);

  [[nodiscard]] std::size_t dimensions() const { return dimensions_; }
  [[nodiscard]] std::uint64_t element_size() const { return element_size_; }
  /// Elements along dimension d (0 = slowest).
  [[nodiscard]] std::uint64_t extent(std::size_t d) const;
  /// Bytes from one element to the next along dimension d (the last dimension's is element_size).
  [[nodiscard]] std::uint64_t stride(std::size_t d) const;
  /// Row pitch in bytes (for 1-D: the bytes of the one row).
  [[nodiscard]] std::uint64_t row_pitch() const;
  /// Slice pitch in bytes (for 1-D and 2-D: the bytes of the whole array).
  [[nodiscard]] std::uint64_t slice_pitch() const;
  [[nodiscard]] std::uint64_t base_offset() const { return base_offset_; }
  /// Bytes the array spans, padding included: extent(0) * stride(0).
  [[nodiscard]] std::uint64_t byte_size() const { return extent_[0] * stride_[0]; }
  /// base_offset() + byte_size(): the smallest buffer size that holds the array.
  [[nodiscard]] std::uint64_t end_offset() const { return base_offset_ + byte_size(); }

  /// The box of all elements; N must equal dimensions().
  template <std::size_t N>
  [[nodiscard]] Box<N> full_box() const;

  /// The exact bytes of the box's elements, consecutive full rows (and full slices) coalesced when
  /// the pitches leave no gap. Throws PreconditionError if N != dimensions() or the box is not
  /// inside the extents. The empty box gives the empty set.
  template <std::size_t N>
  [[nodiscard]] IntervalSet bytes_of(const Box<N>& box) const;

  /// Rectangular copies covering exactly the box's bytes (as bytes_of): one descriptor for a
  /// non-empty box, none for the empty box. The same descriptor describes the host copy, which has
  /// the same layout. Dimensions of extent 1 are dropped and contiguous rows / slices folded, so a
  /// contiguous box comes out as a 1-D copy (BufferRect::contiguous()).
  template <std::size_t N>
  [[nodiscard]] std::vector<BufferRect> rect_copies(const Box<N>& box) const;

  /// "Layout{element 4 B, extents [2, 3, 5], row pitch 32 B, slice pitch 96 B, base 0}".
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const Layout&, const Layout&) = default;

 private:
  template <std::size_t N>
  void require_inside(const Box<N>& box, const char* who) const;
  template <std::size_t N>
  [[nodiscard]] std::uint64_t first_byte(const Box<N>& box) const;

  std::size_t dimensions_ = 1;
  std::uint64_t element_size_ = 1;
  std::array<std::uint64_t, 3> extent_{};
  std::array<std::uint64_t, 3> stride_{};
  std::uint64_t base_offset_ = 0;
};

}  // namespace unimem
