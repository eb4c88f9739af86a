#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "device/device.hpp"

namespace unimem {

/// An ordered set of devices shared by whoever uses them (a Runtime takes its devices from one).
/// Device i keeps index i for the registry's lifetime; names are unique.
class DeviceRegistry {
 public:
  DeviceRegistry() = default;

  /// Adds a device; throws PreconditionError if it is null or its name is taken. Returns its index.
  std::size_t add(std::shared_ptr<Device> device);

  [[nodiscard]] std::size_t size() const { return devices_.size(); }
  [[nodiscard]] bool empty() const { return devices_.empty(); }
  /// Throws PreconditionError naming the index and the number of devices when out of range.
  [[nodiscard]] Device& at(std::size_t index) const;
  [[nodiscard]] const std::shared_ptr<Device>& shared(std::size_t index) const;
  /// Index of the device with this name; throws PreconditionError if there is none.
  [[nodiscard]] std::size_t index_of(const std::string& name) const;
  [[nodiscard]] const std::vector<std::shared_ptr<Device>>& devices() const { return devices_; }
  /// The devices as plain pointers, in index order (valid while the registry holds them).
  [[nodiscard]] std::vector<Device*> pointers() const;

 private:
  std::vector<std::shared_ptr<Device>> devices_;
};

}  // namespace unimem
