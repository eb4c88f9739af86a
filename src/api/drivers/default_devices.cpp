// default_devices() (api/default_devices.hpp): the drivers this build has, in order of
// preference. Only OpenCL devices compile a Program's OpenCL C, so the host driver (C++ callables
// as kernels) is never a default.

#include "api/default_devices.hpp"

#include "common/check.hpp"
#if defined(UNIMEM_HAVE_OPENCL)
#include "device/opencl/opencl_context.hpp"
#endif

namespace unimem {

DeviceRegistry default_devices() {
#if defined(UNIMEM_HAVE_OPENCL)
  DeviceRegistry devices = opencl::make_opencl_devices_from_environment();
  if (devices.empty()) {
    throw DeviceError(
        "Runtime: no OpenCL device found (`unimem devices` lists what the ICD loader sees; "
        "UNIMEM_DEVICES selects among them)");
  }
  return devices;
#else
  throw DeviceError(
      "Runtime: unimem is built without the OpenCL driver (UNIMEM_WITH_OPENCL=OFF), so there are "
      "no devices to discover; construct the Runtime with a DeviceRegistry");
#endif
}

}  // namespace unimem
