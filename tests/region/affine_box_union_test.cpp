// AffineBoxUnion (region/affine_box_union.hpp): the byte union of affine parts
// over boxes, checked against a dense bitmap of every point's bytes (those
// below offset 0 dropped), with fixed seeds.
#include "region/affine_box_union.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "region/oracle.hpp"

namespace unimem {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

struct Part {
  std::int64_t constant = 0;
  std::vector<BoxTerm> terms;
  std::uint32_t width = 1;
};

/// The bitmap oracle's window: the random parts stay below byte 4096.
constexpr oracle::Window kWindow{0, 4096};

/// Marks the bytes constant + sum(coefficient * x) + [0, width) for every point of part's box,
/// those below offset 0 dropped.
void mark(const Part& part, oracle::DenseSet& bytes) {
  for (const BoxTerm& t : part.terms) {
    if (t.coefficient != 0 && t.upper < t.lower) return;  // empty box
  }
  std::vector<std::int64_t> x(part.terms.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = part.terms[i].lower;
  while (true) {
    std::int64_t f = part.constant;
    for (std::size_t i = 0; i < x.size(); ++i) f += part.terms[i].coefficient * x[i];
    for (std::int64_t b = std::max<std::int64_t>(f, 0); b < f + part.width; ++b) {
      bytes.set(static_cast<std::uint64_t>(b), true);
    }
    std::size_t k = 0;
    for (; k < x.size(); ++k) {
      // A zero coefficient contributes nothing: its (maybe empty) range is not enumerated.
      if (part.terms[k].coefficient != 0 && x[k] < part.terms[k].upper) {
        ++x[k];
        break;
      }
      x[k] = part.terms[k].lower;
    }
    if (k == x.size()) break;
  }
}

IntervalSet oracle_bytes(const std::vector<Part>& parts) {
  oracle::DenseSet bytes(kWindow);
  for (const Part& p : parts) mark(p, bytes);
  return bytes.to_interval_set();
}

IntervalSet unite(const std::vector<Part>& parts, std::uint64_t max_intervals, bool& exact) {
  AffineBoxUnion u;
  for (const Part& p : parts) u.add(p.constant, p.terms, p.width);
  exact = true;
  return u.bytes(max_intervals, exact);
}

/// Random parts over four variables whose coefficients come from a small pool,
/// so that parts often share variables and coefficients (the case the union of
/// boxes is for).
std::vector<Part> random_parts(std::mt19937& rng) {
  auto pick = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::int64_t pool[] = {1, 4, 16, 40, -4, 0};
  std::vector<Part> parts(static_cast<std::size_t>(pick(1, 10)));
  const std::int64_t width = pick(1, 4);
  for (Part& p : parts) {
    p.constant = pick(-30, 200);
    p.width = static_cast<std::uint32_t>(pick(0, 3) == 0 ? pick(1, 8) : width);
    std::vector<std::uint64_t> vars = {0, 1, 2, 3};
    std::shuffle(vars.begin(), vars.end(), rng);
    const auto count = static_cast<std::size_t>(pick(0, 3));
    for (std::size_t i = 0; i < count; ++i) {
      BoxTerm t;
      t.var = vars[i];
      t.coefficient = pool[pick(0, 5)];
      t.lower = pick(-3, 10);
      t.upper = t.lower + pick(-1, 8);  // sometimes empty
      p.terms.push_back(t);
    }
  }
  return parts;
}

std::string describe(const std::vector<Part>& parts) {
  std::string s;
  for (const Part& p : parts) {
    s += std::to_string(p.constant);
    for (const BoxTerm& t : p.terms) {
      s += " + " + std::to_string(t.coefficient) + "*v" + std::to_string(t.var) + "[" +
           std::to_string(t.lower) + ".." + std::to_string(t.upper) + "]";
    }
    s += " [" + std::to_string(p.width) + " B]; ";
  }
  return s;
}

TEST(AffineBoxUnion, RandomPartsMatchTheBitmapOracle) {
  for (std::uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Part> parts = random_parts(rng);
    SCOPED_TRACE("seed=" + std::to_string(seed) + ": " + describe(parts));
    bool exact = false;
    const IntervalSet got = unite(parts, kUnlimited, exact);
    EXPECT_TRUE(exact);
    EXPECT_EQ(got, oracle_bytes(parts)) << got.to_string();
  }
}

TEST(AffineBoxUnion, AClearedUnionUsedAgainMatchesTheBitmapOracle) {
  // One union for every seed, cleared between them (as the kernel analysis reuses one per
  // launch partition): each seed's bytes are its parts' alone, with a small limit on every
  // third seed so that boxes are deferred too.
  AffineBoxUnion u;
  for (std::uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Part> parts = random_parts(rng);
    SCOPED_TRACE("seed=" + std::to_string(seed) + ": " + describe(parts));
    const std::uint64_t limit = seed % 3 == 0 ? 4 : kUnlimited;
    u.clear();
    for (const Part& p : parts) u.add(p.constant, p.terms, p.width);
    bool exact = true;
    const IntervalSet got = u.bytes(limit, exact);
    bool fresh_exact = false;
    EXPECT_EQ(got, unite(parts, limit, fresh_exact)) << got.to_string();
    EXPECT_EQ(exact, fresh_exact);
    if (limit == kUnlimited) {
      EXPECT_EQ(got, oracle_bytes(parts)) << got.to_string();
    }
  }
}

TEST(AffineBoxUnion, AnIntervalLimitGivesASupersetFlaggedInexact) {
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Part> parts = random_parts(rng);
    SCOPED_TRACE("seed=" + std::to_string(seed) + ": " + describe(parts));
    bool exact = false;
    const IntervalSet got = unite(parts, 2, exact);
    const IntervalSet want = oracle_bytes(parts);
    if (exact) {
      EXPECT_EQ(got, want);
    } else {
      EXPECT_TRUE(got.contains(want)) << got.to_string() << " misses " << want.to_string();
    }
  }
}

TEST(AffineBoxUnion, PartsShiftedByTheirExtentMakeOneInterval) {
  // Rows 0..3 of ten 4-byte elements: columns 1..8 (interior), 0 and 9
  // (boundaries).
  const std::vector<Part> parts = {
      {4, {{0, 40, 0, 3}, {1, 4, 0, 7}}, 4},
      {0, {{0, 40, 0, 3}}, 4},
      {36, {{0, 40, 0, 3}}, 4},
  };
  bool exact = false;
  EXPECT_EQ(unite(parts, kUnlimited, exact), IntervalSet(Interval{0, 160}));
  EXPECT_TRUE(exact);
}

TEST(AffineBoxUnion, EmptyBoxesAddNothingAndZeroCoefficientsAreIgnored) {
  AffineBoxUnion u;
  u.add(0, std::vector<BoxTerm>{{0, 4, 3, 2}},
        4);  // empty range of a used variable
  u.add(100, std::vector<BoxTerm>{{1, 0, 5, 1}},
        4);                                          // unused variable: its range is moot
  u.add(-8, std::vector<BoxTerm>{{0, 4, 0, 3}}, 4);  // bytes below 0 are dropped
  bool exact = true;
  EXPECT_EQ(u.bytes(kUnlimited, exact), IntervalSet::from_unsorted({{0, 8}, {100, 104}}));
  EXPECT_TRUE(exact);
  EXPECT_TRUE(AffineBoxUnion().bytes(kUnlimited, exact).empty());
}

}  // namespace
}  // namespace unimem
