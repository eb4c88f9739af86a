#include "region/layout.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace unimem {

namespace {

[[noreturn]] void fail(const std::string& message) { throw PreconditionError(message); }

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail("Layout: " + what + " overflows 64 bits");
  return r;
}

// Appends [begin, end) to a sorted list, merging with the last interval when they touch.
void append_sorted(std::vector<Interval>& out, std::uint64_t begin, std::uint64_t end) {
  if (!out.empty() && begin <= out.back().end) {
    out.back().end = end;
  } else {
    out.emplace_back(begin, end);
  }
}

}  // namespace

Layout::Layout(std::uint64_t element_size, const std::vector<std::uint64_t>& extents,
               LayoutPitches pitches, std::uint64_t base_offset)
    : dimensions_(extents.size()), element_size_(element_size), base_offset_(base_offset) {
  if (extents.empty() || extents.size() > 3) {
    fail("Layout: " + std::to_string(extents.size()) + " dimensions given, 1 to 3 supported");
  }
  if (element_size == 0) fail("Layout: element size must be positive");
  for (std::size_t d = 0; d < dimensions_; ++d) {
    if (extents[d] == 0) fail("Layout: extent of dimension " + std::to_string(d) + " is 0");
    extent_[d] = extents[d];
  }
  const std::size_t last = dimensions_ - 1;
  stride_[last] = element_size;
  const std::uint64_t row_bytes = checked_mul(extent_[last], element_size, "row size");
  if (dimensions_ < 2 && pitches.row_bytes != 0) {
    fail("Layout: row pitch " + std::to_string(pitches.row_bytes) +
         " given for a 1-D layout (rows need 2 or 3 dimensions)");
  }
  if (dimensions_ < 3 && pitches.slice_bytes != 0) {
    fail("Layout: slice pitch " + std::to_string(pitches.slice_bytes) + " given for a " +
         std::to_string(dimensions_) + "-D layout (slices need 3 dimensions)");
  }
  if (dimensions_ >= 2) {
    const std::uint64_t rp = pitches.row_bytes == 0 ? row_bytes : pitches.row_bytes;
    if (rp < row_bytes) {
      fail("Layout: row pitch " + std::to_string(rp) + " bytes is smaller than a row of " +
           std::to_string(extent_[last]) + " elements of " + std::to_string(element_size) +
           " bytes (" + std::to_string(row_bytes) + " bytes)");
    }
    stride_[last - 1] = rp;
  }
  if (dimensions_ == 3) {
    const std::uint64_t rp = stride_[1];
    const std::uint64_t plane_bytes = checked_mul(extent_[1], rp, "slice size");
    const std::uint64_t sp = pitches.slice_bytes == 0 ? plane_bytes : pitches.slice_bytes;
    if (sp < plane_bytes) {
      fail("Layout: slice pitch " + std::to_string(sp) + " bytes is smaller than " +
           std::to_string(extent_[1]) + " rows of pitch " + std::to_string(rp) + " bytes (" +
           std::to_string(plane_bytes) + " bytes)");
    }
    if (sp % rp != 0) {
      fail("Layout: slice pitch " + std::to_string(sp) +
           " bytes is not a multiple of the row pitch " + std::to_string(rp) +
           " bytes (OpenCL rectangular copies require it)");
    }
    stride_[0] = sp;
  }
  const std::uint64_t size = checked_mul(extent_[0], stride_[0], "array size");
  if (size > std::numeric_limits<std::uint64_t>::max() - base_offset) {
    fail("Layout: base offset " + std::to_string(base_offset) + " plus array size " +
         std::to_string(size) + " overflows 64 bits");
  }
}

std::uint64_t Layout::extent(std::size_t d) const {
  UNIMEM_REQUIRE(d < dimensions_, "Layout::extent: dimension out of range");
  return extent_[d];
}

std::uint64_t Layout::stride(std::size_t d) const {
  UNIMEM_REQUIRE(d < dimensions_, "Layout::stride: dimension out of range");
  return stride_[d];
}

std::uint64_t Layout::row_pitch() const {
  return dimensions_ >= 2 ? stride_[dimensions_ - 2] : byte_size();
}

std::uint64_t Layout::slice_pitch() const { return dimensions_ == 3 ? stride_[0] : byte_size(); }

std::string Layout::to_string() const {
  std::string s = "Layout{element " + std::to_string(element_size_) + " B, extents [";
  for (std::size_t d = 0; d < dimensions_; ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(extent_[d]);
  }
  s += "]";
  if (dimensions_ >= 2) s += ", row pitch " + std::to_string(row_pitch()) + " B";
  if (dimensions_ == 3) s += ", slice pitch " + std::to_string(slice_pitch()) + " B";
  return s + ", base " + std::to_string(base_offset_) + "}";
}

template <std::size_t N>
Box<N> Layout::full_box() const {
  if (N != dimensions_) {
    fail("Layout::full_box: asked for " + std::to_string(N) + " dimensions of " + to_string());
  }
  typename Box<N>::Point hi{};
  for (std::size_t d = 0; d < N; ++d) hi[d] = static_cast<std::int64_t>(extent_[d]);
  return Box<N>(typename Box<N>::Point{}, hi);
}

template <std::size_t N>
void Layout::require_inside(const Box<N>& box, const char* who) const {
  if (N != dimensions_) {
    fail(std::string(who) + ": box " + box.to_string() + " has " + std::to_string(N) +
         " dimensions but the layout has " + std::to_string(dimensions_) + " (" + to_string() +
         ")");
  }
  if (box.empty()) return;
  for (std::size_t d = 0; d < N; ++d) {
    if (box.min()[d] < 0 || static_cast<std::uint64_t>(box.max()[d]) > extent_[d]) {
      fail(std::string(who) + ": box " + box.to_string() + " is not inside the extents of " +
           to_string() + " (dimension " + std::to_string(d) + ")");
    }
  }
}

template <std::size_t N>
std::uint64_t Layout::first_byte(const Box<N>& box) const {
  // Fits: the box is inside the extents, and end_offset() was checked at construction.
  std::uint64_t offset = base_offset_;
  for (std::size_t d = 0; d < N; ++d)
    offset += static_cast<std::uint64_t>(box.min()[d]) * stride_[d];
  return offset;
}

template <std::size_t N>
IntervalSet Layout::bytes_of(const Box<N>& box) const {
  require_inside(box, "Layout::bytes_of");
  if (box.empty()) return {};
  // The innermost run is one row of the box; it absorbs the next-outer dimension while that
  // dimension's pitch equals the run (rows full and tight, then slices full and tight).
  std::uint64_t run = static_cast<std::uint64_t>(box.extent(N - 1)) * element_size_;
  std::size_t outer = N - 1;  // dimensions [0, outer) are enumerated
  while (outer > 0 && stride_[outer - 1] == run) {
    --outer;
    run *= static_cast<std::uint64_t>(box.extent(outer));
  }
  const std::uint64_t start = first_byte(box);
  std::uint64_t count = 1;
  for (std::size_t d = 0; d < outer; ++d) count *= static_cast<std::uint64_t>(box.extent(d));
  std::vector<Interval> out;
  out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, std::uint64_t{1} << 16)));
  // Pitches nest (each >= the span of the inner dimensions), so row-major order is sorted order.
  std::array<std::uint64_t, 3> index{};
  std::uint64_t offset = start;
  while (true) {
    append_sorted(out, offset, offset + run);
    bool advanced = false;
    for (std::size_t k = outer; k-- > 0;) {
      if (index[k] + 1 < static_cast<std::uint64_t>(box.extent(k))) {
        ++index[k];
        offset += stride_[k];
        advanced = true;
        break;
      }
      offset -= index[k] * stride_[k];
      index[k] = 0;
    }
    if (!advanced) break;
  }
  return IntervalSet::from_normalized(std::move(out));
}

template <std::size_t N>
std::vector<BufferRect> Layout::rect_copies(const Box<N>& box) const {
  require_inside(box, "Layout::rect_copies");
  if (box.empty()) return {};
  // (count, pitch) of the dimensions outside the row, innermost first; extent-1 dimensions are
  // dropped and a dimension whose pitch equals the contiguous width is folded into the width.
  std::uint64_t width = static_cast<std::uint64_t>(box.extent(N - 1)) * element_size_;
  std::array<std::pair<std::uint64_t, std::uint64_t>, 2> outer{};
  std::size_t outer_count = 0;
  for (std::size_t d = N - 1; d-- > 0;) {
    const auto count = static_cast<std::uint64_t>(box.extent(d));
    if (count == 1) continue;
    if (outer_count == 0 && stride_[d] == width) {
      width *= count;
      continue;
    }
    outer[outer_count++] = {count, stride_[d]};
  }
  const std::uint64_t offset = first_byte(box);
  BufferRect copy;
  copy.region = {width, 1, 1};
  if (outer_count == 0) {
    copy.origin = {offset, 0, 0};
    copy.row_pitch = width;
    copy.slice_pitch = width;
  } else if (outer_count == 1) {
    const auto [count, pitch] = outer[0];
    copy.origin = {offset % pitch, offset / pitch, 0};
    copy.region[1] = count;
    copy.row_pitch = pitch;
    copy.slice_pitch = count * pitch;
  } else {
    // Rows then slices; the slice pitch is a multiple of the row pitch (checked at construction).
    const auto [rows, row_pitch] = outer[0];
    const auto [slices, slice_pitch] = outer[1];
    copy.origin = {offset % row_pitch, (offset % slice_pitch) / row_pitch, offset / slice_pitch};
    copy.region[1] = rows;
    copy.region[2] = slices;
    copy.row_pitch = row_pitch;
    copy.slice_pitch = slice_pitch;
  }
  return {copy};
}

template Box<1> Layout::full_box<1>() const;
template Box<2> Layout::full_box<2>() const;
template Box<3> Layout::full_box<3>() const;
template IntervalSet Layout::bytes_of<1>(const Box<1>&) const;
template IntervalSet Layout::bytes_of<2>(const Box<2>&) const;
template IntervalSet Layout::bytes_of<3>(const Box<3>&) const;
template std::vector<BufferRect> Layout::rect_copies<1>(const Box<1>&) const;
template std::vector<BufferRect> Layout::rect_copies<2>(const Box<2>&) const;
template std::vector<BufferRect> Layout::rect_copies<3>(const Box<3>&) const;

}  // namespace unimem
