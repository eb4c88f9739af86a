#include "coherence/adaptive_history.hpp"

#include <gtest/gtest.h>

namespace unimem {
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

}  // namespace
}  // namespace unimem
