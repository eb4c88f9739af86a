#include "device/sim/sim_system.hpp"

#include <utility>

#include "common/check.hpp"

namespace unimem::sim {

SimSystem::SimSystem(DeviceModel model, std::size_t devices)
    : model_(model), devices_(devices), counters_(devices) {
  UNIMEM_REQUIRE(devices >= 1, "SimSystem: at least one device");
  UNIMEM_REQUIRE(model_.host_link.present(), "SimSystem: the host link needs a bandwidth");
  UNIMEM_REQUIRE(model_.devices_per_host_link >= 1, "SimSystem: devices_per_host_link >= 1");
}

void SimSystem::set_kernel_cost(const std::string& name, KernelCostFunction cost) {
  UNIMEM_REQUIRE(static_cast<bool>(cost), "SimSystem::set_kernel_cost: empty cost function");
  std::lock_guard lock(mutex_);
  costs_[name] = std::move(cost);
}

void SimSystem::set_default_kernel_cost(KernelCostFunction cost) {
  std::lock_guard lock(mutex_);
  default_cost_ = std::move(cost);
}

void SimSystem::set_copy_bytes_model(std::function<double(std::uint64_t)> model) {
  std::lock_guard lock(mutex_);
  copy_model_ = std::move(model);
}

void SimSystem::clear_workload_model() {
  std::lock_guard lock(mutex_);
  costs_.clear();
  default_cost_ = nullptr;
  copy_model_ = nullptr;
}

KernelWork SimSystem::kernel_work(const std::string& name, const NDRange& range,
                                  std::span<const KernelArg> args) const {
  KernelCostFunction cost;
  {
    std::lock_guard lock(mutex_);
    auto it = costs_.find(name);
    cost = it != costs_.end() ? it->second : default_cost_;
  }
  return cost ? cost(range, args) : default_kernel_work(range, args);
}

double SimSystem::modelled_copy_bytes(std::uint64_t bytes) const {
  std::function<double(std::uint64_t)> model;
  {
    std::lock_guard lock(mutex_);
    model = copy_model_;
  }
  return model ? model(bytes) : static_cast<double>(bytes);
}

bool SimSystem::peer_possible(std::size_t src, std::size_t dst) const {
  if (src == dst) return true;
  if (!model_.peer_link.present()) return false;
  if (model_.peer_group_size == 0) return true;
  return src / model_.peer_group_size == dst / model_.peer_group_size;
}

EngineId SimSystem::host_link_engine(std::size_t device, bool to_device) const {
  return {to_device ? EngineId::Kind::host_to_device : EngineId::Kind::device_to_host,
          device / model_.devices_per_host_link};
}

Event SimSystem::exchange_last_launch(const void* underlying, const Event& next) {
  std::lock_guard lock(mutex_);
  Event& last = last_launch_[underlying];
  Event previous = last;
  last = next;
  return previous;
}

void SimSystem::count_kernel(std::size_t device, double seconds) {
  std::lock_guard lock(mutex_);
  DeviceCounters& c = counters_.at(device);
  c.kernel_seconds += seconds;
  ++c.kernels;
}

void SimSystem::count_copy(std::size_t device, EngineId::Kind kind, double bytes, double seconds) {
  std::lock_guard lock(mutex_);
  DeviceCounters& c = counters_.at(device);
  switch (kind) {
    case EngineId::Kind::host_to_device:
      c.host_to_device_bytes += bytes;
      break;
    case EngineId::Kind::device_to_host:
      c.device_to_host_bytes += bytes;
      break;
    case EngineId::Kind::peer_in:
      c.peer_in_bytes += bytes;
      break;
    case EngineId::Kind::compute:
    case EngineId::Kind::local_copy:
      break;
  }
  c.copy_seconds += seconds;
  ++c.copies;
}

std::vector<DeviceCounters> SimSystem::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void SimSystem::reset_counters() {
  std::lock_guard lock(mutex_);
  counters_.assign(devices_, DeviceCounters{});
}

}  // namespace unimem::sim
