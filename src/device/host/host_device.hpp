#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "device/device.hpp"
#include "device/host/host_kernel.hpp"
#include "device/work_queue.hpp"

namespace unimem {

struct HostDeviceOptions {
  /// Bytes that allocations on this device may use in total.
  std::uint64_t capacity = std::uint64_t{1} << 30;
  /// The largest single allocation (0: capacity), like CL_DEVICE_MAX_MEM_ALLOC_SIZE.
  std::uint64_t max_allocation = 0;
  /// Whether copy_from_peer may read other host devices' memory directly (both devices must
  /// allow it). Off forces every device-to-device transfer through the host.
  bool peer_copies = true;
  /// Fresh allocations are filled with this byte, so a kernel reading bytes nobody copied in sees
  /// garbage rather than lucky zeros.
  std::byte poison{0xCD};
};

/// The `host` reference driver: a device whose memory is separately allocated host memory and
/// whose operations run, in readiness order, on one worker thread of its own (DESIGN.md,
/// "Devices"). Kernels are HostKernel callables. Thread-safe as the Device contract requires.
class HostDevice final : public Device {
 public:
  HostDevice(std::string name, HostDeviceOptions options = {});
  ~HostDevice() override;

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] std::string driver() const override { return "host"; }
  [[nodiscard]] std::uint64_t capacity() const override { return options_.capacity; }
  /// Host kernels get plain pointers: a rebased argument is offset on the pointer.
  [[nodiscard]] bool rebases_arguments() const override { return true; }
  [[nodiscard]] std::uint64_t max_allocation() const override {
    return options_.max_allocation == 0 ? options_.capacity : options_.max_allocation;
  }
  /// Bytes currently allocated.
  [[nodiscard]] std::uint64_t allocated_bytes() const;

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

  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override;

  void finish() override;
  /// Operations record their start and end on the host clock (WorkQueue::set_timing).
  void set_profiling(bool on) override { queue_.set_timing(on); }

 private:
  // Throws PreconditionError unless [offset, offset + bytes) lies in an allocation of this device.
  std::byte* checked_pointer(DeviceAllocation a, std::uint64_t offset, std::uint64_t bytes,
                             const char* what) const;

  std::string name_;
  HostDeviceOptions options_;
  mutable std::mutex mutex_;
  std::map<const void*, std::unique_ptr<std::byte[]>> allocations_;
  std::map<const void*, std::uint64_t> sizes_;
  std::uint64_t allocated_ = 0;
  detail::WorkQueue queue_;  // last member: its worker stops before the memory goes away
};

}  // namespace unimem
