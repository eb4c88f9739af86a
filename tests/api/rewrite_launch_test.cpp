// Launches that write again exactly what the buffer's last device writes wrote (floyd-warshall:
// every launch k writes each partition's rows and reads row k of the matrix), whose directory
// steps SharedBuffer::acquire_rewriting_last_writes skips. On host devices through RuntimeCore:
// a min-plus Floyd-Warshall over a small matrix, split by rows over 2 and 3 devices, under every
// strategy, with and without peer copies, with host reads and writes and unrelated launches
// between the pivots (seeded, printed; UNIMEM_TEST_SEED reproduces one). Every host read and the
// final matrix must equal a flat-memory oracle, and (invariant checks on, as in every test build)
// each shortcut is checked against the directory's own actions.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"
#include "device/device.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "floyd_rows.hpp"
#include "launch_failing_device.hpp"

namespace unimem {
namespace {

using namespace floyd_rows;  // NOLINT(google-build-using-namespace): the tests' vocabulary

struct FloydSetup {
  std::size_t devices = 2;
  UpdateStrategy strategy = UpdateStrategy::lazy;
  bool peer = true;
  bool interleave = false;  // host reads, host writes and another launch between the pivots
};

// Runs every pivot k once (twice over when interleaving), comparing with the oracle; returns the
// launches' buffers that took the shortcut (and, when asked, how many of those took the history's
// restart in one call: RuntimeCore::restarted_rewrite_runs).
std::uint64_t run(const FloydSetup& s, std::uint32_t seed, std::uint64_t* restarted = nullptr) {
  std::mt19937 rng(seed);
  HostDeviceOptions device_options;
  device_options.peer_copies = s.peer;
  Runtime rt(make_host_devices(s.devices, device_options), RuntimeOptions{s.strategy});
  std::vector<std::uint32_t> flat(kN * kN);
  for (std::uint64_t i = 0; i < kN * kN; ++i)
    flat[i] = 1 + static_cast<std::uint32_t>(rng() % 1000);
  for (std::uint64_t i = 0; i < kN; ++i) flat[i * kN + i] = 0;
  const BufferId dist = rt.create_buffer(kN * kN * 4, "dist");
  rt.write_blocking(dist, 0, std::as_bytes(std::span(flat)));
  const BufferId other = rt.create_buffer(kN * kN * 4, "other");
  const auto kernel = floyd_kernel();
  const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist, {}, {}),
                                    LaunchArg::of_scalar<std::uint32_t>(0)};
  const int rounds = s.interleave ? 2 : 1;
  for (int round = 0; round < rounds; ++round) {
    for (std::uint32_t k = 0; k < kN; ++k) {
      std::vector<LaunchArg> a = args;
      a[1] = LaunchArg::of_scalar<std::uint32_t>(k);
      rt.core().launch_partitioned(a, floyd_partitions(k, s.devices, kernel));
      floyd_step(flat, k);
      if (!s.interleave) continue;
      switch (rng() % 6) {
        case 0: {  // a host read of a few rows
          const std::uint64_t row = rng() % kN;
          const std::uint64_t rows = 1 + rng() % (kN - row);
          std::vector<std::uint32_t> got(rows * kN);
          rt.read_blocking(dist, row * kRow, std::as_writable_bytes(std::span(got)));
          const std::vector<std::uint32_t> want(
              flat.begin() + static_cast<long>(row * kN),
              flat.begin() + static_cast<long>((row + rows) * kN));
          EXPECT_EQ(got, want) << "seed " << seed << " read of rows " << row << "+" << rows
                               << " after pivot " << k;
          break;
        }
        case 1: {  // a host write of part of a row (smaller distances stay valid inputs)
          const std::uint64_t at = rng() % (kN * kN);
          const std::uint64_t count = 1 + rng() % std::min<std::uint64_t>(kN, kN * kN - at);
          for (std::uint64_t i = at; i < at + count; ++i) flat[i] = flat[i] / 2;
          rt.write_blocking(dist, at * 4, std::as_bytes(std::span(flat).subspan(at, count)));
          break;
        }
        case 2: {  // a launch on one device writing a row of the matrix (rows of another device)
          const std::uint64_t row = rng() % kN;
          const std::size_t device = rng() % s.devices;
          auto bump = std::make_shared<HostKernel>("halve_row", [row](const HostKernelContext& c) {
            auto* d = c.buffer<std::uint32_t>(0);
            for (std::uint64_t j = 0; j < kN; ++j) d[row * kN + j] /= 2;
          });
          Launch l;
          l.device = device;
          l.kernel = bump;
          l.range.dims = 1;
          l.range.global[0] = 1;
          const IntervalSet bytes{{row * kRow, (row + 1) * kRow}};
          l.args = {LaunchArg::of_buffer(dist, bytes, bytes)};
          rt.core().launch(l);
          for (std::uint64_t j = 0; j < kN; ++j) flat[row * kN + j] /= 2;
          break;
        }
        case 3: {  // another buffer's launch: nothing of dist changes
          Launch l;
          l.device = rng() % s.devices;
          l.kernel = std::make_shared<HostKernel>(
              "touch", [](const HostKernelContext& c) { c.buffer<std::uint32_t>(0)[0] += 1; });
          l.range.dims = 1;
          l.range.global[0] = 1;
          l.args = {LaunchArg::of_buffer(other, IntervalSet{{0, 4}}, IntervalSet{{0, 4}})};
          rt.core().launch(l);
          break;
        }
        default:
          break;  // the next pivot right away
      }
    }
  }
  std::vector<std::uint32_t> got(kN * kN);
  rt.read_blocking(dist, 0, std::as_writable_bytes(std::span(got)));
  EXPECT_EQ(got, flat) << "seed " << seed << ": the final matrix";
  if (restarted != nullptr) *restarted = rt.core().restarted_rewrite_runs();
  return rt.core().rewriting_launch_buffers();
}

TEST(RewriteLaunch, FloydWarshallOnTwoDevicesSkipsTheDirectoryAndMatchesFlatMemory) {
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    for (const bool peer : {true, false}) {
      SCOPED_TRACE(std::string(to_string(strategy)) + (peer ? " peer" : " through the host"));
      const std::uint64_t shortcuts = run(FloydSetup{2, strategy, peer, false}, 1);
      // Every launch after the first rewrites the first one's rows; without peer copies the
      // rows k another device wrote come through the host, which the shortcut leaves to the
      // directory.
      if (peer) {
        EXPECT_EQ(shortcuts, kN - 1);
      } else {
        EXPECT_EQ(shortcuts, 0U);
      }
    }
  }
}

// Under adaptive each launch's pivot row is another row, so its history only restarts the count:
// from the third launch on (the second makes the entry the restart needs) publish_rewrites takes
// the run in one AdaptiveHistory::restart_run, which invariant builds compare with the calls it
// replaces; the matrix and every read still match flat memory (run).
TEST(RewriteLaunch, AdaptiveRestartsTheHistoryOfEachPivotInOneCall) {
  std::uint64_t restarted = 0;
  EXPECT_EQ(run(FloydSetup{2, UpdateStrategy::adaptive, true, false}, 1, &restarted), kN - 1);
  EXPECT_EQ(restarted, kN - 2);
  EXPECT_EQ(run(FloydSetup{2, UpdateStrategy::lazy, true, false}, 1, &restarted), kN - 1);
  EXPECT_EQ(restarted, 0U) << "lazy records no history";
}

// A pivot repeated: its launches miss the same row, so restart_run declines and the reads it left
// for the publish must be observed there: launch 3 (the second with pivot 2) then counts the
// sequence a second time and replays it, and so does every later one (pivots 0 1 2 2 2 2: three
// replays of one row, no misprediction; launches 1-3 rewrite, the later ones find the directory
// changed by the replay's copies; only launch 2 restarts in one call). Left unobserved, the
// history would store an empty sequence and never replay.
TEST(RewriteLaunch, ARepeatedPivotIsLearnedAndReplayedAfterTheDeferredReads) {
  HostDeviceOptions device_options;
  device_options.peer_copies = true;
  Runtime rt(make_host_devices(2, device_options), RuntimeOptions{UpdateStrategy::adaptive});
  std::vector<std::uint32_t> flat(kN * kN);
  std::mt19937 rng(7);
  for (std::uint32_t& v : flat) v = 1 + static_cast<std::uint32_t>(rng() % 1000);
  const BufferId dist = rt.create_buffer(kN * kN * 4, "dist");
  rt.write_blocking(dist, 0, std::as_bytes(std::span(flat)));
  const auto kernel = floyd_kernel();
  for (const std::uint32_t k : {0U, 1U, 2U, 2U, 2U, 2U}) {
    const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist, {}, {}),
                                      LaunchArg::of_scalar<std::uint32_t>(k)};
    rt.core().launch_partitioned(args, floyd_partitions(k, 2, kernel));
    floyd_step(flat, k);
  }
  std::vector<std::uint32_t> got(kN * kN);
  rt.read_blocking(dist, 0, std::as_writable_bytes(std::span(got)));
  EXPECT_EQ(got, flat);
  EXPECT_EQ(rt.core().rewriting_launch_buffers(), 3U);  // replays move the directory on
  EXPECT_EQ(rt.core().restarted_rewrite_runs(), 1U);
  const TransferStats stats = rt.buffer_stats(dist);
  EXPECT_EQ(stats.replays, 3U);
  EXPECT_EQ(stats.prefetch_bytes, 3 * kRow);
  EXPECT_EQ(stats.mispredictions, 0U);
}

// A launch that fails after its acquire (the second device's kernel cannot be enqueued) leaves
// its history calls observed as the acquire would have made them (the catch in
// launch_partitioned): the next launch then finds a recording holding the failed launch's
// demand, so its run is not a restart in one call; every later one is again. Left unobserved,
// the next launch would restart in one call too (one restart more), with a history that never
// saw the failed launch's reads.
TEST(RewriteLaunch, AFailedLaunchObservesTheReadsLeftForItsPublish) {
  FailingHostDevices hosts = failing_host_devices();
  const auto& failing = hosts.devices;
  Runtime rt(std::move(hosts.registry), RuntimeOptions{UpdateStrategy::adaptive});
  std::vector<std::uint32_t> flat(kN * kN);
  std::mt19937 rng(11);
  for (std::uint32_t& v : flat) v = 1 + static_cast<std::uint32_t>(rng() % 1000);
  const BufferId dist = rt.create_buffer(kN * kN * 4, "dist");
  rt.write_blocking(dist, 0, std::as_bytes(std::span(flat)));
  const auto kernel = floyd_kernel();
  const auto launch = [&](std::uint32_t k) {
    const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist, {}, {}),
                                      LaunchArg::of_scalar<std::uint32_t>(k)};
    rt.core().launch_partitioned(args, floyd_partitions(k, 2, kernel));
  };
  for (std::uint32_t k = 0; k < 4; ++k) {
    launch(k);
    floyd_step(flat, k);
  }
  EXPECT_EQ(rt.core().restarted_rewrite_runs(), 2U);  // launches 2 and 3
  rt.finish();
  failing[1]->fail_launches = true;
  EXPECT_THROW(launch(4), DeviceError);
  failing[1]->fail_launches = false;
  rt.finish();
  // The first partition's kernel ran: rows of device 0 took pivot 4, device 1's did not.
  for (std::uint64_t i = 0; i < kN / 2; ++i) {
    for (std::uint64_t j = 0; j < kN; ++j) {
      const std::uint32_t via = flat[i * kN + 4] + flat[4 * kN + j];
      if (via < flat[i * kN + j]) flat[i * kN + j] = via;
    }
  }
  const std::uint64_t before = rt.core().restarted_rewrite_runs();
  EXPECT_EQ(before, 2U);
  for (std::uint32_t k = 5; k < 9; ++k) {
    launch(k);
    floyd_step(flat, k);
  }
  EXPECT_EQ(rt.core().restarted_rewrite_runs() - before, 3U)
      << "launch 5 finds the failed launch's reads in the recording; 6, 7 and 8 restart in one "
         "call";
  std::vector<std::uint32_t> got(kN * kN);
  rt.read_blocking(dist, 0, std::as_writable_bytes(std::span(got)));
  EXPECT_EQ(got, flat);
}

TEST(RewriteLaunch, BatchAndBalanceCopyAfterEveryWriteSoTheyNeverTakeIt) {
  for (const UpdateStrategy strategy : {UpdateStrategy::batch, UpdateStrategy::balance}) {
    SCOPED_TRACE(std::string(to_string(strategy)));
    EXPECT_EQ(run(FloydSetup{2, strategy, true, false}, 2), 0U);
  }
}

TEST(RewriteLaunch, ThreeDevicesReadingOneRowTakeTheDirectorysWay) {
  // Two readers lack the same row k: the second one's source depends on the first one's copy,
  // so the shortcut declines (and the results stay right).
  EXPECT_EQ(run(FloydSetup{3, UpdateStrategy::lazy, true, false}, 3), 0U);
}

TEST(RewriteLaunch, HostAccessesAndOtherLaunchesInBetweenMatchFlatMemory) {
  const std::uint32_t first = seed_or(100);
  std::uint64_t shortcuts = 0;
  for (std::uint32_t seed = first; seed < first + 12; ++seed) {
    std::cout << "seed " << seed << " (UNIMEM_TEST_SEED=" << seed << " reproduces it)\n";
    for (const UpdateStrategy strategy :
         {UpdateStrategy::lazy, UpdateStrategy::adaptive, UpdateStrategy::batch}) {
      for (const std::size_t devices : {std::size_t{2}, std::size_t{3}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " " + std::string(to_string(strategy)) +
                     " on " + std::to_string(devices) + " devices");
        shortcuts += run(FloydSetup{devices, strategy, seed % 2 == 0, true}, seed);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  EXPECT_GT(shortcuts, 0U);  // the interleaved runs took the shortcut between their disruptions
}

// A launch of three buffers, each partition using each once (an aligned plan: acquire_inputs
// groups a buffer's uses by their place, RuntimeCore::acquire_aligned_inputs): `dist` rewrites
// its last writes (the shortcut), `slots` is written at a new place every launch (partition d of
// launch k writes slot k * devices + d: never the last writes, so the directory publishes it)
// and `bias` is only read (acquired as usual). Every launch after the first takes the shortcut
// for dist alone, and the host reads of all three must equal the oracle; with `slots` left out
// (every written buffer rewrites) publish_writes takes the rewriting buffers as they are.
std::uint64_t run_three_buffers(std::size_t devices, UpdateStrategy strategy, bool with_slots) {
  Runtime rt(make_host_devices(devices), RuntimeOptions{strategy});
  std::vector<std::uint32_t> flat(kN * kN);
  std::mt19937 rng(7);
  for (std::uint64_t i = 0; i < kN * kN; ++i)
    flat[i] = 1 + static_cast<std::uint32_t>(rng() % 1000);
  for (std::uint64_t i = 0; i < kN; ++i) flat[i * kN + i] = 0;
  std::vector<std::uint32_t> bias(kN);
  for (std::uint64_t j = 0; j < kN; ++j) bias[j] = static_cast<std::uint32_t>(j % 3);
  std::vector<std::uint32_t> slots(kN * devices, 0);
  const BufferId dist = rt.create_buffer(kN * kN * 4, "dist");
  const BufferId slot_buffer = rt.create_buffer(kN * devices * 4, "slots");
  const BufferId bias_buffer = rt.create_buffer(kN * 4, "bias");
  rt.write_blocking(dist, 0, std::as_bytes(std::span(flat)));
  rt.write_blocking(slot_buffer, 0, std::as_bytes(std::span(slots)));
  rt.write_blocking(bias_buffer, 0, std::as_bytes(std::span(bias)));
  // dist[i][j] = min(dist[i][j], dist[i][k] + dist[k][j] + bias[j]) over the partition's rows;
  // partition d of launch k also writes slot k * devices + d (its first row plus k). A slot is
  // one partition's, so each partition runs a kernel of its own knowing its slot.
  const auto partition_kernel = [devices, with_slots](std::uint32_t k, std::size_t d) {
    return std::make_shared<HostKernel>(
        "floyd_bias", [k, d, devices, with_slots](const HostKernelContext& c) {
          auto* m = c.buffer<std::uint32_t>(0);
          const auto* b = c.buffer<std::uint32_t>(3);
          const std::uint64_t from = c.range().offset[0];
          for (std::uint64_t i = from; i < from + c.range().global[0]; ++i) {
            for (std::uint64_t j = 0; j < kN; ++j) {
              const std::uint32_t via = m[i * kN + k] + m[k * kN + j] + b[j];
              if (via < m[i * kN + j]) m[i * kN + j] = via;
            }
          }
          if (with_slots) {
            c.buffer<std::uint32_t>(2)[k * devices + d] = static_cast<std::uint32_t>(from) + k;
          }
        });
  };
  for (std::uint32_t k = 0; k < kN; ++k) {
    // The partitions as floyd_partitions gives them, with the other buffers' bytes.
    std::vector<LaunchPartition> parts = floyd_partitions(k, devices, nullptr);
    for (std::size_t d = 0; d < devices; ++d) {
      const std::uint64_t slot = k * devices + d;
      parts[d].kernel = partition_kernel(k, d);
      if (with_slots) {
        parts[d].accesses[2] = AccessBytes{{}, IntervalSet{{slot * 4, slot * 4 + 4}}, {}};
      }
      parts[d].accesses[3] = AccessBytes{IntervalSet{{0, kN * 4}}, {}, {}};
    }
    const std::vector<LaunchArg> args{
        LaunchArg::of_buffer(dist, {}, {}), LaunchArg::of_scalar<std::uint32_t>(k),
        LaunchArg::of_buffer(slot_buffer, {}, {}), LaunchArg::of_buffer(bias_buffer, {}, {})};
    rt.core().launch_partitioned(args, parts);
    for (std::uint64_t i = 0; i < kN; ++i) {
      for (std::uint64_t j = 0; j < kN; ++j) {
        const std::uint32_t via = flat[i * kN + k] + flat[k * kN + j] + bias[j];
        if (via < flat[i * kN + j]) flat[i * kN + j] = via;
      }
    }
    if (with_slots) {
      for (std::size_t d = 0; d < devices; ++d) {
        slots[k * devices + d] = static_cast<std::uint32_t>(kN * d / devices) + k;
      }
    }
  }
  std::vector<std::uint32_t> got(kN * kN);
  rt.read_blocking(dist, 0, std::as_writable_bytes(std::span(got)));
  EXPECT_EQ(got, flat) << "the final matrix";
  std::vector<std::uint32_t> got_slots(slots.size());
  rt.read_blocking(slot_buffer, 0, std::as_writable_bytes(std::span(got_slots)));
  EXPECT_EQ(got_slots, slots) << "the slots written at a new place every launch";
  std::vector<std::uint32_t> got_bias(kN);
  rt.read_blocking(bias_buffer, 0, std::as_writable_bytes(std::span(got_bias)));
  EXPECT_EQ(got_bias, bias) << "the buffer only read";
  return rt.core().rewriting_launch_buffers();
}

TEST(RewriteLaunch, AnAlignedPlanRewritesOneBufferAndPublishesAnotherThroughTheDirectory) {
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    SCOPED_TRACE(to_string(strategy));
    // dist alone takes the shortcut, from the second launch on; slots never does.
    EXPECT_EQ(run_three_buffers(2, strategy, true), kN - 1);
  }
}

TEST(RewriteLaunch, AnAlignedPlanWhoseWrittenBuffersAllRewriteSkipsTheSearch) {
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    SCOPED_TRACE(to_string(strategy));
    EXPECT_EQ(run_three_buffers(2, strategy, false), kN - 1);
  }
}

// Families of restarts (SharedBuffer::publish_rewrites): after a rewriting launch's history took
// its restart in one call, each next launch of the same kernel missing another row only counts
// one more restart, made in the history when anything else reaches it (invariant builds compare
// it there with restart_run of each launch). Under floyd-warshall every launch after the first
// restarts its key's count, so the history counts launches - 1 restarts however the families
// were cut.
class RestartFamily : public ::testing::Test {
 protected:
  explicit RestartFamily(std::optional<std::uint64_t> capacity = std::nullopt) {
    HostDeviceOptions options;
    options.peer_copies = true;
    if (capacity) options.capacity = *capacity;
    rt_.emplace(make_host_devices(2, options), RuntimeOptions{UpdateStrategy::adaptive});
    std::mt19937 rng(5);
    for (std::uint32_t& v : flat_) v = 1 + static_cast<std::uint32_t>(rng() % 1000);
    dist_ = rt_->create_buffer(kN * kN * 4, "dist");
    rt_->write_blocking(dist_, 0, std::as_bytes(std::span(flat_)));
  }
  void pivot(std::uint32_t k, const std::shared_ptr<HostKernel>& kernel) {
    const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist_, {}, {}),
                                      LaunchArg::of_scalar<std::uint32_t>(k)};
    rt_->core().launch_partitioned(args, floyd_partitions(k, 2, kernel));
    floyd_step(flat_, k);
    ++launches_;
  }
  void expect_matrix() {
    std::vector<std::uint32_t> got(kN * kN);
    rt_->read_blocking(dist_, 0, std::as_writable_bytes(std::span(got)));
    EXPECT_EQ(got, flat_);
  }
  [[nodiscard]] std::uint64_t deferred() const {
    return rt_->core().deferred_rewrite_restarts(dist_);
  }
  [[nodiscard]] std::uint64_t restarts() const { return rt_->core().history_restarts(dist_); }
  static AgentMask both() { return AgentMask{}.with(agent_of_device(0)).with(agent_of_device(1)); }

  std::optional<Runtime> rt_;
  std::vector<std::uint32_t> flat_ = std::vector<std::uint32_t>(kN * kN);
  BufferId dist_{};
  std::uint64_t launches_ = 0;
  const std::shared_ptr<HostKernel> kernel_ = floyd_kernel();
};

// Launch 0 opens the history, 1 makes its entry, 2 restarts in one call and starts the family,
// 3 .. kN-1 are deferred; reading the history makes them (kN - 1 restarts, the entry followed
// one run).
TEST_F(RestartFamily, ConsecutivePivotsDeferTheirRestartsUntilTheHistoryIsRead) {
  for (std::uint32_t k = 0; k < kN; ++k) pivot(k, kernel_);
  EXPECT_EQ(rt_->core().restarted_rewrite_runs(), kN - 2);
  EXPECT_EQ(deferred(), kN - 3);
  EXPECT_EQ(restarts(), kN - 1);
  EXPECT_EQ(rt_->core().history_repeat_count(dist_, "floyd", both()), 1);
  expect_matrix();
}

// A launch missing what the launch before it missed (pivot 3 twice) is no restart: the family
// ends before its restart_run compares, so it counts the sequence a second time and replays it,
// as does every later pivot 3 (three replays, no misprediction). Compared with the family's
// first launch instead of its last, it would restart again and never replay.
TEST_F(RestartFamily, APivotMissingWhatTheLaunchBeforeMissedEndsItAndIsReplayed) {
  for (const std::uint32_t k : {0U, 1U, 2U, 3U, 3U, 3U, 3U}) pivot(k, kernel_);
  EXPECT_EQ(rt_->core().restarted_rewrite_runs(), 2U);  // launch 2, and 3 deferred
  EXPECT_EQ(deferred(), 1U);
  const TransferStats stats = rt_->buffer_stats(dist_);
  EXPECT_EQ(stats.replays, 3U);
  EXPECT_EQ(stats.mispredictions, 0U);
  EXPECT_EQ(restarts(), 3U);
  expect_matrix();
}

// Another kernel on the same rows in the middle (another key): the family ends there, the other
// kernel's launches make their own family, and so do the first kernel's after them.
TEST_F(RestartFamily, AnotherKernelInTheMiddleEndsTheFamilyAndStartsItsOwn) {
  const auto other = floyd_kernel("floyd_b");
  for (std::uint32_t k = 0; k < 6; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 3U);  // launches 3, 4, 5
  for (std::uint32_t k = 6; k < 12; ++k) pivot(k, other);
  EXPECT_EQ(deferred(), 6U);  // launches 9, 10, 11 (6 and 7 take the full path, 8 restarts)
  for (std::uint32_t k = 12; k < 18; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 10U);  // launches 14 .. 17 (12 full, 13 restarts)
  EXPECT_EQ(restarts(), launches_ - 1);
  EXPECT_EQ(rt_->core().history_repeat_count(dist_, "floyd", both()), 1);
  EXPECT_EQ(rt_->core().history_repeat_count(dist_, "floyd_b", both()), 1);
  expect_matrix();
}

// A host read between two pivots takes the rows straight from the devices (read_direct): the
// history is not told, so the family goes on. A host write moves the directory on: the next
// launch takes the full path, whose acquire ends the family first (its restarts come before
// that launch's reads), and the launch after it starts a new one.
TEST_F(RestartFamily, AHostReadLeavesTheFamilyAndAHostWriteEndsIt) {
  for (std::uint32_t k = 0; k < 6; ++k) pivot(k, kernel_);
  std::vector<std::uint32_t> row(kN);
  rt_->read_blocking(dist_, 20 * kRow, std::as_writable_bytes(std::span(row)));
  EXPECT_TRUE(std::equal(row.begin(), row.end(), flat_.begin() + 20 * kN));
  for (std::uint32_t k = 6; k < 9; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 6U);  // launches 3-8
  for (std::uint64_t j = 0; j < kN / 2; ++j) flat_[10 * kN + j] /= 2;
  rt_->write_blocking(dist_, 10 * kRow, std::as_bytes(std::span(flat_).subspan(10 * kN, kN / 2)));
  for (std::uint32_t k = 9; k < 16; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 6U + 5U);  // 9 full, 10 restarts in one call, 11-15 deferred
  EXPECT_EQ(restarts(), launches_ - 1);
  expect_matrix();
}

// A launch failing after its acquire: the reads it left for its publish are observed after the
// family's restarts are made (SharedBuffer::observe_deferred_rewrite_reads settles first).
TEST_F(RestartFamily, AFailedLaunchInTheMiddleObservesItsReadsAfterTheFamily) {
  rt_.reset();
  FailingHostDevices hosts = failing_host_devices();
  const auto& failing = hosts.devices;
  rt_.emplace(std::move(hosts.registry), RuntimeOptions{UpdateStrategy::adaptive});
  dist_ = rt_->create_buffer(kN * kN * 4, "dist");
  rt_->write_blocking(dist_, 0, std::as_bytes(std::span(flat_)));
  for (std::uint32_t k = 0; k < 6; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 3U);
  rt_->finish();
  failing[1]->fail_launches = true;
  EXPECT_THROW(pivot(6, kernel_), DeviceError);
  failing[1]->fail_launches = false;
  rt_->finish();
  // Device 0's rows took pivot 6, device 1's did not (floyd_step above ran for both).
  std::vector<std::uint32_t> got(kN * kN);
  rt_->read_blocking(dist_, 0, std::as_writable_bytes(std::span(got)));
  flat_ = got;
  // The failed launch's reads were observed and device 0's writes published (a run of the
  // kernel on device 0 alone, publish_failed_launch_locked): it counts as a run that restarts,
  // launch 7 takes the full path (its close counts the restart), 8 restarts in one call, 9-11
  // are deferred.
  for (std::uint32_t k = 7; k < 12; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 6U);
  EXPECT_EQ(restarts(), launches_);  // (the failed launch is not counted in launches_)
  expect_matrix();
}

// Device memory too small for dist and another buffer on device 0: a launch of the other buffer
// evicts dist's rows there, which moves the directory on; the family ends before the eviction's
// next launch reads the history, and the results stay those of flat memory.
class RestartFamilyUnderACap : public RestartFamily {
 protected:
  RestartFamilyUnderACap() : RestartFamily(kN * kRow + 4 * kRow) {}
};

TEST_F(RestartFamilyUnderACap, AnEvictionInTheMiddleEndsTheFamily) {
  const BufferId big = rt_->create_buffer(kN * kRow, "big");
  for (std::uint32_t k = 0; k < 6; ++k) pivot(k, kernel_);
  EXPECT_EQ(deferred(), 3U);
  fill_on_device_0(rt_->core(), big);
  EXPECT_GT(rt_->buffer_stats(dist_).evicted_bytes, 0U);
  for (std::uint32_t k = 6; k < 16; ++k) pivot(k, kernel_);
  EXPECT_GT(deferred(), 3U);
  EXPECT_EQ(restarts(), launches_ - 1);
  expect_matrix();
}

}  // namespace
}  // namespace unimem
