// Residency: per device, the allocation that holds a buffer's bytes, made on first use and handed
// back to the AllocationCache.
#include "memory/residency.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "device/host/host_platform.hpp"

namespace unimem {

namespace detail {
struct ResidencyTestAccess {
  static std::vector<DeviceAllocation>& mirrors(Residency& r) { return r.mirrors_; }
};
}  // namespace detail

namespace {

std::uint64_t allocated_on(const DeviceRegistry& r, std::size_t device) {
  return dynamic_cast<HostDevice&>(r.at(device)).allocated_bytes();
}

TEST(Residency, AllocatesOnFirstUseAndAnswersWhichAllocationHoldsBytes) {
  const DeviceRegistry devices = make_host_devices(2);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(100, 2, cache);
  EXPECT_EQ(r.buffer_size(), 100u);
  EXPECT_EQ(r.device_count(), 2u);
  EXPECT_FALSE(r.covers(0, Interval{10, 20}));
  EXPECT_EQ(r.find(1, Interval{0, 1}), std::nullopt);
  EXPECT_EQ(r.allocated_bytes(0), 0u);

  const ResidentAllocation a = r.ensure(0, Interval{10, 20});
  EXPECT_TRUE(a.allocation.valid());
  // Today every allocation is the device's full-size mirror, whatever bytes are asked for.
  EXPECT_EQ(a.covers(), (Interval{0, 100}));
  EXPECT_EQ(a.offset_of(10), 10u);
  EXPECT_EQ(a.offset_of(100), 100u);  // the end of the covered range
  EXPECT_THROW((void)ResidentAllocation{}.offset_of(1), PreconditionError);
  EXPECT_EQ(r.ensure(0, Interval{90, 100}), a);  // the same allocation serves other bytes
  EXPECT_EQ(r.ensure_whole(0), a);
  EXPECT_EQ(r.find(0, Interval{0, 100}), a);
  EXPECT_TRUE(r.covers(0, Interval{50, 60}));
  EXPECT_FALSE(r.covers(1, Interval{50, 60}));
  EXPECT_EQ(r.allocated_bytes(0), 100u);
  EXPECT_EQ(allocated_on(devices, 0), 100u);
  EXPECT_EQ(allocated_on(devices, 1), 0u);
  r.check_invariants();

  r.release(0);
  EXPECT_FALSE(r.covers(0, Interval{50, 60}));
  EXPECT_EQ(allocated_on(devices, 0), 0u);  // budget 0: freed, not kept
  r.release(0);                             // nothing left: no effect
}

TEST(Residency, ReleasedAllocationsGoBackToTheCache) {
  const DeviceRegistry devices = make_host_devices(2);
  AllocationCache cache(devices.pointers(), 1 << 20);
  {
    Residency r(256, 2, cache);
    (void)r.ensure_whole(0);
    (void)r.ensure_whole(1);
  }  // the destructor releases both
  EXPECT_EQ(cache.kept_device_bytes(0), 256u);
  EXPECT_EQ(cache.kept_device_bytes(1), 256u);
  Residency next(256, 2, cache);
  (void)next.ensure(1, Interval{0, 8});
  EXPECT_EQ(cache.kept_device_bytes(1), 0u);  // recycled
  EXPECT_EQ(cache.counts().reused, 1u);
  next.release_all();
  EXPECT_EQ(cache.kept_device_bytes(1), 256u);
}

TEST(Residency, RejectsBytesOutsideTheBufferAndUnknownDevices) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(64, 1, cache);
  EXPECT_THROW((void)r.ensure(0, Interval{60, 65}), PreconditionError);
  EXPECT_THROW((void)r.find(0, Interval{0, 65}), PreconditionError);
  EXPECT_THROW((void)r.ensure(1, Interval{0, 8}), PreconditionError);
  EXPECT_THROW(r.release(1), PreconditionError);
  EXPECT_EQ(allocated_on(devices, 0), 0u);
}

TEST(Residency, DeviceRefusalReachesTheCallerAndLeavesNothingAllocated) {
  HostDeviceOptions small;
  small.capacity = 32;
  const DeviceRegistry devices = make_host_devices(1, small);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(64, 1, cache);
  EXPECT_THROW((void)r.ensure(0, Interval{0, 8}), DeviceError);
  EXPECT_FALSE(r.covers(0, Interval{0, 8}));
  r.check_invariants();
}

TEST(Residency, CheckInvariantsRejectsAnAllocationThatIsNotAFullMirror) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(64, 1, cache);
  (void)r.ensure_whole(0);
  r.check_invariants();
  DeviceAllocation& m = detail::ResidencyTestAccess::mirrors(r)[0];
  const DeviceAllocation real = m;
  m.size = 32;  // would leave bytes [32, 64) without storage
  EXPECT_THROW(r.check_invariants(), InvariantError);
  m = DeviceAllocation{nullptr, 64};
  EXPECT_THROW(r.check_invariants(), InvariantError);
  m = real;
  r.check_invariants();
}

}  // namespace
}  // namespace unimem
