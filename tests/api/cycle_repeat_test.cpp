// Cycles of launches on the repeat path (RuntimeOptions::repeat_fast_path, RuntimeCore::
// launch_partitioned): launch N equal to launch N-p (ping-pong: p = 2) skips the checks and, when
// the state says they would change nothing, the directory steps. Every scenario runs twice, with
// the fast path on and off, and must give the same bytes (every host read and the final
// contents), the same transfers, the same directories and the same adaptive history counts, and
// equal a flat-memory oracle. Host devices through RuntimeCore (tokens held by the test) and
// POCL devices through Program (whose recent launches pass the tokens), on 1 and 2 devices,
// under every strategy, with host reads and writes, unrelated launches, released buffers and
// evictions in between; and a randomized mix (seed printed, UNIMEM_TEST_SEED reproduces it).
// Halo cycles on 2 and 3 devices, broken between rounds and within one, take the periodic
// replay (RuntimeCore, "Periodic cycles") and are held to the same checks.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "api/program_core.hpp"
#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "device/opencl/opencl_context.hpp"
#include "history_counts.hpp"

namespace unimem {
namespace {

constexpr std::uint64_t kGrid = 512;  // bytes per grid (host-device tests)

// ---------------------------------------------------------------------------------------------
// Host devices: launches built here, each behind a token (RuntimeCore::launch_partitioned).

enum class KernelKind : std::uint8_t {
  scale,   // out[i] = 3 in[i] + c: reads exactly the bytes it writes, at the same offsets
  smooth,  // out[i] = in[i-1] + 2 in[i] + in[i+1] + c (edges clamped): reads a halo
  bump,    // a[i] += c in place
};

// One launch: the kernel over the whole grid, split evenly over `devices` partitions.
struct LaunchSpec {
  KernelKind kind = KernelKind::scale;
  std::size_t in = 0;   // buffer slots (bump: only `in`)
  std::size_t out = 0;  // ignored by bump
  int c = 0;
  bool operator==(const LaunchSpec&) const = default;
};

std::uint8_t smooth_at(const std::uint8_t* in, std::uint64_t i, std::uint64_t n, int c) {
  const int l = in[i > 0 ? i - 1 : i];
  const int r = in[i + 1 < n ? i + 1 : i];
  return static_cast<std::uint8_t>((l + 2 * in[i] + r + c) & 0xFF);
}

std::shared_ptr<HostKernel> host_kernel(KernelKind kind) {
  switch (kind) {
    case KernelKind::scale:
      return std::make_shared<HostKernel>("scale", [](const HostKernelContext& ctx) {
        const auto* in = ctx.buffer<std::uint8_t>(0);
        auto* out = ctx.buffer<std::uint8_t>(1);
        const int c = ctx.scalar<int>(2);
        const std::uint64_t first = ctx.range().offset[0];
        for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
          out[i] = static_cast<std::uint8_t>((3 * in[i] + c) & 0xFF);
        }
      });
    case KernelKind::smooth:
      return std::make_shared<HostKernel>("smooth", [](const HostKernelContext& ctx) {
        const auto* in = ctx.buffer<std::uint8_t>(0);
        auto* out = ctx.buffer<std::uint8_t>(1);
        const int c = ctx.scalar<int>(2);
        const std::uint64_t first = ctx.range().offset[0];
        for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
          out[i] = smooth_at(in, i, kGrid, c);
        }
      });
    case KernelKind::bump:
      return std::make_shared<HostKernel>("bump", [](const HostKernelContext& ctx) {
        auto* a = ctx.buffer<std::uint8_t>(0);
        const int c = ctx.scalar<int>(1);
        const std::uint64_t first = ctx.range().offset[0];
        for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
          a[i] = static_cast<std::uint8_t>((a[i] + c) & 0xFF);
        }
      });
  }
  return nullptr;
}

// What a token keeps alive: the arguments and partitions of one launch.
struct BuiltLaunch {
  std::vector<LaunchArg> args;
  std::vector<LaunchPartition> partitions;
};

std::shared_ptr<const BuiltLaunch> build(const LaunchSpec& s, const std::vector<BufferId>& slots,
                                         std::size_t devices) {
  auto built = std::make_shared<BuiltLaunch>();
  const auto kernel = host_kernel(s.kind);
  if (s.kind == KernelKind::bump) {
    built->args = {LaunchArg::of_buffer(slots[s.in], {}, {}), LaunchArg::of_scalar(s.c)};
  } else {
    built->args = {LaunchArg::of_buffer(slots[s.in], {}, {}),
                   LaunchArg::of_buffer(slots[s.out], {}, {}), LaunchArg::of_scalar(s.c)};
  }
  for (std::size_t d = 0; d < devices; ++d) {
    const std::uint64_t first = kGrid * d / devices;
    const std::uint64_t last = kGrid * (d + 1) / devices;
    LaunchPartition p;
    p.device = d;
    p.kernel = kernel;
    p.range.dims = 1;
    p.range.offset[0] = first;
    p.range.global[0] = last - first;
    const IntervalSet own{{first, last}};
    if (s.kind == KernelKind::bump) {
      p.accesses[0] = AccessBytes{own, own, {}};
    } else {
      const IntervalSet read =
          s.kind == KernelKind::smooth
              ? IntervalSet{{first > 0 ? first - 1 : 0, std::min(kGrid, last + 1)}}
              : own;
      p.accesses[0] = AccessBytes{read, {}, {}};
      p.accesses[1] = AccessBytes{{}, own, {}};
    }
    built->partitions.push_back(std::move(p));
  }
  return built;
}

void apply(const LaunchSpec& s, std::vector<std::vector<std::uint8_t>>& flat) {
  if (s.kind == KernelKind::bump) {
    for (std::uint8_t& v : flat[s.in]) v = static_cast<std::uint8_t>((v + s.c) & 0xFF);
    return;
  }
  const std::vector<std::uint8_t> in = flat[s.in];
  std::vector<std::uint8_t>& out = flat[s.out];
  for (std::uint64_t i = 0; i < kGrid; ++i) {
    out[i] = s.kind == KernelKind::smooth ? smooth_at(in.data(), i, kGrid, s.c)
                                          : static_cast<std::uint8_t>((3 * in[i] + s.c) & 0xFF);
  }
}

// One step of a script.
struct Step {
  enum class Kind : std::uint8_t {
    launch,         // spec, behind its token (the same token for an equal spec and slots)
    untokened,      // spec without a token (an ordinary launch between cycles)
    host_read,      // slot, [offset, offset + size)
    host_write,     // slot, [offset, offset + size) with values from value
    replace,        // slot: released, a new buffer with the same contents takes its place
    release_spare,  // a spare buffer is created, used by a launch and released
    strategy,       // the runtime's strategy becomes `strategy`
    launch_events,  // as launch, asking for the partitions' events (never a lean repeat)
  };
  Kind kind = Kind::launch;
  LaunchSpec spec;
  std::size_t slot = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  int value = 0;
  UpdateStrategy strategy = UpdateStrategy::lazy;
};

struct Observed {
  std::vector<std::vector<std::uint8_t>> reads;  // every host read, then every slot at the end
  std::string stats;
  std::vector<std::vector<IntervalMap<AgentMask>::Segment>> directories;
  std::vector<int> history_counts;
  std::uint64_t repeats = 0;
  std::uint64_t cycle_repeats = 0;
  std::uint64_t directory_skips = 0;
  std::uint64_t evictions = 0;
  std::uint64_t periodic_replays = 0;  // RuntimeCore::periodic_replays
  std::uint64_t probe_rounds = 0;      // RuntimeCore::periodic_probe_rounds
  std::uint64_t carried_rounds = 0;    // RuntimeCore::periodic_carried_rounds
  // The lean repeat (RuntimeCore::launch_again): its launches, and what it must leave as the
  // repeat path does: the other counters, each device's allocation lists (LRU order) and memory.
  std::uint64_t lean_launches = 0;
  std::vector<std::uint64_t> counters;
  std::vector<std::vector<std::uint64_t>> device_lists;
  std::vector<std::uint64_t> device_memory;
};

struct HostSetup {
  std::size_t devices = 1;
  UpdateStrategy strategy = UpdateStrategy::lazy;
  std::uint64_t device_memory = 0;  // RuntimeOptions::device_memory (0: no cap)
};

constexpr std::size_t kSlots = 3;

// lean: tokened launches try RuntimeCore::launch_again first, as the OpenCL platform does.
Observed run_host(const std::vector<Step>& script, const HostSetup& setup, bool fast_path,
                  std::vector<std::vector<std::uint8_t>>* oracle_reads, bool lean = false) {
  RuntimeOptions options{setup.strategy};
  options.repeat_fast_path = fast_path;
  options.lean_repeats = lean;
  options.device_memory = setup.device_memory;
  HostDeviceOptions device_options;
  device_options.peer_copies = false;  // copies between devices go through the host too
  Runtime rt(make_host_devices(setup.devices, device_options), options);
  std::vector<BufferId> slots;
  std::vector<std::vector<std::uint8_t>> flat(kSlots, std::vector<std::uint8_t>(kGrid));
  for (std::size_t b = 0; b < kSlots; ++b) {
    for (std::uint64_t i = 0; i < kGrid; ++i) flat[b][i] = static_cast<std::uint8_t>(i * (b + 3));
    slots.push_back(rt.create_buffer(kGrid, "grid" + std::to_string(b)));
    rt.write_blocking(slots[b], 0, std::as_bytes(std::span(flat[b])));
  }
  // Tokens: one per spec while its buffers live (a cycle passes the same token again).
  std::vector<std::pair<LaunchSpec, std::shared_ptr<const BuiltLaunch>>> tokens;
  std::vector<std::string> kernels_seen;
  Observed seen;
  for (const Step& step : script) {
    switch (step.kind) {
      case Step::Kind::launch:
      case Step::Kind::launch_events:
      case Step::Kind::untokened: {
        std::shared_ptr<const BuiltLaunch> built;
        for (const auto& [spec, b] : tokens) {
          if (spec == step.spec) built = b;
        }
        if (!built || step.kind == Step::Kind::untokened) {
          built = build(step.spec, slots, setup.devices);
          if (step.kind != Step::Kind::untokened) tokens.emplace_back(step.spec, built);
        }
        std::vector<Event> events;
        const bool lean_done = lean && step.kind == Step::Kind::launch &&
                               rt.core().launch_again(built.get(), built->args).has_value();
        if (!lean_done) {
          rt.core().launch_partitioned(built->args, built->partitions,
                                       step.kind == Step::Kind::launch_events ? &events : nullptr,
                                       step.kind != Step::Kind::untokened ? built : nullptr);
        }
        if (step.kind == Step::Kind::launch_events && events.size() != built->partitions.size()) {
          ADD_FAILURE() << "a launch asking its partitions' events got " << events.size();
        }
        apply(step.spec, flat);
        break;
      }
      case Step::Kind::host_read: {
        std::vector<std::uint8_t> out(step.size);
        rt.read_blocking(slots[step.slot], step.offset, std::as_writable_bytes(std::span(out)));
        seen.reads.push_back(out);
        if (oracle_reads != nullptr) {
          oracle_reads->emplace_back(
              flat[step.slot].begin() + static_cast<std::ptrdiff_t>(step.offset),
              flat[step.slot].begin() + static_cast<std::ptrdiff_t>(step.offset + step.size));
        }
        break;
      }
      case Step::Kind::host_write: {
        std::vector<std::uint8_t> values(step.size);
        for (std::uint64_t i = 0; i < step.size; ++i) {
          values[i] = static_cast<std::uint8_t>(step.value + 7 * i);
        }
        rt.write_blocking(slots[step.slot], step.offset, std::as_bytes(std::span(values)));
        std::copy(values.begin(), values.end(),
                  flat[step.slot].begin() + static_cast<std::ptrdiff_t>(step.offset));
        break;
      }
      case Step::Kind::replace: {
        rt.release_buffer(slots[step.slot]);
        slots[step.slot] = rt.create_buffer(kGrid, "grid" + std::to_string(step.slot) + "'");
        rt.write_blocking(slots[step.slot], 0, std::as_bytes(std::span(flat[step.slot])));
        std::erase_if(tokens, [&](const auto& t) {
          return t.first.in == step.slot || t.first.out == step.slot;
        });
        break;
      }
      case Step::Kind::release_spare: {
        const BufferId spare = rt.create_buffer(kGrid, "spare");
        std::vector<BufferId> with_spare = slots;
        with_spare.push_back(spare);
        const LaunchSpec bump{KernelKind::bump, kSlots, kSlots, 1};
        const auto built = build(bump, with_spare, setup.devices);
        rt.core().launch_partitioned(built->args, built->partitions, nullptr, built);
        rt.release_buffer(spare);
        break;
      }
      case Step::Kind::strategy:
        rt.set_strategy(step.strategy);
        break;
    }
    // The allocations' LRU order after every step (check_lean_script compares them): the in-use
    // and unused lists (when a merged box's old allocation leaves the retiring list depends on
    // what has finished when it is asked).
    for (std::vector<std::uint64_t>& lists : rt.core().device_lists()) {
      const auto first_end = std::find(lists.begin(), lists.end(), 0);
      lists.erase(std::find(first_end + 1, lists.end(), 0), lists.end());
      seen.device_lists.push_back(std::move(lists));
    }
    // Eviction prefers allocations no running operation uses: under a cap, every step waits for
    // its operations (finish() is no operation the repeat path counts), so what is evicted does
    // not depend on timing and both runs evict the same.
    if (setup.device_memory != 0) rt.finish();
  }
  for (std::size_t b = 0; b < kSlots; ++b) {
    std::vector<std::uint8_t> out(kGrid);
    rt.read_blocking(slots[b], 0, std::as_writable_bytes(std::span(out)));
    seen.reads.push_back(out);
    if (oracle_reads != nullptr) oracle_reads->push_back(flat[b]);
  }
  rt.finish();
  seen.stats = rt.stats().to_json();
  for (const BufferId id : slots) seen.directories.push_back(rt.core().directory_segments(id));
  seen.history_counts =
      testing::history_counts(rt, slots, {"scale", "smooth", "bump"}, setup.devices);
  seen.repeats = rt.core().repeated_launches();
  seen.cycle_repeats = rt.core().cycle_repeats();
  seen.directory_skips = rt.core().repeats_leaving_directory();
  seen.periodic_replays = rt.core().periodic_replays();
  seen.probe_rounds = rt.core().periodic_probe_rounds();
  seen.carried_rounds = rt.core().periodic_carried_rounds();
  for (const DeviceMemoryReport& r : rt.core().device_memory()) {
    seen.evictions += r.memory.evictions;
    // (Without a cap the steps do not wait: when a merged box's old allocation is freed, hence
    // the peak of the bytes held, depends on what has finished. `reclaims` is left out for the
    // same reason: a retiring allocation whose users finished before room was needed is freed
    // without waiting and not counted, one still in use is waited for and counted; seed
    // 2972734094 differed by one under load, the bytes freed and the evictions alike.)
    const std::uint64_t peak = setup.device_memory != 0 ? r.memory.peak_held_bytes : 0;
    for (const std::uint64_t v :
         {r.memory.limit, r.memory.held_bytes, peak, r.memory.peak_settled_bytes,
          r.memory.retiring_bytes, r.memory.evicted_bytes, r.memory.evictions, r.memory.refusals,
          r.need_bytes, r.peak_need_bytes}) {
      seen.device_memory.push_back(v);
    }
  }
  seen.lean_launches = rt.core().lean_launches();
  const RuntimeCore::KernelWaits waits = rt.core().kernel_waits();
  seen.counters = {seen.repeats,
                   seen.cycle_repeats,
                   seen.directory_skips,
                   seen.periodic_replays,
                   rt.core().periodic_materializations(),
                   rt.core().deferred_record_launches(),
                   rt.core().rewriting_launch_buffers(),
                   rt.core().directory_version(),
                   waits.kernels};  // (waits.events depends on what has finished: timing)
  for (std::vector<std::uint64_t>& lists : rt.core().device_lists()) {
    const auto first_end = std::find(lists.begin(), lists.end(), 0);
    lists.erase(std::find(first_end + 1, lists.end(), 0), lists.end());  // as after each step
    seen.device_lists.push_back(std::move(lists));
  }
  return seen;
}

// Runs the script with the fast path on and off; both must equal the oracle and each other.
Observed check_script(const std::vector<Step>& script, const HostSetup& setup) {
  std::vector<std::vector<std::uint8_t>> oracle;
  const Observed fast = run_host(script, setup, true, &oracle);
  const Observed slow = run_host(script, setup, false, nullptr);
  EXPECT_EQ(fast.reads.size(), oracle.size());
  for (std::size_t i = 0; i < std::min(fast.reads.size(), oracle.size()); ++i) {
    EXPECT_EQ(fast.reads[i], oracle[i]) << "host read " << i << " (fast path)";
    EXPECT_EQ(slow.reads[i], oracle[i]) << "host read " << i << " (no fast path)";
  }
  EXPECT_EQ(fast.stats, slow.stats);
  EXPECT_TRUE(fast.directories == slow.directories) << "directories differ";
  EXPECT_EQ(fast.history_counts, slow.history_counts);
  EXPECT_EQ(fast.evictions, slow.evictions);
  EXPECT_EQ(slow.repeats, 0u);
  EXPECT_EQ(slow.periodic_replays, 0u);
  EXPECT_EQ(slow.carried_rounds, 0u);
  return fast;
}

Step launch(KernelKind kind, std::size_t in, std::size_t out, int c) {
  Step s;
  s.spec = {kind, in, out, c};
  return s;
}
Step host_read(std::size_t slot, std::uint64_t offset, std::uint64_t size) {
  Step s;
  s.kind = Step::Kind::host_read;
  s.slot = slot;
  s.offset = offset;
  s.size = size;
  return s;
}
Step host_write(std::size_t slot, std::uint64_t offset, std::uint64_t size, int value) {
  Step s = host_read(slot, offset, size);
  s.kind = Step::Kind::host_write;
  s.value = value;
  return s;
}
Step of_kind(Step::Kind kind, std::size_t slot = 0) {
  Step s;
  s.kind = kind;
  s.slot = slot;
  return s;
}

// `rounds` rounds of the cycle, with `breaks(round, script)` adding steps after each round.
std::vector<Step> cycle_script(const std::vector<Step>& cycle, int rounds,
                               const std::function<void(int, std::vector<Step>&)>& breaks) {
  std::vector<Step> script;
  for (int r = 0; r < rounds; ++r) {
    script.insert(script.end(), cycle.begin(), cycle.end());
    if (breaks) breaks(r, script);
  }
  return script;
}

// Every kind of break, a few rounds apart, each followed by clean rounds (where the cycle forms
// again and skips).
void every_break(int round, std::vector<Step>& script) {
  switch (round) {
    case 5:
      script.push_back(host_read(0, 100, 40));  // the host reads a grid between two rounds
      break;
    case 9:
      script.push_back(host_write(1, 200, 16, 9));  // the host writes the grid the next one reads
      break;
    case 10:
      script.push_back(host_read(1, 190, 40));  // what the cycle made of the bytes written
      break;
    case 13:
      script.push_back(launch(KernelKind::bump, 2, 2, 5));  // an unrelated launch, with a token
      break;
    case 17: {
      Step s = launch(KernelKind::bump, 0, 0, 3);  // a launch without a token
      s.kind = Step::Kind::untokened;
      script.push_back(s);
      break;
    }
    case 21:
      script.push_back(of_kind(Step::Kind::release_spare));  // a buffer created and freed
      break;
    case 25:
      script.push_back(of_kind(Step::Kind::replace, 1));  // a grid of the cycle freed, replaced
      break;
    default:
      break;
  }
}

class CycleRepeatHostTest
    : public ::testing::TestWithParam<std::tuple<UpdateStrategy, std::size_t>> {
 protected:
  HostSetup setup() const { return {std::get<1>(GetParam()), std::get<0>(GetParam())}; }
  [[nodiscard]] bool skips_expected() const {
    const UpdateStrategy s = std::get<0>(GetParam());
    return s == UpdateStrategy::lazy || s == UpdateStrategy::adaptive;
  }
};

TEST_P(CycleRepeatHostTest, PingPongOfPeriodTwoMatchesTheLaunchesWithoutTheFastPath) {
  // scale A -> B, then B -> A: each grid is written by one launch and read by the other, on the
  // same device halves, so once formed every round skips its directory steps.
  const std::vector<Step> cycle{launch(KernelKind::scale, 0, 1, 1),
                                launch(KernelKind::scale, 1, 0, 2)};
  const Observed fast = check_script(cycle_script(cycle, 30, every_break), setup());
  EXPECT_GT(fast.cycle_repeats, 30u) << "the ping-pong did not repeat as a cycle";
  if (skips_expected()) {
    // Skipped as repeats that change nothing, or replayed as a periodic cycle.
    EXPECT_GT(fast.directory_skips + fast.periodic_replays, 20u)
        << "no round of the ping-pong skipped the directory";
  } else {
    EXPECT_EQ(fast.directory_skips, 0u) << "batch and balance copy after every write";
  }
}

TEST_P(CycleRepeatHostTest, StencilPingPongWithHalosMatchesTheLaunchesWithoutTheFastPath) {
  // smooth reads a halo: on 2 devices each round copies the other half's edge (never skipped).
  const std::vector<Step> cycle{launch(KernelKind::smooth, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 0, 2)};
  const Observed fast = check_script(cycle_script(cycle, 30, every_break), setup());
  EXPECT_GT(fast.cycle_repeats, 30u);
  if (skips_expected() && setup().devices == 1) {
    EXPECT_GT(fast.directory_skips + fast.periodic_replays, 20u);
  }
}

TEST_P(CycleRepeatHostTest, CycleOfPeriodThreeMatchesTheLaunchesWithoutTheFastPath) {
  const std::vector<Step> cycle{launch(KernelKind::scale, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 2, 2),
                                launch(KernelKind::scale, 2, 0, 3)};
  const Observed fast = check_script(cycle_script(cycle, 30, every_break), setup());
  EXPECT_GT(fast.cycle_repeats, 45u);
  if (skips_expected() && setup().devices == 1) {
    EXPECT_GT(fast.directory_skips + fast.periodic_replays, 30u);
  }
}

TEST_P(CycleRepeatHostTest, CycleWhoseLaunchesWriteTheSameGridMatchesWithoutTheFastPath) {
  // Two launches of one cycle write grid 2 (scale A -> C, then scale B -> C): its adaptive
  // recording is the other launch's when each repeats.
  const std::vector<Step> cycle{launch(KernelKind::scale, 0, 2, 1),
                                launch(KernelKind::scale, 1, 2, 2),
                                launch(KernelKind::bump, 0, 0, 1)};
  check_script(cycle_script(cycle, 20, every_break), setup());
}

TEST_P(CycleRepeatHostTest, CycleThatEvictsMatchesTheLaunchesWithoutTheFastPath) {
  // Room for two grids per device: each launch of the 3-cycle evicts the grid it does not use.
  HostSetup s = setup();
  s.device_memory = (2 * kGrid + kGrid / 2) / s.devices;
  const std::vector<Step> cycle{launch(KernelKind::scale, 0, 1, 1),
                                launch(KernelKind::scale, 1, 2, 2),
                                launch(KernelKind::scale, 2, 0, 3)};
  const Observed fast = check_script(cycle_script(cycle, 12, nullptr), s);
  EXPECT_GT(fast.evictions, 10u) << "the cap did not make the cycle evict";
}

INSTANTIATE_TEST_SUITE_P(
    StrategiesAndDevices, CycleRepeatHostTest,
    ::testing::Combine(::testing::Values(UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                         UpdateStrategy::batch, UpdateStrategy::balance),
                       ::testing::Values(std::size_t{1}, std::size_t{2})),
    [](const auto& p) {
      return std::string(to_string(std::get<0>(p.param))) + "_" +
             std::to_string(std::get<1>(p.param)) + "devices";
    });

// A random program: cycles of random period (1 to 4 launches over the three grids) run for a
// while, broken by everything that may come between two launches.
std::vector<Step> random_script(std::uint32_t seed) {
  std::mt19937 random(seed);
  const auto pick = [&](std::uint32_t n) { return static_cast<std::size_t>(random() % n); };
  std::vector<Step> cycle;
  const auto new_cycle = [&] {
    cycle.clear();
    const std::size_t period = 1 + pick(4);
    for (std::size_t i = 0; i < period; ++i) {
      const auto kind = static_cast<KernelKind>(pick(3));
      const std::size_t in = pick(kSlots);
      const std::size_t out = kind == KernelKind::bump ? in : (in + 1 + pick(kSlots - 1)) % kSlots;
      cycle.push_back(launch(kind, in, out, static_cast<int>(pick(5))));
    }
  };
  new_cycle();
  std::vector<Step> script;
  std::size_t position = 0;
  for (int n = 0; n < 260; ++n) {
    const std::size_t what = pick(100);
    if (what < 78) {
      script.push_back(cycle[position++ % cycle.size()]);
    } else if (what < 82) {
      new_cycle();
      position = 0;
    } else if (what < 86) {
      script.push_back(host_read(pick(kSlots), pick(kGrid - 64), 1 + pick(64)));
    } else if (what < 89) {
      script.push_back(
          host_write(pick(kSlots), pick(kGrid - 32), 1 + pick(32), static_cast<int>(pick(256))));
    } else if (what < 92) {
      Step s = launch(KernelKind::bump, pick(kSlots), 0, 1);
      s.spec.out = s.spec.in;
      if (pick(2) == 0) s.kind = Step::Kind::untokened;
      script.push_back(s);
    } else if (what < 94) {
      script.push_back(of_kind(Step::Kind::release_spare));
    } else if (what < 96) {
      script.push_back(of_kind(Step::Kind::replace, pick(kSlots)));
    } else {
      Step s = of_kind(Step::Kind::strategy);
      s.strategy = static_cast<UpdateStrategy>(pick(4));
      script.push_back(s);
    }
  }
  return script;
}

std::uint32_t first_seed() {
  if (const char* s = std::getenv("UNIMEM_TEST_SEED")) {
    return static_cast<std::uint32_t>(std::stoul(s));
  }
  return std::random_device{}();
}

// Runs `check(seed, devices)` for the seeds [first, first + count) on 1 and 2 devices, each under
// a trace naming the seed; `first` is printed by the caller and UNIMEM_TEST_SEED reproduces it.
template <typename Check>
void for_seeds_on_1_and_2_devices(std::uint32_t first, std::uint32_t count, Check check) {
  for (std::uint32_t seed = first; seed < first + count; ++seed) {
    for (const std::size_t devices : {std::size_t{1}, std::size_t{2}}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " on " + std::to_string(devices) +
                   " device(s) (UNIMEM_TEST_SEED=" + std::to_string(first) + " reproduces it)");
      check(seed, devices);
    }
  }
}

// The set-up a seed of the random test runs on: its strategy, and a cap on every third seed
// (both tests below: a seed that once failed must run as it did then).
HostSetup random_setup(std::uint32_t seed, std::size_t devices) {
  return {devices, static_cast<UpdateStrategy>(seed % 4),
          seed % 3 == 0 ? 2 * kGrid + kGrid / 2 : 0};
}

TEST(CycleRepeatRandomTest, RandomCyclesAndBreaksMatchTheLaunchesWithoutTheFastPath) {
  const std::uint32_t first = first_seed();
  std::uint64_t cycle_repeats = 0;
  std::uint64_t skips = 0;
  for_seeds_on_1_and_2_devices(first, 12, [&](std::uint32_t seed, std::size_t devices) {
    const Observed fast = check_script(random_script(seed), random_setup(seed, devices));
    cycle_repeats += fast.cycle_repeats;
    skips += fast.directory_skips;
  });
  std::printf(
      "cycle repeat random test: first seed %u (UNIMEM_TEST_SEED), %llu cycle repeats, "
      "%llu directory skips\n",
      first, static_cast<unsigned long long>(cycle_repeats),
      static_cast<unsigned long long>(skips));
  EXPECT_GT(cycle_repeats, 100u);
  EXPECT_GT(skips, 50u);
}

// Seeds the random test above drew in some run and failed on, run on every run: a new seed per run
// finds a fault only now and then (3411850818 on 1 device, a cap: a repeat that skipped holding
// its buffers made the cap evict another buffer than the launches without the fast path).
TEST(CycleRepeatRandomTest, SeedsThatOnceFailedMatchTheLaunchesWithoutTheFastPath) {
  for (const std::uint32_t seed : {3411850818u}) {
    for_seeds_on_1_and_2_devices(seed, 1, [](std::uint32_t s, std::size_t devices) {
      check_script(random_script(s), random_setup(s, devices));
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The lean repeat (RuntimeCore::launch_again, RuntimeOptions::lean_repeats): a launch repeating
// the runtime's previous operation exactly re-enqueues its last run's kernels. The same script
// runs with the lean repeat (every tokened launch tries launch_again first, as the OpenCL
// platform does), without it (the repeat path) and without the fast path; all must equal the
// oracle and each other in bytes (reads, statistics: bytes per direction, eviction write-back),
// and the lean run must leave what the repeat path leaves: every counter, each device's
// allocation lists in LRU order and its memory figures.

Observed check_lean_script(const std::vector<Step>& script, const HostSetup& setup) {
  std::vector<std::vector<std::uint8_t>> oracle;
  const Observed lean = run_host(script, setup, true, &oracle, true);
  const Observed repeat = run_host(script, setup, true, nullptr, false);
  const Observed full = run_host(script, setup, false, nullptr, false);
  EXPECT_EQ(lean.reads.size(), oracle.size());
  for (std::size_t i = 0; i < std::min(lean.reads.size(), oracle.size()); ++i) {
    EXPECT_EQ(lean.reads[i], oracle[i]) << "host read " << i << " (lean repeats)";
    EXPECT_EQ(repeat.reads[i], oracle[i]) << "host read " << i << " (repeat path)";
    EXPECT_EQ(full.reads[i], oracle[i]) << "host read " << i << " (no fast path)";
  }
  EXPECT_EQ(lean.stats, repeat.stats);
  EXPECT_EQ(lean.stats, full.stats);
  EXPECT_TRUE(lean.directories == repeat.directories) << "directories differ";
  EXPECT_EQ(lean.history_counts, repeat.history_counts);
  EXPECT_EQ(lean.history_counts, full.history_counts);
  EXPECT_EQ(lean.counters, repeat.counters) << "counters differ (repeats, cycle repeats, "
                                               "directory skips, replays, materializations, "
                                               "deferred, rewriting, directory version, kernels)";
  EXPECT_EQ(lean.device_lists, repeat.device_lists) << "the LRU order of allocations differs";
  EXPECT_EQ(lean.device_memory, repeat.device_memory);
  EXPECT_EQ(lean.evictions, full.evictions);
  EXPECT_EQ(repeat.lean_launches, 0u);
  EXPECT_EQ(full.lean_launches, 0u);
  return lean;
}

// Runs of one launch (what the lean repeat is for), broken by everything that may come between:
// host reads and writes, other launches (with and without a token), the same launch asking for
// its events, a short cycle, buffers created, released and replaced, strategy changes; under a
// device memory cap on some seeds (evictions between and within the runs).
std::vector<Step> lean_script(std::uint32_t seed) {
  std::mt19937 random(seed);
  const auto pick = [&](std::uint32_t n) { return static_cast<std::size_t>(random() % n); };
  const auto any_launch = [&] {
    const auto kind = static_cast<KernelKind>(pick(3));
    const std::size_t in = pick(kSlots);
    const std::size_t out = kind == KernelKind::bump ? in : (in + 1 + pick(kSlots - 1)) % kSlots;
    return launch(kind, in, out, static_cast<int>(pick(5)));
  };
  Step current = any_launch();
  std::vector<Step> script;
  for (int n = 0; n < 320; ++n) {
    const std::size_t what = pick(100);
    if (what < 66) {
      script.push_back(current);
    } else if (what < 72) {
      current = any_launch();
    } else if (what < 76) {
      script.push_back(host_read(pick(kSlots), pick(kGrid - 64), 1 + pick(64)));
    } else if (what < 79) {
      script.push_back(
          host_write(pick(kSlots), pick(kGrid - 32), 1 + pick(32), static_cast<int>(pick(256))));
    } else if (what < 84) {
      Step s = any_launch();
      if (pick(3) == 0) s.kind = Step::Kind::untokened;
      script.push_back(s);
    } else if (what < 88) {
      Step s = current;
      s.kind = Step::Kind::launch_events;
      script.push_back(s);
    } else if (what < 91) {
      const Step other = any_launch();  // a ping-pong for a few rounds
      for (int r = 0; r < 3; ++r) {
        script.push_back(current);
        script.push_back(other);
      }
    } else if (what < 94) {
      script.push_back(of_kind(Step::Kind::release_spare));
    } else if (what < 97) {
      script.push_back(of_kind(Step::Kind::replace, pick(kSlots)));
    } else {
      Step s = of_kind(Step::Kind::strategy);
      s.strategy = static_cast<UpdateStrategy>(pick(4));
      script.push_back(s);
    }
  }
  return script;
}

// A kernel lives until its launches have run (RuntimeCore::track; a kernel launched again is
// held by its newest in-flight entry only): launched twice in a row without a token (nothing but
// the in-flight list keeps it then) and dropped by the caller while its first launch still
// runs, it is alive until both have run.
TEST(KernelLifetime, AKernelLaunchedTwiceLivesWhileItsLaunchesRun) {
  Runtime rt(make_host_devices(1), RuntimeOptions{UpdateStrategy::lazy});
  const BufferId b = rt.create_buffer(kGrid, "grid");
  const std::vector<std::uint8_t> zeros(kGrid, 0);
  rt.write_blocking(b, 0, std::as_bytes(std::span(zeros)));
  std::atomic<bool> go{false};
  auto kernel = std::make_shared<HostKernel>("wait", [&go](const HostKernelContext& ctx) {
    while (!go.load()) std::this_thread::yield();
    ctx.buffer<std::uint8_t>(0)[0] += 1;
  });
  const std::weak_ptr<const CompiledKernel> alive = kernel;
  {
    std::vector<LaunchArg> args = {LaunchArg::of_buffer(b, {}, {})};
    LaunchPartition p;
    p.device = 0;
    p.kernel = kernel;
    p.range.dims = 1;
    p.range.global[0] = kGrid;
    p.accesses[0] = AccessBytes{IntervalSet{{0, kGrid}}, IntervalSet{{0, kGrid}}, {}};
    const std::vector<LaunchPartition> partitions{p};
    rt.core().launch_partitioned(args, partitions);
    rt.core().launch_partitioned(args, partitions);
  }
  kernel.reset();
  EXPECT_FALSE(alive.expired()) << "the kernel went while its launches wait to run";
  go.store(true);
  std::uint8_t first = 0;
  rt.read_blocking(b, 0, std::as_writable_bytes(std::span(&first, 1)));
  EXPECT_EQ(first, 2);
}

TEST(LeanRepeatRandomTest, RunsOfALaunchBrokenAtRandomLeaveWhatTheRepeatPathLeaves) {
  const std::uint32_t first = first_seed();
  std::uint64_t lean_launches = 0;
  std::uint64_t evictions = 0;
  for_seeds_on_1_and_2_devices(first, 10, [&](std::uint32_t seed, std::size_t devices) {
    const HostSetup setup{devices, static_cast<UpdateStrategy>(seed % 4),
                          seed % 2 == 0 ? 2 * kGrid + kGrid / 2 : 0};
    const Observed lean = check_lean_script(lean_script(seed), setup);
    lean_launches += lean.lean_launches;
    evictions += lean.evictions;
  });
  std::printf(
      "lean repeat random test: first seed %u (UNIMEM_TEST_SEED), %llu lean launches, "
      "%llu evictions\n",
      first, static_cast<unsigned long long>(lean_launches),
      static_cast<unsigned long long>(evictions));
  EXPECT_GT(lean_launches, 300u) << "the runs did not take the lean repeat";
  EXPECT_GT(evictions, 20u) << "the caps did not make the runs evict";
}

// ---------------------------------------------------------------------------------------------
// Periodic cycles (RuntimeCore, "Periodic cycles"): a halo exchange changes the directory at
// every launch, so the repeat path's directory skip never applies, but its rounds repeat: once a
// round is verified periodic, later rounds replay its copies and kernels, and the state is made
// real before anything else. The same checks as above (fast path on and off, the oracle, the
// stats, directories and history counts at the end), on 2 and 3 devices, with the cycle broken
// between rounds and in the middle of one.

// Every kind of break in the middle of a round: after the first launch of some rounds.
std::vector<Step> mid_round_script(const std::vector<Step>& cycle, int rounds) {
  std::vector<Step> script;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      script.push_back(cycle[i]);
      if (i != 0) continue;
      switch (r) {
        case 6:
          script.push_back(host_read(1, 0, kGrid));  // what the round's first launch wrote
          break;
        case 10:
          script.push_back(host_write(0, 250, 12, 4));  // rows the next launch reads as halo
          break;
        case 14:
          script.push_back(launch(KernelKind::bump, 2, 2, 5));  // another launch, with a token
          break;
        case 18: {
          Step s = launch(KernelKind::bump, 1, 1, 3);  // a launch without a token, on the cycle
          s.kind = Step::Kind::untokened;
          script.push_back(s);
          break;
        }
        case 22:
          script.push_back(of_kind(Step::Kind::release_spare));
          break;
        case 26:
          script.push_back(of_kind(Step::Kind::replace, 0));  // the next launch's input freed
          break;
        default:
          break;
      }
    }
  }
  return script;
}

class PeriodicCycleHostTest
    : public ::testing::TestWithParam<std::tuple<UpdateStrategy, std::size_t>> {
 protected:
  HostSetup setup() const { return {std::get<1>(GetParam()), std::get<0>(GetParam())}; }
  [[nodiscard]] bool replays_expected() const {
    const UpdateStrategy s = std::get<0>(GetParam());
    return s == UpdateStrategy::lazy || s == UpdateStrategy::adaptive;
  }
};

TEST_P(PeriodicCycleHostTest, HaloPingPongReplaysItsRoundsAndMatchesTheFullPath) {
  const std::vector<Step> cycle{launch(KernelKind::smooth, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 0, 2)};
  const Observed fast = check_script(cycle_script(cycle, 40, every_break), setup());
  std::printf("%s on %zu devices: %llu periodic replays\n",
              std::string(to_string(std::get<0>(GetParam()))).c_str(), setup().devices,
              static_cast<unsigned long long>(fast.periodic_replays));
  if (replays_expected()) {
    EXPECT_GT(fast.periodic_replays, 20u) << "no round of the halo exchange was replayed";
  }
}

// Probe rounds (RuntimeCore, "Periodic cycles"): an adaptive cycle's first round, whose histories
// still count up to 2, is run without a capture and found not periodic by its count signatures;
// the replay then begins exactly where a capture of every round would have begun it: the two
// launches, the two repeats that make the streak, the probe round and the captured round run
// the full path, every later launch replays (20 rounds of 2: 32 replays). The other strategies
// keep no history: no probe, the first round is captured and verified (34 replays).
TEST_P(PeriodicCycleHostTest, FirstRoundsStillCountingUpAreProbedAndTheReplayStartsAsBefore) {
  const std::vector<Step> cycle{launch(KernelKind::smooth, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 0, 2)};
  const Observed fast = check_script(cycle_script(cycle, 20, nullptr), setup());
  std::printf("%s on %zu devices: %llu periodic replays, %llu probe rounds\n",
              std::string(to_string(std::get<0>(GetParam()))).c_str(), setup().devices,
              static_cast<unsigned long long>(fast.periodic_replays),
              static_cast<unsigned long long>(fast.probe_rounds));
  switch (std::get<0>(GetParam())) {
    case UpdateStrategy::adaptive:
      EXPECT_EQ(fast.probe_rounds, 1u) << "the first round was not probed";
      EXPECT_EQ(fast.periodic_replays, 32u) << "the probe delayed (or lost) the replay";
      break;
    default:
      EXPECT_EQ(fast.probe_rounds, 0u) << "a cycle without history was probed";
      EXPECT_EQ(fast.periodic_replays, 34u);
      break;
  }
}

TEST_P(PeriodicCycleHostTest, HaloCycleOfThreeBrokenMidRoundMatchesTheFullPath) {
  const std::vector<Step> cycle{launch(KernelKind::smooth, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 2, 2),
                                launch(KernelKind::smooth, 2, 0, 3)};
  const Observed fast = check_script(mid_round_script(cycle, 32), setup());
  if (replays_expected()) {
    EXPECT_GT(fast.periodic_replays, 20u);
  }
}

TEST_P(PeriodicCycleHostTest, HaloPingPongBrokenMidRoundMatchesTheFullPath) {
  const std::vector<Step> cycle{launch(KernelKind::smooth, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 0, 2)};
  const Observed fast = check_script(mid_round_script(cycle, 32), setup());
  if (replays_expected()) {
    EXPECT_GT(fast.periodic_replays, 10u) << "replays " << fast.periodic_replays;
  }
}

TEST_P(PeriodicCycleHostTest, HaloPingPongUnderADeviceMemoryCapMatchesTheFullPath) {
  // The cap holds the ping-pong's boxes; the launches on grid 2 in the middle of rounds evict
  // some of them (every break of mid_round_script, each needing room).
  HostSetup s = setup();
  const std::vector<Step> cycle{launch(KernelKind::smooth, 0, 1, 1),
                                launch(KernelKind::smooth, 1, 0, 2)};
  s.device_memory = 2 * kGrid / s.devices + 256;
  const Observed fast = check_script(mid_round_script(cycle, 32), s);
  EXPECT_GT(fast.evictions, 0u) << "the cap did not make the breaks evict";
  if (replays_expected()) {
    EXPECT_GT(fast.periodic_replays, 5u);
  }
}

// What `unimem bench` does run after run: the grids are released and made anew (fresh buffers,
// so the cycle's tokens and buffers are new), the host writes data the last run did not have,
// a halo cycle runs some rounds and the host reads the result. Cycles of two and three launches
// alternate (over two and three grids), so each capture reuses the storage of a capture over
// other buffers, of another length and buffer count (RuntimeCore::take_periodic_states).
std::vector<Step> runs_on_fresh_buffers_script(int runs, int rounds) {
  const std::vector<Step> pingpong{launch(KernelKind::smooth, 0, 1, 1),
                                   launch(KernelKind::smooth, 1, 0, 2)};
  const std::vector<Step> three{launch(KernelKind::smooth, 0, 1, 3),
                                launch(KernelKind::smooth, 1, 2, 4),
                                launch(KernelKind::smooth, 2, 0, 5)};
  std::vector<Step> script;
  for (int run = 0; run < runs; ++run) {
    const std::vector<Step>& cycle = run % 2 == 0 ? pingpong : three;
    for (std::size_t slot = 0; slot < cycle.size(); ++slot) {
      script.push_back(of_kind(Step::Kind::replace, slot));
    }
    script.push_back(host_write(0, 0, kGrid, 11 * run + 1));  // new inputs every run
    for (int r = 0; r < rounds; ++r) script.insert(script.end(), cycle.begin(), cycle.end());
    script.push_back(host_read(0, 0, kGrid));
  }
  return script;
}

TEST_P(PeriodicCycleHostTest, HaloCyclesOnFreshBuffersRunAfterRunMatchTheFullPath) {
  constexpr int kRuns = 6;
  const Observed fast = check_script(runs_on_fresh_buffers_script(kRuns, 12), setup());
  std::printf("%s on %zu devices: %llu periodic replays in %d runs\n",
              std::string(to_string(std::get<0>(GetParam()))).c_str(), setup().devices,
              static_cast<unsigned long long>(fast.periodic_replays), kRuns);
  if (replays_expected()) {
    // Every run replays its later rounds: at least 5 of its 12 (2 or 3 launches each).
    EXPECT_GE(fast.periodic_replays, 3u * 5 * 2 + 3u * 5 * 3);
  }
}

TEST_P(PeriodicCycleHostTest, HaloCyclesOnFreshBuffersUnderADeviceMemoryCapMatchTheFullPath) {
  // Room for the boxes of two grids on each device, not three: the three-grid cycle evicts
  // within its rounds, the ping-pong runs between them do not.
  HostSetup s = setup();
  s.device_memory = 2 * kGrid / s.devices + 256;
  const Observed fast = check_script(runs_on_fresh_buffers_script(6, 12), s);
  std::printf("%s on %zu devices under a cap: %llu periodic replays, %llu evictions\n",
              std::string(to_string(std::get<0>(GetParam()))).c_str(), s.devices,
              static_cast<unsigned long long>(fast.periodic_replays),
              static_cast<unsigned long long>(fast.evictions));
  EXPECT_GT(fast.evictions, 0u) << "the cap did not make the runs evict";
  if (replays_expected()) {
    EXPECT_GE(fast.periodic_replays, 3u * 5 * 2) << "the ping-pong runs replayed no rounds";
  }
}

// Carried rounds (RuntimeCore, "Carried rounds"): the same halo cycle run after run on fresh
// buffers. Under adaptive every run after the first replays the round the run before verified
// instead of capturing its own: a run of 12 rounds then runs 6 launches the full path (two new,
// two repeats, the probe round), not 8, and replays 18, not 16.
std::vector<Step> same_cycle_runs_script(int runs, int rounds, bool bump_first_in_odd_runs) {
  const std::vector<Step> pingpong{launch(KernelKind::smooth, 0, 1, 1),
                                   launch(KernelKind::smooth, 1, 0, 2)};
  std::vector<Step> script;
  for (int run = 0; run < runs; ++run) {
    script.push_back(of_kind(Step::Kind::replace, 0));
    script.push_back(of_kind(Step::Kind::replace, 1));
    script.push_back(host_write(0, 0, kGrid, 11 * run + 1));
    // Another kernel writes grid 0 first: its history holds a key the carried round's has not.
    if (bump_first_in_odd_runs && run % 2 == 1) script.push_back(launch(KernelKind::bump, 0, 0, 3));
    for (int r = 0; r < rounds; ++r) script.insert(script.end(), pingpong.begin(), pingpong.end());
    script.push_back(host_read(0, 0, kGrid));
  }
  return script;
}

TEST_P(PeriodicCycleHostTest, TheSameCycleOnFreshBuffersReplaysTheRoundTheRunBeforeVerified) {
  constexpr int kRuns = 5;
  const Observed fast = check_script(same_cycle_runs_script(kRuns, 12, false), setup());
  std::printf("%s on %zu devices: %llu periodic replays, %llu carried rounds in %d runs\n",
              std::string(to_string(std::get<0>(GetParam()))).c_str(), setup().devices,
              static_cast<unsigned long long>(fast.periodic_replays),
              static_cast<unsigned long long>(fast.carried_rounds), kRuns);
  if (std::get<0>(GetParam()) == UpdateStrategy::adaptive) {
    EXPECT_EQ(fast.carried_rounds, static_cast<std::uint64_t>(kRuns - 1))
        << "a run did not take the round the run before verified";
    EXPECT_EQ(fast.periodic_replays, 16u + 18u * (kRuns - 1));
  }
}

TEST_P(PeriodicCycleHostTest, ACarriedRoundWhoseHistoriesDifferIsNotReplayed) {
  // Runs 2 and 4 start with a bump on grid 0, the others without: each run's buffers have a
  // history the carried round (the run before's) has not, so every run captures its own.
  const Observed fast = check_script(same_cycle_runs_script(5, 12, true), setup());
  EXPECT_EQ(fast.carried_rounds, 0u) << "a round verified on other histories was replayed";
  if (std::get<0>(GetParam()) == UpdateStrategy::adaptive) {
    EXPECT_EQ(fast.periodic_replays, 5u * 16u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    StrategiesAndDevices, PeriodicCycleHostTest,
    ::testing::Combine(::testing::Values(UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                         UpdateStrategy::batch, UpdateStrategy::balance),
                       ::testing::Values(std::size_t{2}, std::size_t{3})),
    [](const auto& p) {
      return std::string(to_string(std::get<0>(p.param))) + "_" +
             std::to_string(std::get<1>(p.param)) + "devices";
    });

TEST(PeriodicCycleRandomTest, RandomCyclesOnTwoAndThreeDevicesMatchTheFullPath) {
  const std::uint32_t first = first_seed();
  std::uint64_t replays = 0;
  for (std::uint32_t seed = first; seed < first + 12; ++seed) {
    for (const std::size_t devices : {std::size_t{2}, std::size_t{3}}) {
      const HostSetup setup{devices, static_cast<UpdateStrategy>(seed % 4),
                            seed % 3 == 0 ? 2 * kGrid + kGrid / 2 : 0};
      SCOPED_TRACE("seed " + std::to_string(seed) + " on " + std::to_string(devices) +
                   " devices (UNIMEM_TEST_SEED=" + std::to_string(first) + " reproduces it)");
      replays += check_script(random_script(seed), setup).periodic_replays;
    }
  }
  std::printf("periodic cycle random test: first seed %u (UNIMEM_TEST_SEED), %llu replays\n", first,
              static_cast<unsigned long long>(replays));
  EXPECT_GT(replays, 50u);
}

// ---------------------------------------------------------------------------------------------
// POCL devices through Program: its recent launches pass the same tokens again.

constexpr const char* kSource = R"CLC(
kernel void scale(global const uint* in, global uint* out, uint c) {
  const size_t i = get_global_id(0);
  out[i] = 3u * in[i] + c;
}
kernel void smooth(global const uint* in, global uint* out, uint c, uint n) {
  const size_t i = get_global_id(0);
  const uint l = in[i > 0 ? i - 1 : i];
  const uint r = in[i + 1 < n ? i + 1 : i];
  out[i] = l + 2u * in[i] + r + c;
}
)CLC";

constexpr std::uint32_t kItems = 4096;

struct ProgramObserved {
  std::vector<std::vector<std::uint32_t>> reads;
  std::string stats;
  std::vector<std::vector<IntervalMap<AgentMask>::Segment>> directories;
  std::vector<int> history_counts;
  std::uint64_t cycle_repeats = 0;
  std::uint64_t directory_skips = 0;
  std::uint64_t periodic_replays = 0;
};

// What the program tests below start from: a runtime over `devices` POCL devices that splits
// even these small grids over them, kSource built, and three grids of kItems written with
// i * (b + 1), with the host's copy of them (flat, which the tests keep computing).
struct ThreeGrids {
  ThreeGrids(std::size_t devices, RuntimeOptions options)
      : rt(opencl::make_opencl_devices(devices == 1 ? "0" : "0-" + std::to_string(devices - 1)),
           split_small(options)),
        program(rt, kSource),
        flat(3, std::vector<std::uint32_t>(kItems)) {
    program.set_log([](const std::string&) {});
    range.global[0] = kItems;
    range.local[0] = 64;
    for (std::size_t b = 0; b < 3; ++b) {
      for (std::uint32_t i = 0; i < kItems; ++i) flat[b][i] = i * static_cast<std::uint32_t>(b + 1);
      grids.push_back(rt.create_buffer(kItems * sizeof(std::uint32_t)));
      rt.write_blocking(grids[b], 0, std::as_bytes(std::span(flat[b])));
    }
  }
  static RuntimeOptions split_small(RuntimeOptions options) {
    options.min_split_bytes = 0;
    return options;
  }
  // Items [at, at + count) of grid b as the runtime reads them; the host's copy into oracle.
  std::vector<std::uint32_t> read(std::size_t b, std::uint32_t at, std::uint32_t count,
                                  std::vector<std::vector<std::uint32_t>>* oracle) {
    std::vector<std::uint32_t> out(count);
    rt.read_blocking(grids[b], at * sizeof(std::uint32_t), std::as_writable_bytes(std::span(out)));
    if (oracle != nullptr) {
      oracle->emplace_back(flat[b].begin() + at, flat[b].begin() + at + count);
    }
    return out;
  }
  // A buffer created, written by a scale of grid 0 and released (no other grid changes).
  void scale_into_a_spare() {
    const BufferId spare = rt.create_buffer(kItems * sizeof(std::uint32_t));
    program.launch("scale", range, {Arg::buffer(grids[0]), Arg::buffer(spare), Arg::scalar(1u)});
    rt.release_buffer(spare);
  }
  // Each grid's directory segments.
  std::vector<std::vector<IntervalMap<AgentMask>::Segment>> directories() const {
    std::vector<std::vector<IntervalMap<AgentMask>::Segment>> all;
    for (const BufferId id : grids) all.push_back(rt.core().directory_segments(id));
    return all;
  }

  Runtime rt;
  Program program;
  std::vector<BufferId> grids;
  std::vector<std::vector<std::uint32_t>> flat;
  NDRange range;  // every launch's: kItems items in groups of 64
};

// rounds of a cycle of `period` (2: scale A -> B, smooth B -> A; 3: scale A -> B, smooth B -> C,
// scale C -> A), with a host read, an unrelated launch and a released buffer between some.
ProgramObserved run_program(std::size_t devices, int period, UpdateStrategy strategy,
                            bool fast_path, std::vector<std::vector<std::uint32_t>>* oracle) {
  RuntimeOptions options{strategy};
  options.repeat_fast_path = fast_path;
  ThreeGrids g(devices, options);
  Runtime& rt = g.rt;
  Program& program = g.program;
  const std::vector<BufferId>& grids = g.grids;
  std::vector<std::vector<std::uint32_t>>& flat = g.flat;
  const NDRange& range = g.range;
  const auto scale = [&](std::size_t in, std::size_t out, std::uint32_t c) {
    program.launch("scale", range,
                   {Arg::buffer(grids[in]), Arg::buffer(grids[out]), Arg::scalar(c)});
    for (std::uint32_t i = 0; i < kItems; ++i) flat[out][i] = 3u * flat[in][i] + c;
  };
  const auto smooth = [&](std::size_t in, std::size_t out, std::uint32_t c) {
    program.launch(
        "smooth", range,
        {Arg::buffer(grids[in]), Arg::buffer(grids[out]), Arg::scalar(c), Arg::scalar(kItems)});
    const std::vector<std::uint32_t> src = flat[in];
    for (std::uint32_t i = 0; i < kItems; ++i) {
      flat[out][i] = src[i > 0 ? i - 1 : i] + 2u * src[i] + src[i + 1 < kItems ? i + 1 : i] + c;
    }
  };
  ProgramObserved seen;
  const auto read = [&](std::size_t b, std::uint32_t at, std::uint32_t count) {
    seen.reads.push_back(g.read(b, at, count, oracle));
  };
  const auto write = [&](std::size_t b, std::uint32_t at, std::uint32_t count) {
    std::vector<std::uint32_t> values(count);
    for (std::uint32_t i = 0; i < count; ++i) values[i] = 11 * i + at;
    rt.write_blocking(grids[b], at * sizeof(std::uint32_t), std::as_bytes(std::span(values)));
    std::copy(values.begin(), values.end(), flat[b].begin() + at);
  };
  for (int round = 0; round < 24; ++round) {
    if (period == 2) {
      scale(0, 1, 1);
      if (round == 8) read(1, 2040, 16);   // mid-round: rows at the partitions' edge
      if (round == 12) write(1, 2045, 6);  // mid-round: the halo the next one reads
      if (round == 16) scale(2, 2, 5);     // mid-round: another launch
      smooth(1, 0, 2);
    } else {
      scale(0, 1, 1);
      smooth(1, 2, 2);
      scale(2, 0, 3);
    }
    if (round == 6) read(0, 1000, 100);
    if (round == 10) scale(2, 2, 7);          // unrelated (in place: reads and writes grid 2)
    if (round == 14) g.scale_into_a_spare();  // a buffer created, used and freed
  }
  for (std::size_t b = 0; b < 3; ++b) read(b, 0, kItems);
  rt.finish();
  seen.stats = rt.stats().to_json();
  seen.directories = g.directories();
  for (const BufferId id : grids) {
    for (const char* kernel : {"scale", "smooth"}) {
      for (const AgentMask writers : {AgentMask::of(1), AgentMask::of(1).with(2)}) {
        seen.history_counts.push_back(rt.core().history_repeat_count(id, kernel, writers));
      }
    }
  }
  seen.cycle_repeats = rt.core().cycle_repeats();
  seen.directory_skips = rt.core().repeats_leaving_directory();
  seen.periodic_replays = rt.core().periodic_replays();
  return seen;
}

class CycleRepeatProgramTest
    : public ::testing::TestWithParam<std::tuple<UpdateStrategy, std::size_t, int>> {};

TEST_P(CycleRepeatProgramTest, ProgramCyclesOnPoclMatchTheLaunchesWithoutTheFastPath) {
  const auto [strategy, devices, period] = GetParam();
  if (opencl::make_opencl_devices("").size() < devices) {
    GTEST_SKIP() << "needs " << devices
                 << " OpenCL devices (3: POCL_DEVICES=\"pthread pthread "
                    "pthread\")";
  }
  std::vector<std::vector<std::uint32_t>> oracle;
  const ProgramObserved fast = run_program(devices, period, strategy, true, &oracle);
  const ProgramObserved slow = run_program(devices, period, strategy, false, nullptr);
  EXPECT_TRUE(fast.reads == oracle) << "fast path differs from the oracle";
  EXPECT_TRUE(slow.reads == oracle) << "launches without the fast path differ from the oracle";
  EXPECT_EQ(fast.stats, slow.stats);
  EXPECT_TRUE(fast.directories == slow.directories) << "directories differ";
  EXPECT_EQ(fast.history_counts, slow.history_counts);
  EXPECT_GT(fast.cycle_repeats, 30u) << "Program did not repeat the cycle's launches";
  EXPECT_EQ(slow.cycle_repeats, 0u);
  // On one device every launch of the cycle skips its directory steps once formed (lazy and
  // adaptive); on two, smooth's halo is copied every round.
  if (devices == 1 && (strategy == UpdateStrategy::lazy || strategy == UpdateStrategy::adaptive)) {
    EXPECT_GT(fast.directory_skips + fast.periodic_replays, 30u);
  }
  // On more devices the halo exchange is periodic: its rounds replay (RuntimeCore, "Periodic
  // cycles"), adaptive's cycle of three too since a directory-skipping repeat's count no longer
  // makes each captured round differ from the last (`AdaptiveHistory::acts_as`).
  if (devices > 1 && (strategy == UpdateStrategy::lazy || strategy == UpdateStrategy::adaptive)) {
    EXPECT_GT(fast.periodic_replays, 10u) << "replays " << fast.periodic_replays;
  }
  EXPECT_EQ(slow.periodic_replays, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    StrategiesDevicesPeriods, CycleRepeatProgramTest,
    ::testing::Combine(::testing::Values(UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                         UpdateStrategy::batch, UpdateStrategy::balance),
                       ::testing::Values(std::size_t{1}, std::size_t{2}, std::size_t{3}),
                       ::testing::Values(2, 3)),
    [](const auto& p) {
      return std::string(to_string(std::get<0>(p.param))) + "_" +
             std::to_string(std::get<1>(p.param)) + "devices_period" +
             std::to_string(std::get<2>(p.param));
    });

// A small launch left to every device runs whole on the device holding most of its buffers
// (RuntimeOptions::min_split_bytes). In the cycle below, A (x -> w, 64 items: placed) first runs on
// device 0, where nothing is yet; then B, pinned to device 1, rewrites all of x there, so from the
// second round on device 1 holds most of A's bytes and A belongs there. A repeated A must not keep
// its first placement: with the fast path it goes where it goes without it.
struct PlacementObserved {
  std::vector<std::vector<std::uint32_t>> reads;
  std::string stats;
  std::vector<std::size_t> a_devices;  // where each A ran
  std::uint64_t cycle_repeats = 0;
};

PlacementObserved run_placement(bool fast_path) {
  RuntimeOptions options{UpdateStrategy::lazy};
  options.repeat_fast_path = fast_path;
  options.min_split_bytes = 4096;
  Runtime rt(opencl::make_opencl_devices(""), options);
  Program program(rt, kSource);
  program.set_log([](const std::string&) {});
  constexpr std::uint32_t kSmall = 64;
  constexpr std::uint32_t kLarge = 512;
  const BufferId x = rt.create_buffer(kLarge * sizeof(std::uint32_t), "x");
  const BufferId w = rt.create_buffer(kSmall * sizeof(std::uint32_t), "w");
  const BufferId z = rt.create_buffer(kLarge * sizeof(std::uint32_t), "z");
  std::vector<std::uint32_t> init(kLarge);
  for (std::uint32_t i = 0; i < kLarge; ++i) init[i] = 7 * i + 1;
  rt.write_blocking(x, 0, std::as_bytes(std::span(init)));
  rt.write_blocking(z, 0, std::as_bytes(std::span(init)));
  NDRange small;
  small.global[0] = kSmall;
  NDRange large;
  large.global[0] = kLarge;
  LaunchOptions on_device_1;
  on_device_1.device = 1;
  PlacementObserved seen;
  for (std::uint32_t round = 0; round < 12; ++round) {
    std::shared_ptr<const LaunchPlan> plan;
    program.core().launch("scale", small,
                          std::vector<Arg>{Arg::buffer(x), Arg::buffer(w), Arg::scalar(1u)}, {},
                          &plan);
    seen.a_devices.push_back(plan->partitions.front().device);
    program.launch("scale", large, {Arg::buffer(z), Arg::buffer(x), Arg::scalar(2u)}, on_device_1);
  }
  for (const BufferId b : {x, w, z}) {
    std::vector<std::uint32_t> out(rt.buffer_size(b) / sizeof(std::uint32_t));
    rt.read_blocking(b, 0, std::as_writable_bytes(std::span(out)));
    seen.reads.push_back(out);
  }
  rt.finish();
  seen.stats = rt.stats().to_json();
  seen.cycle_repeats = rt.core().cycle_repeats();
  return seen;
}

TEST(CycleRepeatPlacementTest, RepeatedSmallLaunchGoesWhereItsBuffersAreNowAsWithoutTheFastPath) {
  if (opencl::make_opencl_devices("").size() < 2) GTEST_SKIP() << "needs two OpenCL devices";
  const PlacementObserved fast = run_placement(true);
  const PlacementObserved slow = run_placement(false);
  ASSERT_GE(slow.a_devices.size(), 2u);
  EXPECT_EQ(slow.a_devices.front(), 0u) << "the first A runs where nothing is yet: device 0";
  EXPECT_EQ(slow.a_devices.back(), 1u) << "then where B left x: device 1";
  EXPECT_EQ(fast.a_devices, slow.a_devices);
  EXPECT_EQ(fast.reads, slow.reads);
  EXPECT_EQ(fast.stats, slow.stats);
  EXPECT_GT(fast.cycle_repeats, 10u);
}

// The eventless streak (RuntimeCore::launch_again with eventless; "The eventless streak" in
// runtime_core.cpp): the same runs of launches through ProgramCore::launch_again, once asking for
// no events (the streak's launches only enqueue, and whatever comes next closes it) and once
// asking for events (each lean repeat does its bookkeeping), broken by host reads and writes,
// other launches, finish(), counter queries and a released buffer. Both must read what the host
// computes and leave the same statistics, directories, adaptive histories, counters and device
// memory lists.
struct StreakObserved {
  std::vector<std::vector<std::uint32_t>> reads;
  std::string stats;
  std::vector<std::vector<IntervalMap<AgentMask>::Segment>> directories;
  std::vector<int> history_counts;
  std::vector<std::uint64_t> counters;
  std::vector<std::vector<std::uint64_t>> device_lists;
};

StreakObserved run_streaks(std::size_t devices, UpdateStrategy strategy, bool eventless,
                           std::vector<std::vector<std::uint32_t>>* oracle) {
  ThreeGrids g(devices, RuntimeOptions{strategy});
  Runtime& rt = g.rt;
  Program& program = g.program;
  const std::vector<BufferId>& grids = g.grids;
  std::vector<std::vector<std::uint32_t>>& flat = g.flat;
  const NDRange& range = g.range;
  // Per (in, out, c): its ticket, as the OpenCL platform keeps one per kernel.
  std::vector<std::pair<std::array<std::uint32_t, 3>, std::shared_ptr<const void>>> tickets;
  std::uint64_t lean = 0;
  const auto scale = [&](std::size_t in, std::size_t out, std::uint32_t c, int times) {
    const std::array<std::uint32_t, 3> key{static_cast<std::uint32_t>(in),
                                           static_cast<std::uint32_t>(out), c};
    for (int t = 0; t < times; ++t) {
      std::shared_ptr<const void>* ticket = nullptr;
      for (auto& [k, tk] : tickets) {
        if (k == key) ticket = &tk;
      }
      if (ticket == nullptr) ticket = &tickets.emplace_back(key, nullptr).second;
      if (*ticket && program.core().launch_again(*ticket, eventless)) {
        ++lean;
      } else {
        const std::vector<Arg> args{Arg::buffer(grids[in]), Arg::buffer(grids[out]),
                                    Arg::scalar(c)};
        program.core().launch("scale", range, args, {}, nullptr, nullptr, ticket);
      }
      const std::vector<std::uint32_t> src = flat[in];
      for (std::uint32_t i = 0; i < kItems; ++i) flat[out][i] = 3u * src[i] + c;
    }
  };
  StreakObserved seen;
  const auto read = [&](std::size_t b, std::uint32_t at, std::uint32_t count) {
    seen.reads.push_back(g.read(b, at, count, oracle));
  };
  scale(0, 1, 1, 30);
  read(1, 2040, 16);  // a host read right after a streak
  scale(0, 1, 1, 20);
  scale(2, 2, 5, 25);  // in place: reads and writes what it wrote
  scale(1, 0, 2, 5);   // another launch reading the streak's buffer (2 was its last writes)
  read(0, 0, kItems);
  scale(2, 2, 5, 12);
  {
    std::vector<std::uint32_t> values(6, 77u);
    rt.write_blocking(grids[2], 4 * 2045, std::as_bytes(std::span(values)));
    std::fill(flat[2].begin() + 2045, flat[2].begin() + 2051, 77u);
  }
  scale(2, 2, 5, 12);
  rt.finish();  // finish right after a streak
  scale(2, 2, 5, 8);
  seen.counters.push_back(rt.core().lean_launches());  // a query right after a streak
  scale(2, 2, 5, 8);
  g.scale_into_a_spare();
  scale(0, 1, 1, 10);
  for (std::size_t b = 0; b < 3; ++b) read(b, 0, kItems);
  rt.finish();
  seen.stats = rt.stats().to_json();
  seen.directories = g.directories();
  for (const BufferId id : grids) {
    for (const AgentMask writers : {AgentMask::of(1), AgentMask::of(1).with(2)}) {
      seen.history_counts.push_back(rt.core().history_repeat_count(id, "scale", writers));
    }
  }
  const RuntimeCore::KernelWaits waits = rt.core().kernel_waits();
  for (const std::uint64_t v :
       {lean, rt.core().lean_launches(), rt.core().repeated_launches(),
        rt.core().repeats_leaving_directory(), rt.core().cycle_repeats(),
        rt.core().deferred_record_launches(), rt.core().directory_version(), waits.kernels}) {
    seen.counters.push_back(v);
  }
  seen.device_lists = rt.core().device_lists();
  return seen;
}

class EventlessStreakTest
    : public ::testing::TestWithParam<std::tuple<UpdateStrategy, std::size_t>> {};

TEST_P(EventlessStreakTest, RunsWithoutEventsLeaveWhatRunsWithEventsLeave) {
  const auto [strategy, devices] = GetParam();
  if (opencl::make_opencl_devices("").size() < devices) {
    GTEST_SKIP() << "needs " << devices << " OpenCL devices";
  }
  std::vector<std::vector<std::uint32_t>> oracle;
  const StreakObserved eventless = run_streaks(devices, strategy, true, &oracle);
  const StreakObserved with_events = run_streaks(devices, strategy, false, nullptr);
  ASSERT_EQ(eventless.reads.size(), oracle.size());
  for (std::size_t i = 0; i < oracle.size(); ++i) {
    EXPECT_EQ(eventless.reads[i], oracle[i]) << "host read " << i << " (eventless)";
    EXPECT_EQ(with_events.reads[i], oracle[i]) << "host read " << i << " (with events)";
  }
  EXPECT_EQ(eventless.stats, with_events.stats);
  EXPECT_EQ(eventless.directories, with_events.directories);
  EXPECT_EQ(eventless.history_counts, with_events.history_counts);
  EXPECT_EQ(eventless.counters, with_events.counters);
  EXPECT_EQ(eventless.device_lists, with_events.device_lists);
  ASSERT_GE(eventless.counters.size(), 2u);
  EXPECT_GT(eventless.counters[1], 60u) << "the runs did not take the lean repeat";
}

INSTANTIATE_TEST_SUITE_P(StrategiesAndDevices, EventlessStreakTest,
                         ::testing::Combine(::testing::Values(UpdateStrategy::lazy,
                                                              UpdateStrategy::adaptive),
                                            ::testing::Values(std::size_t{1}, std::size_t{2})));

}  // namespace
}  // namespace unimem
