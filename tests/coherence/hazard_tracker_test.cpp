#include "coherence/hazard_tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace unimem {
namespace {

bool has(const EventList& l, const Event& e) { return std::find(l.begin(), l.end(), e) != l.end(); }

TEST(HazardTracker, ReadWaitsForOverlappingWritesOnly) {
  HazardTracker t;
  auto [w1, s1] = Event::make_manual();
  auto [w2, s2] = Event::make_manual();
  auto [r1, s3] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w1);
  t.record_write(IntervalSet{{20, 30}}, w2);
  t.record_read(IntervalSet{{5, 25}}, r1);
  EventList deps;
  t.deps_for_read(IntervalSet{{8, 12}}, deps);
  EXPECT_EQ(deps, EventList{w1});  // RAW; the earlier read is no hazard
  deps.clear();
  t.deps_for_write(IntervalSet{{8, 12}}, deps);
  EXPECT_TRUE(has(deps, w1));  // WAW
  EXPECT_TRUE(has(deps, r1));  // WAR
  EXPECT_FALSE(has(deps, w2));
  s1->complete();
  s2->complete();
  s3->complete();
}

TEST(HazardTracker, NewerWriteShadowsOlderAccessesAndFinishedOnesDrop) {
  HazardTracker t;
  auto [w1, s1] = Event::make_manual();
  auto [r1, s2] = Event::make_manual();
  auto [w2, s3] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w1);
  t.record_read(IntervalSet{{0, 10}}, r1);
  t.record_write(IntervalSet{{0, 5}}, w2);
  EventList deps;
  t.deps_for_write(IntervalSet{{0, 5}}, deps);
  EXPECT_EQ(deps, EventList{w2});
  deps.clear();
  t.deps_for_write(IntervalSet{{5, 6}}, deps);
  EXPECT_TRUE(has(deps, w1));
  EXPECT_TRUE(has(deps, r1));
  s1->complete();
  s2->complete();
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, EventList{w2});
  s3->complete();
  t.record_read(IntervalSet{{0, 1}}, Event{});  // prunes
  EXPECT_EQ(t.record_count(), 0u);
  EXPECT_TRUE(t.pending().empty());
}

}  // namespace
}  // namespace unimem
