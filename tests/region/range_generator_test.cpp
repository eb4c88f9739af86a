#include "region/range_generator.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace unimem {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// Dense bitmap oracle: marks every byte of every point, then reads maximal runs back. With clip,
// bytes below offset 0 are skipped (BelowZero::clip); otherwise no index may be negative.
IntervalSet bitmap_oracle(const AffineAccess& a, std::uint64_t element_size, bool clip = false) {
  for (const AffineTerm& t : a.terms) {
    if (t.upper < t.lower) return {};
  }
  std::vector<bool> bytes;
  std::vector<std::int64_t> x(a.terms.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = a.terms[i].lower;
  while (true) {
    std::int64_t f = a.constant;
    for (std::size_t i = 0; i < x.size(); ++i) f += a.terms[i].coefficient * x[i];
    if (!clip) {
      EXPECT_GE(f, 0) << "test generator made a negative index";
    }
    const std::int64_t first = f * static_cast<std::int64_t>(element_size);
    const std::int64_t last = first + static_cast<std::int64_t>(element_size);  // exclusive
    if (last > 0) {
      const auto begin = static_cast<std::uint64_t>(std::max<std::int64_t>(first, 0));
      const auto end = static_cast<std::uint64_t>(last);
      if (bytes.size() < end) bytes.resize(end, false);
      for (std::uint64_t b = begin; b < end; ++b) bytes[b] = true;
    }
    std::size_t k = 0;
    for (; k < x.size(); ++k) {
      if (x[k] < a.terms[k].upper) {
        ++x[k];
        break;
      }
      x[k] = a.terms[k].lower;
    }
    if (k == x.size()) break;
  }
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

TEST(RangeGenerator, EmptyDomainGivesEmptyExactSet) {
  const AffineAccess a{0, {{1, 0, 9}, {10, 5, 4}}};
  const GeneratedRanges r = generate_ranges(a, 4, kUnlimited);
  EXPECT_TRUE(r.exact);
  EXPECT_TRUE(r.bytes.empty());
  EXPECT_TRUE(enumerate_ranges_naive(a, 4).empty());
}

TEST(RangeGenerator, ConstantAccessIsOneElement) {
  const GeneratedRanges r = generate_ranges(AffineAccess{5, {}}, 4, 0);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({20, 24}));
}

TEST(RangeGenerator, SingleValueDomainIsOneElement) {
  const GeneratedRanges r = generate_ranges(AffineAccess{1, {{7, 3, 3}, {-2, 4, 4}}}, 8, 1);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({(1 + 21 - 8) * 8, (1 + 21 - 8 + 1) * 8}));
}

TEST(RangeGenerator, ContiguousRowIsOneInterval) {
  const GeneratedRanges r = generate_ranges(AffineAccess{100, {{1, 0, 255}}}, 4, 1);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({400, 400 + 256 * 4}));
}

TEST(RangeGenerator, TileOfMatrixIsOneIntervalPerRow) {
  // Rows 2..4, columns 10..19 of a 100-column float matrix.
  const AffineAccess a{0, {{100, 2, 4}, {1, 10, 19}}};
  const GeneratedRanges r = generate_ranges(a, 4, 3);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({{840, 880}, {1240, 1280}, {1640, 1680}}));
  EXPECT_EQ(r.bytes, enumerate_ranges_naive(a, 4));
}

TEST(RangeGenerator, FullRowsCoalesceIntoOneInterval) {
  // Columns 0..99 of rows 3..7 of a 100-column matrix: Fig. 10 merges the row dimension.
  const GeneratedRanges r = generate_ranges(AffineAccess{0, {{1, 0, 99}, {100, 3, 7}}}, 2, 1);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({600, 1600}));
}

TEST(RangeGenerator, NegativeCoefficientReversesTheRange) {
  const AffineAccess a{20, {{-1, 0, 5}}};
  const GeneratedRanges r = generate_ranges(a, 1, 1);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({15, 21}));
  const AffineAccess strided{50, {{-10, 1, 3}}};
  EXPECT_EQ(generate_ranges(strided, 1, kUnlimited).bytes,
            IntervalSet({{20, 21}, {30, 31}, {40, 41}}));
}

TEST(RangeGenerator, ZeroCoefficientIsIgnored) {
  const AffineAccess a{0, {{0, -1000, 1000}, {3, 0, 2}}};
  const GeneratedRanges r = generate_ranges(a, 1, 3);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({{0, 1}, {3, 4}, {6, 7}}));
}

TEST(RangeGenerator, OverlappingStridesAreUnitedExactly) {
  const AffineAccess a{0, {{2, 0, 4}, {3, 0, 3}}};
  const GeneratedRanges r = generate_ranges(a, 1, kUnlimited);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, bitmap_oracle(a, 1));
  // 2x + 3y covers 0, 2..17 except 1 and 16: {0} and [2, 16) and [17, 18).
  EXPECT_EQ(r.bytes, IntervalSet({{0, 1}, {2, 16}, {17, 18}}));
}

TEST(RangeGenerator, CommensurateStridesFuseIntoOneProgression) {
  // 10x + 20y with x in [0, 2], y in [0, 3] is 0, 10, ..., 80: nine elements, which fit a limit of
  // nine intervals although the domain has twelve points.
  const AffineAccess a{0, {{10, 0, 2}, {20, 0, 3}}};
  const GeneratedRanges r = generate_ranges(a, 4, 9);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes.interval_count(), 9U);
  EXPECT_EQ(r.bytes, bitmap_oracle(a, 4));
}

TEST(RangeGenerator, DsomFig11StencilWriteRangeHasTwoSegments) {
  // DSOM (000_7b2a075be0870d8f.txt) Fig. 8 line 17 with a 4x4 grid in a 6x6 haloed grid split into
  // upper and lower halves (Fig. 11): LCOLS = 4, LROWS = 2, ws_x = 1, the upper device has w_y = 0.
  // f = LROWS*(ws_x*LCOLS+2)*w_y + LCOLS*w_x + (ws_x*LCOLS+2)*l_y + l_x + ws_x*LCOLS + 3.
  const AffineAccess upper{7, {{12, 0, 0}, {4, 0, 0}, {6, 0, 1}, {1, 0, 3}}};
  const GeneratedRanges r = generate_ranges(upper, 4, kUnlimited);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet({{7 * 4, 11 * 4}, {13 * 4, 17 * 4}}));
  const AffineAccess lower{7, {{12, 1, 1}, {4, 0, 0}, {6, 0, 1}, {1, 0, 3}}};
  EXPECT_EQ(generate_ranges(lower, 4, kUnlimited).bytes,
            IntervalSet({{19 * 4, 23 * 4}, {25 * 4, 29 * 4}}));
}

TEST(RangeGenerator, LimitExceededGivesCoveringInterval) {
  const AffineAccess column{3, {{1000, 0, 99}}};  // one element in each of 100 rows
  const GeneratedRanges over = generate_ranges(column, 8, 99);
  EXPECT_FALSE(over.exact);
  EXPECT_EQ(over.bytes, IntervalSet({3 * 8, (3 + 99 * 1000 + 1) * 8}));
  const GeneratedRanges exact = generate_ranges(column, 8, 100);
  EXPECT_TRUE(exact.exact);
  EXPECT_EQ(exact.bytes.interval_count(), 100U);
  EXPECT_TRUE(over.bytes.contains(exact.bytes));
}

TEST(RangeGenerator, NegativeIndexIsAnErrorNamingIt) {
  const AffineAccess a{2, {{-1, 0, 5}}};
  try {
    (void)generate_ranges(a, 4, kUnlimited);
    FAIL() << "expected PreconditionError";
  } catch (const PreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("element index -3"));
    EXPECT_THAT(e.what(), HasSubstr("2 - 1*x0[0..5]"));
  }
  EXPECT_THROW((void)enumerate_ranges_naive(a, 4), PreconditionError);
}

TEST(RangeGenerator, OverflowIsAnError) {
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW((void)generate_ranges(AffineAccess{0, {{big, 0, 4}}}, 1, kUnlimited),
               PreconditionError);
  EXPECT_THROW((void)generate_ranges(AffineAccess{big, {}}, 2, kUnlimited), PreconditionError);
  EXPECT_THROW(
      (void)generate_ranges(
          AffineAccess{0, {{big, big, big}, {big, big, big}, {big, big, big}, {big, big, big}}}, 1,
          kUnlimited),
      PreconditionError);
  constexpr std::int64_t small = std::numeric_limits<std::int64_t>::min();
  EXPECT_THROW((void)generate_ranges(AffineAccess{0, {{small, small, small}}}, 1, kUnlimited),
               PreconditionError);
}

TEST(RangeGenerator, ZeroElementSizeIsAnError) {
  EXPECT_THROW((void)generate_ranges(AffineAccess{0, {}}, 0, kUnlimited), PreconditionError);
}

TEST(RangeGenerator, NaiveRefusesHugeDomains) {
  EXPECT_THROW(
      (void)enumerate_ranges_naive(AffineAccess{0, {{1, 0, 999}, {1000, 0, 999}}}, 1, 1000),
      PreconditionError);
}

TEST(RangeGenerator, ToStringShowsSignsAndDomains) {
  EXPECT_EQ((AffineAccess{3, {{4, 0, 9}, {-2, 1, 5}}}).to_string(), "3 + 4*x0[0..9] - 2*x1[1..5]");
}

// Random affine accesses; coefficients are small (overlaps, duplicates) or pitch-like (tiles).
AffineAccess random_access(std::mt19937_64& rng, bool allow_negative_index) {
  std::uniform_int_distribution<int> term_count(0, 4);
  std::uniform_int_distribution<int> kind(0, 9);
  AffineAccess a;
  const int n = term_count(rng);
  for (int i = 0; i < n; ++i) {
    AffineTerm t;
    const int k = kind(rng);
    if (k == 0) {
      t.coefficient = 0;
    } else if (k <= 5) {
      t.coefficient = std::uniform_int_distribution<std::int64_t>(-6, 6)(rng);
    } else {
      t.coefficient = std::uniform_int_distribution<std::int64_t>(-80, 80)(rng);
    }
    t.lower = std::uniform_int_distribution<std::int64_t>(-5, 5)(rng);
    t.upper =
        t.lower + std::uniform_int_distribution<std::int64_t>(kind(rng) == 0 ? -1 : 0, 6)(rng);
    a.terms.push_back(t);
  }
  // Shift the constant so the smallest index is 0..9 (or, sometimes, negative).
  std::int64_t lowest = 0;
  for (const AffineTerm& t : a.terms) {
    if (t.upper < t.lower) continue;
    lowest += std::min(t.coefficient * t.lower, t.coefficient * t.upper);
  }
  a.constant = -lowest + std::uniform_int_distribution<std::int64_t>(0, 9)(rng);
  if (allow_negative_index && kind(rng) == 0) {
    a.constant -= std::uniform_int_distribution<std::int64_t>(10, 20)(rng);
  }
  return a;
}

bool has_negative_point(const AffineAccess& a) {
  std::int64_t lowest = a.constant;
  for (const AffineTerm& t : a.terms) {
    if (t.upper < t.lower) return false;
    lowest += std::min(t.coefficient * t.lower, t.coefficient * t.upper);
  }
  return lowest < 0;
}

TEST(RangeGenerator, RandomAccessesMatchBitmapOracle) {
  for (std::uint64_t seed = 1; seed <= 4000; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const AffineAccess a = random_access(rng, true);
    SCOPED_TRACE("access=" + a.to_string());
    const std::uint64_t element_size = std::uniform_int_distribution<std::uint64_t>(1, 8)(rng);
    const std::uint64_t limit = std::uniform_int_distribution<int>(0, 1)(rng) == 0
                                    ? kUnlimited
                                    : std::uniform_int_distribution<std::uint64_t>(0, 60)(rng);
    if (has_negative_point(a)) {
      EXPECT_THROW((void)generate_ranges(a, element_size, limit), PreconditionError);
      EXPECT_THROW((void)enumerate_ranges_naive(a, element_size), PreconditionError);
      continue;
    }
    const IntervalSet oracle = bitmap_oracle(a, element_size);
    EXPECT_EQ(enumerate_ranges_naive(a, element_size), oracle);
    const GeneratedRanges r = generate_ranges(a, element_size, limit);
    r.bytes.check_invariants();
    std::uint64_t points = 1;
    for (const AffineTerm& t : a.terms) points *= static_cast<std::uint64_t>(t.upper - t.lower + 1);
    if (limit == kUnlimited || oracle.empty() || points <= limit) {
      EXPECT_TRUE(r.exact) << "points=" << points << " limit=" << limit;
    }
    if (r.exact) {
      ASSERT_EQ(r.bytes, oracle);
    } else {
      ASSERT_EQ(r.bytes, IntervalSet(oracle.bounds()));
    }
  }
}

TEST(RangeGenerator, ClipDropsBytesBelowZero) {
  // 2 - x0 for x0 in [0, 5]: indices -3..2, element size 4 -> bytes [0, 12).
  const AffineAccess a{2, {{-1, 0, 5}}};
  const GeneratedRanges r = generate_ranges(a, 4, kUnlimited, BelowZero::clip);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.bytes, IntervalSet(Interval{0, 12}));
  // Entirely below 0: empty and exact.
  const GeneratedRanges none =
      generate_ranges(AffineAccess{-100, {{3, 0, 9}}}, 2, kUnlimited, BelowZero::clip);
  EXPECT_TRUE(none.exact);
  EXPECT_TRUE(none.bytes.empty());
  // Limit hit: the covering interval, clipped.
  const GeneratedRanges cover =
      generate_ranges(AffineAccess{-10, {{10, 0, 9}, {1000, 0, 9}}}, 1, 5, BelowZero::clip);
  EXPECT_FALSE(cover.exact);
  EXPECT_EQ(cover.bytes, IntervalSet(Interval{0, 9 * 10 + 9 * 1000 - 10 + 1}));
  // Non-negative accesses are unaffected by the policy.
  const AffineAccess tile{0, {{1, 0, 3}, {100, 0, 2}}};
  EXPECT_EQ(generate_ranges(tile, 4, kUnlimited, BelowZero::clip).bytes,
            generate_ranges(tile, 4, kUnlimited).bytes);
}

TEST(RangeGenerator, ClipRejectsAccessesBeyond64Bits) {
  constexpr std::int64_t small = std::numeric_limits<std::int64_t>::min();
  EXPECT_THROW((void)generate_ranges(AffineAccess{0, {{small, small, small}}}, 1, kUnlimited,
                                     BelowZero::clip),
               PreconditionError);
  EXPECT_THROW(
      (void)generate_ranges(AffineAccess{small, {{1, 0, 4}}}, 4, kUnlimited, BelowZero::clip),
      PreconditionError);
  // Far below 0 but within range: empty, even though the shift in bytes exceeds 64 bits.
  const GeneratedRanges far =
      generate_ranges(AffineAccess{small + 1, {{1, 0, 4}}}, 4, kUnlimited, BelowZero::clip);
  EXPECT_TRUE(far.bytes.empty());
}

TEST(RangeGenerator, RandomClippedAccessesMatchBitmapOracle) {
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    AffineAccess a = random_access(rng, true);
    // Push about half of the accesses partly or wholly below 0.
    a.constant -= std::uniform_int_distribution<std::int64_t>(0, 1)(rng) *
                  std::uniform_int_distribution<std::int64_t>(0, 120)(rng);
    SCOPED_TRACE("access=" + a.to_string());
    const std::uint64_t element_size = std::uniform_int_distribution<std::uint64_t>(1, 8)(rng);
    const std::uint64_t limit = std::uniform_int_distribution<int>(0, 1)(rng) == 0
                                    ? kUnlimited
                                    : std::uniform_int_distribution<std::uint64_t>(0, 60)(rng);
    const IntervalSet oracle = bitmap_oracle(a, element_size, true);
    const GeneratedRanges r = generate_ranges(a, element_size, limit, BelowZero::clip);
    r.bytes.check_invariants();
    if (limit == kUnlimited) {
      EXPECT_TRUE(r.exact);
    }
    if (r.exact) {
      ASSERT_EQ(r.bytes, oracle);
    } else {
      ASSERT_TRUE(r.bytes.contains(oracle));
      ASSERT_LE(r.bytes.interval_count(), 1U);  // the clipped covering interval
    }
  }
}

}  // namespace
}  // namespace unimem
