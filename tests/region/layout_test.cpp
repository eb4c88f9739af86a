#include "region/layout.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "region/range_generator.hpp"

namespace unimem {
namespace {

using ::testing::HasSubstr;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const PreconditionError& e) {
    return e.what();
  }
  return "(no PreconditionError)";
}

IntervalSet runs_of(const std::vector<bool>& bytes) {
  std::vector<Interval> runs;
  for (std::uint64_t b = 0; b < bytes.size();) {
    if (!bytes[b]) {
      ++b;
      continue;
    }
    std::uint64_t e = b;
    while (e < bytes.size() && bytes[e]) ++e;
    runs.emplace_back(b, e);
    b = e;
  }
  return IntervalSet::from_normalized(runs);
}

// Dense bitmap oracle: the bytes of every element of the box, from the layout's address formula.
template <std::size_t N>
IntervalSet bitmap_oracle(const Layout& layout, const Box<N>& box) {
  std::vector<bool> bytes(layout.end_offset(), false);
  if (box.empty()) return {};
  typename Box<N>::Point p = box.min();
  while (true) {
    std::uint64_t offset = layout.base_offset();
    for (std::size_t d = 0; d < N; ++d)
      offset += static_cast<std::uint64_t>(p[d]) * layout.stride(d);
    for (std::uint64_t b = offset; b < offset + layout.element_size(); ++b) bytes.at(b) = true;
    std::size_t k = N;
    bool advanced = false;
    while (k-- > 0) {
      if (p[k] + 1 < box.max()[k]) {
        ++p[k];
        advanced = true;
        break;
      }
      p[k] = box.min()[k];
    }
    if (!advanced) break;
  }
  return runs_of(bytes);
}

// Applies rect copies the way clEnqueueReadBufferRect does, checks OpenCL's argument rules and that
// no byte is copied twice, and returns the bytes copied.
IntervalSet simulate(const Layout& layout, const std::vector<BufferRect>& copies) {
  std::vector<bool> bytes(layout.end_offset(), false);
  for (const BufferRect& c : copies) {
    SCOPED_TRACE(c.to_string());
    EXPECT_GE(c.region[0], 1U);
    EXPECT_GE(c.region[1], 1U);
    EXPECT_GE(c.region[2], 1U);
    EXPECT_GE(c.row_pitch, c.region[0]);
    EXPECT_GE(c.slice_pitch, c.region[1] * c.row_pitch);
    EXPECT_EQ(c.slice_pitch % c.row_pitch, 0U);
    const std::uint64_t base =
        c.origin[2] * c.slice_pitch + c.origin[1] * c.row_pitch + c.origin[0];
    EXPECT_EQ(base, c.offset());
    for (std::uint64_t z = 0; z < c.region[2]; ++z) {
      for (std::uint64_t y = 0; y < c.region[1]; ++y) {
        const std::uint64_t row = base + y * c.row_pitch + z * c.slice_pitch;
        EXPECT_LE(row + c.region[0], layout.end_offset());
        for (std::uint64_t x = 0; x < c.region[0] && row + x < bytes.size(); ++x) {
          EXPECT_FALSE(bytes[row + x]) << "byte " << row + x << " copied twice";
          bytes[row + x] = true;
        }
      }
    }
  }
  return runs_of(bytes);
}

TEST(Layout, TightPitchesAndSizes) {
  const Layout l(4, {2, 3, 5});
  EXPECT_EQ(l.dimensions(), 3U);
  EXPECT_EQ(l.row_pitch(), 20U);
  EXPECT_EQ(l.slice_pitch(), 60U);
  EXPECT_EQ(l.stride(2), 4U);
  EXPECT_EQ(l.byte_size(), 120U);
  EXPECT_EQ(l.end_offset(), 120U);
  EXPECT_EQ(l.to_string(),
            "Layout{element 4 B, extents [2, 3, 5], row pitch 20 B, slice pitch 60 B, base 0}");
  const Layout one(8, {10}, {}, 16);
  EXPECT_EQ(one.byte_size(), 80U);
  EXPECT_EQ(one.end_offset(), 96U);
  EXPECT_EQ(one.full_box<1>(), Box<1>({0}, {10}));
}

TEST(Layout, PitchedSizes) {
  const Layout l(4, {2, 3, 5}, {32, 128});
  EXPECT_EQ(l.row_pitch(), 32U);
  EXPECT_EQ(l.slice_pitch(), 128U);
  EXPECT_EQ(l.byte_size(), 256U);
  const Layout m(2, {7, 3}, {10});
  EXPECT_EQ(m.byte_size(), 70U);
}

TEST(Layout, InvalidArgumentsNameTheBadValue) {
  EXPECT_THAT(error_of([] { Layout(0, {4}); }), HasSubstr("element size"));
  EXPECT_THAT(error_of([] { Layout(4, {}); }), HasSubstr("0 dimensions"));
  EXPECT_THAT(error_of([] { Layout(4, {1, 2, 3, 4}); }), HasSubstr("4 dimensions"));
  EXPECT_THAT(error_of([] { Layout(4, {3, 0}); }), HasSubstr("dimension 1 is 0"));
  EXPECT_THAT(error_of([] { Layout(4, {3, 5}, {19}); }), HasSubstr("row pitch 19 bytes"));
  EXPECT_THAT(error_of([] { Layout(4, {2, 3, 5}, {20, 59}); }), HasSubstr("slice pitch 59 bytes"));
  EXPECT_THAT(error_of([] { Layout(4, {2, 3, 5}, {24, 84}); }), HasSubstr("not a multiple"));
  EXPECT_THAT(error_of([] { Layout(4, {5}, {32}); }), HasSubstr("row pitch 32"));
  EXPECT_THAT(error_of([] { Layout(4, {3, 5}, {0, 64}); }), HasSubstr("slice pitch 64"));
  constexpr std::uint64_t big = std::uint64_t{1} << 62;
  EXPECT_THAT(error_of([] { Layout(8, {big}); }), HasSubstr("overflows"));
  EXPECT_THAT(error_of([] { Layout(1, {16}, {}, std::numeric_limits<std::uint64_t>::max() - 8); }),
              HasSubstr("base offset"));
}

TEST(Layout, OneDimensionalRangeIsOneInterval) {
  const Layout l(4, {100}, {}, 8);
  EXPECT_EQ(l.bytes_of(Box<1>({10}, {20})), IntervalSet({48, 88}));
  const auto copies = l.rect_copies(Box<1>({10}, {20}));
  ASSERT_EQ(copies.size(), 1U);
  EXPECT_EQ(copies[0], (BufferRect{{48, 0, 0}, {40, 1, 1}, 40, 40}));
  EXPECT_TRUE(copies[0].contiguous());
}

TEST(Layout, FullRowsOfTightMatrixCoalesce) {
  const Layout l(4, {10, 8});
  const Box<2> rows({2, 0}, {5, 8});
  EXPECT_EQ(l.bytes_of(rows), IntervalSet({64, 160}));
  EXPECT_EQ(l.rect_copies(rows), (std::vector<BufferRect>{{{64, 0, 0}, {96, 1, 1}, 96, 96}}));
}

TEST(Layout, TileOfMatrixIsOneIntervalPerRowAndOneBufferRect) {
  const Layout l(4, {10, 8});
  const Box<2> tile({2, 3}, {4, 6});
  EXPECT_EQ(l.bytes_of(tile), IntervalSet({{76, 88}, {108, 120}}));
  EXPECT_EQ(l.rect_copies(tile), (std::vector<BufferRect>{{{12, 2, 0}, {12, 2, 1}, 32, 64}}));
}

TEST(Layout, PitchedFullRowsStaySeparate) {
  const Layout l(4, {10, 8}, {40});
  EXPECT_EQ(l.bytes_of(Box<2>({1, 0}, {3, 8})), IntervalSet({{40, 72}, {80, 112}}));
}

TEST(Layout, FullSlicesOfTightVolumeAreOneInterval) {
  const Layout l(2, {4, 3, 5});
  const Box<3> slices({1, 0, 0}, {3, 3, 5});
  EXPECT_EQ(l.bytes_of(slices), IntervalSet({30, 90}));
  EXPECT_EQ(l.rect_copies(slices), (std::vector<BufferRect>{{{30, 0, 0}, {60, 1, 1}, 60, 60}}));
}

TEST(Layout, FullRowsOfPartialSlicesFoldRowsIntoWidth) {
  const Layout l(2, {4, 3, 5});  // row pitch 10, slice pitch 30
  const Box<3> box({1, 1, 0}, {3, 3, 5});
  EXPECT_EQ(l.bytes_of(box), IntervalSet({{40, 60}, {70, 90}}));
  // Rows fold into a 20-byte width; slices become the rows of a 2-D copy with pitch 30.
  EXPECT_EQ(l.rect_copies(box), (std::vector<BufferRect>{{{10, 1, 0}, {20, 2, 1}, 30, 60}}));
}

TEST(Layout, BlockOfPitchedVolumeIsOneBufferRect) {
  const Layout l(4, {3, 4, 5}, {24, 120}, 4);
  const Box<3> box({1, 1, 2}, {3, 3, 4});
  // offset = 4 + 1*120 + 1*24 + 2*4 = 156 = 1*120 + 1*24 + 12.
  EXPECT_EQ(l.rect_copies(box), (std::vector<BufferRect>{{{12, 1, 1}, {8, 2, 2}, 24, 120}}));
  EXPECT_EQ(l.bytes_of(box), IntervalSet({{156, 164}, {180, 188}, {276, 284}, {300, 308}}));
}

TEST(Layout, EmptyBoxHasNoBytesAndNoCopies) {
  const Layout l(4, {3, 4});
  EXPECT_TRUE(l.bytes_of(Box<2>()).empty());
  EXPECT_TRUE(l.rect_copies(Box<2>()).empty());
}

TEST(Layout, BoxOutsideExtentsIsAnErrorNamingBoxAndExtents) {
  const Layout l(4, {3, 4});
  const std::string message = error_of([&] { (void)l.bytes_of(Box<2>({1, 2}, {3, 5})); });
  EXPECT_THAT(message, HasSubstr("[1, 3) x [2, 5)"));
  EXPECT_THAT(message, HasSubstr("extents [3, 4]"));
  EXPECT_THROW((void)l.bytes_of(Box<2>({-1, 0}, {1, 1})), PreconditionError);
  EXPECT_THROW((void)l.rect_copies(Box<2>({0, 0}, {4, 1})), PreconditionError);
}

TEST(Layout, BoxOfWrongDimensionIsAnError) {
  const Layout l(4, {3, 4});
  EXPECT_THAT(error_of([&] {
                (void)l.bytes_of(Box<3>({0, 0, 0}, {1, 1, 1}));
              }),
              HasSubstr("has 3 dimensions but the layout has 2"));
  EXPECT_THROW((void)l.rect_copies(Box<1>({0}, {1})), PreconditionError);
  EXPECT_THROW((void)l.full_box<1>(), PreconditionError);
}

template <std::size_t N>
Layout random_layout(std::mt19937_64& rng) {
  auto uniform = [&rng](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  const std::uint64_t element_size = uniform(1, 8);
  std::vector<std::uint64_t> extents;
  for (std::size_t d = 0; d < N; ++d) extents.push_back(uniform(1, 7));
  LayoutPitches pitches;
  const std::uint64_t row_bytes = extents[N - 1] * element_size;
  if (N >= 2 && uniform(0, 1) == 1) pitches.row_bytes = row_bytes + uniform(0, 9);
  if (N == 3 && uniform(0, 1) == 1) {
    const std::uint64_t rp = pitches.row_bytes == 0 ? row_bytes : pitches.row_bytes;
    pitches.slice_bytes = rp * (extents[1] + uniform(0, 2));
  }
  return Layout(element_size, extents, pitches, uniform(0, 1) == 0 ? 0 : uniform(0, 20));
}

template <std::size_t N>
Box<N> random_box(std::mt19937_64& rng, const Layout& l) {
  typename Box<N>::Point lo{};
  typename Box<N>::Point hi{};
  for (std::size_t d = 0; d < N; ++d) {
    const auto e = static_cast<std::int64_t>(l.extent(d));
    std::uniform_int_distribution<std::int64_t> coord(0, e);
    lo[d] = coord(rng);
    hi[d] = coord(rng);
    if (lo[d] > hi[d]) std::swap(lo[d], hi[d]);
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {  // often span the whole dimension
      lo[d] = 0;
      hi[d] = e;
    }
  }
  return Box<N>(lo, hi);
}

template <std::size_t N>
void check_random_layouts(std::uint64_t first_seed, std::uint64_t count) {
  for (std::uint64_t seed = first_seed; seed < first_seed + count; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed) + " N=" + std::to_string(N));
    std::mt19937_64 rng(seed);
    const Layout l = random_layout<N>(rng);
    const Box<N> box = random_box<N>(rng, l);
    SCOPED_TRACE(l.to_string() + " box " + box.to_string());
    const IntervalSet oracle = bitmap_oracle(l, box);
    const IntervalSet bytes = l.bytes_of(box);
    bytes.check_invariants();
    ASSERT_EQ(bytes, oracle);
    EXPECT_EQ(bytes.total_size(), box.volume() * l.element_size());
    const std::vector<BufferRect> copies = l.rect_copies(box);
    EXPECT_EQ(copies.size(), box.empty() ? 0U : 1U);
    ASSERT_EQ(simulate(l, copies), oracle);
    // Cross-check with the range generator when the layout is expressible in elements.
    const std::uint64_t e = l.element_size();
    bool in_elements = l.base_offset() % e == 0;
    for (std::size_t d = 0; d < N; ++d) in_elements = in_elements && l.stride(d) % e == 0;
    if (in_elements && !box.empty()) {
      AffineAccess a{static_cast<std::int64_t>(l.base_offset() / e), {}};
      for (std::size_t d = 0; d < N; ++d) {
        a.terms.push_back(
            {static_cast<std::int64_t>(l.stride(d) / e), box.min()[d], box.max()[d] - 1});
      }
      const GeneratedRanges r = generate_ranges(a, e, std::numeric_limits<std::uint64_t>::max());
      EXPECT_TRUE(r.exact);
      EXPECT_EQ(r.bytes, oracle) << a.to_string();
    }
  }
}

TEST(Layout, RandomBoxes1dMatchBitmapOracle) { check_random_layouts<1>(1, 2000); }
TEST(Layout, RandomBoxes2dMatchBitmapOracle) { check_random_layouts<2>(10001, 3000); }
TEST(Layout, RandomBoxes3dMatchBitmapOracle) { check_random_layouts<3>(20001, 3000); }

}  // namespace
}  // namespace unimem
