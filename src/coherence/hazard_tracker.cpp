#include "coherence/hazard_tracker.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <string>
#include <tuple>

#include "common/check.hpp"

namespace unimem {

namespace {

// A slot of a pooled vector (records_, pieces_): a freed one if any, else a new one at the end.
template <typename T>
std::uint32_t take_slot(std::vector<T>& slots, std::vector<std::uint32_t>& free) {
  if (free.empty()) {
    slots.emplace_back();
    return static_cast<std::uint32_t>(slots.size() - 1);
  }
  const std::uint32_t slot = free.back();
  free.pop_back();
  return slot;
}

// bytes.bounds() (bytes not empty), inline: the trackers need it several times per access.
Interval bounds_of(const IntervalSet& bytes) {
  return {bytes.intervals().front().begin, bytes.intervals().back().end};
}

}  // namespace

void add_dependency(EventList& events, const Event& e) {
  if (e.is_null() || e.known_complete()) return;
  if (std::find(events.begin(), events.end(), e) != events.end()) return;
  events.push_back(e);
}

EventList first_occurrences(EventList events) {
  if (events.size() < 2) return events;
  // Sort positions by event identity to find the first occurrence of each, then keep those in
  // their original order.
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto state = [&events](std::size_t i) { return events[i].state().get(); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::less<const void*>()(state(a), state(b));
  });
  std::vector<char> keep(events.size(), 1);
  for (std::size_t k = 1; k < order.size(); ++k) {
    if (state(order[k]) == state(order[k - 1])) keep[order[k]] = 0;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (keep[i] != 0) events[kept++] = std::move(events[i]);
  }
  events.resize(kept);
  return events;
}

EventList unique_pending(EventList events) {
  // Each event is asked once (is_complete() may be a driver query); a null event is complete.
  events = first_occurrences(std::move(events));
  std::erase_if(events, [](const Event& e) { return e.is_complete(); });
  return events;
}

// ---- queries -----------------------------------------------------------------------------------

template <typename F>
void HazardTracker::for_each_overlap(std::uint32_t t, std::uint64_t begin, std::uint64_t end,
                                     F& f) const {
  while (t != kNone) {
    const Piece& n = pieces_[t];
    if (n.max_end <= begin) return;  // nothing below reaches the query
    for_each_overlap(n.left, begin, end, f);
    if (n.begin >= end) return;  // neither this node nor its right subtree starts before the end
    if (n.end > begin) f(t);
    t = n.right;
  }
}

template <typename F>
void HazardTracker::visit_overlaps(std::uint32_t root, const IntervalSet& bytes, F& f) const {
  if (bytes.empty() || root == kNone) return;
  const std::vector<Interval>& q = bytes.intervals();
  const std::size_t nodes = pieces_.size() - free_pieces_.size();
  if (q.size() == 1 || q.size() * std::bit_width(nodes) <= nodes) {
    for (const Interval& i : q) for_each_overlap(root, i.begin, i.end, f);
    return;
  }
  // Many intervals (a strided access: one per row) against few nodes: one walk over their bounds
  // in key order, matched against them by a cursor, as the nodes' starts only grow.
  std::size_t j = 0;
  auto match = [&](std::uint32_t p) {
    const Piece& n = pieces_[p];
    while (j < q.size() && q[j].end <= n.begin) ++j;
    if (j < q.size() && q[j].begin < n.end) f(p);
  };
  const Interval b = bytes.bounds();
  for_each_overlap(root, b.begin, b.end, match);
}

template <typename F>
void HazardTracker::visit_run(const IntervalSet& bytes, F& f) const {
  if (run_.empty() || bytes.empty()) return;
  // The nodes are ascending and apart, so their ends ascend too: the first node ending after a
  // query interval's begin is found by binary search, from where the previous interval's search
  // ended (the query's intervals ascend as well). A node spanning several of the query's
  // intervals may come once per interval.
  auto from = run_.begin();
  for (const Interval& i : bytes) {
    from = std::partition_point(from, run_.end(),
                                [&](std::uint32_t p) { return pieces_[p].end <= i.begin; });
    for (auto n = from; n != run_.end() && pieces_[*n].begin < i.end; ++n) {
      if (pieces_[*n].record != kNone) f(*n);
    }
  }
}

void HazardTracker::find_records(const IntervalSet& bytes, bool writes_only,
                                 bool with_pieces) const {
  hits_.clear();
  piece_hits_.clear();
  const std::uint64_t query = ++query_;
  auto hit = [&](std::uint32_t p) {
    const std::uint32_t r = pieces_[p].record;
    const Record& rec = records_[r];
    if (writes_only && !rec.write) return;
    if (rec.seen == query) {
      // Narrow records have a node per interval; a wide record's one node was checked below.
      if (with_pieces && rec.bytes.empty()) piece_hits_.push_back(p);
      return;
    }
    rec.seen = query;
    // A wide record: its bounds overlap the bytes, its own bytes may not.
    if (!rec.bytes.empty() && !rec.bytes.intersects(bytes)) return;
    hits_.push_back(r);
    if (with_pieces) piece_hits_.push_back(p);
  };
  visit_overlaps(roots_[1], bytes, hit);
  if (!writes_only) visit_reads(bytes, hit);
  // Recording order, as the list of records kept before the tree gave them.
  std::sort(hits_.begin(), hits_.end(), [this](std::uint32_t a, std::uint32_t b) {
    return records_[a].order < records_[b].order;
  });
}

bool HazardTracker::nodes_share_bytes(std::uint32_t w, std::uint32_t r) const {
  const Piece& a = pieces_[w];
  const Piece& b = pieces_[r];
  if (a.end <= b.begin || b.end <= a.begin) return false;
  const IntervalSet& wide_a = records_[a.record].bytes;
  const IntervalSet& wide_b = records_[b.record].bytes;
  if (wide_a.empty() && wide_b.empty()) return true;
  if (wide_a.empty()) return wide_b.intersects(Interval{a.begin, a.end});
  if (wide_b.empty()) return wide_a.intersects(Interval{b.begin, b.end});
  return wide_a.intersects(wide_b);
}

void HazardTracker::find_pieces(const IntervalSet& bytes) const {
  piece_hits_.clear();
  auto hit = [this](std::uint32_t p) { piece_hits_.push_back(p); };
  visit_reads(bytes, hit);
  visit_overlaps(roots_[1], bytes, hit);
  if (bytes.interval_count() > 1) {
    std::sort(piece_hits_.begin(), piece_hits_.end());
    piece_hits_.erase(std::unique(piece_hits_.begin(), piece_hits_.end()), piece_hits_.end());
  }
}

void HazardTracker::deps_for_read(const IntervalSet& bytes, EventList& deps) const {
  const std::uint32_t root = roots_[1];
  if (const std::uint32_t w = covering_write(bytes); w != kNone) {
    add_dependency(deps, records_[w].event);  // the one write find_records would find
  } else if (root == kNone || bytes.empty()) {
    // No write to wait for.
  } else if (pieces_[root].left == kNone && pieces_[root].right == kNone) {
    // One write node (a device's own rows, and a read of another device's row: floyd-warshall):
    // its record is the only write find_records could find.
    const Piece& n = pieces_[root];
    const Record& rec = records_[n.record];
    if (bytes.intersects(Interval{n.begin, n.end}) &&
        (rec.bytes.empty() || rec.bytes.intersects(bytes))) {
      add_dependency(deps, rec.event);
    }
  } else {
    find_records(bytes, true);
    for (const std::uint32_t r : hits_) add_dependency(deps, records_[r].event);
  }
  // For record_ordered_read. A query of many intervals (a strided read) is not kept: copying
  // and checking it would cost more per access than the writes it could leave out.
  if (bytes.interval_count() <= kRememberedIntervals) {
    read_query_ = bytes;
    read_query_order_ = next_order_;
  } else {
    read_query_order_ = kNoQuery;
  }
}

// Leaving out writes that an ordered read waited for. Let Q be this query, R an ordered read and
// W a write among its hits, R's event in deps when this returns (listed before, or not known
// to have finished when asked here), R.order > W.order, and some node of R sharing bytes with some
// node of W. Claim: R's event finishes only after W's does, so waiting for R waits for W.
//  1. record_ordered_read set R.ordered only if nothing was recorded between the last
//     deps_for_read (query D) and R, and R's bytes lay within D's. W.order < R.order, so W was
//     recorded before D ran.
//  2. Records only shrink (a write cuts the older records' bytes, the rewritten node passes to
//     the new write, prune and forget_before drop whole records): W's bytes now lie within W's
//     bytes when D ran, R's within what R recorded, which lie within D's bytes. They share a byte
//     now, so W overlapped D's bytes then, and D (find_records over the writes, exact bytes for
//     wide records) found W: add_dependency left W's event in D's list, or W was known to have
//     finished then.
//  3. The caller promised that R's event starts only after every event of D's list. So W had
//     finished before R's operation started (a failed W still finishes first: a command never
//     starts or fails before its wait list has finished), and R finishes after it starts.
//  4. If W had finished, leaving it out changes nothing (add_dependency leaves finished events
//     out too). Otherwise waiting for R, which is in deps, waits for W. (Whether W has finished
//     is not asked at all: W is left out either way.)
// Events finish in the order of their dependencies, so this holds transitively: every event the
// full list (add_dependency for each hit) would have held is waited for through the shorter one.
// Not covered, so never left out: a read recorded by record_read (its event may not have waited:
// a test or an operation without a query), a read whose nodes share no byte with W's (it waited
// for other writes; checked node by node, wide records byte by byte), and a read whose event
// is known to have finished (then it is not in deps). A read older than W shares no byte with
// it (W's record_write cut them), so R.order > W.order follows; it is checked all the same.
// Only nodes this query reached are compared, so R and W sharing bytes outside Q's are missed:
// W then stays in the list, which is never wrong.
void HazardTracker::deps_for_write(const IntervalSet& bytes, EventList& deps) const {
  const auto listed = [&deps](const Event& e) {
    return std::find(deps.begin(), deps.end(), e) != deps.end();
  };
  if (const std::uint32_t w = covering_write(bytes); w != kNone) {
    // One write, no read: nothing to leave out; as the loop at the end treats it.
    const Event& e = records_[w].event;
    if (!listed(e) && !e.known_complete()) deps.push_back(e);
    return;
  }
  find_records(bytes, false, true);
  // Per hit: kOut (finished or left out), kListed (in deps already), kAdd (to add). The reads
  // first, so that a write an ordered read covers is left out without asking its event.
  enum : std::uint8_t { kOut, kListed, kAdd };
  const auto state_of = [&](const Event& e) -> std::uint8_t {
    if (listed(e)) return kListed;
    return e.known_complete() ? kOut : kAdd;
  };
  hit_state_.assign(hits_.size(), kOut);
  bool writes = false;
  bool ordered_reads = false;
  for (std::size_t i = 0; i < hits_.size(); ++i) {
    const Record& rec = records_[hits_[i]];
    rec.hit = static_cast<std::uint32_t>(i);
    if (rec.write) {
      writes = true;
      continue;
    }
    hit_state_[i] = state_of(rec.event);
    ordered_reads = ordered_reads || (rec.ordered && hit_state_[i] != kOut);
  }
  constexpr std::uint8_t kUnasked = 3;  // a write not yet asked
  for (std::size_t i = 0; i < hits_.size(); ++i) {
    if (records_[hits_[i]].write) hit_state_[i] = kUnasked;
  }
  if (writes && ordered_reads) {
    write_nodes_.clear();
    read_nodes_.clear();
    for (const std::uint32_t p : piece_hits_) {
      const Record& rec = records_[pieces_[p].record];
      if (rec.write) {
        write_nodes_.push_back(p);
      } else if (rec.ordered && hit_state_[rec.hit] != kOut) {
        read_nodes_.push_back(p);
      }
    }
    if (write_nodes_.size() * read_nodes_.size() <= kMaxNodePairs) {
      for (const std::uint32_t w : write_nodes_) {
        const Record& writer = records_[pieces_[w].record];
        if (hit_state_[writer.hit] != kUnasked) continue;  // already left out
        for (const std::uint32_t r : read_nodes_) {
          if (records_[pieces_[r].record].order > writer.order && nodes_share_bytes(w, r)) {
            hit_state_[writer.hit] = kOut;
            break;
          }
        }
      }
    }
  }
  for (std::size_t i = 0; i < hits_.size(); ++i) {
    const Event& e = records_[hits_[i]].event;
    if (hit_state_[i] == kUnasked) hit_state_[i] = state_of(e);
    // Another record may carry the same event (a launch's read and write): list it once.
    if (hit_state_[i] == kAdd && !listed(e)) deps.push_back(e);
  }
}

EventList HazardTracker::pending() const {
  hits_.clear();
  for (std::uint32_t r = 0; r < records_.size(); ++r) {
    if (records_[r].pieces > 0) hits_.push_back(r);
  }
  std::sort(hits_.begin(), hits_.end(), [this](std::uint32_t a, std::uint32_t b) {
    return records_[a].order < records_[b].order;
  });
  EventList out;
  out.reserve(hits_.size());
  for (const std::uint32_t r : hits_) out.push_back(records_[r].event);
  return unique_pending(std::move(out));
}

void HazardTracker::append_held_events(EventList& out) const {
  for (const Record& rec : records_) {
    if (rec.pieces > 0 && !rec.event.known_complete()) out.push_back(rec.event);
  }
}

EventList HazardTracker::pending_on(const IntervalSet& bytes) const {
  find_records(bytes, false);
  EventList out;
  out.reserve(hits_.size());
  for (const std::uint32_t r : hits_) out.push_back(records_[r].event);
  return unique_pending(std::move(out));
}

// ---- recording ---------------------------------------------------------------------------------

void HazardTracker::record_read(const IntervalSet& bytes, const Event& event) {
  record_read_as(bytes, event, false);
}

void HazardTracker::record_ordered_read(const IntervalSet& bytes, const Event& event) {
  // Nothing recorded since the last deps_for_read, whose bytes cover these (deps_for_write's
  // proof, step 1).
  const bool ordered = read_query_order_ == next_order_ && read_query_.contains(bytes);
  record_read_as(bytes, event, ordered);
}

void HazardTracker::record_ordered_read(const IntervalSet& bytes, const Event& event,
                                        std::span<const Event> waited) {
  const bool ordered = read_query_order_ == next_order_ && read_query_.contains(bytes);
  record_read_as(bytes, event, ordered, &waited);
}

void HazardTracker::record_read_as(const IntervalSet& bytes, const Event& event, bool ordered,
                                   const std::span<const Event>* waited) {
  prune();
  if (bytes.empty() || event.is_null()) return;
  if (waited == nullptr || !fold_into_run(bytes, event, ordered, *waited)) {
    const std::uint32_t r = new_record(event, false);
    records_[r].ordered = ordered;
    if (!append_to_run(r, bytes)) add_bytes(r, bytes);
  }
  const Interval b = bounds_of(bytes);
  if (reads_after_write_.begin >= reads_after_write_.end) {
    reads_after_write_ = b;
  } else {
    reads_after_write_ = {std::min(reads_after_write_.begin, b.begin),
                          std::max(reads_after_write_.end, b.end)};
  }
  check_if_enabled();
}

void HazardTracker::record_write(const IntervalSet& bytes, const Event& event) {
  prune();
  if (bytes.empty() || event.is_null()) return;
  if (const std::uint32_t old = covering_write(bytes);
      old != kNone && records_[old].pieces == 1 && bytes.interval_count() == 1 &&
      pieces_[last_write_piece_].begin == bytes[0].begin &&
      pieces_[last_write_piece_].end == bytes[0].end) {
    // The same bytes as the newest write, which alone holds them: the new write takes its place
    // (its record and node), as the loop below passes a node met exactly (nothing else to cut).
    Record& rec = records_[old];
    rec.event = event;
    rec.order = next_order_++;
    rec.ordered = false;
    reads_after_write_ = {0, 0};
    check_if_enabled();
    return;
  }
  // The new write depends on every older access to these bytes, so later accesses to them need
  // only wait for it: cut the bytes out of the older accesses' intervals.
  find_pieces(bytes);
  const std::uint32_t w = new_record(event, true);
  const std::vector<Interval>& q = bytes.intervals();
  bool rewritten = false;  // a single interval that an older write held exactly
  std::uint32_t rewritten_piece = kNone;
  for (const std::uint32_t p : piece_hits_) {
    const std::uint64_t begin = pieces_[p].begin;
    const std::uint64_t end = pieces_[p].end;
    const std::uint32_t r = pieces_[p].record;
    if (!records_[r].bytes.empty()) {  // wide: cut its bytes, then bound what is left anew
      if (!records_[r].bytes.intersects(bytes)) continue;
      IntervalSet left = records_[r].bytes.subtract(bytes);
      remove_piece(p);
      if (left.empty()) {
        free_record(r);
        continue;
      }
      records_[r].bytes = std::move(left);
      const Interval b = records_[r].bytes.bounds();
      add_piece(b.begin, b.end, r);
      continue;
    }
    if (q.size() == 1 && records_[r].write && begin == q[0].begin && end == q[0].end) {
      // The node keeps its place in the writes' tree and passes to the new write (an iterative
      // kernel writing the same bytes each time pays no tree update).
      pieces_[p].record = w;
      ++records_[w].pieces;
      if (--records_[r].pieces == 0) free_record(r);
      rewritten = true;
      rewritten_piece = p;
      continue;
    }
    remove_piece(p);
    auto it = std::partition_point(q.begin(), q.end(),
                                   [begin](const Interval& i) { return i.end <= begin; });
    std::uint64_t rest = begin;  // the start of what is left of [begin, end)
    for (; it != q.end() && it->begin < end; ++it) {
      if (it->begin > rest) add_piece(rest, it->begin, r);
      rest = std::max(rest, it->end);
    }
    if (rest < end) add_piece(rest, end, r);
    if (records_[r].pieces == 0) free_record(r);
  }
  if (!rewritten) add_bytes(w, bytes);
  // The newest write (covering_write): usable when it is one node, one interval.
  last_write_ = kNone;
  if (q.size() == 1 && records_[w].pieces == 1 && records_[w].bytes.empty()) {
    last_write_ = w;
    last_write_piece_ = rewritten ? rewritten_piece : last_added_piece_;
  }
  reads_after_write_ = {0, 0};
  // Reads the write cut out of the run leave dead nodes there: swept once they are half of it.
  if (run_dead_ > kPruneMinimum && 2 * run_dead_ > run_.size()) compact_run();
  check_if_enabled();
}

void HazardTracker::append(const IntervalSet& bytes, const Event& event, bool write) {
  last_write_ = kNone;  // unshadowed: covering_write could not vouch for the newest write
  add_bytes(new_record(event, write), bytes);
}

void HazardTracker::add_bytes(std::uint32_t r, const IntervalSet& bytes) {
  if (bytes.interval_count() > kWideIntervals) {
    records_[r].bytes = bytes;
    const Interval b = bytes.bounds();
    add_piece(b.begin, b.end, r);
    return;
  }
  for (const Interval& i : bytes) add_piece(i.begin, i.end, r);
}

std::uint32_t HazardTracker::new_record(const Event& event, bool write) {
  const std::uint32_t r = take_slot(records_, free_records_);
  Record& rec = records_[r];
  rec.event = event;
  rec.order = next_order_++;
  rec.pieces = 0;
  rec.write = write;
  rec.ordered = false;
  rec.in_tree = false;
  return r;
}

void HazardTracker::free_record(std::uint32_t r) {
  if (r == last_write_) last_write_ = kNone;
  records_[r].event = Event{};  // let go of the driver's event now
  records_[r].bytes = IntervalSet{};
  records_[r].pieces = 0;
  free_records_.push_back(r);
}

void HazardTracker::add_piece(std::uint64_t begin, std::uint64_t end, std::uint32_t record) {
  const std::uint32_t p = take_slot(pieces_, free_pieces_);
  random_ ^= random_ << 13;
  random_ ^= random_ >> 17;
  random_ ^= random_ << 5;
  pieces_[p] = Piece{begin, end, end, record, random_, kNone, kNone};
  last_added_piece_ = p;
  std::uint32_t& root = root_of(record);
  root = insert(root, p);
  ++records_[record].pieces;
  records_[record].in_tree = true;
}

void HazardTracker::remove_piece(std::uint32_t p) {
  Piece& n = pieces_[p];
  --records_[n.record].pieces;
  if (n.in_run) {  // dead: the run lists it until compact_run
    n.record = kNone;
    ++run_dead_;
    return;
  }
  std::uint32_t& root = root_of(n.record);
  root = erase(root, p);
  n.record = kNone;
  free_pieces_.push_back(p);
}

bool HazardTracker::append_to_run(std::uint32_t r, const IntervalSet& bytes) {
  if (!run_.empty() && bytes[0].begin < pieces_[run_.back()].end) return false;
  if (bytes.interval_count() > kWideIntervals) {  // one node over the bounds, as add_bytes
    records_[r].bytes = bytes;
    const Interval b = bounds_of(bytes);
    push_run_node(r, b.begin, b.end);
  } else {
    for (const Interval& i : bytes) push_run_node(r, i.begin, i.end);
  }
  ++run_reads_;
  return true;
}

void HazardTracker::push_run_node(std::uint32_t r, std::uint64_t begin, std::uint64_t end) {
  const std::uint32_t p = take_slot(pieces_, free_pieces_);
  pieces_[p] = Piece{begin, end, end, r, 0, kNone, kNone, true};
  run_.push_back(p);
  ++records_[r].pieces;
}

// Why a fold is sound. Let R be the run's newest read (event e_old, nodes N_old) and the new
// read (event e, bytes B) start only after every event of waited. If e_old is in waited or has
// finished, e finishes after e_old, so waiting for e waits for e_old: a later access that the
// full path would order after R (it meets N_old) or after the new read (it meets B) is ordered
// after both through the folded record, which holds N_old and B with e. Ordered (deps_for_write's
// proof): a write W sharing a byte with N_old and older than the folded record is older than R
// too (a write recorded after R would have cut R's bytes), so if R was ordered, e_old waited for
// W and e does transitively; one sharing a byte of B is the new read's case. The folded record
// is ordered only when both were. Its order is the new read's: nothing recorded before it is
// taken for newer than it, and forget_before keeps it until e was waited for.
bool HazardTracker::fold_into_run(const IntervalSet& bytes, const Event& event, bool ordered,
                                  std::span<const Event> waited) {
  if (run_.empty() || bytes.interval_count() > kWideIntervals) return false;
  Piece& last = pieces_[run_.back()];
  if (last.record == kNone || bytes[0].begin < last.end) return false;
  const std::uint32_t r = last.record;
  Record& rec = records_[r];
  // A node of its own per interval that does not continue the last node: at most
  // kMaxFoldedNodes.
  const bool touches = bytes[0].begin == last.end;
  if (rec.write || rec.in_tree || !rec.bytes.empty() ||
      rec.pieces + bytes.interval_count() - (touches ? 1 : 0) > kMaxFoldedNodes) {
    return false;
  }
  if (std::find(waited.begin(), waited.end(), rec.event) == waited.end() &&
      !rec.event.known_complete()) {
    return false;
  }
  rec.event = event;
  rec.order = next_order_++;
  rec.ordered = rec.ordered && ordered;
  // A record's intervals never touch: bytes touching the last node extend it (pivot rows k and
  // k + 1 of a matrix are adjacent), the others get nodes of their own.
  auto i = bytes.begin();
  if (touches) {
    last.end = i->end;
    last.max_end = i->end;
    ++i;
  }
  for (; i != bytes.end(); ++i) push_run_node(r, i->begin, i->end);
  ++folded_reads_;
  return true;
}

void HazardTracker::compact_run() {
  std::size_t kept = 0;
  for (const std::uint32_t p : run_) {
    Piece& n = pieces_[p];
    if (n.record != kNone && records_[n.record].pieces > 0) {
      run_[kept++] = p;
      continue;
    }
    n.record = kNone;  // dead, or of a record just freed (prune, forget_before)
    n.in_run = false;
    free_pieces_.push_back(p);
  }
  run_.resize(kept);
  run_dead_ = 0;
}

void HazardTracker::prune_pass() {
  bool dropped = false;
  for (std::uint32_t r = 0; r < records_.size(); ++r) {
    if (records_[r].pieces > 0 && records_[r].event.is_complete()) {
      free_record(r);
      dropped = true;
    }
  }
  if (dropped) rebuild_trees();  // amortised over the doubling
  prune_at_ = std::max(kPruneMinimum, 2 * record_count());
}

void HazardTracker::rebuild_trees() {
  roots_[0] = roots_[1] = kNone;
  for (std::uint32_t p = 0; p < pieces_.size(); ++p) {
    Piece& n = pieces_[p];
    if (n.record == kNone || n.in_run) continue;
    if (records_[n.record].pieces == 0) {
      n.record = kNone;
      free_pieces_.push_back(p);
      continue;
    }
    n.left = n.right = kNone;
    n.max_end = n.end;
    std::uint32_t& root = root_of(n.record);
    root = insert(root, p);
  }
  compact_run();
}

void HazardTracker::forget_before(std::uint64_t order) {
  bool any = false;  // a record to drop
  bool all = true;   // every record goes
  for (const Record& r : records_) {
    if (r.pieces == 0) continue;
    if (r.order < order) {
      any = true;
    } else {
      all = false;
    }
  }
  if (!any) return;
  if (all) {
    clear();
    return;
  }
  for (std::uint32_t r = 0; r < records_.size(); ++r) {
    if (records_[r].pieces > 0 && records_[r].order < order) free_record(r);
  }
  rebuild_trees();
  prune_at_ = std::max(kPruneMinimum, 2 * record_count());
  check_if_enabled();
}

void HazardTracker::clear() {
  // clear() keeps each vector's capacity: the next accesses reuse it without growing it again.
  records_.clear();
  free_records_.clear();
  pieces_.clear();
  free_pieces_.clear();
  run_.clear();
  run_dead_ = 0;
  roots_[0] = roots_[1] = kNone;
  prune_at_ = kPruneMinimum;
  last_write_ = kNone;
  reads_after_write_ = {0, 0};
  hits_.clear();
  piece_hits_.clear();
  read_query_order_ = kNoQuery;
  check_if_enabled();
}

// ---- the treap ---------------------------------------------------------------------------------

bool HazardTracker::key_less(std::uint32_t a, std::uint32_t b) const {
  const std::uint64_t x = pieces_[a].begin;
  const std::uint64_t y = pieces_[b].begin;
  return x < y || (x == y && a < b);
}

void HazardTracker::update(std::uint32_t t) {
  Piece& n = pieces_[t];
  n.max_end = n.end;
  if (n.left != kNone) n.max_end = std::max(n.max_end, pieces_[n.left].max_end);
  if (n.right != kNone) n.max_end = std::max(n.max_end, pieces_[n.right].max_end);
}

void HazardTracker::split(std::uint32_t t, std::uint32_t key, std::uint32_t& less,
                          std::uint32_t& rest) {
  if (t == kNone) {
    less = rest = kNone;
    return;
  }
  if (key_less(t, key)) {
    split(pieces_[t].right, key, pieces_[t].right, rest);
    less = t;
  } else {
    split(pieces_[t].left, key, less, pieces_[t].left);
    rest = t;
  }
  update(t);
}

std::uint32_t HazardTracker::merge(std::uint32_t a, std::uint32_t b) {
  if (a == kNone) return b;
  if (b == kNone) return a;
  if (pieces_[a].priority > pieces_[b].priority) {
    pieces_[a].right = merge(pieces_[a].right, b);
    update(a);
    return a;
  }
  pieces_[b].left = merge(a, pieces_[b].left);
  update(b);
  return b;
}

std::uint32_t HazardTracker::insert(std::uint32_t t, std::uint32_t p) {
  if (t == kNone) return p;
  if (pieces_[p].priority > pieces_[t].priority) {
    split(t, p, pieces_[p].left, pieces_[p].right);
    update(p);
    return p;
  }
  if (key_less(p, t)) {
    pieces_[t].left = insert(pieces_[t].left, p);
  } else {
    pieces_[t].right = insert(pieces_[t].right, p);
  }
  update(t);
  return t;
}

std::uint32_t HazardTracker::erase(std::uint32_t t, std::uint32_t p) {
  if (t == kNone) {
    detail::throw_invariant("HazardTracker: erasing a node the tree does not hold", __FILE__,
                            __LINE__);
  }
  if (t == p) return merge(pieces_[t].left, pieces_[t].right);
  if (key_less(p, t)) {
    pieces_[t].left = erase(pieces_[t].left, p);
  } else {
    pieces_[t].right = erase(pieces_[t].right, p);
  }
  update(t);
  return t;
}

// ---- checks ------------------------------------------------------------------------------------

void HazardTracker::check_invariants() const {
  auto fail = [](const std::string& what) {
    detail::throw_invariant("HazardTracker: " + what, __FILE__, __LINE__);
  };
  auto name = [this](std::uint32_t r) {
    std::string s = records_[r].write ? "write #" : "read #";
    s += std::to_string(records_[r].order);
    return s;
  };
  if (prune_at_ < kPruneMinimum) fail("prune threshold below " + std::to_string(kPruneMinimum));
  std::size_t live = 0;
  for (std::uint32_t r = 0; r < records_.size(); ++r) {
    if (records_[r].pieces == 0) continue;
    ++live;
    if (records_[r].event.is_null()) fail("record " + name(r) + " has no event");
  }
  if (live != record_count()) {
    fail(std::to_string(live) + " records hold bytes, but " + std::to_string(record_count()) +
         " are counted (a record without bytes was kept)");
  }
  const std::size_t nodes = pieces_.size() - free_pieces_.size() - run_.size();
  std::vector<std::uint32_t> counted(records_.size(), 0);
  // Every live node's (record, begin, end), to check each record's intervals apart.
  std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>> intervals;
  std::size_t reached = 0;
  std::uint32_t previous = kNone;
  // A live node (of a tree, or of the run if !writes): its record holds it, and a wide record's
  // node bounds its bytes. Returns the node's name for further messages.
  auto check_node = [&](std::uint32_t t, bool writes) {
    const Piece& n = pieces_[t];
    std::string where = "node " + std::to_string(t) + " [" + std::to_string(n.begin) + ", " +
                        std::to_string(n.end) + ")";
    if (n.record >= records_.size() || records_[n.record].pieces == 0) {
      fail(where + " belongs to no record");
    }
    const IntervalSet& wide = records_[n.record].bytes;
    if (!wide.empty()) {
      wide.check_invariants();
      if (Interval{n.begin, n.end} != wide.bounds()) {
        fail(where + " does not bound the bytes " + wide.to_string() + " of wide " +
             name(n.record));
      }
    }
    if (records_[n.record].write != writes) {
      fail(where + " of " + name(n.record) + " sits among the " + (writes ? "writes'" : "reads'") +
           " nodes");
    }
    if (n.begin >= n.end) fail(where + " is empty");
    ++counted[n.record];
    intervals.emplace_back(n.record, n.begin, n.end);
    return where;
  };
  // In key order: each node ordered after the previous one, below its parent's priority, with
  // its subtree's largest end, its record's intervals disjoint and apart.
  auto walk = [&](auto& self, std::uint32_t t, std::uint32_t parent, bool writes) -> void {
    if (t == kNone) return;
    if (t >= pieces_.size() || pieces_[t].record == kNone || ++reached > nodes) {
      fail("the tree reaches a free or unknown node " + std::to_string(t));
    }
    const Piece& n = pieces_[t];
    if (parent != kNone && n.priority > pieces_[parent].priority) {
      fail("node " + std::to_string(t) + " outranks its parent (not a treap)");
    }
    self(self, n.left, t, writes);
    const std::string where = check_node(t, writes);
    if (n.in_run) fail(where + " is in the tree and marked as in the run");
    if (previous != kNone && !key_less(previous, t)) fail(where + " is out of order");
    std::uint64_t max_end = n.end;
    if (n.left != kNone) max_end = std::max(max_end, pieces_[n.left].max_end);
    if (n.right != kNone) max_end = std::max(max_end, pieces_[n.right].max_end);
    if (n.max_end != max_end) {
      fail(where + " bounds its subtree at " + std::to_string(n.max_end) + ", not " +
           std::to_string(max_end) + " (a query would miss bytes)");
    }
    previous = t;
    self(self, n.right, t, writes);
  };
  for (const bool writes : {false, true}) {
    previous = kNone;
    walk(walk, roots_[writes ? 1 : 0], kNone, writes);
  }
  if (reached != nodes) {
    fail("the trees hold " + std::to_string(reached) + " of " + std::to_string(nodes) +
         " nodes outside the run");
  }
  // The run: ascending and apart, its dead nodes counted, its live ones reads'.
  std::size_t dead = 0;
  std::uint64_t run_end = 0;
  for (std::size_t i = 0; i < run_.size(); ++i) {
    const std::uint32_t p = run_[i];
    if (p >= pieces_.size() || !pieces_[p].in_run) {
      fail("the run lists node " + std::to_string(p) + ", which is not marked as in it");
    }
    const Piece& n = pieces_[p];
    if (i > 0 && n.begin < run_end) {
      fail("run node " + std::to_string(p) + " [" + std::to_string(n.begin) + ", " +
           std::to_string(n.end) + ") begins before the end of the one before it");
    }
    run_end = n.end;
    if (n.begin >= n.end) fail("run node " + std::to_string(p) + " is empty");
    if (n.record == kNone) {
      ++dead;
      continue;
    }
    (void)check_node(p, false);
  }
  if (dead != run_dead_) {
    fail("the run holds " + std::to_string(dead) + " dead nodes, counted " +
         std::to_string(run_dead_));
  }
  std::size_t marked = 0;
  for (const Piece& n : pieces_) marked += n.in_run ? 1 : 0;
  if (marked != run_.size()) {
    fail(std::to_string(marked) + " nodes are marked as in the run, which lists " +
         std::to_string(run_.size()));
  }
  std::sort(intervals.begin(), intervals.end());
  for (std::size_t i = 1; i < intervals.size(); ++i) {
    const auto& [r, begin, end] = intervals[i];
    if (std::get<0>(intervals[i - 1]) == r && std::get<2>(intervals[i - 1]) >= begin) {
      fail("the interval [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " +
           name(r) + " overlaps or touches another of its intervals");
    }
  }
  for (std::uint32_t r = 0; r < records_.size(); ++r) {
    if (!records_[r].bytes.empty() && records_[r].pieces != 1) {
      fail("wide record " + name(r) + " has " + std::to_string(records_[r].pieces) +
           " nodes, not one over its bounds");
    }
    if (counted[r] != records_[r].pieces) {
      fail("record " + name(r) + " counts " + std::to_string(records_[r].pieces) +
           " intervals but the tree holds " + std::to_string(counted[r]));
    }
  }
  // A write shadows the older accesses to its bytes.
  auto exact_bytes = [this](std::uint32_t p) {
    const IntervalSet& wide = records_[pieces_[p].record].bytes;
    return wide.empty() ? IntervalSet(Interval{pieces_[p].begin, pieces_[p].end}) : wide;
  };
  for (std::uint32_t w = 0; w < pieces_.size(); ++w) {
    const Piece& n = pieces_[w];
    if (n.record == kNone || !records_[n.record].write) continue;
    auto older = [&](std::uint32_t p) {
      const std::uint32_t r = pieces_[p].record;
      if (records_[r].order >= records_[n.record].order) return;
      const IntervalSet common = exact_bytes(w).intersect(exact_bytes(p));
      if (common.empty()) return;  // a wide record's bounds, not its bytes
      fail("record " + name(r) + " overlaps the later " + name(n.record) + " in " +
           common.to_string() + " (a write must shadow older accesses)");
    };
    for_each_overlap(roots_[0], n.begin, n.end, older);
    for_each_overlap(roots_[1], n.begin, n.end, older);
    visit_run(IntervalSet(Interval{n.begin, n.end}), older);
  }
}

}  // namespace unimem
