#include "coherence/directory.hpp"

#include <algorithm>
#include <optional>

namespace unimem {

std::string Transfer::to_string() const {
  auto name = [](Agent a) {
    if (a == kHostAgent) return std::string("host");
    std::string out(1, 'd');
    out += std::to_string(device_of_agent(a));
    return out;
  };
  return name(from) + "->" + name(to) + " " + range.to_string();
}

namespace {

// Appends t to out, extending the previous transfer when it continues it on the same route.
void append_coalesced(std::vector<Transfer>& out, const Transfer& t) {
  if (!out.empty() && out.back().from == t.from && out.back().to == t.to &&
      out.back().range.end == t.range.begin) {
    out.back().range.end = t.range.end;
  } else {
    out.push_back(t);
  }
}

// How a reader that lacks a byte gets it, given the byte's mask: a device holder that can be
// peer-copied from, else nullopt (then the host copy, written back first if it is stale).
std::optional<Agent> peer_source(AgentMask mask, Agent reader, const PeerPolicy& peer) {
  if (mask.contains(kHostAgent) || reader == kHostAgent) return std::nullopt;
  std::optional<Agent> found;
  mask.devices().for_each([&](Agent holder) {
    if (!found && peer && peer(holder, reader)) found = holder;
  });
  return found;
}

}  // namespace

Directory::Directory(std::uint64_t size, std::size_t agent_count)
    : size_(size), agent_count_(agent_count) {
  UNIMEM_REQUIRE(size > 0, "Directory: buffer size must be positive");
  UNIMEM_REQUIRE(agent_count >= 1 && agent_count <= kMaxAgents,
                 "Directory: agent count must be in 1..64 (host plus at most 63 devices)");
  map_.assign(Interval{0, size}, AgentMask::of(kHostAgent));
  check_if_enabled();
}

AgentMask Directory::mask_at(std::uint64_t offset) const {
  UNIMEM_REQUIRE(offset < size_, "Directory::mask_at: offset outside the buffer");
  return *map_.at(offset);
}

IntervalSet Directory::missing_on(Agent agent, const IntervalSet& ranges) const {
  return map_.select(ranges, [agent](AgentMask mask) { return !mask.contains(agent); });
}

bool Directory::held_only_by(Agent agent, const IntervalSet& ranges) const {
  const AgentMask only = AgentMask::of(agent);
  return map_.select(ranges, [only](AgentMask mask) { return mask != only; }).empty();
}

// The request actions run over the whole set at once (IntervalMap's IntervalSet forms): a segment
// that already holds what the action makes of it - a read hit, say - is passed over whatever the
// number of the set's intervals inside it, so a strided access (one interval per row) costs in
// proportion to the directory segments it reaches, not to its rows. The transfers come out per
// changed piece in order of offset, as they would interval by interval.
std::vector<Transfer> Directory::apply_device_read(Agent d, const IntervalSet& ranges,
                                                   const PeerPolicy& peer) {
  std::vector<Transfer> transfers;
  apply_device_read(d, ranges, peer, transfers, nullptr);
  return transfers;
}

void Directory::apply_device_read(Agent d, const IntervalSet& ranges, const PeerPolicy& peer,
                                  std::vector<Transfer>& transfers, IntervalSet* missing) {
  require_device(d, "apply_device_read");
  require_in_bounds(ranges, "apply_device_read");
  ++version_;
  transfers.clear();
  std::vector<Transfer>& fetches = transfers;
  std::vector<Transfer> write_backs;
  // The changed pieces are the missing bytes: every piece whose mask lacks d gains it.
  std::vector<Interval> lacking;
  map_.update(
      ranges,
      [&](AgentMask mask) {
        if (mask.contains(d)) return mask;  // read hit
        if (mask.contains(kHostAgent) || peer_source(mask, d, peer)) return mask.with(d);
        return mask.with(kHostAgent).with(d);
      },
      [&](const Interval& part, AgentMask mask, AgentMask) {
        if (missing != nullptr) {
          if (!lacking.empty() && lacking.back().end == part.begin) {
            lacking.back().end = part.end;
          } else {
            lacking.push_back(part);
          }
        }
        if (mask.contains(kHostAgent)) {
          append_coalesced(fetches, {part, kHostAgent, d});  // Shared: copy from home
        } else if (auto src = peer_source(mask, d, peer)) {
          append_coalesced(fetches, {part, *src, d});  // dirty on a peer that d can read
        } else {
          // Modified elsewhere without a peer path: write back, then copy from home.
          append_coalesced(write_backs, {part, mask.lowest(), kHostAgent});
          append_coalesced(fetches, {part, kHostAgent, d});
        }
      });
  check_if_enabled();
  if (missing != nullptr) *missing = IntervalSet::from_normalized(std::move(lacking));
  if (write_backs.empty()) return;  // the usual case: no second list
  write_backs.insert(write_backs.end(), fetches.begin(), fetches.end());
  transfers = std::move(write_backs);
}

void Directory::apply_device_write(Agent d, const IntervalSet& ranges) {
  require_device(d, "apply_device_write");
  require_in_bounds(ranges, "apply_device_write");
  ++version_;
  map_.assign(ranges, AgentMask::of(d));
  check_if_enabled();
}

void Directory::apply_host_write(const IntervalSet& ranges) {
  require_in_bounds(ranges, "apply_host_write");
  ++version_;
  map_.assign(ranges, AgentMask::of(kHostAgent));
  check_if_enabled();
}

std::vector<Transfer> Directory::apply_host_read(const IntervalSet& ranges) {
  require_in_bounds(ranges, "apply_host_read");
  ++version_;
  std::vector<Transfer> write_backs;
  map_.update(
      ranges, [](AgentMask mask) { return mask.with(kHostAgent); },
      [&](const Interval& part, AgentMask mask, AgentMask) {
        append_coalesced(write_backs, {part, mask.lowest(), kHostAgent});
      });
  check_if_enabled();
  return write_backs;
}

std::vector<Transfer> Directory::stale_at_home(const Interval& range) const {
  require_in_bounds(IntervalSet(range), "stale_at_home");
  std::vector<Transfer> out;
  map_.for_each_in(range, [&](const Interval& part, AgentMask mask) {
    if (!mask.contains(kHostAgent)) append_coalesced(out, {part, mask.lowest(), kHostAgent});
  });
  return out;
}

std::vector<Transfer> Directory::apply_device_eviction(Agent d, const IntervalSet& ranges) {
  require_device(d, "apply_device_eviction");
  require_in_bounds(ranges, "apply_device_eviction");
  ++version_;
  std::vector<Transfer> write_backs;
  map_.update(
      ranges,
      [d](AgentMask mask) {
        if (mask == AgentMask::of(d)) return AgentMask::of(kHostAgent);
        return mask.without(d);
      },
      [&](const Interval& part, AgentMask mask, AgentMask) {
        if (mask == AgentMask::of(d)) append_coalesced(write_backs, {part, d, kHostAgent});
      });
  check_if_enabled();
  return write_backs;
}

void Directory::require_in_bounds(const IntervalSet& ranges, const char* what) const {
  if (!ranges.empty() && ranges.bounds().end > size_) {
    throw PreconditionError(std::string("Directory::") + what + ": range " +
                            ranges.bounds().to_string() + " reaches beyond the buffer of " +
                            std::to_string(size_) + " bytes");
  }
}

void Directory::require_device(Agent d, const char* what) const {
  if (d == kHostAgent || d >= agent_count_) {
    throw PreconditionError(std::string("Directory::") + what + ": agent " + std::to_string(d) +
                            " is not a device (devices are agents 1.." +
                            std::to_string(agent_count_ - 1) + ")");
  }
}

void Directory::check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
  if (map_.segment_count() <= 4096) check_invariants();
#endif
}

void Directory::check_invariants() const {
  map_.check_invariants();
  const AgentMask allowed = AgentMask::first(agent_count_);
  std::uint64_t cursor = 0;
  for (const auto& seg : map_.segments()) {
    if (seg.range.begin != cursor) {
      detail::throw_invariant("Directory: bytes " + Interval{cursor, seg.range.begin}.to_string() +
                                  " have no directory entry",
                              __FILE__, __LINE__);
    }
    if (seg.value.empty()) {
      detail::throw_invariant(
          "Directory: bytes " + seg.range.to_string() + " are valid on no agent (data lost)",
          __FILE__, __LINE__);
    }
    if ((seg.value & allowed) != seg.value) {
      detail::throw_invariant("Directory: bytes " + seg.range.to_string() + " name agents " +
                                  seg.value.to_string() + " beyond the " +
                                  std::to_string(agent_count_) + " agents",
                              __FILE__, __LINE__);
    }
    cursor = seg.range.end;
  }
  if (cursor != size_) {
    detail::throw_invariant("Directory: map ends at " + std::to_string(cursor) +
                                " but the buffer has " + std::to_string(size_) + " bytes",
                            __FILE__, __LINE__);
  }
}

}  // namespace unimem
