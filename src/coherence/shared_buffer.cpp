#include "coherence/shared_buffer.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "common/check.hpp"

namespace unimem {

CoherenceContext CoherenceContext::of(std::vector<Device*> devices, std::uint64_t recycle_budget,
                                      std::uint64_t device_memory) {
  CoherenceContext c;
  c.devices = std::move(devices);
  c.allocations = std::make_shared<AllocationCache>(c.devices, recycle_budget);
  c.memory = std::make_shared<DeviceMemory>(c.devices, *c.allocations, device_memory);
  c.trackers = std::make_shared<TrackerPool>();
  const std::size_t n = c.devices.size();
  c.peer.assign(n, std::vector<char>(n, 0));
  for (std::size_t from = 0; from < n; ++from) {
    for (std::size_t to = 0; to < n; ++to) {
      c.peer[from][to] = c.devices[to]->can_copy_from_peer(*c.devices[from]) ? 1 : 0;
    }
  }
  return c;
}

SharedBuffer::SharedBuffer(std::uint32_t id, std::string name, std::uint64_t size,
                           const CoherenceContext& context)
    : id_(id),
      name_(std::move(name)),
      size_(size),
      context_(context),
      home_(context.allocations->allocate_host(size)),  // not zeroed: see home_unwritten_
      home_unwritten_(Interval{0, size}),
      residency_(size, context.devices.size(), *context.allocations, *context.memory, *this),
      directory_(size, context.agent_count()),
      evicted_(context.agent_count()),
      trackers_(context.trackers ? context.trackers->take(context.agent_count())
                                 : std::vector<HazardTracker>(context.agent_count())),
      updates_(size, context.devices.size()),
      prefetch_(context.agent_count()),
      peer_([&context](Agent from, Agent to) { return context.can_peer(from, to); }) {}

SharedBuffer::~SharedBuffer() {
  bool finished = true;
  try {
    wait_all(pending());
  } catch (...) {  // failures were reported through the operations' own events
    finished = false;
  }
  residency_.release_all();
  context_.allocations->release_host(std::move(home_), size_);
  // Every event has finished: the trackers' storage can serve the next buffers.
  if (finished && context_.trackers) context_.trackers->give(std::move(trackers_));
}

void SharedBuffer::prepare_home_read(const IntervalSet& bytes) {
  if (home_unwritten_.empty() || !home_unwritten_.intersects(bytes)) return;
  const IntervalSet zero = home_unwritten_.intersect(bytes);
  for (const Interval& i : zero) std::memset(home_.get() + i.begin, 0, i.size());
  home_unwritten_ = home_unwritten_.subtract(zero);
}

void SharedBuffer::home_written(const IntervalSet& bytes) {
  if (home_unwritten_.empty() || !home_unwritten_.intersects(bytes)) return;
  home_unwritten_ = home_unwritten_.subtract(bytes);
}

std::string SharedBuffer::describe() const {
  return "buffer '" + name_ + "' (#" + std::to_string(id_) + ", " + std::to_string(size_) +
         " bytes)";
}

void SharedBuffer::throw_outside(const IntervalSet& ranges, const std::string& what) const {
  throw PreconditionError(describe() + ": " + what + " " + ranges.to_string() +
                          " reaches outside the buffer");
}

DeviceAllocation SharedBuffer::mirror(Agent d) {
  UNIMEM_REQUIRE(d != kHostAgent && d < context_.agent_count(),
                 "SharedBuffer::mirror: agent is not a device");
  return residency_.ensure_whole(device_of_agent(d)).allocation;
}

ResidentAllocation SharedBuffer::begin_use(Agent d, const ResidentBox& box,
                                           Residency::Placement placement) {
  UNIMEM_REQUIRE(d != kHostAgent && d < context_.agent_count(),
                 "SharedBuffer::begin_use: agent is not a device");
  return residency_.begin_use(device_of_agent(d), box, placement);
}

void SharedBuffer::end_use(Agent d, const ResidentBox& box) {
  UNIMEM_REQUIRE(d != kHostAgent && d < context_.agent_count(),
                 "SharedBuffer::end_use: agent is not a device");
  residency_.end_use(device_of_agent(d), box);
}

bool SharedBuffer::busy_on(std::size_t device) const {
  for (const Event& e : trackers_.at(agent_of_device(device)).pending()) {
    if (!e.is_complete()) return true;
  }
  return false;
}

bool SharedBuffer::busy_on(std::size_t device, const Interval& bytes) const {
  return !trackers_.at(agent_of_device(device)).pending_on(IntervalSet(bytes)).empty();
}

bool SharedBuffer::busy_on_rows(std::size_t device, const IntervalSet& rows) const {
  return !trackers_.at(agent_of_device(device)).pending_on(rows).empty();
}

void SharedBuffer::box_out(std::size_t device, const Interval& bytes) {
  box_out_rows(device, IntervalSet(bytes));
}

void SharedBuffer::box_out_rows(std::size_t device, const IntervalSet& all) {
  if (all.empty()) return;
  const Interval bytes = all.bounds();
  const std::int64_t start = context_.trace ? TraceRecorder::now_ns() : 0;
  const std::uint64_t writeback_before = stats_.eviction_writeback_bytes;
  const Agent a = agent_of_device(device);
  const IntervalSet held = all.subtract(directory_.missing_on(a, all));
  // Bytes only this copy holds go home first (read from the allocation still there); then the
  // copy holds nothing, and the allocation is freed once every operation on it has finished.
  const std::vector<Transfer> writeback = directory_.apply_device_eviction(a, all);
  for (const Transfer& t : writeback) stats_.eviction_writeback_bytes += t.range.size();
  issue_all(writeback, kHome, nullptr);
  prefetch_.evicted(a, held);
  stats_.evicted_bytes += held.total_size();
  evicted_[a] = evicted_[a].unite(held);
  // Only the operations on this allocation: those reading or writing its bytes on this device
  // (its other allocations hold other bytes). Waiting for every operation of the device's copy
  // stalled each out-of-core chunk on the previous chunk's kernel.
  wait_all(trackers_[a].pending_on(all));
  if (context_.trace) {
    context_.trace->span(
        TraceLane::evictions, device, TraceCategory::eviction, "evict " + name_, start,
        TraceRecorder::now_ns(),
        {TraceArg::of("buffer", name_), TraceArg::of("range", bytes.to_string()),
         TraceArg::of("evicted_bytes", held.total_size()),
         TraceArg::of("writeback_bytes", stats_.eviction_writeback_bytes - writeback_before)});
  }
}

EventList SharedBuffer::relocate(std::size_t device, const ResidentAllocation& from,
                                 const ResidentAllocation& to) {
  const Agent a = agent_of_device(device);
  UNIMEM_REQUIRE(!from.is_packed(), "SharedBuffer::relocate: packed boxes are never merged");
  const IntervalSet span(from.covers());
  // Nothing waits here (a merge happens inside a launch, and waiting stalled every run whose
  // boxes grew). `from` is freed once everything issued on it has finished: the accesses the
  // tracker knows (device a's copy of these bytes lived only in `from`) and, in measurement
  // gamma, the kernels it does not.
  EventList users = trackers_[a].pending_on(span);
  if (context_.untracked_kernels) context_.untracked_kernels(device, users);
  if (context_.transfers_disabled) return users;  // measurement mode beta: bookkeeping only
  const IntervalSet present = span.subtract(directory_.missing_on(a, span));  // bb_present
  if (present.empty()) return users;
  // bb_readin, device-local: after the writes of the moved bytes. Recorded as writes of them,
  // so later accesses (now on `to`) wait for the copies; the older reads this shadows touched
  // only `from`, which lives until they are done (they are among `users`).
  EventList deps;
  trackers_[a].deps_for_read(present, deps);
  Device& dev = *context_.devices[device];
  EventList copies;
  copies.reserve(present.interval_count());
  for (const Interval& r : present) {
    copies.push_back(dev.copy_device_to_device(from.allocation, from.offset_of(r.begin),
                                               to.allocation, to.offset_of(r.begin), r.size(),
                                               deps));
  }
  // One record for all of them: a box of a strided access may move one copy per row.
  const Event moved = copies.size() == 1 ? copies.front() : when_all(copies);
  trackers_[a].record_write(present, moved);
  ++copies_recorded_;
  users.push_back(moved);
  stats_.relocated_bytes += present.total_size();
  return users;
}

void SharedBuffer::acquire(Agent agent, const IntervalSet& bytes, bool demand) {
  make_current(agent, bytes, demand);
  check_if_enabled();
}

namespace {

// How many transfers from `first` on form the rows of one rectangle: the same two agents, one of
// them the host (drivers copy rects between host and device), equal lengths, a constant stride
// larger than the length (rows that touch would have been one interval).
std::size_t strided_rows(const std::vector<Transfer>& transfers, std::size_t first) {
  const Transfer& t = transfers[first];
  if ((t.from == kHostAgent) == (t.to == kHostAgent) || first + 1 >= transfers.size()) return 1;
  const std::uint64_t len = t.range.size();
  const Transfer& next = transfers[first + 1];
  if (next.range.begin <= t.range.end) return 1;
  const std::uint64_t stride = next.range.begin - t.range.begin;
  std::size_t rows = 1;
  for (std::size_t i = first + 1; i < transfers.size(); ++i) {
    const Transfer& r = transfers[i];
    if (r.from != t.from || r.to != t.to || r.range.size() != len ||
        r.range.begin != transfers[i - 1].range.begin + stride) {
      break;
    }
    ++rows;
  }
  return rows;
}

}  // namespace

bool SharedBuffer::resident(std::size_t device, const IntervalSet& bytes) const {
  if (residency_.covers(device, bytes.bounds())) return true;
  // A packed box holds its bytes row by row; a chunk's arguments far apart in one buffer have a
  // box each (RuntimeCore::split_uses).
  if (residency_.allocations(device).size() < 2 && !residency_.find(device, *bytes.begin())) {
    return false;
  }
  return std::all_of(bytes.begin(), bytes.end(),
                     [&](const Interval& r) { return residency_.covers(device, r); });
}

std::optional<ResidentAllocation> SharedBuffer::rect_allocation(std::size_t device,
                                                                const Interval& first,
                                                                std::uint64_t second_begin,
                                                                const Interval& last) const {
  const Interval bounds{first.begin, last.end};
  if (auto run = residency_.find(device, bounds)) return run;
  std::optional<ResidentAllocation> packed = residency_.find(device, first);
  const std::uint64_t stride = second_begin - first.begin;
  if (!packed || !packed->is_packed() || stride % packed->pitch != 0 || !packed->holds(last)) {
    return std::nullopt;
  }
  return packed;  // the same columns in rows between its first and last: all held
}

void SharedBuffer::make_current(Agent agent, const IntervalSet& bytes, bool demand) {
  if (bytes.empty()) return;
  observe_deferred_rewrite_reads();  // a launch's reads come before this one (none today)
  const bool observe = demand && history_.recording();
  if (agent == kHostAgent) {
    if (observe) history_.observe_read(agent, bytes, directory_.missing_on(agent, bytes));
    if (demand) prefetch_.demand_read(agent, bytes);
    issue_all(directory_.apply_host_read(bytes), kHome, nullptr);
    return;
  }
  if (demand) prefetch_.demand_read(agent, bytes);
  if (!resident(device_of_agent(agent), bytes)) {
    (void)residency_.ensure(device_of_agent(agent), bytes.bounds());
  }
  // A device read learns the bytes it lacked from the same pass over the directory that fetches
  // them (the history needs them; it reads no directory state). The transfer list is the
  // buffer's, reused: a launch's acquires allocate none. Taken out while in use, so a nested
  // make_current (none today) would only allocate.
  std::vector<Transfer> transfers = std::move(transfers_);
  IntervalSet missing;
  directory_.apply_device_read(agent, bytes, peer_, transfers, observe ? &missing : nullptr);
  if (observe) history_.observe_read(agent, bytes, std::move(missing));
  issue_all(transfers, kHome, nullptr);
  transfers.clear();
  transfers_ = std::move(transfers);
}

IntervalSet SharedBuffer::read_direct(const Interval& range, std::byte* out, EventList& copies,
                                      std::vector<std::size_t>* copy_devices) {
  UNIMEM_REQUIRE(range.end <= size_, "SharedBuffer::read_direct: range outside the buffer");
  if (range.empty()) return {};
  const std::vector<Transfer> direct = directory_.stale_at_home(range);
  IntervalSet from_home(range);
  if (!direct.empty()) {
    std::vector<Interval> parts;
    parts.reserve(direct.size());
    for (const Transfer& t : direct) parts.push_back(t.range);
    from_home = from_home.subtract(IntervalSet::from_unsorted(std::move(parts)));
  }
  // Replayed bytes at home that this read uses are consumed (and recorded, so that the replay
  // keeps being predicted); the direct parts are no demand on the home copy.
  prefetch_.demand_read(kHostAgent, from_home);
  if (history_.recording() && !from_home.empty()) {
    settle_restarts();
    history_.observe_read(kHostAgent, from_home, IntervalSet{});
  }
  issue_all(direct, HostSide{out, range.begin}, &copies, copy_devices);
  check_if_enabled();
  return from_home;
}

std::size_t SharedBuffer::copy_group(const std::vector<Transfer>& transfers, std::size_t i) const {
  std::size_t rows = context_.rect_copies ? strided_rows(transfers, i) : 1;
  if (rows > 1) {  // a rect copy reads or writes one allocation on its device side
    const Transfer& t = transfers[i];
    const Agent device_side = t.from == kHostAgent ? t.to : t.from;
    if (!rect_allocation(device_of_agent(device_side), t.range, transfers[i + 1].range.begin,
                         transfers[i + rows - 1].range)) {
      rows = 1;
    }
  }
  return rows;
}

void SharedBuffer::issue_all(const std::vector<Transfer>& transfers, HostSide host,
                             EventList* events, std::vector<std::size_t>* sources) {
  for (std::size_t i = 0; i < transfers.size();) {
    const std::size_t rows = copy_group(transfers, i);
    issue(std::span(transfers).subspan(i, rows), host, events);
    if (sources != nullptr && events != nullptr) {  // one event per issued copy, or none (beta)
      sources->resize(events->size(), device_of_agent(transfers[i].from));
    }
    i += rows;
  }
}

// One copy of `rows`: a single range, or (rect copies) rows of equal length at a constant stride
// between the host and one device. BBMM's boxes of a 2-D array (001_9219257c3045faa0.txt
// section 6) are such rectangles: one clEnqueue{Read,Write}BufferRect moves them all (the
// driver's default is a copy per row).
void SharedBuffer::issue(std::span<const Transfer> rows, HostSide host, EventList* events) {
  const Transfer& t = rows.front();
  UNIMEM_REQUIRE(host.reader == nullptr || (t.to == kHostAgent && t.from != kHostAgent),
                 "SharedBuffer::issue: a reader's memory is only the target of a device read");
  if (context_.copy_log != nullptr && host.reader == nullptr) {
    context_.copy_log->push_back({this, std::vector<Transfer>(rows.begin(), rows.end())});
  }
  if (context_.transfers_disabled) {  // measurement mode beta: bookkeeping only
    // The home bytes the skipped copy would have written count as written, so a later host read
    // does not zero-fill them: otherwise beta does host work that alpha leaves to the copy (a
    // 32 MiB memset per blackscholes run), one reason beta could take longer than alpha.
    if (t.to == kHostAgent && host.reader == nullptr) {
      for (const Transfer& row : rows) home_written(IntervalSet(row.range));
    }
    return;
  }
  const IntervalSet r = rows_of(rows);
  EventList deps;
  trackers_[t.from].deps_for_read(r, deps);
  if (host.reader == nullptr) trackers_[t.to].deps_for_write(r, deps);
  note_reloaded(t.to, r);
  const Event e = copy_rows(rows, r, host, deps);
  // The copy waited for deps_for_read(r) on this tracker; anything recorded here since (a
  // write-back of an eviction that made room for the destination) makes it a plain read.
  trackers_[t.from].record_ordered_read(r, e);
  if (host.reader == nullptr) {
    trackers_[t.to].record_write(r, e);
    prefetch_.copied(t.to, r);
  }
  ++copies_recorded_;
  if (events != nullptr) events->push_back(e);
}

void SharedBuffer::note_reloaded(Agent to, const IntervalSet& r) {
  if (to == kHostAgent) return;
  IntervalSet& gone = evicted_[to];
  if (!gone.empty() && gone.intersects(r)) {
    stats_.reloaded_bytes += gone.intersect(r).total_size();
    gone = gone.subtract(r);
  }
}

// issue_all ordered by per-agent chains instead of the trackers (RuntimeCore, "Affine
// replays"): each copy waits for the chains of its source and destination and becomes their
// last operation; nothing is recorded in a tracker. Called for device-to-device copies of a
// launch's reads only (apply_rewrite), never under measurement beta.
void SharedBuffer::issue_all_chained(const std::vector<Transfer>& transfers,
                                     std::span<EventList> chains) {
  for (std::size_t i = 0; i < transfers.size();) {
    const std::size_t count = copy_group(transfers, i);
    const std::span<const Transfer> rows = std::span(transfers).subspan(i, count);
    const Transfer& t = rows.front();
    note_reloaded(t.to, rows_of(rows));
    const Event e = replay_copy(rows, chains[t.from], chains[t.to], chain_scratch_);
    prefetch_.copied(t.to, rows_of(rows));
    chain_after(chains[t.from], e);
    chain_after(chains[t.to], e);
    i += count;
  }
}

IntervalSet SharedBuffer::rows_of(std::span<const Transfer> rows) {
  if (rows.size() == 1) return IntervalSet(rows.front().range);
  std::vector<Interval> ranges;
  ranges.reserve(rows.size());
  for (const Transfer& row : rows) ranges.push_back(row.range);
  return IntervalSet::from_normalized(std::move(ranges));
}

Event SharedBuffer::copy_rows(std::span<const Transfer> rows, const IntervalSet& r, HostSide host,
                              const EventList& deps) {
  const Transfer& t = rows.front();
  const bool rect = rows.size() > 1;
  const Interval bounds{t.range.begin, rows.back().range.end};
  const std::uint64_t off = t.range.begin;
  const std::uint64_t len = t.range.size();
  const std::uint64_t bytes = r.total_size();
  RectCopy shape;  // rect: the rows as one rectangle; origins are set per direction
  if (rect) {
    const std::uint64_t stride = rows[1].range.begin - off;
    shape.region = {len, rows.size(), 1};
    shape.src_row_pitch = shape.dst_row_pitch = stride;
    shape.src_slice_pitch = shape.dst_slice_pitch = stride * rows.size();
  }
  Event e;
  const std::int64_t submitted = context_.trace ? TraceRecorder::now_ns() : 0;
  // The device allocations that hold the range on each side, and where in them it lies: the
  // source holds it already (found, not touched: a box-out writes back through here, under
  // DeviceMemory's lock); the destination is allocated if it has no room for it yet.
  auto source = [&](Agent a) {
    const std::optional<ResidentAllocation> found =
        rect ? rect_allocation(device_of_agent(a), t.range, rows[1].range.begin, rows.back().range)
             : residency_.find(device_of_agent(a), bounds);
    if (!found) {
      detail::throw_invariant(describe() + ": copy " + t.to_string() +
                                  (rect ? " x " + std::to_string(rows.size()) + " rows" : "") +
                                  " from a device that holds no allocation for it",
                              __FILE__, __LINE__);
    }
    return *found;
  };
  auto held = [&](Agent a) {
    if (rect) {
      if (auto found = rect_allocation(device_of_agent(a), t.range, rows[1].range.begin,
                                       rows.back().range)) {
        return *found;
      }
    }
    return residency_.ensure(device_of_agent(a), bounds);
  };
  // The device side's row pitch of a rect copy: the buffer's stride in a run of bytes; in a
  // packed box, rows `stride` bytes apart lie stride / pitch packed rows apart.
  const auto device_pitch = [&](const ResidentAllocation& side) {
    const std::uint64_t stride = shape.src_row_pitch;
    return side.is_packed() ? stride / side.pitch * side.width : stride;
  };
  if (t.from == kHostAgent) {
    prepare_home_read(r);
    Device& dst = *context_.devices[device_of_agent(t.to)];
    const ResidentAllocation to = held(t.to);
    if (rect) {
      shape.dst_origin = {to.offset_of(off), 0, 0};
      shape.dst_row_pitch = device_pitch(to);
      shape.dst_slice_pitch = shape.dst_row_pitch * rows.size();
      e = dst.copy_host_to_device_rect(home_.get() + off, to.allocation, shape, deps);
    } else {
      e = dst.copy_host_to_device(home_.get() + off, to.allocation, to.offset_of(off), len, deps);
    }
    stats_.host_to_device.add(bytes);
  } else if (t.to == kHostAgent) {
    // Into the home copy, or (read_direct) into the reader's memory, which no tracker orders:
    // the reader's event waits for this copy.
    std::byte* dst = home_.get() + off;
    if (host.reader != nullptr) {
      dst = host.reader + (off - host.reader_begin);
      stats_.direct_read_bytes += bytes;
    } else {
      home_written(r);
    }
    Device& src = *context_.devices[device_of_agent(t.from)];
    const ResidentAllocation from = source(t.from);
    if (rect) {
      shape.src_origin = {from.offset_of(off), 0, 0};
      shape.src_row_pitch = device_pitch(from);
      shape.src_slice_pitch = shape.src_row_pitch * rows.size();
      e = src.copy_device_to_host_rect(from.allocation, dst, shape, deps);
    } else {
      e = src.copy_device_to_host(from.allocation, from.offset_of(off), dst, len, deps);
    }
    stats_.device_to_host.add(bytes);
  } else {
    UNIMEM_REQUIRE(!rect, "SharedBuffer::issue: rect copies run between the host and a device");
    Device& src = *context_.devices[device_of_agent(t.from)];
    Device& dst = *context_.devices[device_of_agent(t.to)];
    const ResidentAllocation to = held(t.to);
    const ResidentAllocation from = source(t.from);
    e = dst.copy_from_peer(src, from.allocation, from.offset_of(off), to.allocation,
                           to.offset_of(off), len, deps);
    stats_.device_to_device.add(len);
  }
  if (context_.trace) {
    trace_copy(Transfer{bounds, t.from, t.to}, e, submitted, bytes, rows.size(),
               host.reader != nullptr);
  }
  return e;
}

void SharedBuffer::trace_copy(const Transfer& t, const Event& e, std::int64_t submitted_ns,
                              std::uint64_t bytes, std::uint64_t rows, bool to_reader) {
  // A copy is drawn on the copy engine of the device whose queue runs it: the destination's for
  // host-to-device and peer copies, the source's for device-to-host.
  TraceCategory category = TraceCategory::copy_d2d;
  const char* direction = "d2d";
  if (t.from == kHostAgent) {
    category = TraceCategory::copy_h2d;
    direction = "h2d";
  } else if (t.to == kHostAgent) {
    category = TraceCategory::copy_d2h;
    direction = "d2h";
  }
  const bool out = t.to == kHostAgent;
  const std::size_t device = device_of_agent(out ? t.from : t.to);
  std::string name = direction;
  name += ' ';
  name += name_;
  context_.trace->operation(
      out ? TraceLane::copy_out : TraceLane::copy_in, device, category, std::move(name), e,
      submitted_ns,
      {TraceArg::of("buffer", name_), TraceArg::of("direction", direction),
       TraceArg::of("bytes", bytes), TraceArg::of("range", t.range.to_string()),
       TraceArg::of("rows", rows), TraceArg::of("from_agent", std::uint64_t{t.from}),
       TraceArg::of("to_agent", std::uint64_t{t.to}),
       TraceArg::of("into", std::string(to_reader ? "reader" : "copy"))});
}

TransferStats SharedBuffer::stats() const {
  TransferStats s = stats_;
  prefetch_.fill(s);
  return s;
}

void SharedBuffer::begin_write() {
  observe_deferred_rewrite_reads();
  if (history_.close()) ++stats_.mispredictions;
  check_if_enabled();
}

void SharedBuffer::after_device_writes(DeviceWrites writes, const std::string& kernel,
                                       UpdateStrategy strategy) {
  for (const auto& [agent, bytes] : writes) {
    prefetch_.overwritten(bytes);
    directory_.apply_device_write(agent, bytes);
  }
  // Remembered for acquire_rewriting_last_writes when the writes are pairwise disjoint (each
  // agent then alone holds its bytes): a launch's are (RuntimeCore checks it).
  last_writes_version_ = kNoVersion;
  bool disjoint = !writes.empty();
  for (std::size_t i = 0; disjoint && i < writes.size(); ++i) {
    for (std::size_t j = i + 1; disjoint && j < writes.size(); ++j) {
      disjoint = !writes[i].second.intersects(writes[j].second);
    }
  }
  if (disjoint) set_last_writes(writes, true);  // a strategy's copies below change the version
  after_writes(strategy, writes, kernel);
  check_if_enabled();
}

void SharedBuffer::set_last_writes(DeviceWrites writes, bool current) {
  if (last_writes_.size() < writes.size()) last_writes_.resize(writes.size());
  AgentMask writers;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    last_writes_[i] = writes[i];
    writers = writers.with(writes[i].first);
  }
  last_writes_count_ = writes.size();
  last_writers_ = writers;
  last_writes_version_ = current ? directory_.version() : kNoVersion;
  // prepare_rewrite's walk wants each writer's bytes as one run, in address order.
  last_write_runs_.clear();
  for (const auto& write : writes) {
    const Agent agent = write.first;
    if (write.second.intervals().size() != 1 ||
        std::any_of(last_write_runs_.begin(), last_write_runs_.end(),
                    [agent](const WriteRun& r) { return r.agent == agent; })) {
      last_write_runs_.clear();
      return;
    }
    last_write_runs_.push_back(WriteRun{write.second.intervals().front(), agent});
  }
  std::sort(last_write_runs_.begin(), last_write_runs_.end(),
            [](const WriteRun& a, const WriteRun& b) { return a.bytes.begin < b.bytes.begin; });
}

void SharedBuffer::after_writes(UpdateStrategy strategy, DeviceWrites writes,
                                const std::string& kernel) {
  settle_restarts();
  if (strategy != UpdateStrategy::adaptive) {
    perform(updates_.after_device_writes(strategy, writes, kernel, history_));
    return;
  }
  // adaptive: the prediction's copies straight from the history, not from a copy of it (the
  // copies after_device_writes would list, in the same order: UpdatePolicy::replays).
  const DemandSequence* replay = updates_.adaptive_prediction(writes, kernel, history_);
  if (replay == nullptr) return;
  // Issued right away, the copies depend on the kernel's events, so they start the moment it
  // completes and overlap whatever runs next.
  begin_replay_copies();
  EndReplayCopies end{prefetch_};
  IntervalSet part;  // the bytes made current when not all of them were
  for (const Demand& d : *replay) {
    if (updates_.replays(d)) replay_copy_to(d.agent, d.bytes, part);
  }
}

namespace {

// Calls f(lo, hi) for each piece [lo, hi) that a and b share, in order, without building their
// intersection.
template <typename F>
void for_each_shared(const IntervalSet& a, const IntervalSet& b, F&& f) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    const std::uint64_t lo = std::max(i->begin, j->begin);
    const std::uint64_t hi = std::min(i->end, j->end);
    if (lo < hi) f(lo, hi);
    if (i->end < j->end) {
      ++i;
    } else {
      ++j;
    }
  }
}

}  // namespace

// Why the directory may stay (acquire_rewriting_last_writes). Let D be the directory right after
// the last after_device_writes, of W_1..W_m on agents a_1..a_m (pairwise disjoint), so
// D(W_i) = {a_i}; the version is unchanged since, and every mask change goes through a counted
// apply_* call, so the directory is still D. The full path runs apply_device_read(b_j, N_j) for
// the uses j = 1..n in plan order, then (after the kernels) apply_device_write(a_i, W_i) for the
// same writes. Bytes of N_j in b_j's own W_i are hits. The rest, X_j, lies in W_i of other agents
// (condition c), whose mask is {a_i} plus the readers before j that lacked the byte: none, the
// X_j being pairwise disjoint. So each is a read miss, served by a peer copy a_i -> b_j (the
// policy's peer_source: the only holder, which can peer), leaving {a_i, b_j}; the bytes missing
// are exactly X_j. Every byte the reads change lies in some W_i, and the writes set each W_i back
// to {a_i}: D again. Skipping both leaves D; the copies, the missing bytes the history observes
// and the ledger's calls are the ones below, in the same order. Anything in between reads no
// mask: the kernels are submitted, and the copies' destination allocations are the launch's held
// boxes. A launch failing before its writes are published leaves D, where the full path would
// leave the readers' bits set: fewer current copies, never a wrong one.
bool SharedBuffer::acquire_rewriting_last_writes(std::span<const LaunchUse> uses) {
  if (!prepare_rewrite(uses)) return false;
  apply_rewrite(uses, {});
  return true;
}

void SharedBuffer::size_rewrite_scratch(std::size_t uses) {
  if (reread_missing_.size() < uses) reread_missing_.resize(uses);
  if (reread_transfers_.size() < uses) reread_transfers_.resize(uses);
}

bool SharedBuffer::prepare_rewrite_general(std::span<const LaunchUse> uses) {
  const std::span<const std::pair<Agent, IntervalSet>> last(last_writes_.data(),
                                                            last_writes_count_);
  std::size_t w = 0;
  for (const LaunchUse& u : uses) {
    if (u.written->empty()) continue;
    if (w == last.size() || last[w].first != u.agent || last[w].second != *u.written) return false;
    ++w;
  }
  if (w != last.size()) return false;
  // Per use, the bytes it lacks and their copies, as the directory would give them (the proof
  // above): computed for every use before anything is done, so a use that does not qualify
  // leaves nothing changed.
  // (Each on its own: publish_rewrites swaps reread_missing_ with the last launch's.)
  for (std::size_t j = 0; j < uses.size(); ++j) {
    const LaunchUse& u = uses[j];
    IntervalSet& lacking = reread_missing_[j];
    std::vector<Transfer>& transfers = reread_transfers_[j];
    transfers.clear();
    lacking.clear();
    // The use that reads only its own rows (floyd-warshall: the partition holding pivot row k,
    // every launch) lacks nothing: its bytes, sorted and apart, lie between their first start
    // and last end, so those within one interval of its own writes need no walk.
    const std::vector<Interval>& need = u.needed->intervals();
    if (need.empty()) continue;
    const Interval span{need.front().begin, need.back().end};
    bool inside_own = false;
    for (const auto& write : last) {
      const std::vector<Interval>& own = write.second.intervals();
      if (write.first == u.agent && own.size() == 1 && own.front().begin <= span.begin &&
          span.end <= own.front().end) {
        inside_own = true;
        break;
      }
    }
    if (inside_own) continue;
    // Else one walk of the needed bytes N along each last write: the writes are pairwise
    // disjoint, so N lies in their union exactly when the bytes it shares with them add up to
    // N's size, and then N minus the reader's own writes is what it shares with the others, each
    // piece copied from that writer (its only holder), which must be able to peer.
    std::uint64_t shared = 0;
    std::size_t sources = 0;
    for (const auto& write : last) {
      // Named, not bound: clang 15 (the fuzzing build) cannot capture a structured binding.
      const Agent agent = write.first;
      if (agent == u.agent) {
        for_each_shared(*u.needed, write.second,
                        [&](std::uint64_t lo, std::uint64_t hi) { shared += hi - lo; });
        continue;
      }
      const std::size_t before = transfers.size();
      for_each_shared(*u.needed, write.second, [&](std::uint64_t lo, std::uint64_t hi) {
        transfers.push_back(Transfer{Interval{lo, hi}, agent, u.agent});
        shared += hi - lo;
      });
      if (transfers.size() == before) continue;
      if (!context_.can_peer(agent, u.agent)) return false;
      ++sources;
    }
    if (shared != u.needed->total_size()) return false;  // bytes outside the writes
    if (transfers.empty()) continue;
    // In address order, as the directory gives them. One source's pieces are apart (N's and its
    // writes' intervals are), so pieces never join: nothing to coalesce. The missing bytes are
    // their union (pieces of two sources may touch: joined).
    if (sources > 1) {
      std::sort(transfers.begin(), transfers.end(),
                [](const Transfer& a, const Transfer& b) { return a.range.begin < b.range.begin; });
    }
    for (const Transfer& t : transfers) lacking.extend_with(t.range);
    for (std::size_t i = 0; i < j; ++i) {
      if (reread_missing_[i].intersects(lacking)) return false;
    }
  }
  return true;
}

// prepare_rewrite when each writer wrote one run (floyd-warshall: a block of rows per partition):
// condition (b) use by use (a use that writes writes its agent's run, in the last writes' order),
// and the same missing bytes and copies from one walk of each use's needed intervals N. A piece of
// N outside the reader's own run R (none when N lies in R: the partition holding pivot row k) is
// covered from the runs in address order, each part copied from that run's writer (its only
// holder); a gap between runs is a byte outside the writes. The pieces come in address order
// (N's intervals are, and the runs are sorted), so the copies need no sort, and the missing
// bytes are their union (the parts of one piece touch: joined).
bool SharedBuffer::prepare_rewrite_runs(std::span<const LaunchUse> uses) {
  const WriteRun* const runs = last_write_runs_.data();
  const std::size_t run_count = last_write_runs_.size();
  std::size_t w = 0;  // the next last write a writing use must write
  for (std::size_t j = 0; j < uses.size(); ++j) {
    const LaunchUse& u = uses[j];
    IntervalSet& lacking = reread_missing_[j];
    std::vector<Transfer>& transfers = reread_transfers_[j];
    transfers.clear();
    lacking.clear();
    // The reader's own run: a writing use's is the last write it must write (each writer has
    // one run), a reader that writes nothing looks its agent up.
    Interval own{};
    const std::vector<Interval>& written = u.written->intervals();
    if (!written.empty()) {
      if (w == last_writes_count_ || last_writes_[w].first != u.agent || written.size() != 1) {
        return false;
      }
      own = last_writes_[w].second.intervals().front();
      if (written.front() != own) return false;
      ++w;
    } else {
      for (std::size_t r = 0; r < run_count; ++r) {
        if (runs[r].agent == u.agent) own = runs[r].bytes;
      }
    }
    // Covers [at, end) from the runs in address order, each part a copy from that run's writer;
    // false at a byte in no run (a gap, or beyond the last: outside the writes) or a writer the
    // reader cannot copy from.
    Agent peered = u.agent;  // the last source can_peer allowed
    const auto cover = [&](std::uint64_t at, std::uint64_t end) {
      std::size_t r = 0;
      while (r < run_count && runs[r].bytes.end <= at) ++r;
      while (at < end) {
        if (r == run_count || runs[r].bytes.begin > at) return false;
        const WriteRun& run = runs[r++];
        if (run.agent != peered) {
          if (!context_.can_peer(run.agent, u.agent)) return false;
          peered = run.agent;
        }
        const Interval part{at, std::min(end, run.bytes.end)};
        transfers.push_back(Transfer{part, run.agent, u.agent});
        lacking.extend_with(part);
        at = part.end;
      }
      return true;
    };
    // Each needed interval's pieces outside own (none, one or two).
    for (const Interval& x : u.needed->intervals()) {
      if (own.empty() || x.end <= own.begin || x.begin >= own.end) {
        if (!cover(x.begin, x.end)) return false;
        continue;
      }
      if (x.begin < own.begin && !cover(x.begin, own.begin)) return false;
      if (x.end > own.end && !cover(own.end, x.end)) return false;
    }
    if (lacking.empty()) continue;
    for (std::size_t i = 0; i < j; ++i) {
      if (reread_missing_[i].intersects(lacking)) return false;
    }
  }
  return w == last_writes_count_;
}

void SharedBuffer::apply_rewrite(std::span<const LaunchUse> uses, std::span<EventList> chains) {
  const std::span<const std::pair<Agent, IntervalSet>> last(last_writes_.data(),
                                                            last_writes_count_);
#if UNIMEM_INVARIANTS_ENABLED
  // The full path on a copy of the directory gives the same copies and missing bytes, and ends
  // where the directory is.
  std::optional<Directory> shadow;
  if (directory_.segment_count() <= 4096) shadow.emplace(directory_);
#endif
  // The history's reads are left for publish_rewrites when the recording holds nothing yet: it
  // then records the missing bytes only, and no other call reaches this history before the
  // launch publishes (or fails: observe_deferred_rewrite_reads), so observing them there is the
  // same; publish_rewrites may then take the whole run at once (AdaptiveHistory::restart_run).
  reread_misses_.clear();
  rewrite_reads_deferred_ = history_.records_misses_only();
  const bool observe = history_.recording() && !rewrite_reads_deferred_;
  if (observe) settle_restarts();  // (a family of restarts leaves the recording empty: none)
  for (std::size_t j = 0; j < uses.size(); ++j) {
    const Agent reader = uses[j].agent;
    const IntervalSet& bytes = *uses[j].needed;
    if (bytes.empty()) continue;
    // As make_current(reader, bytes, true) does, but with the directory's answer known.
    prefetch_.demand_read(reader, bytes);
    const std::vector<Transfer>& transfers = reread_transfers_[j];
#if UNIMEM_INVARIANTS_ENABLED
    // The caller holds allocations covering the bytes (make_current would ensure one).
    if (!resident(device_of_agent(reader), bytes)) {
      detail::throw_invariant(describe() + ": a launch rewriting the last writes reads " +
                                  bytes.to_string() + " on agent " + std::to_string(reader) +
                                  ", which holds no allocation for them",
                              __FILE__, __LINE__);
    }
    if (shadow) {
      std::vector<Transfer> expected;
      IntervalSet missing;
      shadow->apply_device_read(reader, bytes, peer_, expected, &missing);
      if (expected != transfers || missing != reread_missing_[j]) {
        detail::throw_invariant(describe() + ": a launch rewriting the last writes copies " +
                                    std::to_string(transfers.size()) + " ranges missing " +
                                    reread_missing_[j].to_string() + " on agent " +
                                    std::to_string(reader) + ", the directory says " +
                                    std::to_string(expected.size()) + " ranges missing " +
                                    missing.to_string(),
                                __FILE__, __LINE__);
      }
    }
#endif
    if (observe) history_.observe_read(reader, bytes, reread_missing_[j]);
    if (rewrite_reads_deferred_) reread_misses_.push_back({reader, &reread_missing_[j]});
    // Peer copies only (every source is a device that wrote the bytes), which measurement beta
    // skips whole (issue() would return at once for each).
    if (!transfers.empty() && !context_.transfers_disabled) {
      try {
        if (chains.empty()) {
          issue_all(transfers, kHome, nullptr);
        } else {
          issue_all_chained(transfers, chains);
        }
      } catch (...) {
        observe_deferred_rewrite_reads();  // the reads so far, as the calls above would have
        throw;
      }
    }
  }
#if UNIMEM_INVARIANTS_ENABLED
  if (shadow) {
    for (const auto& [agent, bytes] : last) shadow->apply_device_write(agent, bytes);
    if (shadow->segments() != directory_.segments()) {
      detail::throw_invariant(describe() +
                                  ": a launch rewriting the last writes would leave the "
                                  "directory changed",
                              __FILE__, __LINE__);
    }
  }
#endif
  check_if_enabled();
}

void SharedBuffer::observe_deferred_rewrite_reads() {
  settle_restarts();  // the launches before this one came first
  if (!rewrite_reads_deferred_) return;
  rewrite_reads_deferred_ = false;
  // The recording held nothing (records_misses_only), so observe_read reads only the missing
  // bytes: passed for the bytes read too (reread_misses_ keeps no pointer into the launch).
  for (const AdaptiveHistory::Miss& m : reread_misses_) {
    history_.observe_read(m.agent, *m.bytes, *m.bytes);
  }
}

namespace {
// Whether two runs' misses differ as restart_run compares them: their non-empty sets in order.
bool misses_differ(std::span<const AdaptiveHistory::Miss> a,
                   std::span<const AdaptiveHistory::Miss> b) {
  auto i = a.begin();
  auto j = b.begin();
  while (true) {
    while (i != a.end() && i->bytes->empty()) ++i;
    while (j != b.end() && j->bytes->empty()) ++j;
    if (i == a.end() || j == b.end()) return i != a.end() || j != b.end();
    if (i->agent != j->agent || *i->bytes != *j->bytes) return true;
    ++i;
    ++j;
  }
}
}  // namespace

// A family of restarts. restart_run of a launch applies when the recording holds nothing, is the
// launch's kernel on its writers, its entry known, and the misses differ from the entry's
// sequence. After one applied, the recording is left so (open, empty, the same key and entry)
// and the entry's sequence is that launch's misses; while no other call reaches the history
// (every other use settles first: settle_restarts), the next launch's restart_run therefore
// applies exactly when its key is the same and its misses differ from the launch's before, and
// leaves the same again with its own misses. So a run of n such launches is restart_runs with
// the last one's misses and n (AdaptiveHistory::restart_runs), made at the family's end; the
// ledger's calls are made as before, launch by launch.
bool SharedBuffer::continues_restart_family(const std::string& kernel, AgentMask writers) const {
  return restart_family_ && history_.records(kernel, writers) &&
         misses_differ(reread_misses_, reread_misses_before_);
}

bool SharedBuffer::publish_rewrite_counting(const std::string& kernel, UpdateStrategy strategy) {
  if (!rewrite_reads_deferred_ || strategy != UpdateStrategy::adaptive) return false;
  const AgentMask writers = last_writers();
  if (!continues_restart_family(kernel, writers)) return false;
  count_deferred_restart(kernel, writers);
  end_restarted_publish();
  return true;
}

void SharedBuffer::count_deferred_restart(const std::string& kernel, AgentMask writers) {
#if UNIMEM_INVARIANTS_ENABLED
  // The shadow takes the calls restart_run stands for (a copy knows no entry yet): they must
  // restart the count, report no misprediction and predict nothing.
  bool full_restarts = true;
  if (restart_shadow_) {
    AdaptiveHistory& full = *restart_shadow_;
    const std::uint64_t before = full.restarts();
    for (const AdaptiveHistory::Miss& m : reread_misses_) {
      full.observe_read(m.agent, *m.bytes, *m.bytes);
    }
    full_restarts = !full.close() && full.restarts() == before + 1 &&
                    full.open_prediction(kernel, writers) == nullptr;
  }
  if (!full_restarts) {
    detail::throw_invariant(describe() + ": a deferred restart of kernel '" + kernel +
                                "' is one restart_run would not take",
                            __FILE__, __LINE__);
  }
#else
  (void)kernel;
  (void)writers;
#endif
  ++deferred_restarts_;
  ++deferred_restarts_total_;
}

void SharedBuffer::end_restarted_publish() {
  rewrite_reads_deferred_ = false;
  // This launch's misses are the family's last (the next launch's acquire overwrites the
  // current sets).
  std::swap(reread_missing_, reread_missing_before_);
  std::swap(reread_misses_, reread_misses_before_);
  for (std::size_t i = 0; i < last_writes_count_; ++i) {
    prefetch_.overwritten(last_writes_[i].second);
  }
  check_if_enabled();
}

bool SharedBuffer::publish_rewrites(const std::string& kernel, UpdateStrategy strategy) {
  if (rewrite_reads_deferred_ && strategy == UpdateStrategy::adaptive) {
    // begin_write and after_device_rewrites with the deferred reads observed first: their
    // history calls (observe_read per read, close, open_prediction) in one restart_run when
    // that is all they do (its proof is above its definition); then close() counts no
    // misprediction and the open answers no prediction, so nothing is replayed, and the
    // ledger's calls (independent of the history) remain.
    const AgentMask writers = last_writers();
    bool restarted = false;
    if (continues_restart_family(kernel, writers)) {
      count_deferred_restart(kernel, writers);
      restarted = true;
    } else {
      settle_restarts();
      restarted = history_.restart_run(kernel, writers, reread_misses_);
      if (restarted) {
        restart_family_ = true;
#if UNIMEM_INVARIANTS_ENABLED
        restart_shadow_.emplace(history_);
#endif
      }
    }
    if (restarted) {
      end_restarted_publish();
      return true;
    }
  }
  begin_write();
  after_device_rewrites(kernel, strategy);
  return false;
}

void SharedBuffer::make_deferred_restarts() const {
  restart_family_ = false;
  if (deferred_restarts_ != 0) {
    history_.restart_runs(reread_misses_before_, deferred_restarts_);
    deferred_restarts_ = 0;
  }
#if UNIMEM_INVARIANTS_ENABLED
  if (restart_shadow_ && !history_.same_as(*restart_shadow_)) {
    detail::throw_invariant(describe() +
                                ": the deferred restarts leave another history than "
                                "restart_run of each launch",
                            __FILE__, __LINE__);
  }
  restart_shadow_.reset();
#endif
}

void SharedBuffer::after_device_rewrites(const std::string& kernel, UpdateStrategy strategy) {
  // The directory already is what the writes leave (acquire_rewriting_last_writes), and the
  // writes are the last writes, which stay as they were.
  const DeviceWrites writes(last_writes_.data(), last_writes_count_);
  for (const auto& [agent, bytes] : writes) prefetch_.overwritten(bytes);
  after_writes(strategy, writes, kernel);
  check_if_enabled();
}

void SharedBuffer::after_host_write(const IntervalSet& bytes, UpdateStrategy strategy) {
  prefetch_.overwritten(bytes);
  directory_.apply_host_write(bytes);
  perform(updates_.after_host_write(strategy, bytes));
  check_if_enabled();
}

bool SharedBuffer::reread_changes_nothing(Agent agent, const IntervalSet& bytes) const {
  settle_restarts();
  return !history_.read_would_record(agent, bytes) &&
         !prefetch_.unread_on(agent).intersects(bytes) &&
         directory_.missing_on(agent, bytes).empty();
}

bool SharedBuffer::rewrite_changes_nothing(DeviceWrites writes, const std::string& kernel,
                                           UpdateStrategy strategy) const {
  if (strategy != UpdateStrategy::lazy && strategy != UpdateStrategy::adaptive) return false;
  settle_restarts();
  AgentMask writers;
  for (const auto& [agent, bytes] : writes) {
    writers = writers.with(agent);
    for (std::size_t a = 0; a < context_.agent_count(); ++a) {
      if (prefetch_.unread_on(static_cast<Agent>(a)).intersects(bytes)) return false;
    }
    if (!directory_.held_only_by(agent, bytes)) return false;
  }
  if (strategy == UpdateStrategy::lazy) return !history_.recording();
  return history_.repeat_changes_only_count(kernel, writers);
}

void SharedBuffer::count_unchanged_rewrite(int runs) {
  settle_restarts();
  history_.count_unchanged_repeat(runs);
}

bool SharedBuffer::make_current_resident(Agent agent, const IntervalSet& bytes, IntervalSet& part) {
  // One allocation holding all of bytes (a halo's rows inside the device's box: every replay of
  // a stencil's halo) makes the loop below a single make_current of bytes: a device's
  // allocations never meet, so the others hold none of them. No list, no sets to build.
  if (agent == kHostAgent || bytes.empty() ||
      residency_.covers(device_of_agent(agent), bytes.bounds())) {
    make_current(agent, bytes, false);
    return true;
  }
  part = IntervalSet{};
  for (const ResidentAllocation& r : residency_.allocations(device_of_agent(agent))) {
    const IntervalSet held = bytes.intersect(r.box().held_bytes());
    if (held.empty()) continue;
    make_current(agent, held, false);
    part = part.unite(held);
  }
  return false;
}

void SharedBuffer::perform(const PostWriteActions& actions) {
  IntervalSet part;  // the bytes made current when not all of them were
  if (!actions.replay) {
    for (const EagerCopy& c : actions.copies) (void)make_current_resident(c.agent, c.bytes, part);
    return;
  }
  begin_replay_copies();
  EndReplayCopies end{prefetch_};
  for (const EagerCopy& c : actions.copies) replay_copy_to(c.agent, c.bytes, part);
}

// The copies of a replay are prefetches: accounted until a demand read uses them.
void SharedBuffer::begin_replay_copies() { prefetch_.begin_replay(); }

SharedBuffer::EndReplayCopies::~EndReplayCopies() { ledger.end_replay(); }

void SharedBuffer::replay_copy_to(Agent agent, const IntervalSet& bytes, IntervalSet& part) {
  prefetch_.replay_to(agent);
  const IntervalSet& done = make_current_resident(agent, bytes, part) ? bytes : part;
  if (!done.empty()) {
    settle_restarts();
    history_.note_prefetched(agent, done);
  }
}

SharedBuffer::AccessMarks SharedBuffer::access_marks() const {
  AccessMarks marks;
  marks.orders.reserve(trackers_.size());
  for (const HazardTracker& t : trackers_) marks.orders.push_back(t.next_order());
  marks.copies = copies_recorded_;
  return marks;
}

void SharedBuffer::forget_accesses_before(const AccessMarks& marks) {
  UNIMEM_REQUIRE(marks.orders.size() == trackers_.size(),
                 "forget_accesses_before: one mark per agent");
  for (std::size_t a = 0; a < trackers_.size(); ++a) trackers_[a].forget_before(marks.orders[a]);
  // The copies counted in marks were recorded before them, so they are gone now; marks older
  // than ones already forgotten drop nothing more.
  copies_forgotten_ = std::max(copies_forgotten_, marks.copies);
}

EventList SharedBuffer::pending() const {
  EventList out;
  for (const HazardTracker& t : trackers_) {
    const EventList p = t.pending();
    out.insert(out.end(), p.begin(), p.end());
  }
  return unique_pending(std::move(out));
}

SharedBuffer::PeriodicState SharedBuffer::periodic_state() const {
  settle_restarts();
  PeriodicState s{directory_, evicted_, history_, prefetch_, home_unwritten_, {}, false, {}};
  take_periodic_state(s);
  return s;
}

void SharedBuffer::take_periodic_state(PeriodicState& into) const {
  settle_restarts();
  // Copy-assignments (not a new value): each member keeps its storage where it suffices.
  into.directory = directory_;
  into.evicted = evicted_;
  into.history = history_;
  into.prefetch = prefetch_;
  into.home_unwritten = home_unwritten_;
  into.last_writes.assign(last_writes_.begin(),
                          last_writes_.begin() + static_cast<std::ptrdiff_t>(last_writes_count_));
  into.last_writes_current = last_writes_version_ == directory_.version();
  into.residency.resize(context_.devices.size());
  for (std::size_t d = 0; d < context_.devices.size(); ++d) {
    residency_.allocations_into(d, into.residency[d]);
  }
}

namespace {
// What acts_as and same_but_allocations both compare: where the bytes are current and what the
// last writes were (the history, the ledger and the residency each compare in their own way).
bool same_bytes(const SharedBuffer::PeriodicState& a, const SharedBuffer::PeriodicState& b) {
  return a.directory.same_masks(b.directory) && a.evicted == b.evicted &&
         a.home_unwritten == b.home_unwritten && a.last_writes == b.last_writes &&
         a.last_writes_current == b.last_writes_current;
}
}  // namespace

bool SharedBuffer::acts_as(const PeriodicState& a, const PeriodicState& b) {
  return same_bytes(a, b) && a.history.restarts() == b.history.restarts() &&
         a.history.acts_as(b.history) && a.prefetch.acts_as(b.prefetch) &&
         a.residency == b.residency;
}

bool SharedBuffer::same_but_allocations(const PeriodicState& a, const PeriodicState& b) {
  if (!(same_bytes(a, b) && a.history.same_as(b.history) && a.prefetch.same_as(b.prefetch) &&
        a.residency.size() == b.residency.size())) {
    return false;
  }
  for (std::size_t d = 0; d < a.residency.size(); ++d) {
    const std::vector<ResidentAllocation>& x = a.residency[d];
    const std::vector<ResidentAllocation>& y = b.residency[d];
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].allocation.size != y[i].allocation.size || x[i].base != y[i].base ||
          x[i].pitch != y[i].pitch || x[i].width != y[i].width) {
        return false;
      }
    }
  }
  return true;
}

void SharedBuffer::restore_periodic_state(const PeriodicState& at, const PeriodicState& round_start,
                                          const PeriodicState& round_end, std::uint64_t rounds) {
  // The allocations are the round's (hold_buffers allocated nothing, nothing was evicted).
  for (std::size_t d = 0; d < context_.devices.size(); ++d) {
    if (!residency_.holds_exactly(d, at.residency[d])) {
      detail::throw_invariant(describe() + ": a periodic cycle's allocations changed on device " +
                                  std::to_string(d) + " while it was replayed",
                              __FILE__, __LINE__);
    }
  }
  directory_.assign_masks(at.directory);
  evicted_ = at.evicted;
  settle_restarts();  // (then replaced: a family's misses are no longer the entry's)
  history_ = at.history;
  history_.add_rounds(round_start.history, round_end.history, rounds);
  prefetch_ = at.prefetch;
  prefetch_.add_rounds(round_start.prefetch, round_end.prefetch, rounds);
  home_unwritten_ = at.home_unwritten;
  set_last_writes(at.last_writes, at.last_writes_current);
  check_if_enabled();
}

Event SharedBuffer::replay_copy(std::span<const Transfer> rows, std::span<const Event> after_source,
                                std::span<const Event> after_target, EventList& scratch) {
  // beta: as issue(), which gathers no dependencies either (its home bytes: restored)
  if (context_.transfers_disabled) return Event{};
  scratch.assign(after_source.begin(), after_source.end());
  scratch.insert(scratch.end(), after_target.begin(), after_target.end());
  Event e = copy_rows(rows, rows_of(rows), kHome, scratch);
  scratch.clear();
  return e;
}

void SharedBuffer::record_replayed_copy(std::span<const Transfer> rows, const Event& e) {
  if (e.is_null()) return;  // beta issued nothing
  const IntervalSet r = rows_of(rows);
  trackers_[rows.front().from].record_read(r, e);
  trackers_[rows.front().to].record_write(r, e);
  ++copies_recorded_;
}

void SharedBuffer::check_invariants() const {
  auto fail = [this](const std::string& what) {
    detail::throw_invariant("SharedBuffer " + describe() + ": " + what, __FILE__, __LINE__);
  };
  const std::size_t agents = context_.agent_count();
  directory_.check_invariants();
  if (directory_.size() != size_ || directory_.agent_count() != agents) {
    fail("the directory covers " + std::to_string(directory_.size()) + " bytes of " +
         std::to_string(directory_.agent_count()) + " agents, not " + std::to_string(agents));
  }
  if (trackers_.size() != agents) {
    fail(std::to_string(trackers_.size()) + " hazard trackers for " + std::to_string(agents) +
         " agents");
  }
  for (const HazardTracker& t : trackers_) t.check_invariants();
  residency_.check_invariants();
  if (residency_.buffer_size() != size_ || residency_.device_count() != agents - 1) {
    fail("the residency covers " + std::to_string(residency_.buffer_size()) + " bytes on " +
         std::to_string(residency_.device_count()) + " devices");
  }
  history_.check_invariants();
  prefetch_.check_invariants();
  if (prefetch_.replaying()) fail("a replay is still under way between operations");
  home_unwritten_.check_invariants();
  if (!home_unwritten_.empty() && home_unwritten_.bounds().end > size_) {
    fail("unwritten home bytes " + home_unwritten_.to_string() + " reach beyond the buffer");
  }
  // A copy the directory calls current has storage on its device.
  for (const auto& seg : directory_.segments()) {
    seg.value.devices().for_each([&](Agent a) {
      if (!residency_.covers(device_of_agent(a), seg.range)) {
        fail("the directory holds bytes " + seg.range.to_string() + " current on d" +
             std::to_string(device_of_agent(a)) + ", which has no allocation covering them");
      }
    });
  }
  // Replayed bytes nobody read are current where they were replayed to: an overwrite drops them.
  for (Agent a = 0; a < agents; ++a) {
    const IntervalSet& unread = prefetch_.unread_on(a);
    if (unread.empty()) continue;
    if (unread.bounds().end > size_) {
      fail("unread replayed bytes " + unread.to_string() + " reach beyond the buffer");
    }
    const IntervalSet stale = directory_.missing_on(a, unread);
    if (!stale.empty()) {
      fail("replayed bytes " + stale.to_string() + " count as unread on " +
           AgentMask::of(a).to_string() + " but are not current there");
    }
  }
}

}  // namespace unimem
