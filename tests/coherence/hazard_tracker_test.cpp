#include "coherence/hazard_tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace unimem {

namespace detail {
struct HazardTrackerTestAccess {
  // Appends a record as is, bypassing the shadowing of record_write.
  static void append(HazardTracker& t, const IntervalSet& bytes, const Event& e, bool write) {
    t.append(bytes, e, write);
  }
  // Sets the largest end the writes' tree's root holds for its subtree.
  static void set_write_root_bound(HazardTracker& t, std::uint64_t end) {
    t.pieces_.at(t.roots_[1]).max_end = end;
  }
};
}  // namespace detail

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

TEST(HazardTracker, CheckInvariantsRejectsBrokenRecords) {
  using Access = detail::HazardTrackerTestAccess;
  auto [w1, s1] = Event::make_manual();
  auto [r1, s2] = Event::make_manual();
  {
    HazardTracker t;
    t.record_read(IntervalSet{{0, 10}}, r1);
    t.record_write(IntervalSet{{5, 15}}, w1);
    t.check_invariants();
    Access::append(t, IntervalSet{{0, 4}}, r1, false);  // a read after the write: fine
    t.check_invariants();
    Access::append(t, IntervalSet{{12, 20}}, w1, true);  // overlaps the older write unshadowed
    EXPECT_THROW(t.check_invariants(), InvariantError);
  }
  {
    HazardTracker t;
    t.record_write(IntervalSet{{0, 10}}, w1);
    Access::set_write_root_bound(t, 8);  // a stale bound would hide bytes [8, 10)
    EXPECT_THROW(t.check_invariants(), InvariantError);
  }
  {
    HazardTracker t;
    Access::append(t, IntervalSet{{0, 10}}, Event{}, false);  // no event to wait for
    EXPECT_THROW(t.check_invariants(), InvariantError);
  }
  s1->complete();
  s2->complete();
}

// Random reads and writes of a 64-byte copy, events finishing at random, against a per-byte
// model: a read must wait for the newest unfinished write of each of its bytes, a write also for
// the unfinished reads recorded since that write. The tracker checks itself after each record.
TEST(HazardTracker, RandomAccessesWaitForWhatAByteModelRequires) {
  constexpr std::uint64_t kBytes = 64;
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    HazardTracker t;
    std::vector<std::shared_ptr<ManualEventState>> states;
    struct ByteModel {
      Event last_write;
      std::vector<Event> reads_since;
    };
    std::vector<ByteModel> model(kBytes);
    for (int op = 0; op < 400; ++op) {
      const std::uint64_t begin = rng() % kBytes;
      const std::uint64_t end = begin + 1 + rng() % (kBytes - begin);
      IntervalSet bytes{{begin, end}};
      if (rng() % 4 == 0 && end + 2 < kBytes) bytes = bytes.unite(IntervalSet{{end + 1, kBytes}});
      const bool write = rng() % 3 == 0;
      EventList deps;
      if (write) {
        t.deps_for_write(bytes, deps);
      } else {
        t.deps_for_read(bytes, deps);
      }
      for (const Interval& i : bytes) {
        for (std::uint64_t x = i.begin; x < i.end; ++x) {
          const ByteModel& m = model[x];
          if (!m.last_write.is_null() && !m.last_write.is_complete()) {
            ASSERT_TRUE(has(deps, m.last_write)) << "op " << op << " byte " << x;
          }
          if (!write) continue;
          for (const Event& r : m.reads_since) {
            if (!r.is_complete()) {
              ASSERT_TRUE(has(deps, r)) << "op " << op << " byte " << x;
            }
          }
        }
      }
      auto [e, s] = Event::make_manual();
      states.push_back(s);
      if (write) {
        ASSERT_NO_THROW(t.record_write(bytes, e)) << "op " << op;
      } else {
        ASSERT_NO_THROW(t.record_read(bytes, e)) << "op " << op;
      }
      for (const Interval& i : bytes) {
        for (std::uint64_t x = i.begin; x < i.end; ++x) {
          if (write) {
            model[x] = ByteModel{e, {}};
          } else {
            model[x].reads_since.push_back(e);
          }
        }
      }
      // Finish a random earlier operation now and then.
      if (rng() % 2 == 0) states[rng() % states.size()]->complete();
      ASSERT_NO_THROW(t.check_invariants()) << "op " << op;
    }
    for (auto& s : states) s->complete();
    EXPECT_TRUE(t.pending().empty());
  }
}

TEST(HazardTracker, UniquePendingKeepsFirstOccurrencesOfUnfinishedEvents) {
  auto [a, sa] = Event::make_manual();
  auto [b, sb] = Event::make_manual();
  auto [c, sc] = Event::make_manual();
  auto [done, sd] = Event::make_manual();
  sd->complete();
  // Many duplicates in shuffled order, a null and a finished event: what add_dependency keeps.
  std::vector<Event> events{c, Event{}, a, done, c, b, a, a, done, b, c};
  std::mt19937_64 rng(7);
  for (int k = 0; k < 50; ++k) events.push_back(events[rng() % 11]);
  EventList expected;
  for (const Event& e : events) add_dependency(expected, e);
  EXPECT_EQ(unique_pending(events), expected);
  EXPECT_EQ(expected, (EventList{c, a, b}));
  sa->complete();
  sb->complete();
  sc->complete();
  EXPECT_TRUE(unique_pending(events).empty());
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// pending_on: the unfinished events of the accesses overlapping the bytes, each once, the same
// set deps_for_write gives.
TEST(HazardTracker, PendingOnGivesTheUnfinishedAccessesOfTheBytesOnce) {
  HazardTracker t;
  auto [r1, s1] = Event::make_manual();
  auto [r2, s2] = Event::make_manual();
  auto [w, sw] = Event::make_manual();
  t.record_read(IntervalSet{{0, 10}}, r1);
  t.record_read(IntervalSet{{20, 30}}, r1);  // the same event twice
  t.record_read(IntervalSet{{40, 50}}, r2);
  t.record_write(IntervalSet{{60, 70}}, w);
  EXPECT_EQ(t.pending_on(IntervalSet{{5, 25}}), EventList{r1});
  EXPECT_EQ(t.pending_on(IntervalSet{{0, 100}}), (EventList{r1, r2, w}));
  EXPECT_TRUE(t.pending_on(IntervalSet{{10, 20}}).empty());
  EXPECT_TRUE(t.pending_on(IntervalSet{}).empty());
  EventList deps;
  t.deps_for_write(IntervalSet{{0, 100}}, deps);
  EXPECT_EQ(deps, t.pending_on(IntervalSet{{0, 100}}));
  s1->complete();
  EXPECT_EQ(t.pending_on(IntervalSet{{0, 100}}), (EventList{r2, w}));
  s2->complete();
  sw->complete();
}

// RuntimeCore::finish waits for every access a tracker held, then drops them by recording order
// without asking their events: older accesses go (even with events that never finished, as
// here), newer ones stay and still order what comes after them.
TEST(HazardTracker, ForgetBeforeDropsOnlyTheAccessesRecordedEarlier) {
  HazardTracker t;
  auto [w1, s1] = Event::make_manual();
  auto [r1, s2] = Event::make_manual();
  auto [w2, s3] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w1);
  t.record_read(IntervalSet{{20, 30}}, r1);
  const std::uint64_t mark = t.next_order();
  t.record_write(IntervalSet{{40, 50}}, w2);
  ASSERT_EQ(t.record_count(), 3U);
  t.forget_before(mark);
  EXPECT_EQ(t.record_count(), 1U);
  EXPECT_EQ(t.pending(), EventList{w2});
  EventList deps;
  t.deps_for_write(IntervalSet{{0, 50}}, deps);
  EXPECT_EQ(deps, EventList{w2});
  t.check_invariants();
  t.forget_before(mark);  // nothing older left: no change
  EXPECT_EQ(t.record_count(), 1U);
  t.forget_before(t.next_order());  // everything: the storage stays for the next accesses
  EXPECT_EQ(t.record_count(), 0U);
  EXPECT_TRUE(t.pending().empty());
  EXPECT_GT(t.capacity_bytes(), 0U);
  t.record_write(IntervalSet{{0, 10}}, w1);
  deps.clear();
  t.deps_for_read(IntervalSet{{5, 6}}, deps);
  EXPECT_EQ(deps, EventList{w1});
  t.check_invariants();
  s1->complete();
  s2->complete();
  s3->complete();
}

// A tracker reused by another buffer (TrackerPool) starts empty with its storage: a thousand
// accesses recorded again need no more room than the first thousand did.
TEST(HazardTracker, ClearKeepsTheStorageForTheNextAccesses) {
  HazardTracker t;
  std::vector<std::shared_ptr<ManualEventState>> states;
  const auto record_rows = [&] {
    for (std::uint64_t k = 0; k < 1000; ++k) {
      auto [e, s] = Event::make_manual();
      states.push_back(s);
      t.record_read(IntervalSet{{k * 64, k * 64 + 32}}, e);
    }
  };
  record_rows();
  const std::size_t bytes = t.capacity_bytes();
  EXPECT_EQ(t.record_count(), 1000U);
  for (auto& s : states) s->complete();
  states.clear();
  t.clear();
  EXPECT_EQ(t.record_count(), 0U);
  EXPECT_TRUE(t.pending().empty());
  EXPECT_EQ(t.capacity_bytes(), bytes);
  record_rows();
  EXPECT_EQ(t.capacity_bytes(), bytes);
  EXPECT_EQ(t.record_count(), 1000U);
  t.check_invariants();
  for (auto& s : states) s->complete();
}

}  // namespace
}  // namespace unimem
