#include "coherence/adaptive_history.hpp"

namespace unimem {

void AdaptiveHistory::observe_read(Agent agent, const IntervalSet& bytes,
                                   const IntervalSet& missing) {
  if (!open_) return;
  IntervalSet needed = missing;
  auto it = open_->prefetched.find(agent);
  if (it != open_->prefetched.end()) {
    const IntervalSet used = it->second.intersect(bytes);
    it->second = it->second.subtract(used);
    needed = needed.unite(used);
  }
  if (!needed.empty()) open_->sequence.push_back({agent, std::move(needed)});
}

bool AdaptiveHistory::close() {
  if (!open_) return false;
  Entry& e = entries_[open_->key];
  bool mispredicted = false;
  if (e.repeats > 0 && e.sequence == open_->sequence) {
    ++e.repeats;
  } else {
    mispredicted = open_->replayed;
    e.sequence = std::move(open_->sequence);
    e.repeats = 1;
  }
  open_.reset();
  return mispredicted;
}

std::optional<DemandSequence> AdaptiveHistory::open(const Key& key) {
  close();
  open_ = Recording{key, {}, {}, false};
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.repeats < 2 || it->second.sequence.empty()) {
    return std::nullopt;
  }
  open_->replayed = true;
  return it->second.sequence;
}

void AdaptiveHistory::note_prefetched(Agent agent, const IntervalSet& bytes) {
  if (!open_) return;
  IntervalSet& p = open_->prefetched[agent];
  p = p.unite(bytes);
}

int AdaptiveHistory::repeat_count(const Key& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.repeats;
}

}  // namespace unimem
