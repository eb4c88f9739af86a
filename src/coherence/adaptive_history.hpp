#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coherence/agent_mask.hpp"
#include "region/interval_set.hpp"

namespace unimem {

namespace detail {
struct AdaptiveHistoryTestAccess;  // defined by the tests that break a history on purpose
}  // namespace detail

/// One entry of an operation history: after the recorded kernel run, agent needed these bytes
/// that it did not hold (they were copied to it, on demand or by a replay).
struct Demand {
  Agent agent = kHostAgent;
  IntervalSet bytes;
  friend bool operator==(const Demand&, const Demand&) = default;
};
using DemandSequence = std::vector<Demand>;

/// The adaptive update strategy's memory for one buffer (DSOM section 4.2.3, Fig. 7): per kernel
/// x writing devices, the sequence of copies that followed a run until the buffer was next
/// written. Once a run is followed by the same sequence as the previous run (two occurrences in a
/// row), the next run's sequence is predicted and replayed as soon as the kernel completes.
/// Recording compares what readers needed, not what was copied, so a replayed sequence that is
/// consumed again records the same as the demand copies it replaced; a sequence that does not
/// recur is a misprediction and is not replayed again until it has recurred twice anew.
/// Not thread-safe.
class AdaptiveHistory {
 public:
  struct Key {
    std::string kernel;
    AgentMask writers;
    friend auto operator<=>(const Key&, const Key&) = default;
  };

  /// A reader (agent) is about to read bytes, of which `missing` are not valid on it. Recorded
  /// when a recording is open.
  void observe_read(Agent agent, const IntervalSet& bytes, IntervalSet missing);
  /// The buffer is written: the open recording (if any) ends and updates the history. Returns
  /// true when the recording had replayed a prediction that turned out wrong.
  bool close();
  /// Kernel key has written the buffer: starts a recording; returns the sequence to replay now,
  /// if the same sequence followed the previous two runs.
  std::optional<DemandSequence> open(const Key& key);
  /// Bytes a replay made valid on agent (consumed by later observe_read calls).
  void note_prefetched(Agent agent, const IntervalSet& bytes);

  /// Whether another run of kernel on writers, when nothing read or wrote the buffer since its
  /// last run and no reader misses a byte, would change nothing but the repeat count: the open
  /// recording is that run's, has recorded nothing and holds no replayed bytes, and the stored
  /// sequence of its key is the empty one (close() then only counts the run; open() replays
  /// nothing and opens the same empty recording again).
  [[nodiscard]] bool repeat_changes_only_count(const std::string& kernel, AgentMask writers) const;
  /// Such a run happened (repeat_changes_only_count held): counted as close() and open() would
  /// have, without doing them.
  void count_unchanged_repeat();
  /// Whether the open recording holds replayed bytes on agent that a read of bytes would use
  /// (observe_read would record them).
  [[nodiscard]] bool read_would_record(Agent agent, const IntervalSet& bytes) const;

  [[nodiscard]] bool recording() const { return open_.has_value(); }
  /// How many runs in a row were followed by the stored sequence of key (0 if unknown).
  [[nodiscard]] int repeat_count(const Key& key) const;

  /// Periodic cycles (RuntimeCore, "Periodic cycles"). How many closes so far started a key's
  /// count over (a new key, another sequence or a misprediction): while it stays the same, every
  /// close only added one to its key's count.
  [[nodiscard]] std::uint64_t restarts() const { return restarts_; }
  /// Whether every later operation acts on this history as on other: the same keys with the same
  /// stored sequences and counts (counts of 2 and more act alike: only "> 0" and ">= 2" are
  /// asked), the same open recording.
  [[nodiscard]] bool acts_as(const AdaptiveHistory& other) const;
  /// This history (a state within a verified round) with `rounds` more rounds' counts: each
  /// key's count grows by rounds times what it grew from round_start to round_end (a round
  /// without restarts, so every close in it only counted).
  void add_rounds(const AdaptiveHistory& round_start, const AdaptiveHistory& round_end,
                  std::uint64_t rounds);

  /// Throws InvariantError unless every stored sequence followed at least one run, no demand is
  /// empty, and an open recording that replayed a prediction has one (two runs or more, not
  /// empty) stored under its key.
  void check_invariants() const;

 private:
  friend struct detail::AdaptiveHistoryTestAccess;
  void check_if_enabled() const;

  struct Entry {
    DemandSequence sequence;
    int repeats = 0;
  };
  struct Recording {
    Key key;
    DemandSequence sequence;
    std::map<Agent, IntervalSet> prefetched;
    bool replayed = false;
    int unchanged_repeats = 0;  // count_unchanged_repeat since it opened; close() adds them
  };
  std::map<Key, Entry> entries_;
  std::optional<Recording> open_;
  std::uint64_t restarts_ = 0;  // restarts()
  // The storage of the sequence close() replaced, for the next recording (a kernel whose every
  // run is followed by a different sequence - floyd-warshall's pivot row - would otherwise
  // allocate one per run).
  DemandSequence spare_;
};

}  // namespace unimem
