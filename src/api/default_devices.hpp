#pragma once

// The devices a Runtime uses when the program names none. Declared here, defined in the
// api/drivers sub-layer (src/api/drivers/default_devices.cpp): the one place above the device
// layer that knows which drivers this build has, so the api layer itself never names a driver.

#include "device/device_registry.hpp"

namespace unimem {

/// The OpenCL devices UNIMEM_DEVICES selects (all when unset). Throws DeviceError when none is
/// found or when unimem is built without the OpenCL driver.
[[nodiscard]] DeviceRegistry default_devices();

}  // namespace unimem
