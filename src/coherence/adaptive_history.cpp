#include "coherence/adaptive_history.hpp"

#include <algorithm>
#include <string>

#include "common/check.hpp"

namespace unimem {

void AdaptiveHistory::observe_read(Agent agent, const IntervalSet& bytes, IntervalSet missing) {
  if (!open_) return;
  IntervalSet needed = std::move(missing);
  auto it = open_->prefetched.find(agent);
  if (it != open_->prefetched.end() && !it->second.empty()) {
    IntervalSet& prefetched = it->second;
    IntervalSet used;
    if (bytes.contains(prefetched)) {  // the read uses every replayed byte (a halo): all of them
      used = std::move(prefetched);
      prefetched = IntervalSet{};
    } else {
      used = prefetched.intersect(bytes);
      prefetched = prefetched.subtract(used);
    }
    needed = needed.empty() ? std::move(used) : needed.unite(used);
  }
  if (!needed.empty()) open_->sequence.push_back({agent, std::move(needed)});
  check_if_enabled();
}

bool AdaptiveHistory::close() {
  if (!open_) return false;
  Entry& e = entries_[open_->key];
  e.repeats += open_->unchanged_repeats;  // each was a close() finding the same empty sequence
  bool mispredicted = false;
  if (e.repeats > 0 && e.sequence == open_->sequence) {
    ++e.repeats;
    spare_ = std::move(open_->sequence);
  } else {
    mispredicted = open_->replayed;
    std::swap(e.sequence, open_->sequence);
    spare_ = std::move(open_->sequence);  // the replaced sequence's storage
    e.repeats = 1;
    ++restarts_;
  }
  spare_.clear();
  open_.reset();
  check_if_enabled();
  return mispredicted;
}

std::optional<DemandSequence> AdaptiveHistory::open(const Key& key) {
  close();
  open_ = Recording{key, std::move(spare_), {}, false};
  spare_ = DemandSequence{};
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.repeats < 2 || it->second.sequence.empty()) {
    check_if_enabled();
    return std::nullopt;
  }
  open_->replayed = true;
  check_if_enabled();
  return it->second.sequence;
}

void AdaptiveHistory::note_prefetched(Agent agent, const IntervalSet& bytes) {
  if (!open_) return;
  IntervalSet& p = open_->prefetched[agent];
  p = p.empty() ? bytes : p.unite(bytes);
  check_if_enabled();
}

bool AdaptiveHistory::repeat_changes_only_count(const std::string& kernel,
                                                AgentMask writers) const {
  if (!open_ || open_->replayed || !open_->sequence.empty()) return false;
  if (open_->key.writers != writers || open_->key.kernel != kernel) return false;
  for (const auto& [agent, bytes] : open_->prefetched) {
    if (!bytes.empty()) return false;
  }
  auto it = entries_.find(open_->key);
  return it != entries_.end() && it->second.repeats >= 1 && it->second.sequence.empty();
}

void AdaptiveHistory::count_unchanged_repeat() {
  UNIMEM_REQUIRE(open_.has_value(), "AdaptiveHistory: an unchanged repeat needs a recording");
  ++open_->unchanged_repeats;
}

bool AdaptiveHistory::read_would_record(Agent agent, const IntervalSet& bytes) const {
  if (!open_) return false;
  auto it = open_->prefetched.find(agent);
  return it != open_->prefetched.end() && it->second.intersects(bytes);
}

int AdaptiveHistory::repeat_count(const Key& key) const {
  auto it = entries_.find(key);
  const int pending = open_ && open_->key == key ? open_->unchanged_repeats : 0;
  return it == entries_.end() ? 0 : it->second.repeats + pending;
}

bool AdaptiveHistory::acts_as(const AdaptiveHistory& other) const {
  if (entries_.size() != other.entries_.size() || open_.has_value() != other.open_.has_value()) {
    return false;
  }
  for (auto a = entries_.begin(), b = other.entries_.begin(); a != entries_.end(); ++a, ++b) {
    if (a->first != b->first || a->second.sequence != b->second.sequence ||
        std::min(a->second.repeats, 2) != std::min(b->second.repeats, 2)) {
      return false;
    }
  }
  if (!open_) return true;
  const Recording& x = *open_;
  const Recording& y = *other.open_;
  const auto empty_prefetch = [](const std::map<Agent, IntervalSet>& m, Agent a) {
    auto it = m.find(a);
    return it == m.end() || it->second.empty();
  };
  for (const auto& [agent, bytes] : x.prefetched) {
    auto it = y.prefetched.find(agent);
    if (it == y.prefetched.end() ? !bytes.empty() : it->second != bytes) return false;
  }
  for (const auto& [agent, bytes] : y.prefetched) {
    if (!bytes.empty() && empty_prefetch(x.prefetched, agent)) return false;
  }
  return x.key == y.key && x.sequence == y.sequence && x.replayed == y.replayed &&
         x.unchanged_repeats == y.unchanged_repeats;
}

void AdaptiveHistory::add_rounds(const AdaptiveHistory& round_start,
                                 const AdaptiveHistory& round_end, std::uint64_t rounds) {
  for (const auto& [key, end] : round_end.entries_) {
    const int grew = round_end.repeat_count(key) - round_start.repeat_count(key);
    if (grew == 0) continue;
    auto it = entries_.find(key);
    UNIMEM_REQUIRE(grew > 0 && it != entries_.end() && round_end.restarts_ == round_start.restarts_,
                   "AdaptiveHistory::add_rounds: counts of a round that restarted");
    it->second.repeats += static_cast<int>(
        std::min<std::uint64_t>(rounds * static_cast<std::uint64_t>(grew), 1U << 30));
  }
  check_if_enabled();
}

void AdaptiveHistory::check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
  check_invariants();
#endif
}

void AdaptiveHistory::check_invariants() const {
  auto fail = [](const std::string& what) {
    detail::throw_invariant("AdaptiveHistory: " + what, __FILE__, __LINE__);
  };
  auto check_sequence = [&](const DemandSequence& sequence, const std::string& where) {
    for (const Demand& d : sequence) {
      d.bytes.check_invariants();
      if (d.bytes.empty())
        fail(where + " holds an empty demand of agent " + std::to_string(d.agent));
      if (d.agent >= kMaxAgents) fail(where + " names agent " + std::to_string(d.agent));
    }
  };
  for (const auto& [key, entry] : entries_) {
    const std::string where =
        "the entry of kernel '" + key.kernel + "' on " + key.writers.to_string();
    if (entry.repeats < 1) fail(where + " followed " + std::to_string(entry.repeats) + " runs");
    check_sequence(entry.sequence, where);
  }
  if (!open_) return;
  const std::string where =
      "the recording of kernel '" + open_->key.kernel + "' on " + open_->key.writers.to_string();
  check_sequence(open_->sequence, where);
  for (const auto& [agent, bytes] : open_->prefetched) bytes.check_invariants();
  if (open_->replayed) {
    auto it = entries_.find(open_->key);
    if (it == entries_.end() || it->second.repeats < 2 || it->second.sequence.empty()) {
      fail(where + " replayed a prediction the history does not hold");
    }
  }
}

}  // namespace unimem
