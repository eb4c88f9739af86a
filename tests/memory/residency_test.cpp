// Residency: per device, the allocation that holds a buffer's bytes, made on first use and handed
// back to the AllocationCache.
#include "memory/residency.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/host/host_platform.hpp"
#include "memory/device_memory.hpp"

namespace unimem {

namespace detail {
struct ResidencyTestAccess {
  static ResidentAllocation& first(Residency& r, std::size_t device) {
    return r.held_.at(device).at(0).where;
  }
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

  const ResidentAllocation a = r.ensure_whole(0);
  EXPECT_TRUE(a.allocation.valid());
  EXPECT_EQ(a.covers(), (Interval{0, 100}));
  EXPECT_EQ(a.offset_of(10), 10u);
  EXPECT_EQ(a.offset_of(100), 100u);  // the end of the covered range
  EXPECT_THROW((void)ResidentAllocation{}.offset_of(1), PreconditionError);
  EXPECT_EQ(r.ensure(0, Interval{90, 100}), a);  // the same allocation serves other bytes
  EXPECT_EQ(r.ensure(0, Interval{10, 20}), a);
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
  (void)next.ensure_whole(1);
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
  EXPECT_THROW((void)r.ensure_whole(0), DeviceError);
  EXPECT_FALSE(r.covers(0, Interval{0, 8}));
  r.check_invariants();
}

TEST(Residency, CheckInvariantsRejectsAnAllocationOutsideTheBufferOrNull) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(64, 1, cache);
  (void)r.ensure(0, Interval{16, 48});
  r.check_invariants();
  ResidentAllocation& m = detail::ResidencyTestAccess::first(r, 0);
  const ResidentAllocation real = m;
  m.base = 40;  // would hold bytes [40, 72) of a 64-byte buffer
  EXPECT_THROW(r.check_invariants(), InvariantError);
  m = real;
  m.allocation = DeviceAllocation{nullptr, 32};
  EXPECT_THROW(r.check_invariants(), InvariantError);
  m = real;
  r.check_invariants();
}

// Partial residency (BBMM Algorithm 2): a box holds only the bytes asked for; a box that
// intersects or touches what the device holds merges with it into their bounding box, moving
// the bytes through the client; disjoint boxes stay apart.
struct MovingClient final : EvictionClient {
  std::vector<std::pair<Interval, Interval>> moves;  // from.covers(), to.covers()
  std::vector<Interval> boxed_out;
  EventList users;  // what relocate says still uses `from` (nothing by default)
  [[nodiscard]] bool busy_on(std::size_t) const override { return false; }
  void box_out(std::size_t, const Interval& bytes) override { boxed_out.push_back(bytes); }
  EventList relocate(std::size_t, const ResidentAllocation& from,
                     const ResidentAllocation& to) override {
    moves.emplace_back(from.covers(), to.covers());
    return users;
  }
  [[nodiscard]] std::string describe() const override { return "buffer 'm'"; }
};

TEST(Residency, BoxesHoldOnlyTheirBytesAndMergeIntoTheBoundingBoxWhenTheyMeet) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  const ResidentAllocation low = r.ensure(0, Interval{100, 200});
  EXPECT_EQ(low.covers(), (Interval{100, 200}));
  EXPECT_EQ(low.offset_of(150), 50u);
  const ResidentAllocation high = r.ensure(0, Interval{500, 600});  // disjoint: a second box
  EXPECT_EQ(high.covers(), (Interval{500, 600}));
  EXPECT_EQ(r.allocations(0).size(), 2u);
  EXPECT_EQ(r.allocated_bytes(0), 200u);
  EXPECT_EQ(allocated_on(devices, 0), 200u);
  EXPECT_EQ(r.find(0, Interval{150, 160}), low);
  EXPECT_EQ(r.find(0, Interval{150, 550}), std::nullopt);  // no one box holds it
  EXPECT_TRUE(client.moves.empty());

  // Touching the low box: merged into [50, 200), its bytes moved, the old box freed.
  const ResidentAllocation grown = r.ensure(0, Interval{50, 100});
  EXPECT_EQ(grown.covers(), (Interval{50, 200}));
  ASSERT_EQ(client.moves.size(), 1u);
  EXPECT_EQ(client.moves[0].first, (Interval{100, 200}));
  EXPECT_EQ(client.moves[0].second, (Interval{50, 200}));
  EXPECT_EQ(r.allocated_bytes(0), 250u);
  EXPECT_EQ(memory.stats(0).held_bytes, 250u);
  EXPECT_EQ(memory.stats(0).peak_held_bytes, 350u);  // old and merged box existed together

  // Spanning both: one box [50, 600) from both, each moved.
  client.moves.clear();
  const ResidentAllocation all = r.ensure(0, Interval{150, 550});
  EXPECT_EQ(all.covers(), (Interval{50, 600}));
  EXPECT_EQ(client.moves.size(), 2u);
  EXPECT_EQ(r.allocations(0).size(), 1u);
  EXPECT_EQ(allocated_on(devices, 0), 550u);
  EXPECT_TRUE(client.boxed_out.empty());
  r.check_invariants();
  memory.check_invariants();
}

// A box that keeps growing (the third merge on and later) gets room to grow by half its span in
// the direction it grew, short of the device's other boxes.
TEST(Residency, ABoxThatKeepsGrowingGetsRoomAndStopsShortOfOtherBoxes) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(10000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{5000, 5100});  // another box, above
  (void)r.ensure(0, Interval{0, 100});
  EXPECT_EQ(r.ensure(0, Interval{100, 110}).covers(), (Interval{0, 110}));  // merge 1: exact
  EXPECT_EQ(r.ensure(0, Interval{110, 120}).covers(), (Interval{0, 120}));  // merge 2: exact
  EXPECT_EQ(r.ensure(0, Interval{120, 130}).covers(), (Interval{0, 195}));  // 130 + 130 / 2
  EXPECT_EQ(r.ensure(0, Interval{190, 195}).covers(), (Interval{0, 195}));  // room: no merge
  EXPECT_EQ(client.moves.size(), 3u);
  EXPECT_EQ(r.ensure(0, Interval{195, 4000}).covers(), (Interval{0, 4999}));  // not 5000: apart
  r.check_invariants();
}

TEST(Residency, AMergeWithoutRoomForBothBoxesOutTheOldBoxesFirst) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 150);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{0, 100});
  const ResidentAllocation grown = r.ensure(0, Interval{50, 150});  // 100 + 150 > 150
  // Boxed out, the old box needs no room: the new one holds only the bytes asked for (an
  // out-of-core launch's chunks walk through a buffer whose whole does not fit).
  EXPECT_EQ(grown.covers(), (Interval{50, 150}));
  EXPECT_TRUE(client.moves.empty());
  EXPECT_EQ(client.boxed_out, std::vector<Interval>{(Interval{0, 100})});
  EXPECT_LE(memory.stats(0).peak_held_bytes, 150u);
  // The forced box-out is an eviction like any other in DeviceMemory's figures.
  EXPECT_EQ(memory.stats(0).evictions, 1u);
  EXPECT_EQ(memory.stats(0).evicted_bytes, 100u);
  EXPECT_EQ(memory.stats(0).held_bytes, 100u);
  r.check_invariants();
  memory.check_invariants();
}

// Out-of-core chunks (Placement::replace): the boxes the new bytes overlap or touch are boxed
// out (counted evictions), never merged, even with room to merge; the new box holds exactly the
// bytes; a disjoint box stays; a box in use cannot be replaced.
TEST(Residency, ReplacingBoxesOutWhatTheNewBytesOverlapOrTouchInsteadOfMerging) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);  // no cap: a merge would fit
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  using P = Residency::Placement;
  (void)r.ensure(0, Interval{0, 100}, P::replace);
  (void)r.ensure(0, Interval{300, 400}, P::replace);
  (void)r.ensure(0, Interval{800, 900}, P::replace);
  // Overlaps [0, 100) and touches [300, 400); [800, 900) is apart.
  const ResidentAllocation next = r.ensure(0, Interval{90, 300}, P::replace);
  EXPECT_EQ(next.covers(), (Interval{90, 300}));
  EXPECT_TRUE(client.moves.empty());
  EXPECT_EQ(client.boxed_out, (std::vector<Interval>{Interval{0, 100}, Interval{300, 400}}));
  ASSERT_EQ(r.allocations(0).size(), 2u);
  EXPECT_EQ(r.allocations(0)[1].covers(), (Interval{800, 900}));
  EXPECT_EQ(memory.stats(0).evictions, 2u);
  EXPECT_EQ(memory.stats(0).evicted_bytes, 200u);
  EXPECT_EQ(memory.stats(0).held_bytes, 310u);
  EXPECT_EQ(allocated_on(devices, 0), 310u);  // the cache keeps nothing (budget 0)
  // A box of exactly the bytes is found, not replaced; a larger one that holds them is replaced
  // by one of exactly the bytes (a chunk's boxes were sized for exactly its bytes).
  EXPECT_EQ(r.ensure(0, Interval{90, 300}, P::replace), next);
  EXPECT_EQ(client.boxed_out.size(), 2u);
  EXPECT_EQ(r.ensure(0, Interval{100, 200}, P::replace).covers(), (Interval{100, 200}));
  EXPECT_EQ(client.boxed_out.back(), (Interval{90, 300}));
  EXPECT_EQ(memory.stats(0).evictions, 3u);
  EXPECT_EQ(r.ensure(0, Interval{100, 150}).covers(), (Interval{100, 200}));  // merge: found
  // In use: neither replaced nor merged.
  (void)r.begin_use(0, Interval{800, 900});
  EXPECT_THROW((void)r.ensure(0, Interval{850, 950}, P::replace), PreconditionError);
  EXPECT_EQ(r.allocations(0).size(), 2u);
  r.end_use(0, Interval{800, 900});
  r.check_invariants();
  memory.check_invariants();
}

TEST(Residency, ABoxInUseIsNeitherMergedNorEvicted) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  const ResidentAllocation held = r.begin_use(0, Interval{0, 100});
  EXPECT_EQ(held.covers(), (Interval{0, 100}));
  EXPECT_THROW((void)r.ensure(0, Interval{50, 150}), PreconditionError);
  EXPECT_EQ(r.find(0, Interval{0, 100}), held);  // unchanged
  r.end_use(0, Interval{0, 100});
  EXPECT_EQ(r.ensure(0, Interval{50, 150}).covers(), (Interval{0, 150}));
  r.check_invariants();
}

// A merged box that operations may still use is not freed by the merge: it retires, no longer
// holds any bytes, stays counted by DeviceMemory and allocated on the device, and is freed once
// the events relocate returned have completed (reap(), run by every ensure()).
TEST(Residency, AMergedBoxRetiresUntilItsUsersFinish) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{100, 200});
  auto [kernel, state] = Event::make_manual();  // a kernel still running on [100, 200)
  client.users = {kernel, Event{}};             // a null event counts as finished
  const ResidentAllocation grown = r.ensure(0, Interval{0, 150});
  EXPECT_EQ(grown.covers(), (Interval{0, 200}));
  EXPECT_EQ(r.allocations(0), std::vector<ResidentAllocation>{grown});  // the old box holds nothing
  EXPECT_EQ(r.allocated_bytes(0), 200u);
  EXPECT_EQ(r.retiring_bytes(0), 100u);
  EXPECT_EQ(memory.stats(0).held_bytes, 300u);  // still counted...
  EXPECT_EQ(memory.stats(0).retiring_bytes, 100u);
  EXPECT_EQ(allocated_on(devices, 0), 300u);  // ...and still allocated
  r.check_invariants();
  memory.check_invariants();
  memory.settle();  // a launch ending now: the retiring box is not part of what it settles at
  EXPECT_EQ(memory.stats(0).peak_settled_bytes, 200u);

  r.reap();  // the kernel still runs: nothing is freed
  client.users.clear();
  (void)r.ensure(0, Interval{0, 10});  // neither does a later ensure
  EXPECT_EQ(r.retiring_bytes(0), 100u);
  EXPECT_EQ(allocated_on(devices, 0), 300u);

  state->complete();
  (void)r.ensure(0, Interval{0, 10});  // a lookup does not look at retiring boxes
  EXPECT_EQ(r.retiring_bytes(0), 100u);
  (void)r.ensure(0, Interval{500, 600});  // an ensure that allocates frees it first
  EXPECT_EQ(r.retiring_bytes(0), 0u);
  EXPECT_EQ(memory.stats(0).held_bytes, 300u);
  EXPECT_EQ(memory.stats(0).retiring_bytes, 0u);
  EXPECT_EQ(memory.stats(0).peak_held_bytes, 300u);
  EXPECT_EQ(allocated_on(devices, 0), 300u);
  r.check_invariants();
  memory.check_invariants();
}

TEST(Residency, AMergedBoxWhoseUsersAllFinishedIsFreedAtOnce) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{100, 200});
  auto [done, state] = Event::make_manual();
  state->complete();
  client.users = {done};
  (void)r.ensure(0, Interval{150, 300});
  EXPECT_EQ(r.retiring_bytes(0), 0u);
  EXPECT_EQ(memory.stats(0).held_bytes, 200u);
  EXPECT_EQ(allocated_on(devices, 0), 200u);
}

// release() (the buffer is going away) waits for a retiring box's users before freeing it.
TEST(Residency, ReleaseWaitsForTheUsersOfARetiringBox) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{0, 100});
  auto [kernel, state] = Event::make_manual();
  client.users = {kernel};
  (void)r.ensure(0, Interval{50, 150});
  ASSERT_EQ(r.retiring_bytes(0), 100u);
  std::atomic<bool> completed{false};
  std::thread finisher([&completed, s = state] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    completed = true;
    s->complete();
  });
  r.release(0);
  EXPECT_TRUE(completed.load());  // release returned only after the kernel finished
  finisher.join();
  EXPECT_EQ(r.retiring_bytes(0), 0u);
  EXPECT_EQ(memory.stats(0).held_bytes, 0u);
  EXPECT_EQ(allocated_on(devices, 0), 0u);
  memory.check_invariants();
}

// Under a cap, a retiring box is reclaimed (after its users) before anything current is
// evicted: it holds no current bytes, an eviction would cost a write-back and a refetch.
TEST(Residency, ARetiringBoxIsReclaimedBeforeAnythingIsEvicted) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 300);
  MovingClient client, other_client;
  Residency r(1000, 1, cache, memory, client);
  Residency other(1000, 1, cache, memory, other_client);
  (void)other.ensure(0, Interval{0, 50});  // an unused box eviction could take
  (void)r.ensure(0, Interval{0, 100});
  auto [kernel, state] = Event::make_manual();
  client.users = {kernel};
  (void)r.ensure(0, Interval{50, 150});  // 50 + 100 + 150 = 300: fits, the old box retires
  ASSERT_EQ(r.retiring_bytes(0), 100u);
  std::atomic<bool> completed{false};
  std::thread finisher([&completed, s = state] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    completed = true;
    s->complete();
  });
  (void)other.ensure(0, Interval{500, 580});  // 380 > 300: the retiring box goes, after its kernel
  EXPECT_TRUE(completed.load());
  finisher.join();
  EXPECT_EQ(memory.stats(0).reclaims, 1u);
  EXPECT_EQ(memory.stats(0).evictions, 0u);
  EXPECT_TRUE(other_client.boxed_out.empty());
  EXPECT_EQ(r.retiring_bytes(0), 0u);
  EXPECT_EQ(memory.stats(0).held_bytes, 280u);
  EXPECT_LE(memory.stats(0).peak_held_bytes, 300u);
  r.check_invariants();
  other.check_invariants();
  memory.check_invariants();
}

// A retiring box whose users have finished is freed by the next allocation on its device, even
// another buffer's, before its own owner looks again: it is not counted against that allocation.
TEST(Residency, AFinishedRetiringBoxIsFreedByTheNextAllocationOnItsDevice) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client, other_client;
  Residency r(1000, 1, cache, memory, client);
  Residency other(1000, 1, cache, memory, other_client);
  (void)r.ensure(0, Interval{0, 100});
  auto [copy, state] = Event::make_manual();
  client.users = {copy};
  (void)r.ensure(0, Interval{50, 150});
  ASSERT_EQ(memory.stats(0).retiring_bytes, 100u);
  state->complete();
  (void)other.ensure(0, Interval{0, 40});
  EXPECT_EQ(r.retiring_bytes(0), 0u);
  EXPECT_EQ(memory.stats(0).retiring_bytes, 0u);
  EXPECT_EQ(memory.stats(0).held_bytes, 190u);
  EXPECT_EQ(memory.stats(0).peak_held_bytes, 250u);  // old and merged box together, not 290
  EXPECT_EQ(memory.stats(0).reclaims, 0u);           // nobody waited
  r.check_invariants();
  memory.check_invariants();
}

// A box that keeps growing while its old boxes' users still run keeps at most as many retiring
// bytes as live ones: the oldest retiring box is waited for and freed.
TEST(Residency, RetiringBoxesNeverOutweighTheLiveOnes) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  MovingClient client;
  Residency r(1000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{0, 100});
  auto [first, first_state] = Event::make_manual();
  client.users = {first};
  (void)r.ensure(0, Interval{100, 110});  // [0, 100) retires: 100 <= 110
  auto [second, second_state] = Event::make_manual();
  client.users = {second};
  EXPECT_EQ(r.retiring_bytes(0), 100u);
  std::atomic<bool> completed{false};
  std::thread finisher([&completed, s = first_state] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    completed = true;
    s->complete();
  });
  (void)r.ensure(0, Interval{110, 120});  // 100 + 110 > 120: the oldest is waited for
  EXPECT_TRUE(completed.load());
  finisher.join();
  EXPECT_EQ(r.retiring_bytes(0), 110u);  // [0, 110), whose user still runs
  EXPECT_EQ(r.allocated_bytes(0), 120u);
  EXPECT_EQ(memory.stats(0).held_bytes, 230u);
  second_state->complete();
  r.check_invariants();
  memory.check_invariants();
}

// Without a DeviceMemory (memory straight from the cache) a merge frees the merged boxes, never
// the new one, wherever it lies among them.
TEST(Residency, WithoutDeviceMemoryAMergeFreesTheMergedBoxes) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(1000, 1, cache);
  (void)r.ensure(0, Interval{300, 400});
  (void)r.ensure(0, Interval{500, 600});
  const ResidentAllocation all = r.ensure(0, Interval{100, 550});
  EXPECT_EQ(all.covers(), (Interval{100, 600}));
  EXPECT_EQ(r.allocations(0), std::vector<ResidentAllocation>{all});
  EXPECT_EQ(allocated_on(devices, 0), 500u);
  r.check_invariants();
}

// Random boxes against a byte oracle: after every ensure, the box asked for is held by one
// allocation, allocations never overlap or touch, and every byte some earlier box held is still
// held (merges never drop bytes: nothing is evicted without a cap).
TEST(Residency, RandomBoxesKeepEveryHeldByteAndStayDisjoint) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const DeviceRegistry devices = make_host_devices(2);
    AllocationCache cache(devices.pointers(), 1 << 16);
    DeviceMemory memory(devices.pointers(), cache, 0);
    MovingClient client;
    const std::uint64_t size = 1 + rng() % 4000;
    Residency r(size, 2, cache, memory, client);
    std::vector<std::vector<char>> held(2, std::vector<char>(size, 0));
    for (int op = 0; op < 60; ++op) {
      const std::size_t d = rng() % 2;
      const std::uint64_t b = rng() % size;
      const std::uint64_t e = b + 1 + rng() % std::min<std::uint64_t>(size - b, 300);
      const ResidentAllocation a = r.ensure(d, Interval{b, e});
      ASSERT_TRUE(a.covers().contains(Interval{b, e}));
      for (std::uint64_t i = b; i < e; ++i) held[d][i] = 1;
      std::uint64_t total = 0;
      for (const ResidentAllocation& x : r.allocations(d)) total += x.allocation.size;
      ASSERT_EQ(total, r.allocated_bytes(d));
      for (std::uint64_t i = 0; i < size; ++i) {
        if (held[d][i] != 0) {
          ASSERT_TRUE(r.covers(d, Interval{i, i + 1})) << "byte " << i;
        }
      }
      r.check_invariants();
    }
    memory.check_invariants();
  }
}

// Random boxes, merged or replaced, against the properties each placement promises: a box
// already held is found unchanged (replacing: only a box of exactly the bytes); a replacing box
// holds exactly its bytes, the boxes it overlapped or touched are boxed out (one eviction each) and
// every other box stays as it was; a merging box covers its bytes and every box it met; boxes never
// overlap or touch.
TEST(Residency, RandomMergedAndReplacedBoxesKeepTheirPromises) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const DeviceRegistry devices = make_host_devices(2);
    AllocationCache cache(devices.pointers(), 1 << 16);
    DeviceMemory memory(devices.pointers(), cache, 0);
    MovingClient client;
    const std::uint64_t size = 1 + rng() % 4000;
    Residency r(size, 2, cache, memory, client);
    for (int op = 0; op < 80; ++op) {
      const std::size_t d = rng() % 2;
      const std::uint64_t b = rng() % size;
      const Interval bytes{b, b + 1 + rng() % std::min<std::uint64_t>(size - b, 300)};
      const auto placement =
          rng() % 2 == 0 ? Residency::Placement::merge : Residency::Placement::replace;
      const std::vector<ResidentAllocation> before = r.allocations(d);
      const std::vector<ResidentAllocation> other_before = r.allocations(1 - d);
      const std::uint64_t changes_before = r.changes();
      const std::uint64_t evictions_before = memory.stats(d).evictions;
      const std::optional<ResidentAllocation> found = r.find(d, bytes);
      const ResidentAllocation got = r.ensure(d, bytes, placement);
      ASSERT_TRUE(got.covers().contains(bytes));
      const auto meets = [&](const ResidentAllocation& a) {
        return a.covers().begin <= bytes.end && bytes.begin <= a.covers().end;
      };
      const std::vector<ResidentAllocation> after = r.allocations(d);
      // changes() moves exactly when the held allocations do (RuntimeCore's affine replays
      // take an unchanged count for "the allocation found last time still holds its bytes").
      ASSERT_EQ(r.changes() == changes_before,
                after == before && r.allocations(1 - d) == other_before)
          << "op " << op << ": changes " << changes_before << " -> " << r.changes();
      if (found && (placement == Residency::Placement::merge || found->covers() == bytes)) {
        ASSERT_EQ(got, *found);
        ASSERT_EQ(after, before);
        continue;
      }
      std::uint64_t met = 0;
      for (const ResidentAllocation& a : before) {
        if (meets(a)) {
          ++met;
          if (placement == Residency::Placement::merge) {
            ASSERT_TRUE(got.covers().contains(a.covers()));
          }
        } else {
          ASSERT_NE(std::find(after.begin(), after.end(), a), after.end())
              << "box " << a.covers().to_string() << " disappeared";
        }
      }
      if (placement == Residency::Placement::replace) {
        ASSERT_EQ(got.covers(), bytes);
        ASSERT_EQ(memory.stats(d).evictions, evictions_before + met);
      }
      r.check_invariants();
    }
    memory.check_invariants();
    // Freeing a device's allocations changes them too.
    for (std::size_t d = 0; d < 2; ++d) {
      const bool held = !r.allocations(d).empty();
      const std::uint64_t changes_before = r.changes();
      r.release(d);
      ASSERT_EQ(r.changes() != changes_before, held) << "release of device " << d;
    }
  }
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// Packed 2-D boxes (issue 10): a tile of columns of a matrix held as its rows packed one after
// another; every buffer byte of the tile maps to its packed offset and back.
struct RowsClient final : EvictionClient {
  std::vector<IntervalSet> boxed_out_rows;
  std::vector<Interval> boxed_out;
  [[nodiscard]] bool busy_on(std::size_t) const override { return false; }
  void box_out(std::size_t, const Interval& bytes) override { boxed_out.push_back(bytes); }
  void box_out_rows(std::size_t, const IntervalSet& rows) override {
    boxed_out_rows.push_back(rows);
  }
  [[nodiscard]] std::string describe() const override { return "buffer 'p'"; }
};

TEST(Residency, APackedBoxHoldsItsRowsAtItsOwnWidthAndMapsEveryByte) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  RowsClient client;
  // A 16 x 64-byte matrix; the tile is columns [8, 24) of rows 2..9.
  Residency r(16 * 64, 1, cache, memory, client);
  const ResidentBox tile = ResidentBox::packed(2 * 64 + 8, 64, 16, 8);
  EXPECT_EQ(tile.bytes, (Interval{2 * 64 + 8, 9 * 64 + 24}));
  EXPECT_EQ(tile.rows(), 8u);
  EXPECT_EQ(tile.size(), 8u * 16u);
  EXPECT_EQ(tile.held_bytes().interval_count(), 8u);
  const ResidentAllocation a = r.ensure(0, tile);
  EXPECT_TRUE(a.is_packed());
  EXPECT_EQ(a.allocation.size, 128u);
  EXPECT_EQ(r.allocated_bytes(0), 128u);
  EXPECT_EQ(a.box(), tile);
  // Every byte of the tile at (row - 2) * 16 + (col - 8); no two bytes share an offset.
  std::vector<int> seen(128, 0);
  for (std::uint64_t row = 2; row < 10; ++row) {
    for (std::uint64_t col = 8; col < 24; ++col) {
      const std::uint64_t b = row * 64 + col;
      ASSERT_TRUE(a.holds(Interval{b, b + 1})) << b;
      const std::uint64_t off = a.offset_of(b);
      ASSERT_EQ(off, (row - 2) * 16 + (col - 8));
      ++seen[off];
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_TRUE(a.holds(Interval{3 * 64 + 8, 3 * 64 + 24}));    // a whole row of the tile
  EXPECT_FALSE(a.holds(Interval{3 * 64 + 20, 3 * 64 + 26}));  // past its columns
  EXPECT_FALSE(a.holds(Interval{3 * 64 + 20, 4 * 64 + 10}));  // two rows
  EXPECT_FALSE(a.holds(Interval{1 * 64 + 8, 1 * 64 + 9}));    // above its rows
  EXPECT_THROW((void)a.offset_of(3 * 64 + 30), PreconditionError);
  EXPECT_EQ(r.find(0, Interval{5 * 64 + 10, 5 * 64 + 20}), a);
  EXPECT_EQ(r.find(0, ResidentBox::packed(4 * 64 + 10, 64, 8, 3)), a);  // a sub-rectangle
  r.check_invariants();
  memory.check_invariants();
}

TEST(Residency, PackedTilesOfOtherColumnsLiveSideBySideAndATouchingOneReplacesThem) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  RowsClient client;
  Residency r(16 * 64, 1, cache, memory, client);
  const ResidentBox left = ResidentBox::packed(0, 64, 16, 16);    // columns [0, 16)
  const ResidentBox right = ResidentBox::packed(32, 64, 16, 16);  // columns [32, 48)
  (void)r.ensure(0, left);
  (void)r.ensure(0, right);  // bounding intervals overlap, bytes do not meet
  EXPECT_EQ(r.allocations(0).size(), 2u);
  EXPECT_TRUE(client.boxed_out_rows.empty());
  r.check_invariants();
  EXPECT_TRUE(boxes_meet(left, ResidentBox::packed(16, 64, 8, 16)));  // columns [16, 24) touch
  EXPECT_FALSE(boxes_meet(left, ResidentBox::packed(17, 64, 8, 16)));
  // Columns [16, 32) touch both: both are boxed out (their rows only), never merged.
  const ResidentAllocation middle = r.ensure(0, ResidentBox::packed(16, 64, 16, 16));
  EXPECT_EQ(r.allocations(0).size(), 1u);
  EXPECT_EQ(r.allocations(0)[0], middle);
  ASSERT_EQ(client.boxed_out_rows.size(), 2u);
  EXPECT_EQ(client.boxed_out_rows[0], left.held_bytes());
  EXPECT_EQ(client.boxed_out_rows[1], right.held_bytes());
  EXPECT_EQ(memory.stats(0).evictions, 2u);
  // A run of bytes over the packed rows replaces them too (a packed box is never merged).
  const ResidentAllocation run = r.ensure(0, Interval{0, 16 * 64});
  EXPECT_FALSE(run.is_packed());
  EXPECT_EQ(r.allocations(0).size(), 1u);
  EXPECT_EQ(client.boxed_out_rows.size(), 3u);
  r.check_invariants();
  memory.check_invariants();
}

TEST(Residency, CheckInvariantsRejectsPackedBoxesWhoseRowsMeet) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  Residency r(16 * 64, 1, cache);
  (void)r.ensure(0, ResidentBox::packed(0, 64, 16, 4));
  (void)r.ensure(0, ResidentBox::packed(40, 64, 16, 4));
  r.check_invariants();
  ResidentAllocation& m = detail::ResidencyTestAccess::first(r, 0);
  const ResidentAllocation real = m;
  m.width = 48;  // its rows would now reach into the other box's columns
  m.allocation.size = 4 * 48;
  EXPECT_THROW(r.check_invariants(), InvariantError);
  m = real;
  m.width = 24;  // rows of 24 bytes do not divide its 64 bytes
  EXPECT_THROW(r.check_invariants(), InvariantError);
  m = real;
  r.check_invariants();
}

}  // namespace
}  // namespace unimem
