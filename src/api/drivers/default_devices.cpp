// default_devices() (api/default_devices.hpp): the drivers this build has, in order of
// preference. Only OpenCL devices compile a Program's OpenCL C, so the host driver (C++ callables
// as kernels) is never a default. A selection "sim:PRESET:COUNT[:UNDERLYING]" gives simulated
// devices (src/device/sim/) running on the OpenCL devices UNDERLYING selects.

#include "api/default_devices.hpp"

#include <cstdlib>
#include <string>

#include "common/check.hpp"
#include "device/sim/sim_device.hpp"
#include "device/sim/sim_selection.hpp"
#if defined(UNIMEM_HAVE_OPENCL)
#include "device/opencl/opencl_context.hpp"
#endif

namespace unimem {

DeviceRegistry default_devices() {
#if defined(UNIMEM_HAVE_OPENCL)
  const char* env = std::getenv(opencl::kDevicesEnvironmentVariable);
  const std::string selection = env == nullptr ? "" : env;
  if (const auto sim = sim::parse_sim_selection(selection)) {
    DeviceRegistry real = opencl::make_opencl_devices(sim->underlying);
    if (real.empty()) {
      throw DeviceError("Runtime: UNIMEM_DEVICES=" + selection +
                        ": no OpenCL device to run the simulated devices on");
    }
    return sim::make_sim_devices(sim::find_preset(sim->preset).device, sim->preset, sim->count,
                                 real);
  }
  DeviceRegistry devices = opencl::make_opencl_devices(selection);
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
