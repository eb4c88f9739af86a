#include "coherence/adaptive_history.hpp"

#include <algorithm>
#include <string>

#include "common/check.hpp"

namespace unimem {

void AdaptiveHistory::record_demand(Agent agent, const IntervalSet& bytes) {
  Demand& d = recording_.sequence.emplace_back();
  d.agent = agent;
  std::vector<IntervalSet>& spare = spare_bytes_.sets;
  if (!spare.empty()) {
    d.bytes = std::move(spare.back());
    spare.pop_back();
  }
  d.bytes = bytes;  // into the spare set's storage
}

void AdaptiveHistory::observe_read(Agent agent, const IntervalSet& bytes,
                                   const IntervalSet& missing) {
  if (!open_) return;
  Recording& r = recording_;
  if (!r.any_prefetched || agent >= r.prefetched.size() || r.prefetched[agent].empty()) {
    if (!missing.empty()) record_demand(agent, missing);
    check_if_enabled();
    return;
  }
  IntervalSet& prefetched = r.prefetched[agent];
  IntervalSet used;
  if (bytes.contains(prefetched)) {  // the read uses every replayed byte (a halo): all of them
    used = std::move(prefetched);
    prefetched = IntervalSet{};
  } else {
    used = prefetched.intersect(bytes);
    prefetched = prefetched.subtract(used);
  }
  if (missing.empty()) {
    if (!used.empty()) r.sequence.push_back({agent, std::move(used)});
  } else {
    record_demand(agent, used.empty() ? missing : missing.unite(used));
  }
  check_if_enabled();
}

bool AdaptiveHistory::close() {
  if (!open_) return false;
  Recording& r = recording_;
  Entry& e = recorded_entry();
  e.repeats += r.unchanged_repeats;  // each was a close() finding the same empty sequence
  bool mispredicted = false;
  if (e.repeats > 0 && e.sequence == r.sequence) {
    ++e.repeats;
  } else {
    mispredicted = r.replayed;
    std::swap(e.sequence, r.sequence);  // the recording keeps the replaced sequence's storage
    e.repeats = 1;
    ++restarts_;
  }
  for (Demand& d : r.sequence) {
    if (spare_bytes_.sets.size() == kMaxSpareBytes) break;
    spare_bytes_.sets.push_back(std::move(d.bytes));
  }
  r.sequence.clear();
  open_ = false;
  check_if_enabled();
  return mispredicted;
}

std::optional<DemandSequence> AdaptiveHistory::open(const std::string& kernel, AgentMask writers) {
  const DemandSequence* replay = open_prediction(kernel, writers);
  if (replay == nullptr) return std::nullopt;
  return *replay;
}

const DemandSequence* AdaptiveHistory::open_prediction(const std::string& kernel,
                                                       AgentMask writers) {
  close();
  Recording& r = recording_;
  if (r.key.kernel != kernel || r.key.writers != writers) {
    if (r.key.kernel != kernel) r.key.kernel = kernel;  // the same kernel again: no copy
    r.key.writers = writers;
    entry_.node = nullptr;  // another key: looked up below
  }
  if (r.any_prefetched) {
    for (IntervalSet& p : r.prefetched) p.clear();  // keeps its storage for note_prefetched
    r.any_prefetched = false;
  }
  r.replayed = false;
  r.unchanged_repeats = 0;
  open_ = true;
  if (entry_.node == nullptr) {
    if (auto it = entries_.find(r.key); it != entries_.end()) entry_.node = &*it;
  }
  const Entry* e = entry_.node != nullptr ? &entry_.node->second : nullptr;
  if (e == nullptr || e->repeats < 2 || e->sequence.empty()) {
    check_if_enabled();
    return nullptr;
  }
  r.replayed = true;
  check_if_enabled();
  return &e->sequence;
}

// Why restart_run is the three calls. Let K = (kernel, writers) be the open recording's key, E its
// entry (entry_ points at it), and L the misses' non-empty sets in order. The recording holds
// nothing (records_misses_only): no replayed bytes, so observe_read(agent, bytes, missing)
// appends (agent, missing) when missing is not empty and does nothing else; the recording's
// sequence becomes L. close() adds the unchanged runs (none) to E's count; E.repeats > 0
// (every entry followed a run) and E.sequence != L (checked), so it stores L in E with count 1
// and counts a restart; the recording had replayed nothing, so it returns false (no
// misprediction); the recording's sequence ends empty (its old sets go to spare storage: no
// behaviour). open_prediction(kernel, writers) closes nothing (closed), keeps the key (the
// same) and entry_, clears replayed bytes (none), replayed and the unchanged runs (both already
// so), opens, and answers null: E.repeats = 1 < 2. So the state after the three calls differs
// from the one before only in E.sequence = L, E.repeats = 1 and restarts_ + 1, which is what is
// done below (E's own storage reused), and nobody was told of a misprediction.
bool AdaptiveHistory::restart_run(const std::string& kernel, AgentMask writers,
                                  std::span<const Miss> misses) {
  if (!records_misses_only() || entry_.node == nullptr || !records(kernel, writers)) return false;
  Entry& e = entry_.node->second;
  std::size_t n = 0;  // the non-empty misses, compared with E's sequence in order
  bool same = true;
  for (const Miss& m : misses) {
    if (m.bytes->empty()) continue;
    same = same && n < e.sequence.size() && e.sequence[n].agent == m.agent &&
           e.sequence[n].bytes == *m.bytes;
    ++n;
  }
  if (same && n == e.sequence.size()) return false;  // close() would count a repeat
#if UNIMEM_INVARIANTS_ENABLED
  AdaptiveHistory full(*this);
  for (const Miss& m : misses) full.observe_read(m.agent, *m.bytes, *m.bytes);
  const bool full_mispredicted = full.close();
  const DemandSequence* full_prediction = full.open_prediction(kernel, writers);
#endif
  store_restart(misses, n, 1);
#if UNIMEM_INVARIANTS_ENABLED
  if (full_mispredicted || full_prediction != nullptr || !same_as(full)) {
    detail::throw_invariant("AdaptiveHistory: a restarting run of kernel '" + kernel + "' on " +
                                writers.to_string() +
                                " does not leave what observe_read, close and open would",
                            __FILE__, __LINE__);
  }
#endif
  check_if_enabled();
  return true;
}

void AdaptiveHistory::store_restart(std::span<const Miss> misses, std::size_t nonempty,
                                    std::uint64_t runs) {
  Entry& e = entry_.node->second;
  e.sequence.resize(nonempty);
  std::size_t i = 0;
  for (const Miss& m : misses) {
    if (m.bytes->empty()) continue;
    e.sequence[i].agent = m.agent;
    e.sequence[i].bytes = *m.bytes;  // into the stored demand's storage
    ++i;
  }
  e.repeats = 1;
  restarts_ += runs;
}

// restart_runs: restart_run changes only the entry's sequence (to the run's misses), its count
// (to 1) and restarts_ (+1), and leaves the recording open, holding nothing, on the same key, so
// each next one applies again as long as its misses differ (the caller's condition); after n of
// them the entry holds the last run's misses with count 1, and restarts_ grew by n.
void AdaptiveHistory::restart_runs(std::span<const Miss> last, std::uint64_t runs) {
  UNIMEM_REQUIRE(records_misses_only() && entry_.node != nullptr,
                 "AdaptiveHistory::restart_runs: the recording is not an empty one of its key");
  if (runs == 0) return;
  std::size_t n = 0;
  for (const Miss& m : last) n += m.bytes->empty() ? 0 : 1;
  store_restart(last, n, runs);
  check_if_enabled();
}

AdaptiveHistory::Entry& AdaptiveHistory::recorded_entry() {
  if (entry_.node == nullptr) entry_.node = &*entries_.try_emplace(recording_.key).first;
  return entry_.node->second;
}

void AdaptiveHistory::note_prefetched(Agent agent, const IntervalSet& bytes) {
  if (!open_) return;
  Recording& r = recording_;
  if (r.prefetched.size() <= agent) r.prefetched.resize(agent + 1);
  IntervalSet& p = r.prefetched[agent];
  if (p.empty()) {
    p = bytes;  // into the storage open() kept
  } else {
    p = p.unite(bytes);
  }
  r.any_prefetched = r.any_prefetched || !p.empty();
  check_if_enabled();
}

bool AdaptiveHistory::repeat_changes_only_count(const std::string& kernel,
                                                AgentMask writers) const {
  const Recording& r = recording_;
  if (!open_ || r.replayed || !r.sequence.empty()) return false;
  if (r.key.writers != writers || r.key.kernel != kernel) return false;
  for (const IntervalSet& bytes : r.prefetched) {
    if (!bytes.empty()) return false;
  }
  auto it = entries_.find(r.key);
  return it != entries_.end() && it->second.repeats >= 1 && it->second.sequence.empty();
}

void AdaptiveHistory::count_unchanged_repeat(int runs) {
  UNIMEM_REQUIRE(open_, "AdaptiveHistory: an unchanged repeat needs a recording");
  recording_.unchanged_repeats += runs;
}

bool AdaptiveHistory::read_would_record(Agent agent, const IntervalSet& bytes) const {
  if (!open_ || agent >= recording_.prefetched.size()) return false;
  return recording_.prefetched[agent].intersects(bytes);
}

int AdaptiveHistory::repeat_count(const Key& key) const {
  auto it = entries_.find(key);
  const int pending = open_ && recording_.key == key ? recording_.unchanged_repeats : 0;
  return it == entries_.end() ? 0 : it->second.repeats + pending;
}

bool AdaptiveHistory::acts_as(const AdaptiveHistory& other) const {
  if (entries_.size() != other.entries_.size() || open_ != other.open_) return false;
  for (auto a = entries_.begin(), b = other.entries_.begin(); a != entries_.end(); ++a, ++b) {
    if (a->first != b->first || a->second.sequence != b->second.sequence ||
        std::min(a->second.repeats, 2) != std::min(b->second.repeats, 2)) {
      return false;
    }
  }
  if (!open_) return true;  // a closed recording's contents are stale: never read
  const Recording& x = recording_;
  const Recording& y = other.recording_;
  // Agents beyond a list's size hold no replayed bytes.
  const std::size_t agents = std::max(x.prefetched.size(), y.prefetched.size());
  static const IntervalSet none;
  for (std::size_t agent = 0; agent < agents; ++agent) {
    const IntervalSet& p = agent < x.prefetched.size() ? x.prefetched[agent] : none;
    const IntervalSet& q = agent < y.prefetched.size() ? y.prefetched[agent] : none;
    if (p != q) return false;
  }
  // The runs counted without a close (count_unchanged_repeat) are a counter like the entries'
  // repeats: close() adds them to the key's count before it asks "> 0", and open() asks ">= 2"
  // after that, so counts of 2 and more act alike here too. (Compared exactly, a recording that
  // a directory-skipping repeat keeps open for a whole cycle, fdtd2d's ex, grew by one every
  // round and no round was periodic.)
  return x.key == y.key && x.sequence == y.sequence && x.replayed == y.replayed &&
         std::min(x.unchanged_repeats, 2) == std::min(y.unchanged_repeats, 2);
}

bool AdaptiveHistory::same_as(const AdaptiveHistory& other) const {
  if (restarts_ != other.restarts_ || !acts_as(other)) return false;
  for (auto a = entries_.begin(), b = other.entries_.begin(); a != entries_.end(); ++a, ++b) {
    if (a->second.repeats != b->second.repeats) return false;
  }
  return !open_ || recording_.unchanged_repeats == other.recording_.unchanged_repeats;
}

AdaptiveHistory::CountSignature AdaptiveHistory::count_signature() const {
  CountSignature s;
  s.keys = entries_.size();
  for (const auto& [key, entry] : entries_) {
    s.counts += static_cast<std::uint64_t>(std::clamp(entry.repeats, 0, 2));
  }
  s.restarts = restarts_;
  s.open = open_;
  return s;
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
  if (entry_.node != nullptr) {
    const auto it = entries_.find(recording_.key);
    if (it == entries_.end() || &*it != entry_.node) {
      fail("the remembered entry of kernel '" + recording_.key.kernel + "' on " +
           recording_.key.writers.to_string() + " is not its entry in this history");
    }
  }
  for (const auto& [key, entry] : entries_) {
    const std::string where =
        "the entry of kernel '" + key.kernel + "' on " + key.writers.to_string();
    if (entry.repeats < 1) fail(where + " followed " + std::to_string(entry.repeats) + " runs");
    check_sequence(entry.sequence, where);
  }
  if (!open_) return;
  const Recording& r = recording_;
  const std::string where =
      "the recording of kernel '" + r.key.kernel + "' on " + r.key.writers.to_string();
  check_sequence(r.sequence, where);
  for (const IntervalSet& bytes : r.prefetched) bytes.check_invariants();
  if (!r.any_prefetched && std::any_of(r.prefetched.begin(), r.prefetched.end(),
                                       [](const IntervalSet& bytes) { return !bytes.empty(); })) {
    fail(where + " holds replayed bytes it does not know of");
  }
  if (r.replayed) {
    auto it = entries_.find(r.key);
    if (it == entries_.end() || it->second.repeats < 2 || it->second.sequence.empty()) {
      fail(where + " replayed a prediction the history does not hold");
    }
  }
}

}  // namespace unimem
