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
  EXPECT_TRUE(t.pending().empty());
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 10}}, deps);
  EXPECT_TRUE(deps.empty());
}

// Finished records are dropped in passes, each when the list has doubled since the previous one,
// so the list stays within twice its live size (and at least the pass minimum) however many
// accesses are recorded.
TEST(HazardTracker, FinishedRecordsArePrunedInAmortisedPasses) {
  HazardTracker t;
  std::vector<std::shared_ptr<ManualEventState>> live;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    auto [e, s] = Event::make_manual();
    t.record_read(IntervalSet{{i, i + 1}}, e);
    if (i % 10 == 0) {
      live.push_back(s);  // one in ten stays unfinished
    } else {
      s->complete();
    }
    EXPECT_LE(t.record_count(), std::max<std::size_t>(17, 2 * live.size() + 1)) << "i=" << i;
  }
  EXPECT_EQ(t.pending().size(), live.size());
  EventList deps;
  t.deps_for_write(IntervalSet{{0, 1000}}, deps);
  EXPECT_EQ(deps.size(), live.size());
  for (auto& s : live) s->complete();
  EXPECT_TRUE(t.pending().empty());
}

}  // namespace
}  // namespace unimem
