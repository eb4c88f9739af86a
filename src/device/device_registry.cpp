#include "device/device_registry.hpp"

#include "common/check.hpp"

namespace unimem {

std::size_t DeviceRegistry::add(std::shared_ptr<Device> device) {
  UNIMEM_REQUIRE(device != nullptr, "DeviceRegistry::add: device must not be null");
  const std::string name = device->name();
  for (const auto& d : devices_) {
    if (d->name() == name) {
      throw PreconditionError("DeviceRegistry::add: a device named '" + name +
                              "' is already registered");
    }
  }
  devices_.push_back(std::move(device));
  return devices_.size() - 1;
}

Device& DeviceRegistry::at(std::size_t index) const { return *shared(index); }

const std::shared_ptr<Device>& DeviceRegistry::shared(std::size_t index) const {
  if (index >= devices_.size()) {
    throw PreconditionError("unknown device " + std::to_string(index) + " (the registry has " +
                            std::to_string(devices_.size()) + " devices)");
  }
  return devices_[index];
}

std::size_t DeviceRegistry::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i]->name() == name) return i;
  }
  throw PreconditionError("unknown device '" + name + "'");
}

std::vector<Device*> DeviceRegistry::pointers() const {
  std::vector<Device*> out;
  out.reserve(devices_.size());
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

}  // namespace unimem
