// HazardTracker (interval tree) against the linear tracker it replaced (linear_hazard_tracker.hpp):
// long random sequences of accesses and queries, events finishing at random times, and after
// every step the same dependencies from both, as sets and in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
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
};

class Run {
 public:
  Run(std::uint32_t seed, Shape shape) : rng_(seed), shape_(shape) {}

  IntervalSet random_bytes() {
    const std::uint64_t n = shape_.size;
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
      const std::uint64_t op = pick(10);
      if (op < 3) {
        const Event e = event_for_record();
        ASSERT_NO_THROW(tree_.record_read(bytes, e)) << where() << " read " << bytes.to_string();
        list_.record_read(bytes, e);
      } else if (op < 5) {
        const Event e = event_for_record();
        ASSERT_NO_THROW(tree_.record_write(bytes, e)) << where() << " write " << bytes.to_string();
        list_.record_write(bytes, e);
      } else {
        compare_queries(bytes);
      }
      ASSERT_EQ(tree_.record_count(), list_.record_count()) << where();
      ASSERT_NO_THROW(tree_.check_invariants()) << where();
      // After every step: the dependencies of a fresh random access and every pending event.
      compare_queries(random_bytes());
      ASSERT_EQ(tree_.pending(), list_.pending()) << where();
      if (::testing::Test::HasFatalFailure()) return;
      finish_some();
    }
    for (auto& s : unfinished_) s->complete();
    EXPECT_TRUE(tree_.pending().empty());
    EventList deps;
    tree_.deps_for_write(IntervalSet(Interval{0, shape_.size}), deps);
    EXPECT_TRUE(deps.empty());
  }

 private:
  std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  Interval small_interval() {
    const std::uint64_t begin = pick(shape_.size);
    const std::uint64_t len = 1 + pick(std::min<std::uint64_t>(shape_.size - begin, 1 + pick(64)));
    return {begin, std::min(shape_.size, begin + len)};
  }

  // A new event, or one already recorded (a launch records its read and its write with one
  // event), or now and then null (ignored) or an already finished one.
  Event event_for_record() {
    const std::uint64_t k = pick(20);
    if (k == 0) return Event{};
    if (k == 1) {
      auto [e, s] = Event::make_manual();
      s->complete();
      return e;
    }
    if (k < 6 && !recent_.empty()) return recent_[pick(recent_.size())];
    auto [e, s] = Event::make_manual();
    unfinished_.push_back(s);
    recent_.push_back(e);
    if (recent_.size() > 8) recent_.erase(recent_.begin());
    return e;
  }

  void compare_queries(const IntervalSet& bytes) {
    // Start from a list that already holds some events: deps_for_* append to it.
    EventList start;
    if (!recent_.empty() && pick(2) == 0) start.push_back(recent_[pick(recent_.size())]);
    for (const bool write : {false, true}) {
      EventList a = start;
      EventList b = start;
      if (write) {
        tree_.deps_for_write(bytes, a);
        list_.deps_for_write(bytes, b);
      } else {
        tree_.deps_for_read(bytes, a);
        list_.deps_for_read(bytes, b);
      }
      ASSERT_EQ(as_set(a), as_set(b))
          << where() << (write ? " deps_for_write " : " deps_for_read ") << bytes.to_string();
      ASSERT_EQ(a, b) << where() << " same events, other order";
    }
    const EventList a = tree_.pending_on(bytes);
    const EventList b = list_.pending_on(bytes);
    ASSERT_EQ(as_set(a), as_set(b)) << where() << " pending_on " << bytes.to_string();
    ASSERT_EQ(a, b) << where() << " pending_on: same events, other order";
  }

  // Events finish out of order: a few at random, all at once now and then, or none for a while
  // (so records pile up as when the host submits far ahead of the devices).
  void finish_some() {
    if (unfinished_.empty() || static_cast<int>(pick(100)) >= shape_.complete_percent) return;
    if (pick(50) == 0) {
      for (auto& s : unfinished_) s->complete();
      unfinished_.clear();
      return;
    }
    for (std::uint64_t k = 1 + pick(3); k > 0 && !unfinished_.empty(); --k) {
      const std::size_t i = pick(unfinished_.size());
      unfinished_[i]->complete();
      unfinished_.erase(unfinished_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  std::string where() const { return "step " + std::to_string(step_); }

  std::mt19937_64 rng_;
  Shape shape_;
  int step_ = 0;
  HazardTracker tree_;
  test::LinearHazardTracker list_;
  std::vector<std::shared_ptr<ManualEventState>> unfinished_;
  std::vector<Event> recent_;
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

// Events rarely finish: hundreds of records pile up, as in floyd-warshall's trackers.
TEST(HazardTrackerDifferential, PiledUpRecordsGiveTheLinearTrackersDependencies) {
  run_seeds(201, 5, Shape{1 << 20, 32, 3000, 3});
}

}  // namespace
}  // namespace unimem
