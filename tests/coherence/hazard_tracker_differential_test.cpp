// HazardTracker (interval tree) against the linear tracker it replaced (linear_hazard_tracker.hpp):
// long random sequences of accesses and queries, events finishing at random times (never before
// the events they waited for), and after every step the same dependencies from both. Reads give
// the same list, as sets and in the same order. A write's list from the tree is the linear one
// with some writes left out (HazardTracker::deps_for_write), and every event
// the linear list names is reached from the tree's through the events each operation of the run
// waited for: what a kernel submitted with either list waits for, transitively, is the same.
// The operations wait for what the tree gives, as the runtime's do, and some break the ordered
// reads' conditions on purpose (a record between the query and the read, bytes outside the
// query, reads recorded without any query).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "coherence/hazard_tracker.hpp"
#include "linear_hazard_tracker.hpp"

namespace unimem {
namespace {

// Seeds: fixed, or UNIMEM_TEST_SEED (the first of `count`) to reproduce a printed one.
std::vector<std::uint32_t> seeds(std::uint32_t first, std::uint32_t count) {
  if (const char* s = std::getenv("UNIMEM_TEST_SEED")) {
    first = static_cast<std::uint32_t>(std::stoul(s));
  }
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

std::vector<const void*> as_set(const EventList& events) {
  std::vector<const void*> out;
  for (const Event& e : events) out.push_back(e.state().get());
  std::sort(out.begin(), out.end(), std::less<const void*>());
  return out;
}

struct Shape {
  std::uint64_t size = 0;      // bytes of the copy
  std::uint32_t max_rows = 0;  // strided accesses have up to this many intervals
  int steps = 0;
  int complete_percent = 0;  // chance that a step finishes some unfinished events
  // > 0: half of the accesses take one of this many fixed blocks (a partition's rows, written
  // again and again: HazardTracker's covering-write shortcut), the launches write a block and
  // read a row of another one (floyd-warshall).
  std::uint64_t blocks = 0;
  // > 0: half of the accesses are of the next of this many rows (wrapping around), so reads come
  // at ascending addresses, the run's case (floyd-warshall's pivot row k = 0, 1, 2, ...).
  std::uint64_t pivot_rows = 0;
};

class Run {
 public:
  Run(std::uint32_t seed, Shape shape) : rng_(seed), shape_(shape) {}

  IntervalSet random_bytes() {
    const std::uint64_t n = shape_.size;
    if (shape_.pivot_rows > 0 && pick(2) == 0) {
      const std::uint64_t len = n / shape_.pivot_rows;
      const std::uint64_t row = pivot_++ % shape_.pivot_rows;
      if (pick(16) == 0) pivot_ += pick(shape_.pivot_rows);  // a jump, now and then backwards
      return IntervalSet(Interval{row * len, (row + 1) * len});
    }
    if (shape_.blocks > 0 && pick(2) == 0) {
      const std::uint64_t b = pick(shape_.blocks);
      const std::uint64_t len = n / shape_.blocks;
      if (pick(4) == 0) {  // a row inside it
        const std::uint64_t row = b * len + pick(len / 8) * 8;
        return IntervalSet(Interval{row, row + 8});
      }
      return IntervalSet(Interval{b * len, (b + 1) * len});
    }
    switch (pick(8)) {
      case 0:
        return IntervalSet{};  // nothing: ignored by record_*, finds nothing
      case 1:
        return IntervalSet(Interval{0, n});
      case 2:
      case 3: {  // a strided access: rows of a matrix, maybe every other one
        const std::uint64_t rows = 1 + pick(shape_.max_rows);
        const std::uint64_t pitch = std::max<std::uint64_t>(2, n / rows);
        const std::uint64_t width = 1 + pick(pitch - 1);
        const std::uint64_t step = 1 + pick(2);
        const std::uint64_t first = pick(rows);
        std::vector<Interval> out;
        for (std::uint64_t r = first; r < rows && (r + 1) * pitch <= n; r += step) {
          out.emplace_back(r * pitch, r * pitch + width);
        }
        return IntervalSet::from_unsorted(std::move(out));
      }
      case 4: {  // a few scattered intervals
        std::vector<Interval> out;
        for (int k = 1 + static_cast<int>(pick(4)); k > 0; --k) out.push_back(small_interval());
        return IntervalSet::from_unsorted(std::move(out));
      }
      default:
        return IntervalSet(small_interval());
    }
  }

  void go() {
    for (step_ = 0; step_ < shape_.steps; ++step_) {
      const IntervalSet bytes = random_bytes();
      const std::uint64_t op = pick(12);
      if (op < 2) {
        const Event e = event_for_record();
        ASSERT_NO_THROW(tree_.record_read(bytes, e)) << where() << " read " << bytes.to_string();
        list_.record_read(bytes, e);
      } else if (op < 4) {
        ordered_read(bytes);
      } else if (op < 5 || (shape_.blocks > 0 && op < 7)) {
        launch(bytes, random_bytes());
      } else if (op < 7) {
        write(bytes);
      } else {
        compare_queries(bytes);
      }
      if (::testing::Test::HasFatalFailure()) return;
      ASSERT_EQ(tree_.record_count(), list_.record_count()) << where();
      ASSERT_NO_THROW(tree_.check_invariants()) << where();
      // After every step: the dependencies of a fresh random access and every pending event.
      compare_queries(random_bytes());
      ASSERT_EQ(tree_.pending(), list_.pending()) << where();
      if (::testing::Test::HasFatalFailure()) return;
      finish_some();
    }
    // Everything finishes, each event after those it waited for (creation order is one such).
    // The rule was exercised: some write lists were shorter than the linear tracker's.
    EXPECT_GT(left_out_, 0U);
    for (auto& s : unfinished_) s->complete();
    EXPECT_TRUE(tree_.pending().empty());
    EventList deps;
    tree_.deps_for_write(IntervalSet(Interval{0, shape_.size}), deps);
    EXPECT_TRUE(deps.empty());
    if (shape_.blocks > 0) {
      EXPECT_GT(tree_.covering_write_shortcuts(), 0U);
    }
    if (shape_.pivot_rows > 0) {
      EXPECT_GT(tree_.run_reads(), 0U);
    }
  }

 private:
  std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  Interval small_interval() {
    const std::uint64_t begin = pick(shape_.size);
    const std::uint64_t len = 1 + pick(std::min<std::uint64_t>(shape_.size - begin, 1 + pick(64)));
    return {begin, std::min(shape_.size, begin + len)};
  }

  // An operation submitted now that starts after every event of `waits`.
  Event new_event(const EventList& waits) {
    auto [e, s] = Event::make_manual();
    unfinished_.push_back(s);
    waits_[e.state().get()] = waits;
    recent_.push_back(e);
    if (recent_.size() > 8) recent_.erase(recent_.begin());
    return e;
  }

  // An event for a record that promises nothing: a new one waiting for nothing, one already
  // recorded (a launch records its read and its write with one event), or now and then null
  // (ignored) or an already finished one.
  Event event_for_record() {
    const std::uint64_t k = pick(20);
    if (k == 0) return Event{};
    if (k == 1) {
      auto [e, s] = Event::make_manual();
      s->complete();
      return e;
    }
    if (k < 6 && !recent_.empty()) return recent_[pick(recent_.size())];
    return new_event({});
  }

  // The dependencies of a read of `query` from both trackers, which must agree exactly.
  EventList read_deps(const IntervalSet& query) {
    EventList a;
    EventList b;
    tree_.deps_for_read(query, a);
    list_.deps_for_read(query, b);
    EXPECT_EQ(a, b) << where() << " deps_for_read " << query.to_string();
    return a;
  }

  // A write's dependencies: the tree's, checked against the linear tracker's.
  EventList write_deps(const IntervalSet& bytes, EventList start = {}) {
    EventList a = start;
    EventList b = start;
    tree_.deps_for_write(bytes, a);
    list_.deps_for_write(bytes, b);
    expect_same_waits(a, b, "deps_for_write " + bytes.to_string());
    return a;
  }

  // A kernel or copy reading bytes: it waits for the writers a query found, then is recorded as
  // an ordered read. Now and then the tracker must see that it may not rely on that: bytes
  // beyond the query, or a write recorded between the query and the read.
  void ordered_read(const IntervalSet& bytes) {
    IntervalSet query = bytes;
    const std::uint64_t variant = pick(8);
    if (variant == 0) query = query.unite(random_bytes());     // a wider query: still ordered
    if (variant == 1) query = query.subtract(random_bytes());  // not all of its bytes
    const Event e = new_event(read_deps(query));
    if (variant == 2) write(random_bytes());  // a record in between
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_NO_THROW(tree_.record_ordered_read(bytes, e)) << where() << " " << bytes.to_string();
    list_.record_ordered_read(bytes, e);
  }

  // A write: after the accesses the tree names, or (now and then) after nothing, as a
  // relocation's copies wait only for the writes of the bytes they move.
  void write(const IntervalSet& bytes) {
    const EventList deps = write_deps(bytes);
    const Event e = pick(5) == 0 ? event_for_record() : new_event(deps);
    ASSERT_NO_THROW(tree_.record_write(bytes, e)) << where() << " write " << bytes.to_string();
    list_.record_write(bytes, e);
  }

  // A kernel reading `read` and writing `written` (RuntimeCore::submit_kernels): one event after
  // both queries; the read is recorded without the written bytes, then the write.
  void launch(const IntervalSet& read, const IntervalSet& written) {
    EventList deps = read_deps(read);
    deps = write_deps(written, deps);
    const Event e = new_event(deps);
    const IntervalSet only_read = read.subtract(written);
    ASSERT_NO_THROW(tree_.record_ordered_read(only_read, e)) << where();
    list_.record_ordered_read(only_read, e);
    ASSERT_NO_THROW(tree_.record_write(written, e)) << where();
    list_.record_write(written, e);
  }

  // `tree` holds events of `linear` only, and every event of `linear` is reached from `tree`
  // through what the operations waited for. (Not always in the same order: an event recorded by
  // a write left out and by a later access comes at the later one's place.)
  void expect_same_waits(const EventList& tree, const EventList& linear, const std::string& what) {
    for (const Event& e : tree) {
      ASSERT_TRUE(std::find(linear.begin(), linear.end(), e) != linear.end())
          << where() << " " << what
          << ": the tree names an event the linear tracker does not: " << names(tree) << " against "
          << names(linear);
    }
    ASSERT_EQ(as_set(tree).size(), tree.size()) << where() << " " << what << ": an event twice";
    left_out_ += linear.size() - tree.size();
    std::map<const void*, bool> reached;
    std::vector<Event> todo(tree.begin(), tree.end());
    while (!todo.empty()) {
      const Event e = todo.back();
      todo.pop_back();
      if (!reached.emplace(e.state().get(), true).second) continue;
      const auto it = waits_.find(e.state().get());
      if (it != waits_.end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
    }
    for (std::size_t i = 0; i < linear.size(); ++i) {
      ASSERT_TRUE(reached.contains(linear[i].state().get()))
          << where() << " " << what << ": the tree's " << tree.size() << " events do not wait for "
          << "the linear tracker's event " << i << " of " << linear.size();
    }
  }

  // Events by the order of their operations, for messages ("?" for those of no operation).
  std::string names(const EventList& events) const {
    std::string out;
    for (const Event& e : events) {
      const auto it = waits_.find(e.state().get());
      out +=
          it == waits_.end() ? std::string("?") : std::to_string(std::distance(waits_.begin(), it));
      out += ' ';
    }
    return out;
  }

  void compare_queries(const IntervalSet& bytes) {
    // Start from a list that already holds some events: deps_for_* append to it.
    EventList start;
    if (!recent_.empty() && pick(2) == 0) start.push_back(recent_[pick(recent_.size())]);
    {
      EventList a = start;
      EventList b = start;
      tree_.deps_for_read(bytes, a);
      list_.deps_for_read(bytes, b);
      ASSERT_EQ(as_set(a), as_set(b)) << where() << " deps_for_read " << bytes.to_string();
      ASSERT_EQ(a, b) << where() << " same events, other order";
    }
    write_deps(bytes, start);
    if (::testing::Test::HasFatalFailure()) return;
    const EventList a = tree_.pending_on(bytes);
    const EventList b = list_.pending_on(bytes);
    ASSERT_EQ(as_set(a), as_set(b)) << where() << " pending_on " << bytes.to_string();
    ASSERT_EQ(a, b) << where() << " pending_on: same events, other order";
  }

  // Whether every event e waited for has finished (a driver starts nothing before that).
  bool may_finish(const std::shared_ptr<ManualEventState>& s) const {
    const auto it = waits_.find(static_cast<const EventState*>(s.get()));
    if (it == waits_.end()) return true;
    return std::all_of(it->second.begin(), it->second.end(),
                       [](const Event& w) { return w.is_complete(); });
  }

  // Events finish out of order: a few at random, all at once now and then, or none for a while
  // (so records pile up as when the host submits far ahead of the devices); never one whose
  // dependencies have not all finished.
  void finish_some() {
    if (unfinished_.empty() || static_cast<int>(pick(100)) >= shape_.complete_percent) return;
    if (pick(50) == 0) {
      for (auto& s : unfinished_) s->complete();  // creation order: dependencies first
      unfinished_.clear();
      return;
    }
    for (std::uint64_t k = 1 + pick(3); k > 0 && !unfinished_.empty(); --k) {
      const std::size_t i = pick(unfinished_.size());
      if (!may_finish(unfinished_[i])) continue;
      unfinished_[i]->complete();
      unfinished_.erase(unfinished_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  std::string where() const { return "step " + std::to_string(step_); }

  std::mt19937_64 rng_;
  Shape shape_;
  std::uint64_t pivot_ = 0;  // the next pivot row (Shape::pivot_rows)
  int step_ = 0;
  HazardTracker tree_;
  test::LinearHazardTracker list_;
  std::vector<std::shared_ptr<ManualEventState>> unfinished_;
  std::vector<Event> recent_;
  std::map<const void*, EventList> waits_;  // what each event's operation waited for
  std::size_t left_out_ = 0;                // events the tree's write lists left out
};
void run_seeds(std::uint32_t first, std::uint32_t count, Shape shape) {
  for (const std::uint32_t seed : seeds(first, count)) {
    std::cout << "seed " << seed << " (UNIMEM_TEST_SEED=" << seed << " reproduces it)\n";
    SCOPED_TRACE("seed " + std::to_string(seed) + " (UNIMEM_TEST_SEED reproduces it)");
    Run(seed, shape).go();
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(HazardTrackerDifferential, SmallCopyGivesTheLinearTrackersDependencies) {
  run_seeds(1, 20, Shape{64, 16, 1500, 50});
}

TEST(HazardTrackerDifferential, StridedAccessesGiveTheLinearTrackersDependencies) {
  run_seeds(101, 10, Shape{1 << 16, 300, 1500, 40});
}

// Blocks written again and again, rows of others read (floyd-warshall's partitions): the
// covering-write shortcut answers queries and passes nodes, and gives the linear tracker's lists.
TEST(HazardTrackerDifferential, RewrittenBlocksGiveTheLinearTrackersDependencies) {
  run_seeds(301, 20, Shape{4096, 8, 1500, 30, 2});
  run_seeds(321, 10, Shape{4096, 8, 1500, 5, 3});
}

// Reads of rows at ascending addresses, most of them unfinished for a while, the others cut by
// writes, dropped when they finish, or coming back at lower addresses: the reads' run (recorded
// and searched outside the tree) gives the linear tracker's lists.
TEST(HazardTrackerDifferential, AscendingReadsInTheRunGiveTheLinearTrackersDependencies) {
  run_seeds(401, 20, Shape{1 << 14, 8, 1500, 20, 2, 256});
  run_seeds(421, 10, Shape{1 << 14, 8, 2000, 3, 0, 64});
}

// Events rarely finish: hundreds of records pile up, as in floyd-warshall's trackers.
TEST(HazardTrackerDifferential, PiledUpRecordsGiveTheLinearTrackersDependencies) {
  run_seeds(201, 5, Shape{1 << 20, 32, 3000, 3});
}

}  // namespace
}  // namespace unimem
