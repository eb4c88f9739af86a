#pragma once

// One simulated machine: the devices' model, the shared simulated clock, the kernel costs and
// per-device counters. Every SimDevice of a machine holds the same SimSystem.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <unimem/event.hpp>
#include "device/sim/sim_model.hpp"

namespace unimem::sim {

/// What one simulated device did, in modelled bytes and seconds.
struct DeviceCounters {
  double host_to_device_bytes = 0;
  double device_to_host_bytes = 0;
  double peer_in_bytes = 0;  ///< bytes this device received from peers
  double kernel_seconds = 0;
  double copy_seconds = 0;  ///< seconds of every copy that this device received or sent
  std::uint64_t kernels = 0;
  std::uint64_t copies = 0;
  [[nodiscard]] double bytes_in() const { return host_to_device_bytes + peer_in_bytes; }
};

/// Thread-safe.
class SimSystem {
 public:
  SimSystem(DeviceModel model, std::size_t devices);

  [[nodiscard]] const DeviceModel& model() const { return model_; }
  [[nodiscard]] std::size_t device_count() const { return devices_; }
  [[nodiscard]] SimClock& clock() { return clock_; }
  [[nodiscard]] const SimClock& clock() const { return clock_; }

  /// Registers how kernel `name`'s partitions are costed (replacing an earlier one).
  void set_kernel_cost(const std::string& name, KernelCostFunction cost);
  /// How kernels without a cost of their own are costed (default: default_kernel_work).
  void set_default_kernel_cost(KernelCostFunction cost);
  /// The modelled bytes of a copy that really moves `bytes` (default: the same number): lets a
  /// moderately sized real run stand for a larger modelled problem (docs/SIMULATION.md).
  void set_copy_bytes_model(std::function<double(std::uint64_t)> model);
  /// Forgets the registered kernel costs and the copy model.
  void clear_workload_model();

  [[nodiscard]] KernelWork kernel_work(const std::string& name, const NDRange& range,
                                       std::span<const KernelArg> args) const;
  [[nodiscard]] double modelled_copy_bytes(std::uint64_t bytes) const;

  /// Whether the model lets device `dst` read device `src`'s memory directly.
  [[nodiscard]] bool peer_possible(std::size_t src, std::size_t dst) const;
  /// The engine of device's host link in one direction (shared by devices_per_host_link devices).
  [[nodiscard]] EngineId host_link_engine(std::size_t device, bool to_device) const;

  /// Launches of simulated devices that share one underlying device run there one after another:
  /// returns the event of the previous launch on `underlying` and records `next` as the latest.
  /// (Concurrent launches of one kernel on one POCL 3.1 device can trip an assertion in
  /// pocl_release_dlhandle_cache; real concurrency buys nothing here, the clock gives the times.)
  [[nodiscard]] Event exchange_last_launch(const void* underlying, const Event& next);

  void count_kernel(std::size_t device, double seconds);
  void count_copy(std::size_t device, EngineId::Kind kind, double bytes, double seconds);
  [[nodiscard]] std::vector<DeviceCounters> counters() const;
  void reset_counters();

 private:
  const DeviceModel model_;
  const std::size_t devices_;
  SimClock clock_;
  mutable std::mutex mutex_;
  std::map<std::string, KernelCostFunction> costs_;
  KernelCostFunction default_cost_;
  std::function<double(std::uint64_t)> copy_model_;
  std::vector<DeviceCounters> counters_;
  std::map<const void*, Event> last_launch_;
};

}  // namespace unimem::sim
