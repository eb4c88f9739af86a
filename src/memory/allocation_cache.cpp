#include "memory/allocation_cache.hpp"

#include <string>
#include <utility>

#include <unimem/errors.hpp>
#include "common/check.hpp"

namespace unimem {

AllocationCache::AllocationCache(std::vector<Device*> devices, std::uint64_t budget)
    : devices_(std::move(devices)),
      budget_(budget),
      device_kept_(devices_.size()),
      device_kept_bytes_(devices_.size(), 0) {}

AllocationCache::~AllocationCache() { clear(); }

void AllocationCache::free_device_locked(std::size_t device) {
  for (auto& [bytes, allocation] : device_kept_[device]) {
    try {
      devices_[device]->free(allocation);
    } catch (...) {  // a driver that cannot free leaks; nothing else can be done here
    }
  }
  device_kept_[device].clear();
  device_kept_bytes_[device] = 0;
}

void AllocationCache::clear() {
  std::lock_guard lock(mutex_);
  for (std::size_t d = 0; d < devices_.size(); ++d) free_device_locked(d);
  host_kept_.clear();
  host_kept_bytes_ = 0;
  check_if_enabled_locked();
}

void AllocationCache::trim(std::size_t device) {
  UNIMEM_REQUIRE(device < devices_.size(), "AllocationCache::trim: unknown device");
  std::lock_guard lock(mutex_);
  free_device_locked(device);
  check_if_enabled_locked();
}

bool AllocationCache::keeps(std::size_t device, std::uint64_t bytes) const {
  UNIMEM_REQUIRE(device < devices_.size(), "AllocationCache::keeps: unknown device");
  std::lock_guard lock(mutex_);
  return device_kept_[device].contains(bytes);
}

DeviceAllocation AllocationCache::allocate(std::size_t device, std::uint64_t bytes) {
  UNIMEM_REQUIRE(device < devices_.size(), "AllocationCache::allocate: unknown device");
  std::lock_guard lock(mutex_);
  auto& kept = device_kept_[device];
  if (auto it = kept.find(bytes); it != kept.end()) {
    const DeviceAllocation a = it->second;
    kept.erase(it);
    device_kept_bytes_[device] -= bytes;
    ++counts_.reused;
    check_if_enabled_locked();
    return a;
  }
  ++counts_.allocated;
  try {
    return devices_[device]->allocate(bytes);
  } catch (const DeviceError&) {
    if (kept.empty()) throw;
  }
  // The device is full, maybe of memory kept here: give it back and try once more.
  free_device_locked(device);
  check_if_enabled_locked();
  return devices_[device]->allocate(bytes);
}

void AllocationCache::release(std::size_t device, DeviceAllocation allocation,
                              std::uint64_t bytes) {
  UNIMEM_REQUIRE(device < devices_.size(), "AllocationCache::release: unknown device");
  if (!allocation.valid()) return;
  std::lock_guard lock(mutex_);
  if (bytes <= budget_ && device_kept_bytes_[device] <= budget_ - bytes) {
    device_kept_[device].emplace(bytes, allocation);
    device_kept_bytes_[device] += bytes;
    check_if_enabled_locked();
    return;
  }
  devices_[device]->free(allocation);
}

std::unique_ptr<std::byte[]> AllocationCache::allocate_host(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = host_kept_.find(bytes); it != host_kept_.end()) {
      std::unique_ptr<std::byte[]> memory = std::move(it->second);
      host_kept_.erase(it);
      host_kept_bytes_ -= bytes;
      ++counts_.reused;
      check_if_enabled_locked();
      return memory;
    }
    ++counts_.allocated;
  }
  // Default-initialised: not zeroed (SharedBuffer zeroes what is read before being written).
  return std::unique_ptr<std::byte[]>(new std::byte[bytes]);
}

void AllocationCache::release_host(std::unique_ptr<std::byte[]> memory, std::uint64_t bytes) {
  if (!memory) return;
  std::lock_guard lock(mutex_);
  if (bytes <= budget_ && host_kept_bytes_ <= budget_ - bytes) {
    host_kept_.emplace(bytes, std::move(memory));
    host_kept_bytes_ += bytes;
    check_if_enabled_locked();
  }
  // else: memory is freed when it goes out of scope
}

AllocationCache::Counts AllocationCache::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::uint64_t AllocationCache::kept_host_bytes() const {
  std::lock_guard lock(mutex_);
  return host_kept_bytes_;
}

std::uint64_t AllocationCache::kept_device_bytes(std::size_t device) const {
  UNIMEM_REQUIRE(device < devices_.size(), "AllocationCache::kept_device_bytes: unknown device");
  std::lock_guard lock(mutex_);
  return device_kept_bytes_[device];
}

void AllocationCache::check_invariants() const {
  std::lock_guard lock(mutex_);
  check_locked();
}

void AllocationCache::check_if_enabled_locked() const {
#if UNIMEM_INVARIANTS_ENABLED
  check_locked();
#endif
}

void AllocationCache::check_locked() const {
  auto fail = [](const std::string& what) {
    detail::throw_invariant("AllocationCache: " + what, __FILE__, __LINE__);
  };
  if (device_kept_.size() != devices_.size() || device_kept_bytes_.size() != devices_.size()) {
    fail("per-device lists out of step with the " + std::to_string(devices_.size()) + " devices");
  }
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    std::uint64_t total = 0;
    for (const auto& [bytes, allocation] : device_kept_[d]) {
      if (!allocation.valid() || allocation.size != bytes) {
        fail("device " + std::to_string(d) + " keeps " +
             (allocation.valid() ? "an allocation of " + std::to_string(allocation.size) + " bytes"
                                 : std::string("a null allocation")) +
             " under the size " + std::to_string(bytes));
      }
      total += bytes;
    }
    if (total != device_kept_bytes_[d]) {
      fail("device " + std::to_string(d) + " keeps " + std::to_string(total) +
           " bytes but counts " + std::to_string(device_kept_bytes_[d]));
    }
    if (total > budget_) {
      fail("device " + std::to_string(d) + " keeps " + std::to_string(total) +
           " bytes, over the budget of " + std::to_string(budget_));
    }
  }
  std::uint64_t host_total = 0;
  for (const auto& [bytes, memory] : host_kept_) {
    if (!memory) fail("the host keeps null memory under the size " + std::to_string(bytes));
    host_total += bytes;
  }
  if (host_total != host_kept_bytes_) {
    fail("the host keeps " + std::to_string(host_total) + " bytes but counts " +
         std::to_string(host_kept_bytes_));
  }
  if (host_total > budget_) {
    fail("the host keeps " + std::to_string(host_total) + " bytes, over the budget of " +
         std::to_string(budget_));
  }
}

}  // namespace unimem
