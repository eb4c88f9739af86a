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
  // Sweeps the run's dead nodes now (as a tracker does once half of the run is dead).
  static void compact_run(HazardTracker& t) { t.compact_run(); }
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

// A periodic replay's chains start from every access the trackers hold (append_held_events):
// what a write of every byte waits for, the writes its ordered reads cover too, none shadowed
// or finished.
TEST(HazardTracker, HeldEventsAreEveryUnfinishedAccessItHolds) {
  HazardTracker t;
  auto [w, sw] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  auto [r2, sr2] = Event::make_manual();
  auto [w2, sw2] = Event::make_manual();
  auto [old, sold] = Event::make_manual();
  auto [w3, sw3] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w);
  EventList deps;
  t.deps_for_read(IntervalSet{{0, 10}}, deps);
  t.record_ordered_read(IntervalSet{{0, 10}}, r);  // covers w: a write waits for r only
  t.record_read(IntervalSet{{20, 30}}, r2);
  t.record_write(IntervalSet{{40, 50}}, w2);
  t.record_write(IntervalSet{{60, 70}}, old);
  t.record_write(IntervalSet{{60, 70}}, w3);  // shadows old
  EventList held;
  t.append_held_events(held);
  held = first_occurrences(std::move(held));
  EXPECT_EQ(held.size(), 5U);
  for (const Event& e : {w, r, r2, w2, w3}) EXPECT_TRUE(has(held, e));
  EXPECT_FALSE(has(held, old)) << "a shadowed write is no longer held";
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 100}}, deps);
  EXPECT_FALSE(has(deps, w));
  for (const Event& e : deps) EXPECT_TRUE(has(held, e));
  sr2->complete();
  held.clear();
  t.append_held_events(held);
  EXPECT_FALSE(has(held, r2)) << "a finished access is left out";
  EXPECT_TRUE(has(held, w2));
  for (const auto& s : {sw, sr, sw2, sold, sw3}) s->complete();
  held.clear();
  t.append_held_events(held);
  EXPECT_TRUE(held.empty());
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

namespace unimem {
namespace {

// Leaving out writes an ordered read waited for (HazardTracker::deps_for_write). Each case
// below would wait for too little under a rule that skipped one of its conditions.

// A read after the query for its writers: a later write waits for the read only, which waited
// for the writer (two ping-pong kernels: one event per launch instead of two).
TEST(HazardTrackerOrderedReads, AWriteAfterAnOrderedReadWaitsForTheReadOnly) {
  HazardTracker t;
  auto [w, sw] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w);
  EventList deps;
  t.deps_for_read(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, EventList{w});
  t.record_ordered_read(IntervalSet{{0, 10}}, r);  // r waits for w
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, EventList{r});
  // pending_on (waiting before a copy goes away) still names both.
  EXPECT_EQ(t.pending_on(IntervalSet{{0, 10}}), (EventList{w, r}));
  // Already listed counts as waited for: the writer is left out too.
  deps = {r};
  t.deps_for_write(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, EventList{r});
  // Once the read finished, it is not in the list, so the writer is.
  sr->complete();
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, EventList{w});
  sw->complete();
}

// A read recorded without its query (record_read) promises nothing: its writer stays.
TEST(HazardTrackerOrderedReads, APlainReadKeepsItsWriter) {
  HazardTracker t;
  auto [w, sw] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w);
  EventList deps;
  t.deps_for_read(IntervalSet{{0, 10}}, deps);
  t.record_read(IntervalSet{{0, 10}}, r);
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, (EventList{w, r}));
  sw->complete();
  sr->complete();
}

// The query must cover the read, and nothing may be recorded between them: otherwise the read
// may not have waited for a writer of its bytes, and that writer stays in the list.
TEST(HazardTrackerOrderedReads, AReadNotCoveredByTheLastQueryKeepsItsWriters) {
  auto [w1, s1] = Event::make_manual();
  auto [w2, s2] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  {
    // Bytes beyond the query: [5, 10) was never asked for.
    HazardTracker t;
    t.record_write(IntervalSet{{0, 10}}, w1);
    EventList deps;
    t.deps_for_read(IntervalSet{{0, 5}}, deps);
    t.record_ordered_read(IntervalSet{{0, 10}}, r);
    deps.clear();
    t.deps_for_write(IntervalSet{{0, 10}}, deps);
    EXPECT_EQ(deps, (EventList{w1, r}));
  }
  {
    // A write recorded after the query (which found nothing to wait for) and before the read.
    HazardTracker t;
    EventList deps;
    t.deps_for_read(IntervalSet{{0, 10}}, deps);
    EXPECT_TRUE(deps.empty());
    t.record_write(IntervalSet{{0, 10}}, w2);
    t.record_ordered_read(IntervalSet{{0, 10}}, r);
    t.deps_for_write(IntervalSet{{0, 10}}, deps);
    EXPECT_EQ(deps, (EventList{w2, r}));
  }
  {
    // A query of another tracker's shape: a wider one covers the read, a later one replaces it.
    HazardTracker t;
    t.record_write(IntervalSet{{0, 10}}, w1);
    EventList deps;
    t.deps_for_read(IntervalSet{{0, 10}}, deps);
    t.deps_for_read(IntervalSet{{20, 30}}, deps);
    t.record_ordered_read(IntervalSet{{0, 10}}, r);
    deps.clear();
    t.deps_for_write(IntervalSet{{0, 10}}, deps);
    EXPECT_EQ(deps, (EventList{w1, r}));
  }
  s1->complete();
  s2->complete();
  sr->complete();
}

// A read waited only for the writers of its own bytes: a write elsewhere in the query stays, as
// does a write recorded after the read (ordered after it, not before).
TEST(HazardTrackerOrderedReads, OnlyWritersSharingBytesWithTheReadAreLeftOut) {
  HazardTracker t;
  auto [w1, s1] = Event::make_manual();
  auto [w3, s3] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  auto [w4, s4] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w1);
  t.record_write(IntervalSet{{10, 20}}, w3);
  EventList deps;
  t.deps_for_read(IntervalSet{{0, 10}}, deps);
  EXPECT_EQ(deps, EventList{w1});
  t.record_ordered_read(IntervalSet{{0, 10}}, r);
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 20}}, deps);
  EXPECT_EQ(deps, (EventList{w3, r}));  // w1 through r
  // A newer write of part of the read's bytes cuts it to [5, 10); w4 names only r.
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 5}}, deps);
  EXPECT_EQ(deps, EventList{r});
  t.record_write(IntervalSet{{0, 5}}, w4);
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 20}}, deps);
  EXPECT_EQ(deps, (EventList{w3, r, w4}));  // w1 ([5, 10) left) through r; w4 is newer than r
  s1->complete();
  s3->complete();
  sr->complete();
  s4->complete();
}

// A read whose bytes were all overwritten since no longer shares bytes with its old writer, and
// a write that did not wait for it is newer: both stay.
TEST(HazardTrackerOrderedReads, AReadCutAwayFromItsWriterNoLongerCoversIt) {
  HazardTracker t;
  auto [w1, s1] = Event::make_manual();
  auto [w2, s2] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  auto [w5, s5] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w1);
  t.record_write(IntervalSet{{10, 20}}, w2);
  EventList deps;
  t.deps_for_read(IntervalSet{{0, 20}}, deps);
  EXPECT_EQ(deps, (EventList{w1, w2}));
  t.record_ordered_read(IntervalSet{{0, 20}}, r);
  // A write of [0, 10) that waited for nothing (as a relocation's copies wait only for writes):
  // w1 goes, r keeps [10, 20), which w5 does not cover.
  t.record_write(IntervalSet{{0, 10}}, w5);
  deps.clear();
  t.deps_for_write(IntervalSet{{0, 20}}, deps);
  EXPECT_EQ(deps, (EventList{r, w5}));  // w2 through r, w5 itself
  s1->complete();
  s2->complete();
  sr->complete();
  s5->complete();
}

// Wide records (more than 8 intervals: one node over their bounds) are compared byte by byte:
// a read between a strided write's rows waited for none of them.
TEST(HazardTrackerOrderedReads, WideRecordsAreComparedByTheirBytes) {
  std::vector<Interval> rows;
  for (std::uint64_t k = 0; k < 16; ++k) rows.emplace_back(k * 100, k * 100 + 10);
  const IntervalSet strided = IntervalSet::from_normalized(rows);
  auto [w, sw] = Event::make_manual();
  auto [r, sr] = Event::make_manual();
  {
    HazardTracker t;
    t.record_write(strided, w);
    EventList deps;
    t.deps_for_read(IntervalSet{{50, 60}}, deps);  // between rows 0 and 1
    EXPECT_TRUE(deps.empty());
    t.record_ordered_read(IntervalSet{{50, 60}}, r);
    t.deps_for_write(IntervalSet{{0, 2000}}, deps);
    EXPECT_EQ(deps, (EventList{w, r}));
  }
  {
    HazardTracker t;
    t.record_write(strided, w);
    EventList deps;
    t.deps_for_read(IntervalSet{{105, 110}}, deps);  // part of row 1
    EXPECT_EQ(deps, EventList{w});
    t.record_ordered_read(IntervalSet{{105, 110}}, r);
    deps.clear();
    t.deps_for_write(IntervalSet{{0, 2000}}, deps);
    EXPECT_EQ(deps, EventList{r});
  }
  {
    // Both wide: a strided read of other columns of the same rows shares no byte.
    HazardTracker t;
    t.record_write(strided, w);
    std::vector<Interval> others;
    for (std::uint64_t k = 0; k < 16; ++k) others.emplace_back(k * 100 + 20, k * 100 + 30);
    const IntervalSet beside = IntervalSet::from_normalized(others);
    EventList deps;
    t.deps_for_read(beside, deps);
    EXPECT_TRUE(deps.empty());
    t.record_ordered_read(beside, r);
    t.deps_for_write(IntervalSet{{0, 2000}}, deps);
    EXPECT_EQ(deps, (EventList{w, r}));
  }
  sw->complete();
  sr->complete();
}

// The random tests' model: per byte the last write and the reads since (what an access of the
// byte must wait for), and every operation submitted with the list it waited for, so that a list
// can be followed through those waits (what waiting for it reaches).
class ByteModelRun {
 public:
  explicit ByteModelRun(std::uint64_t bytes) : model_(bytes) {}

  // Whether `deps`, the list an access of `bytes` is to wait for, reaches everything the model
  // requires: the last unfinished write of every byte, for a write also every unfinished read
  // since (named in `deps` itself when `reads_named`, else reached through the waits).
  // Counts in left_out() the writes a write's list reached without naming them.
  ::testing::AssertionResult waits_enough(const IntervalSet& bytes, bool write,
                                          const EventList& deps, bool reads_named) {
    const std::vector<const void*> reached = reach(deps);
    const auto waits_for = [&](const Event& e) {
      return std::find(reached.begin(), reached.end(), e.state().get()) != reached.end();
    };
    for (const Interval& i : bytes) {
      for (std::uint64_t x = i.begin; x < i.end; ++x) {
        const Byte& m = model_[x];
        if (!m.last_write.is_null() && !m.last_write.is_complete()) {
          if (!waits_for(m.last_write)) {
            return ::testing::AssertionFailure() << "byte " << x << ": its last write is missed";
          }
          left_out_ += write && !has(deps, m.last_write) ? 1 : 0;
        }
        if (!write) continue;
        for (const Event& r : m.reads_since) {
          if (!r.is_complete() && !(reads_named ? has(deps, r) : waits_for(r))) {
            return ::testing::AssertionFailure() << "byte " << x << ": a read since is missed";
          }
        }
      }
    }
    return ::testing::AssertionSuccess();
  }

  // A new operation on `bytes` that waited for `deps`: its event, now the model's newest access.
  Event submit(const IntervalSet& bytes, bool write, EventList deps) {
    auto [e, s] = Event::make_manual();
    states_.push_back(s);
    events_.push_back(e);
    waited_.push_back(std::move(deps));
    for (const Interval& i : bytes) {
      for (std::uint64_t x = i.begin; x < i.end; ++x) {
        if (write) {
          model_[x] = Byte{e, {}};
        } else {
          model_[x].reads_since.push_back(e);
        }
      }
    }
    return e;
  }

  // Now and then finishes a random earlier operation whose waits have finished.
  void maybe_finish_one(std::mt19937& rng) {
    if (rng() % 2 != 0) return;
    const std::size_t k = rng() % states_.size();
    const EventList& w = waited_[k];
    if (std::all_of(w.begin(), w.end(), [](const Event& d) { return d.is_complete(); })) {
      states_[k]->complete();
    }
  }

  void finish_all() {
    for (auto& s : states_) s->complete();
  }
  [[nodiscard]] const std::vector<Event>& events() const { return events_; }
  [[nodiscard]] int left_out() const { return left_out_; }

 private:
  struct Byte {
    Event last_write;
    std::vector<Event> reads_since;
  };

  // What waiting for `from` reaches, through what each operation waited for.
  [[nodiscard]] std::vector<const void*> reach(const EventList& from) const {
    std::vector<const void*> reached;
    std::vector<Event> todo = from;
    while (!todo.empty()) {
      const Event e = todo.back();
      todo.pop_back();
      if (std::find(reached.begin(), reached.end(), e.state().get()) != reached.end()) continue;
      reached.push_back(e.state().get());
      const auto it = std::find(events_.begin(), events_.end(), e);
      if (it != events_.end()) {
        const EventList& w = waited_[static_cast<std::size_t>(it - events_.begin())];
        todo.insert(todo.end(), w.begin(), w.end());
      }
    }
    return reached;
  }

  std::vector<Byte> model_;
  std::vector<std::shared_ptr<ManualEventState>> states_;
  std::vector<Event> events_;
  std::vector<EventList> waited_;  // per operation, the list it was submitted with
  int left_out_ = 0;
};

// Random ordered reads and writes against the per-byte model (ByteModelRun), where each
// operation waits for the tracker's list and the model's events must be reached through those
// waits; a write's list names every unfinished read since the last write itself.
TEST(HazardTrackerOrderedReads, RandomAccessesWaitTransitivelyForWhatAByteModelRequires) {
  constexpr std::uint64_t kBytes = 64;
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    HazardTracker t;
    ByteModelRun run(kBytes);
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
      ASSERT_TRUE(run.waits_enough(bytes, write, deps, true)) << "op " << op;
      const Event e = run.submit(bytes, write, deps);
      if (write) {
        ASSERT_NO_THROW(t.record_write(bytes, e)) << "op " << op;
      } else {
        ASSERT_NO_THROW(t.record_ordered_read(bytes, e)) << "op " << op;
      }
      run.maybe_finish_one(rng);
      ASSERT_NO_THROW(t.check_invariants()) << "op " << op;
    }
    EXPECT_GT(run.left_out(), 0);  // writes the tracker did not name (the test exercises the rule)
    run.finish_all();
    EXPECT_TRUE(t.pending().empty());
  }
}

// A device reading pivot rows k = 0, 1, 2, ... of another device's half, each kernel waiting for
// the last (floyd-warshall): the reads fold into one record, whose event is the newest.
TEST(HazardTrackerFoldedReads, AChainOfAscendingReadsKeepsOneRecordWithTheNewestEvent) {
  HazardTracker t;
  std::vector<std::shared_ptr<ManualEventState>> states;
  Event previous;
  for (std::uint64_t k = 0; k < 10; ++k) {
    const IntervalSet row{{k * 100, k * 100 + 10}};
    EventList deps;
    t.deps_for_read(row, deps);
    if (!previous.is_null()) deps.push_back(previous);  // the device's last kernel
    auto [e, s] = Event::make_manual();
    states.push_back(s);
    t.record_ordered_read(row, e, deps);
    previous = e;
  }
  EXPECT_EQ(t.record_count(), 1U);
  EXPECT_EQ(t.folded_reads(), 9U);
  EXPECT_EQ(t.run_reads(), 1U);
  EventList deps;
  t.deps_for_write(IntervalSet{{0, 1000}}, deps);
  EXPECT_EQ(deps, EventList{previous});  // which finishes after every read before it
  // A write cutting the first row leaves the other rows to the folded record.
  auto [w, sw] = Event::make_manual();
  t.record_write(IntervalSet{{0, 10}}, w);
  deps.clear();
  t.deps_for_write(IntervalSet{{500, 510}}, deps);
  EXPECT_EQ(deps, EventList{previous});
  EXPECT_NO_THROW(t.check_invariants());
  for (auto& s : states) s->complete();
  sw->complete();
  EXPECT_TRUE(t.pending().empty());
}

TEST(HazardTrackerFoldedReads, AReadWhoseEventDidNotWaitForTheNewestReadGetsItsOwnRecord) {
  HazardTracker t;
  auto [a, sa] = Event::make_manual();
  auto [b, sb] = Event::make_manual();
  auto [c, sc] = Event::make_manual();
  auto [d, sd] = Event::make_manual();
  auto [f, sf] = Event::make_manual();
  t.record_ordered_read(IntervalSet{{0, 10}}, a, EventList{});
  t.record_ordered_read(IntervalSet{{20, 30}}, b, EventList{c});  // waited for c, not a
  EXPECT_EQ(t.record_count(), 2U);
  EXPECT_EQ(t.folded_reads(), 0U);
  EventList deps;
  t.deps_for_write(IntervalSet{{0, 30}}, deps);
  EXPECT_EQ(deps, (EventList{a, b}));
  // Touching the last node after waiting for its read: the node grows.
  t.record_ordered_read(IntervalSet{{30, 40}}, c, EventList{b});
  EXPECT_EQ(t.record_count(), 2U);
  EXPECT_EQ(t.folded_reads(), 1U);
  deps.clear();
  t.deps_for_write(IntervalSet{{25, 26}}, deps);
  EXPECT_EQ(deps, EventList{c});
  // A finished newest read may be folded into without being waited for.
  sc->complete();
  t.record_ordered_read(IntervalSet{{50, 60}}, d, EventList{});
  EXPECT_EQ(t.folded_reads(), 2U);
  // Not ascending: a record of its own (in the tree).
  t.record_ordered_read(IntervalSet{{55, 65}}, f, EventList{d});
  EXPECT_EQ(t.folded_reads(), 2U);
  EXPECT_EQ(t.record_count(), 3U);
  // The plain record_ordered_read never folds.
  auto [g, sg] = Event::make_manual();
  t.record_ordered_read(IntervalSet{{100, 110}}, g);
  EXPECT_EQ(t.folded_reads(), 2U);
  EXPECT_NO_THROW(t.check_invariants());
  for (auto* s : {&sa, &sb, &sd, &sf, &sg}) (*s)->complete();
}

// floyd-warshall's rows are adjacent: one node grows over them, and a write cuts it as any node.
TEST(HazardTrackerFoldedReads, AdjacentRowsGrowOneNodeThatAWriteCuts) {
  HazardTracker t;
  std::vector<std::shared_ptr<ManualEventState>> states;
  Event previous;
  for (std::uint64_t k = 0; k < 1000; ++k) {
    EventList waited;
    if (!previous.is_null()) waited.push_back(previous);
    auto [e, s] = Event::make_manual();
    states.push_back(s);
    t.record_ordered_read(IntervalSet{{k * 64, (k + 1) * 64}}, e, waited);
    previous = e;
  }
  EXPECT_EQ(t.record_count(), 1U);
  EXPECT_EQ(t.folded_reads(), 999U);
  auto [w, sw] = Event::make_manual();
  EventList deps;
  t.deps_for_write(IntervalSet{{500 * 64, 501 * 64}}, deps);
  EXPECT_EQ(deps, EventList{previous});
  t.record_write(IntervalSet{{500 * 64, 501 * 64}}, w);
  EXPECT_NO_THROW(t.check_invariants());
  deps.clear();
  t.deps_for_write(IntervalSet{{500 * 64, 501 * 64}}, deps);
  EXPECT_EQ(deps, EventList{w});
  deps.clear();
  t.deps_for_write(IntervalSet{{700 * 64, 701 * 64}}, deps);
  EXPECT_EQ(deps, EventList{previous});
  for (auto& s : states) s->complete();
  sw->complete();
  EXPECT_TRUE(t.pending().empty());
}

// A write cutting a folded node leaves the rest in the reads' tree, possibly beyond the run's
// last node once the cut node was swept out: no fold may then add a node touching it.
TEST(HazardTrackerFoldedReads, ARecordWithNodesInTheTreeTakesNoFold) {
  HazardTracker t;
  auto [a, sa] = Event::make_manual();
  auto [b, sb] = Event::make_manual();
  auto [w, sw] = Event::make_manual();
  auto [c, sc] = Event::make_manual();
  t.record_ordered_read(IntervalSet{{100, 150}}, a, EventList{});
  t.record_ordered_read(IntervalSet{{160, 191}}, b, EventList{a});  // folded: [100, 150) [160, 191)
  EXPECT_EQ(t.folded_reads(), 1U);
  t.record_write(IntervalSet{{155, 170}}, w);       // [170, 191) goes to the tree
  detail::HazardTrackerTestAccess::compact_run(t);  // the run's last node is [100, 150) again
  EXPECT_NO_THROW(t.check_invariants());
  t.record_ordered_read(IntervalSet{{191, 192}}, c, EventList{b});
  EXPECT_EQ(t.folded_reads(), 1U);
  EXPECT_NO_THROW(t.check_invariants());
  EventList deps;
  t.deps_for_write(IntervalSet{{100, 200}}, deps);
  EXPECT_EQ(deps, (EventList{b, w, c}));
  for (auto* s : {&sa, &sb, &sw, &sc}) (*s)->complete();
}

TEST(HazardTrackerFoldedReads, AFoldedRecordStopsGrowingAtItsNodeLimit) {
  HazardTracker t;
  std::vector<std::shared_ptr<ManualEventState>> states;
  Event previous;
  for (std::uint64_t k = 0; k < 100; ++k) {
    EventList waited;
    if (!previous.is_null()) waited.push_back(previous);
    auto [e, s] = Event::make_manual();
    states.push_back(s);
    t.record_ordered_read(IntervalSet{{k * 10, k * 10 + 5}}, e, waited);
    previous = e;
  }
  EXPECT_EQ(t.record_count(), 2U);  // 64 nodes, then a new record for the other 36
  EXPECT_EQ(t.folded_reads(), 98U);
  EXPECT_NO_THROW(t.check_invariants());
  for (auto& s : states) s->complete();
}

// RandomAccessesWaitTransitivelyForWhatAByteModelRequires with reads that often continue a run
// of ascending reads and often wait for the operation before them (a device's last kernel), so
// that they fold: whatever a byte's model requires is still reached through the waits.
TEST(HazardTrackerFoldedReads, RandomFoldedReadsWaitTransitivelyForWhatAByteModelRequires) {
  constexpr std::uint64_t kBytes = 256;
  std::uint64_t folds = 0;
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    HazardTracker t;
    ByteModelRun run(kBytes);
    std::uint64_t cursor = 0;  // where the ascending reads go on
    for (int op = 0; op < 400; ++op) {
      const bool write = rng() % 6 == 0;
      std::uint64_t begin = rng() % kBytes;
      std::uint64_t end = begin + 1 + rng() % std::min<std::uint64_t>(16, kBytes - begin);
      if (!write && rng() % 6 != 0) {         // the next pivot row
        const std::uint64_t gap = rng() % 4;  // 0: touching the read before
        cursor = cursor + gap >= kBytes - 4 ? 0 : cursor + gap;
        begin = cursor;
        end = begin + 1 + rng() % 3;
        cursor = end;
      }
      const IntervalSet bytes{{begin, end}};
      EventList deps;
      if (write) {
        t.deps_for_write(bytes, deps);
      } else {
        t.deps_for_read(bytes, deps);
      }
      ASSERT_TRUE(run.waits_enough(bytes, write, deps, false)) << "op " << op;
      // Often after the operation before it too, as a kernel after its device's last one.
      if (!run.events().empty() && rng() % 4 != 0) deps.push_back(run.events().back());
      const Event e = run.submit(bytes, write, deps);
      if (write) {
        ASSERT_NO_THROW(t.record_write(bytes, e)) << "op " << op;
      } else {
        ASSERT_NO_THROW(t.record_ordered_read(bytes, e, deps)) << "op " << op;
      }
      run.maybe_finish_one(rng);
      ASSERT_NO_THROW(t.check_invariants()) << "op " << op;
    }
    folds += t.folded_reads();
    run.finish_all();
    EXPECT_TRUE(t.pending().empty());
  }
  EXPECT_GT(folds, 200U);  // the test exercises the fold
}

}  // namespace
}  // namespace unimem
