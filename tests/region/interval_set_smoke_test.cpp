#include <gtest/gtest.h>

#include "region/interval_map.hpp"
#include "region/interval_set.hpp"

namespace unimem {
namespace {

TEST(IntervalSetSmoke, UnionOfTouchingIntervalsIsOneInterval) {
  IntervalSet s{{0, 4}, {4, 8}, {10, 12}};
  EXPECT_EQ(s.interval_count(), 2U);
  EXPECT_EQ(s.total_size(), 10U);
}

TEST(IntervalMapSmoke, AssignMergesEqualNeighbours) {
  IntervalMap<int> m({0, 100}, 1);
  m.assign({10, 20}, 2);
  EXPECT_EQ(m.segment_count(), 3U);
  m.assign({10, 20}, 1);
  EXPECT_EQ(m.segment_count(), 1U);
}

}  // namespace
}  // namespace unimem
