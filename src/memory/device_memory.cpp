#include "memory/device_memory.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include <unimem/errors.hpp>
#include "common/check.hpp"
#include "memory/residency.hpp"

namespace unimem {

DeviceMemory::DeviceMemory(std::vector<Device*> devices, AllocationCache& cache, std::uint64_t cap)
    : devices_(std::move(devices)), cache_(cache), cap_(cap), per_device_(devices_.size()) {
  for (std::size_t d = 0; d < devices_.size(); ++d) per_device_[d].stats.limit = limit(d);
}

std::uint64_t DeviceMemory::limit(std::size_t device) const {
  UNIMEM_REQUIRE(device < devices_.size(), "DeviceMemory::limit: unknown device");
  const std::uint64_t own = devices_[device]->capacity();
  return cap_ == 0 ? own : std::min(cap_, own);
}

DeviceMemory::Entry& DeviceMemory::entry_locked(std::size_t device, EntryId id, const char* what) {
  UNIMEM_REQUIRE(device < devices_.size(), "DeviceMemory: unknown device");
  auto it = per_device_[device].entries.find(id);
  if (it == per_device_[device].entries.end()) {
    throw PreconditionError(std::string("DeviceMemory::") + what + ": device " +
                            std::to_string(device) + " holds no allocation #" + std::to_string(id));
  }
  return it->second;
}

DeviceMemory::Grant DeviceMemory::allocate(std::size_t device, std::uint64_t bytes,
                                           Residency& owner, std::uint64_t base) {
  UNIMEM_REQUIRE(device < devices_.size(), "DeviceMemory::allocate: unknown device");
  UNIMEM_REQUIRE(bytes > 0, "DeviceMemory::allocate: an allocation needs at least one byte");
  std::lock_guard lock(mutex_);
  PerDevice& pd = per_device_[device];
  Device& dev = *devices_[device];
  const std::uint64_t lim = limit(device);
  auto refuse = [&](const std::string& why) {
    return OutOfDeviceMemory("device " + std::to_string(device) + " (" + dev.name() +
                             "): " + owner.describe() + " needs an allocation of " +
                             std::to_string(bytes) + " bytes: " + why);
  };
  if (bytes > lim) {
    throw refuse("more than the device memory limit of " + std::to_string(lim) + " bytes (" +
                 (cap_ != 0 && cap_ < dev.capacity()
                      ? std::string("the cap: RuntimeOptions::device_memory, "
                                    "UNIMEM_DEVICE_MEMORY or --device-memory")
                      : std::string("the device's own capacity")) +
                 ")");
  }
  if (bytes > dev.max_allocation()) {
    throw refuse("more than the device's largest allocation of " +
                 std::to_string(dev.max_allocation()) + " bytes");
  }
  if (!pd.retiring.empty()) free_finished_retiring_locked(device);
  DeviceAllocation got;
  for (;;) {
    // Memory the cache keeps counts against the limit too, unless it is what will be reused.
    const std::uint64_t kept = cache_.kept_device_bytes(device);
    if (!cache_.keeps(device, bytes) && pd.stats.held_bytes + kept + bytes > lim) {
      if (kept > 0) {
        cache_.trim(device);
      } else if (!reclaim_one_locked(device) && !evict_one_locked(device)) {
        throw refuse(std::to_string(pd.stats.held_bytes) + " of the limit of " +
                     std::to_string(lim) +
                     " bytes are held by allocations that running "
                     "operations need (" +
                     std::to_string(pd.in_use.size()) + " in use)");
      }
      continue;
    }
    try {
      got = cache_.allocate(device, bytes);
      break;
    } catch (const DeviceError& e) {
      // The driver refused under the limit (other users of the device, fragmentation, an
      // injected fault): make room and try again while anything can be evicted.
      ++pd.stats.refusals;
      if (!reclaim_one_locked(device) && !evict_one_locked(device)) {
        throw refuse("the driver refused it and nothing is left to evict (" +
                     std::to_string(pd.stats.held_bytes) + " bytes held, " +
                     std::to_string(pd.in_use.size()) + " allocations in use): " + e.what());
      }
    }
  }
  const EntryId id = next_id_++;
  Entry& e = pd.entries[id];
  e.allocation = got;
  e.owner = &owner;
  e.position = pd.unused.insert(pd.unused.end(), id);
  owner.adopt(device, base, got, id);
  pd.stats.held_bytes += got.size;
  pd.stats.peak_held_bytes = std::max(pd.stats.peak_held_bytes, pd.stats.held_bytes);
  settle_due_.store(true, std::memory_order_release);
  check_if_enabled_locked();
  return Grant{got, id};
}

bool DeviceMemory::fits_without_eviction(std::size_t device, std::uint64_t bytes) const {
  UNIMEM_REQUIRE(device < devices_.size(), "DeviceMemory::fits_without_eviction: unknown device");
  std::lock_guard lock(mutex_);
  const std::uint64_t held = per_device_[device].stats.held_bytes;
  const std::uint64_t lim = limit(device);
  return bytes <= devices_[device]->max_allocation() && held <= lim && bytes <= lim - held;
}

bool DeviceMemory::evict_one_locked(std::size_t device) {
  PerDevice& pd = per_device_[device];
  if (pd.unused.empty()) return false;
  // Least recently used first; one whose operations have all finished before a busy one.
  auto victim = std::find_if(pd.unused.begin(), pd.unused.end(), [&](EntryId id) {
    return !pd.entries.at(id).owner->busy_on(device, id);
  });
  if (victim == pd.unused.end()) victim = pd.unused.begin();
  evict_locked(device, *victim);
  return true;
}

void DeviceMemory::evict_locked(std::size_t device, EntryId id) {
  PerDevice& pd = per_device_[device];
  Entry& e = pd.entries.at(id);
  // Box-out: the owner writes home the bytes only this copy holds, waits for the operations on
  // it and forgets it. If that throws, the allocation stays where it was.
  const DeviceAllocation doomed = e.owner->evict(device, id);
  pd.unused.erase(e.position);
  pd.entries.erase(id);
  pd.stats.held_bytes -= doomed.size;
  settle_due_.store(true, std::memory_order_release);
  pd.stats.evicted_bytes += doomed.size;
  ++pd.stats.evictions;
  evictions_.fetch_add(1, std::memory_order_relaxed);
  try {
    // To the cache, counted against the limit until trimmed: an out-of-core launch's next chunk
    // asks for a box of the same size, and gets this one without a driver allocation.
    cache_.release(device, doomed, doomed.size);
  } catch (...) {  // a driver that cannot free leaks; the bytes are no longer ours either way
  }
}

void DeviceMemory::evict(std::size_t device, EntryId id) {
  std::lock_guard lock(mutex_);
  const Entry& e = entry_locked(device, id, "evict");
  if (e.uses > 0) {
    throw PreconditionError("DeviceMemory::evict: allocation #" + std::to_string(id) +
                            " on device " + std::to_string(device) + " of " + e.owner->describe() +
                            " is in use");
  }
  evict_locked(device, id);
  check_if_enabled_locked();
}

void DeviceMemory::drop_retiring_locked(std::size_t device, EntryId id, const DeviceAllocation& a) {
  PerDevice& pd = per_device_[device];
  pd.retiring.erase(pd.entries.at(id).position);
  pd.entries.erase(id);
  pd.stats.held_bytes -= a.size;
  pd.stats.retiring_bytes -= a.size;
  settle_due_.store(true, std::memory_order_release);
  try {
    cache_.release(device, a, a.size);
  } catch (...) {  // a driver that cannot free leaks; the bytes are no longer ours either way
  }
}

bool DeviceMemory::reclaim_one_locked(std::size_t device) {
  PerDevice& pd = per_device_[device];
  if (pd.retiring.empty()) return false;
  const EntryId id = pd.retiring.front();
  // The owner waits for the operations still using it (the merge's copies, earlier kernels) and
  // forgets it: waiting costs less than evicting a box whose bytes are current.
  const std::optional<DeviceAllocation> a = pd.entries.at(id).owner->reclaim(device, id, true);
  drop_retiring_locked(device, id, *a);
  ++pd.stats.reclaims;
  return true;
}

void DeviceMemory::free_finished_retiring_locked(std::size_t device) {
  PerDevice& pd = per_device_[device];
  for (auto it = pd.retiring.begin(); it != pd.retiring.end();) {
    const EntryId id = *it++;  // dropping id erases its list node
    if (const auto a = pd.entries.at(id).owner->reclaim(device, id, false)) {
      drop_retiring_locked(device, id, *a);
    }
  }
}

void DeviceMemory::release(std::size_t device, EntryId id) {
  std::lock_guard lock(mutex_);
  Entry& e = entry_locked(device, id, "release");
  PerDevice& pd = per_device_[device];
  const DeviceAllocation a = e.allocation;
  (void)e.owner->forget(device, id);
  pd.list_of(e).erase(e.position);
  if (e.retiring) pd.stats.retiring_bytes -= a.size;
  pd.entries.erase(id);
  pd.stats.held_bytes -= a.size;
  settle_due_.store(true, std::memory_order_release);
  try {
    cache_.release(device, a, a.size);
  } catch (...) {  // a driver that cannot free leaks; the caller may be a destructor
  }
  check_if_enabled_locked();
}

void DeviceMemory::retire(std::size_t device, EntryId id) {
  std::lock_guard lock(mutex_);
  Entry& e = entry_locked(device, id, "retire");
  UNIMEM_REQUIRE(!e.retiring, "DeviceMemory::retire: the allocation is retiring already");
  PerDevice& pd = per_device_[device];
  if (e.uses == 0) pd.unused.erase(e.position);
  e.retiring = true;
  if (e.uses == 0) e.position = pd.retiring.insert(pd.retiring.end(), id);
  pd.stats.retiring_bytes += e.allocation.size;
  settle_due_.store(true, std::memory_order_release);
  check_if_enabled_locked();
}

void DeviceMemory::use(std::size_t device, EntryId id) {
  std::lock_guard lock(mutex_);
  Entry& e = entry_locked(device, id, "use");
  PerDevice& pd = per_device_[device];
  if (e.uses++ == 0) {  // moved between the lists without reallocating its node
    pd.in_use.splice(pd.in_use.end(), pd.idle_list(e), e.position);
  }
  check_if_enabled_locked();
}

void DeviceMemory::unuse(std::size_t device, EntryId id) {
  std::lock_guard lock(mutex_);
  Entry& e = entry_locked(device, id, "unuse");
  UNIMEM_REQUIRE(e.uses > 0, "DeviceMemory::unuse: the allocation is not in use");
  PerDevice& pd = per_device_[device];
  if (--e.uses == 0) {
    std::list<EntryId>& idle = pd.idle_list(e);
    idle.splice(idle.end(), pd.in_use, e.position);  // most recently used (or retired)
  }
  check_if_enabled_locked();
}

std::vector<DeviceMemory::EntryId> DeviceMemory::list_order(std::size_t device) const {
  std::lock_guard lock(mutex_);
  const PerDevice& pd = per_device_.at(device);
  std::vector<EntryId> out;
  for (const std::list<EntryId>* list : {&pd.in_use, &pd.unused, &pd.retiring}) {
    out.insert(out.end(), list->begin(), list->end());
    out.push_back(0);  // ids start at 1
  }
  return out;
}

void DeviceMemory::touch(std::size_t device, EntryId id) {
  std::lock_guard lock(mutex_);
  Entry& e = entry_locked(device, id, "touch");
  if (e.uses == 0 && !e.retiring) {
    PerDevice& pd = per_device_[device];
    pd.unused.splice(pd.unused.end(), pd.unused, e.position);
  }
}

std::uint32_t DeviceMemory::uses(std::size_t device, EntryId id) const {
  std::lock_guard lock(mutex_);
  UNIMEM_REQUIRE(device < devices_.size(), "DeviceMemory::uses: unknown device");
  auto it = per_device_[device].entries.find(id);
  UNIMEM_REQUIRE(it != per_device_[device].entries.end(), "DeviceMemory::uses: unknown allocation");
  return it->second.uses;
}

DeviceMemoryStats DeviceMemory::stats(std::size_t device) const {
  std::lock_guard lock(mutex_);
  UNIMEM_REQUIRE(device < devices_.size(), "DeviceMemory::stats: unknown device");
  return per_device_[device].stats;
}

void DeviceMemory::reset_peaks() {
  std::lock_guard lock(mutex_);
  for (PerDevice& pd : per_device_) {
    pd.stats.peak_held_bytes = pd.stats.held_bytes;
    pd.stats.peak_settled_bytes = pd.stats.held_bytes;
  }
}

void DeviceMemory::settle() {
  // Nothing held or retiring changed since the last settle: the peak stays (no lock per launch).
  if (!settle_due_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  settle_due_.store(false, std::memory_order_relaxed);
  for (PerDevice& pd : per_device_) {
    pd.stats.peak_settled_bytes =
        std::max(pd.stats.peak_settled_bytes, pd.stats.held_bytes - pd.stats.retiring_bytes);
  }
}

void DeviceMemory::check_invariants() const {
  std::lock_guard lock(mutex_);
  check_locked();
}

void DeviceMemory::check_if_enabled_locked() const {
#if UNIMEM_INVARIANTS_ENABLED
  // Whole-structure checks only while the lists are small, like the directory's.
  std::size_t total = 0;
  for (const PerDevice& pd : per_device_) total += pd.entries.size();
  if (total <= 1024) check_locked();
#endif
}

void DeviceMemory::check_locked() const {
  for (std::size_t d = 0; d < per_device_.size(); ++d) {
    const PerDevice& pd = per_device_[d];
    auto fail = [d](const std::string& what) {
      detail::throw_invariant("DeviceMemory: device " + std::to_string(d) + ": " + what, __FILE__,
                              __LINE__);
    };
    if (pd.in_use.size() + pd.unused.size() + pd.retiring.size() != pd.entries.size()) {
      fail(std::to_string(pd.entries.size()) + " allocations but " +
           std::to_string(pd.in_use.size()) + " in use, " + std::to_string(pd.unused.size()) +
           " unused and " + std::to_string(pd.retiring.size()) + " retiring on the lists");
    }
    auto check_list = [&](const std::list<EntryId>& list, bool in_use, bool retiring) {
      for (auto it = list.begin(); it != list.end(); ++it) {
        auto e = pd.entries.find(*it);
        if (e == pd.entries.end())
          fail("a list names the unknown allocation #" + std::to_string(*it));
        if (e->second.position != it)
          fail("allocation #" + std::to_string(*it) + " is listed twice");
        const char* name = in_use ? "in-use" : retiring ? "retiring" : "unused";
        if ((e->second.uses > 0) != in_use) {
          fail("allocation #" + std::to_string(*it) + " with use count " +
               std::to_string(e->second.uses) + " is on the " + name + " list");
        }
        if (!in_use && e->second.retiring != retiring) {
          fail(std::string("allocation #") + std::to_string(*it) +
               (e->second.retiring ? " is retiring" : " is not retiring") + " but on the " + name +
               " list");
        }
      }
    };
    check_list(pd.in_use, true, false);
    check_list(pd.unused, false, false);
    check_list(pd.retiring, false, true);
    std::uint64_t held = 0;
    std::uint64_t retiring = 0;
    for (const auto& [id, e] : pd.entries) {
      if (!e.allocation.valid() || e.owner == nullptr) {
        fail("allocation #" + std::to_string(id) + " is null or has no owner");
      }
      if (!e.owner->holds(d, e.allocation)) {
        fail("allocation #" + std::to_string(id) + " is not held by its owner " +
             e.owner->describe());
      }
      held += e.allocation.size;
      if (e.retiring) retiring += e.allocation.size;
    }
    if (retiring != pd.stats.retiring_bytes) {
      fail("retiring allocations of " + std::to_string(retiring) + " bytes but " +
           std::to_string(pd.stats.retiring_bytes) + " counted");
    }
    if (held != pd.stats.held_bytes) {
      fail("allocations of " + std::to_string(held) + " bytes but " +
           std::to_string(pd.stats.held_bytes) + " counted");
    }
    if (pd.stats.peak_held_bytes < held) {
      fail("peak " + std::to_string(pd.stats.peak_held_bytes) + " below the " +
           std::to_string(held) + " bytes held");
    }
  }
}

}  // namespace unimem
