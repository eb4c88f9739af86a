#include "coherence/allocation_cache.hpp"

#include <utility>

#include "common/check.hpp"
#include <unimem/errors.hpp>

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
  }
  // else: memory is freed when it goes out of scope
}

AllocationCache::Counts AllocationCache::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::uint64_t AllocationCache::kept_bytes(Agent agent) const {
  std::lock_guard lock(mutex_);
  if (agent == kHostAgent) return host_kept_bytes_;
  UNIMEM_REQUIRE(device_of_agent(agent) < devices_.size(),
                 "AllocationCache::kept_bytes: unknown agent");
  return device_kept_bytes_[device_of_agent(agent)];
}

}  // namespace unimem
