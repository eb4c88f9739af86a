#include "coherence/adaptive_history.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace unimem {

namespace detail {
struct AdaptiveHistoryTestAccess {
  static int& repeats(AdaptiveHistory& h, const AdaptiveHistory::Key& key) {
    return h.entries_.at(key).repeats;
  }
  static DemandSequence& sequence(AdaptiveHistory& h, const AdaptiveHistory::Key& key) {
    return h.entries_.at(key).sequence;
  }
  static void forget(AdaptiveHistory& h, const AdaptiveHistory::Key& key) {
    h.entry_.node = nullptr;  // the remembered entry may be the erased one
    h.entries_.erase(key);
  }
};
}  // namespace detail

namespace {

const AdaptiveHistory::Key kKey{"stencil", AgentMask::of(1)};

// One run of the kernel followed by a reader on device agent 2 needing `bytes`.
std::optional<DemandSequence> run(AdaptiveHistory& h, const IntervalSet& bytes,
                                  bool replayed_bytes_valid = false) {
  auto replay = h.open(kKey);
  if (replay) {
    for (const Demand& d : *replay) h.note_prefetched(d.agent, d.bytes);
  }
  // With a replay the reader finds the bytes valid (nothing missing) but consumes the prefetch.
  h.observe_read(2, bytes, replayed_bytes_valid && replay ? IntervalSet{} : bytes);
  return replay;
}

TEST(AdaptiveHistory, ReplaysAfterTheSameSequenceFollowedTwoRuns) {
  AdaptiveHistory h;
  const IntervalSet halo{{13, 17}};
  EXPECT_FALSE(run(h, halo));
  EXPECT_FALSE(run(h, halo));       // first occurrence closed here
  auto third = run(h, halo, true);  // second occurrence closed: now predicted
  ASSERT_TRUE(third);
  EXPECT_EQ(*third, (DemandSequence{{2, halo}}));
  // The consumed replay records the same demand, so prediction continues.
  EXPECT_TRUE(run(h, halo, true));
  EXPECT_FALSE(h.close());
  EXPECT_GE(h.repeat_count(kKey), 3);
}

TEST(AdaptiveHistory, WrongPredictionIsReportedAndNotReplayedAgain) {
  AdaptiveHistory h;
  const IntervalSet a{{0, 8}};
  const IntervalSet b{{100, 108}};
  run(h, a);
  run(h, a);
  ASSERT_TRUE(run(h, b, true));  // predicted a, reader wanted b instead
  EXPECT_TRUE(h.close());        // misprediction
  EXPECT_FALSE(run(h, b));       // b seen once: not yet
  EXPECT_FALSE(run(h, b));
  EXPECT_TRUE(run(h, b, true));  // b twice in a row: predicted
}

TEST(AdaptiveHistory, KeysAreSeparatePerKernelAndDevice) {
  AdaptiveHistory h;
  const IntervalSet x{{0, 4}};
  for (int i = 0; i < 3; ++i) {
    (void)h.open({"k", AgentMask::of(1)});
    h.observe_read(2, x, x);
    (void)h.open({"k", AgentMask::of(2)});
    h.observe_read(1, x, x);
  }
  h.close();
  EXPECT_EQ(h.repeat_count({"k", AgentMask::of(1)}), 3);
  EXPECT_EQ(h.repeat_count({"k", AgentMask::of(2)}), 3);
  EXPECT_EQ(h.repeat_count({"other", AgentMask::of(1)}), 0);
}

TEST(AdaptiveHistory, CheckInvariantsRejectsBrokenEntries) {
  using Access = detail::AdaptiveHistoryTestAccess;
  const IntervalSet halo{{13, 17}};
  auto learned = [&] {
    AdaptiveHistory h;
    run(h, halo);
    run(h, halo);
    h.close();
    h.check_invariants();
    return h;
  };
  {
    AdaptiveHistory h = learned();
    Access::repeats(h, kKey) = 0;  // stored, yet followed no run
    EXPECT_THROW(h.check_invariants(), InvariantError);
  }
  {
    AdaptiveHistory h = learned();
    Access::sequence(h, kKey).push_back({2, IntervalSet{}});  // a reader that needed nothing
    EXPECT_THROW(h.check_invariants(), InvariantError);
  }
  {
    AdaptiveHistory h = learned();
    ASSERT_TRUE(h.open(kKey));  // replays the stored prediction
    h.check_invariants();
    Access::forget(h, kKey);  // the recording replayed something the history no longer holds
    EXPECT_THROW(h.check_invariants(), InvariantError);
  }
}

// Random runs of a few kernels with random readers: the history checks itself after every call
// (invariant builds) and the predictions it replays are sequences it has seen twice in a row.
TEST(AdaptiveHistory, RandomRunsKeepTheInvariants) {
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    AdaptiveHistory h;
    for (int op = 0; op < 300; ++op) {
      const AdaptiveHistory::Key key{rng() % 2 == 0 ? "a" : "b",
                                     AgentMask::of(static_cast<Agent>(1 + rng() % 2))};
      std::optional<DemandSequence> replay;
      ASSERT_NO_THROW(replay = h.open(key)) << "op " << op;
      if (replay) {
        EXPECT_GE(h.repeat_count(key), 2);
        for (const Demand& d : *replay) {
          EXPECT_FALSE(d.bytes.empty());
          h.note_prefetched(d.agent, d.bytes);
        }
      }
      const int reads = static_cast<int>(rng() % 3);
      for (int r = 0; r < reads; ++r) {
        const std::uint64_t begin = 8 * (rng() % 4);
        const IntervalSet bytes{{begin, begin + 8}};
        const bool missing = rng() % 2 == 0;
        ASSERT_NO_THROW(
            h.observe_read(static_cast<Agent>(rng() % 3), bytes, missing ? bytes : IntervalSet{}))
            << "op " << op;
      }
      if (rng() % 4 == 0) {
        ASSERT_NO_THROW(h.close()) << "op " << op;
      }
      ASSERT_NO_THROW(h.check_invariants()) << "op " << op;
    }
  }
}

TEST(AdaptiveHistory, ARepeatWithNothingReadInBetweenChangesOnlyTheCountOnceLearned) {
  AdaptiveHistory h;
  EXPECT_FALSE(h.repeat_changes_only_count(kKey.kernel, kKey.writers));  // nothing recorded
  EXPECT_FALSE(h.open(kKey));
  // Open, but the key has no stored sequence yet: the next close() would store one.
  EXPECT_FALSE(h.repeat_changes_only_count(kKey.kernel, kKey.writers));
  EXPECT_FALSE(h.open(kKey));  // stores the empty sequence, once
  EXPECT_TRUE(h.repeat_changes_only_count(kKey.kernel, kKey.writers));
  EXPECT_FALSE(h.repeat_changes_only_count(kKey.kernel, AgentMask::of(2)));  // other writers
  EXPECT_FALSE(h.repeat_changes_only_count("other", kKey.writers));
  h.count_unchanged_repeat();
  h.count_unchanged_repeat();
  EXPECT_EQ(h.repeat_count(kKey), 3);  // as if opened twice more
  EXPECT_FALSE(h.close());
  EXPECT_EQ(h.repeat_count(kKey), 4);
  // A reader in between records a demand: the recording is no longer empty.
  EXPECT_FALSE(h.open(kKey));
  h.observe_read(2, IntervalSet{{0, 8}}, IntervalSet{{0, 8}});
  EXPECT_FALSE(h.repeat_changes_only_count(kKey.kernel, kKey.writers));
}

TEST(AdaptiveHistory, ARepeatAfterAReplayIsNotUnchanged) {
  AdaptiveHistory h;
  const IntervalSet halo{{13, 17}};
  run(h, halo);
  run(h, halo);
  ASSERT_TRUE(run(h, halo, true));
  ASSERT_TRUE(h.open(kKey));  // replays again: the recording holds a prediction
  EXPECT_FALSE(h.repeat_changes_only_count(kKey.kernel, kKey.writers));
  h.note_prefetched(2, halo);
  EXPECT_TRUE(h.read_would_record(2, halo));
  EXPECT_FALSE(h.read_would_record(1, halo));
  EXPECT_FALSE(h.read_would_record(2, IntervalSet{{100, 104}}));
}

// A recording's replayed bytes are its own: open() starts the next recording with none (its
// sets are emptied in place, keeping their storage), so a read of bytes an earlier recording
// prefetched records a demand again instead of consuming them.
TEST(AdaptiveHistory, ANewRecordingHoldsNoReplayedBytesOfTheLastOne) {
  AdaptiveHistory h;
  const IntervalSet halo{{13, 17}};
  EXPECT_FALSE(h.open(kKey));
  h.note_prefetched(2, halo);
  h.note_prefetched(1, IntervalSet{{0, 4}});
  EXPECT_TRUE(h.read_would_record(2, halo));
  EXPECT_FALSE(h.open(kKey));  // no prediction stored: nothing replayed
  EXPECT_FALSE(h.read_would_record(2, halo));
  EXPECT_FALSE(h.read_would_record(1, IntervalSet{{0, 4}}));
  h.observe_read(2, halo, halo);  // missing: a demand
  EXPECT_FALSE(h.open(kKey));     // closes it: {agent 2: halo} followed one run
  h.observe_read(2, halo, halo);
  // The same demand after two runs: predicted; noting it after a clear gives exactly it.
  ASSERT_TRUE(h.open(kKey)) << "the sequence {agent 2: halo} followed two runs";
  h.note_prefetched(2, IntervalSet{{13, 15}});
  h.note_prefetched(2, IntervalSet{{15, 17}});
  EXPECT_TRUE(h.read_would_record(2, halo));
  EXPECT_FALSE(h.read_would_record(2, IntervalSet{{0, 13}}));
  EXPECT_NO_THROW(h.check_invariants());
}

// open_prediction is open() without the copy: on random runs, a history opened through it
// replays exactly what a twin opened through open() replays, and both stay equal.
TEST(AdaptiveHistory, OpenPredictionGivesTheSequenceOpenCopies) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    AdaptiveHistory copying;
    AdaptiveHistory in_place;
    int predictions = 0;
    for (int op = 0; op < 200; ++op) {
      const AdaptiveHistory::Key key{rng() % 4 == 0 ? "other" : "stencil", AgentMask::of(1)};
      const std::optional<DemandSequence> a = copying.open(key);
      const DemandSequence* b = in_place.open_prediction(key.kernel, key.writers);
      ASSERT_EQ(a.has_value(), b != nullptr) << "op " << op;
      if (a) {
        ++predictions;
        ASSERT_EQ(*a, *b) << "op " << op;
        for (const Demand& d : *a) copying.note_prefetched(d.agent, d.bytes);
        for (const Demand& d : *b) in_place.note_prefetched(d.agent, d.bytes);
      }
      const std::uint64_t row = 8 * (rng() % (rng() % 3 == 0 ? 8 : 2));
      const IntervalSet bytes{{row, row + 8}};
      const auto reader = static_cast<Agent>(rng() % 3);
      const bool missing = rng() % 2 == 0;
      for (AdaptiveHistory* h : {&copying, &in_place}) {
        h->observe_read(reader, bytes, missing ? bytes : IntervalSet{});
      }
      ASSERT_TRUE(copying.acts_as(in_place)) << "op " << op;
      ASSERT_EQ(copying.repeat_count(key), in_place.repeat_count(key)) << "op " << op;
    }
    EXPECT_GT(predictions, 0) << "the runs never replayed: the test compares nothing";
  }
}

// Two histories fed the same random runs, readers and closes; whenever the first says a run
// without readers changes only the count, it counts it (count_unchanged_repeat) while the second
// runs it (open): both then agree on every count and every later replay.
TEST(AdaptiveHistory, CountedUnchangedRepeatsEqualRunningThemOnRandomRuns) {
  const std::vector<AdaptiveHistory::Key> keys{
      {"a", AgentMask::of(1)}, {"a", AgentMask::of(1).with(2)}, {"b", AgentMask::of(2)}};
  int counted = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    AdaptiveHistory counting, running;
    for (int op = 0; op < 400; ++op) {
      const std::size_t choices = rng() % 4 == 0 ? keys.size() : 1;  // mostly the same kernel
      const AdaptiveHistory::Key& key = keys[rng() % choices];
      const bool unchanged = counting.repeat_changes_only_count(key.kernel, key.writers);
      ASSERT_EQ(unchanged, running.repeat_changes_only_count(key.kernel, key.writers));
      if (unchanged && rng() % 4 != 0) {
        counting.count_unchanged_repeat();
        ASSERT_FALSE(running.open(key)) << "op " << op << ": an unchanged repeat replays";
        ++counted;
      } else {
        const auto a = counting.open(key);
        ASSERT_EQ(a, running.open(key)) << "op " << op;
        if (a) {
          for (const Demand& d : *a) {
            counting.note_prefetched(d.agent, d.bytes);
            running.note_prefetched(d.agent, d.bytes);
          }
        }
      }
      // Readers rarely, so that runs without any reader in between are common.
      if (rng() % 3 == 0) {
        const std::uint64_t begin = 8 * (rng() % 2);
        const IntervalSet bytes{{begin, begin + 8}};
        const auto agent = static_cast<Agent>(rng() % 3);
        const IntervalSet missing = rng() % 2 == 0 ? bytes : IntervalSet{};
        counting.observe_read(agent, bytes, missing);
        running.observe_read(agent, bytes, missing);
      }
      if (rng() % 8 == 0) {
        ASSERT_EQ(counting.close(), running.close()) << "op " << op;
      }
      for (const auto& k : keys) {
        ASSERT_EQ(counting.repeat_count(k), running.repeat_count(k)) << "op " << op;
      }
      ASSERT_NO_THROW(counting.check_invariants()) << "op " << op;
    }
  }
  EXPECT_GT(counted, 100) << "the random runs hardly ever had an unchanged repeat";
}

// restart_run against the calls it stands for (observe_read per miss, close, open_prediction) on
// a second history, over random runs whose reads repeat the last run's often (so the histories
// learn, replay and mispredict: restart_run must decline those) and whose kernels change at
// times: whenever it applies, both histories must act and count alike (same_as) and answer the
// same predictions.
TEST(AdaptiveHistory, ARestartingRunInOneCallEqualsObservingClosingAndOpening) {
  const std::vector<AdaptiveHistory::Key> keys{{"floyd", AgentMask::of(1).with(2)},
                                               {"other", AgentMask::of(1)}};
  int restarted = 0;
  int declined = 0;
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    AdaptiveHistory whole, calls;
    std::vector<IntervalSet> sets;  // this run's missing bytes, per read
    std::vector<AdaptiveHistory::Miss> misses;
    for (int op = 0; op < 300; ++op) {
      const AdaptiveHistory::Key& key = keys[rng() % 5 == 0 ? 1 : 0];
      // 0-2 reads, each missing one of a few rows or nothing; often the last run's reads again.
      if (rng() % 3 != 0 || sets.empty()) {
        sets.assign(rng() % 3, IntervalSet{});
        for (IntervalSet& s : sets) {
          const std::uint64_t row = rng() % 4;
          if (rng() % 4 != 0) s = IntervalSet{{row * 16, row * 16 + 16}};
        }
      }
      misses.clear();
      for (std::size_t i = 0; i < sets.size(); ++i) {
        misses.push_back({static_cast<Agent>(1 + i % 2), &sets[i]});
      }
      const bool fast = whole.records_misses_only() && rng() % 8 != 0 &&
                        whole.restart_run(key.kernel, key.writers, misses);
      for (const AdaptiveHistory::Miss& m : misses) {
        if (!fast) whole.observe_read(m.agent, *m.bytes, *m.bytes);
        calls.observe_read(m.agent, *m.bytes, *m.bytes);
      }
      const bool mispredicted = calls.close();
      const DemandSequence* predicted = calls.open_prediction(key.kernel, key.writers);
      if (fast) {
        ++restarted;
        EXPECT_FALSE(mispredicted) << "op " << op;
        EXPECT_EQ(predicted, nullptr) << "op " << op;
      } else {
        ++declined;
        ASSERT_EQ(whole.close(), mispredicted) << "op " << op;
        const DemandSequence* got = whole.open_prediction(key.kernel, key.writers);
        ASSERT_EQ(got == nullptr, predicted == nullptr) << "op " << op;
        if (got != nullptr) {
          ASSERT_EQ(*got, *predicted) << "op " << op;
        }
      }
      // A replay's bytes, noted on both, so that later runs find replayed bytes (restart_run
      // declines) as a launch would.
      if (predicted != nullptr) {
        for (const Demand& d : *predicted) {
          whole.note_prefetched(d.agent, d.bytes);
          calls.note_prefetched(d.agent, d.bytes);
        }
      }
      ASSERT_TRUE(whole.same_as(calls)) << "op " << op << (fast ? " (restart_run)" : "");
      ASSERT_NO_THROW(whole.check_invariants()) << "op " << op;
    }
  }
  EXPECT_GT(restarted, 1000) << "restart_run hardly ever applied";
  EXPECT_GT(declined, 1000) << "restart_run hardly ever declined";
}

// observe_read and note_prefetched against the set algebra they implement (an oracle kept
// beside the history): a read consumes the replayed bytes it uses (prefetched & bytes), and what
// it needed (missing | used) joins the recording. Random reads contain the replayed bytes, cut
// them, miss them, or find none, so both the shortcuts (all replayed bytes used, nothing
// replayed, nothing missing) and the general case run; the sequences close() stores must match.
TEST(AdaptiveHistory, RecordedSequencesEqualTheSetAlgebraOnRandomReads) {
  using Access = detail::AdaptiveHistoryTestAccess;
  const std::vector<AdaptiveHistory::Key> keys{{"a", AgentMask::of(1)}, {"b", AgentMask::of(2)}};
  int compared = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto random_set = [&] {
      std::vector<Interval> parts;
      std::uint64_t at = 4 * (rng() % 4);
      for (std::uint64_t i = 0, n = 1 + rng() % 3; i < n && at < 64; ++i) {
        const std::uint64_t end = std::min<std::uint64_t>(64, at + 4 * (1 + rng() % 4));
        parts.push_back({at, end});
        at = end + 4 * (1 + rng() % 3);
      }
      return IntervalSet::from_normalized(std::move(parts));
    };
    AdaptiveHistory h;
    std::optional<AdaptiveHistory::Key> open;
    std::map<Agent, IntervalSet> prefetched;
    DemandSequence recorded;
    auto closed = [&] {
      if (!open) return;
      ASSERT_EQ(Access::sequence(h, *open), recorded);
      ++compared;
    };
    for (int op = 0; op < 300; ++op) {
      switch (rng() % 4) {
        case 0: {
          const AdaptiveHistory::Key& key = keys[rng() % keys.size()];
          (void)h.open(key);
          ASSERT_NO_FATAL_FAILURE(closed()) << "op " << op;
          open = key;
          prefetched.clear();
          recorded.clear();
          break;
        }
        case 1: {
          const auto agent = static_cast<Agent>(rng() % 3);
          const IntervalSet bytes = random_set();
          h.note_prefetched(agent, bytes);
          if (open) prefetched[agent] = prefetched[agent].unite(bytes);
          break;
        }
        case 2: {
          const auto agent = static_cast<Agent>(rng() % 3);
          // A read of everything replayed there, of a random set, or of its hull.
          IntervalSet bytes = random_set();
          if (rng() % 3 == 0 && !prefetched[agent].empty()) {
            bytes = IntervalSet(prefetched[agent].bounds());
          }
          const IntervalSet missing =
              rng() % 2 == 0 ? IntervalSet{} : random_set().intersect(bytes);
          h.observe_read(agent, bytes, missing);
          if (open) {
            const IntervalSet used = prefetched[agent].intersect(bytes);
            prefetched[agent] = prefetched[agent].subtract(used);
            const IntervalSet needed = missing.unite(used);
            if (!needed.empty()) recorded.push_back({agent, needed});
          }
          break;
        }
        case 3:
          (void)h.close();
          ASSERT_NO_FATAL_FAILURE(closed()) << "op " << op;
          open.reset();
          break;
      }
      ASSERT_NO_THROW(h.check_invariants()) << "op " << op;
    }
  }
  EXPECT_GT(compared, 1000);
}

// The entry a history remembers for its recording's key (AdaptiveHistory::EntryCache) is its own:
// copies and moves taken at random points of random runs (copy construction, copy and move
// assignment, move construction) go on exactly as a history that was never copied, and the
// history they were copied from goes on unchanged by them. A copy that kept the original's
// remembered node would count its closes into the original's entry (and fail check_invariants).
TEST(AdaptiveHistory, CopiesAndMovesGoOnAsTheHistoryTheyWereTakenFrom) {
  const std::vector<AdaptiveHistory::Key> keys{{"floyd", AgentMask::of(1).with(2)},
                                               {"floyd", AgentMask::of(1)},
                                               {"other", AgentMask::of(2)}};
  int copies = 0;
  for (std::uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    AdaptiveHistory reference;  // never copied
    AdaptiveHistory original;   // copied from, and runs the same operations
    std::optional<AdaptiveHistory> copy;
    for (int op = 0; op < 300; ++op) {
      if (rng() % 10 == 0) {
        switch (rng() % 4) {
          case 0:
            copy.emplace(original);
            break;
          case 1: {
            AdaptiveHistory moved_from(original);
            copy.emplace(std::move(moved_from));
            break;
          }
          case 2:
            if (!copy) copy.emplace();
            *copy = original;
            break;
          default: {
            if (!copy) copy.emplace();
            AdaptiveHistory moved_from(original);
            *copy = std::move(moved_from);
            break;
          }
        }
        ++copies;
      }
      // Mostly the same key (a kernel launched again and again), its readers' bytes changing.
      const AdaptiveHistory::Key& key = keys[rng() % 4 == 0 ? rng() % keys.size() : 0];
      const std::uint64_t row = 8 * (rng() % (rng() % 2 == 0 ? 2 : 16));
      const IntervalSet bytes{{row, row + 8}};
      const auto reader = static_cast<Agent>(1 + rng() % 2);
      const bool close_first = rng() % 4 == 0;
      std::vector<AdaptiveHistory*> all{&reference, &original};
      if (copy) all.push_back(&*copy);
      std::vector<std::optional<DemandSequence>> replays;
      std::vector<bool> closes;
      for (AdaptiveHistory* h : all) {
        if (close_first) closes.push_back(h->close());
        replays.push_back(h->open(key.kernel, key.writers));
        if (replays.back()) {
          for (const Demand& d : *replays.back()) h->note_prefetched(d.agent, d.bytes);
        }
        h->observe_read(reader, bytes, bytes);
        ASSERT_NO_THROW(h->check_invariants()) << "op " << op;
      }
      for (std::size_t i = 1; i < all.size(); ++i) {
        ASSERT_EQ(replays[i], replays[0]) << "op " << op << ", history " << i;
        if (close_first) {
          ASSERT_EQ(closes[i], closes[0]) << "op " << op << ", history " << i;
        }
        for (const auto& k : keys) {
          ASSERT_EQ(all[i]->repeat_count(k), reference.repeat_count(k))
              << "op " << op << ", history " << i;
        }
        ASSERT_EQ(all[i]->restarts(), reference.restarts()) << "op " << op << ", history " << i;
        ASSERT_TRUE(all[i]->acts_as(reference)) << "op " << op << ", history " << i;
      }
    }
  }
  EXPECT_GT(copies, 500);
}

}  // namespace
}  // namespace unimem
