#include "coherence/prefetch_ledger.hpp"

#include <string>

#include <unimem/transfer_stats.hpp>

#include "common/check.hpp"

namespace unimem {

PrefetchLedger::PrefetchLedger(std::size_t agent_count) : unread_(agent_count) {}

void PrefetchLedger::begin_replay() {
  UNIMEM_REQUIRE(!replaying_, "PrefetchLedger::begin_replay: a replay is already running");
  replaying_ = true;
  ++replays_;
  check_if_enabled();
}

void PrefetchLedger::replay_to(Agent agent) {
  UNIMEM_REQUIRE(replaying_, "PrefetchLedger::replay_to: no replay is running");
  UNIMEM_REQUIRE(agent < unread_.size(), "PrefetchLedger::replay_to: unknown agent");
  target_ = agent;
  check_if_enabled();
}

void PrefetchLedger::end_replay() {
  replaying_ = false;
  target_.reset();
  check_if_enabled();
}

void PrefetchLedger::add_rounds(const PrefetchLedger& round_start, const PrefetchLedger& round_end,
                                std::uint64_t rounds) {
  overwritten_ += rounds * (round_end.overwritten_ - round_start.overwritten_);
  replays_ += rounds * (round_end.replays_ - round_start.replays_);
  prefetched_ += rounds * (round_end.prefetched_ - round_start.prefetched_);
  check_if_enabled();
}

void PrefetchLedger::copied(Agent to, const IntervalSet& bytes) {
  if (!replaying_) return;
  prefetched_ += bytes.total_size();
  if (target_ && to == *target_) {
    unread_[to] = unread_[to].unite(bytes);
    any_unread_ = any_unread_ || !unread_[to].empty();
  }
  check_if_enabled();
}

void PrefetchLedger::demand_read_unread(Agent agent, const IntervalSet& bytes) {
  IntervalSet& unread = unread_.at(agent);
  if (!unread.empty()) {
    unread = unread.subtract(bytes);
    if (unread.empty()) note_unread();
  }
  check_if_enabled();
}

void PrefetchLedger::overwritten_unread(const IntervalSet& bytes) {
  for (IntervalSet& unread : unread_) {
    if (unread.empty()) continue;
    overwritten_ += unread.intersect(bytes).total_size();
    unread = unread.subtract(bytes);
  }
  note_unread();
  check_if_enabled();
}

void PrefetchLedger::evicted(Agent agent, const IntervalSet& bytes) {
  IntervalSet& unread = unread_.at(agent);
  if (!unread.empty()) {
    overwritten_ += unread.intersect(bytes).total_size();
    unread = unread.subtract(bytes);
    if (unread.empty()) note_unread();
  }
  check_if_enabled();
}

std::uint64_t PrefetchLedger::unread_bytes() const {
  std::uint64_t total = overwritten_;
  for (const IntervalSet& unread : unread_) total += unread.total_size();
  return total;
}

void PrefetchLedger::fill(TransferStats& stats) const {
  stats.replays = replays_;
  stats.prefetch_bytes = prefetched_;
  stats.prefetch_unread_bytes = unread_bytes();
}

void PrefetchLedger::check_invariants() const {
  if (target_ && !replaying_) {
    detail::throw_invariant("PrefetchLedger: a replay target (agent " + std::to_string(*target_) +
                                ") is set outside a replay",
                            __FILE__, __LINE__);
  }
  if (target_ && *target_ >= unread_.size()) {
    detail::throw_invariant("PrefetchLedger: replay target agent " + std::to_string(*target_) +
                                " beyond the " + std::to_string(unread_.size()) + " agents",
                            __FILE__, __LINE__);
  }
  for (const IntervalSet& unread : unread_) {
    unread.check_invariants();
    if (!any_unread_ && !unread.empty()) {
      detail::throw_invariant("PrefetchLedger: unread bytes " + unread.to_string() +
                                  " while none are known (demand reads and writes would not "
                                  "count them)",
                              __FILE__, __LINE__);
    }
  }
  // Every unread or overwritten byte was copied by a replay (each copy is counted once there).
  if (unread_bytes() > prefetched_) {
    detail::throw_invariant("PrefetchLedger: " + std::to_string(unread_bytes()) +
                                " replayed bytes unread but only " + std::to_string(prefetched_) +
                                " bytes were replayed",
                            __FILE__, __LINE__);
  }
}

}  // namespace unimem
