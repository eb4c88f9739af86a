// Host devices whose kernel launches throw on request, for the tests of launches that fail after
// their acquire (rewrite_launch_test.cpp, launch_family_differential_test.cpp): every other hook
// forwards to the host device wrapped (peer copies between two such devices too). On request they
// also run their kernels in launch order (Device::orders_after), as the OpenCL driver's
// KernelQueue does, so lean repeats form eventless streaks on them.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unimem/errors.hpp>

#include "device/device.hpp"
#include "device/device_registry.hpp"
#include "device/host/host_platform.hpp"
#include "forwarding_device.hpp"

namespace unimem::testing {

// A host device whose kernel launches throw DeviceError while fail_launches is set. With
// in_order (set before the device's first launch) every kernel runs after the device's previous
// one and the in-order hooks of the eventless streak work; in_order_launches counts the calls of
// launch_in_order, in_order_again_launches those of launch_in_order_again (failed ones too).
class LaunchFailingDevice final : public ForwardingDevice {
 public:
  explicit LaunchFailingDevice(std::shared_ptr<Device> inner)
      : ForwardingDevice(std::move(inner), "failing") {}
  bool fail_launches = false;
  bool in_order = false;
  int in_order_launches = 0;
  int in_order_again_launches = 0;

  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override {
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    if (!in_order) return ForwardingDevice::launch(kernel, range, args, deps);
    return last_kernel_ = ForwardingDevice::launch(kernel, range, args, after_last(deps));
  }
  Event launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                             std::span<const KernelArg> args,
                             std::span<const Event> deps) override {
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    if (!in_order) return ForwardingDevice::launch_without_times(kernel, range, args, deps);
    return last_kernel_ =
               ForwardingDevice::launch_without_times(kernel, range, args, after_last(deps));
  }
  [[nodiscard]] bool orders_after(const Event& previous) const override {
    (void)previous;  // every kernel of this device runs after the one launched before it
    return in_order;
  }
  std::uint64_t launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                std::span<const KernelArg> args) override {
    ++in_order_launches;
    return enqueue_in_order(kernel, range, args);
  }
  std::uint64_t launch_in_order_again(const CompiledKernel& kernel, const NDRange& range,
                                      std::span<const KernelArg> args) override {
    ++in_order_again_launches;
    return enqueue_in_order(kernel, range, args);
  }
  Event in_order_event(std::uint64_t sequence) override {
    if (sequence == 0 || sequence > in_order_events_.size()) {
      throw DeviceError("no in-order kernel numbered " + std::to_string(sequence));
    }
    return in_order_events_[sequence - 1];
  }

 private:
  std::span<const Event> after_last(std::span<const Event> deps) {
    deps_.assign(deps.begin(), deps.end());
    if (!last_kernel_.is_null()) deps_.push_back(last_kernel_);
    return deps_;
  }
  std::uint64_t enqueue_in_order(const CompiledKernel& kernel, const NDRange& range,
                                 std::span<const KernelArg> args) {
    if (!in_order) throw DeviceError("launch_in_order on a device without in-order launches");
    if (fail_launches) throw DeviceError("launch failed (on purpose)");
    last_kernel_ = ForwardingDevice::launch_without_times(kernel, range, args, after_last({}));
    in_order_events_.push_back(last_kernel_);
    return in_order_events_.size();
  }

  Event last_kernel_;  // in_order: the kernel launched last
  std::vector<Event> deps_;
  // in_order: the event of the kernel numbered i + 1 (the numbers launch_in_order returns).
  std::vector<Event> in_order_events_;
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
