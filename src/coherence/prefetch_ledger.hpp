#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "coherence/agent_mask.hpp"
#include "common/check.hpp"
#include "region/interval_set.hpp"

namespace unimem {

struct TransferStats;

namespace detail {
struct PrefetchLedgerTestAccess;  // defined by the tests that break a ledger on purpose
}  // namespace detail

/// The accounting of the adaptive strategy's replays for one buffer (TransferStats::replays,
/// prefetch_bytes, prefetch_unread_bytes): how many replays ran, the bytes they copied, and per
/// agent the bytes a replay copied there that no demand read has used yet, plus the bytes of such
/// copies overwritten before anyone read them. Bytes moved minus unread bytes is then the exact
/// demand, so replays are measured against the minimum. Not thread-safe.
class PrefetchLedger {
 public:
  explicit PrefetchLedger(std::size_t agent_count);

  /// A replay starts (counted in replays); its copies go to the agents named by replay_to.
  void begin_replay();
  /// The replay's next copies serve a predicted read on agent.
  void replay_to(Agent agent);
  /// The replay is over: later copies are demand copies again.
  void end_replay();
  [[nodiscard]] bool replaying() const { return replaying_; }

  /// A copy of bytes to agent `to` was issued. During a replay its bytes count as prefetched,
  /// and those landing on the predicted reader stay unread until a demand read uses them (a hop
  /// through the host on the way serves only that copy and is not tracked).
  void copied(Agent to, const IntervalSet& bytes);
  /// A demand read of bytes on agent uses what replays copied there.
  void demand_read(Agent agent, const IntervalSet& bytes) {
    // Inline with nothing unread anywhere (no replay, or every replayed byte read: every launch
    // of a buffer no replay serves, as floyd-warshall's), where it would change nothing.
    if (any_unread_) {
      demand_read_unread(agent, bytes);
    } else {
      UNIMEM_REQUIRE(agent < unread_.size(), "PrefetchLedger::demand_read: unknown agent");
    }
  }
  /// bytes are being overwritten (by any agent): replayed copies of them nobody read are wasted.
  void overwritten(const IntervalSet& bytes) {
    if (any_unread_) overwritten_unread(bytes);  // else nothing to count (demand_read)
  }
  /// agent's copy of bytes was evicted: replayed copies of them nobody read there are wasted.
  void evicted(Agent agent, const IntervalSet& bytes);

  /// Bytes replays copied to agent that no demand read has used yet.
  [[nodiscard]] const IntervalSet& unread_on(Agent agent) const { return unread_.at(agent); }
  /// Replayed bytes no reader used: overwritten first, or still unread.
  [[nodiscard]] std::uint64_t unread_bytes() const;
  /// Writes replays, prefetch_bytes and prefetch_unread_bytes of stats.
  void fill(TransferStats& stats) const;

  /// Periodic cycles (RuntimeCore, "Periodic cycles"): whether later operations act on this
  /// ledger as on other (the same unread bytes everywhere, no replay under way in either).
  [[nodiscard]] bool acts_as(const PrefetchLedger& other) const {
    return unread_ == other.unread_ && !replaying_ && !other.replaying_;
  }
  /// acts_as with the same counts too (RuntimeCore's carried rounds).
  [[nodiscard]] bool same_as(const PrefetchLedger& other) const {
    return acts_as(other) && overwritten_ == other.overwritten_ && replays_ == other.replays_ &&
           prefetched_ == other.prefetched_;
  }
  /// This ledger (a state within a verified round) with `rounds` more rounds' counts: each count
  /// grows by rounds times what it grew from round_start to round_end.
  void add_rounds(const PrefetchLedger& round_start, const PrefetchLedger& round_end,
                  std::uint64_t rounds);

  /// Throws InvariantError unless there is one unread set per agent, a replay target is set only
  /// during a replay, and the unread bytes on an agent are at most the bytes replays copied.
  void check_invariants() const;

 private:
  friend struct detail::PrefetchLedgerTestAccess;
  // Inline, so that a build without invariant checks pays no call for it.
  void check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
    check_invariants();
#endif
  }

  void demand_read_unread(Agent agent, const IntervalSet& bytes);
  void overwritten_unread(const IntervalSet& bytes);
  // Whether any set of unread_ is not empty (copied sets it, the others clear it once all are).
  void note_unread() {
    any_unread_ = false;
    for (const IntervalSet& unread : unread_) any_unread_ = any_unread_ || !unread.empty();
  }

  std::vector<IntervalSet> unread_;  // per agent
  bool any_unread_ = false;
  std::uint64_t overwritten_ = 0;
  std::uint64_t replays_ = 0;
  std::uint64_t prefetched_ = 0;  // bytes copied during replays
  bool replaying_ = false;
  std::optional<Agent> target_;  // the agent whose predicted read the current copies serve
};

}  // namespace unimem
