#include "api/runtime_core.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/byte_size.hpp"
#include "common/check.hpp"

namespace unimem {

namespace {

// The state of each buffer into states[i] (SharedBuffer::take_periodic_state), reusing the
// storage of the states already there.
void take_periodic_states(const std::vector<SharedBuffer*>& buffers,
                          std::vector<SharedBuffer::PeriodicState>& states) {
  if (states.size() > buffers.size()) {
    states.erase(states.begin() + static_cast<std::ptrdiff_t>(buffers.size()), states.end());
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (i < states.size()) {
      buffers[i]->take_periodic_state(states[i]);
    } else {
      states.push_back(buffers[i]->periodic_state());
    }
  }
}

// Points the buffers' copy log at a periodic cycle's step while it lives (null: no log).
class CopyLogScope {
 public:
  CopyLogScope(CoherenceContext& context, std::vector<RecordedCopy>* log) : context_(context) {
    context_.copy_log = log;
  }
  ~CopyLogScope() { context_.copy_log = nullptr; }
  CopyLogScope(const CopyLogScope&) = delete;
  CopyLogScope& operator=(const CopyLogScope&) = delete;

 private:
  CoherenceContext& context_;
};

// RuntimeOptions::device_memory, else UNIMEM_DEVICE_MEMORY, else 0 (no cap).
std::uint64_t device_memory_cap(const RuntimeOptions& options) {
  if (options.device_memory != 0) return options.device_memory;
  const char* env = std::getenv("UNIMEM_DEVICE_MEMORY");
  if (env == nullptr) return 0;
  return require_byte_size(env, "UNIMEM_DEVICE_MEMORY");
}

// RuntimeOptions::trace, else UNIMEM_TRACE, else "" (no tracing).
std::string trace_path(const RuntimeOptions& options) {
  if (!options.trace.empty()) return options.trace;
  const char* env = std::getenv("UNIMEM_TRACE");
  return env == nullptr ? std::string() : std::string(env);
}

// RuntimeOptions::min_split_bytes, else UNIMEM_MIN_SPLIT_BYTES (a byte count such as 4096 or
// 64K, or 0), else the default.
std::uint64_t resolve_min_split_bytes(const RuntimeOptions& options) {
  if (options.min_split_bytes) return *options.min_split_bytes;
  const char* env = std::getenv("UNIMEM_MIN_SPLIT_BYTES");
  if (env == nullptr) return RuntimeOptions::kDefaultMinSplitBytes;
  if (std::string_view(env) == "0") return 0;
  return require_byte_size(env, "UNIMEM_MIN_SPLIT_BYTES");
}

std::string range_text(std::uint64_t offset, std::uint64_t size) {
  return Interval{offset, offset + size}.to_string();
}

}  // namespace

RuntimeCore::RuntimeCore(DeviceRegistry devices, RuntimeOptions options)
    : registry_(std::move(devices)),
      context_(CoherenceContext::of(registry_.pointers(), options.recycle_bytes,
                                    device_memory_cap(options))),
      strategy_(options.strategy),
      measurement_(options.measurement, registry_.size()),
      need_now_(registry_.size(), 0),
      need_peak_(registry_.size(), 0),
      repeat_fast_path_(options.repeat_fast_path),
      scalar_twins_(options.repeat_fast_path && options.scalar_twins),
      direct_host_reads_(options.direct_host_reads),
      min_split_bytes_(resolve_min_split_bytes(options)),
      host_queue_("unimem-host") {
  context_.transfers_disabled = !measurement_.transfers();
  context_.rect_copies = options.rect_copies;
  const char* lean_env = std::getenv("UNIMEM_LEAN_REPEATS");
  lean_repeats_ =
      options.lean_repeats && (lean_env == nullptr || std::string_view(lean_env) != "0");
  last_kernel_.resize(registry_.size());
  eventless_through_.resize(registry_.size());
  // Gamma's kernels are in no tracker: a box merged away waits for its device's last kernel
  // (they run in order there) before it is freed. Called under mutex_, from a launch.
  context_.untracked_kernels = [this](std::size_t device, EventList& users) {
    measurement_.add_kernel_dependencies(device, users);
  };
  UNIMEM_REQUIRE(!registry_.empty(), "Runtime: at least one device is needed");
  UNIMEM_REQUIRE(registry_.size() < kMaxAgents, "Runtime: at most 63 devices are supported");
  if (const std::string path = trace_path(options); !path.empty()) {
    std::vector<std::string> names;
    for (std::size_t d = 0; d < registry_.size(); ++d) {
      names.push_back(registry_.at(d).name());
      registry_.at(d).set_profiling(true);  // events report when they ran (EventState::times)
    }
    host_queue_.set_timing(true);
    trace_ = std::make_unique<TraceRecorder>(path, std::move(names));
    context_.trace = trace_.get();
  }
}

RuntimeCore::~RuntimeCore() {
  EventList all;
  {
    lock_for_destruction();
    const std::lock_guard lock(mutex_, std::adopt_lock);
    // A replayed cycle's copies are in no tracker until its state is materialized.
    settle_deferred_records_locked();
    all = inflight_events();
  }
  for (const Event& e : all) {
    try {
      e.wait();
    } catch (...) {  // reported through the event itself
    }
  }
  lock_for_destruction();
  const std::lock_guard lock(mutex_, std::adopt_lock);
  buffers_.clear();
  if (trace_) {
    try {
      trace_->write();
    } catch (const std::exception& e) {  // a destructor must not throw: say it instead
      std::fprintf(stderr, "unimem: %s\n", e.what());
    }
  }
}

std::string RuntimeCore::write_trace() {
  if (!trace_) return {};
  finish();
  trace_->write();
  return trace_->path();
}

SharedBuffer& RuntimeCore::buffer_locked(BufferId id) const {
  auto it = buffers_.find(id.value);
  if (it == buffers_.end()) {
    throw PreconditionError("unknown buffer #" + std::to_string(id.value) +
                            " (never created or already released)");
  }
  return *it->second;
}

void RuntimeCore::track(const Event& e, const std::shared_ptr<const CompiledKernel>& kernel) {
  // Finished events are dropped every kPruneInflightEvery operations: amortised O(1) completion
  // queries per operation instead of one per in-flight event (a driver call each). Operations
  // finish mostly in the order they were submitted, so the pass drops the finished ones in front
  // and stops at the first still running: the later ones, running too when the host submits
  // ahead of the devices, are not asked again at every pass. The schedule is fixed (it used to
  // follow the list's size, doubling it after each pass): a backlog that has drained is dropped
  // within one period, so the work per operation does not depend on how far the devices were
  // behind at an earlier pass (the instruction counts of `unimem bench --instructions` moved
  // with it).
  if (++tracked_since_prune_ >= kPruneInflightEvery) {
    tracked_since_prune_ = 0;
    // Dropped entries are emptied in place and the list's live part starts at inflight_head_;
    // it moves down only once the dropped part is at least as long, so a pass costs what it
    // drops, amortised, not the length of a backlog behind it.
    while (inflight_head_ < inflight_.size() && inflight_[inflight_head_].event.is_complete()) {
      inflight_[inflight_head_] = InFlight{};
      ++inflight_head_;
    }
    if (inflight_head_ >= inflight_.size() - inflight_head_) {
      inflight_.erase(inflight_.begin(),
                      inflight_.begin() + static_cast<std::ptrdiff_t>(inflight_head_));
      inflight_head_ = 0;
    }
  }
  if (e.is_null()) return;
  // A kernel launched again (a loop) is held by its newest entry only: moved there from the one
  // before, no count changed. The entries go in order, each only once it and every one before it
  // finished, so the newest outlives every earlier launch of the kernel.
  if (kernel && inflight_.size() > inflight_head_ && inflight_.back().kernel == kernel) {
    inflight_.push_back({e, std::move(inflight_.back().kernel)});
  } else {
    inflight_.push_back({e, kernel});
  }
}

void RuntimeCore::keep_kernel_locked(std::size_t partition, std::size_t device, const Event& e,
                                     const std::shared_ptr<const CompiledKernel>& kernel,
                                     bool deferred, bool coherent) {
  if (coherent) {
    if (deferred) deferred_scratch_[partition] = e;
    last_kernel_[device] = e;
  }
  track(e, kernel);
}

void RuntimeCore::keep_deferred_kernels_locked(RepeatableLaunch& entry, std::size_t partitions,
                                               std::uint64_t number) {
  // Moved one by one (the scratch list stays null-filled for the next launch): cheaper than
  // swapping the lists and clearing and refilling the scratch one at every repeat.
  if (entry.deferred_kernels.size() != partitions) entry.deferred_kernels.resize(partitions);
  for (std::size_t i = 0; i < partitions; ++i) {
    entry.deferred_kernels[i] = std::move(deferred_scratch_[i]);
  }
  entry.deferred_run = number;
  deferred_pending_ = true;
  ++deferred_record_launches_;
}

std::size_t RuntimeCore::inflight_operations() const {
  std::lock_guard lock(mutex_);
  return inflight_.size() - inflight_head_;
}

EventList RuntimeCore::inflight_events() const {
  EventList all;
  all.reserve(inflight_.size() - inflight_head_);
  for (std::size_t i = inflight_head_; i < inflight_.size(); ++i) all.push_back(inflight_[i].event);
  return all;
}

BufferId RuntimeCore::create_buffer(std::uint64_t size, std::string name,
                                    std::optional<UpdateStrategy> strategy) {
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  const std::uint32_t id = next_id_++;
  if (name.empty()) name = "buffer" + std::to_string(id);
  if (size == 0) {
    throw PreconditionError("create_buffer '" + name + "': size must be positive");
  }
  auto b = std::make_unique<SharedBuffer>(id, std::move(name), size, context_);
  b->set_strategy_override(strategy);
  buffers_.emplace(id, std::move(b));
  return BufferId{id};
}

void RuntimeCore::release_buffer(BufferId id) {
  std::unique_ptr<SharedBuffer> doomed;
  {
    std::lock_guard lock(mutex_);
    begin_operation_locked();
    buffer_locked(id);
    auto it = buffers_.find(id.value);
    released_stats_ += it->second->stats();
    it->second->retire();  // destroyed outside the lock: nothing may evict it meanwhile
    doomed = std::move(it->second);
    buffers_.erase(it);
    if (auto t = touched_.find(id.value); t != touched_.end()) {
      for (std::size_t d = 0; d < t->second.size(); ++d) need_now_[d] -= t->second[d].total_size();
      touched_.erase(t);
    }
  }
  doomed.reset();  // waits for its pending operations outside the lock
}

std::uint64_t RuntimeCore::buffer_size(BufferId id) const {
  std::lock_guard lock(mutex_);
  return buffer_locked(id).size();
}

void RuntimeCore::set_strategy(UpdateStrategy strategy) {
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  strategy_ = strategy;
}

UpdateStrategy RuntimeCore::strategy() const {
  std::lock_guard lock(mutex_);
  return strategy_;
}

void RuntimeCore::set_buffer_strategy(BufferId id, std::optional<UpdateStrategy> strategy) {
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  buffer_locked(id).set_strategy_override(strategy);
}

void RuntimeCore::time_host_operations() { host_queue_.set_timing(true); }

void RuntimeCore::time_device_operations() {
  const std::lock_guard lock(mutex_);  // closes an open streak
  for (std::size_t d = 0; d < registry_.size(); ++d) registry_.at(d).set_profiling(true);
}

Event RuntimeCore::write(BufferId id, std::uint64_t offset, std::span<const std::byte> data,
                         DeviceEvents* operations) {
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  SharedBuffer& b = buffer_locked(id);
  if (offset > b.size() || data.size() > b.size() - offset) {
    throw PreconditionError(b.describe() + ": host write of " + range_text(offset, data.size()) +
                            " reaches outside the buffer");
  }
  UNIMEM_REQUIRE(data.data() != nullptr || data.empty(), "Runtime::write: null data");
  if (data.empty()) return Event{};
  const IntervalSet bytes(Interval{offset, offset + data.size()});
  b.begin_write();
  EventList deps;
  b.tracker(kHostAgent).deps_for_write(bytes, deps);
  b.home_written(bytes);
  std::byte* dst = b.home() + offset;
  const std::int64_t submitted = trace_ ? TraceRecorder::now_ns() : 0;
  Event e = host_queue_.submit(
      [dst, src = data.data(), n = data.size()] { std::memcpy(dst, src, n); }, deps);
  if (trace_) trace_host_access(TraceCategory::host_write, b, offset, data.size(), e, submitted);
  b.tracker(kHostAgent).record_write(bytes, e);
  if (measurement_.coherent()) b.after_host_write(bytes, strategy_for(b));
  track(e);
  if (operations != nullptr) operations->emplace_back(0, e);  // on the host clock
  return e;
}

void RuntimeCore::write_blocking(BufferId id, std::uint64_t offset,
                                 std::span<const std::byte> data) {
  write(id, offset, data).wait();
}

Event RuntimeCore::read(BufferId id, std::uint64_t offset, std::span<std::byte> out,
                        DeviceEvents* operations) {
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  SharedBuffer& b = buffer_locked(id);
  if (offset > b.size() || out.size() > b.size() - offset) {
    throw PreconditionError(b.describe() + ": host read of " + range_text(offset, out.size()) +
                            " reaches outside the buffer");
  }
  UNIMEM_REQUIRE(out.data() != nullptr || out.empty(), "Runtime::read: null destination");
  if (out.empty()) return Event{};
  const Interval range{offset, offset + out.size()};
  // The parts copied out of the home copy; the others (direct reads) come from their device
  // holders straight into out, so the home copy is not written and read again on the way.
  IntervalSet from_home(range);
  EventList direct;
  std::vector<std::size_t> direct_devices;
  if (measurement_.coherent()) {
    if (direct_host_reads_) {
      from_home = b.read_direct(range, out.data(), direct,
                                operations != nullptr ? &direct_devices : nullptr);
    } else {
      b.acquire(kHostAgent, from_home);
    }
  } else if (direct_host_reads_) {
    // Gamma has no directory to tell home bytes from device bytes; what a program reads back is
    // mostly kernel output, which alpha and beta copy without a pass through the home copy, so
    // gamma makes none either: the read only waits for the kernels.
    measurement_.add_host_read_dependencies(direct);
    from_home = IntervalSet{};
  }
  const std::int64_t submitted = trace_ ? TraceRecorder::now_ns() : 0;
  Event home_copy;
  if (!from_home.empty()) {
    EventList deps;
    measurement_.add_host_read_dependencies(deps);
    b.tracker(kHostAgent).deps_for_read(from_home, deps);
    // Bytes nobody wrote read as zero. Gamma keeps no bookkeeping, this included: its outputs are
    // never copied home, and zero-filling them would be host work alpha does not do.
    if (measurement_.coherent()) {
      b.prepare_home_read(from_home);
    } else {
      b.home_written(from_home);
    }
    b.count_home_read(from_home.total_size());
    std::vector<Interval> parts(from_home.begin(), from_home.end());
    home_copy = host_queue_.submit(
        [src = b.home(), dst = out.data(), offset, parts = std::move(parts)] {
          for (const Interval& p : parts) {
            std::memcpy(dst + (p.begin - offset), src + p.begin, p.size());
          }
        },
        deps);
    // The copy waited for deps_for_read(from_home) (HazardTracker::record_ordered_read).
    b.tracker(kHostAgent).record_ordered_read(from_home, home_copy);
  }
  if (operations != nullptr) {
    for (std::size_t i = 0; i < direct_devices.size(); ++i) {
      operations->emplace_back(direct_devices[i], direct[i]);
    }
    if (!home_copy.is_null()) operations->emplace_back(0, home_copy);  // on the host clock
  }
  Event e = home_copy;
  if (!direct.empty()) {
    if (!home_copy.is_null()) direct.push_back(home_copy);
    e = direct.size() == 1 ? direct.front() : when_all(direct);
  }
  if (trace_) trace_host_access(TraceCategory::host_read, b, offset, out.size(), e, submitted);
  track(e);
  return e;
}

void RuntimeCore::read_blocking(BufferId id, std::uint64_t offset, std::span<std::byte> out) {
  read(id, offset, out).wait();
}

void RuntimeCore::trace_host_access(TraceCategory category, const SharedBuffer& b,
                                    std::uint64_t offset, std::uint64_t size, const Event& e,
                                    std::int64_t submitted) {
  std::string name = category == TraceCategory::host_write ? "host write " : "host read ";
  name += b.name();
  trace_->operation(TraceLane::host, 0, category, std::move(name), e, submitted,
                    {TraceArg::of("buffer", b.name()), TraceArg::of("bytes", size),
                     TraceArg::of("range", range_text(offset, size))});
}

void RuntimeCore::trace_kernel(const LaunchPartition& p, std::size_t index, std::size_t count,
                               const Event& e, std::int64_t submitted) {
  std::string range;
  for (unsigned d = 0; d < p.range.dims; ++d) {
    if (d > 0) range += 'x';
    range += std::to_string(p.range.global[d]);
  }
  std::string offset;
  for (unsigned d = 0; d < p.range.dims; ++d) {
    if (d > 0) offset += ',';
    offset += std::to_string(p.range.offset[d]);
  }
  trace_->operation(TraceLane::kernels, p.device, TraceCategory::kernel, p.kernel->name(), e,
                    submitted,
                    {TraceArg::of("kernel", p.kernel->name()), TraceArg::of("partition", index),
                     TraceArg::of("partitions", count), TraceArg::of("global", range),
                     TraceArg::of("offset", offset)});
}

Event RuntimeCore::launch(const Launch& launch) {
  LaunchPartition p;
  p.device = launch.device;
  p.kernel = launch.kernel;
  p.range = launch.range;
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    if (launch.args[i].kind == KernelArg::Kind::buffer) {
      p.accesses[static_cast<std::uint32_t>(i)] = launch.args[i].access;
    }
  }
  return launch_partitioned(launch.args, std::span(&p, 1));
}

// The bytes one partition uses of one buffer, merged over the arguments that pass that buffer;
// the buffer bytes its allocation on the partition's device must hold (choose_boxes), and that
// allocation while the launch holds it (hold_buffers).
struct RuntimeCore::BufferUse {
  SharedBuffer* buffer = nullptr;
  AccessBytes bytes;
  /// The arguments whose bytes these are, each with its own (check_partitions; choose_boxes may
  /// give disjoint groups of a buffer's arguments boxes of their own: split_uses).
  std::vector<std::pair<std::uint32_t, AccessBytes>> args;
  ResidentBox box;
  ResidentAllocation held;
  // bytes.needed() and bytes.written(), made once (check_partitions) for every step that uses
  // them: a strided access has an interval per row, so each union is a copy of thousands.
  IntervalSet needed;
  IntervalSet written;
  // needed minus written when acquire_inputs has it already (SharedBuffer::rewrite_missing of a
  // launch that rewrites the buffer's last writes), else null; set by every acquire_inputs and
  // read by the submit_kernels right after it only.
  const IntervalSet* read_only = nullptr;
};

// One partition of a launch as the runtime runs it: its device's agent and its buffers.
struct RuntimeCore::PartitionUses {
  const LaunchPartition* source = nullptr;
  Agent agent = kHostAgent;
  std::vector<BufferUse> uses;  // one entry per distinct buffer
};

void RuntimeCore::record_failed_deferred_launch_locked(std::span<const PartitionUses> plan) {
  settle_deferred_records_locked();
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (!deferred_scratch_[i].is_null()) record_accesses(plan[i], deferred_scratch_[i]);
  }
  deferred_scratch_.clear();
}

// A launch whose partition `issued` failed to enqueue (the driver threw): partitions [0, issued)
// were enqueued and will run, the others never will. Their writes are published as those of a
// launch of those partitions alone (their written bytes current on their agents alone, the
// strategies and the adaptive history acting as for such a launch), the trackers holding their
// kernels already (submit_kernels, record_failed_deferred_launch_locked, a replay's recording).
// Without it, bytes a partition that ran wrote would stay current where their old values are
// (a full path's acquire made them current on other agents), and a host read or another kernel
// could see either. A launch that skipped its directory steps publishes the same way: its
// partitions' agents hold their written bytes alone already, so only the last writes and the
// history change, as the full path's failed launch changes them. Under gamma nothing is published.
void RuntimeCore::publish_failed_launch_locked(std::span<const PartitionUses> plan,
                                               std::size_t issued, const std::string& kernel) {
  rewriting_all_written_ = false;  // its acquire's (the rewriting buffers' reads were observed)
  rewriting_buffers_.clear();
  if (issued == 0 || !measurement_.coherent()) return;
  const std::span<const PartitionUses> ran = plan.first(std::min(issued, plan.size()));
  publish_writes(ran, kernel);
  write_back_chunks(ran);
  ++repeat_epoch_;  // the state changed: earlier verifications no longer hold
}

// The buffers of a launch in use on their partitions' devices (SharedBuffer::begin_use), released
// when the launch has published its writes or failed.
class RuntimeCore::HeldBuffers {
 public:
  HeldBuffers() = default;
  HeldBuffers(const HeldBuffers&) = delete;
  HeldBuffers& operator=(const HeldBuffers&) = delete;
  ~HeldBuffers() {
    const auto end = [](const Held& h) {
      try {
        h.buffer->end_use(h.agent, h.box);
      } catch (...) {  // cannot fail for a buffer held here; a destructor must not throw
      }
    };
    for (std::size_t i = 0; i < std::min(count_, kInline); ++i) end(inline_[i]);
    for (const Held& h : more_) end(h);
  }
  void add(SharedBuffer* buffer, Agent agent, const ResidentBox& box) {
    // A launch holds a few buffers: those go inline, so holding them allocates nothing.
    if (count_ < kInline) {
      inline_[count_] = Held{buffer, agent, box};
    } else {
      more_.push_back(Held{buffer, agent, box});
    }
    ++count_;
  }

 private:
  struct Held {
    SharedBuffer* buffer = nullptr;
    Agent agent = kHostAgent;
    ResidentBox box;
  };
  static constexpr std::size_t kInline = 8;
  std::array<Held, kInline> inline_;
  std::size_t count_ = 0;
  std::vector<Held> more_;
};

// The repeat path. A launch passing the token of one of the last few launches with a token
// (repeatable_, at most kRepeatCycle of them), when nothing but those launches ran since (no host
// access, copy, launch without a token, buffer created or released, strategy or measurement
// change: each counts in operations_) and no eviction happened since (DeviceMemory::
// eviction_count), is the same launch again: the previous operation repeated (A, A, ...) or a
// cycle (ping-pong: A, B, A, B, ...; any order of up to kRepeatCycle launches). It skips:
// - the checks and the accounting of steps 1, 2 and 3b: the same arguments and partitions passed
//   them last time, and their outcome depends on nothing else: buffer sizes and device
//   alignments never change, a released buffer would have counted as an operation, and
//   note_touched is idempotent for a plan it has seen. The boxes (choose_boxes) are the ones it
//   chose last time; a box chosen afresh could only be narrower (widen_first_boxes widens only a
//   buffer's first box on a device), and the allocation that took the old box still holds it:
//   allocations on a device only grow by merging until they are evicted or their buffer is
//   released, and neither happened. So hold_buffers finds the same allocation either way.
// - the directory steps 3 and 5 (acquire_inputs, publish_writes), when they would change
//   nothing. Statically (repeat_leaves_directory, once per entry): every buffer lazy or adaptive
//   (batch and balance copy after every write) and no partition reads bytes another partition of
//   the launch writes. On the state (repeat_changes_nothing, checked on the state right before
//   the repeat): for each partition on agent d, each buffer's read set R is current on d with no
//   replayed bytes of it unread (the acquire issues no copy, changes no mask, records nothing in
//   the adaptive recording and nothing in the ledger), each write set W is held by d alone
//   (apply_device_write changes no mask) with no replayed bytes of it unread on any agent (the
//   ledger stays), and under lazy no recording is open (begin_write closes nothing) while under
//   adaptive the open recording is this kernel's on these writers, empty, with an empty stored
//   sequence (close() then only counts one more run and open() replays nothing: the history is
//   told with count_unchanged_rewrite, so its counts stay what the full steps give). These are
//   exactly what the skipped calls read, so skipping them leaves the state as running them.
//   A verification stays valid while no launch runs its directory steps (repeat_epoch_): the
//   skipped ones change nothing the check reads (count_unchanged_rewrite adds to a pending count
//   the check does not look at), and anything else empties repeatable_. In a steady cycle each
//   launch is verified once, then every round skips. A cycle that copies every round (halo
//   exchange between devices) fails the check; after kMaxFailedVerifications failures in a row
//   an entry stops checking (cost only: it then runs its directory steps every time).
// What it still does: holding the buffers, the kernels after the hazards of their bytes (each
// buffer's trackers give the previous runs' kernels and copies, so ping-pong's B waits for A's
// write of the grid it reads, and A for B's read of the grid it overwrites), recorded as the new
// last accesses, and settling device memory, like any launch.
//
// Deferred records (Ordering). A repeat that skips the directory steps also runs after its
// devices' previous kernels (last_kernel_: each partition after the last kernel of its device),
// so a steady cycle's kernels form one chain per device. Once every launch numbered after its
// entry's last run (X_j) ran that way (chained_after_ <= X_j; a launch with the directory steps,
// or any launch not on this path, sets chained_after_ to its number), the repeat X_k needs no
// tracker at all: it waits for its devices' previous kernels only, and its records are deferred.
// Why that is every hazard of X_k: a partition on device d records only in d's trackers. What
// d's trackers hold on X_k's bytes is (a) what they held at X_j's query, or (b) recorded since.
// (a): X_j asked the trackers about the same bytes for the same reads and writes (the plan is the
// entry's), so whatever conflicts with X_k conflicted with X_j, which waited for it (or, deferred
// itself, waited for its own predecessor, which covers it by the same argument one round
// earlier). (b): since X_j only this cycle's launches ran (the repeat path's condition), each
// after its device's previous kernel and with no copy (no directory steps: acquire copied
// nothing), so what they recorded in d's trackers are kernels of d's chain after X_j, all covered
// by d's last kernel, which runs after X_j too. So X_k after d's last kernel waits for everything
// the trackers would have named; at most it waits for more (ancestors it would not need), which
// costs nothing on a chain.
// The records themselves wait for the next other operation: every operation but a deferred
// repeat settles them first (begin_operation_locked, finish, tracked_accesses; a launch before
// it touches a tracker), recording for each cycle entry its last deferred run, in launch order.
// That leaves the trackers as recording every run would, up to covered ancestors: for a byte, the
// last writer among the deferred runs is the entry that wrote it last, and its last run is the
// last write; every later reader of it is an entry whose last run read it after that write, and
// earlier runs of the same entries are that run's ancestors on the chain. Records made before
// the deferred runs are older than all of them, since settling precedes every tracker query.
// Gamma (no coherence) keeps its own ordering (Measurement) and never defers.
Event RuntimeCore::launch_partitioned(std::span<const LaunchArg> args,
                                      std::span<const LaunchPartition> partitions,
                                      std::vector<Event>* partition_events,
                                      std::shared_ptr<const void> repeat_token) {
  std::lock_guard lock(mutex_);
  // Out-of-core partitions (chunks) never repeat: their boxes replace the boxes they meet, so a
  // box chosen last time may be gone without an eviction (launch_rounds passes no token either).
  const bool repeatable = repeat_fast_path_ && repeat_token != nullptr &&
                          std::none_of(partitions.begin(), partitions.end(),
                                       [](const LaunchPartition& p) { return p.out_of_core; });
  std::size_t found = repeatable_.size();
  if (repeatable && !repeatable_.empty()) {
    if (repeat_after_operation_ != operations_ ||
        repeat_evictions_ != context_.memory->eviction_count()) {
      settle_deferred_records_locked();  // (an operation in between settled them already)
      repeatable_.clear();               // something else happened since
      found = 0;
    }
    for (std::size_t i = repeatable_.size(); i-- > 0;) {
      if (repeatable_[i]->token == repeat_token) {
        found = i;
        break;
      }
    }
  }
  RepeatableLaunch* const entry = found < repeatable_.size() ? repeatable_[found].get() : nullptr;
  const bool repeat = entry != nullptr;
  // Periodic cycles (see below): the next launch of a verified round replays it; any other
  // launch first makes the replayed state real.
  const std::size_t cycle_length = repeat ? repeatable_.size() - found : 0;
  if (period_.phase == PeriodPhase::replaying) {
    if (replays_next(entry, cycle_length, measurement_.coherent())) {
      return replay_period_step(args, found, partition_events);
    }
    materialize_period_locked();
  }
  const std::uint64_t number = ++operations_;
  std::vector<PartitionUses> checked;
  if (!repeat) {
    // Everything is validated before any state changes, so a rejected launch changes nothing.
    checked = check_partitions(args, partitions);
    check_disjoint_writes(checked);
    for (PartitionUses& pu : checked) choose_boxes(args, pu);
    note_touched(checked);
  }
  std::vector<PartitionUses>& plan = repeat ? entry->plan : checked;
  const bool coherent = measurement_.coherent();  // gamma: no dependencies, no copies
  // Affine replays (see there): the next launch of a family of rewriting launches runs on the
  // replay chains; any other launch first records the family's orderings in the trackers.
  const std::string& kernel_name = partitions[0].kernel->name();
  const bool affine = !repeat && affine_applies(plan, kernel_name, coherent);
  if (!affine && affine_.replaying) materialize_affine_locked();
  // Whether this launch is a step of a round being captured: its copies are recorded, and the
  // state of the cycle's buffers after it.
  // (The verification reads the state only: made before begin_period_step, which may take the
  // round's start state, as after it.)
  bool skip_directory = false;
  if (repeat && coherent && entry->leaves_directory) {
    if (entry->verified_epoch != repeat_epoch_ &&
        entry->failed_verifications < kMaxFailedVerifications) {
      if (repeat_changes_nothing(*entry, partitions[0].kernel->name())) {
        entry->verified_epoch = repeat_epoch_;
        entry->failed_verifications = 0;
      } else {
        ++entry->failed_verifications;
      }
    }
    skip_directory = entry->verified_epoch == repeat_epoch_;
  }
  // A launch repeating itself (a cycle of one) without its directory steps has nothing a
  // periodic replay would spare it (no copy, no directory step): no round is captured (a capture
  // in progress is dropped, as when a launch breaks it), and the lean repeat (launch_again) may
  // take its next runs.
  bool capture = false;
  if (skip_directory && cycle_length == 1) {
    period_.phase = PeriodPhase::idle;
    period_.streak = 0;
  } else {
    capture = begin_period_step(entry, found, cycle_length, coherent);
  }
  // The kernels' ordering (see above): a repeat that skips the directory steps runs after its
  // devices' previous kernels too, and with no records of its own when every launch since its
  // entry's last run did so.
  Ordering ordering = Ordering::hazards;
  if (repeat && skip_directory) {
    ordering = entry->last_run != 0 && entry->last_run >= chained_after_
                   ? Ordering::chained_deferred
                   : Ordering::hazards_chained;
  }
  // (A replayed launch has nothing to settle: it would end its own family.)
  if (ordering != Ordering::chained_deferred && !affine) settle_deferred_records_locked();
  if (affine && !affine_.replaying) begin_affine_replay();
  HeldBuffers held;  // every buffer stays on its partition's device until the writes are published
  hold_buffers(plan, held);
  if (coherent && !skip_directory) {
    const CopyLogScope log(
        context_, capture && !period_.probing ? &period_.steps[period_.position].before : nullptr);
    try {
      if (affine) {
        acquire_affine_inputs(plan);
      } else {
        acquire_inputs(plan);
      }
    } catch (...) {
      // As below: the reads left for publish_writes are observed before anything else looks.
      for (SharedBuffer* b : rewriting_buffers_) b->observe_deferred_rewrite_reads();
      rewriting_buffers_.clear();
      materialize_affine_locked(0);  // (a replayed launch's copies so far are on the chains)
      throw;
    }
  }
  // A repeat that skipped the directory steps may be followed by lean ones (launch_again): its
  // kernels and arguments are kept for them.
  const bool lean_next = repeat && skip_directory && lean_repeats_ && lean_wanted_ && !trace_ &&
                         !capture && held_in_plan_order_;
  if (lean_next) {
    entry->lean.resize(plan.size());
    lean_capture_ = &entry->lean;
  }
  Event kernels;
  try {
    kernels = submit_kernels(args, plan, partition_events, affine ? Ordering::periodic : ordering,
                             coherent && !skip_directory);
    lean_capture_ = nullptr;
    if (affine) affine_.kernels = plan.size();
  } catch (...) {
    lean_capture_ = nullptr;
    if (affine) {
      // The kernels enqueued before the failure are on the chains: recorded with the family's,
      // and their devices' last kernels (the others': the launch's before).
      materialize_affine_locked(kernels_issued_);
    }
    // The reads the rewriting buffers left for publish_writes are observed as acquire would
    // have (SharedBuffer::publish_rewrites): a failed launch leaves the history as before.
    for (SharedBuffer* b : rewriting_buffers_) b->observe_deferred_rewrite_reads();
    rewriting_buffers_.clear();
    if (lean_next) entry->lean.clear();
    if (ordering == Ordering::chained_deferred) record_failed_deferred_launch_locked(plan);
    publish_failed_launch_locked(plan, kernels_issued_, partitions[0].kernel->name());
    throw;
  }
  if (skip_directory) {
    for (SharedBuffer* b : entry->adaptive_written) b->count_unchanged_rewrite();
  }
  if (ordering == Ordering::hazards) chained_after_ = number;
  // Whether every buffer of the aligned plan took the rewrite and its publication restarted
  // the history's run (a family may start after it: the next one's may only count).
  const std::size_t rewrote = coherent && !repeat && rewriting_all_written_ &&
                                      rewriting_buffers_.size() == plan.front().uses.size()
                                  ? rewriting_buffers_.size()
                                  : 0;
  const std::uint64_t restarted_before = restarted_rewrite_runs_;
  if (coherent && !skip_directory) {
    const CopyLogScope log(
        context_, capture && !period_.probing ? &period_.steps[period_.position].after : nullptr);
    if (affine) {
      publish_affine_writes(kernel_name);
    } else {
      publish_writes(plan, kernel_name);
    }
    write_back_chunks(plan);
    ++repeat_epoch_;  // the state may have changed: earlier verifications no longer hold
  }
  if (rewrote != 0 && restarted_rewrite_runs_ - restarted_before == rewrote) {
    if (affine_.replaying) {
      affine_.candidate = number;  // (the family's own: the same kernel, agents and buffers)
    } else {
      note_affine_candidate(plan, kernel_name, number);
    }
  } else {
    affine_.candidate = 0;
  }
  context_.memory->settle();
  if (!coherent || skip_directory) ++launches_leaving_directory_;
  if (repeat) {
    entry->last_run = number;
    if (ordering == Ordering::chained_deferred) {
      keep_deferred_kernels_locked(*entry, plan.size(), number);
    }
    ++repeated_launches_;
    if (found + 1 != repeatable_.size()) ++cycle_repeats_;
    if (skip_directory) ++repeats_leaving_directory_;
    // The most recently run goes last (the oldest is dropped first).
    std::rotate(repeatable_.begin() + static_cast<std::ptrdiff_t>(found),
                repeatable_.begin() + static_cast<std::ptrdiff_t>(found) + 1, repeatable_.end());
  } else if (repeatable) {
    if (repeatable_.size() == kRepeatCycle) repeatable_.erase(repeatable_.begin());
    const bool leaves = repeat_leaves_directory(checked);
    repeatable_.push_back(
        std::make_unique<RepeatableLaunch>(RepeatableLaunch{std::move(repeat_token),
                                                            std::move(checked),
                                                            leaves,
                                                            kNeverVerified,
                                                            0,
                                                            {},
                                                            number,
                                                            0,
                                                            {},
                                                            {}}));
  }
  if (repeatable) {
    repeat_after_operation_ = operations_;
    const std::uint64_t evictions = context_.memory->eviction_count();
    if (evictions != repeat_evictions_) {
      // This launch evicted allocations (of its own buffers elsewhere, or of other launches'):
      // only its own entry still describes what it holds.
      settle_deferred_records_locked();
      repeatable_.erase(repeatable_.begin(), repeatable_.end() - 1);
      repeat_evictions_ = evictions;
    }
  }
  if (capture) end_period_step();
  // The next operation may be this launch again, lean (launch_again checks the rest).
  lean_entry_ = lean_next && period_.phase == PeriodPhase::idle && !repeatable_.empty() &&
                        repeatable_.back().get() == entry
                    ? entry
                    : nullptr;
  lean_after_ = operations_;
  return kernels;
}

// The lean repeat. Launch L2 comes right after L1, the last run of the same entry (the same token:
// the same arguments and partitions), with no operation in between (operations_ is L1's number:
// entries are destroyed only by launches, after they counted, so the entry is alive), and L1 was
// a repeat that skipped the directory steps, whose buffers were all held already
// (held_in_plan_order_), that captured no periodic round and left the cycle state idle. The repeat
// path (launch_partitioned) would run L2 as follows, and launch_again does the same where it
// matters and skips the rest:
// - the entry found: the last of repeatable_ (L1 ran last and was rotated there), so the cycle
//   length is 1 and nothing is rotated;
// - skip_directory: the entry leaves the directory, and its verification (repeat_epoch_) still
//   holds (checked; only launches with directory steps bump the epoch); the adaptive histories
//   of its written buffers count one more unchanged repeat (done); a cycle of one without
//   directory steps captures no periodic round: the cycle state stays idle, its streak 0 (done);
// - the ordering is chained_deferred (checked: last_run >= chained_after_), so nothing is settled
//   and no tracker is asked: each kernel waits for its device's previous kernel only (done);
// - hold_buffers and the release of the holds: skipped. Proof that they change nothing: between
//   operations no allocation of a live buffer is in use (a launch releases its holds before it
//   lets go of mutex_; only a released buffer's allocations stay pinned: retire), and every
//   DeviceMemory change but freeing a finished retiring allocation (a removal, at finish) happens
//   in an operation. L1 found every box held (held_in_plan_order_): the allocations a_1..a_k of a
//   device's partition were used in plan order (hold_order_ puts the covered ones first: all of
//   them), each 0 -> 1 (moved to the end of in_use), and released in the same order (HeldBuffers),
//   each 1 -> 0 (moved to the end of unused). Nothing moved an entry since, so unused ends with
//   a_1..a_k in that order and in_use holds none of them. L2's holds find the same allocations
//   (nothing allocated, merged, evicted or released since: Residency changes only in operations)
//   and do the same: a_1..a_k taken from the end of unused to the end of in_use, then back to the
//   end of unused in the same order. The lists, the use counts (all 0) and the statistics (use
//   changes none) are as before, so skipping both leaves DeviceMemory as they would, and the
//   allocations, hence the driver arguments, are L1's (entry->lean). Invariant builds hold and
//   release for real and compare (check_lean_repeat).
// - submit_kernels: L1's kernels (plain, rebased or pitched: chosen from the same allocations)
//   with L1's arguments, the same counters, last_kernel_, the deferred scratch and track (done);
// - the device memory settled, and the entry and counters updated as launch_partitioned does
//   (done); no eviction can happen (nothing allocates), so repeatable_ is not trimmed.
// The trace is off (a traced runtime never goes lean: its trace points are the normal path's).
std::optional<Event> RuntimeCore::launch_again(const void* repeat_token,
                                               std::span<const LaunchArg> args, bool eventless) {
  mutex_.lock_keeping_streak();
  const std::lock_guard lock(mutex_, std::adopt_lock);
  if (streak_.entry != nullptr) {
    // Nothing ran since the streak's last launch (any other operation would have closed it):
    // this launch continues it when it is the same entry's again and needs no event.
    if (eventless && streak_.entry->token.get() == repeat_token &&
        streak_.launches < kStreakLimit) {
#if UNIMEM_INVARIANTS_ENABLED
      check_lean_repeat(*streak_.entry, args);
#endif
      launch_in_streak_locked();
      return Event{};
    }
    close_streak_locked();
  }
  lean_wanted_ = lean_repeats_;
  if (lean_after_ != operations_ || lean_entry_ == nullptr ||
      lean_entry_->token.get() != repeat_token) {
    return std::nullopt;
  }
  RepeatableLaunch& entry = *lean_entry_;
  if (repeat_after_operation_ != operations_ ||
      repeat_evictions_ != context_.memory->eviction_count() ||
      period_.phase != PeriodPhase::idle || !measurement_.coherent() || !entry.leaves_directory ||
      entry.verified_epoch != repeat_epoch_ || entry.last_run == 0 ||
      entry.last_run < chained_after_ || entry.lean.size() != entry.plan.size()) {
    return std::nullopt;
  }
#if UNIMEM_INVARIANTS_ENABLED
  check_lean_repeat(entry, args);
#else
  (void)args;
#endif
  const std::size_t partitions = entry.plan.size();
  // An eventless call whose kernels every device runs after its previous kernel without being
  // told (Device::orders_after) opens a streak with this launch.
  bool in_order = eventless;
  for (std::size_t i = 0; i < partitions && in_order; ++i) {
    in_order = entry.lean[i].device->orders_after(last_kernel_[entry.plan[i].source->device]);
  }
  if (in_order) {
    streak_.entry = &entry;
    streak_.launches = 0;
    streak_.waits = 0;
    streak_.last.assign(partitions, 0);
    launch_in_streak_locked();
    return Event{};
  }
  const std::uint64_t number = ++operations_;
  period_.streak = 0;  // a cycle of one without directory steps captures no round
  // submit_kernels under chained_deferred, with the arguments of the entry's last run.
  const std::size_t n = entry.plan.size();
  if (deferred_scratch_.size() < n) deferred_scratch_.resize(n);
  Event only;
  EventList kernel_events;
  std::size_t issued = 0;
  try {
    for (; issued < n; ++issued) {
      const std::size_t i = issued;
      const LaunchPartition& p = *entry.plan[i].source;
      const LeanPartition& lean = entry.lean[i];
      // The device's previous kernel is the only dependency: passed where it is (last_kernel_,
      // under mutex_, changes only below, after the call), not copied into a list.
      const Event& previous = last_kernel_[p.device];
      const std::span<const Event> deps =
          previous.is_null() ? std::span<const Event>() : std::span<const Event>(&previous, 1);
      ++kernel_waits_.kernels;
      kernel_waits_.events += deps.size();
      Event e = lean.device->launch_without_times(*lean.kernel, p.range, lean.args, deps);
      keep_kernel_locked(i, p.device, e, lean.kernel, true, true);
      if (n == 1) {
        only = std::move(e);
      } else {
        kernel_events.push_back(std::move(e));
      }
    }
  } catch (...) {
    // As launch_partitioned: the kernels enqueued before the failure are the newest accesses,
    // and their writes are published.
    record_failed_deferred_launch_locked(entry.plan);
    publish_failed_launch_locked(entry.plan, issued, entry.plan.front().source->kernel->name());
    lean_entry_ = nullptr;
    throw;
  }
  for (SharedBuffer* b : entry.adaptive_written) b->count_unchanged_rewrite();
  context_.memory->settle();
  ++launches_leaving_directory_;
  entry.last_run = number;
  keep_deferred_kernels_locked(entry, n, number);
  ++repeated_launches_;
  ++repeats_leaving_directory_;
  repeat_after_operation_ = operations_;
  lean_after_ = operations_;
  ++lean_launches_;
  return n == 1 ? only : when_all(kernel_events);
}

// The eventless streak. A run of lean repeats of one entry E (launch_again's conditions held
// for the first; each later one is launch_again again right after the one before, which those
// conditions need of it: nothing but these launches ran since, so they still hold) whose callers
// need no event, on devices whose kernels run in their launch order (Device::orders_after: each
// kernel after its device's previous kernel without a wait list: the OpenCL driver's in-order
// KernelQueue). launch_again would enqueue each partition's kernel after its device's previous
// kernel (the streak's own previous launch, or last_kernel_ for the first: orders_after says it
// needs no wait) and then leave for whoever comes next: the event, last_kernel_, the deferred
// records, the in-flight entry holding the kernel, the counters and the adaptive histories'
// counts, the settled device memory. A launch in the streak only enqueues (launch_in_order for
// the first, launch_in_order_again for the later ones: no event, no flush) and notes the kernel's
// number; close_streak_locked does the rest once, for the launches so far, before anything else
// looks: locking mutex_ closes it (StreakClosingMutex::lock), so every other operation, query and
// the destructor find the state launch_again would have left after the streak's last launch.
// Why that state is right:
// - ordering: launch i+1's kernels run after launch i's on each device (the device's order), so
//   the last launch's kernel on a device finishes after every streak kernel there: its event
//   (Device::in_order_event) stands for all of them. The deferred records, last_kernel_ and the
//   in-flight entry are the last launch's, as launch_again leaves them (each launch replaced the
//   previous one's: keep_deferred_kernels_locked keeps only an entry's last run). Waiting for the
//   streak's first kernel would be wrong (the later ones write the same bytes afterwards): every
//   later operation waits for the last, through these records.
// - lifetime: the streak's kernel objects are held by E's lean partitions while it is open (E is
//   destroyed only by a launch, which closes the streak first) and then by the in-flight entry
//   of the last launch's event, which finishes after the earlier ones.
// - counters: operations_, the launch counters, kernel_waits_, deferred_record_launches_ and each
//   adaptive written buffer's unchanged repeats grow by what each launch would have added
//   (exact: every query of them takes mutex_ and so closes the streak first).
// - launch_in_order_again's promise (the same range and arguments as the device's previous
//   launch_in_order of the kernel, every launch of the kernel serialised with it): launch i > 1's
//   partition p passes E's lean partition p, as launch i - 1 did on the same device; every launch
//   of any kernel is made under mutex_ (submit_kernels, launch_again, the streak), and between
//   the two only the streak's own partitions launched (nothing else ran: it would have closed the
//   streak). A partition whose kernel another partition of E shares (one cl_kernel for the
//   devices of one context) finds it launched elsewhere since: the driver sees that and does
//   launch_in_order (OpenCLKernel::in_order_device).
// - failure: a launch_in_order(_again) that throws has enqueued the partitions before it; the
//   streak is closed (its complete launches), then that launch is treated as launch_again treats
//   a failed one (its kernels enqueued so far recorded as the newest accesses, the error thrown).
//   A close that throws (a flush of in_order_event) changes nothing and leaves the streak open;
//   in the destructor it is not thrown (lock_for_destruction): the streak's devices finish, then
//   the streak is dropped.
// - eventless_through_: set from last[] by the close (every reader, close_eventless, takes
//   mutex_ and so closes first); close_eventless clears a device's once its kernels are known
//   finished (Device::in_order_finished), so it makes events only for kernels that may still run.
// - threads: everything above is under mutex_; the caller's own lists (the platform queue's)
//   take the streak's kernels as one event from close_eventless.
void RuntimeCore::launch_in_streak_locked() {
  RepeatableLaunch& entry = *streak_.entry;
  const std::size_t n = entry.plan.size();
  if (streak_scratch_.size() < n) streak_scratch_.resize(n);
  const bool again = streak_.launches != 0;
  std::size_t done = 0;
  try {
    for (; done < n; ++done) {
      const LeanPartition& lean = entry.lean[done];
      const NDRange& range = entry.plan[done].source->range;
      // After the streak's first launch, each partition's kernel was last launched by the
      // streak's previous launch, on this device, with these arguments, and every launch is
      // under mutex_: launch_in_order_again's promise.
      streak_scratch_[done] =
          again ? lean.device->launch_in_order_again(*lean.kernel, range, lean.args)
                : lean.device->launch_in_order(*lean.kernel, range, lean.args);
    }
  } catch (...) {
    fail_streak_launch_locked(done);
    throw;
  }
  for (std::size_t i = 0; i < n; ++i) streak_.last[i] = streak_scratch_[i];
  if (!again) streak_.waits = previous_kernels_locked(n);  // each later launch waits n times
  ++streak_.launches;
}

std::uint64_t RuntimeCore::previous_kernels_locked(std::size_t partitions) const {
  // After the streak's first launch each partition waited for its device's previous kernel, the
  // streak's own; the first one for last_kernel_'s (null: no wait).
  if (streak_.launches != 0) return partitions;
  std::uint64_t waits = 0;
  for (std::size_t i = 0; i < partitions; ++i) {
    if (!last_kernel_[streak_.entry->plan[i].source->device].is_null()) ++waits;
  }
  return waits;
}

void RuntimeCore::close_streak_locked() {
  RepeatableLaunch& entry = *streak_.entry;
  const std::uint64_t runs = streak_.launches;
  const std::size_t n = entry.plan.size();
  if (runs == 0) {  // its first launch failed (fail_streak_launch_locked does the rest)
    streak_.entry = nullptr;
    return;
  }
  // The events first: the only step that may throw (a flush), and then nothing has changed.
  EventList last(n);
  for (std::size_t i = 0; i < n; ++i)
    last[i] = entry.lean[i].device->in_order_event(streak_.last[i]);
  streak_.entry = nullptr;
  for (std::size_t i = 0; i < n; ++i)
    eventless_through_[entry.plan[i].source->device] = streak_.last[i];
  if (deferred_scratch_.size() < n) deferred_scratch_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    keep_kernel_locked(i, entry.plan[i].source->device, last[i], entry.lean[i].kernel, true, true);
  }
  operations_ += runs;
  period_.streak = 0;
  for (SharedBuffer* b : entry.adaptive_written) b->count_unchanged_rewrite(static_cast<int>(runs));
  kernel_waits_.kernels += runs * n;
  kernel_waits_.events += streak_.waits + (runs - 1) * n;
  context_.memory->settle();
  launches_leaving_directory_ += runs;
  entry.last_run = operations_;
  keep_deferred_kernels_locked(entry, n, operations_);
  deferred_record_launches_ += runs - 1;
  repeated_launches_ += runs;
  repeats_leaving_directory_ += runs;
  repeat_after_operation_ = operations_;
  lean_after_ = operations_;
  lean_launches_ += runs;
}

// A launch of the streak whose partition `done` failed to enqueue: the streak closed, then the
// launch as launch_again leaves a failed one (its number counted, the entry's adaptive histories
// counted, its enqueued kernels the newest accesses, no lean repeat after it).
void RuntimeCore::fail_streak_launch_locked(std::size_t done) {
  RepeatableLaunch& entry = *streak_.entry;
  // Each partition up to the failed one counted its wait for its device's previous kernel.
  const std::uint64_t waited = previous_kernels_locked(done + 1);
  close_streak_locked();
  ++operations_;
  period_.streak = 0;
  kernel_waits_.kernels += done + 1;
  kernel_waits_.events += waited;
  if (deferred_scratch_.size() < entry.plan.size()) deferred_scratch_.resize(entry.plan.size());
  for (std::size_t i = 0; i < done; ++i) {
    const LeanPartition& lean = entry.lean[i];
    const Event e = lean.device->in_order_event(streak_scratch_[i]);
    eventless_through_[entry.plan[i].source->device] = streak_scratch_[i];
    keep_kernel_locked(i, entry.plan[i].source->device, e, lean.kernel, true, true);
  }
  record_failed_deferred_launch_locked(entry.plan);
  publish_failed_launch_locked(entry.plan, done, entry.plan.front().source->kernel->name());
  lean_entry_ = nullptr;
}

Event RuntimeCore::close_eventless() {
  const std::lock_guard lock(mutex_);  // closes an open streak
  EventList parts;
  for (std::size_t d = 0; d < eventless_through_.size(); ++d) {
    if (eventless_through_[d] == 0) continue;
    Device& device = registry_.at(d);
    // Known finished (an event of them was seen complete): nothing of this device to wait for,
    // now or at any later call, until the next eventless launch there.
    if (device.in_order_finished(eventless_through_[d])) {
      eventless_through_[d] = 0;
      continue;
    }
    parts.push_back(device.in_order_event(eventless_through_[d]));
  }
  if (parts.empty()) return Event{};
  return parts.size() == 1 ? parts[0] : when_all(parts);
}

// The destructor's lock: as mutex_.lock(), but a streak whose close fails (its events' flush
// threw) must not end the process (std::terminate from a destructor): its kernels are waited for
// instead (each of its devices finishes), while its entry still holds their kernel objects and
// buffers, and the streak is dropped (nothing after the destructor looks at its bookkeeping).
void RuntimeCore::lock_for_destruction() {
  mutex_.lock_keeping_streak();
  if (streak_.entry == nullptr) return;
  try {
    close_streak_locked();
    return;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unimem: closing the eventless streak: %s; waiting for its kernels\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "unimem: closing the eventless streak failed; waiting for its kernels\n");
  }
  const RepeatableLaunch& entry = *streak_.entry;
  for (const LeanPartition& lean : entry.lean) {
    try {
      lean.device->finish();
    } catch (...) {  // nothing more can be done: the device's own error was its to report
    }
  }
  streak_.entry = nullptr;
}

void RuntimeCore::StreakClosingMutex::lock() {
  mutex_.lock();
  if (owner_.streak_.entry == nullptr) return;
  try {
    owner_.close_streak_locked();
  } catch (...) {
    mutex_.unlock();
    throw;
  }
}

#if UNIMEM_INVARIANTS_ENABLED
void RuntimeCore::check_lean_repeat(RepeatableLaunch& entry, std::span<const LaunchArg> args) {
  const auto fail = [](const std::string& what) {
    detail::throw_invariant("lean repeat: " + what, __FILE__, __LINE__);
  };
  if (repeatable_.empty() || repeatable_.back().get() != &entry) {
    fail("its entry is not the last launch's");
  }
  // The arguments are the plan's (the token's promise): every buffer argument is a use of every
  // partition.
  for (const PartitionUses& pu : entry.plan) {
    for (const LaunchArg& a : args) {
      if (a.kind != KernelArg::Kind::buffer) continue;
      const SharedBuffer* b = &buffer_locked(a.buffer);
      if (std::none_of(pu.uses.begin(), pu.uses.end(),
                       [b](const BufferUse& u) { return u.buffer == b; })) {
        fail("argument buffer " + b->describe() + " is not in the plan");
      }
    }
  }
  // The holds the repeat path would make: the same allocations, and the lists as they were.
  std::vector<std::vector<DeviceMemory::EntryId>> before;
  for (std::size_t d = 0; d < registry_.size(); ++d)
    before.push_back(context_.memory->list_order(d));
  std::vector<ResidentAllocation> was;
  for (const PartitionUses& pu : entry.plan) {
    for (const BufferUse& u : pu.uses) was.push_back(u.held);
  }
  {
    HeldBuffers held;
    hold_buffers(entry.plan, held);
    if (!held_in_plan_order_) fail("a box of the launch is no longer held on its device");
  }
  std::size_t k = 0;
  for (const PartitionUses& pu : entry.plan) {
    for (const BufferUse& u : pu.uses) {
      if (!(u.held == was[k++])) fail(u.buffer->describe() + " is held in another allocation");
    }
  }
  for (std::size_t d = 0; d < registry_.size(); ++d) {
    if (context_.memory->list_order(d) != before[d]) {
      fail("holding and releasing the buffers changed the order of device " + std::to_string(d) +
           "'s allocations");
    }
  }
}
#endif

std::vector<std::vector<std::uint64_t>> RuntimeCore::device_lists() const {
  std::lock_guard lock(mutex_);
  std::vector<std::vector<std::uint64_t>> out;
  for (std::size_t d = 0; d < registry_.size(); ++d) out.push_back(context_.memory->list_order(d));
  return out;
}

std::uint64_t RuntimeCore::lean_launches() const {
  std::lock_guard lock(mutex_);
  return lean_launches_;
}

// Whether repeating a launch may leave the directory as it is (see launch_partitioned): every
// buffer under the lazy or adaptive strategy, and no partition reading bytes another partition
// writes (that partition's device holds them alone after the launch).
bool RuntimeCore::repeat_leaves_directory(std::span<const PartitionUses> plan) const {
  for (std::size_t i = 0; i < plan.size(); ++i) {
    for (const BufferUse& u : plan[i].uses) {
      const UpdateStrategy s = strategy_for(*u.buffer);
      if (s != UpdateStrategy::lazy && s != UpdateStrategy::adaptive) return false;
      for (std::size_t j = 0; j < plan.size(); ++j) {
        if (j == i) continue;
        for (const BufferUse& v : plan[j].uses) {
          if (v.buffer == u.buffer && u.needed.intersects(v.written)) return false;
        }
      }
    }
  }
  return true;
}

// The state half of the directory skip (see launch_partitioned), checked on the state right
// before the repeat: acquiring every partition's reads and publishing its writes again would
// change nothing but the adaptive histories' repeat counts. Fills launch.adaptive_written when
// it holds.
bool RuntimeCore::repeat_changes_nothing(RepeatableLaunch& launch, const std::string& kernel) {
  std::vector<SharedBuffer*> written;
  for (const PartitionUses& pu : launch.plan) {
    for (const BufferUse& u : pu.uses) {
      if (!u.buffer->reread_changes_nothing(pu.agent, u.needed)) return false;
      if (!u.written.empty() &&
          std::find(written.begin(), written.end(), u.buffer) == written.end()) {
        written.push_back(u.buffer);
      }
    }
  }
  std::vector<SharedBuffer*> adaptive;
  for (SharedBuffer* b : written) {
    std::vector<std::pair<Agent, IntervalSet>> writes;  // as publish_writes gathers them
    for (const PartitionUses& pu : launch.plan) {
      for (const BufferUse& u : pu.uses) {
        if (u.buffer == b && !u.written.empty()) writes.emplace_back(pu.agent, u.written);
      }
    }
    const UpdateStrategy strategy = strategy_for(*b);
    if (!b->rewrite_changes_nothing(writes, kernel, strategy)) return false;
    if (strategy == UpdateStrategy::adaptive) adaptive.push_back(b);
  }
  launch.adaptive_written = std::move(adaptive);
  return true;
}

// Step 1: each partition names a kernel and a distinct known device, gives access sets only for
// buffer arguments, and stays inside its buffers; the result groups its bytes by buffer.
std::vector<RuntimeCore::PartitionUses> RuntimeCore::check_partitions(
    std::span<const LaunchArg> args, std::span<const LaunchPartition> partitions) const {
  UNIMEM_REQUIRE(!partitions.empty(), "launch: at least one partition is needed");
  std::vector<PartitionUses> plan(partitions.size());
  AgentMask devices_used;
  for (std::size_t pi = 0; pi < partitions.size(); ++pi) {
    const LaunchPartition& p = partitions[pi];
    // Error wording only: a launch that passes its checks builds no strings.
    const auto kname = [&p] {
      if (!p.kernel) return std::string("(null)");
      std::string quoted = "'";
      quoted += p.kernel->name();
      quoted += '\'';
      return quoted;
    };
    if (!p.kernel)
      throw PreconditionError("launch: partition " + std::to_string(pi) + " has no kernel");
    if (p.device >= registry_.size()) {
      throw PreconditionError("launch of kernel " + kname() + ": unknown device " +
                              std::to_string(p.device) + " (the runtime has " +
                              std::to_string(registry_.size()) + " devices)");
    }
    const Agent agent = agent_of_device(p.device);
    if (devices_used.contains(agent)) {
      throw PreconditionError("launch of kernel " + kname() + ": device " +
                              std::to_string(p.device) + " has more than one partition");
    }
    devices_used = devices_used.with(agent);
    for (const auto& [index, access] : p.accesses) {
      if (index >= args.size() || args[index].kind != KernelArg::Kind::buffer) {
        throw PreconditionError("launch of kernel " + kname() +
                                ": access sets given for argument " + std::to_string(index) +
                                ", which is not a buffer argument");
      }
    }
    PartitionUses& pu = plan[pi];
    pu.source = &p;
    pu.agent = agent;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      if (a.kind != KernelArg::Kind::buffer) continue;
      SharedBuffer& b = buffer_locked(a.buffer);
      if (a.offset > b.size()) {
        throw PreconditionError("launch of kernel " + kname() + ": argument " + std::to_string(i) +
                                " points " + std::to_string(a.offset) + " bytes into a buffer of " +
                                std::to_string(b.size()) + " bytes");
      }
      if (const std::uint64_t align = registry_.at(p.device).argument_offset_alignment();
          a.offset % align != 0) {
        throw PreconditionError("launch of kernel " + kname() + ": argument " + std::to_string(i) +
                                " points " + std::to_string(a.offset) +
                                " bytes into its buffer; device " + std::to_string(p.device) +
                                " (" + registry_.at(p.device).name() + ") needs a multiple of " +
                                std::to_string(align) + " bytes");
      }
      auto it = p.accesses.find(static_cast<std::uint32_t>(i));
      const AccessBytes none;
      const AccessBytes& given = it == p.accesses.end() ? none : it->second;
      // Access sets count from the argument's pointer; the buffer's bytes from its start.
      std::optional<AccessBytes> rebased;
      const AccessBytes& acc =
          a.offset == 0 ? given
                        : rebased.emplace(given.shifted(static_cast<std::int64_t>(a.offset)));
      const auto where = [&](const char* set) {
        return "kernel " + kname() + " argument " + std::to_string(i) + " " + set;
      };
      b.require_inside(acc.reads, [&] { return where("read set"); });
      b.require_inside(acc.writes, [&] { return where("write set"); });
      b.require_inside(acc.may_writes, [&] { return where("may-write set"); });
      auto use = std::find_if(pu.uses.begin(), pu.uses.end(),
                              [&](const BufferUse& u) { return u.buffer == &b; });
      if (use == pu.uses.end()) {
        use = pu.uses.insert(pu.uses.end(), BufferUse{});
        use->buffer = &b;
      }
      use->bytes |= acc;
      use->args.emplace_back(static_cast<std::uint32_t>(i), acc);
    }
    for (BufferUse& u : pu.uses) {
      u.needed = u.bytes.needed();
      u.written = u.bytes.written();
    }
  }
  return plan;
}

// Step 2: partitions run concurrently on separate copies, so two writing one byte would race.
void RuntimeCore::check_disjoint_writes(std::span<const PartitionUses> plan) {
  for (std::size_t i = 0; i < plan.size(); ++i) {
    for (std::size_t j = i + 1; j < plan.size(); ++j) {
      for (const BufferUse& u : plan[i].uses) {
        for (const BufferUse& v : plan[j].uses) {
          if (u.buffer != v.buffer) continue;
          const IntervalSet both = u.written.intersect(v.written);
          if (!both.empty()) {
            throw PreconditionError("launch: partitions " + std::to_string(i) + " and " +
                                    std::to_string(j) + " both write " + both.to_string() + " of " +
                                    u.buffer->describe());
          }
        }
      }
    }
  }
}

// Step 2b (partial residency, BBMM 001_9219257c3045faa0.txt sections 4-6, Algorithm 2): the
// buffer bytes each partition's allocation of each buffer must hold. The bounding interval of
// the bytes it touches when the kernel can be rebased (see RuntimeCore in runtime_core.hpp);
// else the whole buffer (a full mirror).
void RuntimeCore::choose_boxes(std::span<const LaunchArg> args, PartitionUses& pu,
                               bool probe) const {
  const LaunchPartition& p = *pu.source;
  const bool native = registry_.at(p.device).rebases_arguments();
  const bool rewritten = !native && p.rebased_kernel && p.rebased_pointers &&
                         p.rebased_pointers->size() == args.size();
  if (p.out_of_core && (native || rewritten)) split_uses(pu);
  for (BufferUse& u : pu.uses) {
    u.box = ResidentBox(Interval{0, u.buffer->size()});
    if (!native && !rewritten) continue;  // the kernel indexes its allocation from byte 0
    // A may-write set is not exact (the analysis bounded it, it did not enumerate it): full
    // mirror, as ProgramCore's fallback log says.
    if (!u.bytes.may_writes.empty()) continue;
    bool every_pointer_rebased = true;  // a __constant pointer, say, is not rewritten
    for (const auto& [i, bytes] : u.args) {
      if (rewritten && !(*p.rebased_pointers)[i]) every_pointer_rebased = false;
    }
    if (!every_pointer_rebased) continue;
    const IntervalSet touched = u.needed.unite(u.written);
    // A buffer the partition does not touch still needs some allocation to pass. A box starts
    // at a multiple of kBoxAlignment (memory/residency.hpp says why).
    const Interval bounds = touched.empty() ? Interval{0, 1} : touched.bounds();
    const Interval run{bounds.begin - bounds.begin % kBoxAlignment, bounds.end};
    u.box = ResidentBox(run);
    const bool may_pack = !native && p.out_of_core && p.pitched_parameters &&
                          p.pitched_parameters->size() == args.size() &&
                          (probe || (p.pitched_kernel && p.pitched_shapes));
    if (!may_pack || touched.empty()) continue;
    const std::optional<ResidentBox> packed = packed_box(args, p, u, touched, run);
    if (probe) {
      if (packed) u.box = *packed;
      continue;
    }
    // A launch packs exactly the boxes its pitched kernel was built for.
    for (const auto& [i, bytes] : u.args) {
      const auto [pitch, width] = (*p.pitched_shapes)[i];
      if (pitch == 0) continue;
      if (packed && packed->pitch == pitch && packed->width == width) {
        u.box = *packed;
      } else {
        detail::throw_invariant("launch of kernel '" + p.kernel->name() + "': argument " +
                                    std::to_string(i) +
                                    "'s box is not the packed box its pitched kernel was built for",
                                __FILE__, __LINE__);
      }
    }
  }
  widen_first_boxes(pu);
}

// A buffer's first box on a device takes in the partition's boxes of its other buffers of the
// same size when that costs at most an eighth more: a stencil's output box then already holds the
// halo its input's box has, which the next step reads when the two swap roles (ping-pong), so it
// never grows. Growing merges the box into a new one, moving its bytes (heat3d: 16 MB per run)
// and holding both for a while. Later boxes keep to their bytes (the device holds the buffer).
void RuntimeCore::widen_first_boxes(PartitionUses& pu) const {
  // An out-of-core chunk's boxes are sized to fit beside the next chunk's: exactly its bytes.
  if (pu.source->out_of_core) return;
  const std::size_t device = pu.source->device;
  std::vector<Interval> widened;
  for (std::size_t i = 0; i < pu.uses.size(); ++i) {
    const BufferUse& u = pu.uses[i];
    if (u.box.size() == u.buffer->size()) continue;  // the full mirror
    Interval box = u.box.bytes;
    for (std::size_t j = 0; j < pu.uses.size(); ++j) {
      const BufferUse& v = pu.uses[j];
      if (j == i || v.buffer->size() != u.buffer->size()) continue;
      const Interval hull{std::min(box.begin, v.box.bytes.begin),
                          std::max(box.end, v.box.bytes.end)};
      if (hull.size() - u.box.size() <= u.box.size() / 8) box = hull;
    }
    if (box == u.box.bytes || u.buffer->residency().allocated_bytes(device) != 0) continue;
    if (widened.empty()) {
      widened.reserve(pu.uses.size());
      for (const BufferUse& w : pu.uses) widened.push_back(w.box.bytes);
    }
    widened[i] = box;
  }
  for (std::size_t i = 0; i < widened.size(); ++i) pu.uses[i].box = widened[i];
}

// Several boxes per buffer (out-of-core chunks): the arguments pointing into one buffer whose
// bytes are far apart (floyd-warshall's block of rows and its pivot row k, passed as a second
// pointer) get a box each instead of one bounding box over both. Arguments are grouped while
// their bounding intervals (box-aligned, as choose_boxes cuts them) overlap or touch, so the
// groups' boxes never meet (a device's allocations never do: memory/residency.hpp); a may-write
// set keeps the buffer whole (a full mirror, as choose_boxes does). Each argument's pointer is
// rebased against its own group's allocation (submit_kernels), and the directory, which speaks
// bytes, sees the same reads and writes: the groups' byte sets are disjoint.
void RuntimeCore::split_uses(PartitionUses& pu) {
  std::vector<BufferUse> out;
  out.reserve(pu.uses.size());
  for (BufferUse& u : pu.uses) {
    if (u.args.size() < 2 || !u.bytes.may_writes.empty()) {
      out.push_back(std::move(u));
      continue;
    }
    struct Member {
      Interval span;
      std::size_t index;  // in u.args
    };
    std::vector<Member> members;
    for (std::size_t k = 0; k < u.args.size(); ++k) {
      const AccessBytes& a = u.args[k].second;
      const IntervalSet touched = a.needed().unite(a.written());
      if (touched.empty()) continue;  // no bytes: it joins the first group below
      const Interval b = touched.bounds();
      members.push_back({Interval{b.begin - b.begin % kBoxAlignment, b.end}, k});
    }
    std::sort(members.begin(), members.end(),
              [](const Member& x, const Member& y) { return x.span.begin < y.span.begin; });
    std::vector<std::vector<std::size_t>> groups;
    std::uint64_t end = 0;
    for (const Member& m : members) {
      if (groups.empty() || m.span.begin > end) {
        groups.emplace_back();
        end = m.span.end;
      }
      groups.back().push_back(m.index);
      end = std::max(end, m.span.end);
    }
    if (groups.size() < 2) {
      out.push_back(std::move(u));
      continue;
    }
    for (std::size_t k = 0; k < u.args.size(); ++k) {  // arguments without bytes
      if (std::none_of(members.begin(), members.end(),
                       [k](const Member& m) { return m.index == k; })) {
        groups.front().push_back(k);
      }
    }
    for (const std::vector<std::size_t>& g : groups) {
      BufferUse part;
      part.buffer = u.buffer;
      for (const std::size_t k : g) {
        part.bytes |= u.args[k].second;
        part.args.push_back(u.args[k]);
      }
      std::sort(part.args.begin(), part.args.end(),
                [](const auto& x, const auto& y) { return x.first < y.first; });
      part.needed = part.bytes.needed();
      part.written = part.bytes.written();
      out.push_back(std::move(part));
    }
  }
  pu.uses = std::move(out);
}

// Packed 2-D boxes (see RuntimeCore in runtime_core.hpp): the touched bytes are rows of equal
// length at a constant stride (the pitch) within it, their bounding interval at least twice their
// size, and every pointer to the buffer is a parameter the rewrite may pack, at the buffer's
// first byte, with the pitch, first column and width multiples of its element size (the kernel
// indexes elements). A launch (not a probe) packs with its pitched kernel's shapes only.
std::optional<ResidentBox> RuntimeCore::packed_box(std::span<const LaunchArg> args,
                                                   const LaunchPartition& p, const BufferUse& use,
                                                   const IntervalSet& touched,
                                                   const Interval& run) const {
  if (touched.interval_count() < 2) return std::nullopt;
  auto it = touched.begin();
  const Interval first = *it;
  const Interval second = *++it;
  const std::uint64_t width = first.size();
  const std::uint64_t pitch = second.begin - first.begin;
  if (first.begin % pitch + width > pitch) return std::nullopt;
  std::uint64_t rows = 0;
  std::uint64_t expected = first.begin;
  for (const Interval& r : touched) {
    if (r.begin != expected || r.size() != width) return std::nullopt;
    expected += pitch;
    ++rows;
  }
  const ResidentBox box = ResidentBox::packed(first.begin, pitch, width, rows);
  if (2 * box.size() > run.size()) return std::nullopt;  // not worth a variant build
  const std::vector<std::uint32_t>& parameters = *p.pitched_parameters;
  for (const auto& [i, bytes] : use.args) {
    const std::uint32_t element = parameters[i];
    if (element == 0 || element == LaunchPartition::kNotPointer || args[i].offset != 0 ||
        pitch % element != 0 || width % element != 0 || (first.begin % pitch) % element != 0) {
      return std::nullopt;
    }
  }
  return box;
}

PartitionFootprint RuntimeCore::footprint(std::span<const LaunchArg> args,
                                          const LaunchPartition& p) const {
  std::lock_guard lock(mutex_);
  std::vector<PartitionUses> plan = check_partitions(args, std::span(&p, 1));
  choose_boxes(args, plan[0], true);
  PartitionFootprint out;
  out.limit = context_.memory->limit(p.device);
  out.max_allocation = registry_.at(p.device).max_allocation();
  for (const BufferUse& u : plan[0].uses) {
    PartitionFootprint::Box box;
    box.arg = u.args.empty() ? 0 : u.args.front().first;
    for (const auto& [i, bytes] : u.args) box.args.push_back(i);
    box.buffer = u.buffer->describe();
    box.bytes = u.box.size();
    box.pitch = u.box.pitch;
    box.width = u.box.width;
    out.total += box.bytes;
    out.boxes.push_back(std::move(box));
  }
  return out;
}

// Out-of-core chunks: the bytes a chunk writes go home right after its kernel (device-to-host
// copies ordered after it; the device keeps them too, Shared). Its boxes are evicted a round or
// two later to make room for later chunks (the partition does not fit), and their box-out then
// finds nothing Modified and the copies long finished, instead of issuing the write-back then
// and waiting for it at once. Not a demand read: the adaptive history does not learn it.
void RuntimeCore::write_back_chunks(std::span<const PartitionUses> plan) {
  // The acquire_inputs right before it found no chunk: nothing to write back.
  if (!launch_has_chunks_) return;
  for (const PartitionUses& pu : plan) {
    if (!pu.source->out_of_core) continue;
    for (const BufferUse& u : pu.uses) {
      if (!u.written.empty()) u.buffer->acquire(kHostAgent, u.written, false);
    }
  }
}

bool RuntimeCore::whole_buffers_fit(std::span<const LaunchArg> args, std::size_t device) const {
  std::lock_guard lock(mutex_);
  if (device >= registry_.size()) return false;  // launch_partitioned says what is wrong
  const std::uint64_t limit = context_.memory->limit(device);
  const std::uint64_t max_allocation = registry_.at(device).max_allocation();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != KernelArg::Kind::buffer) continue;
    const bool seen = std::any_of(
        args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i), [&](const LaunchArg& a) {
          return a.kind == KernelArg::Kind::buffer && a.buffer == args[i].buffer;
        });
    if (seen) continue;
    const auto it = buffers_.find(args[i].buffer.value);
    if (it == buffers_.end()) return false;  // launch_partitioned says what is wrong
    const std::uint64_t size = it->second->size();
    if (size > max_allocation) return false;
    total += size;
    if (total > limit) return false;
  }
  return true;
}

// Step 3a: each partition's buffers get (or keep) their allocations on its device and stay there
// until the launch is over: a kernel's buffers are never evicted under it, and the strategies'
// copies after the kernel never evict what it wrote before the directory knows it.
void RuntimeCore::hold_buffers(std::span<PartitionUses> plan, HeldBuffers& held) {
  // Whether every use is held already, so that each is held in plan order with one
  // DeviceMemory::use (what launch_again's proof needs of the run before it).
  held_in_plan_order_ = std::all_of(plan.begin(), plan.end(), [](const PartitionUses& pu) {
    return std::all_of(pu.uses.begin(), pu.uses.end(), [&pu](const BufferUse& u) {
      return u.buffer->residency().held_for_use(device_of_agent(pu.agent), u.box);
    });
  });
  for (PartitionUses& pu : plan) {
    // The boxes the device already holds are held first: making room for the others must never
    // evict one this launch needs (a stencil's output box would go to make room for its input's
    // grown box, and the next step the other way round).
    std::vector<BufferUse*>& order = hold_order_;
    order.clear();
    if (pu.uses.size() > 1) {  // one buffer: no order to choose
      for (BufferUse& u : pu.uses) {
        if (u.buffer->residency().covers(device_of_agent(pu.agent), u.box)) order.push_back(&u);
      }
    }
    for (BufferUse& u : pu.uses) {
      if (std::find(order.begin(), order.end(), &u) == order.end()) order.push_back(&u);
    }
    for (BufferUse* use : order) {
      BufferUse& u = *use;
      try {
        u.held = u.buffer->begin_use(
            pu.agent, u.box,
            pu.source->out_of_core ? Residency::Placement::replace : Residency::Placement::merge);
      } catch (const OutOfDeviceMemory& e) {
        std::uint64_t total = 0;
        for (const BufferUse& v : pu.uses) total += v.box.size();
        const std::size_t device = device_of_agent(pu.agent);
        throw OutOfDeviceMemory(
            "launch of kernel '" + pu.source->kernel->name() + "' on device " +
            std::to_string(device) + ": its " + std::to_string(pu.uses.size()) + " buffers need " +
            std::to_string(total) + " bytes there at once, the limit is " +
            std::to_string(context_.memory->limit(device)) + " bytes: " + e.what());
      }
      held.add(u.buffer, pu.agent, u.box);
#if UNIMEM_INVARIANTS_ENABLED
      // A run's allocation starts where choose_boxes and the residency's growth cut it.
      if (!u.held.is_packed() && u.held.base % kBoxAlignment != 0) {
        detail::throw_invariant(u.buffer->describe() + ": an allocation on device " +
                                    std::to_string(device_of_agent(pu.agent)) + " starts at byte " +
                                    std::to_string(u.held.base) + ", not at a multiple of " +
                                    std::to_string(kBoxAlignment),
                                __FILE__, __LINE__);
      }
#endif
    }
  }
}

// The bytes each device's partitions touch, per buffer (DeviceMemoryReport::need_bytes).
void RuntimeCore::note_touched(std::span<const PartitionUses> plan) {
  for (const PartitionUses& pu : plan) {
    const std::size_t d = device_of_agent(pu.agent);
    for (const BufferUse& u : pu.uses) {
      std::vector<IntervalSet>& per_device = touched_[u.buffer->id()];
      per_device.resize(registry_.size());
      const IntervalSet touched = u.needed.unite(u.written);
      if (per_device[d].contains(touched)) continue;  // a repeated launch touches nothing new
      const std::uint64_t before = per_device[d].total_size();
      per_device[d] = per_device[d].unite(touched);
      need_now_[d] += per_device[d].total_size() - before;
      need_peak_[d] = std::max(need_peak_[d], need_now_[d]);
    }
  }
}

// Step 3: every partition's reads are made current first, so each partition reads the state
// before the launch (DESIGN.md invariant 5); copies feeding one partition from another's device
// are recorded as readers there, so that device's kernel waits for them (WAR).
// A buffer whose launch writes again exactly what its last device writes wrote (floyd-warshall)
// has its reads acquired without directory steps, and its writes published without them
// (SharedBuffer::acquire_rewriting_last_writes says when and why); the other buffers' reads are
// acquired as usual, in plan order (buffers are independent of each other). Without the repeat
// fast path (RuntimeOptions::repeat_fast_path, for comparing) every buffer takes the full path.
void RuntimeCore::acquire_inputs(std::span<PartitionUses> plan) {
  rewriting_buffers_.clear();
  rewriting_all_written_ = false;
  bool chunks = false;  // split uses: a buffer may have several per partition
  for (PartitionUses& pu : plan) {
    for (BufferUse& u : pu.uses) u.read_only = nullptr;
    chunks = chunks || pu.source->out_of_core;
  }
  launch_has_chunks_ = chunks;
  if (!chunks && !plan.empty() && uses_aligned(plan)) {
    acquire_aligned_inputs(plan);
    return;
  }
  for (std::size_t i = 0; !chunks && i < plan.size(); ++i) {
    for (const BufferUse& first : plan[i].uses) {
      SharedBuffer* b = first.buffer;
      if (std::find(rewriting_buffers_.begin(), rewriting_buffers_.end(), b) !=
          rewriting_buffers_.end()) {
        continue;
      }
      bool seen = false;  // by an earlier partition: decided already
      for (std::size_t k = 0; k < i && !seen; ++k) {
        for (const BufferUse& u : plan[k].uses) seen = seen || u.buffer == b;
      }
      if (seen) continue;
      std::vector<SharedBuffer::LaunchUse>& uses = rewriting_uses_;
      uses.clear();
      for (std::size_t k = i; k < plan.size(); ++k) {
        for (const BufferUse& u : plan[k].uses) {
          if (u.buffer == b) uses.push_back({plan[k].agent, &u.needed, &u.written});
        }
      }
      if (repeat_fast_path_ && b->acquire_rewriting_last_writes(uses)) {
        rewriting_buffers_.push_back(b);
        ++rewriting_launch_buffers_;
        std::size_t j = 0;  // the uses' order above
        for (std::size_t k = i; k < plan.size(); ++k) {
          for (BufferUse& u : plan[k].uses) {
            if (u.buffer == b) u.read_only = &b->rewrite_missing(j++);
          }
        }
      }
    }
  }
  for (PartitionUses& pu : plan) {
    for (BufferUse& u : pu.uses) {
      if (std::find(rewriting_buffers_.begin(), rewriting_buffers_.end(), u.buffer) ==
          rewriting_buffers_.end()) {
        u.buffer->acquire(pu.agent, u.needed);
      }
    }
  }
}

// Aligned uses: every partition has the same buffers at the same places of its uses, each buffer
// once (check_partitions builds each partition's uses from the same arguments in argument order;
// only split_uses, which gives a buffer several uses, and chunks break that). Buffer j's uses in
// plan order are then use j of each partition, so acquire_inputs groups them without searching.
bool RuntimeCore::uses_aligned(std::span<const PartitionUses> plan) {
  const std::vector<BufferUse>& first = plan.front().uses;
  for (std::size_t j = 0; j < first.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      if (first[i].buffer == first[j].buffer) return false;
    }
  }
  for (const PartitionUses& pu : plan.subspan(1)) {
    if (pu.uses.size() != first.size()) return false;
    for (std::size_t j = 0; j < first.size(); ++j) {
      if (pu.uses[j].buffer != first[j].buffer) return false;
    }
  }
  return true;
}

// acquire_inputs of an aligned plan: the same calls in the same order as the general loops above
// (each buffer's rewrite decided in the order of first use, then the other buffers' acquires in
// plan order), each buffer's uses found by their place. rewriting_all_written_ tells
// publish_writes that every written buffer took the rewrite, so it need not search either.
void RuntimeCore::acquire_aligned_inputs(std::span<PartitionUses> plan) {
  const std::size_t buffers = plan.front().uses.size();
  rewriting_use_.assign(buffers, 0);
  std::vector<SharedBuffer::LaunchUse>& uses = rewriting_uses_;
  bool all_written = true;
  for (std::size_t j = 0; j < buffers; ++j) {
    uses.clear();
    bool writes = false;
    for (PartitionUses& pu : plan) {
      const BufferUse& u = pu.uses[j];
      uses.push_back({pu.agent, &u.needed, &u.written});
      writes = writes || !u.written.empty();
    }
    SharedBuffer* b = plan.front().uses[j].buffer;
    if (repeat_fast_path_ && b->acquire_rewriting_last_writes(uses)) {
      rewriting_buffers_.push_back(b);
      ++rewriting_launch_buffers_;
      rewriting_use_[j] = 1;
      for (std::size_t k = 0; k < plan.size(); ++k) {
        plan[k].uses[j].read_only = &b->rewrite_missing(k);
      }
    } else if (writes) {
      all_written = false;
    }
  }
  rewriting_all_written_ = all_written;
  for (PartitionUses& pu : plan) {
    for (std::size_t j = 0; j < buffers; ++j) {
      if (rewriting_use_[j] == 0) pu.uses[j].buffer->acquire(pu.agent, pu.uses[j].needed);
    }
  }
}

// Step 4: the kernels, each after the copies and earlier accesses it conflicts with (or, in the
// gamma measurement, after its device's previous kernel only).
Event RuntimeCore::submit_kernels(std::span<const LaunchArg> args, std::span<PartitionUses> plan,
                                  std::vector<Event>* partition_events, Ordering ordering,
                                  bool acquired) {
  // A deferred launch's kernels go to a scratch list first and into its entry only once every
  // partition was enqueued (launch_partitioned), so a driver failure half-way leaves the entry's
  // last deferred run as it was.
  // A chained deferred launch's entries are null (launch_partitioned moves them out) unless a
  // launch failed after submitting its kernels: each is made null here, a test and no store when
  // it is already. A periodic replay takes the whole list (replay_period_step): its kernel i is
  // written over entry i (the entries hold a previous replay's events, dropped as they are
  // overwritten: no list is emptied or appended to), and kernels_issued_ counts them.
  const bool periodic = ordering == Ordering::periodic;
  const bool deferred = ordering == Ordering::chained_deferred || periodic;
  if (periodic) {
    if (deferred_scratch_.size() != plan.size()) deferred_scratch_.resize(plan.size());
  } else if (deferred) {
    if (deferred_scratch_.size() < plan.size()) deferred_scratch_.resize(plan.size());
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (!deferred_scratch_[i].is_null()) deferred_scratch_[i] = Event{};
    }
  }
  kernels_issued_ = 0;
  Event only;  // the kernel of a one-partition launch: no list
  EventList kernel_events;
  for (PartitionUses& pu : plan) {
    const LaunchPartition& p = *pu.source;
    EventList& deps = launch_deps_;
    deps.clear();
    // Per use, the bytes read and not written (recorded as the kernel's read below; the write
    // shadows the rest). They also give the read's dependencies: a write of bytes it also writes
    // is among the write's own (deps_for_write finds reads and writes), so querying the written
    // bytes again for the read found nothing new.
    // Taken from acquire_inputs when it computed them (acquired: it ran for this launch),
    // else computed into launch_read_only_.
    std::vector<const IntervalSet*>& read_only = launch_read_only_of_;
    if (measurement_.coherent()) {
      if (!deferred) {
        if (launch_read_only_.size() < pu.uses.size()) launch_read_only_.resize(pu.uses.size());
        if (read_only.size() < pu.uses.size()) read_only.resize(pu.uses.size());
        for (std::size_t i = 0; i < pu.uses.size(); ++i) {
          const BufferUse& u = pu.uses[i];
          if (acquired && u.read_only != nullptr) {
            read_only[i] = u.read_only;
#if UNIMEM_INVARIANTS_ENABLED
            if (*u.read_only != u.needed.subtract(u.written)) {
              detail::throw_invariant("launch: the bytes read and not written from the acquire (" +
                                          u.read_only->to_string() +
                                          ") are not needed minus "
                                          "written (" +
                                          u.needed.subtract(u.written).to_string() + ")",
                                      __FILE__, __LINE__);
            }
#endif
          } else {
            launch_read_only_[i].assign_difference(u.needed, u.written);
            read_only[i] = &launch_read_only_[i];
          }
          const HazardTracker& tracker = u.buffer->tracker(pu.agent);
          if (!read_only[i]->empty()) tracker.deps_for_read(*read_only[i], deps);
          tracker.deps_for_write(u.written, deps);
        }
      }
      if (periodic) {
        // The agent's chain is the whole wait list (a deferred kernel asked no tracker): passed
        // as it is, not copied (below).
      } else if (const Event& previous = last_kernel_[p.device];
                 ordering != Ordering::hazards && !previous.is_null() &&
                 std::find(deps.begin(), deps.end(), previous) == deps.end()) {
        deps.push_back(previous);
      }
    }
    measurement_.add_kernel_dependencies(p.device, deps);
    if (periodic && !deps.empty()) {  // (not so in any mode: periodic only in alpha and beta)
      const EventList& chain = period_.chain[pu.agent];
      deps.insert(deps.end(), chain.begin(), chain.end());
    }
    // The chain changes only after the kernel is enqueued (below).
    const std::span<const Event> waits = periodic && deps.empty()
                                             ? std::span<const Event>(period_.chain[pu.agent])
                                             : std::span<const Event>(deps);
    // Rebasing (see RuntimeCore in runtime_core.hpp): a device that offsets pointers itself gets
    // each allocation's base; any other runs the rewritten kernel, with buffer + (offset - base)
    // for each __global pointer, when an allocation does not start at its buffer's byte 0.
    const bool native = registry_.at(p.device).rebases_arguments();
    // A packed box (see RuntimeCore in runtime_core.hpp) runs the pitched kernel: each
    // __global pointer takes buffer + offset, and each the rewrite may pack also takes its
    // box's first row and first column (in elements; 0 when it is not packed).
    const bool pitched =
        !native && std::any_of(pu.uses.begin(), pu.uses.end(),
                               [](const BufferUse& u) { return u.held.is_packed(); });
    const bool rewritten = !native && !pitched &&
                           std::any_of(pu.uses.begin(), pu.uses.end(),
                                       [](const BufferUse& u) { return u.held.base != 0; });
    UNIMEM_REQUIRE(!pitched || (p.pitched_kernel && p.pitched_parameters),
                   "launch: a packed box without its pitched kernel");
    const CompiledKernel& kernel = pitched     ? *p.pitched_kernel
                                   : rewritten ? *p.rebased_kernel
                                               : *p.kernel;
    const auto held_of = [&pu](std::size_t arg) -> const ResidentAllocation& {
      for (const BufferUse& u : pu.uses) {
        for (const auto& [index, bytes] : u.args) {
          if (index == arg) return u.held;
        }
      }
      detail::throw_invariant("launch: a buffer argument without its allocation", __FILE__,
                              __LINE__);
    };
    // The driver arguments are written over the last launch's (launch_kernel_args_), so a
    // scalar's bytes reuse its storage: a launch allocates no argument list.
    std::vector<KernelArg>& kargs = launch_kernel_args_;
    std::size_t arg_count = 0;
    const auto next_arg = [&kargs, &arg_count](KernelArg::Kind kind) -> KernelArg& {
      if (arg_count == kargs.size()) kargs.emplace_back();
      KernelArg& k = kargs[arg_count++];
      k.kind = kind;
      k.buffer = DeviceAllocation{};
      k.buffer_offset = 0;
      k.allocation_base = 0;
      k.scalar_bytes.clear();
      k.local_bytes = 0;
      return k;
    };
    const auto add_buffer = [&next_arg](DeviceAllocation allocation,
                                        std::uint64_t offset = 0) -> KernelArg& {
      KernelArg& k = next_arg(KernelArg::Kind::buffer);
      k.buffer = allocation;
      k.buffer_offset = offset;
      return k;
    };
    const auto add_u64 = [&next_arg](std::uint64_t value) {
      const auto* bytes = reinterpret_cast<const std::byte*>(&value);
      next_arg(KernelArg::Kind::scalar).scalar_bytes.assign(bytes, bytes + sizeof value);
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      const std::uint32_t element =
          pitched ? (*p.pitched_parameters)[i] : LaunchPartition::kNotPointer;
      const bool packable = pitched && element != LaunchPartition::kNotPointer && element != 0;
      const bool pointer = (rewritten && (*p.rebased_pointers)[i]) ||
                           (pitched && element != LaunchPartition::kNotPointer);
      switch (a.kind) {
        case KernelArg::Kind::buffer: {
          const ResidentAllocation& h = held_of(i);
          if (pitched && h.is_packed()) {
            // Rows [base / pitch, ...), columns from (base % pitch) / element: the rewrite's
            // row0 and col0 (packed_box made sure they are whole elements, offset 0).
            UNIMEM_REQUIRE(packable && a.offset == 0,
                           "launch: a packed box for a pointer the rewrite may not pack");
            add_buffer(h.allocation);
            add_u64(0);
            add_u64(h.base / h.pitch);
            add_u64(h.base % h.pitch / element);
          } else if (pitched && pointer) {
            add_buffer(h.allocation);
            add_u64(a.offset - h.base);
            if (packable) {
              add_u64(0);
              add_u64(0);
            }
          } else if (native) {
            add_buffer(h.allocation, a.offset).allocation_base = h.base;
          } else if (pointer) {
            // Two's complement: a.offset - h.base wraps when the pointer lies before the
            // allocation; the kernel adds it back in 64-bit arithmetic.
            add_buffer(h.allocation);
            add_u64(a.offset - h.base);
          } else {
            UNIMEM_REQUIRE(h.base == 0, "launch: a buffer that is not rebased has a partial box");
            add_buffer(h.allocation, a.offset);
          }
          break;
        }
        case KernelArg::Kind::null_buffer:
          next_arg(KernelArg::Kind::null_buffer);
          if (pointer) add_u64(0);
          if (packable) {
            add_u64(0);
            add_u64(0);
          }
          break;
        case KernelArg::Kind::scalar:
          next_arg(KernelArg::Kind::scalar).scalar_bytes = a.scalar_bytes;
          break;
        case KernelArg::Kind::local_memory:
          next_arg(KernelArg::Kind::local_memory).local_bytes = a.local_bytes;
          break;
      }
    }
    Device& device = registry_.at(p.device);
    if (lean_capture_ != nullptr) {
      LeanPartition& lean = (*lean_capture_)[static_cast<std::size_t>(&pu - plan.data())];
      lean.device = &device;
      lean.kernel = pitched ? p.pitched_kernel : rewritten ? p.rebased_kernel : p.kernel;
      lean.args.assign(kargs.begin(), kargs.begin() + static_cast<std::ptrdiff_t>(arg_count));
    }
    const std::int64_t submitted = trace_ ? TraceRecorder::now_ns() : 0;
    ++kernel_waits_.kernels;
    kernel_waits_.events += waits.size();
    // Only the platform's profiled commands (partition_events) and the trace ask a kernel's
    // event when it ran: the others' drivers may leave their events without times.
    const std::span<const KernelArg> launch_args(kargs.data(), arg_count);
    Event e = partition_events != nullptr || trace_
                  ? device.launch(kernel, p.range, launch_args, waits)
                  : device.launch_without_times(kernel, p.range, launch_args, waits);
    // A periodic launch's kernel goes over its entry before it is counted (nothing that may
    // throw in between), so a failure finds this launch's kernels in the first kernels_issued_.
    if (periodic) deferred_scratch_[static_cast<std::size_t>(&pu - plan.data())] = e;
    ++kernels_issued_;
    if (trace_) {
      trace_kernel(p, static_cast<std::size_t>(&pu - plan.data()), plan.size(), e, submitted);
    }
    measurement_.record_kernel(p.device, e);
    const bool coherent = measurement_.coherent();
    if (coherent) {
      if (periodic) chain_after(period_.chain[pu.agent], e);
      if (!deferred) {
        for (std::size_t i = 0; i < pu.uses.size(); ++i) {
          // The write shadows the read of the same bytes (record_write would cut them from the
          // read's record at once): only the bytes read and not written are recorded as a read.
          // Ordered: the kernel waited for what deps_for_read gave for them just above, so later
          // writes need not name the writes it waited for (the tracker checks that these bytes
          // lie within its last query and nothing was recorded since: split uses of one buffer
          // may break that, and then the read is recorded as a plain one). deps is the kernel's
          // whole wait list: the tracker may fold a read continuing its run of ascending reads
          // into the newest one when that one's kernel is in the list (floyd-warshall's pivot
          // rows: one record per tracker instead of one per launch).
          HazardTracker& tracker = pu.uses[i].buffer->tracker(pu.agent);
          if (!read_only[i]->empty()) tracker.record_ordered_read(*read_only[i], e, deps);
          tracker.record_write(pu.uses[i].written, e);
        }
      }
    }
    if (partition_events != nullptr) partition_events->push_back(e);
    // The kernel lives until it has run. (A replay leaves last_kernel_ to its materialization.)
    keep_kernel_locked(static_cast<std::size_t>(&pu - plan.data()), p.device, e,
                       pitched     ? p.pitched_kernel
                       : rewritten ? p.rebased_kernel
                                   : p.kernel,
                       deferred && !periodic, coherent && !periodic);
    if (plan.size() == 1) {
      only = std::move(e);
    } else {
      kernel_events.push_back(std::move(e));
    }
    deps.clear();  // holds no event past its launch
  }
  return plan.size() == 1 ? only : when_all(kernel_events);
}

void RuntimeCore::record_accesses(const PartitionUses& pu, const Event& kernel) {
  for (const BufferUse& u : pu.uses) {
    // As submit_kernels records them, but as plain reads: a deferred kernel asked no tracker.
    HazardTracker& tracker = u.buffer->tracker(pu.agent);
    if (u.written.empty()) {
      tracker.record_read(u.needed, kernel);
    } else if (!u.written.contains(u.needed)) {
      tracker.record_read(u.needed.subtract(u.written), kernel);
    }
    tracker.record_write(u.written, kernel);
  }
}

// Deferred records (see launch_partitioned): each entry's last deferred run is recorded, in the
// order those runs were launched.
void RuntimeCore::settle_deferred_records_locked() {
  materialize_period_locked();
  if (!deferred_pending_) return;
  deferred_pending_ = false;
  std::vector<RepeatableLaunch*>& order = settle_order_;
  order.clear();
  for (const auto& r : repeatable_) {
    if (r->deferred_run != 0) order.push_back(r.get());
  }
  std::sort(order.begin(), order.end(), [](const RepeatableLaunch* a, const RepeatableLaunch* b) {
    return a->deferred_run < b->deferred_run;
  });
  for (RepeatableLaunch* r : order) {
    for (std::size_t i = 0; i < r->plan.size(); ++i)
      record_accesses(r->plan[i], r->deferred_kernels[i]);
    r->deferred_run = 0;
    for (Event& e : r->deferred_kernels) e = Event{};
  }
}

void RuntimeCore::begin_operation_locked() {
  settle_deferred_records_locked();
  ++operations_;
}

// Step 5: the directory learns the writes, buffer by buffer, and the strategies act on them.
void RuntimeCore::publish_writes(std::span<const PartitionUses> plan, const std::string& kernel) {
  if (rewriting_all_written_) {
    // acquire_aligned_inputs: every written buffer took the rewrite, and each of those writes
    // (condition (b) of acquire_rewriting_last_writes: it has last writes, all written again),
    // so the buffers the loops below would find are rewriting_buffers_, in the same order (of
    // first use in the aligned plan).
    rewriting_all_written_ = false;
    for (SharedBuffer* b : rewriting_buffers_) {
      if (b->publish_rewrites(kernel, strategy_for(*b))) ++restarted_rewrite_runs_;
    }
    rewriting_buffers_.clear();
    return;
  }
  std::vector<SharedBuffer*>& written_buffers = publish_buffers_;
  written_buffers.clear();
  for (const PartitionUses& pu : plan) {
    for (const BufferUse& u : pu.uses) {
      if (!u.written.empty() && std::find(written_buffers.begin(), written_buffers.end(),
                                          u.buffer) == written_buffers.end()) {
        written_buffers.push_back(u.buffer);
      }
    }
  }
  // The writes' entries are assigned over the last launch's, so their sets reuse its storage.
  std::vector<std::pair<Agent, IntervalSet>>& writes = publish_writes_;
  for (SharedBuffer* b : written_buffers) {
    if (std::find(rewriting_buffers_.begin(), rewriting_buffers_.end(), b) !=
        rewriting_buffers_.end()) {
      // Its writes are its last writes (acquire_rewriting_last_writes checked): no list to build.
      if (b->publish_rewrites(kernel, strategy_for(*b))) ++restarted_rewrite_runs_;
      continue;
    }
    std::size_t count = 0;
    for (const PartitionUses& pu : plan) {
      for (const BufferUse& u : pu.uses) {
        if (u.buffer != b || u.written.empty()) continue;
        if (count == writes.size()) writes.emplace_back();
        writes[count].first = pu.agent;
        writes[count].second = u.written;
        ++count;
      }
    }
    b->begin_write();
    b->after_device_writes(std::span(writes.data(), count), kernel, strategy_for(*b));
  }
  rewriting_buffers_.clear();
}

MeasurementMode RuntimeCore::measurement() const {
  std::lock_guard lock(mutex_);
  return measurement_.mode();
}

void RuntimeCore::set_measurement(MeasurementMode mode) {
  finish();
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  if (!buffers_.empty()) {
    throw PreconditionError(
        "Runtime::set_measurement: " + std::to_string(buffers_.size()) +
        " buffer(s) still live (first: " + buffers_.begin()->second->describe() +
        "); release every buffer before switching the measurement mode");
  }
  measurement_.set_mode(mode);
  context_.transfers_disabled = !measurement_.transfers();
}

void RuntimeCore::finish() {
  EventList all;
  // The in-flight list's entries, moved out of it (not copied: see below), from running_from on.
  std::vector<InFlight> running;
  std::size_t running_from = 0;
  std::size_t replayed_count = 0;  // all's first entries: the replayed steps' events
  // Per buffer, the accesses its trackers held when `all` was gathered: all finished once it
  // has been waited for, so the trackers can drop them without asking each event (a buffer's
  // trackers hold about a thousand after a floyd-warshall run, and its release would ask again).
  std::vector<std::pair<std::uint32_t, SharedBuffer::AccessMarks>> marks;
  {
    std::lock_guard lock(mutex_);
    if (period_.phase == PeriodPhase::replaying) {
      // A replayed cycle stays replayed (finish() changes no state): its copies are in no
      // tracker yet, so the last replay of each step is waited for here (earlier ones ran
      // before them on their agents' chains); no deferred record is pending while it replays.
      for (const PeriodicStep& step : period_.steps) {
        for (const EventList* events : {&step.before_events, &step.after_events}) {
          for (const Event& e : *events) {
            if (!e.is_null()) all.push_back(e);
          }
        }
      }
    } else {
      settle_deferred_records_locked();  // finish() forgets what it waited for: records first
    }
    replayed_count = all.size();
    // The in-flight operations (complete ones too: a failure is reported), moved out of the list
    // with the storage an earlier finish() left (inflight_spare_), and dropped once waited for,
    // as the next pruning would drop them; put back when one failed, so a failure is reported
    // as before until a pruning drops it. An operation then costs the same whether it finished
    // before the end (pruned) or not (here): before, each one still running cost a copy, a wait
    // and a release more, so a run's work followed how far the host had run ahead of the
    // devices (`unimem bench --instructions`: 1-4 M instructions between two like runs of
    // 20,000 short launches).
    running.swap(inflight_spare_);
    running.swap(inflight_);
    running_from = inflight_head_;
    inflight_head_ = 0;
    // Buffers' pending copies and kernels: the kernels are in-flight ones too, and waiting for
    // an event costs a driver call even when it has finished, so the list is taken once (its
    // first places kept: the first failure is reported). Every kernel and host access is in
    // flight here until it has finished (track), so a buffer that recorded no copy since its
    // accesses were last forgotten holds nothing else to wait for: it is not asked (pending()
    // asks each of its events whether it finished, a driver call each, twice; measurement beta
    // issues no copy).
    marks.reserve(buffers_.size());
    for (const auto& [id, b] : buffers_) {
      if (b->may_hold_copies()) {
        const EventList p = b->pending();
        all.insert(all.end(), p.begin(), p.end());
      }
      marks.emplace_back(id, b->access_marks());
    }
    if (all.size() != replayed_count) {
      // The replayed steps' events keep their first places, the list's first.
      replayed_count =
          first_occurrences(
              EventList(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(replayed_count)))
              .size();
      all = first_occurrences(std::move(all));
    }
  }
  // As wait_all over the replayed steps' events, the in-flight ones and the pending copies in
  // that order: newest first (once the newest has finished the others mostly have), and the
  // first failure in that order is the one reported.
  std::exception_ptr failed;
  const auto wait_for = [&failed](const Event& e) {
    try {
      e.wait();
    } catch (...) {
      failed = std::current_exception();  // an earlier one overwrites: the first failure wins
    }
  };
  for (std::size_t i = all.size(); i-- > replayed_count;) wait_for(all[i]);
  for (std::size_t i = running.size(); i-- > running_from;) wait_for(running[i].event);
  for (std::size_t i = replayed_count; i-- > 0;) wait_for(all[i]);
  if (failed) {
    {
      std::lock_guard lock(mutex_);
      inflight_.insert(
          inflight_.begin() + static_cast<std::ptrdiff_t>(inflight_head_),
          std::make_move_iterator(running.begin() + static_cast<std::ptrdiff_t>(running_from)),
          std::make_move_iterator(running.end()));
    }
    std::rethrow_exception(failed);
  }
  running.clear();  // every one finished: its event and kernel object go
  // Everything issued so far has finished: boxes merged away can go.
  std::lock_guard lock(mutex_);
  if (running.capacity() > inflight_spare_.capacity()) inflight_spare_.swap(running);
  for (const auto& [id, b] : buffers_) b->reap_retired();
  for (const auto& [id, m] : marks) {
    if (auto it = buffers_.find(id); it != buffers_.end()) it->second->forget_accesses_before(m);
  }
}

TransferStats RuntimeCore::stats() const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  TransferStats total = released_stats_;
  for (const auto& [id, b] : buffers_) total += b->stats();
  return total;
}

TransferStats RuntimeCore::buffer_stats(BufferId id) const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  return buffer_locked(id).stats();
}

std::string RuntimeCore::stats_json() const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  TransferStats total = released_stats_;
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const auto& [id, b] : buffers_) {
    total += b->stats();
    nlohmann::ordered_json entry;
    entry["id"] = id;
    entry["name"] = b->name();
    entry["size"] = b->size();
    entry["stats"] = nlohmann::ordered_json::parse(b->stats().to_json());
    buffers.push_back(std::move(entry));
  }
  nlohmann::ordered_json out;
  out["total"] = nlohmann::ordered_json::parse(total.to_json());
  out["buffers"] = std::move(buffers);
  return out.dump();
}

std::vector<DeviceMemoryReport> RuntimeCore::device_memory() const {
  std::lock_guard lock(mutex_);
  std::vector<DeviceMemoryReport> out(registry_.size());
  for (std::size_t d = 0; d < out.size(); ++d) {
    out[d].memory = context_.memory->stats(d);
    out[d].need_bytes = need_now_[d];
    out[d].peak_need_bytes = need_peak_[d];
  }
  return out;
}

void RuntimeCore::reset_device_memory_peaks() {
  std::lock_guard lock(mutex_);
  begin_operation_locked();
  context_.memory->reset_peaks();
  need_peak_ = need_now_;
}

std::uint64_t RuntimeCore::deferred_record_launches() const {
  std::lock_guard lock(mutex_);
  return deferred_record_launches_;
}

std::uint64_t RuntimeCore::repeated_launches() const {
  std::lock_guard lock(mutex_);
  return repeated_launches_;
}

std::uint64_t RuntimeCore::repeats_leaving_directory() const {
  std::lock_guard lock(mutex_);
  return repeats_leaving_directory_;
}

std::uint64_t RuntimeCore::rewriting_launch_buffers() const {
  std::lock_guard lock(mutex_);
  return rewriting_launch_buffers_;
}

std::uint64_t RuntimeCore::restarted_rewrite_runs() const {
  std::lock_guard lock(mutex_);
  return restarted_rewrite_runs_;
}

std::uint64_t RuntimeCore::cycle_repeats() const {
  std::lock_guard lock(mutex_);
  return cycle_repeats_;
}

RuntimeCore::KernelWaits RuntimeCore::kernel_waits() const {
  std::lock_guard lock(mutex_);
  return kernel_waits_;
}

std::uint64_t RuntimeCore::directory_version() const {
  std::lock_guard lock(mutex_);
  return operations_ - launches_leaving_directory_;
}

std::size_t RuntimeCore::device_holding_most(std::span<const LaunchArg> args,
                                             std::span<const std::size_t> devices) const {
  UNIMEM_REQUIRE(!devices.empty(), "device_holding_most: no device to choose from");
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  std::vector<std::uint64_t> current(devices.size(), 0);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != KernelArg::Kind::buffer) continue;
    const bool seen = std::any_of(
        args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i), [&](const LaunchArg& a) {
          return a.kind == KernelArg::Kind::buffer && a.buffer == args[i].buffer;
        });
    const auto it = buffers_.find(args[i].buffer.value);
    if (seen || it == buffers_.end()) continue;  // an unknown buffer: the launch says so
    const SharedBuffer& b = *it->second;
    const IntervalSet all(Interval{0, b.size()});
    for (std::size_t k = 0; k < devices.size(); ++k) {
      if (devices[k] >= registry_.size()) continue;
      const Agent agent = agent_of_device(devices[k]);
      current[k] += b.size() - b.directory().missing_on(agent, all).total_size();
    }
  }
  std::size_t best = 0;
  for (std::size_t k = 1; k < devices.size(); ++k) {
    if (current[k] > current[best]) best = k;
  }
  return devices[best];
}

int RuntimeCore::history_repeat_count(BufferId buffer, const std::string& kernel,
                                      AgentMask writers) const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  return buffer_locked(buffer).history().repeat_count({kernel, writers});
}

std::uint64_t RuntimeCore::deferred_rewrite_restarts(BufferId buffer) const {
  std::lock_guard lock(mutex_);
  return buffer_locked(buffer).deferred_restarts();
}

std::uint64_t RuntimeCore::history_restarts(BufferId buffer) const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  return buffer_locked(buffer).history().restarts();
}

std::size_t RuntimeCore::tracked_accesses(BufferId buffer) {
  std::lock_guard lock(mutex_);
  settle_deferred_records_locked();
  return buffer_locked(buffer).tracked_accesses();
}

AgentMask RuntimeCore::valid_agents(BufferId id, std::uint64_t offset) const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  const SharedBuffer& b = buffer_locked(id);
  if (offset >= b.size()) {
    throw PreconditionError(b.describe() + ": offset " + std::to_string(offset) +
                            " outside the buffer");
  }
  return b.directory().mask_at(offset);
}

std::vector<IntervalMap<AgentMask>::Segment> RuntimeCore::directory_segments(BufferId id) const {
  std::lock_guard lock(mutex_);
  materialize_period_locked();
  return buffer_locked(id).directory().segments();
}

// Periodic cycles. A cycle of halo exchanges changes the directory at every launch (each reads
// rows the other device just wrote, and its write takes back rows the other device holds), so
// the repeat path's directory skip never applies to it. But it is periodic: after one round of
// its launches (the cycle of `length` launches repeatable_ holds: ping-pong's A, B) the state
// of its buffers acts as it did a round before, and every round issues the same copies. So:
// - Capture (begin_period_step, end_period_step): from a repeat on, the launches of one round
//   run the full path while the buffers log every copy they issue (CoherenceContext::copy_log:
//   acquire_inputs' copies before the kernels, publish_writes' after them) and the state of
//   every buffer of the cycle is taken after each launch (SharedBuffer::PeriodicState: the
//   directory's masks, evicted bytes, adaptive history, prefetch ledger, never-written home
//   bytes, last writes and the allocations), and before the round's first. The states are
//   taken into the storage of the previous capture's (take_periodic_states; kept from cycle to
//   cycle, a failed round's end state swapped in as the next round's start), so a capture
//   allocates little; each is overwritten whole (every member assigned) before it is read, and
//   only a capture's own states are compared (end_period_step) or restored (materialization).
// - Verification: the round is periodic when every buffer's state at its end acts as at its
//   start (SharedBuffer::acts_as): equal but for counters, the history's counts compared as
//   min(count, 2) (the history only asks "> 0" and ">= 2") and none restarted in the round (each
//   close only added one). acts_as is kept by every operation (a state acting as another meets
//   the same decisions: the same copies, the same masks, the same sequences, counts that stay
//   at 2 or more and restart alike), so the next round from the end state does exactly what
//   the verified round did: the same copies (source, destination, bytes) in the same order, the
//   same masks after each launch, and counters grown by the round's growth again. By induction,
//   so does every later round. After kMaxFailedRounds rounds in a row that are not periodic,
//   capture stops until a launch that is no repeat (cost only).
// - Probe rounds (start_period_round). A round that starts while the history of an adaptive
//   buffer of the cycle counts a key of one of the round's launches (its kernel, the agents
//   writing the buffer) fewer than 2 times (an adaptive cycle's first round: its prefetches begin
//   only at 2; period_counts_settled) is run as a probe: no copy logged, no state taken, only each
//   history's count signature (AdaptiveHistory::count_signature: its number of keys, the sum of
//   min(count, 2), restarts(), whether a recording is open) kept from its start. Proof that a
//   probe whose signature changed spares a capture that could not verify: acts_as of the round's
//   start and end states requires, per buffer, equal restarts() and the history's acts_as, which
//   requires the same keys, each with the same min(count, 2), and the same open flag; those give
//   equal signatures. So a changed signature means the captured round would have failed
//   (counted as a failed round, as it would have been), and the next round starts from the state
//   now, as after a failed capture. A probe whose signature did not change proves nothing: the
//   next round is captured (no probe), so a key that stays below 2 delays capture by one round
//   at most; a capture only costs, so deciding when to capture
//   never changes what the launches do. Invariant builds take the states of a probe round too
//   and check that a changed signature comes with a failing acts_as.
// - Replay (replay_period_step): later launches of the cycle, in the round's order, issue the
//   captured copies (SharedBuffer::replay_copy: the same rows between the same allocations;
//   no directory, ledger, history or tracker step) and the kernels, and change no state: the
//   real state is the verified round's state after the last replayed step, with the counters
//   `rounds` rounds on. A replayed launch needs every box of its plan on its device already:
//   hold_buffers then allocates nothing, so nothing is evicted and no copy of another buffer is
//   written back from a state that is not real yet. The replay begins only when the boxes of
//   every step are there (end_period_step), and they stay: while it replays, nothing but
//   replayed launches runs (any other operation materializes first), and those allocate and
//   evict nothing (replay_period_step checks the eviction count), so the allocations stay as
//   they were (allocations only change by allocating, evicting or releasing).
// - Materialization (materialize_period_locked): before any other operation (settle_deferred_
//   records_locked, which every operation but a replayed or deferred launch calls first; const
//   queries call it themselves; the destructor too) the state of every buffer of the cycle
//   becomes the captured one after step j = (n - 1) % length of n replayed launches, with the
//   ledger's and history's counters grown by ((n - 1) / length + 1) rounds' growth
//   (SharedBuffer::restore_periodic_state); stats_ counted the replayed copies as they ran. The
//   trackers then record each step's last replay (its copies, its kernels, its later copies) in
//   the order those ran, as the deferred records are settled (launch_partitioned): for a byte on
//   an agent, the last writer among all replayed operations is the last run of the step that
//   wrote it last, and earlier runs of each operation are ancestors of its last run on the
//   chains below. Each device's last kernel (last_kernel_, which replayed launches leave as the
//   replay began) becomes its newest replayed one, as if each replay had set it. The first
//   launch after it orders through the trackers (chained_after_).
// Ordering (Ordering::periodic, replay_copy). A replayed operation waits for exactly the last
// operation on each agent it touches (chain, per agent: a kernel on d touches d; a copy from s
// to t touches s and t, the host being agent 0), and becomes that agent's last; the chains
// start from everything the agents' trackers hold on the cycle's buffers (each tracker's held
// events, HazardTracker::append_held_events: every access a write of the whole buffer would wait
// for and the writes its ordered reads cover; invariant builds check the first part,
// check_replay_chains) and each device's last kernel. Every
// replayed operation thus runs after every earlier operation on each agent it touches, which is
// a superset of what the hazard trackers would give it: trackers are per agent (a kernel on d
// or a copy into or out of d records only in d's tracker, and the host's), so two operations
// conflict only through an agent both touch. In particular: a copy out of s runs after s's
// kernel that wrote its bytes (RAW); a copy into t runs after t's kernels that read or wrote the
// bytes it overwrites (WAR, WAW); the next kernel on s runs after the copies reading s's bytes
// it overwrites (WAR), and the kernel on t after the copies into t (RAW). What it waits for
// beyond the trackers are operations on the same agent that touch other bytes: on a device
// queue, which runs its kernels in order anyway, that costs a copy's latency at most.
// Measurement beta (no copies) replays no copy either (replay_copy issues nothing, as issue()
// does), so its kernels chain as in beta's full path; the state it restores is the one beta's
// own capture took. Invariant builds run the full path's directory steps on a copy of each
// buffer's directory at every replayed launch (check_replayed_step): the copies the directory
// gives must be the replayed ones, and the masks after the launch the captured ones.
bool RuntimeCore::begin_period_step(const RepeatableLaunch* entry, std::size_t found,
                                    std::size_t cycle_length, bool coherent) {
  PeriodicCycle& c = period_;
  if (entry == nullptr || !coherent) {
    c.phase = PeriodPhase::idle;
    c.streak = 0;
    if (entry == nullptr) c.failed_rounds = 0;  // another cycle may begin
    return false;
  }
  c.streak = c.streak_length == cycle_length ? c.streak + 1 : 1;
  c.streak_length = cycle_length;
  const bool continues = c.phase == PeriodPhase::capturing && c.length == cycle_length &&
                         c.steps[c.position].token == entry->token.get();
  if (!continues) {
    // A capture starts after a whole round of repeats of this length: a cycle with a launch that
    // never repeats (one whose step number moves an access; fdtd2d's, used only as a value,
    // makes a scalar twin, ProgramCore::launch, which repeats) would otherwise start one at every
    // round and never finish it.
    if (c.failed_rounds >= kMaxFailedRounds || c.streak <= cycle_length) {
      c.phase = PeriodPhase::idle;
      return false;
    }
    // The round starts here: its launches are the cycle's entries in the order they ran. The
    // steps keep the storage of the previous capture's (reset_period_storage cleared them).
    c.length = cycle_length;
    c.position = 0;
    c.steps.resize(cycle_length);
    c.buffers.clear();
    for (std::size_t i = 0; i < cycle_length; ++i) {
      const RepeatableLaunch& e = *repeatable_[found + i];
      c.steps[i].token = e.token.get();
      c.steps[i].plan = &e.plan;
      c.steps[i].replayed_at = 0;
      for (const PartitionUses& pu : e.plan) {
        for (const BufferUse& u : pu.uses) {
          if (std::find(c.buffers.begin(), c.buffers.end(), u.buffer) == c.buffers.end()) {
            c.buffers.push_back(u.buffer);
          }
        }
      }
    }
    start_period_round(true, nullptr);
  }
  PeriodicStep& step = c.steps[c.position];
  step.before.clear();
  step.after.clear();
  c.phase = PeriodPhase::idle;  // capturing again once the launch went through (end_period_step)
  return true;
}

void RuntimeCore::end_period_step() {
  PeriodicCycle& c = period_;
  PeriodicStep& step = c.steps[c.position];
  if (!c.probing || UNIMEM_INVARIANTS_ENABLED) take_periodic_states(c.buffers, step.state);
  c.phase = PeriodPhase::capturing;
  if (++c.position < c.length) return;
  if (c.probing) {
    bool changed = false;
    for (std::size_t i = 0; i < c.buffers.size(); ++i) {
      if (!(c.buffers[i]->history().count_signature() == c.probe_start[i])) changed = true;
    }
#if UNIMEM_INVARIANTS_ENABLED
    // The capture the probe spared could not have verified (see "Probe rounds").
    bool periodic = true;
    for (std::size_t i = 0; periodic && i < c.buffers.size(); ++i) {
      periodic = SharedBuffer::acts_as(c.start[i], step.state[i]);
    }
    if (changed && periodic) {
      detail::throw_invariant(
          "a probe round of a periodic cycle changed a count signature, yet its states act alike",
          __FILE__, __LINE__);
    }
#endif
    c.position = 0;
    if (changed) {
      ++periodic_probe_rounds_;
      if (++c.failed_rounds >= kMaxFailedRounds) {
        c.phase = PeriodPhase::idle;
        reset_period_storage();
        return;
      }
    }
    // After a probe that proved nothing the next round is captured.
    start_period_round(changed, UNIMEM_INVARIANTS_ENABLED ? &step.state : nullptr);
    if (!c.probing) (void)adopt_carried_round();
    return;
  }
  bool periodic = true;
  for (std::size_t i = 0; periodic && i < c.buffers.size(); ++i) {
    periodic = SharedBuffer::acts_as(c.start[i], step.state[i]);
  }
  // A replayed launch needs every box of its plan on its device already (see "Replay"); they
  // are checked here once, for every step.
  for (std::size_t i = 0; periodic && i < c.length; ++i) {
    for (const PartitionUses& pu : *c.steps[i].plan) {
      for (const BufferUse& u : pu.uses) {
        if (!u.buffer->residency().covers(device_of_agent(pu.agent), u.box)) periodic = false;
      }
    }
  }
  if (periodic) {
    begin_period_replay();
    return;
  }
  c.position = 0;
  if (++c.failed_rounds >= kMaxFailedRounds) {
    c.phase = PeriodPhase::idle;
    reset_period_storage();
    return;
  }
  // The next round starts here (the old start's storage serves the step's next state).
  start_period_round(true, &step.state);
  if (!c.probing) (void)adopt_carried_round();
}

bool RuntimeCore::period_counts_settled() const {
  const PeriodicCycle& c = period_;
  for (SharedBuffer* b : c.buffers) {
    if (strategy_for(*b) != UpdateStrategy::adaptive) continue;
    for (std::size_t i = 0; i < c.length; ++i) {
      const std::vector<PartitionUses>& plan = *c.steps[i].plan;
      AgentMask writers;
      for (const PartitionUses& pu : plan) {
        for (const BufferUse& u : pu.uses) {
          if (u.buffer == b && !u.written.empty()) writers = writers.with(pu.agent);
        }
      }
      if (writers.empty()) continue;
      const AdaptiveHistory::Key key{plan.front().source->kernel->name(), writers};
      if (b->history().repeat_count(key) < 2) return false;
    }
  }
  return true;
}

void RuntimeCore::start_period_round(bool may_probe,
                                     std::vector<SharedBuffer::PeriodicState>* start) {
  PeriodicCycle& c = period_;
  c.probing = may_probe && !period_counts_settled();
  if (c.probing) {
    c.probe_start.clear();
    for (const SharedBuffer* b : c.buffers) {
      c.probe_start.push_back(b->history().count_signature());
    }
    // (Invariant builds take the start state of a probe too: end_period_step checks the probe.)
    if (!UNIMEM_INVARIANTS_ENABLED) return;
  }
  if (start != nullptr) {
    c.start.swap(*start);
  } else {
    take_periodic_states(c.buffers, c.start);
  }
}

// Forgets the cycle but keeps the storage of its states for the next capture: no event stays
// held, no pointer to a buffer or an entry that may go.
void RuntimeCore::reset_period_storage() const {
  PeriodicCycle& c = period_;
  for (PeriodicStep& step : c.steps) {
    step.token = nullptr;
    step.plan = nullptr;
    step.before.clear();
    step.after.clear();
    step.replayed_at = 0;
    step.before_events.clear();
    step.kernel_events.clear();
    step.after_events.clear();
  }
  c.buffers.clear();
  c.chain.clear();
  c.shadow.clear();
  c.probing = false;
  c.adopted = false;
}

void RuntimeCore::start_replay_chains(const std::vector<SharedBuffer*>& buffers) {
  std::vector<EventList>& chains = period_.chain;
  chains.assign(context_.agent_count(), EventList{});
  // Every access the trackers hold on the buffers (a superset of what deps_for_write of each
  // whole buffer gives, without its queries).
  for (SharedBuffer* b : buffers) {
    for (std::size_t a = 0; a < context_.agent_count(); ++a) {
      b->tracker(static_cast<Agent>(a)).append_held_events(chains[a]);
    }
  }
  for (std::size_t d = 0; d < last_kernel_.size(); ++d) {
    if (!last_kernel_[d].is_null()) chains[agent_of_device(d)].push_back(last_kernel_[d]);
  }
  for (EventList& chain : chains) chain = first_occurrences(std::move(chain));
#if UNIMEM_INVARIANTS_ENABLED
  check_replay_chains(buffers);
#endif
}

void RuntimeCore::begin_period_replay() {
  PeriodicCycle& c = period_;
  settle_deferred_records_locked();  // (not replaying yet: only the repeat path's records)
  start_replay_chains(c.buffers);
  for (PeriodicStep& step : c.steps) step.replayed_at = 0;
  c.replayed = 0;
  c.position = 0;
  c.adopted = false;
#if UNIMEM_INVARIANTS_ENABLED
  c.shadow.clear();
  for (const SharedBuffer::PeriodicState& state : c.steps[c.length - 1].state) {
    c.shadow.push_back(state.directory);
  }
#endif
  c.phase = PeriodPhase::replaying;
}

void RuntimeCore::check_replay_chains(const std::vector<SharedBuffer*>& buffers) {
  PeriodicCycle& c = period_;
  EventList deps;
  for (SharedBuffer* b : buffers) {
    const IntervalSet all(Interval{0, b->size()});
    for (std::size_t a = 0; a < context_.agent_count(); ++a) {
      deps.clear();
      b->tracker(static_cast<Agent>(a)).deps_for_write(all, deps);
      for (const Event& e : deps) {
        if (std::find(c.chain[a].begin(), c.chain[a].end(), e) == c.chain[a].end()) {
          detail::throw_invariant(b->describe() + ": the replay's chain of agent " +
                                      std::to_string(a) +
                                      " misses an access a write of the buffer waits for",
                                  __FILE__, __LINE__);
        }
      }
    }
  }
}

inline bool RuntimeCore::replays_next(const RepeatableLaunch* entry, std::size_t cycle_length,
                                      bool coherent) const {
  const PeriodicCycle& c = period_;
  // The boxes of every step were on their devices when the replay began (end_period_step), and
  // still are: see "Replay".
  return entry != nullptr && coherent && cycle_length == c.length &&
         entry->token.get() == c.steps[c.position].token;
}

Event RuntimeCore::replay_copy(const RecordedCopy& copy) {
  std::vector<EventList>& chain = period_.chain;
  const Agent from = copy.rows.front().from;
  const Agent to = copy.rows.front().to;
  Event e = copy.buffer->replay_copy(copy.rows, chain[from], chain[to], launch_deps_);
  if (!e.is_null()) {  // beta issues none
    chain_after(chain[from], e);
    chain_after(chain[to], e);
  }
  return e;
}

Event RuntimeCore::replay_period_step(std::span<const LaunchArg> args, std::size_t found,
                                      std::vector<Event>* partition_events) {
  PeriodicCycle& c = period_;
  PeriodicStep& step = c.steps[c.position];
  RepeatableLaunch& entry = *repeatable_[found];
  const std::uint64_t number = ++operations_;
  const std::uint64_t evictions = context_.memory->eviction_count();
#if UNIMEM_INVARIANTS_ENABLED
  for (const PartitionUses& pu : entry.plan) {
    for (const BufferUse& u : pu.uses) {
      if (!u.buffer->residency().covers(device_of_agent(pu.agent), u.box)) {
        detail::throw_invariant(u.buffer->describe() + ": a box of step " +
                                    std::to_string(c.position) +
                                    " of a replayed periodic cycle left its device",
                                __FILE__, __LINE__);
      }
    }
  }
#endif
  HeldBuffers held;  // finds every box (end_period_step): allocates and evicts nothing
  hold_buffers(entry.plan, held);
  if (context_.memory->eviction_count() != evictions) {
    detail::throw_invariant("a replayed launch of a periodic cycle evicted an allocation", __FILE__,
                            __LINE__);
  }
  // This replay's events go to lists that are made the step's once all of them were issued (the
  // step keeps its previous replay's until then: a failure records what this one issued after
  // them): the copies' to the spares (empty here), the kernels' to deferred_scratch_
  // (submit_kernels writes kernel i over entry i, kernels_issued_ counting them). The
  // step's previous lists then become those lists: the copies' emptied, the kernels' left
  // full, their events dropped as the next replay overwrites them. No list is made, moved or
  // destroyed per replay, only its events; a cycle without copies swaps one list.
  EventList& before = c.spare_before;
  EventList& after = c.spare_after;
  // Reset before the copies: a copy failing before any kernel finds no previous launch's count.
  kernels_issued_ = 0;
  Event kernels;
  try {
    if (!step.before.empty()) {
      before.reserve(step.before.size());
      for (const RecordedCopy& copy : step.before) before.push_back(replay_copy(copy));
    }
    kernels = submit_kernels(args, entry.plan, partition_events, Ordering::periodic, false);
    if (!step.after.empty()) {
      after.reserve(step.after.size());
      for (const RecordedCopy& copy : step.after) after.push_back(replay_copy(copy));
    }
  } catch (...) {
    // The state stays the previous step's; what this one issued is recorded after it, so later
    // operations wait for it.
    EventList issued_before;
    EventList kernel_events;
    EventList issued_after;
    issued_before.swap(before);
    kernel_events.swap(deferred_scratch_);
    kernel_events.resize(kernels_issued_);  // (the others: a previous replay's)
    issued_after.swap(after);
    // The step's recorded copies, copied before the materialization (which records the step's
    // previous replay with them) forgets the cycle's steps.
    const std::vector<RecordedCopy> copies_before = step.before;
    const std::vector<RecordedCopy> copies_after = step.after;
    materialize_period_locked();
    for (std::size_t i = 0; i < issued_before.size(); ++i) {
      copies_before[i].buffer->record_replayed_copy(copies_before[i].rows, issued_before[i]);
    }
    for (std::size_t i = 0; i < kernel_events.size(); ++i) {
      record_accesses(entry.plan[i], kernel_events[i]);
      last_kernel_[entry.plan[i].source->device] = kernel_events[i];
    }
    for (std::size_t i = 0; i < issued_after.size(); ++i) {
      copies_after[i].buffer->record_replayed_copy(copies_after[i].rows, issued_after[i]);
    }
    publish_failed_launch_locked(entry.plan, kernel_events.size(),
                                 entry.plan.front().source->kernel->name());
    throw;
  }
  // The previous replay's events of the step: the copies' dropped (the lists stay for the next
  // replay), the kernels' when the next replay overwrites them.
  if (!step.before.empty()) {
    step.before_events.swap(before);
    before.clear();
  }
  step.kernel_events.swap(deferred_scratch_);
  if (!step.after.empty()) {
    step.after_events.swap(after);
    after.clear();
  }
  step.replayed_at = number;
  ++c.replayed;
  ++periodic_replays_;
  ++repeat_epoch_;  // the (replayed) state changed: the repeat path's verifications no longer hold
#if UNIMEM_INVARIANTS_ENABLED
  check_replayed_step(step, c.position);
#endif
  if (++c.position == c.length) c.position = 0;
  context_.memory->settle();
  // As the repeat path does (launch_partitioned).
  entry.last_run = number;
  ++repeated_launches_;
  if (found + 1 != repeatable_.size()) ++cycle_repeats_;
  std::rotate(repeatable_.begin() + static_cast<std::ptrdiff_t>(found),
              repeatable_.begin() + static_cast<std::ptrdiff_t>(found) + 1, repeatable_.end());
  repeat_after_operation_ = operations_;
  return kernels;
}

// The full path's directory steps on the shadow directories (invariant builds): the reads give
// the replayed copies before the kernels, the writes and the replayed copies after them are what
// the directory allows, and the masks end as captured after this step.
void RuntimeCore::check_replayed_step(const PeriodicStep& step, std::size_t index) {
  PeriodicCycle& c = period_;
  const PeerPolicy peer = [this](Agent from, Agent to) { return context_.can_peer(from, to); };
  const auto flat = [](const std::vector<RecordedCopy>& copies, const SharedBuffer* b) {
    std::vector<Transfer> out;
    for (const RecordedCopy& copy : copies) {
      if (copy.buffer == b) out.insert(out.end(), copy.rows.begin(), copy.rows.end());
    }
    return out;
  };
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    const SharedBuffer* b = c.buffers[i];
    Directory& shadow = c.shadow[i];
    const auto fail = [&](const std::string& what) {
      detail::throw_invariant(b->describe() + ": step " + std::to_string(index) +
                                  " of a replayed periodic cycle: " + what,
                              __FILE__, __LINE__);
    };
    std::vector<Transfer> expected;
    std::vector<Transfer> some;
    for (const PartitionUses& pu : *step.plan) {
      for (const BufferUse& u : pu.uses) {
        if (u.buffer != b || u.needed.empty()) continue;
        shadow.apply_device_read(pu.agent, u.needed, peer, some, nullptr);
        expected.insert(expected.end(), some.begin(), some.end());
      }
    }
    if (expected != flat(step.before, b)) {
      fail("the directory gives " + std::to_string(expected.size()) +
           " copies before the kernels, the replay issued others");
    }
    for (const PartitionUses& pu : *step.plan) {
      for (const BufferUse& u : pu.uses) {
        if (u.buffer == b && !u.written.empty()) shadow.apply_device_write(pu.agent, u.written);
      }
    }
    for (const Transfer& t : flat(step.after, b)) {
      const IntervalSet range(t.range);
      const std::vector<Transfer> got = t.to == kHostAgent
                                            ? shadow.apply_host_read(range)
                                            : shadow.apply_device_read(t.to, range, peer);
      if (got.size() != 1 || got.front() != t) {
        fail("the replayed copy " + t.to_string() + " after the kernels is not the directory's");
      }
    }
    if (!shadow.same_masks(step.state[i].directory)) {
      fail("the directory after the launch is not the captured one");
    }
  }
}

void RuntimeCore::materialize_period_locked() const {
  materialize_affine_locked();
  PeriodicCycle& c = period_;
  if (c.phase != PeriodPhase::replaying) return;
  c.phase = PeriodPhase::idle;
  if (c.replayed > 0) {
    const std::size_t last = static_cast<std::size_t>((c.replayed - 1) % c.length);
    // The states after the steps are a round on from the start already: the captured round's
    // (which ran before the replays), or a carried round's (the first replayed round itself).
    const std::uint64_t rounds = (c.replayed - 1) / c.length + (c.adopted ? 0 : 1);
    for (std::size_t i = 0; i < c.buffers.size(); ++i) {
      c.buffers[i]->restore_periodic_state(c.steps[last].state[i], c.start[i],
                                           c.steps[c.length - 1].state[i], rounds);
    }
    std::vector<const PeriodicStep*> order;
    for (const PeriodicStep& step : c.steps) {
      if (step.replayed_at != 0) order.push_back(&step);
    }
    std::sort(order.begin(), order.end(), [](const PeriodicStep* a, const PeriodicStep* b) {
      return a->replayed_at < b->replayed_at;
    });
    for (const PeriodicStep* step : order) {
      for (std::size_t i = 0; i < step->before.size(); ++i) {
        step->before[i].buffer->record_replayed_copy(step->before[i].rows, step->before_events[i]);
      }
      for (std::size_t i = 0; i < step->kernel_events.size(); ++i) {
        record_accesses((*step->plan)[i], step->kernel_events[i]);
        // (replay_period_step leaves the devices' last kernels to this: each its newest)
        last_kernel_[(*step->plan)[i].source->device] = step->kernel_events[i];
      }
      for (std::size_t i = 0; i < step->after.size(); ++i) {
        step->after[i].buffer->record_replayed_copy(step->after[i].rows, step->after_events[i]);
      }
    }
    chained_after_ = operations_ + 1;  // the next launch orders through the trackers
    ++periodic_materializations_;
    deferred_scratch_.clear();  // older replays' kernels (replay_period_step)
  }
  carry_period_locked();
  reset_period_storage();
  c.failed_rounds = 0;
}

// Carried rounds. A program that makes its buffers anew for every solve (`unimem bench`'s runs,
// a solver called again) learns its cycle anew each time: the launches that build the repeat,
// the probe round of an adaptive cycle and the captured round run the full path before the
// replay begins. The verified round of the last materialized cycle is therefore kept
// (carry_period_locked: its copies, the states of its buffers at its start and after each step,
// and each step's plan, with the buffers named by their place in the cycle's buffer list), and
// a round that is about to be captured between launches (end_period_step, after a probe or a
// round that was not periodic: start_period_round took its start state) replays it instead
// (adopt_carried_round) when:
// - the cycle has the same length and as many buffers, of the same sizes and strategies, and
//   the measurement mode is the one the carried round ran in;
// - each step's plan is the carried step's with buffer i of this cycle for buffer i of the
//   carried one: the same partitions (agent, kernel name) using, in the same order, the same
//   bytes (access sets, needed, written) in the same boxes;
// - each buffer's state now is the carried start's but for which allocations hold it
//   (SharedBuffer::same_but_allocations: the same masks, evicted and never-written bytes, last
//   writes, histories and ledgers with equal counts, allocations of the same sizes holding the
//   same bytes on each device);
// - every step's boxes are on their devices (as end_period_step checks before a replay).
// Why the carried round is then this cycle's verified round: the directory, history, ledger
// and strategy steps of a launch read only the states of its buffers, its plan's agents, bytes
// and kernel name, and the buffers' strategies; nothing of them depends on which buffer or
// which allocation it is (a copy names its rows by agents and buffer bytes, and finds its
// allocations through the residency when it is issued). So from a state equal to the carried
// start under the renaming, this round's launches issue the carried copies (renamed) and reach
// the carried states after each step (renamed, with this cycle's allocations, which nothing in
// the round changes: the carried round ended where it started, allocations included, and an
// allocation only changes by being allocated, merged, evicted or released); the last of them
// acts as the carried start (verified when it was captured), so acts as the state now. That is
// what a capture of this round would have found and verified, with equal counts (the state
// taken now serves as the round's start: restore_periodic_state adds rounds from it), so the
// replay begins as it would have after the capture, one round earlier. The states after the
// steps then hold the growth of a round that is itself replayed (a captured round's ran before
// its replays), so materialization adds one round fewer (PeriodicCycle::adopted). Invariant builds
// check each replayed step against the directory's own actions (check_replayed_step) as for a
// captured round. The carried round names no buffer and holds no event: it survives the
// release of its buffers, and is carried again when the adopted cycle is materialized.
void RuntimeCore::carry_period_locked() const {
  PeriodicCycle& c = period_;
  CarriedRound& k = carried_;
  k.valid = false;
  if (c.length == 0 || c.steps.size() < c.length) return;
  const auto place = [&c](const SharedBuffer* b) {
    return static_cast<std::size_t>(std::find(c.buffers.begin(), c.buffers.end(), b) -
                                    c.buffers.begin());
  };
  k.mode = measurement_.mode();
  k.sizes.clear();
  k.strategies.clear();
  for (const SharedBuffer* b : c.buffers) {
    k.sizes.push_back(b->size());
    k.strategies.push_back(strategy_for(*b));
  }
  k.start.swap(c.start);
  k.steps.resize(c.length);
  for (std::size_t i = 0; i < c.length; ++i) {
    PeriodicStep& step = c.steps[i];
    CarriedStep& to = k.steps[i];
    to.plan.clear();
    for (const PartitionUses& pu : *step.plan) {
      CarriedPartition p{pu.agent, pu.source->kernel->name(), {}};
      for (const BufferUse& u : pu.uses) {
        p.uses.push_back({place(u.buffer), u.bytes, u.needed, u.written, u.box});
      }
      to.plan.push_back(std::move(p));
    }
    to.before_buffers.clear();
    for (const RecordedCopy& copy : step.before) to.before_buffers.push_back(place(copy.buffer));
    to.after_buffers.clear();
    for (const RecordedCopy& copy : step.after) to.after_buffers.push_back(place(copy.buffer));
    to.before.swap(step.before);
    to.after.swap(step.after);
    for (RecordedCopy& copy : to.before) copy.buffer = nullptr;
    for (RecordedCopy& copy : to.after) copy.buffer = nullptr;
    to.state.swap(step.state);
  }
  k.valid = true;
}

bool RuntimeCore::carried_round_matches() const {
  const PeriodicCycle& c = period_;
  const CarriedRound& k = carried_;
  if (!k.valid || k.mode != measurement_.mode() || k.steps.size() != c.length ||
      k.sizes.size() != c.buffers.size() || c.start.size() != c.buffers.size()) {
    return false;
  }
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    if (c.buffers[b]->size() != k.sizes[b] || strategy_for(*c.buffers[b]) != k.strategies[b]) {
      return false;
    }
  }
  for (std::size_t i = 0; i < c.length; ++i) {
    const std::vector<PartitionUses>& plan = *c.steps[i].plan;
    const std::vector<CarriedPartition>& carried = k.steps[i].plan;
    if (plan.size() != carried.size()) return false;
    for (std::size_t p = 0; p < plan.size(); ++p) {
      const PartitionUses& pu = plan[p];
      const CarriedPartition& cp = carried[p];
      if (pu.agent != cp.agent || pu.uses.size() != cp.uses.size() ||
          pu.source->kernel->name() != cp.kernel) {
        return false;
      }
      for (std::size_t j = 0; j < pu.uses.size(); ++j) {
        const BufferUse& u = pu.uses[j];
        const CarriedUse& cu = cp.uses[j];
        if (cu.buffer >= c.buffers.size() || c.buffers[cu.buffer] != u.buffer ||
            !(u.bytes == cu.bytes) || u.needed != cu.needed || u.written != cu.written ||
            !(u.box == cu.box)) {
          return false;
        }
        if (!u.buffer->residency().covers(device_of_agent(pu.agent), u.box)) return false;
      }
    }
  }
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    if (!SharedBuffer::same_but_allocations(c.start[b], k.start[b])) return false;
  }
  return true;
}

bool RuntimeCore::adopt_carried_round() {
  PeriodicCycle& c = period_;
  if (!carried_round_matches()) return false;
  CarriedRound& k = carried_;
  for (std::size_t i = 0; i < c.length; ++i) {
    PeriodicStep& step = c.steps[i];
    CarriedStep& from = k.steps[i];
    step.before.swap(from.before);
    step.after.swap(from.after);
    step.state.swap(from.state);
    for (std::size_t j = 0; j < step.before.size(); ++j) {
      step.before[j].buffer = c.buffers[from.before_buffers[j]];
    }
    for (std::size_t j = 0; j < step.after.size(); ++j) {
      step.after[j].buffer = c.buffers[from.after_buffers[j]];
    }
    // The round changes no allocation: every step's are the ones held now.
    for (std::size_t b = 0; b < c.buffers.size(); ++b) {
      step.state[b].residency = c.start[b].residency;
    }
  }
  k.valid = false;  // its storage serves the cycle now; its materialization carries it again
  ++periodic_carried_rounds_;
  begin_period_replay();
  c.adopted = true;
  return true;
}

// Affine replays. floyd-warshall's launches are no repeats (the pivot row k moves, so every launch
// has its own plan), but each is a rewriting launch (SharedBuffer::acquire_rewriting_last_writes):
// it writes exactly the buffer's last writes W_1..W_m on agents a_1..a_m again, so the directory
// D after it is the one before it (each a_i alone holds W_i), and its copies are forced: each
// use's needed bytes outside its own W lie in one other W_i, copied from a_i, their only holder.
// The directory steps then cost little; what remains per launch is the hazard trackers: every
// copy and kernel asks them and records in them. A family of such launches replays on the
// periodic cycles' per-agent chains instead ("Periodic cycles", Ordering):
// - Entry (affine_applies): the launch before was a coherent launch of an aligned plan
//   (uses_aligned) whose every buffer took the rewrite and restarted its history's run in its
//   publication (note_affine_candidate: a family of restarts under way, so the next launch's
//   publication may only count), with nothing in between; this one has the same kernel, partitions
//   on the same agents, the same buffers at the same places, every buffer adaptive, every box on
//   its device already (hold_buffers allocates nothing, so nothing is evicted or merged: no copy of
//   another operation is issued through the trackers while they lack the family's records), and
//   prepare_rewrite holds for every buffer (conditions (a)-(c) above acquire_rewriting_last_writes:
//   the state is still D, its written sets are the last writes, every missing byte has one holder
//   that can peer). So the state after each replayed launch is D again, which is what the next
//   launch's prepare_rewrite checks; no captured state is compared, the version check is as strong.
// - Each replayed launch runs the full path's steps but for the trackers: its plan (as always),
//   its holds, apply_rewrite of every buffer in plan order (the same history, ledger and stats
//   calls and the same copies, the directory checked against a shadow in invariant builds), the
//   kernels, and the publication (publish_affine_writes): each buffer's is one more deferred
//   restart of its family (SharedBuffer::publish_rewrite_counting: no copy, no history call)
//   while it may be. Every counter, history, ledger and directory is thus as the full path
//   leaves it. A publication that may copy (restart_run, a strategy's copies) is made as the
//   full path makes it after the family's orderings are recorded (below), ending the replay.
// - Ordering: every copy (issue_all_chained) and kernel (Ordering::periodic) waits for the
//   chains of the agents it touches and becomes their last operation; the chains start from
//   everything the agents' trackers hold on the family's buffers and each device's last kernel
//   (start_replay_chains, as begin_period_replay). So every replayed operation runs after every
//   earlier operation on each agent it touches, a superset of what the trackers give (see
//   "Periodic cycles": trackers are per agent). The devices' last kernels (last_kernel_) are
//   set at the materialization, from the last replayed launch's kernels.
// - Materialization (materialize_affine_locked, through materialize_period_locked: before any
//   other operation, const query or the destructor; and before a publication that may copy,
//   or after a failure): replayed operations run on the partitions' agents only (a copy's
//   source wrote its bytes in a partition, its destination reads them in one). On each, the
//   chain holds the agent's last replayed operation L (or, when none ran there, what its
//   trackers held at entry, taken together with when_all), which runs after every replayed
//   operation on the agent and after everything its trackers held at entry. Recording L in
//   each of the family's trackers of that agent as a write of the whole buffer makes every later
//   operation touching the buffer on that agent wait for L, hence for all of them (and for the
//   accesses the write shadows, all before L): more waiting than the exact records, never less.
//   The next launch orders through the trackers (chained_after_).
// It relies on: the rewrite proof (directory), publish_rewrites' family (history), the ledger
// calls made as the full path makes them, the chains' ordering argument, and no allocation or
// eviction during the family. Invariant builds check the copies and the directory at every
// replayed launch (apply_rewrite's shadow) and the chains at entry (check_replay_chains).
bool RuntimeCore::affine_applies(std::span<PartitionUses> plan, const std::string& kernel,
                                 bool coherent) {
  AffineFamily& f = affine_;
  if (!coherent || !repeat_fast_path_ || plan.empty()) return false;
  if (!f.replaying && (f.candidate == 0 || f.candidate + 1 != operations_)) return false;
  if (deferred_pending_ || period_.phase == PeriodPhase::replaying) return false;
  if (plan.size() != f.agents.size() || (kernel.data() != f.kernel_name && kernel != f.kernel)) {
    return false;
  }
  // Buffer j's uses in plan order at [j * partitions, (j + 1) * partitions), kept for
  // acquire_affine_inputs.
  const std::size_t buffers = f.buffers.size();
  const std::size_t partitions = plan.size();
  std::vector<SharedBuffer::LaunchUse>& uses = rewriting_uses_;
  if (uses.size() != buffers * partitions) uses.resize(buffers * partitions);
  for (std::size_t i = 0; i < partitions; ++i) {
    const PartitionUses& pu = plan[i];
    if (pu.source->out_of_core || pu.agent != f.agents[i] || pu.uses.size() != buffers) {
      return false;
    }
    for (std::size_t j = 0; j < buffers; ++j) {
      const BufferUse& u = pu.uses[j];
      if (u.buffer != f.buffers[j]) return false;
      // The box on its device already: inside the run found last time while the residency is
      // unchanged, else searched for (and that run kept for the next launch).
      const Residency& residency = u.buffer->residency();
      AffineFamily::HeldRun& held = f.held[j * partitions + i];
      if (held.changes != residency.changes() || u.box.is_packed() ||
          u.box.bytes.begin < held.bytes.begin || held.bytes.end < u.box.bytes.end) {
        const std::size_t device = device_of_agent(pu.agent);
        if (device >= residency.device_count() || u.box.bytes.end > residency.buffer_size()) {
          return false;  // (find's preconditions: covers would say no)
        }
        const std::optional<ResidentAllocation> a = residency.find(device, u.box);
        if (!a) return false;
        held = a->is_packed()
                   ? AffineFamily::HeldRun{}
                   : AffineFamily::HeldRun{Interval{a->base, a->base + a->allocation.size},
                                           residency.changes()};
      }
      uses[j * partitions + i] = {pu.agent, &u.needed, &u.written};
    }
  }
  for (std::size_t j = 0; j < buffers; ++j) {
    SharedBuffer* b = f.buffers[j];
    if (strategy_for(*b) != UpdateStrategy::adaptive ||
        !b->prepare_rewrite(std::span(uses.data() + j * partitions, partitions))) {
      return false;
    }
  }
  return true;
}

void RuntimeCore::note_affine_candidate(std::span<const PartitionUses> plan,
                                        const std::string& kernel, std::uint64_t number) {
  AffineFamily& f = affine_;
  if (!repeat_fast_path_) return;
  f.candidate = number;
  if (f.replaying) return;  // (the family's own: the same kernel, agents and buffers)
  f.kernel = kernel;
  f.kernel_name = kernel.data();
  f.agents.clear();
  f.devices.clear();
  for (const PartitionUses& pu : plan) {
    f.agents.push_back(pu.agent);
    f.devices.push_back(pu.source->device);
  }
  f.buffers.clear();
  for (const BufferUse& u : plan.front().uses) f.buffers.push_back(u.buffer);
  f.held.assign(f.buffers.size() * f.agents.size(), AffineFamily::HeldRun{});
}

void RuntimeCore::begin_affine_replay() {
  start_replay_chains(affine_.buffers);
  affine_.kernels = 0;
  affine_.replaying = true;
}

void RuntimeCore::acquire_affine_inputs(std::span<PartitionUses> plan) {
  rewriting_buffers_.clear();
  launch_has_chunks_ = false;
  const std::size_t partitions = plan.size();
  for (std::size_t j = 0; j < affine_.buffers.size(); ++j) {
    SharedBuffer* b = affine_.buffers[j];
    // (prepared by affine_applies, which left the uses in rewriting_uses_)
    b->apply_rewrite(std::span(rewriting_uses_.data() + j * partitions, partitions), period_.chain);
    rewriting_buffers_.push_back(b);
    ++rewriting_launch_buffers_;
    for (std::size_t k = 0; k < plan.size(); ++k) {
      plan[k].uses[j].read_only = &b->rewrite_missing(k);
    }
  }
  rewriting_all_written_ = true;  // every buffer rewrote (publish_writes)
}

void RuntimeCore::publish_affine_writes(const std::string& kernel) {
  // publish_writes of an aligned plan whose every buffer rewrote (rewriting_buffers_), each one
  // more deferred restart of its family when it is; a publication that may copy orders through
  // the trackers, so the family's orderings are recorded there first.
  ++affine_replays_;
  bool replaying = true;
  for (SharedBuffer* b : rewriting_buffers_) {
    const UpdateStrategy strategy = strategy_for(*b);
    if (replaying && b->publish_rewrite_counting(kernel, strategy)) {
      ++restarted_rewrite_runs_;
      continue;
    }
    if (replaying) materialize_affine_locked();
    replaying = false;
    if (b->publish_rewrites(kernel, strategy)) ++restarted_rewrite_runs_;
  }
  rewriting_all_written_ = false;
  rewriting_buffers_.clear();
}

void RuntimeCore::materialize_affine_locked(std::size_t kernels) const {
  AffineFamily& f = affine_;
  if (!f.replaying) return;
  f.replaying = false;
  // The replayed kernels in deferred_scratch_ (the last launch's, kernel i over entry i: the
  // first `kernels` of a launch that failed, the launch's before for the rest) are their
  // devices' last ones, as the full path leaves them.
  const std::size_t issued = std::max(kernels == kAllKernels ? f.kernels : kernels, f.kernels);
  for (std::size_t i = 0; i < issued; ++i) last_kernel_[f.devices[i]] = deferred_scratch_[i];
  // Every replayed operation ran on the partitions' agents only (a copy's source wrote the
  // bytes in a partition, its destination reads them in one). A chain of one event is its
  // agent's last operation; a longer one (nothing ran there yet: a failure came first) is
  // waited for as a whole.
  for (std::size_t i = 0; i < f.agents.size(); ++i) {
    const Agent a = f.agents[i];
    const EventList& chain = period_.chain[a];
    const auto earlier = f.agents.begin() + static_cast<std::ptrdiff_t>(i);
    if (chain.empty() || std::find(f.agents.begin(), earlier, a) != earlier) continue;
    const Event last = chain.size() == 1 ? chain.front() : when_all(chain);
    for (SharedBuffer* b : f.buffers) {
      b->tracker(a).record_write(IntervalSet(Interval{0, b->size()}), last);
    }
  }
  chained_after_ = operations_ + 1;  // the next launch orders through the trackers
  deferred_scratch_.clear();         // (the replayed kernels: their devices' last kernels)
  period_.chain.clear();
  ++affine_materializations_;
}

std::uint64_t RuntimeCore::affine_replays() const {
  std::lock_guard lock(mutex_);
  return affine_replays_;
}

std::uint64_t RuntimeCore::affine_materializations() const {
  std::lock_guard lock(mutex_);
  return affine_materializations_;
}

std::uint64_t RuntimeCore::periodic_carried_rounds() const {
  std::lock_guard lock(mutex_);
  return periodic_carried_rounds_;
}

std::uint64_t RuntimeCore::periodic_replays() const {
  std::lock_guard lock(mutex_);
  return periodic_replays_;
}

std::uint64_t RuntimeCore::periodic_materializations() const {
  std::lock_guard lock(mutex_);
  return periodic_materializations_;
}

std::uint64_t RuntimeCore::periodic_probe_rounds() const {
  std::lock_guard lock(mutex_);
  return periodic_probe_rounds_;
}

}  // namespace unimem
