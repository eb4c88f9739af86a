#pragma once

#include <cstddef>
#include <memory>

#include "device/device_registry.hpp"
#include "device/host/host_device.hpp"

namespace unimem {

/// A registry of count host devices named "host:0" .. "host:<count-1>" (1..64 supported).
DeviceRegistry make_host_devices(std::size_t count, const HostDeviceOptions& options = {});

}  // namespace unimem
