// Affine replays ("Affine replays" in src/api/runtime_core.cpp): a family of rewriting launches
// (floyd-warshall's pivots: each partition rewrites its rows and reads row k) issues its copies
// and kernels on per-agent chains instead of the hazard trackers, and the trackers learn each
// agent's last replayed operation before anything else runs. On host devices through
// RuntimeCore: every scenario runs twice, with RuntimeOptions::repeat_fast_path on and off, and
// the matrix, every host read, the buffer's stats and its directory segments must be equal (and
// the matrix that of flat memory). Invariant checks are on in every test build: each replayed
// launch's copies and directory are checked against the directory's own actions, and the chains
// at entry against the trackers. Randomized tests print their seed (UNIMEM_TEST_SEED reproduces
// one).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "floyd_rows.hpp"

namespace unimem {
namespace {

using namespace floyd_rows;  // NOLINT(google-build-using-namespace): the tests' vocabulary

struct FamilySetup {
  std::size_t devices = 2;
  UpdateStrategy strategy = UpdateStrategy::adaptive;
  std::optional<std::uint64_t> capacity;  // device memory per host device
  bool failing = false;                   // devices whose launches can be made to fail
};

// One runtime, the matrix `dist` with its flat-memory oracle, and a second buffer.
class Floyd {
 public:
  Floyd(const FamilySetup& s, bool fast) : setup_(s) {
    RuntimeOptions options{s.strategy};
    options.repeat_fast_path = fast;
    if (s.failing) {
      FailingHostDevices hosts = failing_host_devices();
      failing_ = hosts.devices;
      rt_.emplace(std::move(hosts.registry), options);
    } else {
      HostDeviceOptions device_options;
      device_options.peer_copies = true;
      if (s.capacity) device_options.capacity = *s.capacity;
      rt_.emplace(make_host_devices(s.devices, device_options), options);
    }
    std::mt19937 rng(5);
    for (std::uint32_t& v : flat_) v = 1 + static_cast<std::uint32_t>(rng() % 1000);
    for (std::uint64_t i = 0; i < kN; ++i) flat_[i * kN + i] = 0;
    dist_ = rt_->create_buffer(kN * kN * 4, "dist");
    rt_->write_blocking(dist_, 0, std::as_bytes(std::span(flat_)));
    other_ = rt_->create_buffer(kN * kN * 4, "other");
    // Each device reads the whole matrix once: its allocation then holds every row, so no
    // pivot's box grows (a launch whose box grows allocates, and takes the full path).
    for (std::size_t d = 0; d < s.devices && !s.capacity; ++d) read_rows_on(d, 0, kN);
  }

  void pivot(std::uint32_t k, const std::shared_ptr<HostKernel>& kernel) {
    pivot_on(k, kernel, floyd_partitions(k, setup_.devices, kernel));
  }
  void pivot_on(std::uint32_t k, const std::shared_ptr<HostKernel>& kernel,
                std::vector<LaunchPartition> partitions) {
    (void)kernel;
    const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist_, {}, {}),
                                      LaunchArg::of_scalar<std::uint32_t>(k)};
    launch(args, std::move(partitions));
    floyd_step(flat_, k);
  }
  // A launch of dist's rows, noted in pattern_: 'R' replayed, '-' not.
  void launch(const std::vector<LaunchArg>& args, std::vector<LaunchPartition> partitions) {
    const std::uint64_t before = rt_->core().affine_replays();
    rt_->core().launch_partitioned(args, partitions);
    pattern_ += rt_->core().affine_replays() > before ? 'R' : '-';
  }
  // Rows [row, row + rows) read by the host, compared with flat memory; returned.
  std::vector<std::uint32_t> read_rows(std::uint64_t row, std::uint64_t rows) {
    std::vector<std::uint32_t> got(rows * kN);
    rt_->read_blocking(dist_, row * kRow, std::as_writable_bytes(std::span(got)));
    const std::vector<std::uint32_t> want(flat_.begin() + static_cast<long>(row * kN),
                                          flat_.begin() + static_cast<long>((row + rows) * kN));
    EXPECT_EQ(got, want) << "rows " << row << "+" << rows;
    return got;
  }
  // Halves `count` entries from `at` on the host.
  void halve(std::uint64_t at, std::uint64_t count) {
    for (std::uint64_t i = at; i < at + count; ++i) flat_[i] /= 2;
    rt_->write_blocking(dist_, at * 4, std::as_bytes(std::span(flat_).subspan(at, count)));
  }
  // A launch on `device` that reads row `row` and writes the first entry of the other buffer: a
  // copy of the row to a second holder when the device does not hold it.
  void read_row_on(std::size_t device, std::uint64_t row) { read_rows_on(device, row, 1); }
  void read_rows_on(std::size_t device, std::uint64_t row, std::uint64_t rows) {
    Launch l;
    l.device = device;
    l.kernel = std::make_shared<HostKernel>("peek", [row](const HostKernelContext& c) {
      c.buffer<std::uint32_t>(1)[0] += c.buffer<std::uint32_t>(0)[row * kN];
    });
    l.range.dims = 1;
    l.range.global[0] = 1;
    l.args = {LaunchArg::of_buffer(dist_, IntervalSet{{row * kRow, (row + rows) * kRow}}, {}),
              LaunchArg::of_buffer(other_, IntervalSet{{0, 4}}, IntervalSet{{0, 4}})};
    rt_->core().launch(l);
  }
  // A launch filling the whole other buffer on device 0 (under a cap: evicts dist's rows there).
  void fill_other() { fill_on_device_0(rt_->core(), other_); }
  // The end of a scenario: the matrix (compared with flat memory), stats and segments.
  struct Outcome {
    std::vector<std::uint32_t> matrix;
    TransferStats stats;
    std::vector<IntervalMap<AgentMask>::Segment> segments;
    std::uint64_t replays = 0;
    std::uint64_t materializations = 0;
    std::string pattern;  // per launch of dist's rows: 'R' replayed, '-' not
  };
  Outcome outcome() {
    Outcome o;
    // The counters first: the read below is an operation of its own.
    o.replays = rt_->core().affine_replays();
    o.segments = rt_->core().directory_segments(dist_);
    o.materializations = rt_->core().affine_materializations();
    o.pattern = pattern_;
    o.matrix = read_rows(0, kN);
    rt_->finish();
    o.stats = rt_->buffer_stats(dist_);
    return o;
  }

  FamilySetup setup_;
  std::optional<Runtime> rt_;
  std::vector<std::shared_ptr<LaunchFailingDevice>> failing_;
  std::string pattern_;
  std::vector<std::uint32_t> flat_ = std::vector<std::uint32_t>(kN * kN);
  BufferId dist_{};
  BufferId other_{};
};

// Runs the scenario with the fast path on and off; every result but the counters must be equal.
// Returns the fast run's outcome.
Floyd::Outcome on_and_off(const FamilySetup& s, const std::function<void(Floyd&)>& scenario) {
  Floyd fast(s, true);
  scenario(fast);
  Floyd::Outcome on = fast.outcome();
  Floyd slow(s, false);
  scenario(slow);
  const Floyd::Outcome off = slow.outcome();
  EXPECT_EQ(on.matrix, off.matrix);
  EXPECT_EQ(on.stats, off.stats);
  EXPECT_EQ(on.segments, off.segments);
  EXPECT_EQ(off.replays, 0U) << "repeat_fast_path off replays nothing";
  return on;
}

// Launch 0 has no last writes yet, launch 1 rewrites them (its publication makes the history's
// entry), launch 2 rewrites them and restarts the history's run in one call (the family of
// restarts begins: a family of replays may start after it); 3 .. kN-1 replay, each publication
// one more deferred restart, until the outcome's query records the family's orderings.
TEST(AffineReplay, APivotLoopEntersAtItsFourthLaunchAndMatchesTheFullPath) {
  const auto kernel = floyd_kernel();
  const Floyd::Outcome o = on_and_off(FamilySetup{}, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < kN; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern, "---" + std::string(kN - 3, 'R'));
  EXPECT_EQ(o.replays, kN - 3);
  EXPECT_EQ(o.materializations, 1U);
  EXPECT_EQ(o.stats.device_to_device.bytes, (kN - 1) * kRow);
}

// Another kernel on the same rows is another key of the history: the first family ends before
// it; its launches take the full path until one restarts its own run in one call (the third),
// and the family replays from the next on; so does the first kernel's after it (a known key:
// its second launch restarts).
TEST(AffineReplay, AnotherKernelInTheMiddleEndsTheFamily) {
  const auto kernel = floyd_kernel();
  const auto other = floyd_kernel("floyd_b");
  const Floyd::Outcome o = on_and_off(FamilySetup{}, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    for (std::uint32_t k = 6; k < 12; ++k) f.pivot(k, other);
    for (std::uint32_t k = 12; k < 18; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern,
            "---RRR"
            "---RRR"
            "--RRRR");
  EXPECT_EQ(o.materializations, 3U);
}

// Partitions over other rows write other bytes than the last writes: no rewrite, no replay; the
// next launch of the new split rewrites its rows and restarts, the one after replays; the same
// again when the old split comes back.
TEST(AffineReplay, AnotherSplitOfTheRowsEndsTheFamily) {
  const auto kernel = floyd_kernel();
  const Floyd::Outcome o = on_and_off(FamilySetup{}, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    for (std::uint32_t k = 6; k < 10; ++k) {
      std::vector<LaunchPartition> parts = floyd_partitions(k, 2, kernel);
      // Device 0 takes rows [0, kN / 2 + 2), device 1 the rest.
      const std::uint64_t split = kN / 2 + 2;
      parts[0].range.global[0] = split;
      parts[1].range.offset[0] = split;
      parts[1].range.global[0] = kN - split;
      for (std::size_t d = 0; d < 2; ++d) {
        const std::uint64_t first = d == 0 ? 0 : split;
        const std::uint64_t last = d == 0 ? split : kN;
        const IntervalSet own{{first * kRow, last * kRow}};
        parts[d].accesses[0] =
            AccessBytes{own.unite(IntervalSet{{k * kRow, (k + 1) * kRow}}), own, {}};
      }
      f.pivot_on(k, kernel, std::move(parts));
    }
    for (std::uint32_t k = 10; k < 16; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern,
            "---RRR"
            "--RR"
            "--RRRR");
}

// A pivot row with two holders (another device's launch read it in between) moves the
// directory on: the next pivot takes the full path (the row's copy is no longer forced: the
// directory decides), the one after it rewrites and restarts, and the family replays again.
TEST(AffineReplay, APivotRowWithTwoHoldersEndsTheFamily) {
  const auto kernel = floyd_kernel();
  const Floyd::Outcome o = on_and_off(FamilySetup{}, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    f.read_row_on(1, 7);  // row 7 lives on device 0: now on both
    for (std::uint32_t k = 6; k < 12; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern,
            "---RRR"
            "--RRRR");
  EXPECT_EQ(o.materializations, 2U);
}

// A launch of the family's kernel whose every reader holds what it reads (row k in each reader's
// own rows: here each partition reads only its rows) lacks nothing: it replays with no copy, and
// its misses (none) differ from the pivot's before, so the family goes on through it.
TEST(AffineReplay, ALaunchWhoseReadersHoldTheirRowsReplaysWithoutCopies) {
  const auto kernel = floyd_kernel();
  const auto own_rows = std::make_shared<HostKernel>("floyd", [](const HostKernelContext& ctx) {
    auto* dist = ctx.buffer<std::uint32_t>(0);
    const std::uint64_t first = ctx.range().offset[0];
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) dist[i * kN] += 1;
  });
  const Floyd::Outcome o = on_and_off(FamilySetup{}, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    std::vector<LaunchPartition> parts = floyd_partitions(0, 2, own_rows);
    for (LaunchPartition& p : parts) {
      p.accesses[0] = AccessBytes{p.accesses[0].writes, p.accesses[0].writes, {}};
    }
    const std::vector<LaunchArg> args{LaunchArg::of_buffer(f.dist_, {}, {}),
                                      LaunchArg::of_scalar<std::uint32_t>(0)};
    f.launch(args, std::move(parts));
    for (std::uint64_t i = 0; i < kN; ++i) f.flat_[i * kN] += 1;
    for (std::uint32_t k = 6; k < 12; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern,
            "---RRR"
            "R"
            "RRRRRR");
  EXPECT_EQ(o.materializations, 1U);
}

// A host read is another operation: the family's orderings are recorded before it (it waits for
// the last pivot). It changes no directory (read_direct) and leaves the history's family going,
// so the next pivot rewrites and restarts (one more deferred restart) and the one after it
// replays. A host write moves the directory on: one full launch, one restarting, then replays.
TEST(AffineReplay, AHostReadAndAHostWriteEndTheFamily) {
  const auto kernel = floyd_kernel();
  const Floyd::Outcome o = on_and_off(FamilySetup{}, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    (void)f.read_rows(3, 14);
    for (std::uint32_t k = 6; k < 12; ++k) f.pivot(k, kernel);
    f.halve(10 * kN, kN / 2);
    for (std::uint32_t k = 12; k < 18; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern,
            "---RRR"
            "-RRRRR"
            "--RRRR");
  EXPECT_EQ(o.materializations, 3U);
}

// A launch whose second kernel cannot be enqueued in the middle of a family: its copies and
// first kernel ran on the chains and are recorded as the family's last; the pivots after it go
// on, and everything matches the run without replays.
TEST(AffineReplay, AFailedLaunchInTheMiddleIsRecordedWithTheFamily) {
  const auto kernel = floyd_kernel();
  FamilySetup s;
  s.failing = true;
  const Floyd::Outcome o = on_and_off(s, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    f.failing_[1]->fail_launches = true;
    EXPECT_THROW(f.pivot(6, kernel), DeviceError);
    f.failing_[1]->fail_launches = false;
    f.rt_->finish();
    // Device 0's rows took pivot 6, device 1's did not (floyd_step ran for both): take the
    // matrix as it is.
    std::vector<std::uint32_t> got(kN * kN);
    f.rt_->read_blocking(f.dist_, 0, std::as_writable_bytes(std::span(got)));
    f.flat_ = got;
    for (std::uint32_t k = 7; k < 14; ++k) f.pivot(k, kernel);
  });
  // (The failed launch is not in the pattern: it threw.)
  EXPECT_EQ(o.pattern,
            "---RRR"
            "--RRRRR");
}

// Device memory too small for dist and the other buffer on device 0 (and no warm-up: each
// device's allocation holds the rows it used): filling the other buffer evicts dist's rows there;
// the family ends before it, the pivots after it take the full path until one restarts, and
// replay until pivot 12, the first of device 1's rows, makes device 0's box grow (an allocation:
// the full path) at every pivot.
TEST(AffineReplay, AnEvictionUnderACapEndsTheFamily) {
  const auto kernel = floyd_kernel();
  FamilySetup s;
  s.capacity = kN * kRow + 4 * kRow;
  const Floyd::Outcome o = on_and_off(s, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < 6; ++k) f.pivot(k, kernel);
    f.fill_other();
    EXPECT_GT(f.rt_->buffer_stats(f.dist_).evicted_bytes, 0U);
    for (std::uint32_t k = 6; k < 16; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern,
            "---RRR"
            "--RRRR"
            "----");
  EXPECT_GT(o.stats.evicted_bytes, 0U);
}

// Three devices: two readers lack the same row k, whose second copy's source the directory
// chooses, so the rewrite (and with it the replay) declines; the results stay right.
TEST(AffineReplay, ThreeDevicesTakeTheFullPath) {
  const auto kernel = floyd_kernel();
  FamilySetup s;
  s.devices = 3;
  const Floyd::Outcome o = on_and_off(s, [&](Floyd& f) {
    for (std::uint32_t k = 0; k < kN; ++k) f.pivot(k, kernel);
  });
  EXPECT_EQ(o.pattern, std::string(kN, '-'));
}

// Only adaptive's publication can be one more deferred restart: lazy, batch and balance never
// replay (batch and balance never even rewrite), and match the run without the fast path.
TEST(AffineReplay, EveryStrategyMatchesTheFullPath) {
  const auto kernel = floyd_kernel();
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                        UpdateStrategy::batch, UpdateStrategy::balance}) {
    SCOPED_TRACE(std::string(to_string(strategy)));
    FamilySetup s;
    s.strategy = strategy;
    const Floyd::Outcome o = on_and_off(s, [&](Floyd& f) {
      for (std::uint32_t k = 0; k < kN; ++k) f.pivot(k, kernel);
    });
    EXPECT_EQ(o.replays, strategy == UpdateStrategy::adaptive ? kN - 3 : 0U);
  }
}

// Random pivots (repeated ones included), host reads and writes, reads of a row on another
// device, another kernel and the other buffer's launches, on 2 devices under adaptive and lazy:
// equal to the full path and to flat memory (seeded, printed).
TEST(AffineReplay, RandomOperationsBetweenPivotsMatchTheFullPath) {
  const std::uint32_t first = seed_or(300);
  const auto kernel = floyd_kernel();
  const auto other = floyd_kernel("floyd_b");
  std::uint64_t replays = 0;
  for (std::uint32_t seed = first; seed < first + 6; ++seed) {
    for (const UpdateStrategy strategy : {UpdateStrategy::adaptive, UpdateStrategy::lazy}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " " + std::string(to_string(strategy)));
      FamilySetup s;
      s.strategy = strategy;
      const Floyd::Outcome o = on_and_off(s, [&](Floyd& f) {
        std::mt19937 rng(seed);
        for (int step = 0; step < 60; ++step) {
          const std::uint32_t k = static_cast<std::uint32_t>(rng() % kN);
          switch (rng() % 12) {
            case 0:
              (void)f.read_rows(rng() % (kN / 2), 1 + rng() % (kN / 2));
              break;
            case 1:
              f.halve(rng() % (kN * kN - kN), 1 + rng() % kN);
              break;
            case 2:
              f.read_row_on(rng() % 2, k);
              break;
            case 3:
              f.pivot(k, other);
              break;
            case 4:
              f.fill_other();
              break;
            default:
              f.pivot(k, kernel);
              break;
          }
        }
      });
      replays += o.replays;
    }
  }
  EXPECT_GT(replays, 0U);
}

}  // namespace
}  // namespace unimem
