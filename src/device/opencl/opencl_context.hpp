#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device/device_registry.hpp"
#include "device/opencl/opencl_api.hpp"
#include "device/opencl/opencl_discovery.hpp"

namespace unimem::opencl {

class OpenCLDevice;

/// One cl_context for one platform, holding every selected device of that platform: buffers of
/// one context are visible to all its devices, so those devices copy peer to peer
/// (clEnqueueCopyBuffer across their queues); devices of different contexts copy through the host.
/// Shared (std::shared_ptr) by the devices, programs and kernels made in it. Immutable after
/// construction but for an atomic count of released buffers, so thread-safe.
class Context {
 public:
  /// Creates the context over devices, which must all belong to one platform.
  explicit Context(std::vector<DeviceInfo> devices);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] cl_context handle() const { return context_; }
  [[nodiscard]] cl_platform_id platform() const { return devices_.front().platform; }
  [[nodiscard]] const std::string& platform_name() const { return devices_.front().platform_name; }
  [[nodiscard]] const std::vector<DeviceInfo>& devices() const { return devices_; }
  /// "context of <platform> over <device names>", for error messages.
  [[nodiscard]] std::string description() const;

  /// How many device allocations (cl_mem) of this context have been released: a kernel argument
  /// set to a cl_mem while this count was n still names that buffer while it is n (a released
  /// handle's address may come back as another buffer). OpenCLDevice counts each free.
  [[nodiscard]] std::uint64_t buffers_released() const {
    return buffers_released_.load(std::memory_order_acquire);
  }
  void note_buffer_released() const { buffers_released_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::vector<DeviceInfo> devices_;
  cl_context context_ = nullptr;
  mutable std::atomic<std::uint64_t> buffers_released_{0};
};

/// How an OpenCLDevice orders its queue. Out-of-order is the default where the device supports
/// it: every operation waits only for its deps, which is exactly the Device contract.
enum class QueueOrder { out_of_order, in_order };

/// Opens the devices named by selection (syntax: select_devices), grouped into one Context per
/// platform. An empty selection opens every device; with no OpenCL device at all it returns an
/// empty list. Throws DeviceError for a bad selection (listing the devices that exist) or a
/// failing OpenCL call.
[[nodiscard]] std::vector<std::unique_ptr<OpenCLDevice>> open_devices(
    std::string_view selection = {}, QueueOrder order = QueueOrder::out_of_order);

/// open_devices with the selection taken from the UNIMEM_DEVICES environment variable.
[[nodiscard]] std::vector<std::unique_ptr<OpenCLDevice>> open_devices_from_environment(
    QueueOrder order = QueueOrder::out_of_order);

/// The selected devices as a DeviceRegistry (in selection order), like make_host_devices.
[[nodiscard]] DeviceRegistry make_opencl_devices(std::string_view selection = {},
                                                 QueueOrder order = QueueOrder::out_of_order);

/// make_opencl_devices with the selection taken from UNIMEM_DEVICES.
[[nodiscard]] DeviceRegistry make_opencl_devices_from_environment(
    QueueOrder order = QueueOrder::out_of_order);

}  // namespace unimem::opencl
