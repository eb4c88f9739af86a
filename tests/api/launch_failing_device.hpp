// Host devices whose kernel launches throw on request, for the tests of launches that fail after
// their acquire (rewrite_launch_test.cpp, launch_family_differential_test.cpp): every other hook
// forwards to the host device wrapped (peer copies between two such devices too).

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "device/device.hpp"
#include "device/device_registry.hpp"
#include "device/host/host_platform.hpp"
#include "forwarding_device.hpp"

namespace unimem::testing {

// A host device whose kernel launches throw DeviceError while fail_launches is set.
class LaunchFailingDevice final : public ForwardingDevice {
 public:
  explicit LaunchFailingDevice(std::shared_ptr<Device> inner)
      : ForwardingDevice(std::move(inner), "failing") {}
  bool fail_launches = false;

  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override {
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    return ForwardingDevice::launch(kernel, range, args, deps);
  }
  Event launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                             std::span<const KernelArg> args,
                             std::span<const Event> deps) override {
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    return ForwardingDevice::launch_without_times(kernel, range, args, deps);
  }
  std::uint64_t launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                std::span<const KernelArg> args) override {
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    return ForwardingDevice::launch_in_order(kernel, range, args);
  }
  std::uint64_t launch_in_order_again(const CompiledKernel& kernel, const NDRange& range,
                                      std::span<const KernelArg> args) override {
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    return ForwardingDevice::launch_in_order_again(kernel, range, args);
  }
};

// Host devices, each wrapped in a LaunchFailingDevice: the registry for a Runtime, and the
// wrappers to make their launches fail.
struct FailingHostDevices {
  DeviceRegistry registry;
  std::vector<std::shared_ptr<LaunchFailingDevice>> devices;
};

inline HostDeviceOptions peer_copying_hosts() {
  HostDeviceOptions options;
  options.peer_copies = true;
  return options;
}

inline FailingHostDevices failing_host_devices(
    std::size_t count = 2, const HostDeviceOptions& options = peer_copying_hosts()) {
  DeviceRegistry hosts = make_host_devices(count, options);
  FailingHostDevices out;
  for (std::size_t d = 0; d < hosts.size(); ++d) {
    out.devices.push_back(std::make_shared<LaunchFailingDevice>(hosts.shared(d)));
    out.registry.add(out.devices.back());
  }
  return out;
}

}  // namespace unimem::testing
