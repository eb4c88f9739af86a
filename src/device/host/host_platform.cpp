#include "device/host/host_platform.hpp"

#include <string>

#include "common/check.hpp"

namespace unimem {

DeviceRegistry make_host_devices(std::size_t count, const HostDeviceOptions& options) {
  UNIMEM_REQUIRE(count >= 1 && count <= 64, "make_host_devices: count must be in 1..64");
  DeviceRegistry registry;
  for (std::size_t i = 0; i < count; ++i) {
    registry.add(std::make_shared<HostDevice>("host:" + std::to_string(i), options));
  }
  return registry;
}

}  // namespace unimem
