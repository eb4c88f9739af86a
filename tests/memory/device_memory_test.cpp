// DeviceMemory: per device limit, use counts, in-use / unused LRU lists and eviction.
#include "memory/device_memory.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/host/host_platform.hpp"
#include "memory/residency.hpp"

namespace unimem {
namespace {

// Records the box-outs DeviceMemory asks for.
struct RecordingClient final : EvictionClient {
  std::string name;
  std::vector<std::size_t> boxed_out;
  bool busy = false;
  explicit RecordingClient(std::string n) : name(std::move(n)) {}
  [[nodiscard]] bool busy_on(std::size_t) const override { return busy; }
  void box_out(std::size_t device, const Interval& bytes) override {
    boxed_out.push_back(device);
    boxed_out_bytes.push_back(bytes);
  }
  std::vector<Interval> boxed_out_bytes;
  [[nodiscard]] std::string describe() const override { return name; }
};

TEST(DeviceMemory, EvictsTheLeastRecentlyUsedUnusedAllocationWhenOverTheCap) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 300);
  EXPECT_EQ(memory.limit(0), 300u);
  RecordingClient ca("a"), cb("b"), cc("c");
  Residency a(100, 1, cache, memory, ca), b(100, 1, cache, memory, cb),
      c(150, 1, cache, memory, cc);
  (void)a.ensure_whole(0);
  (void)b.ensure_whole(0);
  (void)a.ensure_whole(0);  // a is now more recently used than b
  (void)c.ensure_whole(0);  // 350 > 300: b goes
  EXPECT_EQ(cb.boxed_out, std::vector<std::size_t>{0});
  EXPECT_TRUE(ca.boxed_out.empty());
  EXPECT_FALSE(b.covers(0, Interval{0, 1}));
  EXPECT_TRUE(a.covers(0, Interval{0, 1}));
  EXPECT_EQ(memory.stats(0).held_bytes, 250u);
  EXPECT_EQ(memory.stats(0).evicted_bytes, 100u);
  EXPECT_EQ(memory.stats(0).evictions, 1u);
  EXPECT_LE(memory.stats(0).peak_held_bytes, 300u);
  memory.check_invariants();
}

TEST(DeviceMemory, InUseAllocationsAreNeverEvictedAndAFullDeviceIsAClearError) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 250);
  RecordingClient ca("buffer 'a'"), cb("buffer 'b'"), cc("buffer 'c'");
  Residency a(100, 1, cache, memory, ca), b(100, 1, cache, memory, cb),
      c(100, 1, cache, memory, cc);
  (void)a.begin_use(0);
  (void)b.begin_use(0);
  try {
    (void)c.ensure_whole(0);
    FAIL() << "no room expected";
  } catch (const OutOfDeviceMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device 0"), std::string::npos) << what;
    EXPECT_NE(what.find("buffer 'c'"), std::string::npos) << what;
    EXPECT_NE(what.find("100 bytes"), std::string::npos) << what;
  }
  EXPECT_TRUE(ca.boxed_out.empty());
  EXPECT_TRUE(cb.boxed_out.empty());
  b.end_use(0);
  (void)c.ensure_whole(0);  // now b can go
  EXPECT_EQ(cb.boxed_out.size(), 1u);
  EXPECT_THROW((void)Residency(300, 1, cache, memory, cc).ensure_whole(0), OutOfDeviceMemory);
  memory.check_invariants();
}

TEST(DeviceMemory, ADriverRefusalUnderTheCapIsRecoveredByEviction) {
  HostDeviceOptions small;
  small.capacity = 1500;  // the driver's own limit, and so DeviceMemory's
  const DeviceRegistry devices = make_host_devices(1, small);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 0);
  RecordingClient ca("a"), cb("b");
  Residency a(600, 1, cache, memory, ca), b(600, 1, cache, memory, cb);
  (void)a.ensure_whole(0);
  // Another user of the device takes 400 bytes DeviceMemory does not know of: b's 600 fit the
  // limit (1200 <= 1500) but not the driver (1600), which refuses; a is evicted and b retried.
  const DeviceAllocation other = devices.shared(0)->allocate(400);
  (void)b.ensure_whole(0);
  EXPECT_EQ(memory.stats(0).refusals, 1u);
  EXPECT_EQ(ca.boxed_out.size(), 1u);
  EXPECT_TRUE(b.covers(0, Interval{0, 600}));
  memory.check_invariants();
  devices.shared(0)->free(other);
}

TEST(DeviceMemory, IdleVictimsGoBeforeBusyOnes) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 200);
  RecordingClient ca("a"), cb("b"), cc("c");
  Residency a(100, 1, cache, memory, ca), b(100, 1, cache, memory, cb),
      c(100, 1, cache, memory, cc);
  (void)a.ensure_whole(0);
  (void)b.ensure_whole(0);
  ca.busy = true;  // a is least recently used but its operations still run
  (void)c.ensure_whole(0);
  EXPECT_TRUE(ca.boxed_out.empty());
  EXPECT_EQ(cb.boxed_out.size(), 1u);
  memory.check_invariants();
}

// Busy is a property of one allocation: operations on a buffer's other box do not make an idle
// box busy (an out-of-core chunk's kernel runs on the next box while the last one is evicted).
struct BusyRangeClient final : EvictionClient {
  Interval busy_bytes{0, 0};
  std::vector<Interval> boxed_out;
  [[nodiscard]] bool busy_on(std::size_t) const override { return true; }
  [[nodiscard]] bool busy_on(std::size_t, const Interval& bytes) const override {
    return bytes.overlaps(busy_bytes);
  }
  void box_out(std::size_t, const Interval& bytes) override { boxed_out.push_back(bytes); }
  [[nodiscard]] std::string describe() const override { return "buffer 'r'"; }
};

TEST(DeviceMemory, AnIdleBoxOfABufferWithABusyBoxIsEvictedFirst) {
  const DeviceRegistry devices = make_host_devices(1);
  AllocationCache cache(devices.pointers(), 0);
  DeviceMemory memory(devices.pointers(), cache, 300);
  BusyRangeClient client;
  Residency r(1000, 1, cache, memory, client);
  (void)r.ensure(0, Interval{0, 100});    // least recently used, still busy
  (void)r.ensure(0, Interval{200, 300});  // idle
  (void)r.ensure(0, Interval{400, 500});
  client.busy_bytes = Interval{0, 100};
  (void)r.ensure(0, Interval{600, 700});
  EXPECT_EQ(client.boxed_out, std::vector<Interval>{(Interval{200, 300})});
  EXPECT_EQ(memory.stats(0).evictions, 1u);
  memory.check_invariants();
}

}  // namespace
}  // namespace unimem
