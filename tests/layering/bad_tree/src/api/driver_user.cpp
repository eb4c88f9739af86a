// Fixture for the layering test: api must not know a device driver.
#include "api/runtime.hpp"
#include "device/opencl/opencl_device.hpp"
