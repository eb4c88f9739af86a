// AllocationCache: released memory is reused by the next allocation of the same size, within a
// per-device and host budget, and given back when a device is full.
#include "memory/allocation_cache.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>
#include <vector>

#include "device/host/host_platform.hpp"

namespace unimem {

namespace detail {
struct AllocationCacheTestAccess {
  static std::multimap<std::uint64_t, DeviceAllocation>& kept(AllocationCache& c,
                                                              std::size_t device) {
    return c.device_kept_[device];
  }
  static std::uint64_t& kept_bytes(AllocationCache& c, std::size_t device) {
    return c.device_kept_bytes_[device];
  }
  static std::uint64_t& host_kept_bytes(AllocationCache& c) { return c.host_kept_bytes_; }
};
}  // namespace detail

namespace {

std::uint64_t allocated_on(const DeviceRegistry& r, std::size_t device) {
  return dynamic_cast<HostDevice&>(r.at(device)).allocated_bytes();
}

TEST(AllocationCache, ReleasedMemoryIsReusedBySameSizeWithinBudget) {
  const DeviceRegistry devices = make_host_devices(2);
  AllocationCache cache(devices.pointers(), 1000);
  const DeviceAllocation a = cache.allocate(0, 400);
  EXPECT_EQ(a.size, 400u);
  cache.release(0, a, 400);
  EXPECT_EQ(cache.kept_device_bytes(0), 400u);
  EXPECT_EQ(cache.kept_device_bytes(1), 0u);
  EXPECT_EQ(allocated_on(devices, 0), 400u);  // kept memory stays allocated on its device

  EXPECT_EQ(cache.allocate(1, 400).size, 400u);       // another device: new memory
  const DeviceAllocation b = cache.allocate(0, 300);  // another size: new memory
  const DeviceAllocation c = cache.allocate(0, 400);  // reused
  EXPECT_EQ(c, a);
  EXPECT_EQ(cache.kept_device_bytes(0), 0u);
  EXPECT_EQ(cache.counts().reused, 1u);
  EXPECT_EQ(cache.counts().allocated, 3u);

  cache.release(0, b, 300);
  cache.release(0, c, 400);
  EXPECT_EQ(cache.kept_device_bytes(0), 700u);
  const DeviceAllocation d = cache.allocate(0, 400);
  cache.release(0, d, 400);
  cache.check_invariants();

  std::unique_ptr<std::byte[]> home = cache.allocate_host(64);
  std::byte* const where = home.get();
  cache.release_host(std::move(home), 64);
  EXPECT_EQ(cache.kept_host_bytes(), 64u);
  EXPECT_EQ(cache.allocate_host(64).get(), where);
  EXPECT_EQ(cache.kept_host_bytes(), 0u);

  cache.clear();
  EXPECT_EQ(cache.kept_device_bytes(0), 0u);
  EXPECT_EQ(allocated_on(devices, 0), 0u);
}

TEST(AllocationCache, MemoryBeyondTheBudgetIsFreedAtOnce) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 500);
  const DeviceAllocation a = cache.allocate(0, 400);
  const DeviceAllocation b = cache.allocate(0, 200);
  const DeviceAllocation big = cache.allocate(0, 600);
  cache.release(0, a, 400);
  cache.release(0, b, 200);    // 400 + 200 > 500: freed
  cache.release(0, big, 600);  // larger than the budget: freed
  EXPECT_EQ(cache.kept_device_bytes(0), 400u);
  EXPECT_EQ(allocated_on(devices, 0), 400u);
  cache.release_host(cache.allocate_host(600), 600);
  EXPECT_EQ(cache.kept_host_bytes(), 0u);

  AllocationCache none(devices.pointers(), 0);  // budget 0: no recycling
  none.release(0, none.allocate(0, 8), 8);
  none.release_host(none.allocate_host(8), 8);
  EXPECT_EQ(none.kept_device_bytes(0), 0u);
  EXPECT_EQ(none.kept_host_bytes(), 0u);
  EXPECT_EQ(none.counts().reused, 0u);
}

TEST(AllocationCache, FullDeviceGetsKeptMemoryBackAndRetries) {
  HostDeviceOptions small;
  small.capacity = 1024;
  const DeviceRegistry devices = make_host_devices(1, small);
  AllocationCache cache(devices.pointers(), 1024);
  cache.release(0, cache.allocate(0, 600), 600);
  EXPECT_EQ(allocated_on(devices, 0), 600u);
  // 600 kept + 700 new do not fit: the kept memory is freed and the allocation retried.
  const DeviceAllocation a = cache.allocate(0, 700);
  EXPECT_EQ(a.size, 700u);
  EXPECT_EQ(cache.kept_device_bytes(0), 0u);
  EXPECT_EQ(allocated_on(devices, 0), 700u);
  // Nothing kept to give back: the device's refusal reaches the caller.
  EXPECT_THROW((void)cache.allocate(0, 700), DeviceError);
  cache.release(0, a, 700);
  EXPECT_THROW((void)cache.allocate(1, 8), PreconditionError);
  EXPECT_THROW((void)cache.kept_device_bytes(1), PreconditionError);
}

TEST(AllocationCache, CheckInvariantsRejectsBrokenBookkeeping) {
  using Access = detail::AllocationCacheTestAccess;
  const DeviceRegistry devices = make_host_devices(1);
  {
    AllocationCache cache(devices.pointers(), 1000);
    cache.release(0, cache.allocate(0, 100), 100);
    cache.check_invariants();
    Access::kept_bytes(cache, 0) = 50;  // count out of step with what is kept
    EXPECT_THROW(cache.check_invariants(), InvariantError);
    Access::kept_bytes(cache, 0) = 100;
  }
  {
    AllocationCache cache(devices.pointers(), 1000);
    cache.release(0, cache.allocate(0, 100), 100);
    auto& kept = Access::kept(cache, 0);
    const DeviceAllocation a = kept.begin()->second;
    kept.clear();
    kept.emplace(200, a);  // filed under a size it does not have
    Access::kept_bytes(cache, 0) = 200;
    EXPECT_THROW(cache.check_invariants(), InvariantError);
    kept.clear();
    kept.emplace(100, a);
    Access::kept_bytes(cache, 0) = 100;
  }
  {
    AllocationCache cache(devices.pointers(), 1000);
    Access::host_kept_bytes(cache) = 8;  // nothing kept on the host
    EXPECT_THROW(cache.check_invariants(), InvariantError);
    Access::host_kept_bytes(cache) = 0;
  }
}

// Random allocations and releases of a few sizes on two devices and the host, against a model
// of what must be kept (checked after every operation; the cache checks itself too when
// invariant checks are on).
TEST(AllocationCache, RandomOperationsKeepTheBookkeepingOfAModel) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    HostDeviceOptions opt;
    opt.capacity = 4096;
    const DeviceRegistry devices = make_host_devices(2, opt);
    const std::uint64_t budget = 256 * (seed % 5);
    AllocationCache cache(devices.pointers(), budget);
    struct Live {
      std::size_t device;
      DeviceAllocation allocation;
    };
    std::vector<Live> live;
    std::vector<std::unique_ptr<std::byte[]>> host;
    std::vector<std::uint64_t> host_sizes;
    std::uint64_t model_kept[2] = {0, 0};
    std::uint64_t model_host_kept = 0;
    const std::uint64_t sizes[] = {64, 128, 256, 512};
    for (int op = 0; op < 300; ++op) {
      const std::uint64_t size = sizes[rng() % 4];
      const std::size_t device = rng() % 2;
      switch (rng() % 5) {
        case 0:
        case 1: {
          const std::uint64_t kept_before = cache.kept_device_bytes(device);
          try {
            const DeviceAllocation a = cache.allocate(device, size);
            ASSERT_EQ(a.size, size);
            live.push_back({device, a});
            // Served from what was kept, or the kept memory was all freed for a retry.
            const std::uint64_t kept_after = cache.kept_device_bytes(device);
            ASSERT_TRUE(kept_after == kept_before - size || kept_after == kept_before ||
                        kept_after == 0);
            model_kept[device] = kept_after;
          } catch (const DeviceError&) {
            model_kept[device] = cache.kept_device_bytes(device);
            ASSERT_EQ(model_kept[device], 0u);  // refused only with nothing left to give back
          }
          break;
        }
        case 2:
        case 3: {
          if (live.empty()) break;
          const std::size_t i = rng() % live.size();
          const Live l = live[i];
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
          const std::uint64_t bytes = l.allocation.size;
          if (bytes <= budget && model_kept[l.device] + bytes <= budget) {
            model_kept[l.device] += bytes;
          }
          cache.release(l.device, l.allocation, bytes);
          ASSERT_EQ(cache.kept_device_bytes(l.device), model_kept[l.device]);
          break;
        }
        case 4: {
          if (!host.empty() && rng() % 2 == 0) {
            const std::uint64_t bytes = host_sizes.back();
            if (bytes <= budget && model_host_kept + bytes <= budget) model_host_kept += bytes;
            cache.release_host(std::move(host.back()), bytes);
            host.pop_back();
            host_sizes.pop_back();
          } else {
            const std::uint64_t kept_before = cache.kept_host_bytes();
            host.push_back(cache.allocate_host(size));
            host_sizes.push_back(size);
            if (cache.kept_host_bytes() != kept_before) model_host_kept -= size;
          }
          ASSERT_EQ(cache.kept_host_bytes(), model_host_kept);
          break;
        }
      }
      ASSERT_NO_THROW(cache.check_invariants()) << "operation " << op;
      for (std::size_t d = 0; d < 2; ++d) {
        ASSERT_LE(cache.kept_device_bytes(d), budget);
        std::uint64_t in_use = cache.kept_device_bytes(d);
        for (const Live& l : live) {
          if (l.device == d) in_use += l.allocation.size;
        }
        ASSERT_EQ(allocated_on(devices, d), in_use) << "device " << d << " operation " << op;
      }
    }
    for (const Live& l : live) cache.release(l.device, l.allocation, l.allocation.size);
  }
}

// The cache is shared by every buffer of a Runtime, whose buffers are released from any thread:
// threads allocating and releasing at once on the same devices and the host (run under TSan by
// scripts/test.sh, label memory-concurrency).
TEST(AllocationCacheConcurrency, ThreadsAllocateAndReleaseAtOnce) {
  const DeviceRegistry devices = make_host_devices(2);
  AllocationCache cache(devices.pointers(), 4096);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 200; ++i) {
        const std::uint64_t size = 64u << (rng() % 4);
        const std::size_t device = rng() % 2;
        const DeviceAllocation a = cache.allocate(device, size);
        std::unique_ptr<std::byte[]> home = cache.allocate_host(size);
        home[0] = std::byte{1};
        cache.release(device, a, size);
        cache.release_host(std::move(home), size);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  cache.check_invariants();
  const AllocationCache::Counts counts = cache.counts();
  EXPECT_EQ(counts.reused + counts.allocated, 4u * 200u * 2u);
  EXPECT_GT(counts.reused, 0u);
  for (std::size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(allocated_on(devices, d), cache.kept_device_bytes(d));  // nothing leaked
  }
}

}  // namespace
}  // namespace unimem
