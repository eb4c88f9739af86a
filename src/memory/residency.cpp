#include "memory/residency.hpp"

#include <string>

#include "common/check.hpp"

namespace unimem {

std::uint64_t ResidentAllocation::offset_of(std::uint64_t buffer_offset) const {
  UNIMEM_REQUIRE(buffer_offset >= base && buffer_offset - base <= allocation.size,
                 "ResidentAllocation::offset_of: byte outside the allocation");
  return buffer_offset - base;
}

Residency::Residency(std::uint64_t buffer_size, std::size_t device_count,
                     AllocationCache& allocations)
    : size_(buffer_size),
      allocations_(allocations),
      mirrors_(device_count),
      ids_(device_count, 0) {}

Residency::Residency(std::uint64_t buffer_size, std::size_t device_count,
                     AllocationCache& allocations, DeviceMemory& memory, EvictionClient& client)
    : size_(buffer_size),
      allocations_(allocations),
      memory_(&memory),
      client_(&client),
      mirrors_(device_count),
      ids_(device_count, 0) {
  UNIMEM_REQUIRE(memory.device_count() == device_count,
                 "Residency: the DeviceMemory has another number of devices");
}

Residency::~Residency() { release_all(); }

std::optional<ResidentAllocation> Residency::find(std::size_t device, const Interval& bytes) const {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::find: unknown device");
  UNIMEM_REQUIRE(bytes.end <= size_, "Residency::find: bytes reach beyond the buffer");
  const DeviceAllocation& m = mirrors_[device];
  if (!m.valid()) return std::nullopt;
  return ResidentAllocation{m, 0};
}

ResidentAllocation Residency::ensure(std::size_t device, const Interval& bytes) {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::ensure: unknown device");
  UNIMEM_REQUIRE(bytes.end <= size_, "Residency::ensure: bytes reach beyond the buffer");
  UNIMEM_REQUIRE(!retired_, "Residency::ensure: the buffer is being released");
  DeviceAllocation& m = mirrors_[device];
  if (m.valid()) {
    if (memory_ != nullptr) memory_->touch(device, ids_[device]);
  } else if (memory_ != nullptr) {
    (void)memory_->allocate(device, size_, *this);  // adopt() fills the slot
    check_if_enabled();
  } else {
    m = allocations_.allocate(device, size_);
    check_if_enabled();
  }
  return ResidentAllocation{m, 0};
}

ResidentAllocation Residency::begin_use(std::size_t device) {
  const ResidentAllocation a = ensure_whole(device);
  if (memory_ != nullptr) memory_->use(device, ids_[device]);
  return a;
}

void Residency::end_use(std::size_t device) {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::end_use: unknown device");
  if (memory_ == nullptr || !mirrors_[device].valid()) return;
  memory_->unuse(device, ids_[device]);
}

void Residency::retire() {
  if (retired_) return;
  retired_ = true;
  if (memory_ == nullptr) return;
  for (std::size_t d = 0; d < mirrors_.size(); ++d) {
    if (mirrors_[d].valid()) memory_->use(d, ids_[d]);
  }
}

std::uint64_t Residency::allocated_bytes(std::size_t device) const {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::allocated_bytes: unknown device");
  return mirrors_[device].valid() ? size_ : 0;
}

void Residency::release(std::size_t device) {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::release: unknown device");
  DeviceAllocation& m = mirrors_[device];
  if (!m.valid()) return;
  if (memory_ != nullptr) {
    try {
      memory_->release(device, ids_[device]);  // forget() clears the slot
    } catch (...) {                            // the caller may be a destructor
    }
    return;
  }
  const DeviceAllocation doomed = m;
  m = DeviceAllocation{};
  try {
    allocations_.release(device, doomed, size_);
  } catch (...) {  // a driver that cannot free leaks; the caller may be a destructor
  }
}

void Residency::release_all() {
  for (std::size_t d = 0; d < mirrors_.size(); ++d) release(d);
}

void Residency::adopt(std::size_t device, DeviceAllocation allocation, DeviceMemory::EntryId id) {
  mirrors_.at(device) = allocation;
  ids_.at(device) = id;
}

DeviceAllocation Residency::forget(std::size_t device) {
  const DeviceAllocation a = mirrors_.at(device);
  mirrors_[device] = DeviceAllocation{};
  ids_[device] = 0;
  return a;
}

DeviceAllocation Residency::evict(std::size_t device) {
  if (client_ != nullptr) client_->box_out(device);
  return forget(device);
}

bool Residency::busy_on(std::size_t device) const {
  return client_ != nullptr && client_->busy_on(device);
}

bool Residency::holds(std::size_t device, const DeviceAllocation& allocation) const {
  return device < mirrors_.size() && mirrors_[device] == allocation;
}

std::string Residency::describe() const {
  return client_ != nullptr ? client_->describe()
                            : "a buffer of " + std::to_string(size_) + " bytes";
}

void Residency::check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
  check_invariants();
#endif
}

void Residency::check_invariants() const {
  for (std::size_t d = 0; d < mirrors_.size(); ++d) {
    const DeviceAllocation& m = mirrors_[d];
    if (m.handle == nullptr && m.size != 0) {
      detail::throw_invariant("Residency: device " + std::to_string(d) +
                                  " has a null allocation of " + std::to_string(m.size) + " bytes",
                              __FILE__, __LINE__);
    }
    if (m.valid() && m.size != size_) {
      detail::throw_invariant("Residency: the allocation on device " + std::to_string(d) +
                                  " holds " + std::to_string(m.size) + " bytes, not the buffer's " +
                                  std::to_string(size_),
                              __FILE__, __LINE__);
    }
    if (memory_ != nullptr && m.valid() != (ids_[d] != 0)) {
      detail::throw_invariant("Residency: device " + std::to_string(d) +
                                  (m.valid() ? " has an allocation DeviceMemory does not account"
                                             : " has no allocation but a DeviceMemory entry"),
                              __FILE__, __LINE__);
    }
  }
}

}  // namespace unimem
