#include "region/box_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "region/box_decomposition.hpp"
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
class BoxSetTest : public ::testing::Test {};
TYPED_TEST_SUITE(BoxSetTest, test::Dimensions, test::DimensionNames);

template <typename T>
class BoxDecompositionTest : public ::testing::Test {};
TYPED_TEST_SUITE(BoxDecompositionTest, test::Dimensions, test::DimensionNames);

// A = cube [0, 4) minus its high corner cube [2, 4): an L (2-D) or a notched cube (3-D).
template <std::size_t N>
std::vector<Box<N>> notched_cube_expected() {
  if constexpr (N == 1) {
    return {Box<1>({0}, {2})};
  } else if constexpr (N == 2) {
    return {Box<2>({0, 0}, {2, 4}), Box<2>({2, 0}, {4, 2})};
  } else {
    return {Box<3>({0, 0, 0}, {2, 4, 4}), Box<3>({2, 0, 0}, {4, 2, 4}),
            Box<3>({2, 2, 0}, {4, 4, 2})};
  }
}

TYPED_TEST(BoxSetTest, EmptySetHasNoPointsAndIsSubsetOfEverything) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.box_count(), 0U);
  EXPECT_EQ(none.volume(), 0U);
  EXPECT_EQ(none.bounds(), Box<N>());
  EXPECT_EQ(none.to_string(), "{}");
  EXPECT_FALSE(none.contains(point<N>(0)));
  EXPECT_TRUE(none.contains(Box<N>()));
  EXPECT_FALSE(none.contains(cube<N>(0, 1)));
  EXPECT_TRUE(none.contains(none));
  EXPECT_TRUE(none.is_subset_of(BoxSet<N>(cube<N>(0, 1))));
  EXPECT_FALSE(BoxSet<N>(cube<N>(0, 1)).is_subset_of(none));
  EXPECT_FALSE(none.intersects(cube<N>(0, 9)));
  EXPECT_EQ(BoxSet<N>(Box<N>()), none);
  EXPECT_EQ((BoxSet<N>{Box<N>(), cube<N>(3, 1)}), none);
  EXPECT_EQ(BoxSet<N>(cube<N>(0, 4)).subtract(cube<N>(0, 4)), none);
  EXPECT_EQ(BoxSet<N>(cube<N>(0, 4)).intersect(cube<N>(4, 8)), none);
  none.check_invariants();
}

TYPED_TEST(BoxSetTest, SinglePointSet) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> one(cube<N>(5, 6));
  EXPECT_EQ(one.volume(), 1U);
  EXPECT_EQ(one.box_count(), 1U);
  EXPECT_TRUE(one.contains(point<N>(5)));
  EXPECT_FALSE(one.contains(point<N>(6)));
  EXPECT_EQ(one.bounds(), cube<N>(5, 6));
  EXPECT_TRUE(one.subtract(cube<N>(5, 6)).empty());
  EXPECT_EQ(one.unite(cube<N>(5, 6)), one);
}

TYPED_TEST(BoxSetTest, TouchingBoxesMergeIntoOne) {
  constexpr std::size_t N = TypeParam::value;
  // Touching along dimension 0 ...
  EXPECT_EQ((BoxSet<N>{slab<N>(0, 2, 0, 4), slab<N>(2, 4, 0, 4)}), BoxSet<N>(cube<N>(0, 4)));
  // ... and along the last dimension.
  typename Box<N>::Point mid = point<N>(4);
  mid[N - 1] = 2;
  typename Box<N>::Point mid_lo = point<N>(0);
  mid_lo[N - 1] = 2;
  const BoxSet<N> joined{Box<N>(point<N>(0), mid), Box<N>(mid_lo, point<N>(4))};
  ASSERT_EQ(joined.box_count(), 1U) << joined.to_string();
  EXPECT_EQ(joined[0], cube<N>(0, 4));
}

TYPED_TEST(BoxSetTest, OverlappingBoxesAreCountedOnce) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> s{cube<N>(0, 4), cube<N>(2, 6), cube<N>(1, 3)};
  std::uint64_t expected = 2 * test::cube<N>(0, 4).volume() - cube<N>(2, 4).volume();
  EXPECT_EQ(s.volume(), expected);
  EXPECT_EQ(s.bounds(), cube<N>(0, 6));
  s.check_invariants();
}

TYPED_TEST(BoxSetTest, NotchedCubeHasOneCanonicalFormWhateverTheConstruction) {
  constexpr std::size_t N = TypeParam::value;
  const std::vector<Box<N>> expected = notched_cube_expected<N>();
  const BoxSet<N> by_subtract = BoxSet<N>(cube<N>(0, 4)).subtract(cube<N>(2, 4));
  EXPECT_EQ(by_subtract.boxes(), expected);
  // The Box::subtract slabs, inserted in reverse order.
  BoxSet<N> by_insert;
  const BoxPieces<N> pieces = cube<N>(0, 4).subtract(cube<N>(2, 4));
  for (std::size_t i = pieces.size(); i-- > 0;) by_insert.insert(pieces[i]);
  EXPECT_EQ(by_insert, by_subtract);
  // Overlapping slabs along the last dimension, one per row.
  std::vector<Box<N>> rows;
  for (std::int64_t x = 0; x < 4; ++x) {
    typename Box<N>::Point lo = point<N>(0);
    typename Box<N>::Point hi = point<N>(4);
    lo[0] = x;
    hi[0] = x + 1;
    rows.push_back(Box<N>(lo, hi));
  }
  EXPECT_EQ(BoxSet<N>::from_boxes(rows).subtract(cube<N>(2, 4)), by_subtract);
  EXPECT_EQ(by_subtract.volume(), cube<N>(0, 4).volume() - cube<N>(2, 4).volume());
}

TYPED_TEST(BoxSetTest, NeighbouringSlabsWithEqualCrossSectionsMerge) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> s{slab<N>(0, 2, 0, 1), slab<N>(0, 2, 3, 4), slab<N>(2, 5, 0, 1),
                    slab<N>(2, 5, 3, 4)};
  if constexpr (N == 1) {
    EXPECT_EQ(s.boxes(), std::vector<Box<N>>{slab<N>(0, 5, 0, 1)});
  } else {
    // The slabs [0, 2) and [2, 5) have the same cross-section: one slab [0, 5) remains.
    ASSERT_EQ(s.box_count(), 2U) << s.to_string();
    for (const Box<N>& box : s) {
      EXPECT_EQ(box.min()[0], 0);
      EXPECT_EQ(box.max()[0], 5);
    }
  }
  EXPECT_EQ(s.volume(), N == 1 ? 5U : 10U);
}

TYPED_TEST(BoxSetTest, ContainsBoxSpanningSeveralBoxes) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> s = BoxSet<N>(cube<N>(0, 4)).subtract(cube<N>(2, 4));
  EXPECT_TRUE(s.contains(cube<N>(0, 2)));
  if constexpr (N > 1) {
    EXPECT_TRUE(s.contains(slab<N>(0, 4, 0, 2)));  // crosses the boundary of two canonical boxes
    EXPECT_FALSE(s.contains(slab<N>(0, 4, 0, 3)));
  }
  EXPECT_FALSE(s.contains(cube<N>(1, 3)));
  EXPECT_FALSE(s.contains(cube<N>(0, 4)));
  EXPECT_TRUE(s.contains(point<N>(1)));
  EXPECT_FALSE(s.contains(point<N>(3)));
  EXPECT_TRUE(s.is_subset_of(BoxSet<N>(cube<N>(0, 4))));
  EXPECT_FALSE(BoxSet<N>(cube<N>(0, 4)).is_subset_of(s));
  EXPECT_TRUE(s.intersects(cube<N>(1, 3)));
  EXPECT_FALSE(s.intersects(cube<N>(2, 4)));
}

TYPED_TEST(BoxSetTest, InPlaceInsertAndEraseMatchValueOperations) {
  constexpr std::size_t N = TypeParam::value;
  BoxSet<N> s(cube<N>(0, 3));
  s.insert(cube<N>(3, 6));
  EXPECT_EQ(s, BoxSet<N>(cube<N>(0, 3)).unite(cube<N>(3, 6)));
  s.insert(BoxSet<N>(cube<N>(1, 5)));
  EXPECT_EQ(s.volume(),
            bitmap_of<N>(std::vector{cube<N>(0, 3), cube<N>(3, 6), cube<N>(1, 5)}).count());
  s.erase(cube<N>(1, 5));
  s.erase(BoxSet<N>(cube<N>(0, 1)));
  EXPECT_EQ(s, (BoxSet<N>{cube<N>(0, 3), cube<N>(3, 6)} - BoxSet<N>{cube<N>(1, 5), cube<N>(0, 1)}));
  EXPECT_FALSE(s.contains(point<N>(0)));
  EXPECT_TRUE(s.contains(point<N>(5)));
}

TYPED_TEST(BoxSetTest, ToStringListsCanonicalBoxes) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> s{cube<N>(4, 5), cube<N>(0, 1)};
  EXPECT_EQ(s.to_string(),
            "{" + cube<N>(0, 1).to_string() + ", " + cube<N>(4, 5).to_string() + "}");
}

TYPED_TEST(BoxSetTest, IndexOutOfRangeIsAPreconditionError) {
  constexpr std::size_t N = TypeParam::value;
  const BoxSet<N> s(cube<N>(0, 1));
  EXPECT_EQ(s[0], cube<N>(0, 1));
  EXPECT_THROW((void)s[1], PreconditionError);
  EXPECT_THROW((void)BoxSet<N>()[0], PreconditionError);
}

TYPED_TEST(BoxSetTest, VolumeOverflowIsAPreconditionError) {
  constexpr std::size_t N = TypeParam::value;
  if constexpr (N >= 2) {
    // Two disjoint, non-mergeable boxes of 2^63 points each.
    const std::int64_t e0 = std::int64_t{1} << (63 - 20 * (N - 1));
    const BoxSet<N> s{slab<N>(0, e0, 0, 1 << 20), slab<N>(e0 + 1, 2 * e0 + 1, 0, 1 << 20)};
    EXPECT_EQ(s[0].volume(), std::uint64_t{1} << 63);
    EXPECT_THROW((void)s.volume(), PreconditionError);
  } else {
    const std::int64_t half = std::int64_t{1} << 62;
    const BoxSet<1> s{Box<1>({-half}, {half - 1}), Box<1>({half}, {2 * (half - 1) + 1})};
    EXPECT_EQ(s.volume(), ((std::uint64_t{1} << 63) - 1) + ((std::uint64_t{1} << 62) - 1));
  }
}

TYPED_TEST(BoxSetTest, CheckInvariantsRejectsBrokenLists) {
  constexpr std::size_t N = TypeParam::value;
  using Access = detail::BoxSetTestAccess;
  BoxSet<N> s(cube<N>(0, 2));
  s.check_invariants();

  BoxSet<N> with_empty = s;
  Access::boxes(with_empty).push_back(Box<N>());
  EXPECT_THROW(with_empty.check_invariants(), InvariantError);

  BoxSet<N> overlapping = s;
  Access::boxes(overlapping).push_back(cube<N>(1, 3));
  EXPECT_THROW(overlapping.check_invariants(), InvariantError);

  BoxSet<N> unsorted = s;
  Access::boxes(unsorted).insert(Access::boxes(unsorted).begin(), cube<N>(5, 6));
  EXPECT_THROW(unsorted.check_invariants(), InvariantError);

  BoxSet<N> not_merged;  // disjoint and sorted, but two touching slabs that must be one box
  Access::boxes(not_merged) = {slab<N>(0, 1, 0, 2), slab<N>(1, 2, 0, 2)};
  EXPECT_THROW(not_merged.check_invariants(), InvariantError);
}

// Every operation against the dense bitmap oracle, and canonical equality: the same point set
// built in different ways (box order, overlapping boxes, bitmap runs, Algorithm 2) compares ==.
TYPED_TEST(BoxSetTest, RandomOperationsMatchBitmapOracle) {
  constexpr std::size_t N = TypeParam::value;
  constexpr std::uint64_t kBaseSeed = 0x5E7'0000;
  for (std::uint64_t c = 0; c < 2000; ++c) {
    const std::uint64_t seed = kBaseSeed + c;
    SCOPED_TRACE("seed=" + std::to_string(seed));
    BoxGenerator<N> gen(seed);
    constexpr std::size_t kMaxBoxes = N == 3 ? 4 : 6;  // keeps the 3-D case fast under ASan
    std::vector<Box<N>> va = gen.boxes(kMaxBoxes);
    const std::vector<Box<N>> vb = gen.boxes(kMaxBoxes);
    const Bitmap<N> ma = bitmap_of<N>(va);
    const Bitmap<N> mb = bitmap_of<N>(vb);
    const auto canonical = [](const Bitmap<N>& m) { return BoxSet<N>::from_boxes(m.runs()); };

    BoxSet<N> a;
    for (const Box<N>& box : va) a.insert(box);
    a.check_invariants();
    const BoxSet<N> b = BoxSet<N>::from_boxes(vb);
    b.check_invariants();
    ASSERT_EQ(bitmap_of<N>(a), ma) << a.to_string();
    ASSERT_EQ(bitmap_of<N>(b), mb) << b.to_string();
    EXPECT_EQ(a, canonical(ma));
    EXPECT_EQ(b, canonical(mb));
    std::shuffle(va.begin(), va.end(), gen.rng());
    EXPECT_EQ(BoxSet<N>::from_boxes(va), a);
    EXPECT_EQ(BoxSet<N>::from_boxes(disjoint_decomposition(va)), a);

    EXPECT_EQ(a.volume(), ma.count());
    EXPECT_EQ(a.empty(), ma.empty());
    EXPECT_EQ(a.bounds(), ma.bounds());

    const BoxSet<N> u = a.unite(b);
    const BoxSet<N> i = a.intersect(b);
    const BoxSet<N> d = a.subtract(b);
    for (const BoxSet<N>* s : {&u, &i, &d}) s->check_invariants();
    EXPECT_EQ(bitmap_of<N>(u), ma | mb);
    EXPECT_EQ(bitmap_of<N>(i), ma & mb);
    EXPECT_EQ(bitmap_of<N>(d), ma - mb);
    EXPECT_EQ(u, canonical(ma | mb));
    EXPECT_EQ(i, canonical(ma & mb));
    EXPECT_EQ(d, canonical(ma - mb));
    EXPECT_EQ(u, b | a);
    EXPECT_EQ(i, b & a);
    EXPECT_EQ(d | i, a);
    EXPECT_EQ(a.contains(b), mb.subset_of(ma));
    EXPECT_EQ(b.is_subset_of(a), mb.subset_of(ma));
    EXPECT_TRUE(i.is_subset_of(a));
    EXPECT_TRUE(u.contains(a));
    EXPECT_EQ(a.intersects(b), !(ma & mb).empty());

    const Box<N> box = gen.box();
    const Bitmap<N> mbox = bitmap_of_box(box);
    // Box overloads: exact against the oracle, and the same canonical form as the set overloads.
    const BoxSet<N> box_set(box);
    const BoxSet<N> ub = a.unite(box);
    const BoxSet<N> ib = a.intersect(box);
    const BoxSet<N> db = a.subtract(box);
    EXPECT_EQ(bitmap_of<N>(ub), ma | mbox);
    EXPECT_EQ(bitmap_of<N>(ib), ma & mbox);
    EXPECT_EQ(bitmap_of<N>(db), ma - mbox);
    EXPECT_EQ(ub, a.unite(box_set));
    EXPECT_EQ(ib, a.intersect(box_set));
    EXPECT_EQ(db, a.subtract(box_set));
    EXPECT_EQ(a.contains(box), mbox.subset_of(ma));
    EXPECT_EQ(a.intersects(box), !(ma & mbox).empty());

    for (int k = 0; k < 4; ++k) {
      const auto p = gen.point();
      EXPECT_EQ(a.contains(p), ma.test(p));
    }

    BoxSet<N> in_place = a;
    in_place.erase(box);
    in_place.insert(b);
    EXPECT_EQ(bitmap_of<N>(in_place), (ma - mbox) | mb);
    EXPECT_EQ(in_place, db | b);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(BoxDecomposition, FloydWarshallTileOfBbmmFigure3GivesTwoBoxes) {
  // BBMM Figure 3 (001_9219257c3045faa0.txt): N = 8, k = 7, a 4 x 8 tile. path[i][j] covers the
  // tile, path[i][k] column 7 of its rows, path[k][j] row 7.
  const Box<2> path_ij({0, 0}, {4, 8});
  const Box<2> path_ik({0, 7}, {4, 8});
  const Box<2> path_kj({7, 0}, {8, 8});
  const std::vector<Box<2>> disjoint = disjoint_decomposition<2>({path_ij, path_ik, path_kj});
  EXPECT_EQ(disjoint, (std::vector<Box<2>>{path_ij, path_kj}));
  // The convex union would allocate the whole 8 x 8 array.
  EXPECT_EQ(path_ij.bounding_union(path_ik).bounding_union(path_kj).volume(), 64U);
  EXPECT_EQ(BoxSet<2>::from_boxes(disjoint).volume(), 40U);
}

TYPED_TEST(BoxDecompositionTest, EmptyAndDuplicateInputs) {
  constexpr std::size_t N = TypeParam::value;
  EXPECT_TRUE(disjoint_decomposition<N>({}).empty());
  EXPECT_TRUE(disjoint_decomposition<N>({Box<N>(), cube<N>(4, 2)}).empty());
  EXPECT_EQ(disjoint_decomposition<N>({cube<N>(0, 3), cube<N>(0, 3), cube<N>(1, 2)}),
            std::vector<Box<N>>{cube<N>(0, 3)});
}

TYPED_TEST(BoxDecompositionTest, LaterBoxKeepsOnlyWhatIsNotPresent) {
  constexpr std::size_t N = TypeParam::value;
  const std::vector<Box<N>> out = disjoint_decomposition<N>({cube<N>(0, 2), cube<N>(0, 4)});
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0], cube<N>(0, 2));  // first box is kept whole (line 7, empty S)
  EXPECT_LE(out.size(), 1 + N);      // [0, 4) minus a corner: one slab per dimension
  EXPECT_EQ(bitmap_of<N>(out), bitmap_of_box(cube<N>(0, 4)));
}

TYPED_TEST(BoxDecompositionTest, RandomListsGiveDisjointBoxesCoveringTheUnion) {
  constexpr std::size_t N = TypeParam::value;
  constexpr std::uint64_t kBaseSeed = 0xA162'0000;
  for (std::uint64_t c = 0; c < 2000; ++c) {
    const std::uint64_t seed = kBaseSeed + c;
    SCOPED_TRACE("seed=" + std::to_string(seed));
    BoxGenerator<N> gen(seed);
    const std::vector<Box<N>> input = gen.boxes(8);
    const std::vector<Box<N>> out = disjoint_decomposition(input);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_FALSE(out[i].empty());
      EXPECT_TRUE(std::any_of(input.begin(), input.end(),
                              [&](const Box<N>& in) { return in.contains(out[i]); }));
      for (std::size_t j = i + 1; j < out.size(); ++j) EXPECT_FALSE(out[i].overlaps(out[j]));
      total += out[i].volume();
    }
    const Bitmap<N> expected = bitmap_of<N>(input);
    EXPECT_EQ(bitmap_of<N>(out), expected);
    EXPECT_EQ(total, expected.count());
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace unimem
