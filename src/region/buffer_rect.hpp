#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace unimem {

/// One side of a rectangular copy: the buffer_origin, region, buffer_row_pitch and
/// buffer_slice_pitch arguments of clEnqueueReadBufferRect / clEnqueueWriteBufferRect (OpenCL 1.2
/// section 5.2.2); the device layer's two-sided RectCopy takes one per side. x (fastest) first:
///   origin = {x in bytes, y in rows, z in slices}; region = {width in bytes, height in rows,
///   depth in slices}, every entry >= 1; the copy covers, for every j < height and k < depth,
///   the bytes [offset() + j * row_pitch + k * slice_pitch, ... + width).
/// Pitches are always explicit (never 0): row_pitch >= width, slice_pitch >= height * row_pitch
/// and slice_pitch is a multiple of row_pitch (OpenCL and POCL reject other values).
struct BufferRect {
  std::array<std::uint64_t, 3> origin{};
  std::array<std::uint64_t, 3> region{};
  std::uint64_t row_pitch = 0;
  std::uint64_t slice_pitch = 0;

  /// Byte offset of the first byte: origin[2] * slice_pitch + origin[1] * row_pitch + origin[0].
  [[nodiscard]] constexpr std::uint64_t offset() const {
    return origin[2] * slice_pitch + origin[1] * row_pitch + origin[0];
  }
  /// Number of bytes copied.
  [[nodiscard]] constexpr std::uint64_t bytes() const { return region[0] * region[1] * region[2]; }
  /// True when the copy is one contiguous range (a plain clEnqueueReadBuffer would do).
  [[nodiscard]] constexpr bool contiguous() const { return region[1] == 1 && region[2] == 1; }

  friend constexpr bool operator==(const BufferRect&, const BufferRect&) = default;

  /// "origin {x, y, z} region {w, h, d} row_pitch r slice_pitch s".
  [[nodiscard]] std::string to_string() const {
    auto triple = [](const std::array<std::uint64_t, 3>& a) {
      return "{" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " +
             std::to_string(a[2]) + "}";
    };
    return "origin " + triple(origin) + " region " + triple(region) + " row_pitch " +
           std::to_string(row_pitch) + " slice_pitch " + std::to_string(slice_pitch);
  }
};

}  // namespace unimem
