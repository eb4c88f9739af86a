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
    : size_(buffer_size), allocations_(allocations), mirrors_(device_count) {}

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
  DeviceAllocation& m = mirrors_[device];
  if (!m.valid()) {
    m = allocations_.allocate(device, size_);
    check_if_enabled();
  }
  return ResidentAllocation{m, 0};
}

std::uint64_t Residency::allocated_bytes(std::size_t device) const {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::allocated_bytes: unknown device");
  return mirrors_[device].valid() ? size_ : 0;
}

void Residency::release(std::size_t device) {
  UNIMEM_REQUIRE(device < mirrors_.size(), "Residency::release: unknown device");
  DeviceAllocation& m = mirrors_[device];
  if (!m.valid()) return;
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
  }
}

}  // namespace unimem
