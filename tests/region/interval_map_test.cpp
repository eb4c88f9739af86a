#include "region/interval_map.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.hpp"
#include "region/interval_set.hpp"
#include "region/oracle.hpp"

namespace unimem {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

using Map = IntervalMap<int>;
using Seg = Map::Segment;
using Segs = std::vector<Seg>;

std::string str(const Segs& s) { return oracle::to_string<int>(s); }

// ---- Unit tests ---------------------------------------------------------------------------------

TEST(IntervalMap, EmptyMap) {
  const Map m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.segment_count(), 0U);
  EXPECT_EQ(m.at(0), std::nullopt);
  EXPECT_TRUE(m.query({0, kMax}).empty());
  EXPECT_TRUE(m.select({0, kMax}, [](int) { return true; }).empty());
  EXPECT_TRUE(m.segments().empty());
  EXPECT_EQ(m, Map{});
  EXPECT_NO_THROW(m.check_invariants());
}

TEST(IntervalMap, ConstructorMapsOneSegmentOrNothing) {
  const Map m({10, 20}, 7);
  EXPECT_EQ(m.segments(), (Segs{{{10, 20}, 7}}));
  EXPECT_EQ(m.at(9), std::nullopt);
  EXPECT_EQ(m.at(10), 7);
  EXPECT_EQ(m.at(19), 7);
  EXPECT_EQ(m.at(20), std::nullopt);
  EXPECT_TRUE(Map({5, 5}, 1).empty());
}

TEST(IntervalMap, AssignSplitsOverwritesAndMergesEqualNeighbours) {
  Map m({0, 100}, 1);
  m.assign({10, 20}, 2);
  EXPECT_EQ(m.segments(), (Segs{{{0, 10}, 1}, {{10, 20}, 2}, {{20, 100}, 1}}));
  m.assign({10, 20}, 1);  // restores one segment
  EXPECT_EQ(m.segments(), (Segs{{{0, 100}, 1}}));
  m.assign({100, 110}, 1);  // adjacent on the right, equal value
  m.assign({200, 210}, 1);  // not adjacent
  EXPECT_EQ(m.segments(), (Segs{{{0, 110}, 1}, {{200, 210}, 1}}));
  m.assign({105, 205}, 3);  // across a gap
  EXPECT_EQ(m.segments(), (Segs{{{0, 105}, 1}, {{105, 205}, 3}, {{205, 210}, 1}}));
  m.assign({50, 50}, 9);  // empty: no change
  EXPECT_EQ(m.segment_count(), 3U);
  m.assign({0, 210}, 3);
  EXPECT_EQ(m.segments(), (Segs{{{0, 210}, 3}}));
}

TEST(IntervalMap, AssignIntoAGapStartingBeforeTheNextSegment) {
  Map m({20, 30}, 1);
  m.assign({5, 25}, 2);  // starts in a gap, ends inside a segment
  EXPECT_EQ(m.segments(), (Segs{{{5, 25}, 2}, {{25, 30}, 1}}));
  m.assign({0, 5}, 2);  // adjacent on the left
  EXPECT_EQ(m.segments(), (Segs{{{0, 25}, 2}, {{25, 30}, 1}}));
}

TEST(IntervalMap, AssignIntervalSetAssignsEveryPiece) {
  Map m;
  m.assign(IntervalSet{{0, 4}, {8, 12}}, 5);
  EXPECT_EQ(m.segments(), (Segs{{{0, 4}, 5}, {{8, 12}, 5}}));
}

TEST(IntervalMap, UpdateChangesMappedPartsOnlyAndMerges) {
  Map m;
  m.assign({0, 10}, 1);
  m.assign({10, 20}, 2);
  m.assign({30, 40}, 1);
  m.update({5, 35}, [](int v) { return v + 1; });  // gap [20, 30) stays unmapped
  EXPECT_EQ(m.segments(),
            (Segs{{{0, 5}, 1}, {{5, 10}, 2}, {{10, 20}, 3}, {{30, 35}, 2}, {{35, 40}, 1}}));
  m.update({10, 20}, [](int) { return 2; });  // merges with [5, 10)
  EXPECT_EQ(m.segments(), (Segs{{{0, 5}, 1}, {{5, 20}, 2}, {{30, 35}, 2}, {{35, 40}, 1}}));
  m.update({0, 5}, [](int) { return 2; });  // merges at the front of the map
  m.update({35, 40}, [](int) { return 2; });
  EXPECT_EQ(m.segments(), (Segs{{{0, 20}, 2}, {{30, 40}, 2}}));
  m.update({20, 30}, [](int) { return 9; });  // only a gap: no change
  m.update({3, 3}, [](int) { return 9; });    // empty: no change
  EXPECT_EQ(m.segments(), (Segs{{{0, 20}, 2}, {{30, 40}, 2}}));
}

TEST(IntervalMap, UpdateWithIdentityLeavesTheMapCanonical) {
  Map m;
  m.assign({0, 10}, 1);
  m.assign({10, 20}, 2);
  const Map before = m;
  m.update({3, 17}, [](int v) { return v; });
  EXPECT_EQ(m, before);  // the splits at 3 and 17 were merged back
}

TEST(IntervalMap, UpdateOrInsertFillsGapsWithNullopt) {
  Map m;
  m.assign({10, 20}, 1);
  m.assign({30, 40}, 2);
  std::vector<std::optional<int>> seen;
  m.update_or_insert({5, 35}, [&seen](std::optional<int> v) {
    seen.push_back(v);
    return v ? *v * 10 : 0;
  });
  EXPECT_EQ(seen, (std::vector<std::optional<int>>{std::nullopt, 1, std::nullopt, 2}));
  EXPECT_EQ(m.segments(),
            (Segs{{{5, 10}, 0}, {{10, 20}, 10}, {{20, 30}, 0}, {{30, 35}, 20}, {{35, 40}, 2}}));
}

TEST(IntervalMap, UpdateOrInsertMergesSegmentsInsertedAtTheFront) {
  Map m({10, 20}, 1);
  m.update_or_insert({0, 20}, [](std::optional<int> v) { return v ? *v : 1; });
  EXPECT_EQ(m.segments(), (Segs{{{0, 20}, 1}}));
  Map e;
  e.update_or_insert({0, 5}, [](std::optional<int>) { return 4; });
  e.update_or_insert({5, 9}, [](std::optional<int>) { return 4; });
  EXPECT_EQ(e.segments(), (Segs{{{0, 9}, 4}}));
}

TEST(IntervalMap, EraseUnmapsAndSplits) {
  Map m({0, 100}, 1);
  m.erase({10, 20});
  EXPECT_EQ(m.segments(), (Segs{{{0, 10}, 1}, {{20, 100}, 1}}));
  EXPECT_EQ(m.at(15), std::nullopt);
  m.erase({5, 25});
  EXPECT_EQ(m.segments(), (Segs{{{0, 5}, 1}, {{25, 100}, 1}}));
  m.erase({5, 25});   // only a gap
  m.erase({50, 50});  // empty
  EXPECT_EQ(m.segment_count(), 2U);
  m.erase(IntervalSet{{0, 5}, {90, 200}});
  EXPECT_EQ(m.segments(), (Segs{{{25, 90}, 1}}));
  m.erase({0, kMax});
  EXPECT_TRUE(m.empty());
}

TEST(IntervalMap, QueryAndForEachInClipToTheRange) {
  Map m;
  m.assign({0, 10}, 1);
  m.assign({10, 20}, 2);
  m.assign({30, 40}, 3);
  EXPECT_EQ(m.query({5, 35}), (Segs{{{5, 10}, 1}, {{10, 20}, 2}, {{30, 35}, 3}}));
  EXPECT_EQ(m.query({12, 13}), (Segs{{{12, 13}, 2}}));
  EXPECT_TRUE(m.query({20, 30}).empty());
  EXPECT_TRUE(m.query({15, 15}).empty());
  EXPECT_EQ(m.query({0, kMax}), m.segments());
  Segs seen;
  m.for_each_in({19, 31}, [&seen](const Interval& r, int v) { seen.push_back({r, v}); });
  EXPECT_EQ(seen, (Segs{{{19, 20}, 2}, {{30, 31}, 3}}));
  seen.clear();
  m.for_each([&seen](const Interval& r, int v) { seen.push_back({r, v}); });
  EXPECT_EQ(seen, m.segments());
}

TEST(IntervalMap, SelectReturnsTheBytesWhoseValueMatches) {
  Map m;
  m.assign({0, 10}, 1);
  m.assign({10, 20}, 3);
  m.assign({20, 30}, 2);
  m.assign({40, 50}, 5);
  const auto odd = [](int v) { return v % 2 == 1; };
  // Adjacent matching segments come back as one interval.
  EXPECT_EQ(m.select({5, 45}, odd), (IntervalSet{{5, 20}, {40, 45}}));
  EXPECT_TRUE(m.select({20, 40}, odd).empty());
}

TEST(IntervalMap, WorksAtTheTopOfTheOffsetSpace) {
  Map m({kMax - 10, kMax}, 1);
  m.assign({kMax - 1, kMax}, 2);
  EXPECT_EQ(m.at(kMax - 1), 2);
  EXPECT_EQ(m.at(kMax), std::nullopt);
  m.update({kMax - 5, kMax}, [](int v) { return v + 1; });
  EXPECT_EQ(m.segments(),
            (Segs{{{kMax - 10, kMax - 5}, 1}, {{kMax - 5, kMax - 1}, 2}, {{kMax - 1, kMax}, 3}}));
  EXPECT_EQ(m.query({kMax - 6, kMax}),
            (Segs{{{kMax - 6, kMax - 5}, 1}, {{kMax - 5, kMax - 1}, 2}, {{kMax - 1, kMax}, 3}}));
  m.update({kMax - 1, kMax}, [](int) { return 2; });
  EXPECT_EQ(m.segments(), (Segs{{{kMax - 10, kMax - 5}, 1}, {{kMax - 5, kMax}, 2}}));
  m.assign({0, kMax}, 0);
  EXPECT_EQ(m.segments(), (Segs{{{0, kMax}, 0}}));
  m.erase({kMax - 1, kMax});
  EXPECT_EQ(m.segments(), (Segs{{{0, kMax - 1}, 0}}));
}

TEST(IntervalMap, AThrowingUpdateLeavesTheMapUnchanged) {
  Map m;
  m.assign({0, 10}, 1);
  m.assign({10, 20}, 2);
  m.assign({20, 30}, 1);
  const Map before = m;
  int calls = 0;
  EXPECT_THROW(m.update({5, 25},
                        [&calls](int v) {
                          ++calls;
                          if (v == 2) throw std::runtime_error("refused");
                          return 2;
                        }),
               std::runtime_error);
  EXPECT_EQ(calls, 2);  // [5, 10) was computed before [10, 20) threw
  EXPECT_NO_THROW(m.check_invariants());
  EXPECT_EQ(m, before);
  EXPECT_THROW(m.update_or_insert({25, 40},
                                  [](std::optional<int> v) -> int {
                                    if (!v) throw std::runtime_error("refused");
                                    return 2;
                                  }),
               std::runtime_error);
  EXPECT_NO_THROW(m.check_invariants());
  EXPECT_EQ(m, before);
}

TEST(IntervalMap, ManySegmentsSpanManyChunks) {
  // Enough segments for several storage chunks; operations that cross chunk boundaries, empty
  // whole chunks and merge everything back must keep the map exact.
  Map m;
  oracle::DenseMap<int> d({0, 4000});
  for (std::uint64_t i = 0; i < 1000; ++i) {
    m.assign({4 * i, 4 * i + 3}, static_cast<int>(i % 3));
    d.assign({4 * i, 4 * i + 3}, static_cast<int>(i % 3));
  }
  EXPECT_EQ(m.segment_count(), 1000U);
  m.update({10, 3000}, [](int v) { return v + 10; });
  d.update({10, 3000}, [](int v) { return v + 10; });
  EXPECT_EQ(m.segments(), d.segments());
  m.erase({500, 2500});
  d.erase({500, 2500});
  EXPECT_EQ(m.segments(), d.segments());
  m.update_or_insert({0, 4000}, [](std::optional<int>) { return 7; });
  EXPECT_EQ(m.segments(), (Segs{{{0, 4000}, 7}}));
  for (std::uint64_t i = 0; i < 1000; ++i) m.assign({4 * i + 1, 4 * i + 2}, 8);
  EXPECT_EQ(m.segment_count(), 2001U);
  for (std::uint64_t i = 1000; i-- > 0;) m.assign({4 * i + 1, 4 * i + 2}, 7);
  EXPECT_EQ(m.segments(), (Segs{{{0, 4000}, 7}}));
  EXPECT_NO_THROW(m.check_invariants());
}

TEST(IntervalMap, NonTrivialValuesAreCopiedAndCompared) {
  IntervalMap<std::string> m({0, 10}, "host");
  m.assign({3, 6}, std::string(40, 'x'));  // heap-allocated string
  m.update({0, 10}, [](const std::string& s) { return s.size() > 10 ? std::string("host") : s; });
  EXPECT_EQ(m.segment_count(), 1U);
  EXPECT_EQ(m.at(4), "host");
}

TEST(IntervalMap, CheckInvariantsRejectsOnlyBrokenMaps) {
  // A canonical map passes; the mutators keep it so (they check after every change when enabled).
  Map m;
  for (int k = 0; k < 50; ++k)
    m.assign({static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(k) + 1}, k % 3);
  EXPECT_NO_THROW(m.check_invariants());
  EXPECT_EQ(m.segment_count(), 50U);
}

// ---- Randomized property tests against the dense value array ------------------------------------
//
// The maps under test use chunks of at most 4 segments, so that maps of a 64-byte window span
// many chunks and every chunk split, join and removal path runs.
using SmallChunkMap = IntervalMap<int, 4>;

// Each case starts from an empty map and applies random operations; after every operation the map
// must pass check_invariants() and list exactly the oracle's maximal runs, and at the end it must
// equal a map rebuilt from the oracle. Every case has its own seed, printed on failure.

constexpr std::uint64_t kCases = 1000;
constexpr int kSteps = 16;
constexpr std::uint64_t kUniverse = 64;
constexpr int kValues = 3;  // few distinct values: merging is frequent

std::vector<oracle::Window> windows() {
  return {{0, kUniverse}, oracle::Window::at_top(kUniverse)};
}

int random_value(std::mt19937_64& rng) { return static_cast<int>(rng() % kValues); }

// Fills m and the oracle with a few random assignments.
void populate(std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
              oracle::DenseMap<int>& d) {
  const auto n = rng() % 8;
  for (std::uint64_t k = 0; k < n; ++k) {
    const Interval r = oracle::random_interval(rng, w);
    const int v = random_value(rng);
    m.assign(r, v);
    d.assign(r, v);
  }
}

void expect_same(const SmallChunkMap& m, const oracle::DenseMap<int>& d, const std::string& what) {
  ASSERT_NO_THROW(m.check_invariants()) << what;
  ASSERT_EQ(m.segments(), d.segments())
      << what << "\n  map:    " << str(m.segments()) << "\n  oracle: " << str(d.segments());
}

template <typename Step>
void for_each_case(std::uint64_t salt, Step step) {
  std::size_t most_segments = 0;
  for (const oracle::Window& w : windows()) {
    for (std::uint64_t seed = 1; seed <= kCases; ++seed) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " window=" + w.interval().to_string());
      std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + salt);
      SmallChunkMap m;
      oracle::DenseMap<int> d(w);
      for (int k = 0; k < kSteps; ++k) {
        step(rng, w, m, d);
        if (::testing::Test::HasFailure()) return;
        most_segments = std::max(most_segments, m.segment_count());
      }
      // Canonical form: the map equals one rebuilt from the oracle's runs.
      ASSERT_EQ(m, d.to_interval_map<SmallChunkMap>()) << str(m.segments());
    }
  }
  // The maps must grow past a few chunks of 4, or the chunk split / join paths go untested.
  EXPECT_GE(most_segments, 12U) << "random maps stayed too small to span several chunks";
}

TEST(IntervalMapProperty, AssignMatchesOracle) {
  for_each_case(1, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    const Interval r = oracle::random_interval(rng, w);
    const int v = random_value(rng);
    m.assign(r, v);
    d.assign(r, v);
    expect_same(m, d, "assign " + r.to_string() + " = " + std::to_string(v));
  });
}

TEST(IntervalMapProperty, UpdateMatchesOracle) {
  for_each_case(2, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    if (rng() % 3 == 0) populate(rng, w, m, d);
    const Interval r = oracle::random_interval(rng, w);
    const int add = static_cast<int>(rng() % 3);  // 0 = identity: splits must merge back
    const auto f = [add](int v) { return (v + add) % kValues; };
    m.update(r, f);
    d.update(r, f);
    expect_same(m, d, "update " + r.to_string() + " += " + std::to_string(add));
  });
}

TEST(IntervalMapProperty, UpdateOrInsertMatchesOracle) {
  for_each_case(3, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    if (rng() % 4 == 0) populate(rng, w, m, d);
    if (rng() % 4 == 0) {  // make gaps
      const Interval e = oracle::random_interval(rng, w);
      m.erase(e);
      d.erase(e);
    }
    const Interval r = oracle::random_interval(rng, w);
    const int add = static_cast<int>(rng() % 3);
    const int fresh = random_value(rng);
    const auto f = [add, fresh](std::optional<int> v) { return v ? (*v + add) % kValues : fresh; };
    m.update_or_insert(r, f);
    d.update_or_insert(r, f);
    expect_same(m, d,
                "update_or_insert " + r.to_string() + " += " + std::to_string(add) + " or " +
                    std::to_string(fresh));
  });
}

TEST(IntervalMapProperty, EraseMatchesOracle) {
  for_each_case(4, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    if (rng() % 2 == 0) populate(rng, w, m, d);
    const Interval r = oracle::random_interval(rng, w);
    m.erase(r);
    d.erase(r);
    expect_same(m, d, "erase " + r.to_string());
  });
}

TEST(IntervalMapProperty, IntervalSetOverloadsMatchOracle) {
  for_each_case(5, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    const IntervalSet s = oracle::random_interval_set(rng, w, 4);
    const int v = random_value(rng);
    const auto op = rng() % 4;
    const auto f = [](int x) { return (x + 1) % kValues; };
    const auto g = [v](std::optional<int> x) { return x ? (*x + 2) % kValues : v; };
    for (const Interval& r : s) {
      if (op == 0) d.assign(r, v);
      if (op == 1) d.update(r, f);
      if (op == 2) d.update_or_insert(r, g);
      if (op == 3) d.erase(r);
    }
    if (op == 0) m.assign(s, v);
    if (op == 1) m.update(s, f);
    if (op == 2) m.update_or_insert(s, g);
    if (op == 3) m.erase(s);
    expect_same(m, d, "op " + std::to_string(op) + " on " + s.to_string());
  });
}

// A set of many short intervals at a constant stride (a strided access: one interval per row),
// or a random set, so the IntervalSet forms pass over many intervals inside one segment.
IntervalSet random_strided_set(std::mt19937_64& rng, const oracle::Window& w) {
  if (rng() % 4 == 0) return oracle::random_interval_set(rng, w, 12);
  const std::uint64_t length = 1 + rng() % 3;
  const std::uint64_t stride = length + 1 + rng() % 4;
  std::vector<Interval> rows;
  // Compared by differences: the window may end at the top of the offset space.
  for (std::uint64_t at = w.base + rng() % 8; length <= w.end() - at && rng() % 16 != 0;) {
    rows.emplace_back(at, at + length);
    if (stride > w.end() - at) break;
    at += stride;
  }
  return IntervalSet::from_normalized(std::move(rows));
}

TEST(IntervalMapProperty, SetFormsOverStridedSetsMatchOracle) {
  for_each_case(10, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                       oracle::DenseMap<int>& d) {
    if (rng() % 3 == 0) populate(rng, w, m, d);
    const IntervalSet s = random_strided_set(rng, w);
    const int v = random_value(rng);
    const auto op = rng() % 4;
    const int add = static_cast<int>(rng() % 3);  // 0: identity, nothing may change
    const auto f = [add](int x) { return (x + add) % kValues; };
    const auto g = [v, add](std::optional<int> x) { return x ? (*x + add) % kValues : v; };
    // The changed pieces update must report: per interval, the runs whose value f changes.
    Segs expected_changes;
    if (op == 1) {
      for (const Interval& r : s) {
        for (const Seg& run : d.runs(r)) {
          if (f(run.value) != run.value) expected_changes.push_back(run);
        }
      }
    }
    for (const Interval& r : s) {
      if (op == 0) d.assign(r, v);
      if (op == 1) d.update(r, f);
      if (op == 2) d.update_or_insert(r, g);
      if (op == 3) d.erase(r);
    }
    Segs changes;
    if (op == 0) m.assign(s, v);
    if (op == 1) {
      m.update(s, f, [&](const Interval& piece, int old, int now) {
        EXPECT_EQ(now, f(old)) << "piece " << piece.to_string();
        changes.push_back({piece, old});
      });
    }
    if (op == 2) m.update_or_insert(s, g);
    if (op == 3) m.erase(s);
    expect_same(m, d, "op " + std::to_string(op) + " on " + s.to_string());
    ASSERT_EQ(changes, expected_changes) << "changes reported by update on " << s.to_string();
  });
}

TEST(IntervalMapProperty, SetQueriesOverStridedSetsMatchOracle) {
  for_each_case(11, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                       oracle::DenseMap<int>& d) {
    populate(rng, w, m, d);
    const IntervalSet s = random_strided_set(rng, w);
    const int wanted = random_value(rng);
    const auto pred = [wanted](int v) { return v != wanted; };
    IntervalSet expected;
    Segs expected_pieces;
    for (const Interval& r : s) {
      expected = expected.unite(d.select(r, pred));
      for (const Seg& run : d.runs(r)) expected_pieces.push_back(run);
    }
    const IntervalSet got = m.select(s, pred);
    ASSERT_NO_THROW(got.check_invariants());
    ASSERT_EQ(got, expected) << "select over " << s.to_string() << " of " << str(m.segments());
    Segs pieces;
    m.for_each_in(s, [&pieces](const Interval& i, int v) { pieces.push_back({i, v}); });
    ASSERT_EQ(pieces, expected_pieces) << "for_each_in over " << s.to_string();
  });
}

TEST(IntervalMap, SetFormsVisitEachSegmentOnceNotEachInterval) {
  Map m;
  m.assign({0, 4000}, 1);
  m.assign({4000, 8000}, 2);
  std::vector<Interval> rows;  // 1000 rows of 3 bytes at a stride of 8
  for (std::uint64_t r = 0; r < 1000; ++r) rows.emplace_back(r * 8, r * 8 + 3);
  const IntervalSet strided = IntervalSet::from_normalized(std::move(rows));
  int calls = 0;
  int reported = 0;
  // Only the segment of value 2 changes: f runs once per segment, the changes once per row there.
  m.update(
      strided,
      [&calls](int v) {
        ++calls;
        return v == 2 ? 3 : v;
      },
      [&reported](const Interval&, int old, int now) {
        EXPECT_EQ(old, 2);
        EXPECT_EQ(now, 3);
        ++reported;
      });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(reported, 500);
  EXPECT_EQ(m.segment_count(), 1U + 2U * 500U);  // 1, then (3, 2) for each of the 500 rows
  calls = 0;
  EXPECT_EQ(m.select(strided,
                     [&calls](int v) {
                       ++calls;
                       return v == 1;
                     }),
            strided.intersect(Interval{0, 4000}));
  EXPECT_EQ(calls, 1 + 500);  // once per segment an interval of the set overlaps
  EXPECT_NO_THROW(m.check_invariants());
}

TEST(IntervalMap, AThrowingSetUpdateLeavesTheMapUnchanged) {
  Map m;
  m.assign({0, 10}, 1);
  m.assign({10, 20}, 2);
  const Map before = m;
  EXPECT_THROW(m.update(IntervalSet{{2, 4}, {6, 8}, {12, 14}},
                        [](int v) {
                          if (v == 2) throw std::runtime_error("refused");
                          return 5;
                        }),
               std::runtime_error);
  EXPECT_EQ(m, before);
  EXPECT_THROW(m.update(
                   IntervalSet{{2, 4}, {12, 14}}, [](int v) { return v + 1; },
                   [](const Interval&, int, int now) {
                     if (now == 3) throw std::runtime_error("refused");
                   }),
               std::runtime_error);
  EXPECT_EQ(m, before);
  EXPECT_NO_THROW(m.check_invariants());
}

TEST(IntervalMapProperty, QueryAndForEachInClipLikeOracle) {
  for_each_case(6, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    populate(rng, w, m, d);
    const Interval r = oracle::random_interval(rng, w);
    const Segs expected = d.runs(r);
    ASSERT_EQ(m.query(r), expected) << "query " << r.to_string() << " of " << str(m.segments());
    Segs seen;
    m.for_each_in(r, [&seen](const Interval& i, int v) { seen.push_back({i, v}); });
    ASSERT_EQ(seen, expected) << "for_each_in " << r.to_string();
  });
}

TEST(IntervalMapProperty, AtMatchesOracleEverywhere) {
  for_each_case(7, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    populate(rng, w, m, d);
    const std::uint64_t lo = w.base == 0 ? 0 : w.base - 1;
    for (std::uint64_t o = lo;; ++o) {
      ASSERT_EQ(m.at(o), d.at(o)) << "at " << o << " of " << str(m.segments());
      if (o == w.end()) break;
    }
  });
}

TEST(IntervalMapProperty, SelectMatchesOracle) {
  for_each_case(8, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    populate(rng, w, m, d);
    const Interval r = oracle::random_interval(rng, w);
    const int wanted = random_value(rng);
    const auto pred = [wanted](int v) { return v != wanted; };  // several values match
    const IntervalSet s = m.select(r, pred);
    ASSERT_NO_THROW(s.check_invariants());
    ASSERT_EQ(s, d.select(r, pred)) << "select " << r.to_string() << " of " << str(m.segments());
  });
}

TEST(IntervalMapProperty, MixedOperationSequencesMatchOracle) {
  for_each_case(9, [](std::mt19937_64& rng, const oracle::Window& w, SmallChunkMap& m,
                      oracle::DenseMap<int>& d) {
    const Interval r = oracle::random_interval(rng, w);
    const int v = random_value(rng);
    switch (rng() % 4) {
      case 0:
        m.assign(r, v);
        d.assign(r, v);
        break;
      case 1:
        m.update(r, [v](int x) { return (x + v) % kValues; });
        d.update(r, [v](int x) { return (x + v) % kValues; });
        break;
      case 2:
        m.update_or_insert(r, [v](std::optional<int> x) { return x ? *x : v; });
        d.update_or_insert(r, [v](std::optional<int> x) { return x ? *x : v; });
        break;
      default:
        m.erase(r);
        d.erase(r);
        break;
    }
    expect_same(m, d, "step on " + r.to_string());
  });
}

}  // namespace
}  // namespace unimem
