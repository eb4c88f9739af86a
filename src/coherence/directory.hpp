#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coherence/agent_mask.hpp"
#include "region/interval_map.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// One copy to perform: the bytes of range move from agent `from`'s copy to agent `to`'s.
struct Transfer {
  Interval range;
  Agent from = kHostAgent;
  Agent to = kHostAgent;
  friend bool operator==(const Transfer&, const Transfer&) = default;
  [[nodiscard]] std::string to_string() const;
};

/// Whether device agent `to` can copy directly from device agent `from` (a peer copy).
using PeerPolicy = std::function<bool(Agent from, Agent to)>;

/// The per-buffer directory of DSOM section 4.2.2 (the buffer segment table) with Matz et al.'s
/// tracker (section 8.1) generalised to shared copies: for every byte, the mask of agents whose
/// copy is current. Segments are maximal (IntervalMap). The apply_* methods implement the request
/// actions of DSOM Table 1 (seed 000_7b2a075be0870d8f.txt), byte-granular: they update the masks
/// as if the returned transfers had been performed, in order, and return those transfers.
///
/// Invariants (DESIGN.md, checked after every mutation when UNIMEM_INVARIANTS_ENABLED):
/// the map covers exactly [0, size); every byte has at least one valid agent; no bit names an
/// agent beyond agent_count; adjacent segments differ. A mask without the host bit is dirty: its
/// device holders (one after a kernel write - Modified - or several after peer copies) are ahead
/// of the home copy.
///
/// Not thread-safe; its owner serialises access.
class Directory {
 public:
  /// A directory of size bytes over agent_count agents (host + devices, at most 64). Every byte
  /// starts valid on the host only: the home copy is the initial content.
  Directory(std::uint64_t size, std::size_t agent_count);

  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] std::size_t agent_count() const { return agent_count_; }
  [[nodiscard]] std::size_t segment_count() const { return map_.segment_count(); }
  [[nodiscard]] AgentMask mask_at(std::uint64_t offset) const;
  [[nodiscard]] std::vector<IntervalMap<AgentMask>::Segment> segments() const {
    return map_.segments();
  }
  /// The bytes of ranges whose copy on agent is not current.
  [[nodiscard]] IntervalSet missing_on(Agent agent, const IntervalSet& ranges) const;
  /// Whether agent alone holds every byte of ranges (what apply_device_write(agent, ranges)
  /// leaves): writing them there again would change nothing.
  [[nodiscard]] bool held_only_by(Agent agent, const IntervalSet& ranges) const;
  /// Counts the calls that may change masks (every apply_* call, whether it changed one or not):
  /// while it stays the same, so does every mask (SharedBuffer's last device writes rely on it).
  [[nodiscard]] std::uint64_t version() const { return version_; }
  /// Whether every byte has the same mask in both (their versions aside).
  [[nodiscard]] bool same_masks(const Directory& other) const { return map_ == other.map_; }
  /// Takes other's masks (a copy of this directory taken earlier); the version moves past both
  /// (a change like any other).
  void assign_masks(const Directory& other) {
    map_ = other.map_;
    version_ = std::max(version_, other.version_) + 1;
  }

  /// Table 1 "device read": every byte of ranges not valid on device agent d is fetched - from
  /// the host if it is current there (Shared), else by a peer copy from a device holder when
  /// peer(holder, d), else written back to the host first and then copied (Modified). Write-backs
  /// come first in the result. Afterwards d (and the host, after a write-back) hold ranges.
  std::vector<Transfer> apply_device_read(Agent d, const IntervalSet& ranges,
                                          const PeerPolicy& peer);
  /// The same, with the transfers in `transfers` (cleared first; its storage is reused) and, when
  /// missing is given, the bytes of ranges that were not valid on d in *missing (what
  /// missing_on(d, ranges) said before: exactly the bytes the transfers bring) from the same pass.
  void apply_device_read(Agent d, const IntervalSet& ranges, const PeerPolicy& peer,
                         std::vector<Transfer>& transfers, IntervalSet* missing);
  /// Table 1 "device write" (state update after the kernel): ranges become valid on d only.
  void apply_device_write(Agent d, const IntervalSet& ranges);
  /// Table 1 "host write": the bytes land in the home copy; ranges become valid on the host only
  /// (the batch strategy then pushes them to devices through apply_device_read).
  void apply_host_write(const IntervalSet& ranges);
  /// Table 1 "host read": bytes whose host copy is stale are written back from a device holder.
  std::vector<Transfer> apply_host_read(const IntervalSet& ranges);
  /// The transfers apply_host_read(range) would return, without applying them: the parts of
  /// range whose home copy is stale, each from its lowest device holder. A host read that copies
  /// them straight into the reader's memory leaves the directory as it is (the home copy stays
  /// stale there).
  [[nodiscard]] std::vector<Transfer> stale_at_home(const Interval& range) const;

  /// Box-out of device agent d's copy of ranges (BBMM 001_9219257c3045faa0.txt Algorithm 4: an
  /// evicted box is written back when dirty). Bytes d alone holds (Modified) are written back to
  /// the host first - they are the returned transfers; afterwards d holds none of ranges, and
  /// every byte is still valid somewhere.
  std::vector<Transfer> apply_device_eviction(Agent d, const IntervalSet& ranges);

  /// Throws InvariantError if an invariant above does not hold.
  void check_invariants() const;

 private:
  void require_in_bounds(const IntervalSet& ranges, const char* what) const;
  void require_device(Agent d, const char* what) const;
  void check_if_enabled() const;

  std::uint64_t size_;
  std::size_t agent_count_;
  IntervalMap<AgentMask> map_;
  std::uint64_t version_ = 0;
};

}  // namespace unimem
