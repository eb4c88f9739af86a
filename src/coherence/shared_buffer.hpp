#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <unimem/transfer_stats.hpp>
#include "coherence/adaptive_history.hpp"
#include "coherence/agent_mask.hpp"
#include "coherence/directory.hpp"
#include "coherence/hazard_tracker.hpp"
#include "coherence/prefetch_ledger.hpp"
#include "coherence/tracker_pool.hpp"
#include "coherence/update_strategy.hpp"
#include "common/check.hpp"
#include "device/device.hpp"
#include "device/trace_recorder.hpp"
#include "memory/allocation_cache.hpp"
#include "memory/device_memory.hpp"
#include "memory/residency.hpp"

namespace unimem {

/// A replay chain (per agent: what its next replayed operation waits for) after its next
/// operation `e`: e alone (what assign(1, e) leaves), with no call and no list rebuilt when the
/// chain already holds one event. A null e (measurement beta issues no copy) changes nothing.
inline void chain_after(EventList& chain, const Event& e) {
  if (e.is_null()) return;
  if (chain.size() == 1) {
    chain.front() = e;
  } else {
    chain.assign(1, e);
  }
}

namespace detail {
struct SharedBufferTestAccess;  // defined by the tests that break a buffer on purpose
}  // namespace detail

class SharedBuffer;

/// One copy a buffer issued (SharedBuffer::issue: a transfer, or the rows of one rect copy), as
/// the periodic cycles of RuntimeCore record and replay them.
struct RecordedCopy {
  SharedBuffer* buffer = nullptr;
  std::vector<Transfer> rows;
};

/// The devices a set of shared buffers lives on, and which of them can copy from which.
struct CoherenceContext {
  std::vector<Device*> devices;  ///< device i is agent i + 1; not owned
  /// peer[from][to]: device `to` can copy directly from device `from` (Device::can_copy_from_peer).
  std::vector<std::vector<char>> peer;
  /// Measurement only (Matz et al. 002_aa84334820ddd8b5.txt section 9.2, configuration beta): the
  /// directory and trackers are updated as usual but no copy is issued or counted, so results are
  /// wrong. Never set outside overhead measurements (RuntimeOptions::measurement).
  bool transfers_disabled = false;
  /// Rows of a 2-D box that are not contiguous (equal lengths at a constant stride, between the
  /// host and one device) move as one rectangular copy instead of one copy per row
  /// (RuntimeOptions::rect_copies).
  bool rect_copies = true;
  /// Where buffers get their device allocations and home copies and return them
  /// (memory/allocation_cache.hpp).
  std::shared_ptr<AllocationCache> allocations;
  /// The limit, use counts and LRU eviction of every device's memory (memory/device_memory.hpp);
  /// buffers' allocations are made through it.
  std::shared_ptr<DeviceMemory> memory;
  /// Trackers of released buffers, for new buffers (coherence/tracker_pool.hpp); null: each
  /// buffer makes its own.
  std::shared_ptr<TrackerPool> trackers;
  /// Where copies and evictions are recorded (UNIMEM_TRACE); null when tracing is off.
  TraceRecorder* trace = nullptr;
  /// When set, every copy a buffer issues into its home copy or a device is appended here, in
  /// issue order (RuntimeCore records a periodic cycle's round with it), also under measurement
  /// beta, which issues none.
  std::vector<RecordedCopy>* copy_log = nullptr;
  /// Appends to the list the operations on `device` that use buffers but are not recorded in
  /// their trackers (measurement gamma: kernels run without bookkeeping). An allocation merged
  /// away is freed only after them too. Empty: every operation is tracked.
  std::function<void(std::size_t device, EventList&)> untracked_kernels;

  /// recycle_budget: bytes of released buffers' memory kept per agent for reuse (0: none).
  /// device_memory: bytes allowed per device (0: each device's own capacity).
  static CoherenceContext of(std::vector<Device*> devices, std::uint64_t recycle_budget = 0,
                             std::uint64_t device_memory = 0);
  [[nodiscard]] std::size_t agent_count() const { return devices.size() + 1; }
  [[nodiscard]] bool can_peer(Agent from, Agent to) const {
    return peer[device_of_agent(from)][device_of_agent(to)] != 0;
  }
};

/// A shared buffer (DSOM section 4.2.1, Fig. 5): the host copy is home, each device's copy lives
/// in the allocations a Residency gives it on first use (memory/residency.hpp: boxes holding the
/// bytes the device's work uses, or a full-size mirror), and a Directory says which copy of each
/// byte is current. acquire() performs the Table 1 read actions by issuing asynchronous copies;
/// each copy and each access recorded by the caller is ordered through per-copy HazardTrackers, so
/// the directory always describes the state after everything issued so far has run.
///
/// Device memory is limited (CoherenceContext::memory): when another buffer needs room on a
/// device, DeviceMemory may evict one of this buffer's allocations there unless a launch is using
/// it (begin_use / end_use). box_out() then writes home the bytes only that copy holds, marks the
/// copy invalid in the directory (BBMM 001_9219257c3045faa0.txt Algorithm 4, box-out) and waits
/// for the operations using it; a later acquire fetches what it needs again (box-in) through
/// the usual Table 1 actions. No byte is ever lost: the directory never drops its last holder.
///
/// Not thread-safe: the owner (Runtime) serialises calls; retire() before handing the buffer to
/// another thread for destruction. The context's devices must outlive the buffer; the destructor
/// waits for the buffer's pending operations and hands its device allocations and home copy back
/// to the context's AllocationCache.
///
/// The home copy is not zeroed when the buffer is created (a 16 MiB memset with page faults took
/// 5-12 ms of the critical path of every workload run): the bytes never written yet are tracked
/// and zeroed just before something reads them (a host read or a copy to a device), so a new
/// buffer still reads as zeros and memory recycled from a released buffer never leaks its bytes.
class SharedBuffer final : public EvictionClient {
 public:
  SharedBuffer(std::uint32_t id, std::string name, std::uint64_t size,
               const CoherenceContext& context);
  ~SharedBuffer() override;
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  [[nodiscard]] std::uint32_t id() const { return id_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  /// "buffer 'name' (#id, N bytes)", for error messages.
  [[nodiscard]] std::string describe() const override;
  /// Throws the PreconditionError require_inside words.
  [[noreturn]] void throw_outside(const IntervalSet& ranges, const std::string& what) const;
  /// Throws PreconditionError naming the buffer, what() and the range unless ranges lie inside;
  /// what is only called to word the error (launches check every argument, so no string is built
  /// on the way that succeeds).
  template <typename What>
  void require_inside(const IntervalSet& ranges, What&& what) const {
    if (!ranges.empty() && ranges.bounds().end > size_) throw_outside(ranges, what());
  }

  /// The home copy. Its bytes may only be touched by operations ordered through tracker(host).
  /// Before reading home bytes, call prepare_home_read; after issuing a write of them, call
  /// home_written.
  [[nodiscard]] std::byte* home() { return home_.get(); }
  /// bytes of the home copy are about to be read: zeroes those of them never written so far.
  /// Nothing can be pending on never-written bytes, so this runs at once on the calling thread.
  void prepare_home_read(const IntervalSet& bytes);
  /// bytes of the home copy are written by an operation just issued (a host write or a copy from
  /// a device): they no longer need zeroing.
  void home_written(const IntervalSet& bytes);
  /// The home bytes never written so far (they read as zero; for tests).
  [[nodiscard]] const IntervalSet& home_unwritten() const { return home_unwritten_; }
  /// The full mirror on device agent d (an allocation of the whole buffer), allocated on first
  /// use (fresh or recycled memory: its bytes are unspecified until a copy or kernel writes them).
  DeviceAllocation mirror(Agent d);
  /// The allocation on device agent d that holds the buffer bytes `box` (Residency::ensure:
  /// found, or made by merging what the device holds around them), kept on its device (not
  /// evictable, not merged) until the matching end_use(d, box): a launch holds every buffer it
  /// uses from its input copies to the publication of its writes.
  ResidentAllocation begin_use(Agent d, const ResidentBox& box,
                               Residency::Placement placement = Residency::Placement::merge);
  void end_use(Agent d, const ResidentBox& box);
  /// The same for the full mirror.
  DeviceAllocation begin_use(Agent d) { return begin_use(d, Interval{0, size_}).allocation; }
  void end_use(Agent d) { end_use(d, Interval{0, size_}); }
  /// The buffer is about to be destroyed (possibly on another thread): nothing may evict its
  /// allocations any more. Only destruction may follow.
  void retire() { residency_.retire(); }
  /// The buffer's allocations on each device.
  [[nodiscard]] const Residency& residency() const { return residency_; }

  [[nodiscard]] const Directory& directory() const { return directory_; }
  [[nodiscard]] HazardTracker& tracker(Agent a) { return trackers_[a]; }
  /// Copies issued so far, with the replay accounting (PrefetchLedger) as of now.
  [[nodiscard]] TransferStats stats() const;
  /// The adaptive history, with the restarts a family of rewriting launches deferred made.
  [[nodiscard]] const AdaptiveHistory& history() const {
    settle_restarts();
    return history_;
  }

  [[nodiscard]] std::optional<UpdateStrategy> strategy_override() const { return override_; }
  void set_strategy_override(std::optional<UpdateStrategy> s) { override_ = s; }

  /// Makes bytes current on agent (Table 1 device read / host read), issuing the copies. A demand
  /// acquire is a real reader and is observed by the adaptive history; prefetches are not.
  void acquire(Agent agent, const IntervalSet& bytes, bool demand = true);

  /// A host read of `range` into the reader's memory `out` (out[0] is byte range.begin) that
  /// bypasses the home copy where it is stale: each part whose current copies are all on devices
  /// is copied from one of them (the lowest, as apply_host_read would) straight into out, its
  /// events appended to `copies`; the directory does not change there (the home copy stays
  /// stale, invariant 3 still holds: Modified or peer-shared). Returns the parts current at home,
  /// which the caller copies out of the home copy (prepare_home_read, ordered through
  /// tracker(host), count_home_read). Unlike acquire(host), a direct part is not a demand the
  /// adaptive strategy records: a replay could only bring it home, and the read would then copy
  /// it a second time. Under measurement beta the copies are skipped like every other.
  /// copy_devices, when given, receives the device (not agent) each copy ran on, in step with
  /// `copies` (whose times are on that device's clock: the OpenCL platform's profiling).
  IntervalSet read_direct(const Interval& range, std::byte* out, EventList& copies,
                          std::vector<std::size_t>* copy_devices = nullptr);
  /// A host read copies `bytes` bytes out of the home copy (TransferStats::home_read_bytes).
  void count_home_read(std::uint64_t bytes) { stats_.home_read_bytes += bytes; }

  /// The buffer is about to be written (by the host or a kernel): ends the adaptive recording.
  void begin_write();
  /// Records that kernel `kernel` wrote, on each device agent, its bytes (the kernel events are
  /// already recorded in the trackers), then issues strategy's post-write copies (UpdatePolicy).
  void after_device_writes(DeviceWrites writes, const std::string& kernel, UpdateStrategy strategy);
  /// Records a host write of bytes (already ordered in tracker(host)), then issues strategy's
  /// post-write copies (batch pushes them out).
  void after_host_write(const IntervalSet& bytes, UpdateStrategy strategy);

  /// One partition's use of the buffer in a launch (RuntimeCore: its agent, the bytes it reads
  /// or may write, and those it writes).
  struct LaunchUse {
    Agent agent = kHostAgent;
    const IntervalSet* needed = nullptr;
    const IntervalSet* written = nullptr;
  };
  /// The read actions of a launch that writes again exactly what the buffer's last device writes
  /// wrote (floyd-warshall: every launch writes the same rows, and each partition reads the other
  /// partitions' rows k): uses are the launch's uses of this buffer in plan order. Returns false,
  /// having done nothing, unless (a) no directory change happened since those writes
  /// (after_device_writes; the directory's version), so agent a alone holds its bytes W_a for
  /// each of them; (b) the uses with bytes to write write exactly those, in the same order;
  /// (c) each use's bytes outside its own W lie in the other W_a (their holders), each such
  /// holder can peer-copy to the reader, and no two uses lack the same byte. Otherwise it does
  /// what acquire() would do for each use in order (the same copies, history and ledger calls)
  /// but leaves the directory as it is: the reads would only add each reader's bit to bytes
  /// that the launch's writes, published with after_device_rewrites, reset to their holder
  /// alone, so the directory after the launch is the one before it (the proof is above the
  /// definition). Checked against the directory's own actions when invariants are enabled.
  /// The caller holds allocations covering each use's bytes on its agent (begin_use), as a
  /// launch does.
  bool acquire_rewriting_last_writes(std::span<const LaunchUse> uses);
  /// acquire_rewriting_last_writes in two halves: prepare_rewrite checks (a)-(c) and computes
  /// each use's missing bytes and copies, changing nothing (false: it does not apply);
  /// apply_rewrite then makes the reads' calls and issues the copies, through the trackers when
  /// chains is empty, else ordered by chains (per agent; issue_all_chained). A launch prepares
  /// every buffer before it applies any (RuntimeCore's affine replays). (Inline: an affine
  /// replay asks it for every buffer of every launch.)
  bool prepare_rewrite(std::span<const LaunchUse> uses) {
    if (last_writes_version_ != directory_.version()) return false;
    if (reread_missing_.size() < uses.size() || reread_transfers_.size() < uses.size()) {
      size_rewrite_scratch(uses.size());
    }
    return last_write_runs_.empty() ? prepare_rewrite_general(uses) : prepare_rewrite_runs(uses);
  }
  void apply_rewrite(std::span<const LaunchUse> uses, std::span<EventList> chains);
  /// The copies apply_rewrite issues for use j (valid as rewrite_missing is).
  [[nodiscard]] const std::vector<Transfer>& rewrite_transfers(std::size_t use) const {
    return reread_transfers_[use];
  }
  /// After acquire_rewriting_last_writes returned true, until publish_rewrites (which may swap
  /// the sets away to keep them for the next launch) or the next call on this buffer: the
  /// bytes use j of its uses lacked, which are its needed bytes minus its written ones (its own
  /// last writes: condition (b)), the bytes a kernel reads and does not write.
  [[nodiscard]] const IntervalSet& rewrite_missing(std::size_t use) const {
    return reread_missing_[use];
  }
  /// begin_write and after_device_rewrites, for a launch whose reads took
  /// acquire_rewriting_last_writes (which left their history calls to this when the adaptive
  /// recording held nothing yet): under adaptive, a run that only restarts the history's count
  /// (floyd-warshall: another pivot row each launch) takes AdaptiveHistory::restart_run instead
  /// of observe_read per read, close and open (then it returns true).
  bool publish_rewrites(const std::string& kernel, UpdateStrategy strategy);
  /// publish_rewrites when it would only count one more deferred restart of a family (no copy,
  /// no history or directory call; then it returns true); else false, having done nothing.
  bool publish_rewrite_counting(const std::string& kernel, UpdateStrategy strategy);
  /// The reads acquire_rewriting_last_writes left for publish_rewrites, observed now (a launch
  /// that failed before publishing; begin_write and make_current call it first).
  void observe_deferred_rewrite_reads();
  /// The restarts a family of rewriting launches deferred (publish_rewrites), made in the
  /// history now, and the family ended: called before any other use of the history.
  void settle_restarts() const {
    if (restart_family_) make_deferred_restarts();  // inline: every other history use asks
  }
  /// Rewriting launches whose history restart publish_rewrites deferred so far (for tests).
  [[nodiscard]] std::uint64_t deferred_restarts() const { return deferred_restarts_total_; }
  /// after_device_writes for a launch whose reads took acquire_rewriting_last_writes: its writes
  /// are the last writes again (acquire_rewriting_last_writes checked them), so the directory
  /// and the last writes stay; the ledger and the strategy act.
  void after_device_rewrites(const std::string& kernel, UpdateStrategy strategy);

  /// The repeat of a launch (RuntimeCore::launch_partitioned): the same kernel again, with
  /// nothing but launches since its previous run. Whether a demand acquire of `bytes` on agent
  /// would change nothing: every byte current there (no copy, no directory change), no replayed
  /// bytes among them waiting for their first read (the ledger and the adaptive recording would
  /// not change).
  [[nodiscard]] bool reread_changes_nothing(Agent agent, const IntervalSet& bytes) const;
  /// Whether begin_write and after_device_writes(writes, kernel, strategy) would change nothing
  /// but, under adaptive, the history's repeat count: each agent alone holds its bytes already
  /// (the directory stays), no replayed bytes among them are unread (the ledger stays), and
  /// under lazy no recording is open (close() does nothing), under adaptive the open recording
  /// would only count one more run (AdaptiveHistory::repeat_changes_only_count: open() replays
  /// nothing). False for batch and balance, whose post-write copies always act.
  [[nodiscard]] bool rewrite_changes_nothing(DeviceWrites writes, const std::string& kernel,
                                             UpdateStrategy strategy) const;
  /// Such a rewrite happened under adaptive without begin_write and after_device_writes: counted
  /// in the history (`runs` such rewrites in a row).
  void count_unchanged_rewrite(int runs = 1);

  /// Periodic cycles (RuntimeCore, "Periodic cycles" in runtime_core.cpp): the parts of the
  /// buffer's state that a launch's directory steps change, as one value. The counters in it
  /// (the ledger's and the history's) grow every round; the rest repeats when the cycle does.
  /// stats_ and the trackers are not in it: replayed copies count themselves, and the runtime
  /// records the replayed accesses when it materializes the state.
  struct PeriodicState {
    Directory directory;
    std::vector<IntervalSet> evicted;
    AdaptiveHistory history;
    PrefetchLedger prefetch;
    IntervalSet home_unwritten;
    std::vector<std::pair<Agent, IntervalSet>> last_writes;  // the valid ones only
    bool last_writes_current = false;  // last_writes_version_ == the directory's version
    std::vector<std::vector<ResidentAllocation>> residency;  // per device (compared only)
  };
  /// The buffer's state into `into`, reusing its storage: a captured round takes one at every
  /// launch, and with the storage of the previous capture's states kept (RuntimeCore keeps it
  /// from cycle to cycle) it allocates nothing once the sizes have been reached.
  void take_periodic_state(PeriodicState& into) const;
  [[nodiscard]] PeriodicState periodic_state() const;
  /// Whether every later operation acts on a buffer in state a as in state b: equal but for the
  /// counters (the history's counts of 2 or more act alike), and no count restarted between a
  /// and b (a round from a to b only added to counts).
  [[nodiscard]] static bool acts_as(const PeriodicState& a, const PeriodicState& b);
  /// Whether a, a state of one buffer, equals b, a state of another buffer of the same size,
  /// but for which allocations they have: the same masks, histories and ledgers with the same
  /// counts, the same bytes everywhere else, and allocations of the same sizes holding the same
  /// bytes on each device. Every later operation then acts on the one as on the other, and
  /// counts alike (RuntimeCore's carried rounds).
  [[nodiscard]] static bool same_but_allocations(const PeriodicState& a, const PeriodicState& b);
  /// Makes `at` (a state within the round from round_start to round_end, which acts_as holds
  /// for) the buffer's state, its counters `rounds` rounds further on. The directory's version
  /// moves on (nothing may take it for one seen before).
  void restore_periodic_state(const PeriodicState& at, const PeriodicState& round_start,
                              const PeriodicState& round_end, std::uint64_t rounds);
  /// Issues a recorded copy again after deps only (no tracker, directory, ledger or history
  /// step: the caller orders it and keeps the state), counted in stats() as issue() counts it.
  /// Measurement beta issues nothing and returns a null event, as issue() does. The dependencies
  /// are the events of both lists, gathered into scratch (left empty) only for a copy it issues.
  Event replay_copy(std::span<const Transfer> rows, std::span<const Event> after_source,
                    std::span<const Event> after_target, EventList& scratch);
  /// Records a replayed copy in the trackers as issue() records it (its source read, its
  /// destination written; the caller ordered it).
  void record_replayed_copy(std::span<const Transfer> rows, const Event& e);

  /// EvictionClient (called by DeviceMemory, under its lock): whether operations on the copy of
  /// device `device` are still running, and the box-out of that copy.
  [[nodiscard]] bool busy_on(std::size_t device) const override;
  [[nodiscard]] bool busy_on(std::size_t device, const Interval& bytes) const override;
  void box_out(std::size_t device, const Interval& bytes) override;
  /// The same for a packed box (memory/residency.hpp): only its rows are written home, dropped
  /// and waited for.
  [[nodiscard]] bool busy_on_rows(std::size_t device, const IntervalSet& rows) const override;
  void box_out_rows(std::size_t device, const IntervalSet& rows) override;
  /// EvictionClient (called by Residency when a device's allocations merge into a larger one):
  /// the bytes current in `from` move to `to` with device-local copies (BBMM bb_readin) issued
  /// after the operations writing them, recorded in the tracker as writes; nothing is waited
  /// for. Returns the events that may still use `from` (Residency frees it after them).
  EventList relocate(std::size_t device, const ResidentAllocation& from,
                     const ResidentAllocation& to) override;
  /// Frees the allocations merged away whose users have all finished (Residency::reap).
  void reap_retired() { residency_.reap(); }
  /// Bytes that were current on agent when its copy was evicted and have not been copied back
  /// since (a copy of them counts as reloaded_bytes).
  [[nodiscard]] const IntervalSet& evicted_on(Agent a) const { return evicted_.at(a); }

  /// Unfinished operations on any copy of the buffer.
  [[nodiscard]] EventList pending() const;
  /// Accesses the trackers hold, over every agent (for tests).
  [[nodiscard]] std::size_t tracked_accesses() const {
    std::size_t n = 0;
    for (const HazardTracker& t : trackers_) n += t.record_count();
    return n;
  }
  /// Marks the accesses recorded so far: per agent the tracker's next_order(), and how many
  /// copies the buffer had recorded (copies_recorded()).
  struct AccessMarks {
    std::vector<std::uint64_t> orders;
    std::uint64_t copies = 0;
  };
  [[nodiscard]] AccessMarks access_marks() const;
  /// Drops the accesses recorded before `marks` (access_marks()) from the trackers without asking
  /// their events: the caller has waited for every one of them (RuntimeCore::finish).
  void forget_accesses_before(const AccessMarks& marks);
  /// The copies (Table 1 actions, strategy copies, relocations, write-backs) the buffer has
  /// recorded in its trackers so far.
  [[nodiscard]] std::uint64_t copies_recorded() const { return copies_recorded_; }
  /// Whether the trackers may hold a copy recorded after the last marks forgotten: the only
  /// operations in them that the runtime does not track itself (it tracks every kernel and host
  /// access until it has finished), so finish() asks pending() only when this holds.
  [[nodiscard]] bool may_hold_copies() const { return copies_recorded_ != copies_forgotten_; }

  /// Throws InvariantError unless the parts agree: the directory, trackers and residency are
  /// sized for the buffer and the context's agents and pass their own checks, every device the
  /// directory names as holding bytes has an allocation covering them, replayed bytes not read
  /// yet are current where they were replayed to, and no replay is under way between calls.
  void check_invariants() const;

 private:
  friend struct detail::SharedBufferTestAccess;
  /// acquire() without the invariant check (a replay calls it mid-way).
  void make_current(Agent agent, const IntervalSet& bytes, bool demand);
  // Inline, so that a build without invariant checks pays no call for it. Like Directory:
  // whole-structure checks only while the directory is small.
  void check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
    if (directory_.segment_count() <= 4096) check_invariants();
#endif
  }
  /// Where the host side of a copy lies: the home copy (kHome), or a reader's memory whose first
  /// byte holds buffer byte reader_begin (read_direct).
  struct HostSide {
    std::byte* reader = nullptr;
    std::uint64_t reader_begin = 0;
  };
  static constexpr HostSide kHome{nullptr, 0};
  /// One copy: a single transfer, or rows of equal length at a constant stride between the host
  /// and one device (strided_rows in shared_buffer.cpp) as one rectangular copy. Its event is
  /// appended to `events` when given.
  void issue(std::span<const Transfer> rows, HostSide host, EventList* events);
  /// The bytes of a copy's rows.
  static IntervalSet rows_of(std::span<const Transfer> rows);
  /// issue()'s copy itself, after deps: the driver call, its count in stats_ and its trace.
  Event copy_rows(std::span<const Transfer> rows, const IntervalSet& r, HostSide host,
                  const EventList& deps);
  /// Issues transfers in order, strided rows grouped into rect copies where allowed. With
  /// events, sources (when given) receives each event's source device (read_direct's copies).
  void issue_all(const std::vector<Transfer>& transfers, HostSide host, EventList* events,
                 std::vector<std::size_t>* sources = nullptr);
  /// How many transfers from i on issue_all issues as one copy (a rect copy's rows, or 1).
  [[nodiscard]] std::size_t copy_group(const std::vector<Transfer>& transfers, std::size_t i) const;
  void issue_all_chained(const std::vector<Transfer>& transfers, std::span<EventList> chains);
  /// A copy into agent `to` reloads the evicted bytes of r there (TransferStats::reloaded_bytes).
  void note_reloaded(Agent to, const IntervalSet& r);
  [[nodiscard]] AgentMask last_writers() const { return last_writers_; }
  /// prepare_rewrite's walk when each last write is one run (last_write_runs_), and its walk
  /// over the last writes otherwise; both with the scratch sized for the uses.
  bool prepare_rewrite_runs(std::span<const LaunchUse> uses);
  bool prepare_rewrite_general(std::span<const LaunchUse> uses);
  void size_rewrite_scratch(std::size_t uses);
  /// The last writes are writes now, current (the directory's version now) or not.
  void set_last_writes(DeviceWrites writes, bool current);
  [[nodiscard]] bool continues_restart_family(const std::string& kernel, AgentMask writers) const;
  // publish_rewrites' parts: one more deferred restart of the family (checked against the
  // shadow history in invariant builds), and the end of a publication that restarted.
  void count_deferred_restart(const std::string& kernel, AgentMask writers);
  void end_restarted_publish();
  /// Records copy t (issued at submitted_ns, as event e) in the trace: `bytes` in `rows` rows
  /// within t.range (a rect copy has several); to_reader: into a host reader's memory.
  void trace_copy(const Transfer& t, const Event& e, std::int64_t submitted_ns, std::uint64_t bytes,
                  std::uint64_t rows, bool to_reader = false);
  /// Issues a strategy's post-write copies; a replay's are accounted as prefetches. An eager copy
  /// to a device only updates bytes it already has allocations for (partial residency: a device
  /// holds what its work used; the rest it fetches on demand).
  void perform(const PostWriteActions& actions);
  /// A device write's post-write actions under strategy (perform, or adaptive's replay of its
  /// prediction read in place).
  void after_writes(UpdateStrategy strategy, DeviceWrites writes, const std::string& kernel);
  /// A replay's copies (perform, after_writes): begun, each to an agent, ended by the guard.
  void begin_replay_copies();
  struct EndReplayCopies {
    explicit EndReplayCopies(PrefetchLedger& l) : ledger(l) {}
    EndReplayCopies(const EndReplayCopies&) = delete;
    EndReplayCopies& operator=(const EndReplayCopies&) = delete;
    ~EndReplayCopies();
    PrefetchLedger& ledger;
  };
  void replay_copy_to(Agent agent, const IntervalSet& bytes, IntervalSet& part);
  /// Whether device's allocations hold every byte of bytes (non-empty).
  [[nodiscard]] bool resident(std::size_t device, const IntervalSet& bytes) const;
  /// The allocation on device holding the rows of a rect copy (equal lengths, a constant stride:
  /// first, the next starting at second_begin, ..., last): a run holding them all, or a packed
  /// box holding them at a multiple of its pitch; nullopt if none does.
  [[nodiscard]] std::optional<ResidentAllocation> rect_allocation(std::size_t device,
                                                                  const Interval& first,
                                                                  std::uint64_t second_begin,
                                                                  const Interval& last) const;
  /// make_current for a strategy's eager copy, restricted to the bytes inside the device's
  /// allocations. Returns true when it made all of bytes current; else `part` receives the bytes
  /// it made current.
  bool make_current_resident(Agent agent, const IntervalSet& bytes, IntervalSet& part);

  std::uint32_t id_;
  std::string name_;
  std::uint64_t size_;
  const CoherenceContext& context_;
  std::unique_ptr<std::byte[]> home_;
  IntervalSet home_unwritten_;  // home bytes never written: they read as zero
  Residency residency_;
  Directory directory_;
  std::vector<IntervalSet> evicted_;  // per agent: see evicted_on
  std::vector<HazardTracker> trackers_;
  // Mutable: a family's deferred restarts (settle_restarts) are made on the first look at it,
  // which changes nothing anyone sees.
  mutable AdaptiveHistory history_;
  UpdatePolicy updates_;
  TransferStats stats_;      // copies by direction, mispredictions
  PrefetchLedger prefetch_;  // replays, prefetch_bytes and prefetch_unread_bytes of stats()
  std::optional<UpdateStrategy> override_;
  PeerPolicy peer_;
  std::vector<Transfer> transfers_;     // make_current's list, kept for the next one
  std::uint64_t copies_recorded_ = 0;   // copies_recorded()
  std::uint64_t copies_forgotten_ = 0;  // the most copies of marks forgotten since
  // The last after_device_writes' writes (pairwise disjoint; the first last_writes_count_
  // entries, storage reused) and the directory's version right after them: while it stays the
  // same, each agent alone holds its bytes (acquire_rewriting_last_writes).
  static constexpr std::uint64_t kNoVersion = ~std::uint64_t{0};
  std::vector<std::pair<Agent, IntervalSet>> last_writes_;
  std::size_t last_writes_count_ = 0;
  AgentMask last_writers_;  // their agents
  // The same as runs in address order when each agent's is one interval (else empty).
  struct WriteRun {
    Interval bytes;
    Agent agent = kHostAgent;
  };
  std::vector<WriteRun> last_write_runs_;
  std::uint64_t last_writes_version_ = kNoVersion;
  // acquire_rewriting_last_writes' scratch: per use the bytes it lacks (and, below, their
  // copies).
  std::vector<IntervalSet> reread_missing_;
  // The reads whose history calls acquire_rewriting_last_writes left for publish_rewrites (while
  // rewrite_reads_deferred_): each use's agent and its set of reread_missing_.
  std::vector<AdaptiveHistory::Miss> reread_misses_;
  bool rewrite_reads_deferred_ = false;
  // A family of restarts (publish_rewrites): after a rewriting launch's restart_run, while no
  // other call reached the history, each next rewriting launch of the same kernel on the same
  // writers whose misses differ from the launch's before only counts one more restart here;
  // settle_restarts makes them in the history before anything else looks at it. The last
  // launch's misses (a restart's, kept) are in reread_missing_before_ / reread_misses_before_,
  // swapped with the current ones.
  void make_deferred_restarts() const;
  mutable bool restart_family_ = false;
  mutable std::uint64_t deferred_restarts_ = 0;
  std::uint64_t deferred_restarts_total_ = 0;  // deferred_restarts()
  std::vector<IntervalSet> reread_missing_before_;
  std::vector<AdaptiveHistory::Miss> reread_misses_before_;
#if UNIMEM_INVARIANTS_ENABLED
  // The history as restart_run of each deferred launch leaves it, compared at settle_restarts.
  mutable std::optional<AdaptiveHistory> restart_shadow_;
#endif
  std::vector<std::vector<Transfer>> reread_transfers_;
  EventList chain_scratch_;  // issue_all_chained's wait list (left empty)
};

}  // namespace unimem
