#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "device/device_registry.hpp"
#include "device/sim/sim_system.hpp"

namespace unimem::sim {

/// The `sim` driver (DESIGN.md "Devices", docs/SIMULATION.md): a device whose operations run for
/// real on an underlying device (host driver or OpenCL), so results are exact, while the
/// SimSystem's clock gives each operation a modelled start and end. Allocations, programs and
/// kernels are the underlying device's own; several simulated devices may share one underlying
/// device. Thread-safe as the Device contract requires.
class SimDevice final : public Device {
 public:
  SimDevice(std::string name, std::size_t index, std::shared_ptr<SimSystem> system,
            std::shared_ptr<Device> underlying);

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] std::string driver() const override { return "sim"; }
  [[nodiscard]] std::uint64_t capacity() const override;
  [[nodiscard]] std::uint64_t max_allocation() const override;
  /// Launches run on the underlying device: it decides.
  [[nodiscard]] bool rebases_arguments() const override { return underlying_->rebases_arguments(); }
  [[nodiscard]] std::size_t index() const { return index_; }
  [[nodiscard]] const std::shared_ptr<SimSystem>& system() const { return system_; }
  [[nodiscard]] Device& underlying() const { return *underlying_; }

  DeviceAllocation allocate(std::uint64_t bytes) override;
  void free(DeviceAllocation allocation) override;

  Event copy_host_to_device(const std::byte* src, DeviceAllocation dst, std::uint64_t dst_offset,
                            std::uint64_t bytes, std::span<const Event> deps) override;
  Event copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset, std::byte* dst,
                            std::uint64_t bytes, std::span<const Event> deps) override;
  Event copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset, DeviceAllocation dst,
                              std::uint64_t dst_offset, std::uint64_t bytes,
                              std::span<const Event> deps) override;

  [[nodiscard]] bool can_copy_from_peer(const Device& source) const override;
  Event copy_from_peer(const Device& source, DeviceAllocation src, std::uint64_t src_offset,
                       DeviceAllocation dst, std::uint64_t dst_offset, std::uint64_t bytes,
                       std::span<const Event> deps) override;

  Event copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst, const RectCopy& rect,
                                 std::span<const Event> deps) override;
  Event copy_device_to_host_rect(DeviceAllocation src, std::byte* dst, const RectCopy& rect,
                                 std::span<const Event> deps) override;

  [[nodiscard]] std::shared_ptr<const CompiledProgram> build_program(
      const std::string& source, const std::string& options) const override;
  [[nodiscard]] const void* build_domain() const override;

  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override;

  void finish() override;

 private:
  struct Deps {
    std::vector<Event> real;  // what the underlying device waits for
    double ready = 0;         // the latest simulated end among them
  };
  [[nodiscard]] Deps translate(std::span<const Event> deps) const;
  // Schedules `seconds` on `engine` after deps and wraps the real event.
  Event simulated(Event real, EngineId engine, double ready, double seconds) const;
  Event copy_over_link(Event real, EngineId engine, const LinkModel& link, double ready,
                       std::uint64_t bytes, EngineId::Kind counted_as, std::size_t counted_on);

  std::string name_;
  std::size_t index_;
  std::shared_ptr<SimSystem> system_;
  std::shared_ptr<Device> underlying_;
  std::shared_ptr<SimClock> clock_;  // aliases system_'s clock, for the events
  mutable std::mutex mutex_;
  std::uint64_t allocated_ = 0;
};

/// `count` simulated devices of `model`, named "sim:<label>#<i>", over the devices of
/// `underlying` (simulated device i runs on underlying device i mod its size), sharing one new
/// SimSystem. Throws PreconditionError for count 0 or an empty underlying registry.
[[nodiscard]] DeviceRegistry make_sim_devices(const DeviceModel& model, const std::string& label,
                                              std::size_t count, const DeviceRegistry& underlying);

/// The SimSystem of registry's devices if they are all simulated devices of one system, else null.
[[nodiscard]] std::shared_ptr<SimSystem> system_of(const DeviceRegistry& registry);

}  // namespace unimem::sim
