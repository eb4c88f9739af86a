// SharedBuffer driven directly (without the Runtime) on host-driver devices: its parts agree
// after every operation, and check_invariants() catches a buffer whose parts disagree.
#include "coherence/shared_buffer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "device/host/host_platform.hpp"

namespace unimem {

namespace detail {
struct SharedBufferTestAccess {
  static Directory& directory(SharedBuffer& b) { return b.directory_; }
  static PrefetchLedger& prefetch(SharedBuffer& b) { return b.prefetch_; }
};
}  // namespace detail

namespace {

constexpr Agent D0 = agent_of_device(0);
constexpr Agent D1 = agent_of_device(1);

TEST(SharedBuffer, DevicesGetAnAllocationOnFirstUse) {
  const DeviceRegistry devices = make_host_devices(2);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  SharedBuffer b(1, "data", 64, context);
  EXPECT_FALSE(b.residency().covers(0, Interval{0, 64}));
  b.acquire(D1, IntervalSet{{8, 16}});
  EXPECT_FALSE(b.residency().covers(0, Interval{0, 64}));
  // Partial residency: d1 holds only the bytes it read.
  EXPECT_TRUE(b.residency().covers(1, Interval{8, 16}));
  EXPECT_FALSE(b.residency().covers(1, Interval{0, 64}));
  EXPECT_EQ(b.residency().allocated_bytes(1), 8u);
  EXPECT_EQ(b.stats().host_to_device.bytes, 8u);
  // The full mirror merges the box: its bytes move on the device, none is fetched again.
  const DeviceAllocation mirror = b.mirror(D1);
  ASSERT_TRUE(b.residency().covers(1, Interval{0, 64}));
  EXPECT_EQ(mirror, b.residency().find(1, Interval{0, 64})->allocation);
  EXPECT_EQ(b.residency().allocated_bytes(1), 64u);
  EXPECT_EQ(b.stats().relocated_bytes, 8u);
  EXPECT_EQ(b.stats().host_to_device.bytes, 8u);
  EXPECT_TRUE(b.directory().missing_on(D1, IntervalSet{{8, 16}}).empty());
  b.check_invariants();
}

// A released buffer's trackers, emptied, serve the next buffer (CoherenceContext::trackers), so
// their storage is not grown again; the new buffer's accesses are ordered as usual.
TEST(SharedBuffer, AReleasedBuffersTrackersServeTheNextBuffer) {
  const DeviceRegistry devices = make_host_devices(2);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  ASSERT_TRUE(context.trackers);
  EXPECT_EQ(context.trackers->kept(), 0U);
  {
    SharedBuffer a(1, "a", 4096, context);
    for (std::uint64_t k = 0; k < 32; ++k) a.acquire(D1, IntervalSet{{k * 128, k * 128 + 64}});
    EXPECT_GT(a.tracked_accesses(), 0U);
  }
  const std::size_t kept = context.trackers->kept();
  EXPECT_GT(kept, 0U);  // the trackers that recorded accesses (the host's and d1's)
  SharedBuffer b(2, "b", 4096, context);
  EXPECT_EQ(context.trackers->kept(), kept - std::min<std::size_t>(kept, 3));
  EXPECT_EQ(b.tracked_accesses(), 0U);
  b.acquire(D0, IntervalSet{{0, 256}});
  EXPECT_EQ(b.stats().host_to_device.bytes, 256U);
  EXPECT_GT(b.tracked_accesses(), 0U);
  b.check_invariants();
}

// Every copy the buffer records in its trackers counts (copies_recorded), so RuntimeCore::finish
// knows when they may hold an operation it does not track: after forgetting the accesses before
// marks taken when no copy came after them, they hold none; beta records no copy at all.
TEST(SharedBuffer, CopiesRecordedSayWhenTheTrackersMayHoldCopies) {
  const DeviceRegistry devices = make_host_devices(2);
  CoherenceContext context = CoherenceContext::of(devices.pointers());
  SharedBuffer b(1, "data", 4096, context);
  EXPECT_EQ(b.copies_recorded(), 0U);
  EXPECT_FALSE(b.may_hold_copies());
  b.acquire(D0, IntervalSet{{0, 64}});  // one copy from home
  EXPECT_EQ(b.copies_recorded(), 1U);
  EXPECT_TRUE(b.may_hold_copies());
  const SharedBuffer::AccessMarks first = b.access_marks();
  EXPECT_EQ(first.copies, 1U);
  b.acquire(D1, IntervalSet{{0, 64}, {128, 160}});  // two copies from home (still current there)
  EXPECT_EQ(b.copies_recorded(), 3U);
  const SharedBuffer::AccessMarks second = b.access_marks();
  wait_all(b.pending());
  b.forget_accesses_before(first);  // the later copies are still recorded
  EXPECT_TRUE(b.may_hold_copies());
  b.forget_accesses_before(second);
  EXPECT_FALSE(b.may_hold_copies());
  EXPECT_EQ(b.tracked_accesses(), 0U);
  b.forget_accesses_before(first);  // older marks forget nothing more
  EXPECT_FALSE(b.may_hold_copies());
  b.acquire(D1, IntervalSet{{0, 64}});  // already current: no copy
  EXPECT_FALSE(b.may_hold_copies());
  context.transfers_disabled = true;  // measurement beta: the directory changes, nothing is copied
  b.acquire(D0, IntervalSet{{128, 160}});
  EXPECT_TRUE(b.directory().missing_on(D0, IntervalSet{{128, 160}}).empty());
  EXPECT_EQ(b.copies_recorded(), 3U);
  EXPECT_FALSE(b.may_hold_copies());
  b.check_invariants();
}

// A halo exchange under adaptive (stencil rows split over two devices, each reading one row of
// the other's half after every step): once learned, each step's write replays the halo rows
// into the boxes that already hold them, as make_current_resident does in one step when one box
// holds all of a replayed demand. Each replay must make the rows current there, count them as
// unread prefetches, and tell the history, whose prediction then keeps matching (no
// misprediction) while every step from the third on replays; the bytes moved equal the halo rows.
TEST(SharedBuffer, AReplayedHaloInsideADevicesBoxIsCurrentPrefetchedAndPredictedAgain) {
  using Access = detail::SharedBufferTestAccess;
  HostDeviceOptions peer;
  peer.peer_copies = true;  // halo rows move device to device
  const DeviceRegistry devices = make_host_devices(2, peer);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  constexpr std::uint64_t kRow = 16;
  SharedBuffer b(1, "grid", 8 * kRow, context);  // rows 0-3 on d0, 4-7 on d1
  const IntervalSet top{{0, 4 * kRow}};
  const IntervalSet bottom{{4 * kRow, 8 * kRow}};
  const IntervalSet halo_of_d0{{4 * kRow, 5 * kRow}};  // d1's first row, read by d0
  const IntervalSet halo_of_d1{{3 * kRow, 4 * kRow}};  // d0's last row, read by d1
  // Each device's box: its rows and the neighbour's row next to them (as the runtime chooses).
  const ResidentBox box0(Interval{0, 5 * kRow});
  const ResidentBox box1(Interval{3 * kRow, 8 * kRow});
  std::uint64_t replays_before = 0;
  for (int step = 0; step < 8; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    (void)b.begin_use(D0, box0);
    (void)b.begin_use(D1, box1);
    b.begin_write();
    const std::vector<std::pair<Agent, IntervalSet>> writes{{D0, top}, {D1, bottom}};
    b.after_device_writes(writes, "step", UpdateStrategy::adaptive);
    b.end_use(D0, box0);
    b.end_use(D1, box1);
    const TransferStats s = b.stats();
    if (step >= 2) {  // two runs followed by the same reads: predicted
      EXPECT_EQ(s.replays, replays_before + 1) << "the step's write replays the halo";
      EXPECT_TRUE(b.directory().missing_on(D0, halo_of_d0).empty());
      EXPECT_TRUE(b.directory().missing_on(D1, halo_of_d1).empty());
      EXPECT_EQ(Access::prefetch(b).unread_on(D0), halo_of_d0);
      EXPECT_EQ(Access::prefetch(b).unread_on(D1), halo_of_d1);
    }
    replays_before = s.replays;
    b.acquire(D0, top.unite(halo_of_d0));
    b.acquire(D1, halo_of_d1.unite(bottom));
    EXPECT_TRUE(Access::prefetch(b).unread_on(D0).empty());
    EXPECT_TRUE(Access::prefetch(b).unread_on(D1).empty());
    b.check_invariants();
  }
  const TransferStats s = b.stats();
  EXPECT_EQ(s.mispredictions, 0U);
  EXPECT_EQ(s.replays, 6U);                           // steps 2 to 7
  EXPECT_EQ(s.device_to_device.bytes, 8 * 2 * kRow);  // one halo row each way per step
  EXPECT_EQ(s.device_to_host.bytes + s.host_to_device.bytes, 0U);
  EXPECT_EQ(s.prefetch_bytes, 6 * 2 * kRow);
  EXPECT_EQ(s.prefetch_unread_bytes, 0U);
  wait_all(b.pending());
}

// BBMM bb_readin: when a device's box grows, the bytes only that device holds move into the
// merged box with a device-local copy and reach the host from there.
TEST(SharedBuffer, AGrowingBoxKeepsTheBytesOnlyItsDeviceHolds) {
  const DeviceRegistry devices = make_host_devices(2);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  SharedBuffer b(1, "data", 64, context);
  b.acquire(D1, IntervalSet{{8, 16}});
  // A kernel on d1 writes bytes [8, 16): they exist only there.
  const ResidentAllocation box = *b.residency().find(1, Interval{8, 16});
  std::vector<std::byte> pattern(8);
  for (std::size_t i = 0; i < 8; ++i) pattern[i] = static_cast<std::byte>(0xA0 + i);
  devices.at(1).copy_host_to_device(pattern.data(), box.allocation, box.offset_of(8), 8, {}).wait();
  detail::SharedBufferTestAccess::directory(b).apply_device_write(D1, IntervalSet{{8, 16}});
  b.acquire(D1, IntervalSet{{0, 32}});  // grows the box to [0, 32)
  EXPECT_EQ(b.residency().find(1, Interval{0, 32})->covers(), (Interval{0, 32}));
  EXPECT_EQ(b.residency().allocations(1).size(), 1u);
  EXPECT_EQ(b.stats().relocated_bytes, 8u);
  EXPECT_EQ(b.stats().host_to_device.bytes, 8u + 24u);  // [8, 16) was not fetched again
  b.acquire(kHostAgent, IntervalSet{{0, 32}});
  wait_all(b.pending());
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(b.home()[8 + i], pattern[i]) << "byte " << 8 + i;
  }
  b.check_invariants();
}

// A merge (the box grows) while a kernel on the old box is still pending returns at once: the
// device-local copy waits for the kernel on the device, not the host, later readers wait for the
// copy, and the old box stays allocated (and counted by DeviceMemory) until both have finished.
// In measurement beta there is no copy, but the old box is still freed only after the kernel.
TEST(SharedBuffer, AMergeDoesNotWaitForAKernelStillRunningOnTheOldBox) {
  for (const bool beta : {false, true}) {
    SCOPED_TRACE(beta ? "beta (transfers disabled)" : "alpha");
    const DeviceRegistry devices = make_host_devices(2);
    CoherenceContext context = CoherenceContext::of(devices.pointers());
    context.transfers_disabled = beta;
    SharedBuffer b(1, "data", 64, context);
    b.acquire(D1, IntervalSet{{8, 16}});
    wait_all(b.pending());
    const ResidentAllocation old_box = *b.residency().find(1, Interval{8, 16});
    // "A kernel" on d1 writing bytes [8, 16) of the old box once the gate opens: a device copy
    // from host memory that waits for it.
    auto [gate, opener] = Event::make_manual();
    std::vector<std::byte> pattern(8);
    for (std::size_t i = 0; i < 8; ++i) pattern[i] = static_cast<std::byte>(0xC0 + i);
    const EventList after_gate{gate};
    const Event kernel = devices.at(1).copy_host_to_device(pattern.data(), old_box.allocation,
                                                           old_box.offset_of(8), 8, after_gate);
    const std::vector<std::pair<Agent, IntervalSet>> writes{{D1, IntervalSet{{8, 16}}}};
    b.begin_write();
    b.tracker(D1).record_write(writes[0].second, kernel);
    b.after_device_writes(writes, "k", UpdateStrategy::lazy);

    // If the merge waited for the kernel, only the watchdog would let it return.
    std::promise<void> returned;
    std::atomic<bool> watchdog_fired{false};
    std::thread watchdog([&, done = returned.get_future(), open = opener]() mutable {
      if (done.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
        watchdog_fired = true;
        open->complete();
      }
    });
    b.acquire(D1, IntervalSet{{0, 32}});  // grows the box [8, 16) to [0, 32)
    returned.set_value();
    watchdog.join();
    EXPECT_FALSE(watchdog_fired.load()) << "the merge waited for the kernel on the old box";
    EXPECT_FALSE(kernel.is_complete());
    EXPECT_EQ(b.residency().find(1, Interval{0, 32})->covers(), (Interval{0, 32}));
    EXPECT_EQ(b.residency().retiring_bytes(1), 8u);
    EXPECT_EQ(context.memory->stats(1).held_bytes, 8u + 32u);  // the old box is still counted
    b.check_invariants();
    b.reap_retired();  // the kernel has not run: the old box stays
    EXPECT_EQ(b.residency().retiring_bytes(1), 8u);

    opener->complete();
    b.acquire(kHostAgent, IntervalSet{{0, 32}});
    wait_all(b.pending());
    kernel.wait();
    if (!beta) {
      EXPECT_EQ(b.stats().relocated_bytes, 8u);
      for (std::size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(b.home()[8 + i], pattern[i]) << "byte " << 8 + i;
      }
    } else {
      EXPECT_EQ(b.stats().relocated_bytes, 0u);
    }
    b.reap_retired();
    EXPECT_EQ(b.residency().retiring_bytes(1), 0u);
    EXPECT_EQ(context.memory->stats(1).held_bytes, 32u);
    b.check_invariants();
    context.memory->check_invariants();
  }
}

// Random host writes, device reads, kernel writes and host reads under every strategy on 1..4
// devices: check_invariants() holds after each (it also runs inside every operation when
// invariant checks are on), whatever the strategy copies.
TEST(SharedBuffer, RandomOperationsKeepThePartsInAgreement) {
  std::uint64_t replays = 0;
  for (std::size_t n = 1; n <= 4; ++n) {
    for (UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::balance,
                                    UpdateStrategy::batch, UpdateStrategy::adaptive}) {
      for (std::uint32_t seed = 1; seed <= 5; ++seed) {
        SCOPED_TRACE(std::to_string(n) + " devices, " + std::string(to_string(strategy)) +
                     ", seed " + std::to_string(seed));
        HostDeviceOptions opt;
        opt.peer_copies = seed % 2 == 0;
        const DeviceRegistry devices = make_host_devices(n, opt);
        const CoherenceContext context = CoherenceContext::of(devices.pointers(), 1 << 16);
        constexpr std::uint64_t kSize = 256;
        SharedBuffer b(1, "random", kSize, context);
        std::mt19937 rng(seed);
        auto random_bytes = [&] {
          const std::uint64_t begin = rng() % kSize;
          return IntervalSet{{begin, begin + 1 + rng() % (kSize - begin)}};
        };
        for (int op = 0; op < 200; ++op) {
          const auto device = static_cast<std::size_t>(rng() % n);
          const Agent agent = agent_of_device(device);
          switch (rng() % 5) {
            case 0: {  // host write (the Runtime's order of calls)
              const IntervalSet bytes = random_bytes();
              b.begin_write();
              b.home_written(bytes);
              ASSERT_NO_THROW(b.after_host_write(bytes, strategy)) << "op " << op;
              break;
            }
            case 1:
              ASSERT_NO_THROW(b.acquire(agent, random_bytes())) << "op " << op;
              break;
            case 2: {  // a kernel (one of two) writing on one or two devices
              std::vector<std::pair<Agent, IntervalSet>> writes;
              const IntervalSet bytes = random_bytes();
              writes.emplace_back(agent, bytes.intersect(Interval{0, kSize / 2}));
              if (n > 1) {
                writes.emplace_back(agent_of_device((device + 1) % n),
                                    bytes.intersect(Interval{kSize / 2, kSize}));
              }
              std::erase_if(writes, [](const auto& w) { return w.second.empty(); });
              if (writes.empty()) break;
              for (const auto& [a, w] : writes) (void)b.mirror(a);  // the kernel's argument
              b.begin_write();
              ASSERT_NO_THROW(b.after_device_writes(writes, rng() % 2 == 0 ? "k1" : "k2", strategy))
                  << "op " << op;
              break;
            }
            case 3:
              ASSERT_NO_THROW(b.acquire(kHostAgent, random_bytes())) << "op " << op;
              break;
            case 4: {  // a loop step: the same kernel writes, the same reader follows
              const std::vector<std::pair<Agent, IntervalSet>> writes{{D0, {{32, 96}}}};
              (void)b.mirror(D0);
              b.begin_write();
              ASSERT_NO_THROW(b.after_device_writes(writes, "loop", strategy)) << "op " << op;
              ASSERT_NO_THROW(b.acquire(agent_of_device(n - 1), IntervalSet{{64, 128}}))
                  << "op " << op;
              break;
            }
          }
          ASSERT_NO_THROW(b.check_invariants()) << "op " << op;
        }
        const TransferStats s = b.stats();
        replays += s.replays;
        EXPECT_LE(s.prefetch_unread_bytes, s.prefetch_bytes);
        if (strategy != UpdateStrategy::adaptive) {
          EXPECT_EQ(s.replays, 0u);
        }
        wait_all(b.pending());
      }
    }
  }
  EXPECT_GT(replays, 0u);  // adaptive did replay predictions
}

TEST(SharedBuffer, CheckInvariantsRejectsBytesCurrentOnADeviceWithoutStorage) {
  const DeviceRegistry devices = make_host_devices(2);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  SharedBuffer b(1, "data", 64, context);
  b.acquire(D0, IntervalSet{{0, 64}});
  b.check_invariants();
  // A kernel write recorded on d1, which never got an allocation for this buffer.
  detail::SharedBufferTestAccess::directory(b).apply_device_write(D1, IntervalSet{{0, 8}});
  try {
    b.check_invariants();
    FAIL() << "no InvariantError";
  } catch (const InvariantError& e) {
    EXPECT_NE(std::string(e.what()).find("no allocation covering"), std::string::npos) << e.what();
  }
}

TEST(SharedBuffer, CheckInvariantsRejectsUnreadReplaysThatAreNotCurrent) {
  const DeviceRegistry devices = make_host_devices(2);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  SharedBuffer b(1, "data", 64, context);
  PrefetchLedger& ledger = detail::SharedBufferTestAccess::prefetch(b);
  b.check_invariants();
  ledger.begin_replay();  // a replay left running between operations
  EXPECT_THROW(b.check_invariants(), InvariantError);
  ledger.replay_to(D0);
  ledger.copied(D0, IntervalSet{{0, 8}});  // a replayed copy the directory knows nothing of
  ledger.end_replay();
  EXPECT_THROW(b.check_invariants(), InvariantError);
  b.acquire(D0, IntervalSet{{0, 8}});  // a demand read there uses the bytes
  EXPECT_NO_THROW(b.check_invariants());
}

// Packed 2-D boxes (issue 10): a tile's rows reach its packed allocation with one rect copy whose
// device side has the tile's width as its pitch, and come home (a host read, a box-out) the same
// way, every byte where it belongs.
TEST(SharedBuffer, APackedBoxMovesItsRowsWithRectCopiesOfAnotherPitchByteExact) {
  const DeviceRegistry devices = make_host_devices(1);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  constexpr std::uint64_t kPitch = 96;
  constexpr std::uint64_t kRows = 12;
  constexpr std::uint64_t kSize = kPitch * kRows;
  SharedBuffer b(1, "m", kSize, context);
  const IntervalSet all{{0, kSize}};
  for (std::uint64_t i = 0; i < kSize; ++i) b.home()[i] = static_cast<std::byte>(i * 7 + 3);
  b.begin_write();
  b.home_written(all);
  b.after_host_write(all, UpdateStrategy::lazy);
  // Rows 2..9, columns [20, 44).
  const ResidentBox tile = ResidentBox::packed(2 * kPitch + 20, kPitch, 24, 8);
  const auto packed_at = [&](std::uint64_t r, std::uint64_t c) { return r * 24 + c; };
  const auto buffer_at = [&](std::uint64_t r, std::uint64_t c) {
    return (2 + r) * kPitch + 20 + c;
  };
  const ResidentAllocation a = b.begin_use(D0, tile, Residency::Placement::replace);
  ASSERT_TRUE(a.is_packed());
  ASSERT_EQ(a.allocation.size, 8u * 24u);
  b.acquire(D0, tile.held_bytes());
  wait_all(b.pending());
  EXPECT_EQ(b.stats().host_to_device.bytes, 8u * 24u);
  EXPECT_EQ(b.stats().host_to_device.copies, 1u);  // one rect copy
  std::vector<std::byte> packed(a.allocation.size);
  devices.at(0).copy_device_to_host(a.allocation, 0, packed.data(), packed.size(), {}).wait();
  for (std::uint64_t r = 0; r < 8; ++r) {
    for (std::uint64_t c = 0; c < 24; ++c) {
      ASSERT_EQ(packed[packed_at(r, c)], static_cast<std::byte>(buffer_at(r, c) * 7 + 3))
          << "row " << r << " column " << c;
    }
  }
  b.check_invariants();

  // A kernel on the device writes the tile: a host read brings it home through a rect copy.
  const auto write_tile = [&](int salt) {
    std::vector<std::byte> fresh(a.allocation.size);
    for (std::uint64_t i = 0; i < fresh.size(); ++i) fresh[i] = static_cast<std::byte>(i + salt);
    devices.at(0).copy_host_to_device(fresh.data(), a.allocation, 0, fresh.size(), {}).wait();
    const std::vector<std::pair<Agent, IntervalSet>> writes{{D0, tile.held_bytes()}};
    b.begin_write();
    b.after_device_writes(writes, "k", UpdateStrategy::lazy);
  };
  const auto expect_home = [&](int salt) {
    const IntervalSet rows = tile.held_bytes();
    for (std::uint64_t i = 0; i < kSize; ++i) {
      std::byte want = static_cast<std::byte>(i * 7 + 3);
      if (rows.contains(IntervalSet{{i, i + 1}})) {
        const std::uint64_t r = i / kPitch - 2;
        const std::uint64_t c = i % kPitch - 20;
        want = static_cast<std::byte>(packed_at(r, c) + static_cast<std::uint64_t>(salt));
      }
      ASSERT_EQ(b.home()[i], want) << "byte " << i;
    }
  };
  write_tile(100);
  b.acquire(kHostAgent, all);
  wait_all(b.pending());
  EXPECT_EQ(b.stats().device_to_host.bytes, 8u * 24u);
  EXPECT_EQ(b.stats().device_to_host.copies, 1u);
  expect_home(100);
  b.check_invariants();

  // Written again, then boxed out: only its rows are written home (one rect copy).
  write_tile(50);
  b.end_use(D0, tile);
  b.box_out_rows(0, tile.held_bytes());
  wait_all(b.pending());
  EXPECT_EQ(b.stats().eviction_writeback_bytes, 8u * 24u);
  EXPECT_EQ(b.stats().device_to_host.copies, 2u);
  EXPECT_TRUE(b.directory().missing_on(D0, tile.held_bytes()) == tile.held_bytes());
  expect_home(50);
}

// Packed 2-D boxes against a flat memory (issue 10): random host writes and reads, and "kernels"
// on random devices over random packed tiles or runs of bytes (each reads its allocation and
// checks every byte against the flat memory, then writes new bytes into it), under a device
// memory cap small enough that most allocations evict others, with every strategy. Packed tiles
// move by rect copies of another pitch, peer copies, box-outs and eager copies.
TEST(SharedBuffer, PackedBoxesAndRunsUnderEvictionMatchAFlatMemory) {
  constexpr std::uint64_t kPitch = 40;
  constexpr std::uint64_t kRows = 24;
  constexpr std::uint64_t kSize = kPitch * kRows;
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::balance,
                                        UpdateStrategy::batch, UpdateStrategy::adaptive}) {
    for (std::uint32_t seed = 1; seed <= 6; ++seed) {
      SCOPED_TRACE("strategy " + std::to_string(static_cast<int>(strategy)) + ", seed " +
                   std::to_string(seed));
      const DeviceRegistry devices = make_host_devices(3);
      const CoherenceContext context = CoherenceContext::of(devices.pointers(), 0, 420);
      SharedBuffer b(1, "grid", kSize, context);
      std::vector<std::byte> flat(kSize, std::byte{0});
      std::mt19937 rng(seed);
      const auto fresh = [&] { return static_cast<std::byte>(rng() & 0xFF); };
      for (int op = 0; op < 150; ++op) {
        const std::size_t device = rng() % 3;
        const Agent agent = agent_of_device(device);
        const unsigned kind = rng() % 4;
        if (kind == 0) {  // host write of a random run
          const std::uint64_t begin = rng() % kSize;
          const std::uint64_t end = begin + 1 + rng() % std::min<std::uint64_t>(90, kSize - begin);
          const IntervalSet bytes{{begin, end}};
          wait_all(b.pending());
          for (std::uint64_t i = begin; i < end; ++i) b.home()[i] = flat[i] = fresh();
          b.begin_write();
          b.home_written(bytes);
          b.after_host_write(bytes, strategy);
        } else if (kind == 1) {  // host read of everything
          b.acquire(kHostAgent, IntervalSet{{0, kSize}});
          wait_all(b.pending());
          b.prepare_home_read(IntervalSet{{0, kSize}});  // never-written bytes read as zero
          for (std::uint64_t i = 0; i < kSize; ++i) {
            ASSERT_EQ(b.home()[i], flat[i]) << "op " << op << " byte " << i;
          }
        } else {  // a kernel on device over a packed tile (kind 2) or a run (kind 3)
          ResidentBox box;
          if (kind == 2) {
            const std::uint64_t width = 4 + rng() % 12;
            const std::uint64_t col = rng() % (kPitch - width + 1);
            const std::uint64_t rows = 2 + rng() % 10;
            const std::uint64_t row = rng() % (kRows - rows + 1);
            box = ResidentBox::packed(row * kPitch + col, kPitch, width, rows);
          } else {
            const std::uint64_t begin = rng() % (kSize - 8);
            box = ResidentBox(Interval{
                begin, begin + 1 + rng() % std::min<std::uint64_t>(150, kSize - begin - 1)});
          }
          const IntervalSet rows = box.held_bytes();
          const ResidentAllocation a = b.begin_use(
              agent, box,
              rng() % 2 == 0 ? Residency::Placement::replace : Residency::Placement::merge);
          // A run inside one row of a packed box is held by it (merge finds it).
          ASSERT_TRUE(a.holds(box)) << "op " << op;
          ASSERT_TRUE(!box.is_packed() || a.is_packed()) << "op " << op;
          b.acquire(agent, rows);
          wait_all(b.pending());
          std::vector<std::byte> mem(a.allocation.size);
          devices.at(device)
              .copy_device_to_host(a.allocation, 0, mem.data(), mem.size(), {})
              .wait();
          for (const Interval& r : rows) {
            for (std::uint64_t i = r.begin; i < r.end; ++i) {
              ASSERT_EQ(mem[a.offset_of(i)], flat[i]) << "op " << op << " byte " << i;
            }
          }
          if (rng() % 3 != 0) {  // it writes every byte it holds for the tile
            for (const Interval& r : rows) {
              for (std::uint64_t i = r.begin; i < r.end; ++i)
                mem[a.offset_of(i)] = flat[i] = fresh();
            }
            devices.at(device)
                .copy_host_to_device(mem.data(), a.allocation, 0, mem.size(), {})
                .wait();
            const std::vector<std::pair<Agent, IntervalSet>> writes{{agent, rows}};
            b.begin_write();
            b.after_device_writes(writes, "k", strategy);
          }
          b.end_use(agent, box);
        }
        ASSERT_NO_THROW(b.check_invariants()) << "op " << op;
      }
      b.acquire(kHostAgent, IntervalSet{{0, kSize}});
      wait_all(b.pending());
      b.prepare_home_read(IntervalSet{{0, kSize}});
      for (std::uint64_t i = 0; i < kSize; ++i) ASSERT_EQ(b.home()[i], flat[i]) << "byte " << i;
      EXPECT_GT(context.memory->stats(0).evictions + context.memory->stats(1).evictions +
                    context.memory->stats(2).evictions,
                0U);
    }
  }
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// acquire_rewriting_last_writes against an oracle written with plain set operations: random
// last writes on three devices (one run each, or one of them in two pieces: the walk over runs
// and the general path), random uses reading pieces of them, gaps and bytes outside every write,
// and one reader that wrote nothing. It applies exactly when each use's bytes outside its own
// writes lie in the others' writes and no two uses lack the same byte; then the missing bytes
// and copies are the oracle's and the directory's own (a copy of it serves the reads in order).
TEST(SharedBuffer, TheRewriteOfTheLastWritesCopiesWhatTheDirectoryWould) {
  HostDeviceOptions peer;
  peer.peer_copies = true;
  const DeviceRegistry devices = make_host_devices(4, peer);
  const CoherenceContext context = CoherenceContext::of(devices.pointers());
  const unsigned seed = 20261128;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr std::uint64_t kBlock = 16;
  constexpr std::uint64_t kBlocks = 48;
  const auto block = [&](std::uint64_t lo, std::uint64_t hi) {
    return Interval{lo * kBlock, hi * kBlock};
  };
  const auto below = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
  int applied = 0;
  int refused = 0;
  int split_writes = 0;
  int applied_split = 0;
  int broken_writes = 0;
  for (int round = 0; round < 3000; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    SharedBuffer b(1, "m", kBlocks * kBlock, context);
    // Writers D0..D2 in a random order over consecutive runs, with a gap sometimes.
    std::vector<Agent> writers{agent_of_device(0), agent_of_device(1), agent_of_device(2)};
    std::shuffle(writers.begin(), writers.end(), rng);
    std::vector<std::pair<Agent, IntervalSet>> writes;
    std::uint64_t at = below(4);
    bool split = false;
    for (const Agent a : writers) {
      const std::uint64_t length = 2 + below(10);
      IntervalSet w{block(at, at + length)};
      if (below(4) == 0 && length > 3) {  // two pieces: the general path
        w = IntervalSet{block(at, at + 1), block(at + 2, at + length)};
        ++split_writes;
        split = true;
      }
      writes.emplace_back(a, w);
      at += length + (below(3) == 0 ? 1 : 0);
    }
    for (std::size_t d = 0; d < 4; ++d) (void)b.mirror(agent_of_device(d));
    b.after_device_writes(writes, "k", UpdateStrategy::adaptive);
    // Uses in the writes' order (the launch's plan order), and sometimes a reader with no write.
    const auto random_needed = [&](const IntervalSet& own) {
      IntervalSet n = own;
      const std::uint64_t pieces = below(3);
      for (std::uint64_t p = 0; p < pieces; ++p) {
        const std::uint64_t lo = below(kBlocks - 1);
        n.insert(block(lo, lo + 1 + below(3)));
      }
      return n;
    };
    std::vector<IntervalSet> needed;
    std::vector<Agent> readers;
    for (const auto& [agent, w] : writes) {
      readers.push_back(agent);
      needed.push_back(random_needed(w));
    }
    const IntervalSet nothing;
    if (below(3) == 0) {
      readers.push_back(agent_of_device(3));
      needed.push_back(random_needed(nothing));
    }
    std::vector<SharedBuffer::LaunchUse> uses;
    for (std::size_t j = 0; j < readers.size(); ++j) {
      const IntervalSet* written = j < writes.size() ? &writes[j].second : &nothing;
      uses.push_back({readers[j], &needed[j], written});
    }
    // Condition (b) broken now and then: a writer writes less than its last write, or the
    // writing uses come in another order than the last writes.
    IntervalSet less;
    const std::uint64_t broken = below(8);
    if (broken == 0) {
      const std::size_t j = below(writes.size());
      const std::uint64_t first = writes[j].second.bounds().begin;
      less = writes[j].second.subtract(IntervalSet{Interval{first, first + kBlock}});
      uses[j].written = &less;
      ++broken_writes;
    } else if (broken == 1) {
      std::swap(uses[0], uses[1]);
      std::swap(readers[0], readers[1]);
      std::swap(needed[0], needed[1]);
      for (std::size_t j = 0; j < 2; ++j) uses[j].needed = &needed[j];
      ++broken_writes;
    }
    // The oracle.
    bool applies = broken > 1;
    std::vector<IntervalSet> lacking(uses.size());
    std::vector<std::vector<Transfer>> copies(uses.size());
    IntervalSet lacked;
    for (std::size_t j = 0; j < uses.size(); ++j) {
      lacking[j] = needed[j].subtract(*uses[j].written);
      IntervalSet covered;
      for (const auto& [agent, w] : writes) {
        if (agent == readers[j]) continue;
        const IntervalSet from = lacking[j].intersect(w);
        for (const Interval& piece : from) copies[j].push_back(Transfer{piece, agent, readers[j]});
        covered = covered.unite(from);
      }
      std::sort(copies[j].begin(), copies[j].end(),
                [](const Transfer& x, const Transfer& y) { return x.range.begin < y.range.begin; });
      if (covered != lacking[j] || lacked.intersects(lacking[j])) applies = false;
      lacked = lacked.unite(lacking[j]);
    }
    Directory shadow = b.directory();
    const bool took = b.acquire_rewriting_last_writes(uses);
    ASSERT_EQ(took, applies) << (broken <= 1 ? "condition (b) broken" : "");
    if (!took) {
      ++refused;
      continue;
    }
    ++applied;
    if (split) ++applied_split;
    for (std::size_t j = 0; j < uses.size(); ++j) {
      SCOPED_TRACE("use " + std::to_string(j));
      EXPECT_EQ(b.rewrite_missing(j), lacking[j]);
      EXPECT_EQ(b.rewrite_transfers(j), copies[j]);
      std::vector<Transfer> expected;
      IntervalSet missing;
      shadow.apply_device_read(
          readers[j], needed[j], [&](Agent from, Agent to) { return context.can_peer(from, to); },
          expected, &missing);
      EXPECT_EQ(b.rewrite_transfers(j), expected);
      EXPECT_EQ(b.rewrite_missing(j), missing);
    }
    wait_all(b.pending());
  }
  // Both answers, and both paths, came up.
  EXPECT_GT(applied - applied_split, 100);
  EXPECT_GT(applied_split, 20);
  EXPECT_GT(refused, 100);
  EXPECT_GT(split_writes, 100);
  EXPECT_GT(broken_writes, 300);
}

}  // namespace
}  // namespace unimem
