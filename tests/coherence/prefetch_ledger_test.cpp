// PrefetchLedger: the adaptive strategy's replay accounting (TransferStats::replays,
// prefetch_bytes, prefetch_unread_bytes).
#include "coherence/prefetch_ledger.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <unimem/transfer_stats.hpp>

namespace unimem {

namespace detail {
struct PrefetchLedgerTestAccess {
  static std::optional<Agent>& target(PrefetchLedger& l) { return l.target_; }
  static std::uint64_t& prefetched(PrefetchLedger& l) { return l.prefetched_; }
};
}  // namespace detail

namespace {

constexpr Agent D0 = agent_of_device(0);
constexpr Agent D1 = agent_of_device(1);

TEST(PrefetchLedger, ReplayedBytesStayUnreadUntilADemandReadUsesThem) {
  PrefetchLedger ledger(3);
  ledger.copied(D1, IntervalSet{{0, 64}});  // a demand copy: not a prefetch
  ledger.begin_replay();
  EXPECT_TRUE(ledger.replaying());
  ledger.replay_to(D1);
  ledger.copied(kHostAgent, IntervalSet{{0, 16}});  // a hop through the host: counted, not unread
  ledger.copied(D1, IntervalSet{{0, 16}});
  ledger.replay_to(D0);
  ledger.copied(D0, IntervalSet{{32, 40}});
  ledger.end_replay();
  EXPECT_FALSE(ledger.replaying());
  ledger.copied(D1, IntervalSet{{40, 48}});  // after the replay: demand again

  EXPECT_EQ(ledger.unread_on(D1), (IntervalSet{{0, 16}}));
  EXPECT_EQ(ledger.unread_on(D0), (IntervalSet{{32, 40}}));
  EXPECT_EQ(ledger.unread_bytes(), 24u);
  ledger.demand_read(D1, IntervalSet{{4, 8}});
  ledger.demand_read(D0, IntervalSet{{0, 16}});  // nothing replayed there: no effect
  EXPECT_EQ(ledger.unread_bytes(), 20u);
  ledger.overwritten(IntervalSet{{0, 36}});  // 12 unread bytes on d1 and 4 on d0 are wasted
  EXPECT_TRUE(ledger.unread_on(D1).empty());
  EXPECT_EQ(ledger.unread_on(D0), (IntervalSet{{36, 40}}));
  EXPECT_EQ(ledger.unread_bytes(), 20u);  // 16 overwritten + 4 still unread
  ledger.demand_read(D0, IntervalSet{{36, 40}});
  EXPECT_EQ(ledger.unread_bytes(), 16u);

  TransferStats s;
  s.mispredictions = 5;
  ledger.fill(s);
  EXPECT_EQ(s.replays, 1u);
  EXPECT_EQ(s.prefetch_bytes, 16u + 16u + 8u);
  EXPECT_EQ(s.prefetch_unread_bytes, 16u);
  EXPECT_EQ(s.mispredictions, 5u);  // untouched
  ledger.check_invariants();
}

TEST(PrefetchLedger, ReplaysDoNotNestAndNameKnownAgents) {
  PrefetchLedger ledger(2);
  EXPECT_THROW(ledger.replay_to(D0), PreconditionError);
  ledger.begin_replay();
  EXPECT_THROW(ledger.begin_replay(), PreconditionError);
  EXPECT_THROW(ledger.replay_to(D1), PreconditionError);  // agent 2 of 2
  ledger.end_replay();
  ledger.begin_replay();  // counted even when it copies nothing
  ledger.end_replay();
  TransferStats s;
  ledger.fill(s);
  EXPECT_EQ(s.replays, 2u);
  EXPECT_EQ(s.prefetch_bytes, 0u);
}

TEST(PrefetchLedger, CheckInvariantsRejectsBrokenAccounting) {
  using Access = detail::PrefetchLedgerTestAccess;
  {
    PrefetchLedger ledger(2);
    Access::target(ledger) = D0;  // a target outside a replay
    EXPECT_THROW(ledger.check_invariants(), InvariantError);
  }
  {
    PrefetchLedger ledger(2);
    ledger.begin_replay();
    ledger.replay_to(D0);
    ledger.copied(D0, IntervalSet{{0, 8}});
    ledger.end_replay();
    ledger.check_invariants();
    Access::prefetched(ledger) = 4;  // more bytes unread than were ever replayed
    EXPECT_THROW(ledger.check_invariants(), InvariantError);
  }
}

// The ledger against a set per agent kept beside it, on random replays, demand reads, writes and
// evictions: the unread bytes and the overwritten count agree after every call, so the inline
// shortcuts of demand_read and overwritten (nothing unread anywhere: nothing to do) are taken
// only when they change nothing. A ledger that missed unread bytes (the shortcut taken while
// some are unread) fails here and in check_invariants.
TEST(PrefetchLedger, RandomCallsMatchASetPerAgent) {
  std::uint32_t first = 1;
  if (const char* s = std::getenv("UNIMEM_TEST_SEED"))
    first = static_cast<std::uint32_t>(std::stoul(s));
  int shortcuts = 0;
  for (std::uint32_t seed = first; seed < first + 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (UNIMEM_TEST_SEED to rerun)");
    std::mt19937 rng(seed);
    const std::size_t agents = 3;
    PrefetchLedger ledger(agents);
    std::vector<IntervalSet> unread(agents);
    std::uint64_t overwritten = 0;
    auto random_set = [&] {
      const std::uint64_t begin = 8 * (rng() % 8);
      return IntervalSet{{begin, begin + 8 * (1 + rng() % 3)}};
    };
    for (int op = 0; op < 400; ++op) {
      const auto agent = static_cast<Agent>(rng() % agents);
      const IntervalSet bytes = random_set();
      const bool none_unread =
          std::all_of(unread.begin(), unread.end(), [](const IntervalSet& u) { return u.empty(); });
      switch (rng() % 5) {
        case 0: {  // a replay to agent, sometimes with a hop through the host
          ledger.begin_replay();
          ledger.replay_to(agent);
          if (rng() % 3 == 0) ledger.copied(kHostAgent, bytes);
          ledger.copied(agent, bytes);
          ledger.end_replay();
          unread[agent] = unread[agent].unite(bytes);
          break;
        }
        case 1:
        case 2:
          ledger.demand_read(agent, bytes);
          unread[agent] = unread[agent].subtract(bytes);
          break;
        case 3:
          ledger.overwritten(bytes);
          for (IntervalSet& u : unread) {
            overwritten += u.intersect(bytes).total_size();
            u = u.subtract(bytes);
          }
          break;
        default:
          ledger.evicted(agent, bytes);
          overwritten += unread[agent].intersect(bytes).total_size();
          unread[agent] = unread[agent].subtract(bytes);
          break;
      }
      if (none_unread) ++shortcuts;
      std::uint64_t total = overwritten;
      for (std::size_t a = 0; a < agents; ++a) {
        ASSERT_EQ(ledger.unread_on(static_cast<Agent>(a)), unread[a]) << "op " << op;
        total += unread[a].total_size();
      }
      ASSERT_EQ(ledger.unread_bytes(), total) << "op " << op;
      ASSERT_NO_THROW(ledger.check_invariants()) << "op " << op;
    }
  }
  EXPECT_GT(shortcuts, 500) << "the random calls hardly ever found nothing unread";
}

}  // namespace
}  // namespace unimem
