#include "region/box.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "region/box_oracle.hpp"

namespace unimem {
namespace {

using test::Bitmap;
using test::bitmap_of;
using test::bitmap_of_box;
using test::BoxGenerator;
using test::cube;
using test::point;
using test::slab;

template <typename T>
class BoxTest : public ::testing::Test {};
TYPED_TEST_SUITE(BoxTest, test::Dimensions, test::DimensionNames);

// Checks the contract of Box::subtract for a - b against the oracle.
template <std::size_t N>
void expect_subtract_exact(const Box<N>& a, const Box<N>& b) {
  SCOPED_TRACE("a=" + a.to_string() + " b=" + b.to_string());
  const BoxPieces<N> pieces = a.subtract(b);
  EXPECT_LE(pieces.size(), 2 * N);
  std::vector<Box<N>> list(pieces.begin(), pieces.end());
  for (std::size_t i = 0; i < list.size(); ++i) {
    EXPECT_FALSE(list[i].empty());
    EXPECT_TRUE(a.contains(list[i]));
    EXPECT_FALSE(list[i].overlaps(b));
    for (std::size_t j = i + 1; j < list.size(); ++j) EXPECT_FALSE(list[i].overlaps(list[j]));
  }
  EXPECT_EQ(bitmap_of<N>(list), bitmap_of_box(a) - bitmap_of_box(b));
}

TYPED_TEST(BoxTest, DefaultBoxIsTheCanonicalEmptyBox) {
  constexpr std::size_t N = TypeParam::value;
  EXPECT_TRUE(Box<N>().empty());
  EXPECT_EQ(Box<N>().volume(), 0U);
  EXPECT_EQ(cube<N>(5, 5), Box<N>());
  EXPECT_EQ(cube<N>(7, 3), Box<N>());
  EXPECT_EQ(slab<N>(4, 4, 0, 2), Box<N>());
  if constexpr (N > 1) {
    EXPECT_EQ(slab<N>(0, 4, 2, 2), Box<N>());
  }
  EXPECT_EQ(Box<N>().to_string(), "empty");
}

TYPED_TEST(BoxTest, SinglePointBoxHasVolumeOne) {
  constexpr std::size_t N = TypeParam::value;
  const Box<N> p = cube<N>(3, 4);
  EXPECT_EQ(p.volume(), 1U);
  EXPECT_TRUE(p.contains(point<N>(3)));
  EXPECT_FALSE(p.contains(point<N>(4)));
  EXPECT_FALSE(p.contains(point<N>(2)));
}

TYPED_TEST(BoxTest, ToStringListsEveryDimension) {
  constexpr std::size_t N = TypeParam::value;
  std::string expected = "[0, 4)";
  for (std::size_t d = 1; d < N; ++d) expected += " x [2, 8)";
  EXPECT_EQ(slab<N>(0, 4, 2, 8).to_string(), expected);
}

TYPED_TEST(BoxTest, SubtractDisjointOrTouchingBoxLeavesBoxWhole) {
  constexpr std::size_t N = TypeParam::value;
  const Box<N> a = cube<N>(0, 4);
  for (const Box<N>& b : {cube<N>(4, 8), slab<N>(4, 6, 0, 4), slab<N>(-3, 0, 0, 4), Box<N>()}) {
    const BoxPieces<N> pieces = a.subtract(b);
    ASSERT_EQ(pieces.size(), 1U) << b.to_string();
    EXPECT_EQ(pieces[0], a);
  }
}

TYPED_TEST(BoxTest, SubtractFromEmptyBoxIsEmpty) {
  constexpr std::size_t N = TypeParam::value;
  EXPECT_TRUE(Box<N>().subtract(cube<N>(0, 4)).empty());
  EXPECT_TRUE(Box<N>().subtract(Box<N>()).empty());
}

TYPED_TEST(BoxTest, SubtractCoveringBoxLeavesNothing) {
  constexpr std::size_t N = TypeParam::value;
  EXPECT_TRUE(cube<N>(2, 5).subtract(cube<N>(2, 5)).empty());
  EXPECT_TRUE(cube<N>(2, 5).subtract(cube<N>(0, 9)).empty());
  EXPECT_TRUE(cube<N>(2, 3).subtract(cube<N>(2, 3)).empty());
}

TYPED_TEST(BoxTest, SubtractInteriorHoleGivesTwoNSlabs) {
  constexpr std::size_t N = TypeParam::value;
  const Box<N> a = cube<N>(0, 6);
  const Box<N> hole = cube<N>(2, 3);
  const BoxPieces<N> pieces = a.subtract(hole);
  ASSERT_EQ(pieces.size(), 2 * N);
  // Slab order: low then high slab of dimension 0 (full extent elsewhere), then dimension 1, ...
  EXPECT_EQ(pieces[0], slab<N>(0, 2, 0, 6));
  EXPECT_EQ(pieces[1], slab<N>(3, 6, 0, 6));
  expect_subtract_exact(a, hole);
  std::uint64_t total = 0;
  for (const Box<N>& p : pieces) total += p.volume();
  EXPECT_EQ(total, a.volume() - 1);
}

TYPED_TEST(BoxTest, SubtractLowCornerGivesOnePiecePerDimension) {
  constexpr std::size_t N = TypeParam::value;
  const BoxPieces<N> pieces = cube<N>(0, 4).subtract(cube<N>(-2, 2));
  EXPECT_EQ(pieces.size(), N);
  expect_subtract_exact(cube<N>(0, 4), cube<N>(-2, 2));
}

TYPED_TEST(BoxTest, SubtractSinglePointBoxes) {
  constexpr std::size_t N = TypeParam::value;
  EXPECT_TRUE(cube<N>(1, 2).subtract(cube<N>(1, 2)).empty());
  ASSERT_EQ(cube<N>(1, 2).subtract(cube<N>(2, 3)).size(), 1U);
  expect_subtract_exact(cube<N>(0, 3), cube<N>(1, 2));
}

TYPED_TEST(BoxTest, BoxPiecesIndexOutOfRangeThrows) {
  constexpr std::size_t N = TypeParam::value;
  const BoxPieces<N> pieces = cube<N>(0, 4).subtract(cube<N>(0, 2));
  EXPECT_THROW((void)pieces[pieces.size()], PreconditionError);
  BoxPieces<N> full;
  for (std::size_t i = 0; i < 2 * N; ++i) full.push_back(cube<N>(0, 1));
  EXPECT_THROW(full.push_back(cube<N>(0, 1)), PreconditionError);
  full.push_back(Box<N>());  // empty boxes are ignored, even when full
  EXPECT_EQ(full.size(), 2 * N);
}

TYPED_TEST(BoxTest, ExtentOverflowIsAPreconditionError) {
  constexpr std::size_t N = TypeParam::value;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW(cube<N>(kMin, kMax), PreconditionError);
  EXPECT_THROW(cube<N>(-1, kMax), PreconditionError);
  EXPECT_NO_THROW(cube<N>(0, kMax));
  EXPECT_NO_THROW(cube<N>(kMin + 1, 0));
  EXPECT_THROW(cube<N>(kMin, 0), PreconditionError);
  EXPECT_NO_THROW(cube<N>(kMax, kMin));  // inverted: empty, no extent is formed
}

TYPED_TEST(BoxTest, VolumeOverflowIsAPreconditionError) {
  constexpr std::size_t N = TypeParam::value;
  const Box<N> huge = cube<N>(0, std::int64_t{1} << 40);
  if constexpr (N == 1) {
    EXPECT_EQ(huge.volume(), std::uint64_t{1} << 40);
  } else {
    EXPECT_THROW((void)huge.volume(), PreconditionError);
  }
}

TYPED_TEST(BoxTest, RandomOperationsMatchBitmapOracle) {
  constexpr std::size_t N = TypeParam::value;
  constexpr std::uint64_t kBaseSeed = 0xB0C5'0000;
  for (std::uint64_t c = 0; c < 3000; ++c) {
    const std::uint64_t seed = kBaseSeed + c;
    SCOPED_TRACE("seed=" + std::to_string(seed));
    BoxGenerator<N> gen(seed);
    const Box<N> a = gen.box();
    const Box<N> b = gen.box();
    const Bitmap<N> ma = bitmap_of_box(a);
    const Bitmap<N> mb = bitmap_of_box(b);

    EXPECT_EQ(a.volume(), ma.count());
    EXPECT_EQ(a.empty(), ma.empty());
    EXPECT_EQ(bitmap_of_box(a.intersect(b)), ma & mb);
    EXPECT_EQ(a.overlaps(b), !(ma & mb).empty());
    EXPECT_EQ(a.contains(b), mb.subset_of(ma));
    EXPECT_EQ(a.bounding_union(b), (ma | mb).bounds());
    const auto p = gen.point();
    EXPECT_EQ(a.contains(p), ma.test(p));
    expect_subtract_exact(a, b);
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace unimem
