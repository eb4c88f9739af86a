#include "device/sim/sim_device.hpp"

#include <algorithm>
#include <utility>

#include "common/check.hpp"
#include "device/sim/sim_event.hpp"

namespace unimem::sim {

SimDevice::SimDevice(std::string name, std::size_t index, std::shared_ptr<SimSystem> system,
                     std::shared_ptr<Device> underlying)
    : name_(std::move(name)),
      index_(index),
      system_(std::move(system)),
      underlying_(std::move(underlying)) {
  UNIMEM_REQUIRE(system_ != nullptr && underlying_ != nullptr,
                 "SimDevice: a system and an underlying device are needed");
  UNIMEM_REQUIRE(index_ < system_->device_count(), "SimDevice: index outside the system");
  clock_ = std::shared_ptr<SimClock>(system_, &system_->clock());
}

std::uint64_t SimDevice::capacity() const { return system_->model().capacity; }

std::uint64_t SimDevice::max_allocation() const {
  return std::min(capacity(), underlying_->max_allocation());
}

DeviceAllocation SimDevice::allocate(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (bytes > capacity() - allocated_) {
      throw DeviceError("allocate on device " + name_ + ": " + std::to_string(bytes) +
                        " bytes requested, " + std::to_string(capacity() - allocated_) + " of " +
                        std::to_string(capacity()) + " bytes free (simulated capacity)");
    }
    allocated_ += bytes;
  }
  try {
    return underlying_->allocate(bytes);
  } catch (...) {
    std::lock_guard lock(mutex_);
    allocated_ -= bytes;
    throw;
  }
}

void SimDevice::free(DeviceAllocation allocation) {
  underlying_->free(allocation);
  std::lock_guard lock(mutex_);
  allocated_ -= std::min(allocated_, allocation.size);
}

SimDevice::Deps SimDevice::translate(std::span<const Event> deps) const {
  Deps out;
  out.real.reserve(deps.size());
  for (const Event& e : deps) {
    const auto* s = dynamic_cast<const SimEventState*>(e.state().get());
    if (s != nullptr && s->clock() == clock_.get()) {
      out.real.push_back(s->real());
      out.ready = std::max(out.ready, s->end());
    } else {
      out.real.push_back(e);  // foreign: ready at the host time, which schedule() adds
    }
  }
  return out;
}

Event SimDevice::simulated(Event real, EngineId engine, double ready, double seconds) const {
  const SimInterval when = clock_->schedule(engine, ready, seconds);
  return Event(std::make_shared<SimEventState>(std::move(real), when.end, clock_));
}

Event SimDevice::copy_over_link(Event real, EngineId engine, const LinkModel& link, double ready,
                                std::uint64_t bytes, EngineId::Kind counted_as,
                                std::size_t counted_on) {
  const double modelled = system_->modelled_copy_bytes(bytes);
  const double seconds = link.seconds(modelled);
  system_->count_copy(counted_on, counted_as, modelled, seconds);
  return simulated(std::move(real), engine, ready, seconds);
}

Event SimDevice::copy_host_to_device(const std::byte* src, DeviceAllocation dst,
                                     std::uint64_t dst_offset, std::uint64_t bytes,
                                     std::span<const Event> deps) {
  Deps d = translate(deps);
  Event real = underlying_->copy_host_to_device(src, dst, dst_offset, bytes, d.real);
  return copy_over_link(std::move(real), system_->host_link_engine(index_, true),
                        system_->model().host_link, d.ready, bytes, EngineId::Kind::host_to_device,
                        index_);
}

Event SimDevice::copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset, std::byte* dst,
                                     std::uint64_t bytes, std::span<const Event> deps) {
  Deps d = translate(deps);
  Event real = underlying_->copy_device_to_host(src, src_offset, dst, bytes, d.real);
  return copy_over_link(std::move(real), system_->host_link_engine(index_, false),
                        system_->model().host_link, d.ready, bytes, EngineId::Kind::device_to_host,
                        index_);
}

Event SimDevice::copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset,
                                       DeviceAllocation dst, std::uint64_t dst_offset,
                                       std::uint64_t bytes, std::span<const Event> deps) {
  Deps d = translate(deps);
  Event real = underlying_->copy_device_to_device(src, src_offset, dst, dst_offset, bytes, d.real);
  // Read and write in device memory: the copy engine of the device's own memory.
  const double modelled = system_->modelled_copy_bytes(bytes);
  const double seconds =
      system_->model().kernel_latency + 2 * modelled / system_->model().memory_bandwidth;
  return simulated(std::move(real), {EngineId::Kind::local_copy, index_}, d.ready, seconds);
}

bool SimDevice::can_copy_from_peer(const Device& source) const {
  if (&source == this) return true;
  const auto* peer = dynamic_cast<const SimDevice*>(&source);
  return peer != nullptr && peer->system_ == system_ &&
         system_->peer_possible(peer->index_, index_) &&
         underlying_->can_copy_from_peer(*peer->underlying_);
}

Event SimDevice::copy_from_peer(const Device& source, DeviceAllocation src,
                                std::uint64_t src_offset, DeviceAllocation dst,
                                std::uint64_t dst_offset, std::uint64_t bytes,
                                std::span<const Event> deps) {
  if (&source == this) {
    return copy_device_to_device(src, src_offset, dst, dst_offset, bytes, deps);
  }
  if (!can_copy_from_peer(source)) {
    throw DeviceError("copy_from_peer: device " + name_ + " cannot read memory of device " +
                      source.name() + " directly (simulated peer links)");
  }
  const auto& peer = static_cast<const SimDevice&>(source);
  Deps d = translate(deps);
  Event real = underlying_->copy_from_peer(*peer.underlying_, src, src_offset, dst, dst_offset,
                                           bytes, d.real);
  // A peer copy occupies the receiving device's peer engine (one incoming copy at a time).
  return copy_over_link(std::move(real), {EngineId::Kind::peer_in, index_},
                        system_->model().peer_link, d.ready, bytes, EngineId::Kind::peer_in,
                        index_);
}

namespace {
std::uint64_t rect_bytes(const RectCopy& rect) {
  return rect.region[0] * rect.region[1] * rect.region[2];
}
}  // namespace

Event SimDevice::copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst,
                                          const RectCopy& rect, std::span<const Event> deps) {
  Deps d = translate(deps);
  Event real = underlying_->copy_host_to_device_rect(src, dst, rect, d.real);
  return copy_over_link(std::move(real), system_->host_link_engine(index_, true),
                        system_->model().host_link, d.ready, rect_bytes(rect),
                        EngineId::Kind::host_to_device, index_);
}

Event SimDevice::copy_device_to_host_rect(DeviceAllocation src, std::byte* dst,
                                          const RectCopy& rect, std::span<const Event> deps) {
  Deps d = translate(deps);
  Event real = underlying_->copy_device_to_host_rect(src, dst, rect, d.real);
  return copy_over_link(std::move(real), system_->host_link_engine(index_, false),
                        system_->model().host_link, d.ready, rect_bytes(rect),
                        EngineId::Kind::device_to_host, index_);
}

std::shared_ptr<const CompiledProgram> SimDevice::build_program(const std::string& source,
                                                                const std::string& options) const {
  return underlying_->build_program(source, options);
}

const void* SimDevice::build_domain() const { return underlying_->build_domain(); }

Event SimDevice::launch(const CompiledKernel& kernel, const NDRange& range,
                        std::span<const KernelArg> args, std::span<const Event> deps) {
  Deps d = translate(deps);
  // Serialize real launches per underlying device (SimSystem::exchange_last_launch): the next
  // launch there waits for a gate that this launch opens when it completes.
  auto [gate, opener] = Event::make_manual();
  Event previous = system_->exchange_last_launch(underlying_.get(), gate);
  if (!previous.is_null()) d.real.push_back(previous);
  Event real;
  try {
    real = underlying_->launch(kernel, range, args, d.real);
  } catch (...) {
    opener->complete();
    throw;
  }
  real.on_complete([opener = opener] { opener->complete(); });
  const double seconds =
      kernel_seconds(system_->model(), system_->kernel_work(kernel.name(), range, args));
  system_->count_kernel(index_, seconds);
  return simulated(std::move(real), {EngineId::Kind::compute, index_}, d.ready, seconds);
}

void SimDevice::finish() {
  underlying_->finish();
  // Everything submitted so far has finished: the host has seen all of it.
  clock_->advance_host(clock_->now());
}

DeviceRegistry make_sim_devices(const DeviceModel& model, const std::string& label,
                                std::size_t count, const DeviceRegistry& underlying) {
  UNIMEM_REQUIRE(count >= 1 && count <= 64, "make_sim_devices: count must be in 1..64");
  UNIMEM_REQUIRE(!underlying.empty(), "make_sim_devices: no underlying device to run on");
  auto system = std::make_shared<SimSystem>(model, count);
  DeviceRegistry registry;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = "sim:";
    name += label;
    name += "#";
    name += std::to_string(i);
    registry.add(std::make_shared<SimDevice>(std::move(name), i, system,
                                             underlying.shared(i % underlying.size())));
  }
  return registry;
}

std::shared_ptr<SimSystem> system_of(const DeviceRegistry& registry) {
  std::shared_ptr<SimSystem> system;
  for (const auto& d : registry.devices()) {
    const auto* s = dynamic_cast<const SimDevice*>(d.get());
    if (s == nullptr || (system && s->system() != system)) return nullptr;
    system = s->system();
  }
  return system;
}

}  // namespace unimem::sim
