#pragma once

// The timing model of the `sim` driver (docs/SIMULATION.md): what a simulated device is made of
// (compute throughput, memory bandwidth, capacity, a host link, peer links) and a simulated clock
// on which every copy and kernel occupies one engine for a modelled duration. Pure arithmetic, no
// device: the SimDevice (sim_device.hpp) asks it for times while the real work runs underneath.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"

namespace unimem::sim {

/// A link: a copy of B bytes occupies it for latency + B / bandwidth seconds.
struct LinkModel {
  double bandwidth = 0;  ///< bytes per second; 0 means "no such link"
  double latency = 0;    ///< seconds per copy (driver call, DMA setup, PCIe round trip)
  [[nodiscard]] bool present() const { return bandwidth > 0; }
  /// Seconds a copy of `bytes` occupies the link.
  [[nodiscard]] double seconds(double bytes) const;
};

/// One simulated device and how it is wired to the host and its peers.
struct DeviceModel {
  double compute_flops = 1e12;          ///< sustained single-precision FLOP/s
  double memory_bandwidth = 1e11;       ///< device memory bytes per second
  double kernel_latency = 5e-6;         ///< seconds per kernel launch (submission to first wave)
  std::uint64_t capacity = 1ULL << 30;  ///< bytes of device memory
  LinkModel host_link;                  ///< host <-> device, one engine per direction
  /// Devices sharing one host link (one PCIe slot): devices 2i and 2i+1 of a K80 board share its
  /// x16 uplink through the on-board switch, so their host copies serialize on one engine per
  /// direction. 1: every device has its own link.
  unsigned devices_per_host_link = 1;
  LinkModel peer_link;  ///< device <-> device without the host; bandwidth 0: no peer copies
  /// Devices that can copy peer to peer form groups of this many consecutive devices (a CPU
  /// socket's PCIe tree); copies across groups go through the host. 0: one group of all.
  unsigned peer_group_size = 0;
};

/// A named parameter set (docs/SIMULATION.md lists each with its sources).
struct Preset {
  std::string name;
  std::string description;
  DeviceModel device;
};

/// The presets, in a fixed order: "k80" (Matz et al.'s 16-GPU K80 system), "pcie" (a generic
/// PCIe 3.0 GPU without peer copies), "nvlink" (GPUs with fast peer links).
[[nodiscard]] const std::vector<Preset>& presets();
/// The preset called `name`; throws PreconditionError listing the known names otherwise.
[[nodiscard]] const Preset& find_preset(const std::string& name);

/// What one kernel partition costs at the modelled problem size.
struct KernelWork {
  double flops = 0;
  double bytes = 0;  ///< device-memory traffic
};

/// Seconds a kernel with `work` occupies a device of `model`: a roofline, launch latency plus the
/// larger of compute time and memory time.
[[nodiscard]] double kernel_seconds(const DeviceModel& model, const KernelWork& work);

/// Estimates a kernel partition's work from its real launch: the sim driver's hook for workload
/// knowledge (tools/command_scale.cpp registers one per kernel of the examples).
using KernelCostFunction =
    std::function<KernelWork(const NDRange& range, std::span<const KernelArg> args)>;

/// The generic estimate used for kernels without a registered cost: per work-item 16 FLOP and 4
/// bytes per buffer argument (one float read or written each).
[[nodiscard]] KernelWork default_kernel_work(const NDRange& range, std::span<const KernelArg> args);

/// An engine of the simulated machine: a resource that runs one operation at a time.
struct EngineId {
  enum class Kind { compute, host_to_device, device_to_host, peer_in, local_copy };
  Kind kind = Kind::compute;
  std::size_t index = 0;  ///< device index (host link engines: the link's index)
  friend auto operator<=>(const EngineId&, const EngineId&) = default;
};

/// An interval on the simulated clock.
struct SimInterval {
  double start = 0;
  double end = 0;
};

/// The simulated clock of one machine. Every operation is placed on its engine at
///   start = max(engine free, latest end of its dependencies, host time when it was submitted)
/// and occupies the engine until start + duration (list scheduling in submission order). Host
/// time advances when the host waits for an operation (SimEventState::wait). Thread-safe.
class SimClock {
 public:
  /// Places an operation of `seconds` on `engine`, ready at `ready` (the latest end of its
  /// dependencies; the host time is added here).
  SimInterval schedule(EngineId engine, double ready, double seconds);
  /// The host has seen an operation that ended at `time` finish.
  void advance_host(double time);
  [[nodiscard]] double host_time() const;
  /// The latest end of any operation, or the host time if later: "now" once everything finished.
  [[nodiscard]] double now() const;
  /// Busy seconds per engine since construction (for reports).
  [[nodiscard]] std::map<EngineId, double> busy() const;

 private:
  mutable std::mutex mutex_;
  std::map<EngineId, double> free_at_;
  std::map<EngineId, double> busy_;
  double host_ = 0;
  double latest_ = 0;
};

}  // namespace unimem::sim
