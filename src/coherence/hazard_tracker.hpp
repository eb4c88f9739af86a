#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <unimem/event.hpp>
#include "common/check.hpp"
#include "region/interval_set.hpp"

namespace unimem {

namespace detail {
struct HazardTrackerTestAccess;  // defined by the tests that break a tracker on purpose
}  // namespace detail

/// The in-flight accesses to one copy (the home copy or one device mirror) of one buffer, so that
/// a new access waits exactly for the earlier ones it conflicts with: a read for the earlier
/// writes of its bytes (RAW), a write for the earlier reads and writes of its bytes (WAR, WAW).
/// A recorded write shadows older accesses to its bytes (it already waits for them), so they are
/// dropped; finished accesses are dropped too. Not thread-safe.
///
/// Every query touches only the accesses whose bytes overlap it: each interval of each access is
/// a node of an interval tree (a treap ordered by start, each node holding the largest end below
/// it), one tree for reads and one for writes, so a device that read a thousand rows of another
/// device's half, which no later write of its own shadows, pays nothing for them when it reads or
/// writes its own half (floyd-warshall), and a read's RAW query looks at writes only. An access
/// of many intervals (one per row: fdtd2d) is one node over its bounds instead, whose bytes are
/// checked when the node is reached, so recording it costs one node, not one per row.
///
/// Reads recorded at ascending addresses, apart from each other (floyd-warshall's device reading
/// pivot row k = 0, 1, 2, ... of another device's half: hundreds unfinished when the host
/// submits ahead), skip the tree: their nodes are appended to a sorted run, searched by binary
/// search, and a node leaving it (cut by a write, or its read finished) is marked and swept out
/// once half of the run is such, so such a read is recorded and dropped in O(1) amortised.
///
/// A write's dependencies leave out what they already imply: a read recorded by
/// record_ordered_read waited for the writes of its bytes, so a write that must wait for such a
/// read need not also name the writes that read waited for (deps_for_write; the proof is above
/// its definition). A ping-pong of two kernels over two grids then gives each kernel one event
/// to wait for instead of two.
class HazardTracker {
 public:
  /// Appends to deps the events of the writes that overlap bytes (those not known to have
  /// finished: Event::known_complete, the driver asks the others once more), and remembers the
  /// query for record_ordered_read.
  void deps_for_read(const IntervalSet& bytes, EventList& deps) const;
  /// Appends to deps the events of the reads and writes that overlap bytes (not known to have
  /// finished), except the
  /// writes that an appended (or already listed) ordered read waited for: waiting for the
  /// events appended waits, transitively, for every access to the bytes the tracker holds.
  void deps_for_write(const IntervalSet& bytes, EventList& deps) const;
  /// A read whose event is not known to have waited for the writes of its bytes.
  void record_read(const IntervalSet& bytes, const Event& event);
  /// A read whose event starts only after every event in the list that deps_for_read filled for
  /// a query covering bytes, made on this tracker since its last record (the caller's promise:
  /// a kernel or copy submitted with that list as part of its wait list). The tracker checks
  /// what it can: if anything was recorded since the last deps_for_read, or bytes are not within
  /// that query's (or the query had more than kRememberedIntervals intervals), the read is
  /// recorded as by record_read, and later writes wait for its writers themselves.
  void record_ordered_read(const IntervalSet& bytes, const Event& event);
  /// record_ordered_read of a read whose event also starts only after every event of `waited`
  /// (its whole wait list: a kernel's). A read that continues the run of ascending reads may
  /// then be folded into the run's newest read when that read's event is in `waited` or known
  /// to have finished: the record takes the new event and order and keeps the old nodes (a
  /// device reading pivot row k, k + 1, ... of another device's half, each kernel after the
  /// last: one record instead of one per row, which no prune pass has to ask). Later accesses
  /// to the old bytes then wait for the newer event, which finishes after the old one.
  void record_ordered_read(const IntervalSet& bytes, const Event& event,
                           std::span<const Event> waited);
  void record_write(const IntervalSet& bytes, const Event& event);

  /// Every unfinished event (for waiting before the copy goes away).
  [[nodiscard]] EventList pending() const;
  /// Appends the events of every access it holds that are not known to have finished, in no
  /// particular order and possibly more than once, asking no query: a superset of
  /// deps_for_write over every byte (which leaves out the writes ordered reads cover) at the cost
  /// of one pass over the records (a periodic replay's chains, RuntimeCore::begin_period_replay).
  void append_held_events(EventList& out) const;
  /// The unfinished events of the accesses that overlap bytes, each once: deps_for_write's
  /// events in O(n log n) (a tracker may hold a thousand readers of a pivot row).
  [[nodiscard]] EventList pending_on(const IntervalSet& bytes) const;
  /// Recorded accesses not yet dropped (finished ones go in amortised passes: prune()).
  [[nodiscard]] std::size_t record_count() const { return records_.size() - free_records_.size(); }
  /// Queries and writes that the newest write answered alone (covering_write in
  /// hazard_tracker.hpp; for tests).
  [[nodiscard]] std::uint64_t covering_write_shortcuts() const { return shortcuts_; }
  /// Reads whose nodes went to the run (hazard_tracker.hpp: ascending reads; for tests).
  [[nodiscard]] std::uint64_t run_reads() const { return run_reads_; }
  /// Reads folded into the run's newest read (record_ordered_read with a wait list; for tests).
  [[nodiscard]] std::uint64_t folded_reads() const { return folded_reads_; }
  /// The recording order the next access gets: the accesses recorded so far are those before it.
  [[nodiscard]] std::uint64_t next_order() const { return next_order_; }
  /// Drops the accesses recorded before `order` (next_order() at some earlier time) without asking
  /// their events: the caller has waited for all of them (RuntimeCore::finish). Dropping them all
  /// keeps the storage for the accesses to come.
  void forget_before(std::uint64_t order);
  /// Drops every access and keeps the storage (a tracker reused by another buffer: TrackerPool).
  /// The caller has waited for every event.
  void clear();
  /// Bytes of storage held (records, tree and run nodes, used or free).
  [[nodiscard]] std::size_t capacity_bytes() const {
    return records_.capacity() * sizeof(Record) + pieces_.capacity() * sizeof(Piece) +
           (free_records_.capacity() + free_pieces_.capacity() + run_.capacity()) *
               sizeof(std::uint32_t);
  }

  /// Throws InvariantError unless the tree is ordered, balanced as a treap and its bounds are up
  /// to date, every record has bytes (normalized) and an event, and no record overlaps a later
  /// write (a write shadows the older accesses to its bytes).
  void check_invariants() const;

 private:
  friend struct detail::HazardTrackerTestAccess;
  static constexpr std::uint32_t kNone = 0xffffffffU;

  struct Record {
    // A wide record's bytes (more than kWideIntervals intervals, as a strided access has one per
    // row): its one node holds their bounds, and queries check the bytes themselves. Empty for a
    // narrow record, which has a node per interval.
    IntervalSet bytes;
    Event event;
    std::uint64_t order = 0;   // recording order: dependencies come out in it
    std::uint32_t pieces = 0;  // its intervals in the tree; 0 for a free slot
    bool write = false;
    // A read whose event waited for every write its bytes overlapped when it was recorded
    // (record_ordered_read, checked against the last deps_for_read).
    bool ordered = false;
    // Some of its nodes sit in a tree (add_piece): a fold, which adds nodes after the run's last
    // one only, may then not add to it (a tree node may lie beyond the run's last node).
    bool in_tree = false;
    mutable std::uint64_t seen = 0;  // the query that last found it (one hit per query)
    mutable std::uint32_t hit = 0;   // its place in hits_ during that query
  };
  // One interval of one record: a node of the tree, keyed by (begin, node index), or of the
  // reads' run (in_run: then max_end, priority, left and right are unused).
  struct Piece {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t max_end = 0;     // the largest end in this subtree
    std::uint32_t record = kNone;  // kNone for a free node (or one the run still lists: dead)
    std::uint32_t priority = 0;    // treap heap order: a parent's is at least its children's
    std::uint32_t left = kNone;
    std::uint32_t right = kNone;
    bool in_run = false;
  };

  // Fills hits_ with the records that overlap bytes (only writes if writes_only), each once, in
  // recording order; with_pieces: piece_hits_ with their nodes that overlap bytes (a node may
  // come more than once).
  void find_records(const IntervalSet& bytes, bool writes_only, bool with_pieces = false) const;
  // Whether nodes w (of a write) and r (of a read) share a byte, wide records' bytes checked.
  [[nodiscard]] bool nodes_share_bytes(std::uint32_t w, std::uint32_t r) const;
  // waited: record_ordered_read's wait list (a fold may be tried), or null (none).
  void record_read_as(const IntervalSet& bytes, const Event& event, bool ordered,
                      const std::span<const Event>* waited = nullptr);
  // The fold of record_ordered_read(bytes, event, waited): false (nothing done) unless bytes
  // (narrow) lie at or after the end of the run's last node, and that node's read record
  // (narrow, every node in the run, at most kMaxFoldedNodes nodes after the fold) has an event
  // in waited or known to have finished. Bytes touching the last node extend it.
  bool fold_into_run(const IntervalSet& bytes, const Event& event, bool ordered,
                     std::span<const Event> waited);
  // A folded record keeps every node it had: bounded, so that the run and the nodes kept alive
  // by one unfinished event stay small (a new record starts after this many).
  static constexpr std::uint32_t kMaxFoldedNodes = 64;
  // Fills piece_hits_ with the nodes (of both trees) that overlap bytes, each once.
  void find_pieces(const IntervalSet& bytes) const;
  // Calls f(node) for every node of tree `root` that overlaps bytes, at least once (a node that
  // spans several of bytes' intervals may come once per interval).
  template <typename F>
  void visit_overlaps(std::uint32_t root, const IntervalSet& bytes, F& f) const;
  // Calls f(node) for every node of subtree t overlapping [begin, end), in key order.
  template <typename F>
  void for_each_overlap(std::uint32_t t, std::uint64_t begin, std::uint64_t end, F& f) const;
  // Calls f(node) for every live node of the reads' run overlapping bytes, in order, at least
  // once (a node spanning several of bytes' intervals may come once per interval).
  template <typename F>
  void visit_run(const IntervalSet& bytes, F& f) const;
  // visit_overlaps of the reads: their tree and their run.
  template <typename F>
  void visit_reads(const IntervalSet& bytes, F& f) const {
    visit_overlaps(roots_[0], bytes, f);
    visit_run(bytes, f);
  }

  // A record with bytes' intervals, recorded as is (no shadowing).
  void append(const IntervalSet& bytes, const Event& event, bool write);
  // Gives record r the nodes of bytes: one per interval, or one over their bounds (wide).
  void add_bytes(std::uint32_t r, const IntervalSet& bytes);
  static constexpr std::size_t kWideIntervals = 8;
  std::uint32_t new_record(const Event& event, bool write);
  void free_record(std::uint32_t r);
  void add_piece(std::uint64_t begin, std::uint64_t end, std::uint32_t record);
  void remove_piece(std::uint32_t p);
  // Gives read record r the nodes of bytes in the run if they all lie after its last node;
  // false (nothing done) otherwise.
  bool append_to_run(std::uint32_t r, const IntervalSet& bytes);
  // Appends a node [begin, end) of read record r to the run (after its last node).
  void push_run_node(std::uint32_t r, std::uint64_t begin, std::uint64_t end);
  // Drops the run's dead nodes and those of freed records (their nodes become free).
  void compact_run();

  // Treap operations on the nodes of pieces_ (recursion depth: the tree's, O(log n) expected).
  [[nodiscard]] bool key_less(std::uint32_t a, std::uint32_t b) const;
  void update(std::uint32_t t);
  void split(std::uint32_t t, std::uint32_t key, std::uint32_t& less, std::uint32_t& rest);
  [[nodiscard]] std::uint32_t merge(std::uint32_t a, std::uint32_t b);
  [[nodiscard]] std::uint32_t insert(std::uint32_t t, std::uint32_t p);
  [[nodiscard]] std::uint32_t erase(std::uint32_t t, std::uint32_t p);

  // Drops finished records, but only when the list has doubled since the last pass (at least
  // kPruneMinimum records): asking an event whether it finished may cost a driver call, and a host
  // that submits far ahead of the devices (floyd-warshall: 1024 launches) would otherwise pay
  // O(records) of them per access. Finished records left in are harmless: queries skip them.
  // Inline, so that an access between passes pays no call for it.
  void prune() {
    if (record_count() >= prune_at_) prune_pass();
  }
  void prune_pass();
  // Rebuilds both trees from the nodes of the records kept, freeing the nodes of freed records.
  void rebuild_trees();
  static constexpr std::size_t kPruneMinimum = 16;
  // Inline, so that a build without invariant checks pays no call for it.
  void check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
    check_invariants();
#endif
  }

  std::vector<Record> records_;  // slots; free ones listed in free_records_
  std::vector<std::uint32_t> free_records_;
  std::vector<Piece> pieces_;  // tree nodes; free ones listed in free_pieces_
  std::vector<std::uint32_t> free_pieces_;
  std::uint32_t roots_[2] = {kNone, kNone};  // the trees of the reads' and the writes' nodes
  // The reads' run: nodes outside the tree, ascending and apart (each begins at or after the end
  // of the one before it), dead ones (record kNone) included until compact_run.
  std::vector<std::uint32_t> run_;
  std::size_t run_dead_ = 0;
  std::uint64_t run_reads_ = 0;     // run_reads()
  std::uint64_t folded_reads_ = 0;  // folded_reads()
  [[nodiscard]] std::uint32_t& root_of(std::uint32_t record) {
    return roots_[records_[record].write ? 1 : 0];
  }
  std::uint64_t next_order_ = 0;
  std::uint32_t random_ = 0x9e3779b9U;  // xorshift32 state for the priorities
  std::size_t prune_at_ = kPruneMinimum;
  // Scratch space of the queries, kept to spare an allocation per access.
  mutable std::uint64_t query_ = 0;
  mutable std::vector<std::uint32_t> hits_;
  mutable std::vector<std::uint32_t> piece_hits_;
  mutable std::vector<std::uint8_t> hit_state_;  // deps_for_write: per hit, see there
  mutable std::vector<std::uint32_t> write_nodes_;
  mutable std::vector<std::uint32_t> read_nodes_;
  // The last deps_for_read: next_order_ when it ran (kNoQuery: none to rely on) and its bytes.
  static constexpr std::uint64_t kNoQuery = ~std::uint64_t{0};
  static constexpr std::size_t kRememberedIntervals = 64;
  mutable std::uint64_t read_query_order_ = kNoQuery;
  mutable IntervalSet read_query_;
  // deps_for_write compares at most this many node pairs before it gives up leaving writes out.
  static constexpr std::size_t kMaxNodePairs = 256;
  // The newest write when it is one interval (one node): its record and node (kNone: none, or
  // not such a write, or freed since), and the hull of the bytes of the reads recorded after it.
  // A query within that interval and apart from the hull meets that write alone: every older
  // access to its bytes was cut out when it was recorded (a write shadows them), and no later
  // access reaches them (covering_write, the shortcut of floyd-warshall's launches, which write
  // the same rows every time).
  std::uint32_t last_write_ = kNone;
  std::uint32_t last_write_piece_ = kNone;
  Interval reads_after_write_{0, 0};
  std::uint32_t last_added_piece_ = kNone;  // add_piece's last node
  mutable std::uint64_t shortcuts_ = 0;     // covering_write_shortcuts()
  // The record of the newest write if it alone overlaps bytes (see last_write_), else kNone.
  // Inline: asked up to three times per kernel (the read's and the write's queries, the write).
  [[nodiscard]] std::uint32_t covering_write(const IntervalSet& bytes) const {
    if (last_write_ == kNone || bytes.empty()) return kNone;
    const Piece& w = pieces_[last_write_piece_];
    const std::uint64_t begin = bytes.intervals().front().begin;
    const std::uint64_t end = bytes.intervals().back().end;
    if (begin < w.begin || end > w.end) return kNone;
    if (reads_after_write_.begin < reads_after_write_.end && begin < reads_after_write_.end &&
        reads_after_write_.begin < end) {
      return kNone;
    }
    ++shortcuts_;
    return last_write_;
  }
};

/// Appends e to events unless it is null, known to be complete (Event::known_complete: no driver
/// query; the driver that gets the list drops finished events itself) or already present.
void add_dependency(EventList& events, const Event& e);

/// The events of `events` that are neither null nor complete (is_complete: asked, once each),
/// each once, in the order of their first occurrence, in O(n log n) (a buffer's trackers can
/// hold a thousand records when the host submits far ahead, as floyd-warshall does).
[[nodiscard]] EventList unique_pending(EventList events);

/// Each event of `events` once, at the place it first occurs, complete ones included (waiting for
/// a failed one reports its failure), without asking any event its state.
[[nodiscard]] EventList first_occurrences(EventList events);

}  // namespace unimem
