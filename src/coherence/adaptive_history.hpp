#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coherence/agent_mask.hpp"
#include "common/check.hpp"
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
  void observe_read(Agent agent, const IntervalSet& bytes, const IntervalSet& missing);
  /// The buffer is written: the open recording (if any) ends and updates the history. Returns
  /// true when the recording had replayed a prediction that turned out wrong.
  bool close();
  /// Kernel key has written the buffer: starts a recording; returns the sequence to replay now,
  /// if the same sequence followed the previous two runs.
  std::optional<DemandSequence> open(const Key& key) { return open(key.kernel, key.writers); }
  /// The same, without building a key (once per launch of every written buffer).
  std::optional<DemandSequence> open(const std::string& kernel, AgentMask writers);
  /// The same without copying the sequence: the stored one, or null. It stays valid (and
  /// unchanged) until the next close() or open(); nothing else changes a stored sequence.
  const DemandSequence* open_prediction(const std::string& kernel, AgentMask writers);
  /// One read of a run that missed `bytes` (observe_read's agent and missing set).
  struct Miss {
    Agent agent = kHostAgent;
    const IntervalSet* bytes = nullptr;
  };
  /// A whole run at once when all it does is restart its key's count: observe_read of each miss
  /// in order, close(), then open_prediction(kernel, writers), which answers null. Applies when
  /// the open recording is kernel on writers and holds nothing yet (no demand, no replayed bytes
  /// or prediction, no unchanged runs), its entry is known, and the misses' non-empty sets
  /// differ from the entry's sequence (floyd-warshall: each launch's pivot row is another row);
  /// returns false, having changed nothing, otherwise. Why it is the same is written above the
  /// definition; invariant builds run the three calls on a copy and compare (same_as).
  bool restart_run(const std::string& kernel, AgentMask writers, std::span<const Miss> misses);
  /// `runs` restarting runs in a row that restart_run did not take (a caller deferred them:
  /// SharedBuffer's family of restarts), the last one's misses `last`: what restart_run of each
  /// in turn leaves, when each applied (each run's non-empty misses differed from the run's
  /// before, the first's from the entry's sequence), since each of them replaces the entry's
  /// sequence, sets its count to 1 and counts a restart. Requires what restart_run checks but
  /// the key and the comparison: the recording holds nothing and its entry is known (the runs
  /// were of the recording's key).
  void restart_runs(std::span<const Miss> last, std::uint64_t runs);
  /// Whether the open recording is kernel's on writers (restart_run's key).
  [[nodiscard]] bool records(const std::string& kernel, AgentMask writers) const {
    return open_ && recording_.key.writers == writers && recording_.key.kernel == kernel;
  }
  /// Whether restart_run could apply to a run whose reads come next: the open recording holds
  /// nothing yet, so observe_read records each read's missing bytes and nothing else (a caller
  /// may then pass its reads to restart_run later, or observe them then, to the same effect, as
  /// long as no other call on this history comes in between).
  [[nodiscard]] bool records_misses_only() const {
    return open_ && !recording_.replayed && !recording_.any_prefetched &&
           recording_.sequence.empty() && recording_.unchanged_repeats == 0;
  }
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
  void count_unchanged_repeat(int runs = 1);
  /// Whether the open recording holds replayed bytes on agent that a read of bytes would use
  /// (observe_read would record them).
  [[nodiscard]] bool read_would_record(Agent agent, const IntervalSet& bytes) const;

  [[nodiscard]] bool recording() const { return open_; }
  /// How many runs in a row were followed by the stored sequence of key (0 if unknown).
  [[nodiscard]] int repeat_count(const Key& key) const;

  /// Periodic cycles (RuntimeCore, "Periodic cycles"). How many closes so far started a key's
  /// count over (a new key, another sequence or a misprediction): while it stays the same, every
  /// close only added one to its key's count.
  [[nodiscard]] std::uint64_t restarts() const { return restarts_; }
  /// Whether every later operation acts on this history as on other: the same keys with the same
  /// stored sequences and counts (counts of 2 and more act alike: only "> 0" and ">= 2" are
  /// asked), the same open recording (its runs counted by count_unchanged_repeat compared as
  /// the counts are: close() adds them to its key's count).
  [[nodiscard]] bool acts_as(const AdaptiveHistory& other) const;
  /// acts_as with every count equal too (restarts(), each key's count, the open recording's
  /// unchanged runs): later operations act alike and count alike (RuntimeCore's carried rounds).
  [[nodiscard]] bool same_as(const AdaptiveHistory& other) const;
  /// This history (a state within a verified round) with `rounds` more rounds' counts: each
  /// key's count grows by rounds times what it grew from round_start to round_end (a round
  /// without restarts, so every close in it only counted).
  void add_rounds(const AdaptiveHistory& round_start, const AdaptiveHistory& round_end,
                  std::uint64_t rounds);
  /// What acts_as compares of the counts, summed up, with restarts(): two histories of which
  /// one acts as the other with the same restarts() have the same signature (the same number of
  /// keys, each with the same min(count, 2); the same open flag), so a round over which the
  /// signature changed is not periodic (RuntimeCore's probe rounds).
  struct CountSignature {
    std::size_t keys = 0;
    std::uint64_t counts = 0;  // the sum of min(count, 2) over the keys
    std::uint64_t restarts = 0;
    bool open = false;
    friend bool operator==(const CountSignature&, const CountSignature&) = default;
  };
  [[nodiscard]] CountSignature count_signature() const;

  /// Throws InvariantError unless every stored sequence followed at least one run, no demand is
  /// empty, and an open recording that replayed a prediction has one (two runs or more, not
  /// empty) stored under its key.
  void check_invariants() const;

 private:
  friend struct detail::AdaptiveHistoryTestAccess;
  // Inline, so that a build without invariant checks pays no call for it.
  void check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
    check_invariants();
#endif
  }

  struct Entry {
    DemandSequence sequence;
    int repeats = 0;
  };
  // The open recording (while open_). Kept between recordings with its storage: a kernel run
  // after every launch (floyd-warshall's 1024 per run) opens and closes one each time, and
  // building and destroying it cost more than the rest of the two calls.
  struct Recording {
    Key key;
    DemandSequence sequence;
    std::vector<IntervalSet> prefetched;  // per agent; agents beyond its size have none
    bool any_prefetched = false;          // some set of prefetched is not empty
    bool replayed = false;
    int unchanged_repeats = 0;  // count_unchanged_repeat since it opened; close() adds them
  };
  // Appends a demand of agent for a copy of bytes, its set's storage taken from spare_bytes_.
  void record_demand(Agent agent, const IntervalSet& bytes);
  using Entries = std::map<Key, Entry>;
  // The node of recording_.key in entries_, or null when not looked up yet: a kernel that writes
  // the buffer at every launch (floyd-warshall) closes and opens the same key each time, and
  // two map look-ups (a string compare each step down) cost more than the rest of close() and
  // open(). Map nodes stay where they are until the map goes (entries are never erased), and a
  // copied history looks its own up again: a copy of this is null, a move takes it along with
  // the map's nodes.
  class EntryCache {
   public:
    EntryCache() = default;
    EntryCache(const EntryCache&) noexcept {}
    EntryCache& operator=(const EntryCache&) noexcept {
      node = nullptr;
      return *this;
    }
    EntryCache(EntryCache&& other) noexcept : node(other.node) { other.node = nullptr; }
    EntryCache& operator=(EntryCache&& other) noexcept {
      node = other.node;
      other.node = nullptr;
      return *this;
    }
    ~EntryCache() = default;
    Entries::value_type* node = nullptr;
  };
  // restart_run's change once it applies: the entry's sequence becomes the misses' non-empty
  // sets (`nonempty` of them, counted by the caller), its count 1, and `runs` restarts are counted.
  void store_restart(std::span<const Miss> misses, std::size_t nonempty, std::uint64_t runs);
  // The stored entry of recording_.key, made if it has none.
  Entry& recorded_entry();
  Entries entries_;
  Recording recording_;
  EntryCache entry_;
  bool open_ = false;
  std::uint64_t restarts_ = 0;  // restarts()
  // The byte sets of the demands close() dropped (the sequence it replaced, or the recording's
  // when it equalled the stored one), kept for the demands to come: a kernel whose every run is
  // followed by a different sequence (floyd-warshall's pivot row) would otherwise allocate one
  // per run. Their contents are stale; record_demand overwrites them.
  // Storage only, so a copy of the history (a periodic cycle's state, SharedBuffer::
  // take_periodic_state, several per launch while one is captured) copies none of it: a copy
  // starts with none, an assignment keeps the target's own.
  class SpareBytes {
   public:
    SpareBytes() = default;
    SpareBytes(const SpareBytes&) noexcept {}
    SpareBytes& operator=(const SpareBytes&) noexcept { return *this; }
    SpareBytes(SpareBytes&&) noexcept = default;
    SpareBytes& operator=(SpareBytes&&) noexcept = default;
    ~SpareBytes() = default;
    std::vector<IntervalSet> sets;
  };
  SpareBytes spare_bytes_;
  static constexpr std::size_t kMaxSpareBytes = 64;
};

}  // namespace unimem
