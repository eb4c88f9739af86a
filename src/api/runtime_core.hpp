#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <unimem/runtime.hpp>

#include <unimem/transfer_stats.hpp>
#include "api/measurement.hpp"
#include "coherence/agent_mask.hpp"
#include "coherence/shared_buffer.hpp"
#include "coherence/update_strategy.hpp"
#include "common/word_mutex.hpp"
#include "device/device.hpp"
#include "device/device_registry.hpp"
#include "device/trace_recorder.hpp"
#include "device/work_queue.hpp"
#include "region/access_bytes.hpp"
#include "region/interval_map.hpp"
#include "region/interval_set.hpp"
#include "schedule/launch_plan.hpp"

namespace unimem {

/// One argument of a launch: a shared buffer with its access sets, a scalar, __local memory or a
/// NULL pointer. A buffer argument's pointer may point `offset` bytes into the buffer (a
/// sub-buffer); its access sets, here and in a LaunchPartition, count from that pointer.
struct LaunchArg {
  KernelArg::Kind kind = KernelArg::Kind::scalar;
  BufferId buffer;
  std::uint64_t offset = 0;
  AccessBytes access;
  std::vector<std::byte> scalar_bytes;
  std::uint64_t local_bytes = 0;

  static LaunchArg of_buffer(BufferId b, IntervalSet reads, IntervalSet writes,
                             IntervalSet may_writes = {}) {
    LaunchArg a;
    a.kind = KernelArg::Kind::buffer;
    a.buffer = b;
    a.access = {std::move(reads), std::move(writes), std::move(may_writes)};
    return a;
  }
  template <typename T>
  static LaunchArg of_scalar(const T& value) {
    LaunchArg a;
    a.scalar_bytes = KernelArg::of_scalar(value).scalar_bytes;
    return a;
  }
  static LaunchArg of_local(std::uint64_t bytes) {
    LaunchArg a;
    a.kind = KernelArg::Kind::local_memory;
    a.local_bytes = bytes;
    return a;
  }
};

/// Operations' events, each with the runtime device whose profiling clock its EventTimes are on
/// (an index that events on the host clock do not use): what a host read or write was made of,
/// for the OpenCL platform's CL_PROFILING_COMMAND_START / END.
using DeviceEvents = std::vector<std::pair<std::size_t, Event>>;

/// A kernel launch on one device.
struct Launch {
  std::size_t device = 0;
  std::shared_ptr<const CompiledKernel> kernel;
  NDRange range;
  std::vector<LaunchArg> args;
};

/// The device memory of one device as a run used it (RuntimeCore::device_memory).
struct DeviceMemoryReport {
  DeviceMemoryStats memory;  ///< limit, held and peak bytes, evictions (memory/device_memory.hpp)
  /// Bytes the device's partitions touch (read, write or may-write) of the live buffers: now,
  /// and the most since the start or reset_device_memory_peaks(). The goal of allocating only
  /// what the partitions use is memory.peak_held_bytes == peak_need_bytes (BBMM Fig. 10b).
  std::uint64_t need_bytes = 0;
  std::uint64_t peak_need_bytes = 0;
};

/// The device memory one partition of a launch takes (RuntimeCore::footprint): one allocation
/// ("box") per distinct buffer, as launch_partitioned would choose them.
struct PartitionFootprint {
  struct Box {
    std::uint32_t arg = 0;            ///< the first argument whose bytes the box holds
    std::vector<std::uint32_t> args;  ///< every argument whose bytes it holds
    std::string buffer;               ///< the buffer, described for messages
    std::uint64_t bytes = 0;          ///< the box's size
    /// A packed box (ResidentBox::packed): the buffer's row pitch and the packed row width in
    /// bytes; 0 for a run of bytes.
    std::uint64_t pitch = 0;
    std::uint64_t width = 0;
  };
  std::vector<Box> boxes;
  std::uint64_t total = 0;           ///< the boxes' bytes together
  std::uint64_t limit = 0;           ///< the device's memory limit (DeviceMemory::limit)
  std::uint64_t max_allocation = 0;  ///< the device's largest allocation
  /// Whether the boxes fit the device at once (after evicting everything else).
  [[nodiscard]] bool fits() const {
    return total <= limit && std::all_of(boxes.begin(), boxes.end(), [this](const Box& b) {
             return b.bytes <= max_allocation;
           });
  }
};

/// The state and operations behind Runtime (<unimem/runtime.hpp>, whose members forward here):
/// shared buffers over the host and N devices, kernel launches with exact per-buffer access sets,
/// and host reads and writes of byte ranges.
///
/// Every operation takes effect in submission order: the result equals running everything one
/// after another on a single memory (DESIGN.md invariant 5). Operations run asynchronously; each
/// waits only for the earlier operations it conflicts with (RAW, WAR, WAW, per byte and per
/// copy), so independent launches on different devices run concurrently.
///
/// Thread-safe: any thread may call any member; calls are ordered by the order in which they
/// take the runtime's lock.
///
/// Partial residency (BBMM, seed 001_9219257c3045faa0.txt sections 4-8, Algorithm 2): a
/// partition's allocation of a buffer on its device holds only the bounding interval [lo, hi) of
/// the bytes the partition reads, writes or may write there (memory/residency.hpp merges it with
/// what the device holds around it). Kernels still index buffers from their start, so each launch
/// rebases: a kernel pointer that points `offset` bytes into its buffer becomes the allocation's
/// start + offset - base, where base (<= lo) is the first buffer byte the allocation holds. On a
/// device that rebases arguments itself (Device::rebases_arguments: the host driver) that is
/// pointer arithmetic; on the others the kernel is rewritten (api/kernel_rewrite.hpp) so that
/// each `__global T* p` takes the allocation and a ulong, p = (T*)((uchar*)buffer + ulong), and
/// the ulong is offset - base in 64-bit two's complement: the sum wraps to exactly
/// start + offset - base even when that address lies before the allocation. Why it is correct:
/// the access sets bound every byte the partition touches (DESIGN.md invariant 6: reads and
/// writes are never under-approximated), so every address the kernel dereferences, p + i for a
/// buffer byte b = offset + i in [lo, hi), is start + (b - base), inside the allocation; pointers
/// outside it are only formed, never dereferenced, and address arithmetic on 64-bit (or 32-bit)
/// device pointers is modular. The buffer keeps a full mirror (base 0, the program as written)
/// when that bound is not exact (a may-write set), when the program has no rewritten kernel (the
/// rewrite could not read a signature or its build failed: ProgramCore logs why) or when one of
/// the kernel's pointers to the buffer is not a rewritten __global one.
///
/// Packed 2-D boxes (issue 10): an out-of-core chunk whose bytes of a buffer are rows of equal
/// length at a constant pitch (a tile of a matrix's columns), with a bounding interval at least
/// twice their size, gets an allocation holding only those rows, packed
/// (memory/residency.hpp, ResidentBox::packed), and runs the pitched rewrite of its kernel
/// (api/kernel_pitch_rewrite.hpp says why that is correct), built for its boxes' pitches and
/// widths. Only for chunks (cut_to_fit sizes them with footprint(), which picks the boxes), only
/// for buffers every pointer to which is a parameter the rewrite may pack and points at the
/// buffer's first byte, and only on devices that do not rebase arguments themselves: the host
/// driver keeps 1-D boxes (its kernels are C++ callables, there is nothing to rewrite).
/// An out-of-core chunk may also hold one buffer in several boxes, one per group of its
/// arguments whose bytes lie apart (split_uses: floyd-warshall's rows and pivot row).
class RuntimeCore {
 public:
  /// track() drops the finished operations in front of the in-flight list this often.
  static constexpr std::size_t kPruneInflightEvery = 64;

  explicit RuntimeCore(DeviceRegistry devices, RuntimeOptions options = {});
  /// Waits for everything submitted, then frees all buffers.
  ~RuntimeCore();
  RuntimeCore(const RuntimeCore&) = delete;
  RuntimeCore& operator=(const RuntimeCore&) = delete;

  [[nodiscard]] std::size_t device_count() const { return registry_.size(); }
  [[nodiscard]] Device& device(std::size_t index) const { return registry_.at(index); }

  // Buffers and host accesses: documented on Runtime (<unimem/runtime.hpp>), which forwards.
  BufferId create_buffer(std::uint64_t size, std::string name = {},
                         std::optional<UpdateStrategy> strategy = std::nullopt);
  void release_buffer(BufferId buffer);
  [[nodiscard]] std::uint64_t buffer_size(BufferId buffer) const;
  void set_strategy(UpdateStrategy strategy);
  [[nodiscard]] UpdateStrategy strategy() const;
  void set_buffer_strategy(BufferId buffer, std::optional<UpdateStrategy> strategy);
  /// operations, when given, receives the operations whose completion the returned event is (with
  /// time_host_operations(), each can say when it ran).
  Event write(BufferId buffer, std::uint64_t offset, std::span<const std::byte> data,
              DeviceEvents* operations = nullptr);
  void write_blocking(BufferId buffer, std::uint64_t offset, std::span<const std::byte> data);
  Event read(BufferId buffer, std::uint64_t offset, std::span<std::byte> out,
             DeviceEvents* operations = nullptr);
  void read_blocking(BufferId buffer, std::uint64_t offset, std::span<std::byte> out);
  /// From now on the host copies of reads and writes record when they ran (EventTimes on the host
  /// clock), as they do when tracing; the devices' operations do once Device::set_profiling is on.
  void time_host_operations();
  /// From now on the devices' operations record when they ran (Device::set_profiling(true) on
  /// each, under the runtime's lock: nothing is submitted meanwhile, an open streak is closed
  /// first). Earlier operations keep what they had. Profiling costs the drivers time per command
  /// (POCL reads the clock at each step of each one), so it waits for someone to ask.
  void time_device_operations();

  /// Runs a kernel on one device: makes every read and may-write byte current on the device
  /// before it starts and records the write and may-write bytes as the device's afterwards.
  Event launch(const Launch& launch);
  /// One launch split over several devices (distinct, one partition each). Every partition reads
  /// the bytes as they were before the launch; their write sets must be disjoint.
  /// When partition_events is given, it receives each partition's kernel event (same order).
  /// Partitions whose allocations do not fit their device fail with OutOfDeviceMemory: callers
  /// cut them into chunks first (ProgramCore, out-of-core launches) using footprint().
  ///
  /// repeat_token: the caller's promise that whenever it passes the same token, args and
  /// partitions are the same, unchanged, and the partitions kept alive by the token; the args'
  /// scalar values may differ (ProgramCore's scalar twins): the runtime passes them to the
  /// kernels and reads them for nothing else, so a launch is the same launch whatever they are
  /// as long as the partitions' access sets are (the caller's part). A launch with the token of
  /// one of the runtime's last few launches, with nothing but launches since (the same launch
  /// again, or a cycle of launches such as ping-pong), repeats that launch, and skips what it
  /// already knows (launch_partitioned in runtime_core.cpp says what and why); null: no such
  /// promise.
  Event launch_partitioned(std::span<const LaunchArg> args,
                           std::span<const LaunchPartition> partitions,
                           std::vector<Event>* partition_events = nullptr,
                           std::shared_ptr<const void> repeat_token = nullptr);

  /// The lean repeat (RuntimeOptions::lean_repeats; launch_again in runtime_core.cpp says when it
  /// applies and why it leaves the state the repeat path would): when the runtime's previous
  /// operation was the last run of the launch behind repeat_token, a repeat of it that skipped
  /// the directory steps, and the same launch_partitioned call with that token would repeat it
  /// the same way again, enqueues that run's kernels again and returns the launch's event;
  /// nullopt (nothing done) otherwise. args: the launch's arguments (the token's promise).
  /// eventless: the caller needs no event for this launch (the OpenCL platform's anonymous
  /// NDRange). Then, on devices that order their kernels (Device::orders_after), the launch may
  /// join an eventless streak (runtime_core.cpp, "The eventless streak") and return a null
  /// Event: the caller gets the streak's commands as an event from close_eventless().
  std::optional<Event> launch_again(const void* repeat_token, std::span<const LaunchArg> args,
                                    bool eventless = false);
  /// An event complete once every launch that returned a null Event from an eventless
  /// launch_again before this call has run (it may also wait for later kernels on those
  /// devices); closes an open streak. Null when there were none.
  Event close_eventless();
  /// Launches that took launch_again (for tests and tools).
  [[nodiscard]] std::uint64_t lean_launches() const;

  /// The allocations partition p of a launch with `args` would take on its device (checked as
  /// launch_partitioned checks it; changes nothing).
  [[nodiscard]] PartitionFootprint footprint(std::span<const LaunchArg> args,
                                             const LaunchPartition& p) const;
  /// Whether full mirrors of all the buffers of args fit device at once (then so does every
  /// partition of a launch with them there): a cheap test before footprint().
  [[nodiscard]] bool whole_buffers_fit(std::span<const LaunchArg> args, std::size_t device) const;

  // Measurement, completion and statistics: documented on Runtime, which forwards.
  [[nodiscard]] MeasurementMode measurement() const;
  void set_measurement(MeasurementMode mode);
  void finish();
  [[nodiscard]] TransferStats stats() const;
  [[nodiscard]] TransferStats buffer_stats(BufferId buffer) const;
  [[nodiscard]] std::string stats_json() const;
  /// Documented on Runtime::write_trace.
  std::string write_trace();
  /// The trace being recorded; null when tracing is off.
  [[nodiscard]] const TraceRecorder* trace() const { return trace_.get(); }

  /// Per device: its memory limit, the bytes buffers hold there (now and at the peak), the bytes
  /// its partitions touch, and what eviction did.
  [[nodiscard]] std::vector<DeviceMemoryReport> device_memory() const;
  /// Per device, its allocations in the order of the device memory's lists (DeviceMemory::
  /// list_order: what eviction chooses by; for tests).
  [[nodiscard]] std::vector<std::vector<std::uint64_t>> device_lists() const;
  /// Starts the peaks of device_memory() over at the current values (to measure one run).
  void reset_device_memory_peaks();

  /// Launches that took the repeat path of launch_partitioned, those of them that also skipped
  /// the directory steps, and those that repeated a launch other than the previous operation (a
  /// cycle: ping-pong's A, B, A, B, ...) (for tests and tools).
  [[nodiscard]] std::uint64_t repeated_launches() const;
  [[nodiscard]] std::uint64_t repeats_leaving_directory() const;
  [[nodiscard]] std::uint64_t cycle_repeats() const;
  /// Buffers of launches whose reads and writes skipped their directory steps because the launch
  /// wrote again exactly what the buffer's last device writes wrote, counted once per launch and
  /// buffer (SharedBuffer::acquire_rewriting_last_writes; for tests and tools).
  [[nodiscard]] std::uint64_t rewriting_launch_buffers() const;
  /// Of those, the ones whose adaptive history took the whole run in one call because it only
  /// restarted the count (SharedBuffer::publish_rewrites; for tests).
  [[nodiscard]] std::uint64_t restarted_rewrite_runs() const;
  /// Of those, buffer's whose restart waited for the end of its family of restarting launches
  /// (SharedBuffer::publish_rewrites), and the restarts its history counts, those made (for
  /// tests).
  [[nodiscard]] std::uint64_t deferred_rewrite_restarts(BufferId buffer) const;
  [[nodiscard]] std::uint64_t history_restarts(BufferId buffer) const;
  /// Kernels submitted (one per partition) and the events passed to their drivers to wait for,
  /// in total: what the trackers (or, under measurement gamma, the previous kernel) gave them,
  /// before the driver drops finished ones (for tools: `unimem bench`'s wait_events_per_kernel).
  struct KernelWaits {
    std::uint64_t kernels = 0;
    std::uint64_t events = 0;
  };
  [[nodiscard]] KernelWaits kernel_waits() const;
  /// Changes when an operation may have changed a directory: every operation but the launches
  /// that ran without their directory steps (a repeat that skipped them, or any launch under
  /// measurement gamma). What device_holding_most says is the same while it stays the same.
  [[nodiscard]] std::uint64_t directory_version() const;
  /// RuntimeOptions::repeat_fast_path (fixed at construction).
  [[nodiscard]] bool repeat_fast_path() const { return repeat_fast_path_; }
  /// RuntimeOptions::scalar_twins (only with the fast path; fixed at construction).
  [[nodiscard]] bool scalar_twins() const { return scalar_twins_; }
  /// RuntimeOptions::min_split_bytes as resolved (option, environment or default).
  [[nodiscard]] std::uint64_t min_split_bytes() const { return min_split_bytes_; }
  /// Of devices, the one holding the most bytes of args' buffers current (the first on a tie):
  /// where a launch kept whole runs with the fewest copies.
  [[nodiscard]] std::size_t device_holding_most(std::span<const LaunchArg> args,
                                                std::span<const std::size_t> devices) const;
  /// How many runs in a row of kernel written on writers the adaptive history of buffer has seen
  /// followed by the same copies (AdaptiveHistory::repeat_count; for tests).
  [[nodiscard]] int history_repeat_count(BufferId buffer, const std::string& kernel,
                                         AgentMask writers) const;

  /// The accesses buffer's hazard trackers hold (SharedBuffer::tracked_accesses; for tests),
  /// deferred records of cycle repeats included (they are recorded first).
  [[nodiscard]] std::size_t tracked_accesses(BufferId buffer);
  /// Cycle repeats whose hazard records were deferred (launch_partitioned says when; for tests
  /// and benchmarks).
  [[nodiscard]] std::uint64_t deferred_record_launches() const;
  /// Operations in the in-flight list: every one not yet seen finished, and finished ones until
  /// the next pruning, at most RuntimeCore::kPruneInflightEvery operations later (for tests).
  [[nodiscard]] std::size_t inflight_operations() const;
  /// Launches of a verified periodic cycle that replayed their round's copies and kernels without
  /// the directory steps, and the times such a replay's state was materialized ("Periodic
  /// cycles" in runtime_core.cpp; for tests and tools).
  [[nodiscard]] std::uint64_t periodic_replays() const;
  [[nodiscard]] std::uint64_t periodic_materializations() const;
  /// Rounds of periodic cycles run as probes (no capture: their histories still counted up) and
  /// found not periodic by their count signatures ("Periodic cycles"; for tests).
  [[nodiscard]] std::uint64_t periodic_probe_rounds() const;
  /// Rounds of periodic cycles that began replaying a round verified on other buffers (an
  /// earlier run's, made anew since) instead of capturing one ("Carried rounds" in
  /// runtime_core.cpp; for tests and tools).
  [[nodiscard]] std::uint64_t periodic_carried_rounds() const;
  /// Launches of a family of rewriting launches issued with per-agent replay chains instead of
  /// the hazard trackers, and the times such a family's orderings were recorded in the trackers
  /// ("Affine replays" in runtime_core.cpp; for tests and tools).
  [[nodiscard]] std::uint64_t affine_replays() const;
  [[nodiscard]] std::uint64_t affine_materializations() const;
  /// The agents holding current copies of byte offset (for tests and tools).
  [[nodiscard]] AgentMask valid_agents(BufferId buffer, std::uint64_t offset) const;
  [[nodiscard]] std::vector<IntervalMap<AgentMask>::Segment> directory_segments(
      BufferId buffer) const;

 private:
  SharedBuffer& buffer_locked(BufferId id) const;
  UpdateStrategy strategy_for(const SharedBuffer& b) const {
    return b.strategy_override().value_or(strategy_);
  }
  /// Remembers an operation until it has finished (finish() and the destructor wait for it);
  /// `kernel`, for a launch, is kept alive as long (a driver may use the kernel object until the
  /// launch has run), without a completion callback per launch.
  void track(const Event& e, const std::shared_ptr<const CompiledKernel>& kernel = nullptr);
  /// Where a launch keeps a partition's kernel once enqueued (submit_kernels, launch_again): a
  /// deferred launch's in deferred_scratch_[partition], in the coherent modes (`coherent`) as its
  /// device's last kernel, and in flight with its kernel object (track). A periodic replay passes
  /// coherent = false: materialize_period_locked sets the devices' last kernels from the steps.
  void keep_kernel_locked(std::size_t partition, std::size_t device, const Event& e,
                          const std::shared_ptr<const CompiledKernel>& kernel, bool deferred,
                          bool coherent);

  // The steps of launch_partitioned (runtime.cpp says what each does).
  struct BufferUse;
  struct PartitionUses;
  /// A chained deferred launch whose driver failed after enqueuing some of its kernels (their
  /// events in deferred_scratch_): they are the newest accesses, recorded after the deferred runs
  /// before them so later operations wait for them.
  void record_failed_deferred_launch_locked(std::span<const PartitionUses> plan);
  // A launch that failed after enqueueing its first `issued` partitions' kernels publishes their
  // writes (runtime_core.cpp says why).
  void publish_failed_launch_locked(std::span<const PartitionUses> plan, std::size_t issued,
                                    const std::string& kernel);
  std::vector<PartitionUses> check_partitions(std::span<const LaunchArg> args,
                                              std::span<const LaunchPartition> partitions) const;
  static void check_disjoint_writes(std::span<const PartitionUses> plan);
  void acquire_inputs(std::span<PartitionUses> plan);
  /// How a launch's kernels are ordered (launch_partitioned says when each applies).
  enum class Ordering : std::uint8_t {
    hazards,           // after the hazards of their bytes, recorded as the last accesses
    hazards_chained,   // the same, and after their device's previous kernel
    chained_deferred,  // after their device's previous kernel only; records deferred
    periodic           // after their agent's chain of a periodic replay (period_); deferred
  };
  /// The launch's completion: its one kernel's event, or when_all of several. Under
  /// chained_deferred the kernels' events are kept in deferred_scratch_ (launch_partitioned
  /// hands them to the entry once every partition was enqueued); under periodic they are
  /// written over its first plan.size() entries (sized so), kernels_issued_ counting them
  /// (replay_period_step takes the list).
  /// acquired: acquire_inputs ran for this launch (BufferUse::read_only is this launch's).
  Event submit_kernels(std::span<const LaunchArg> args, std::span<PartitionUses> plan,
                       std::vector<Event>* partition_events, Ordering ordering, bool acquired);
  /// Records a partition's accesses in its buffers' trackers as done by `kernel` (a deferred
  /// repeat's, when settled: plain reads, since it asked no tracker).
  static void record_accesses(const PartitionUses& pu, const Event& kernel);
  /// Records the deferred accesses of cycle repeats (each entry's last deferred run, in the order
  /// they ran); every operation but a deferred repeat calls it first (begin_operation_locked).
  void settle_deferred_records_locked();
  /// The start of every operation but a launch: deferred records settled, operations_ counted.
  void begin_operation_locked();
  void publish_writes(std::span<const PartitionUses> plan, const std::string& kernel);
  void write_back_chunks(std::span<const PartitionUses> plan);
  [[nodiscard]] static bool uses_aligned(std::span<const PartitionUses> plan);
  void acquire_aligned_inputs(std::span<PartitionUses> plan);
  /// probe: sizing a chunk (footprint) may choose packed boxes freely; a launch packs only the
  /// boxes its partition's pitched kernel was built for (LaunchPartition::pitched_shapes).
  void choose_boxes(std::span<const LaunchArg> args, PartitionUses& pu, bool probe = false) const;
  /// choose_boxes' packed 2-D box for a buffer use, when it may and should have one.
  [[nodiscard]] std::optional<ResidentBox> packed_box(std::span<const LaunchArg> args,
                                                      const LaunchPartition& p,
                                                      const BufferUse& use,
                                                      const IntervalSet& touched,
                                                      const Interval& run) const;
  /// choose_boxes' first step for an out-of-core chunk: a buffer's arguments whose bytes lie far
  /// apart get a box each (runtime_core.cpp says when and why that is correct).
  static void split_uses(PartitionUses& pu);
  /// choose_boxes' last step: a buffer's first box on the device covers the partition's boxes of
  /// its same-size buffers when that adds at most an eighth (ping-pong buffers never grow).
  void widen_first_boxes(PartitionUses& pu) const;
  class HeldBuffers;
  void hold_buffers(std::span<PartitionUses> plan, HeldBuffers& held);
  void note_touched(std::span<const PartitionUses> plan);
  void trace_host_access(TraceCategory category, const SharedBuffer& b, std::uint64_t offset,
                         std::uint64_t size, const Event& e, std::int64_t submitted);
  void trace_kernel(const LaunchPartition& p, std::size_t index, std::size_t count, const Event& e,
                    std::int64_t submitted);

  DeviceRegistry registry_;
  // Null when tracing is off: every trace point is one branch on it. Declared before the
  // buffers' context, which points to it.
  std::unique_ptr<TraceRecorder> trace_;
  CoherenceContext context_;
  // mutex_: locking it closes an open eventless streak first (close_streak_locked), so every
  // operation, query and the destructor find the state as if each of the streak's launches had
  // run launch_again in full; only launch_again takes it without (lock_keeping_streak) to extend
  // the streak. One place for all of the runtime's entry points: none can forget the close.
  class StreakClosingMutex {
   public:
    explicit StreakClosingMutex(RuntimeCore& owner) : owner_(owner) {}
    void lock();
    void unlock() { mutex_.unlock(); }
    void lock_keeping_streak() { mutex_.lock(); }

   private:
    WordMutex mutex_;  // every launch takes it: one atomic instruction a side
    RuntimeCore& owner_;
  };
  mutable StreakClosingMutex mutex_{*this};
  UpdateStrategy strategy_;
  Measurement measurement_;
  std::map<std::uint32_t, std::unique_ptr<SharedBuffer>> buffers_;
  std::uint32_t next_id_ = 1;
  TransferStats released_stats_;
  // Per buffer id and device: the bytes partitions touched (DeviceMemoryReport::need_bytes).
  std::map<std::uint32_t, std::vector<IntervalSet>> touched_;
  std::vector<std::uint64_t> need_now_;
  std::vector<std::uint64_t> need_peak_;
  struct InFlight {
    Event event;
    std::shared_ptr<const CompiledKernel> kernel;
  };
  std::vector<InFlight> inflight_;  // live from inflight_head_ on (track)
  std::size_t inflight_head_ = 0;
  std::vector<InFlight> inflight_spare_;  // empty; storage finish() swaps with inflight_'s
  // Every call that may change a buffer, the directory, residency or strategies counts here
  // (under mutex_): the repeat path below applies only right after its launch.
  std::uint64_t operations_ = 0;
  bool repeat_fast_path_ = true;       // RuntimeOptions::repeat_fast_path
  bool scalar_twins_ = true;           // RuntimeOptions::scalar_twins, with the fast path
  bool direct_host_reads_ = true;      // RuntimeOptions::direct_host_reads
  std::uint64_t min_split_bytes_ = 0;  // RuntimeOptions::min_split_bytes, resolved
  // The lean repeat (launch_again): a partition's kernel and driver arguments as its entry's
  // last run passed them to its device.
  struct LeanPartition {
    Device* device = nullptr;  // the partition's (registry_'s devices live as long as this)
    std::shared_ptr<const CompiledKernel> kernel;
    std::vector<KernelArg> args;
  };
  // The recent launch_partitioned calls with a repeat token, as launch_partitioned needs them
  // again (runtime_core.cpp, before launch_partitioned, says when and why they may repeat).
  struct RepeatableLaunch {
    std::shared_ptr<const void> token;
    std::vector<PartitionUses> plan;  // its checked uses (partitions live with the token)
    // The static half of the directory skip (repeat_leaves_directory): every buffer lazy or
    // adaptive, no partition reading bytes another one writes.
    bool leaves_directory = false;
    // The state half (repeat_changes_nothing) held when repeat_epoch_ was this value: the
    // directory, ledgers and histories have not changed since, so it still holds.
    std::uint64_t verified_epoch = kNeverVerified;
    int failed_verifications = 0;  // in a row; at kMaxFailedVerifications the check stops
    // Its adaptive written buffers (each skipped repeat is counted in their histories).
    std::vector<SharedBuffer*> adaptive_written;
    // operations_ at its last run (a launch's number), and at its last run with deferred
    // records (0: none pending) with that run's kernels, one per partition.
    std::uint64_t last_run = 0;
    std::uint64_t deferred_run = 0;
    std::vector<Event> deferred_kernels;
    // Its last run's kernels and arguments, per partition (filled by a repeat that may precede a
    // lean one: launch_again).
    std::vector<LeanPartition> lean;
  };
  static constexpr std::uint64_t kNeverVerified = ~std::uint64_t{0};
  static constexpr int kMaxFailedVerifications = 3;
  // At most this many, the most recently run last: a cycle of up to kRepeatCycle launches
  // (ping-pong: 2) repeats. Valid only while repeat_after_operation_ == operations_ (nothing but
  // their launches since) and no eviction happened since (repeat_evictions_).
  static constexpr std::size_t kRepeatCycle = 4;
  std::vector<std::unique_ptr<RepeatableLaunch>> repeatable_;
  std::uint64_t repeat_after_operation_ = 0;  // operations_ right after the last of them
  std::uint64_t repeat_evictions_ = 0;        // DeviceMemory::eviction_count() then
  // Bumped by every launch that runs its directory steps: a verification is valid in its epoch.
  std::uint64_t repeat_epoch_ = 0;
  std::uint64_t repeated_launches_ = 0;
  std::uint64_t repeats_leaving_directory_ = 0;
  std::uint64_t cycle_repeats_ = 0;
  KernelWaits kernel_waits_;
  std::uint64_t launches_leaving_directory_ = 0;  // directory_version() = operations_ - this
  // Deferred hazard records (launch_partitioned): every launch numbered above chained_after_ ran
  // without its directory steps and after its devices' previous kernels (last_kernel_, per
  // device, kept in the coherent modes); deferred_pending_ while some entry holds records.
  mutable std::uint64_t chained_after_ = 0;  // (materialize_period_locked sets it)
  // (A periodic replay leaves it as the replay began: materialize_period_locked sets it.)
  mutable std::vector<Event> last_kernel_;
  bool deferred_pending_ = false;
  std::uint64_t deferred_record_launches_ = 0;
  std::vector<RepeatableLaunch*> settle_order_;  // scratch of settle_deferred_records_locked
  // A deferred launch's kernels, until all ran (a periodic replay's: see replay_period_step;
  // materialize_period_locked drops what its replays left in it).
  mutable std::vector<Event> deferred_scratch_;
  // The kernels the current launch enqueued so far: reset by submit_kernels, and by a periodic
  // replay before its copies (replay_period_step); what a failed launch's catch publishes.
  std::size_t kernels_issued_ = 0;
  [[nodiscard]] bool repeat_leaves_directory(std::span<const PartitionUses> plan) const;
  // A chained deferred run `number` of entry enqueued all its kernels (deferred_scratch_): they
  // become the entry's deferred records (launch_partitioned, launch_again).
  void keep_deferred_kernels_locked(RepeatableLaunch& entry, std::size_t partitions,
                                    std::uint64_t number);
  // The lean repeat (launch_again): the entry whose last run was the previous operation and may
  // run again lean, valid only while operations_ == lean_after_ (no operation since: entries are
  // destroyed only by launches, after they counted).
  RepeatableLaunch* lean_entry_ = nullptr;
  std::uint64_t lean_after_ = 0;
  bool lean_repeats_ = true;  // RuntimeOptions::lean_repeats
  bool lean_wanted_ = false;  // launch_again was called: repeats keep what it needs (lean)
  // Set by launch_partitioned for a repeat whose run may precede a lean one: submit_kernels
  // keeps each partition's kernel and arguments there.
  std::vector<LeanPartition>* lean_capture_ = nullptr;
  // hold_buffers: every use was held already (Residency::held_for_use), so each partition held
  // its buffers in plan order with one DeviceMemory::use each.
  bool held_in_plan_order_ = false;
  std::uint64_t lean_launches_ = 0;
  // The eventless streak (runtime_core.cpp, "The eventless streak"): open while entry is set;
  // launches: its launches so far, each partition's kernels enqueued through launch_in_order
  // (the first) and launch_in_order_again (the later ones) with last[i] the newest's number;
  // waits: the device waits the first launch would have counted (kernel_waits_.events; each
  // later one counts one per partition).
  struct EventlessStreak {
    RepeatableLaunch* entry = nullptr;
    std::uint64_t launches = 0;
    std::uint64_t waits = 0;
    std::vector<std::uint64_t> last;
  };
  EventlessStreak streak_;
  // A streak is closed and another opened after this many launches (the adaptive histories count
  // them in an int).
  static constexpr std::uint64_t kStreakLimit = std::uint64_t{1} << 24;
  // Per device: the number of its newest kernel launched in order without an event, set when a
  // streak closes (0: none, or known finished: close_eventless clears it).
  std::vector<std::uint64_t> eventless_through_;
  // Does at once what the streak's launches left to whoever comes next (see there).
  void close_streak_locked();
  // mutex_.lock() for the destructor: a streak that fails to close is waited for, not thrown.
  void lock_for_destruction();
  // One launch of the open streak (its entry's lean partitions, launch_in_order).
  void launch_in_streak_locked();
  void fail_streak_launch_locked(std::size_t done);
  // The waits for previous kernels the streak's next launch counts for its first partitions.
  [[nodiscard]] std::uint64_t previous_kernels_locked(std::size_t partitions) const;
  std::vector<std::uint64_t> streak_scratch_;  // a streak launch's kernel numbers
  // Invariant builds: what the repeat path would decide for launch_again's launch, and its holds.
  void check_lean_repeat(RepeatableLaunch& entry, std::span<const LaunchArg> args);

  // Periodic cycles (runtime_core.cpp, "Periodic cycles", says what and why).
  struct PeriodicStep {
    const void* token = nullptr;                       // its launch's repeat token
    const std::vector<PartitionUses>* plan = nullptr;  // its entry's plan
    std::vector<RecordedCopy> before;                  // acquire_inputs' copies, in issue order
    std::vector<RecordedCopy> after;  // publish_writes' copies (the strategies', after it)
    std::vector<SharedBuffer::PeriodicState> state;  // per cycle buffer, after the step
    // Its last replay: when (a launch number; 0: none since the replay began) and its events.
    std::uint64_t replayed_at = 0;
    EventList before_events;
    EventList kernel_events;  // per partition
    EventList after_events;
  };
  enum class PeriodPhase : std::uint8_t { idle, capturing, replaying };
  struct PeriodicCycle {
    PeriodPhase phase = PeriodPhase::idle;
    std::size_t length = 0;    // launches per round
    std::size_t position = 0;  // the step the next launch is
    std::vector<SharedBuffer*> buffers;
    std::vector<SharedBuffer::PeriodicState> start;  // per buffer, at the round's start
    std::vector<PeriodicStep> steps;
    std::uint64_t replayed = 0;  // launches replayed since the replay began
    int failed_rounds = 0;       // captured rounds that were not periodic, in a row
    std::size_t streak = 0;      // repeats in a row with the cycle length streak_length
    std::size_t streak_length = 0;
    std::vector<EventList> chain;  // per agent: what its next replayed operation waits for
    // The lists a step's previous replay held, kept (empty) for the next replay's copies, so a
    // replayed launch allocates no list (replay_period_step).
    EventList spare_before;
    EventList spare_after;
    std::vector<Directory> shadow;  // invariant builds: the directories the full path would have
    // A probe round ("Periodic cycles", probe rounds): run without its copies logged or its states
    // taken; only the histories' count signatures at its start are kept, to compare at its end.
    bool probing = false;
    std::vector<AdaptiveHistory::CountSignature> probe_start;  // per buffer
    // The replayed round is a carried one ("Carried rounds"): no round of it ran before the
    // replay, so the states after its steps hold one round's growth the replays include.
    bool adopted = false;
  };
  static constexpr int kMaxFailedRounds = 6;
  // Whether this launch is the next step of a round being captured (starting one when it may).
  bool begin_period_step(const RepeatableLaunch* entry, std::size_t found, std::size_t cycle_length,
                         bool coherent);
  void end_period_step();
  // The next round starts now: a probe round when one may be (may_probe) and a history of the
  // cycle's buffers still counts up a key of the round (period_counts_settled), else a captured
  // one, from start (the state now, when the caller took it already) or from one taken here.
  void start_period_round(bool may_probe, std::vector<SharedBuffer::PeriodicState>* start);
  // Whether every adaptive buffer of the cycle counts each key of the round's launches (kernel,
  // writers of the buffer) 2 times or more (start_period_round probes when not).
  [[nodiscard]] bool period_counts_settled() const;
  void begin_period_replay();
  // Every access the agents' trackers hold on buffers, and each device's last kernel, as
  // period_.chain (the chains a replay starts from; invariant builds check them).
  void start_replay_chains(const std::vector<SharedBuffer*>& buffers);
  // Invariant builds: each agent's chain holds every event deps_for_write of a whole buffer
  // of the cycle gives on that agent (begin_period_replay lists the trackers' events instead).
  void check_replay_chains(const std::vector<SharedBuffer*>& buffers);
  void reset_period_storage() const;
  // (Inlined into launch_partitioned: every replayed launch asks it.)
  [[nodiscard, gnu::always_inline]] inline bool replays_next(const RepeatableLaunch* entry,
                                                             std::size_t cycle_length,
                                                             bool coherent) const;
  Event replay_period_step(std::span<const LaunchArg> args, std::size_t found,
                           std::vector<Event>* partition_events);
  Event replay_copy(const RecordedCopy& c);
  void check_replayed_step(const PeriodicStep& step, std::size_t index);
  /// Makes a replayed cycle's state real (every operation but a replayed launch calls it first,
  /// through settle_deferred_records_locked; const queries call it themselves).
  void materialize_period_locked() const;
  mutable PeriodicCycle period_;
  // Carried rounds (runtime_core.cpp, "Carried rounds"): the last verified round, kept when its
  // cycle was materialized, with its buffers named by their place in the cycle's buffer list.
  struct CarriedUse {
    std::size_t buffer = 0;  // its place in the cycle's buffers
    AccessBytes bytes;
    IntervalSet needed;
    IntervalSet written;
    ResidentBox box;
  };
  struct CarriedPartition {
    Agent agent = kHostAgent;
    std::string kernel;
    std::vector<CarriedUse> uses;
  };
  struct CarriedStep {
    std::vector<CarriedPartition> plan;
    std::vector<RecordedCopy> before;  // their buffers null: before_buffers names them
    std::vector<RecordedCopy> after;
    std::vector<std::size_t> before_buffers;
    std::vector<std::size_t> after_buffers;
    std::vector<SharedBuffer::PeriodicState> state;
  };
  struct CarriedRound {
    bool valid = false;
    MeasurementMode mode = MeasurementMode::normal;
    std::vector<std::uint64_t> sizes;  // per cycle buffer
    std::vector<UpdateStrategy> strategies;
    std::vector<SharedBuffer::PeriodicState> start;
    std::vector<CarriedStep> steps;
  };
  // Keeps the verified round of period_ (materialize_period_locked, before it forgets it).
  void carry_period_locked() const;
  // The round starting now (end_period_step, a captured one about to start from period_.start)
  // replays the carried round instead when that round is this one's on other buffers.
  bool adopt_carried_round();
  [[nodiscard]] bool carried_round_matches() const;
  mutable CarriedRound carried_;
  std::uint64_t periodic_carried_rounds_ = 0;
  std::uint64_t periodic_replays_ = 0;
  mutable std::uint64_t periodic_materializations_ = 0;
  std::uint64_t periodic_probe_rounds_ = 0;
  // Affine replays (runtime_core.cpp, "Affine replays", says what and why).
  struct AffineFamily {
    bool replaying = false;
    // The last launch that rewrote every buffer of its aligned plan (launch_partitioned): its
    // number (0: none), kernel, partitions' agents and buffers (its plan's use order). While
    // replaying, those of the family.
    std::uint64_t candidate = 0;
    std::string kernel;
    // Where the candidate's kernel name lay (a Program's launches name one kernel object's):
    // the same address is taken for the same name without reading it. (The name only groups
    // launches into a family: a stale address costs a replay's entry, never a result, since
    // every check a replay relies on is made on the state, with the launch's own name.)
    const char* kernel_name = nullptr;
    std::vector<Agent> agents;
    std::vector<std::size_t> devices;  // per partition
    // The replayed kernels in deferred_scratch_: the last complete launch's (0: none yet).
    std::size_t kernels = 0;
    std::vector<SharedBuffer*> buffers;
    // Per agent: a replayed operation ran there, so its chain (period_.chain) is that one alone.
    std::vector<std::uint8_t> touched;
    // Per use, in rewriting_uses_' order (buffer-major): the run of the allocation that held
    // its box on its partition's device when affine_applies last searched, and its buffer's
    // Residency::changes() then. While that count is unchanged the run is still held there, so
    // a box inside it is covered without a search. kNoRun: none known (a packed one is not
    // kept).
    static constexpr std::uint64_t kNoRun = ~std::uint64_t{0};
    struct HeldRun {
      Interval bytes;
      std::uint64_t changes = kNoRun;
    };
    std::vector<HeldRun> held;
  };
  // Whether this launch (its plan checked, its number counted) is the family's next replayed
  // one; prepares every buffer's rewrite (SharedBuffer::prepare_rewrite) when it is.
  [[nodiscard]] bool affine_applies(std::span<PartitionUses> plan, const std::string& kernel,
                                    bool coherent);
  // The launch rewrote every buffer of its aligned plan: a family may start with the next one.
  void note_affine_candidate(std::span<const PartitionUses> plan, const std::string& kernel,
                             std::uint64_t number);
  void begin_affine_replay();
  // acquire_aligned_inputs for a replayed launch: every buffer's prepared rewrite applied with
  // its copies on the chains.
  void acquire_affine_inputs(std::span<PartitionUses> plan);
  // Records the family's orderings in the trackers (every operation but a replayed launch calls
  // it first, through materialize_period_locked).
  // (kernels: how many of a failed replayed launch's kernels were enqueued.)
  static constexpr std::size_t kAllKernels = ~std::size_t{0};
  void materialize_affine_locked(std::size_t kernels = kAllKernels) const;
  // publish_writes for a replayed launch (every buffer rewrote).
  void publish_affine_writes(const std::string& kernel);
  mutable AffineFamily affine_;
  std::uint64_t affine_replays_ = 0;
  mutable std::uint64_t affine_materializations_ = 0;
  [[nodiscard]] bool repeat_changes_nothing(RepeatableLaunch& launch, const std::string& kernel);
  std::size_t tracked_since_prune_ = 0;
  // Scratch lists of one launch_partitioned (under mutex_), kept so that a launch allocates no
  // list of its own: dependencies and driver arguments per partition, and the hold order.
  EventList launch_deps_;
  std::vector<IntervalSet> launch_read_only_;            // per use: needed minus written
  std::vector<const IntervalSet*> launch_read_only_of_;  // per use: that, or acquire_inputs'
  std::vector<KernelArg> launch_kernel_args_;
  std::vector<BufferUse*> hold_order_;
  // publish_writes' buffers and writes: kept (with the sets' storage) to spare allocations per
  // launch (publish_writes uses a prefix of publish_writes_, assigned over the last launch's).
  std::vector<SharedBuffer*> publish_buffers_;
  // acquire_inputs' buffers that took SharedBuffer::acquire_rewriting_last_writes (publish_writes
  // publishes them with after_device_rewrites), the uses it passed (an affine replay's: every
  // buffer's, from affine_applies to acquire_affine_inputs), and their count so far.
  std::vector<SharedBuffer*> rewriting_buffers_;
  std::vector<SharedBuffer::LaunchUse> rewriting_uses_;
  // acquire_aligned_inputs: per buffer (its place in each partition's uses) whether it took the
  // rewrite, and whether every written buffer did (publish_writes then searches nothing).
  std::vector<std::uint8_t> rewriting_use_;
  bool rewriting_all_written_ = false;
  // Whether the plan of the last acquire_inputs had a chunk (write_back_chunks, right after it).
  bool launch_has_chunks_ = false;
  std::uint64_t rewriting_launch_buffers_ = 0;
  std::uint64_t restarted_rewrite_runs_ = 0;  // restarted_rewrite_runs()
  std::vector<std::pair<Agent, IntervalSet>> publish_writes_;
  [[nodiscard]] EventList inflight_events() const;
  detail::WorkQueue host_queue_;  // last: stops before the buffers whose home copies it touches
};

}  // namespace unimem
