#include "api/runtime.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/check.hpp"

namespace unimem {

namespace {

std::vector<Device*> raw_devices(const DeviceRegistry& registry) {
  std::vector<Device*> out;
  for (const auto& d : registry.devices()) out.push_back(d.get());
  return out;
}

std::string range_text(std::uint64_t offset, std::uint64_t size) {
  return Interval{offset, offset + size}.to_string();
}

// Per partition and buffer: the bytes the device must hold before the kernel, and those it writes.
struct BufferUse {
  SharedBuffer* buffer = nullptr;
  IntervalSet needed;   // reads + may-writes
  IntervalSet written;  // writes + may-writes
};

struct PlannedPartition {
  const LaunchPartition* source = nullptr;
  Agent agent = kHostAgent;
  std::vector<BufferUse> uses;  // one entry per distinct buffer
  std::vector<KernelArg> args;
};

}  // namespace

Runtime::Runtime(DeviceRegistry devices, RuntimeOptions options)
    : registry_(std::move(devices)),
      context_(CoherenceContext::of(raw_devices(registry_), options.recycle_bytes)),
      strategy_(options.strategy),
      measurement_(options.measurement),
      host_queue_("unimem-host") {
  context_.transfers_disabled = measurement_ == MeasurementMode::no_transfers;
  last_kernel_.resize(registry_.size());
  UNIMEM_REQUIRE(!registry_.empty(), "Runtime: at least one device is needed");
  UNIMEM_REQUIRE(registry_.size() < kMaxAgents, "Runtime: at most 63 devices are supported");
}

Runtime::~Runtime() {
  EventList all;
  {
    std::lock_guard lock(mutex_);
    all = inflight_;
  }
  for (const Event& e : all) {
    try {
      e.wait();
    } catch (...) {  // reported through the event itself
    }
  }
  std::lock_guard lock(mutex_);
  buffers_.clear();
}

SharedBuffer& Runtime::buffer_locked(BufferId id) const {
  auto it = buffers_.find(id.value);
  if (it == buffers_.end()) {
    throw PreconditionError("unknown buffer #" + std::to_string(id.value) +
                            " (never created or already released)");
  }
  return *it->second;
}

UpdateStrategy Runtime::strategy_for(const SharedBuffer& b) const {
  return b.strategy_override().value_or(strategy_);
}

void Runtime::track(const Event& e) {
  // Finished events are dropped when the list has doubled since the last pass: amortised O(1)
  // completion queries per operation instead of one per in-flight event (a driver call each).
  if (inflight_.size() >= prune_inflight_at_) {
    std::erase_if(inflight_, [](const Event& x) { return x.is_complete(); });
    prune_inflight_at_ = std::max<std::size_t>(64, 2 * inflight_.size());
  }
  if (!e.is_null()) inflight_.push_back(e);
}

BufferId Runtime::create_buffer(std::uint64_t size, std::string name,
                                std::optional<UpdateStrategy> strategy) {
  std::lock_guard lock(mutex_);
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

void Runtime::release_buffer(BufferId id) {
  std::unique_ptr<SharedBuffer> doomed;
  {
    std::lock_guard lock(mutex_);
    buffer_locked(id);
    auto it = buffers_.find(id.value);
    released_stats_ += it->second->stats();
    doomed = std::move(it->second);
    buffers_.erase(it);
  }
  doomed.reset();  // waits for its pending operations outside the lock
}

std::uint64_t Runtime::buffer_size(BufferId id) const {
  std::lock_guard lock(mutex_);
  return buffer_locked(id).size();
}

void Runtime::set_strategy(UpdateStrategy strategy) {
  std::lock_guard lock(mutex_);
  strategy_ = strategy;
}

UpdateStrategy Runtime::strategy() const {
  std::lock_guard lock(mutex_);
  return strategy_;
}

void Runtime::set_buffer_strategy(BufferId id, std::optional<UpdateStrategy> strategy) {
  std::lock_guard lock(mutex_);
  buffer_locked(id).set_strategy_override(strategy);
}

Event Runtime::write(BufferId id, std::uint64_t offset, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
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
  Event e = host_queue_.submit(
      [dst, src = data.data(), n = data.size()] { std::memcpy(dst, src, n); }, deps);
  b.tracker(kHostAgent).record_write(bytes, e);
  if (measurement_ != MeasurementMode::no_coherence) b.after_host_write(bytes, strategy_for(b));
  track(e);
  return e;
}

void Runtime::write_blocking(BufferId id, std::uint64_t offset, std::span<const std::byte> data) {
  write(id, offset, data).wait();
}

Event Runtime::read(BufferId id, std::uint64_t offset, std::span<std::byte> out) {
  std::lock_guard lock(mutex_);
  SharedBuffer& b = buffer_locked(id);
  if (offset > b.size() || out.size() > b.size() - offset) {
    throw PreconditionError(b.describe() + ": host read of " + range_text(offset, out.size()) +
                            " reaches outside the buffer");
  }
  UNIMEM_REQUIRE(out.data() != nullptr || out.empty(), "Runtime::read: null destination");
  if (out.empty()) return Event{};
  const IntervalSet bytes(Interval{offset, offset + out.size()});
  EventList deps;
  if (measurement_ != MeasurementMode::no_coherence) {
    b.acquire(kHostAgent, bytes);
  } else {
    // gamma: no directory; the read waits for every device's last kernel instead.
    for (const Event& k : last_kernel_) {
      if (!k.is_null()) deps.push_back(k);
    }
  }
  b.tracker(kHostAgent).deps_for_read(bytes, deps);
  b.prepare_home_read(bytes);  // bytes nobody wrote read as zero
  const std::byte* src = b.home() + offset;
  Event e = host_queue_.submit(
      [src, dst = out.data(), n = out.size()] { std::memcpy(dst, src, n); }, deps);
  b.tracker(kHostAgent).record_read(bytes, e);
  track(e);
  return e;
}

void Runtime::read_blocking(BufferId id, std::uint64_t offset, std::span<std::byte> out) {
  read(id, offset, out).wait();
}

Event Runtime::launch(const Launch& launch) {
  LaunchPartition p;
  p.device = launch.device;
  p.kernel = launch.kernel;
  p.range = launch.range;
  for (std::size_t i = 0; i < launch.args.size(); ++i) {
    if (launch.args[i].kind == KernelArg::Kind::buffer) p.accesses[i] = launch.args[i].access;
  }
  return launch_partitioned(launch.args, std::span(&p, 1));
}

Event Runtime::launch_partitioned(std::span<const LaunchArg> args,
                                  std::span<const LaunchPartition> partitions,
                                  std::vector<Event>* partition_events) {
  std::lock_guard lock(mutex_);
  UNIMEM_REQUIRE(!partitions.empty(), "launch: at least one partition is needed");

  // Validate everything before touching any state, so a rejected launch changes nothing.
  std::vector<PlannedPartition> plan(partitions.size());
  AgentMask devices_used;
  for (std::size_t pi = 0; pi < partitions.size(); ++pi) {
    const LaunchPartition& p = partitions[pi];
    const std::string kname = p.kernel ? "'" + p.kernel->name() + "'" : std::string("(null)");
    if (!p.kernel)
      throw PreconditionError("launch: partition " + std::to_string(pi) + " has no kernel");
    if (p.device >= registry_.size()) {
      throw PreconditionError("launch of kernel " + kname + ": unknown device " +
                              std::to_string(p.device) + " (the runtime has " +
                              std::to_string(registry_.size()) + " devices)");
    }
    const Agent agent = agent_of_device(p.device);
    if (devices_used.contains(agent)) {
      throw PreconditionError("launch of kernel " + kname + ": device " + std::to_string(p.device) +
                              " has more than one partition");
    }
    devices_used = devices_used.with(agent);
    for (const auto& [index, access] : p.accesses) {
      if (index >= args.size() || args[index].kind != KernelArg::Kind::buffer) {
        throw PreconditionError("launch of kernel " + kname + ": access sets given for argument " +
                                std::to_string(index) + ", which is not a buffer argument");
      }
    }
    PlannedPartition& pp = plan[pi];
    pp.source = &p;
    pp.agent = agent;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      if (a.kind != KernelArg::Kind::buffer) continue;
      SharedBuffer& b = buffer_locked(a.buffer);
      auto it = p.accesses.find(i);
      const AccessBytes none;
      const AccessBytes& acc = it == p.accesses.end() ? none : it->second;
      const std::string where = "kernel " + kname + " argument " + std::to_string(i);
      b.require_inside(acc.reads, where + " read set");
      b.require_inside(acc.writes, where + " write set");
      b.require_inside(acc.may_writes, where + " may-write set");
      auto use = std::find_if(pp.uses.begin(), pp.uses.end(),
                              [&](const BufferUse& u) { return u.buffer == &b; });
      if (use == pp.uses.end()) use = pp.uses.insert(pp.uses.end(), BufferUse{&b, {}, {}});
      use->needed = use->needed.unite(acc.reads).unite(acc.may_writes);
      use->written = use->written.unite(acc.writes).unite(acc.may_writes);
    }
  }
  // Partitions run concurrently on separate copies, so two writing one byte would race.
  for (std::size_t i = 0; i < plan.size(); ++i) {
    for (std::size_t j = i + 1; j < plan.size(); ++j) {
      for (const BufferUse& u : plan[i].uses) {
        for (const BufferUse& v : plan[j].uses) {
          if (u.buffer == v.buffer && u.written.intersects(v.written)) {
            throw PreconditionError("launch: partitions " + std::to_string(i) + " and " +
                                    std::to_string(j) + " both write " +
                                    u.written.intersect(v.written).to_string() + " of " +
                                    u.buffer->describe());
          }
        }
      }
    }
  }

  // Phase 1: every partition's reads are made current first, so each partition reads the state
  // before the launch (DESIGN.md invariant 5); copies feeding one partition from another's device
  // are recorded as readers there, so that device's kernel waits for them (WAR).
  const bool coherent = measurement_ != MeasurementMode::no_coherence;
  for (PlannedPartition& pp : plan) {
    if (!coherent) break;  // gamma: no dependency resolution, no copies
    for (BufferUse& u : pp.uses) u.buffer->acquire(pp.agent, u.needed);
  }
  // Phase 2: the kernels, each after the copies and earlier accesses it conflicts with.
  EventList kernel_events;
  for (PlannedPartition& pp : plan) {
    EventList deps;
    for (BufferUse& u : pp.uses) {
      if (!coherent) break;
      u.buffer->tracker(pp.agent).deps_for_read(u.needed, deps);
      u.buffer->tracker(pp.agent).deps_for_write(u.written, deps);
    }
    if (!coherent && !last_kernel_[pp.source->device].is_null()) {
      deps.push_back(last_kernel_[pp.source->device]);
    }
    std::vector<KernelArg> kargs;
    kargs.reserve(args.size());
    for (const LaunchArg& a : args) {
      switch (a.kind) {
        case KernelArg::Kind::buffer:
          kargs.push_back(KernelArg::of_buffer(buffer_locked(a.buffer).mirror(pp.agent)));
          break;
        case KernelArg::Kind::scalar: {
          KernelArg k;
          k.kind = KernelArg::Kind::scalar;
          k.scalar_bytes = a.scalar_bytes;
          kargs.push_back(std::move(k));
          break;
        }
        case KernelArg::Kind::local_memory:
          kargs.push_back(KernelArg::of_local(a.local_bytes));
          break;
      }
    }
    Device& dev = registry_.at(pp.source->device);
    Event e = dev.launch(*pp.source->kernel, pp.source->range, kargs, deps);
    e.on_complete([keep = pp.source->kernel] {});  // the kernel object lives until it has run
    last_kernel_[pp.source->device] = e;
    for (BufferUse& u : pp.uses) {
      if (!coherent) break;
      u.buffer->tracker(pp.agent).record_read(u.needed, e);
      u.buffer->tracker(pp.agent).record_write(u.written, e);
    }
    if (partition_events != nullptr) partition_events->push_back(e);
    kernel_events.push_back(e);
    track(e);
  }
  // Phase 3: the directory learns the writes; strategies act on them.
  std::vector<SharedBuffer*> written_buffers;
  for (const PlannedPartition& pp : plan) {
    if (!coherent) break;
    for (const BufferUse& u : pp.uses) {
      if (!u.written.empty() && std::find(written_buffers.begin(), written_buffers.end(),
                                          u.buffer) == written_buffers.end()) {
        written_buffers.push_back(u.buffer);
      }
    }
  }
  for (SharedBuffer* b : written_buffers) {
    std::vector<std::pair<Agent, IntervalSet>> writes;
    for (const PlannedPartition& pp : plan) {
      for (const BufferUse& u : pp.uses) {
        if (u.buffer == b && !u.written.empty()) writes.emplace_back(pp.agent, u.written);
      }
    }
    b->begin_write();
    b->after_device_writes(writes, partitions[0].kernel->name(), strategy_for(*b));
  }
  return kernel_events.size() == 1 ? kernel_events[0] : when_all(kernel_events);
}

void Runtime::set_measurement(MeasurementMode mode) {
  finish();
  std::lock_guard lock(mutex_);
  if (!buffers_.empty()) {
    throw PreconditionError(
        "Runtime::set_measurement: " + std::to_string(buffers_.size()) +
        " buffer(s) still live (first: " + buffers_.begin()->second->describe() +
        "); release every buffer before switching the measurement mode");
  }
  measurement_ = mode;
  context_.transfers_disabled = mode == MeasurementMode::no_transfers;
}

void Runtime::finish() {
  EventList all;
  {
    std::lock_guard lock(mutex_);
    all = inflight_;
    for (const auto& [id, b] : buffers_) {
      for (const Event& e : b->pending()) add_dependency(all, e);
    }
  }
  wait_all(all);
}

TransferStats Runtime::stats() const {
  std::lock_guard lock(mutex_);
  TransferStats total = released_stats_;
  for (const auto& [id, b] : buffers_) total += b->stats();
  return total;
}

TransferStats Runtime::buffer_stats(BufferId id) const {
  std::lock_guard lock(mutex_);
  return buffer_locked(id).stats();
}

std::string Runtime::stats_json() const {
  std::lock_guard lock(mutex_);
  TransferStats total = released_stats_;
  std::string buffers;
  for (const auto& [id, b] : buffers_) {
    total += b->stats();
    if (!buffers.empty()) buffers += ",";
    std::string escaped;
    for (char c : b->name()) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    buffers += "{\"id\":" + std::to_string(id) + ",\"name\":\"" + escaped +
               "\",\"size\":" + std::to_string(b->size()) + ",\"stats\":" + b->stats().to_json() +
               "}";
  }
  return "{\"total\":" + total.to_json() + ",\"buffers\":[" + buffers + "]}";
}

AgentMask Runtime::valid_agents(BufferId id, std::uint64_t offset) const {
  std::lock_guard lock(mutex_);
  const SharedBuffer& b = buffer_locked(id);
  if (offset >= b.size()) {
    throw PreconditionError(b.describe() + ": offset " + std::to_string(offset) +
                            " outside the buffer");
  }
  return b.directory().mask_at(offset);
}

std::vector<IntervalMap<AgentMask>::Segment> Runtime::directory_segments(BufferId id) const {
  std::lock_guard lock(mutex_);
  return buffer_locked(id).directory().segments();
}

}  // namespace unimem
