#include "region/interval_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/check.hpp"
#include "region/interval.hpp"
#include "region/oracle.hpp"

namespace unimem {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMaxDelta = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinDelta = std::numeric_limits<std::int64_t>::min();

// ---- Interval -----------------------------------------------------------------------------------

TEST(Interval, DefaultIsEmptyAtZero) {
  const Interval i;
  EXPECT_TRUE(i.empty());
  EXPECT_EQ(i.size(), 0U);
  EXPECT_EQ(i, Interval(0, 0));
}

TEST(Interval, BeginAfterEndIsAPreconditionError) {
  EXPECT_THROW(Interval(5, 4), PreconditionError);
  EXPECT_THROW(Interval(kMax, 0), PreconditionError);
  EXPECT_NO_THROW(Interval(4, 4));
}

TEST(Interval, SizeContainsAndOverlapAtTheEdges) {
  const Interval i{10, 20};
  EXPECT_EQ(i.size(), 10U);
  EXPECT_TRUE(i.contains(std::uint64_t{10}));
  EXPECT_TRUE(i.contains(std::uint64_t{19}));
  EXPECT_FALSE(i.contains(std::uint64_t{20}));
  EXPECT_FALSE(i.contains(std::uint64_t{9}));
  EXPECT_TRUE(i.contains(Interval{10, 20}));
  EXPECT_TRUE(i.contains(Interval{100, 100}));  // empty is always contained
  EXPECT_FALSE(i.contains(Interval{9, 11}));
  EXPECT_FALSE(i.contains(Interval{19, 21}));
  EXPECT_TRUE(i.overlaps(Interval{19, 30}));
  EXPECT_FALSE(i.overlaps(Interval{20, 30}));  // adjacent is not overlapping
  EXPECT_FALSE(i.overlaps(Interval{0, 10}));
  EXPECT_FALSE(i.overlaps(Interval{15, 15}));  // empty never overlaps
}

TEST(Interval, IntersectIsEmptyAtMaxBeginWhenDisjoint) {
  EXPECT_EQ(Interval(0, 10).intersect(Interval(5, 15)), Interval(5, 10));
  EXPECT_EQ(Interval(0, 10).intersect(Interval(10, 15)), Interval(10, 10));
  EXPECT_EQ(Interval(20, 30).intersect(Interval(0, 5)), Interval(20, 20));
  EXPECT_TRUE(Interval(0, 10).intersect(Interval(3, 3)).empty());
}

TEST(Interval, WorksAtTheTopOfTheOffsetSpace) {
  const Interval i{kMax - 1, kMax};
  EXPECT_EQ(i.size(), 1U);
  EXPECT_TRUE(i.contains(kMax - 1));
  EXPECT_FALSE(i.contains(kMax));  // the end is exclusive: offset 2^64-1 is never in an interval
  EXPECT_EQ(Interval(0, kMax).size(), kMax);
  EXPECT_EQ(Interval(0, 4).to_string(), "[0, 4)");
}

// ---- IntervalSet: construction and queries ------------------------------------------------------

TEST(IntervalSet, EmptySet) {
  const IntervalSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.interval_count(), 0U);
  EXPECT_EQ(s.total_size(), 0U);
  EXPECT_TRUE(s.bounds().empty());
  EXPECT_FALSE(s.contains(std::uint64_t{0}));
  EXPECT_TRUE(s.contains(Interval{5, 5}));
  EXPECT_FALSE(s.contains(Interval{0, 1}));
  EXPECT_TRUE(s.contains(IntervalSet{}));
  EXPECT_FALSE(s.intersects(Interval{0, kMax}));
  EXPECT_FALSE(s.intersects(IntervalSet{}));
  EXPECT_EQ(s.to_string(), "{}");
  EXPECT_EQ(s.begin(), s.end());
  EXPECT_EQ(IntervalSet(Interval{7, 7}), s);  // an empty interval gives the empty set
}

// clear() keeps the storage for the next contents (AdaptiveHistory's prefetched sets): the set is
// then the empty set in every respect, and refilling it gives exactly the new contents.
TEST(IntervalSet, ClearGivesTheEmptySetAndRefillsWithOnlyTheNewContents) {
  IntervalSet s{{0, 8}, {16, 24}, {40, 48}};
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s, IntervalSet{});
  EXPECT_EQ(s.total_size(), 0U);
  EXPECT_FALSE(s.intersects(Interval{0, kMax}));
  ASSERT_NO_THROW(s.check_invariants());
  const IntervalSet next{{100, 104}};
  s = next;
  EXPECT_EQ(s, next);
  s.clear();
  s.insert(Interval{4, 6});
  EXPECT_EQ(s, IntervalSet(Interval{4, 6}));
}

TEST(IntervalSet, SingleElement) {
  const IntervalSet s(Interval{41, 42});
  EXPECT_EQ(s.interval_count(), 1U);
  EXPECT_EQ(s.total_size(), 1U);
  EXPECT_EQ(s.bounds(), Interval(41, 42));
  EXPECT_TRUE(s.contains(std::uint64_t{41}));
  EXPECT_FALSE(s.contains(std::uint64_t{40}));
  EXPECT_FALSE(s.contains(std::uint64_t{42}));
  EXPECT_TRUE(s.contains(Interval{41, 42}));
  EXPECT_FALSE(s.contains(Interval{41, 43}));
  EXPECT_TRUE(s.intersects(Interval{0, 42}));
  EXPECT_FALSE(s.intersects(Interval{0, 41}));
  EXPECT_FALSE(s.intersects(Interval{42, 100}));
  EXPECT_EQ(s.to_string(), "{[41, 42)}");
}

TEST(IntervalSet, ConstructionNormalizesOverlappingAdjacentAndEmptyIntervals) {
  const IntervalSet s{{10, 12}, {0, 4}, {4, 8}, {3, 5}, {20, 20}, {11, 15}, {0, 4}};
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 8}, {10, 15}}));
  EXPECT_EQ(s.total_size(), 13U);
  EXPECT_EQ(s.bounds(), Interval(0, 15));
  EXPECT_EQ(s[1], Interval(10, 15));
  EXPECT_EQ(s.to_string(), "{[0, 8), [10, 15)}");
  // A one-byte gap keeps intervals apart.
  EXPECT_EQ(IntervalSet({{0, 4}, {5, 8}}).interval_count(), 2U);
  EXPECT_EQ(IntervalSet::from_unsorted({}), IntervalSet{});
  EXPECT_EQ(IntervalSet::from_unsorted({{3, 3}, {9, 9}}), IntervalSet{});
}

TEST(IntervalSet, FromNormalizedAdoptsCanonicalListsAndRejectsOthersWhenChecking) {
  const std::vector<Interval> good{{0, 4}, {5, 9}};
  EXPECT_EQ(IntervalSet::from_normalized(good).intervals(), good);
  EXPECT_TRUE(IntervalSet::from_normalized({}).empty());
#if UNIMEM_INVARIANTS_ENABLED
  EXPECT_THROW(IntervalSet::from_normalized({{0, 4}, {4, 9}}), InvariantError);  // adjacent
  EXPECT_THROW(IntervalSet::from_normalized({{5, 9}, {0, 4}}), InvariantError);  // unsorted
  EXPECT_THROW(IntervalSet::from_normalized({{0, 4}, {2, 9}}), InvariantError);  // overlapping
  EXPECT_THROW(IntervalSet::from_normalized({{3, 3}}), InvariantError);          // empty piece
#endif
}

TEST(IntervalSet, ContainsAndIntersectsAcrossGaps) {
  const IntervalSet s{{0, 4}, {8, 12}};
  EXPECT_TRUE(s.contains(std::uint64_t{3}));
  EXPECT_FALSE(s.contains(std::uint64_t{4}));
  EXPECT_FALSE(s.contains(std::uint64_t{7}));
  EXPECT_TRUE(s.contains(std::uint64_t{8}));
  EXPECT_FALSE(s.contains(std::uint64_t{12}));
  EXPECT_FALSE(s.contains(Interval{2, 10}));  // spans the gap
  EXPECT_TRUE(s.contains(Interval{8, 12}));
  EXPECT_TRUE(s.contains(IntervalSet{{1, 2}, {9, 12}}));
  EXPECT_FALSE(s.contains(IntervalSet{{1, 2}, {9, 13}}));
  EXPECT_FALSE(s.contains(IntervalSet{{4, 5}}));
  EXPECT_TRUE(s.intersects(Interval{3, 8}));
  EXPECT_FALSE(s.intersects(Interval{4, 8}));  // exactly the gap
  EXPECT_TRUE(s.intersects(IntervalSet{{4, 6}, {11, 20}}));
  EXPECT_FALSE(s.intersects(IntervalSet{{4, 8}, {12, 20}}));
}

// ---- IntervalSet: mutation ----------------------------------------------------------------------

TEST(IntervalSet, InsertMergesWithAdjacentAndBridgedIntervals) {
  IntervalSet s;
  s.insert({10, 20});
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{10, 20}}));
  s.insert({20, 25});  // adjacent on the right
  s.insert({5, 10});   // adjacent on the left
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{5, 25}}));
  s.insert({30, 40});
  s.insert({0, 2});
  s.insert({50, 60});
  EXPECT_EQ(s.interval_count(), 4U);
  s.insert({24, 51});  // bridges three intervals
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 2}, {5, 60}}));
  s.insert({6, 7});  // inside: no change
  s.insert({3, 3});  // empty: no change
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 2}, {5, 60}}));
  s.insert({2, 5});  // fills the gap exactly
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 60}}));
}

TEST(IntervalSet, EraseSplitsTrimsAndRemoves) {
  IntervalSet s{{0, 10}, {20, 30}, {40, 50}};
  s.erase({3, 5});  // splits one interval
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 3}, {5, 10}, {20, 30}, {40, 50}}));
  s.erase({8, 45});  // trims two, removes one
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 3}, {5, 8}, {45, 50}}));
  s.erase({10, 40});  // only a gap: no change
  s.erase({1, 1});    // empty: no change
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 3}, {5, 8}, {45, 50}}));
  s.erase({5, 8});  // exactly one interval
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 3}, {45, 50}}));
  s.erase({0, kMax});
  EXPECT_TRUE(s.empty());
}

// ---- IntervalSet: algebra -----------------------------------------------------------------------

TEST(IntervalSet, AlgebraWithEmptyOperands) {
  const IntervalSet a{{0, 4}, {8, 12}};
  const IntervalSet e;
  EXPECT_EQ(a | e, a);
  EXPECT_EQ(e | a, a);
  EXPECT_EQ(a & e, e);
  EXPECT_EQ(e & a, e);
  EXPECT_EQ(a - e, a);
  EXPECT_EQ(e - a, e);
  EXPECT_EQ(a - a, e);
  EXPECT_EQ(a.intersect(Interval{5, 5}), e);
}

TEST(IntervalSet, UnionJoinsAdjacentIntervalsFromBothSides) {
  const IntervalSet a{{0, 4}, {8, 12}};
  const IntervalSet b{{4, 8}, {13, 14}};
  EXPECT_EQ((a | b).intervals(), (std::vector<Interval>{{0, 12}, {13, 14}}));
  EXPECT_EQ(a.unite(b), b.unite(a));
}

TEST(IntervalSet, IntersectionOfAdjacentSetsIsEmpty) {
  const IntervalSet a{{0, 4}, {8, 12}};
  EXPECT_TRUE((a & IntervalSet{{4, 8}, {12, 20}}).empty());
  EXPECT_EQ((a & IntervalSet{{2, 10}}).intervals(), (std::vector<Interval>{{2, 4}, {8, 10}}));
  EXPECT_EQ(a.intersect(Interval{3, 9}).intervals(), (std::vector<Interval>{{3, 4}, {8, 9}}));
  EXPECT_EQ(a.intersect(Interval{0, kMax}), a);
}

TEST(IntervalSet, DifferenceCutsHolesAndEdges) {
  const IntervalSet a{{0, 10}, {20, 30}};
  EXPECT_EQ((a - IntervalSet{{2, 3}, {5, 22}, {29, 40}}).intervals(),
            (std::vector<Interval>{{0, 2}, {3, 5}, {22, 29}}));
  EXPECT_EQ(a - IntervalSet(Interval{10, 20}), a);  // only the gap
  EXPECT_TRUE((a - IntervalSet{{0, 30}}).empty());
}

TEST(IntervalSet, ShiftedMovesEveryOffset) {
  const IntervalSet a{{10, 20}, {30, 40}};
  EXPECT_EQ(a.shifted(0), a);
  EXPECT_EQ(a.shifted(5).intervals(), (std::vector<Interval>{{15, 25}, {35, 45}}));
  EXPECT_EQ(a.shifted(-10).intervals(), (std::vector<Interval>{{0, 10}, {20, 30}}));
  EXPECT_TRUE(IntervalSet{}.shifted(kMinDelta).empty());
  EXPECT_TRUE(IntervalSet{}.shifted(kMaxDelta).empty());
}

TEST(IntervalSet, ShiftedBelowZeroOrPastTheTopIsAPreconditionError) {
  const IntervalSet a{{10, 20}};
  EXPECT_THROW(a.shifted(-11), PreconditionError);
  EXPECT_NO_THROW(a.shifted(-10));
  EXPECT_THROW(a.shifted(kMinDelta), PreconditionError);
  const IntervalSet top{{kMax - 10, kMax}};
  EXPECT_NO_THROW(top.shifted(0));
  EXPECT_THROW(top.shifted(1), PreconditionError);
  EXPECT_EQ(top.shifted(kMinDelta).intervals(),
            (std::vector<Interval>{
                {kMax - 10 - (std::uint64_t{1} << 63), kMax - (std::uint64_t{1} << 63)}}));
  const IntervalSet low{{0, 1}};
  EXPECT_EQ(low.shifted(kMaxDelta).intervals(),
            (std::vector<Interval>{{static_cast<std::uint64_t>(kMaxDelta),
                                    static_cast<std::uint64_t>(kMaxDelta) + 1}}));
}

TEST(IntervalSet, HandlesIntervalsEndingAtTheTopOfTheOffsetSpace) {
  IntervalSet s{{kMax - 4, kMax}, {0, 1}};
  EXPECT_EQ(s.total_size(), 5U);
  EXPECT_EQ(s.bounds(), Interval(0, kMax));
  EXPECT_TRUE(s.contains(kMax - 1));
  EXPECT_FALSE(s.contains(kMax));
  s.insert({1, kMax - 4});
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, kMax}}));
  EXPECT_EQ(s.total_size(), kMax);
  s.erase({1, kMax - 1});
  EXPECT_EQ(s.intervals(), (std::vector<Interval>{{0, 1}, {kMax - 1, kMax}}));
  EXPECT_EQ((s - IntervalSet{{kMax - 1, kMax}}).intervals(), (std::vector<Interval>{{0, 1}}));
}

TEST(IntervalSet, IterationVisitsIntervalsInOrder) {
  const IntervalSet s{{8, 9}, {0, 2}, {4, 6}};
  std::vector<Interval> seen(s.begin(), s.end());
  EXPECT_EQ(seen, (std::vector<Interval>{{0, 2}, {4, 6}, {8, 9}}));
  std::uint64_t total = 0;
  for (const Interval& i : s) total += i.size();
  EXPECT_EQ(total, s.total_size());
}

// ---- Randomized property tests against the dense bitmap ----------------------------------------
//
// Every case uses its own seed (printed on failure; rerun with the same seed to reproduce). Each
// property runs in two windows: at offset 0 and at the very top of the 64-bit offset space.

constexpr std::uint64_t kCases = 1000;
constexpr std::uint64_t kUniverse = 96;

std::vector<oracle::Window> windows() {
  return {{0, kUniverse}, {1000, kUniverse}, oracle::Window::at_top(kUniverse)};
}

std::string trace(std::uint64_t seed, const oracle::Window& w) {
  return "seed=" + std::to_string(seed) + " window=" + w.interval().to_string();
}

// Runs body(rng, window) for kCases seeds in every window, stopping at the first failure.
template <typename Body>
void for_each_case(std::uint64_t salt, Body body) {
  for (const oracle::Window& w : windows()) {
    for (std::uint64_t seed = 1; seed <= kCases; ++seed) {
      SCOPED_TRACE(trace(seed, w));
      std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + salt);
      body(rng, w);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(IntervalSetProperty, FromUnsortedMatchesBitmap) {
  for_each_case(1, [](std::mt19937_64& rng, const oracle::Window& w) {
    std::vector<Interval> pieces;
    const auto n = rng() % 10;
    oracle::DenseSet expected(w);
    for (std::uint64_t k = 0; k < n; ++k) {
      pieces.push_back(oracle::random_interval(rng, w));
      expected.insert(pieces.back());
    }
    const IntervalSet s = IntervalSet::from_unsorted(pieces);
    ASSERT_NO_THROW(s.check_invariants());
    ASSERT_EQ(s, expected.to_interval_set()) << s.to_string();
  });
}

TEST(IntervalSetProperty, UnionMatchesBitmap) {
  for_each_case(2, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const IntervalSet b = oracle::random_interval_set(rng, w);
    const IntervalSet u = a | b;
    ASSERT_NO_THROW(u.check_invariants());
    ASSERT_EQ(u, (oracle::DenseSet(w, a) | oracle::DenseSet(w, b)).to_interval_set())
        << a.to_string() << " | " << b.to_string() << " = " << u.to_string();
  });
}

TEST(IntervalSetProperty, IntersectionMatchesBitmap) {
  for_each_case(3, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const IntervalSet b = oracle::random_interval_set(rng, w);
    const IntervalSet i = a & b;
    ASSERT_NO_THROW(i.check_invariants());
    ASSERT_EQ(i, (oracle::DenseSet(w, a) & oracle::DenseSet(w, b)).to_interval_set())
        << a.to_string() << " & " << b.to_string() << " = " << i.to_string();
    const Interval r = oracle::random_interval(rng, w);
    const IntervalSet ir = a.intersect(r);
    ASSERT_NO_THROW(ir.check_invariants());
    ASSERT_EQ(ir, (oracle::DenseSet(w, a) & oracle::DenseSet(w, IntervalSet(r))).to_interval_set())
        << a.to_string() << " & " << r.to_string();
  });
}

TEST(IntervalSetProperty, DifferenceMatchesBitmap) {
  for_each_case(4, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const IntervalSet b = oracle::random_interval_set(rng, w);
    const IntervalSet d = a - b;
    ASSERT_NO_THROW(d.check_invariants());
    ASSERT_EQ(d, (oracle::DenseSet(w, a) - oracle::DenseSet(w, b)).to_interval_set())
        << a.to_string() << " - " << b.to_string() << " = " << d.to_string();
  });
}

// assign_difference gives subtract's result into a set that already holds something (its storage
// reused), also when the target is one of the operands.
TEST(IntervalSetProperty, AssignDifferenceMatchesBitmapAndSubtract) {
  for_each_case(13, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const IntervalSet b = oracle::random_interval_set(rng, w);
    const IntervalSet expected =
        (oracle::DenseSet(w, a) - oracle::DenseSet(w, b)).to_interval_set();
    IntervalSet target = oracle::random_interval_set(rng, w);
    target.assign_difference(a, b);
    ASSERT_NO_THROW(target.check_invariants());
    ASSERT_EQ(target, expected) << a.to_string() << " - " << b.to_string();
    ASSERT_EQ(target, a.subtract(b));
    IntervalSet left = a;
    left.assign_difference(left, b);
    ASSERT_EQ(left, expected) << "into the left operand";
    IntervalSet right = b;
    right.assign_difference(a, right);
    ASSERT_EQ(right, expected) << "into the right operand";
  });
}

// One set of many short rows at a stride against one of a few intervals, in either order: the
// lopsided operands take the fast paths (binary search per interval of the small set, copies for
// disjoint or empty operands).
TEST(IntervalSetProperty, AlgebraOfManyRowsAgainstFewIntervalsMatchesBitmap) {
  for_each_case(12, [](std::mt19937_64& rng, const oracle::Window& w) {
    std::vector<Interval> rows;
    const std::uint64_t length = 1 + rng() % 2;
    const std::uint64_t stride = length + 1 + rng() % 2;
    const std::uint64_t lo = w.base + rng() % (w.size / 2);
    const std::uint64_t hi = lo + rng() % (w.end() - lo + 1);
    for (std::uint64_t at = lo; length <= hi - at; at += stride) {
      rows.emplace_back(at, at + length);
      if (stride > hi - at) break;
    }
    const IntervalSet many = IntervalSet::from_normalized(std::move(rows));
    const IntervalSet few = oracle::random_interval_set(rng, w, 2);
    const oracle::DenseSet dm(w, many);
    const oracle::DenseSet df(w, few);
    for (int order = 0; order < 2; ++order) {
      const IntervalSet& a = order == 0 ? many : few;
      const IntervalSet& b = order == 0 ? few : many;
      const oracle::DenseSet& da = order == 0 ? dm : df;
      const oracle::DenseSet& db = order == 0 ? df : dm;
      const std::string what = a.to_string() + " with " + b.to_string();
      ASSERT_EQ(a | b, (da | db).to_interval_set()) << what;
      ASSERT_EQ(a & b, (da & db).to_interval_set()) << what;
      ASSERT_EQ(a - b, (da - db).to_interval_set()) << what;
      ASSERT_EQ(a.intersects(b), !(da & db).to_interval_set().empty()) << what;
      ASSERT_NO_THROW((a | b).check_invariants());
      ASSERT_NO_THROW((a - b).check_invariants());
    }
  });
}

// Many intervals of random lengths against one to three short or long ones, in a wider window:
// the small set's intervals often fall inside one interval of the large set, several of them in
// the same one, so the difference cuts an interval more than once (its rest carried from one cut
// to the next) and keeps runs of untouched intervals between the cuts. intersect, subtract,
// assign_difference and contains take their lopsided paths here and must match the bitmap.
TEST(IntervalSetProperty, LopsidedAlgebraWithSeveralCutsPerIntervalMatchesBitmap) {
  const std::vector<oracle::Window> wide{{0, 480}, oracle::Window::at_top(480)};
  for (const oracle::Window& w : wide) {
    for (std::uint64_t seed = 1; seed <= kCases; ++seed) {
      SCOPED_TRACE(trace(seed, w));
      std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 14);
      std::vector<Interval> parts;
      for (std::uint64_t at = w.base + rng() % 3; at < w.end();) {
        const std::uint64_t end = at + std::min<std::uint64_t>(1 + rng() % 8, w.end() - at);
        parts.emplace_back(at, end);
        if (w.end() - end < 2) break;
        at = end + 1 + rng() % 2;
      }
      const IntervalSet many = IntervalSet::from_normalized(std::move(parts));
      std::vector<Interval> cuts;
      for (std::uint64_t k = 0, n = 1 + rng() % 3; k < n; ++k) {
        const std::uint64_t begin = w.base + rng() % w.size;
        const std::uint64_t length = rng() % 4 == 0 ? 1 + rng() % 60 : 1 + rng() % 3;
        cuts.emplace_back(begin, begin + std::min(length, w.end() - begin));
      }
      const IntervalSet few = IntervalSet::from_unsorted(std::move(cuts));
      // Lopsided as interval_set.cpp counts it (16 times as many intervals).
      ASSERT_LT(few.interval_count() * 16, many.interval_count());
      const oracle::DenseSet dm(w, many);
      const oracle::DenseSet df(w, few);
      const std::string what = many.to_string() + " with " + few.to_string();
      const IntervalSet difference = many - few;
      ASSERT_NO_THROW(difference.check_invariants()) << what;
      ASSERT_EQ(difference, (dm - df).to_interval_set()) << what;
      IntervalSet into = IntervalSet(w.interval());  // storage reused, not an operand
      into.assign_difference(many, few);
      ASSERT_EQ(into, difference) << what;
      for (int order = 0; order < 2; ++order) {
        const IntervalSet common = order == 0 ? many & few : few & many;
        ASSERT_NO_THROW(common.check_invariants()) << what;
        ASSERT_EQ(common, (dm & df).to_interval_set()) << what;
      }
      ASSERT_EQ(many.contains(few), dm.contains(df)) << what;
      const IntervalSet inside = few & many;  // often several pieces inside one interval
      ASSERT_TRUE(many.contains(inside)) << what;
    }
  }
}

TEST(IntervalSetProperty, ContainsOffsetMatchesBitmap) {
  for_each_case(5, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const oracle::DenseSet bits(w, a);
    // Every offset of the window plus its two neighbours outside it.
    const std::uint64_t lo = w.base == 0 ? 0 : w.base - 1;
    const std::uint64_t hi = w.end() == kMax ? kMax : w.end() + 1;
    for (std::uint64_t o = lo;; ++o) {
      ASSERT_EQ(a.contains(o), bits.test(o)) << a.to_string() << " offset " << o;
      if (o == hi) break;
    }
  });
}

TEST(IntervalSetProperty, ContainsIntervalMatchesBitmap) {
  for_each_case(6, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const oracle::DenseSet bits(w, a);
    for (int k = 0; k < 8; ++k) {
      // Pick intervals inside a's own intervals half of the time, so "true" answers are common.
      Interval r = oracle::random_interval(rng, w);
      if (!a.empty() && rng() % 2 == 0) {
        const Interval& host = a[rng() % a.interval_count()];
        r = host.intersect(r).empty() ? host : host.intersect(r);
      }
      ASSERT_EQ(a.contains(r), bits.contains(r)) << a.to_string() << " contains " << r.to_string();
    }
  });
}

TEST(IntervalSetProperty, ContainsSetMatchesBitmap) {
  for_each_case(7, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    IntervalSet b = oracle::random_interval_set(rng, w, 4);
    if (rng() % 2 == 0) b = b & a;  // often a true subset
    ASSERT_EQ(a.contains(b), oracle::DenseSet(w, a).contains(oracle::DenseSet(w, b)))
        << a.to_string() << " contains " << b.to_string();
  });
}

TEST(IntervalSetProperty, IntersectsMatchesBitmap) {
  for_each_case(8, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const IntervalSet b = oracle::random_interval_set(rng, w, 3);
    const oracle::DenseSet bits(w, a);
    ASSERT_EQ(a.intersects(b), bits.intersects(oracle::DenseSet(w, b)))
        << a.to_string() << " intersects " << b.to_string();
    ASSERT_EQ(a.intersects(b), b.intersects(a));
    const Interval r = oracle::random_interval(rng, w);
    ASSERT_EQ(a.intersects(r), bits.intersects(r))
        << a.to_string() << " intersects " << r.to_string();
  });
}

TEST(IntervalSetProperty, InsertAndEraseSequencesMatchBitmap) {
  for_each_case(9, [](std::mt19937_64& rng, const oracle::Window& w) {
    IntervalSet s;
    oracle::DenseSet bits(w);
    for (int step = 0; step < 12; ++step) {
      const Interval r = oracle::random_interval(rng, w);
      const bool insert = rng() % 2 == 0;
      if (insert) {
        s.insert(r);
        bits.insert(r);
      } else {
        s.erase(r);
        bits.erase(r);
      }
      ASSERT_NO_THROW(s.check_invariants()) << (insert ? "insert " : "erase ") << r.to_string();
      ASSERT_EQ(s, bits.to_interval_set())
          << "step " << step << (insert ? " insert " : " erase ") << r.to_string();
    }
  });
}

TEST(IntervalSetProperty, TotalSizeAndBoundsMatchBitmap) {
  for_each_case(10, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const oracle::DenseSet bits(w, a);
    ASSERT_EQ(a.total_size(), bits.count()) << a.to_string();
    if (a.empty()) {
      ASSERT_TRUE(a.bounds().empty());
    } else {
      ASSERT_TRUE(bits.test(a.bounds().begin)) << a.to_string();
      ASSERT_TRUE(bits.test(a.bounds().end - 1)) << a.to_string();
      ASSERT_FALSE(bits.intersects({w.base, a.bounds().begin})) << a.to_string();
      ASSERT_FALSE(bits.intersects({a.bounds().end, w.end()})) << a.to_string();
    }
  });
}

TEST(IntervalSetProperty, ShiftedMatchesBitmap) {
  // The set lives in the middle third of a window three times as large; shifts stay inside.
  const std::uint64_t third = kUniverse / 3;
  for_each_case(11, [third](std::mt19937_64& rng, const oracle::Window& w) {
    const oracle::Window middle{w.base + third, third};
    const IntervalSet a = oracle::random_interval_set(rng, middle);
    const auto delta = std::uniform_int_distribution<std::int64_t>(
        -static_cast<std::int64_t>(third), static_cast<std::int64_t>(third))(rng);
    oracle::DenseSet expected(w);
    for (std::uint64_t o = middle.base; o < middle.end(); ++o) {
      if (a.contains(o)) expected.set(o + static_cast<std::uint64_t>(delta), true);
    }
    ASSERT_EQ(a.shifted(delta), expected.to_interval_set()) << a.to_string() << " by " << delta;
  });
}

TEST(IntervalSetProperty, ShiftedThrowsExactlyWhenAnOffsetLeavesTheSpace) {
  for_each_case(12, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    // Deltas that move the set exactly to 0 or to 2^64 - 1, one byte further, small random
    // ones and the extremes.
    const Interval b = a.bounds();
    const auto clamp = [](std::uint64_t d) {
      return static_cast<std::int64_t>(std::min<std::uint64_t>(d, kMaxDelta));
    };
    const std::int64_t to_zero = -clamp(b.begin);
    const std::int64_t to_top = clamp(kMax - b.end);
    const std::int64_t candidates[] = {
        to_zero,
        to_zero == kMinDelta ? kMinDelta : to_zero - 1,
        to_top,
        to_top == kMaxDelta ? kMaxDelta : to_top + 1,
        static_cast<std::int64_t>(rng() % (2 * kUniverse)) - static_cast<std::int64_t>(kUniverse),
        kMinDelta,
        kMaxDelta};
    for (std::int64_t delta : candidates) {
      bool overflow = false;
      if (!a.empty()) {
        if (delta < 0) {
          overflow = static_cast<std::uint64_t>(-(delta + 1)) + 1 > b.begin;
        } else {
          overflow = static_cast<std::uint64_t>(delta) > kMax - b.end;
        }
      }
      if (overflow) {
        ASSERT_THROW((void)a.shifted(delta), PreconditionError) << a.to_string() << " by " << delta;
      } else {
        IntervalSet s;
        ASSERT_NO_THROW(s = a.shifted(delta)) << a.to_string() << " by " << delta;
        ASSERT_EQ(s.total_size(), a.total_size());
        if (delta != kMinDelta) {
          ASSERT_EQ(s.shifted(-delta), a);
        }
      }
    }
  });
}

TEST(IntervalSetProperty, AlgebraicIdentitiesHold) {
  for_each_case(13, [](std::mt19937_64& rng, const oracle::Window& w) {
    const IntervalSet a = oracle::random_interval_set(rng, w);
    const IntervalSet b = oracle::random_interval_set(rng, w);
    ASSERT_EQ(a | b, b | a);
    ASSERT_EQ(a & b, b & a);
    ASSERT_EQ((a - b) | (a & b), a);
    ASSERT_FALSE((a - b).intersects(b));
    ASSERT_EQ((a | b).total_size() + (a & b).total_size(), a.total_size() + b.total_size());
    ASSERT_TRUE((a | b).contains(a));
    ASSERT_TRUE(a.contains(a & b));
  });
}

// extend_with builds a set in address order: a touching piece joins the last interval, a piece
// apart is appended, and a piece before the set's end (or an empty one) is refused, the set kept.
TEST(IntervalSet, ExtendWithJoinsTouchingPiecesAndRefusesOnesBeforeTheEnd) {
  IntervalSet s;
  s.extend_with(Interval(0, 4));
  s.extend_with(Interval(4, 8));
  s.extend_with(Interval(10, 12));
  EXPECT_EQ(s, (IntervalSet{Interval(0, 8), Interval(10, 12)}));
  s.check_invariants();
  EXPECT_THROW(s.extend_with(Interval(11, 16)), PreconditionError);
  EXPECT_THROW(s.extend_with(Interval(20, 20)), PreconditionError);
  EXPECT_EQ(s, (IntervalSet{Interval(0, 8), Interval(10, 12)}));
}

}  // namespace
}  // namespace unimem
