// Scalar twins (RuntimeOptions::scalar_twins, ProgramCore::launch): a Program launch that differs
// from a recent one only in scalar arguments the kernel analysis finds in no access (fdtd2d's
// time-step value) runs as that launch's repeat with its own values, so a cycle whose launches
// take a new step value every round still repeats and, on several devices, replays periodically
// (RuntimeCore, "Periodic cycles"). Every scenario runs with twins on and off (and with the fast
// path off), on 2 and 3 POCL devices, under every strategy, with and without a device-memory cap,
// and must give the bytes of a flat-memory oracle, the same transfers and the same adaptive
// history counts. A scalar that moves an access (a subscript, a guard) never makes a twin. A
// randomized mix prints its seed (UNIMEM_TEST_SEED reproduces it).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "api/kernel_analysis.hpp"
#include "api/program_core.hpp"
#include "api/runtime_core.hpp"
#include "device/opencl/opencl_context.hpp"
#include "history_counts.hpp"

namespace unimem {
namespace {

// A 1-D fdtd-like step of three kernels (a, c, b as fdtd2d's ey, ex, hz): a_step takes the step
// value t (a float, used only as a value) and reads b's row below; c_step reads only its own
// items and takes a changing k (a uint used only as a value); b_step reads a's item above. window
// reads `in` k items further on and guarded writes only below lim: both scalars move accesses.
constexpr const char* kSource = R"CLC(
kernel void a_step(global uint* a, global const uint* b, int n, float t) {
  const int i = get_global_id(0);
  if (i == 0) {
    a[i] = (uint)t;
  } else {
    a[i] = a[i] + 3u * b[i] - b[i - 1];
  }
}
kernel void c_step(global uint* c, global const uint* b, uint k) {
  const int i = get_global_id(0);
  c[i] = c[i] * 5u + b[i] + k;
}
kernel void b_step(global uint* b, global const uint* a, global const uint* c, int n) {
  const int i = get_global_id(0);
  if (i < n - 1) b[i] = b[i] + a[i + 1] - 2u * a[i] + c[i];
}
kernel void window(global uint* out, global const uint* in, int k) {
  const int i = get_global_id(0);
  out[i] = in[i + k] + 1u;
}
kernel void guarded(global uint* out, global const uint* in, int lim) {
  const int i = get_global_id(0);
  if (i < lim) out[i] = in[i] ^ 0x55u;
}
)CLC";

constexpr std::uint32_t kItems = 4096;
constexpr std::uint32_t kLocal = 64;
constexpr std::uint64_t kBytes = kItems * sizeof(std::uint32_t);

using Grid = std::vector<std::uint32_t>;

// The oracle's kernels (one flat memory, launches one after another).
void a_step(Grid& a, const Grid& b, std::uint32_t t) {
  for (std::uint32_t i = 0; i < kItems; ++i) a[i] = i == 0 ? t : a[i] + 3u * b[i] - b[i - 1];
}
void c_step(Grid& c, const Grid& b, std::uint32_t k) {
  for (std::uint32_t i = 0; i < kItems; ++i) c[i] = c[i] * 5u + b[i] + k;
}
void b_step(Grid& b, const Grid& a, const Grid& c) {
  for (std::uint32_t i = 0; i + 1 < kItems; ++i) b[i] = b[i] + a[i + 1] - 2u * a[i] + c[i];
}
void window(Grid& out, const Grid& in, std::uint32_t k) {
  for (std::uint32_t i = 0; i < kItems - kLocal; ++i) out[i] = in[i + k] + 1u;
}
void guarded(Grid& out, const Grid& in, std::uint32_t lim) {
  for (std::uint32_t i = 0; i < std::min(lim, kItems); ++i) out[i] = in[i] ^ 0x55u;
}

// One step of a script: a round of the fdtd-like cycle, or something between rounds.
struct Action {
  enum class Kind : std::uint8_t {
    round,       // a_step(t), c_step(k), b_step: t and k are the step's values
    window,      // grid d = window(grid e, k)
    guarded,     // grid d = guarded(grid e, lim)
    host_read,   // grid g, items [at, at + count)
    host_write,  // grid g, items [at, at + count)
  };
  Kind kind = Kind::round;
  std::uint32_t value = 0;  // t (k = 7 t + 1), window's k, guarded's lim
  std::size_t grid = 0;
  std::size_t other = 0;
  std::uint32_t at = 0;
  std::uint32_t count = 0;
};

struct TwinSetup {
  UpdateStrategy strategy = UpdateStrategy::lazy;
  std::size_t devices = 2;
  std::uint64_t device_memory = 0;  // RuntimeOptions::device_memory (0: no cap)
};

enum class Path : std::uint8_t { twins, no_twins, no_fast_path };

struct Observed {
  std::vector<Grid> reads;  // every host read, then every grid at the end
  std::string stats;
  std::vector<int> history_counts;
  std::uint64_t twins = 0;  // ProgramCore::twin_launches
  std::uint64_t repeats = 0;
  std::uint64_t periodic_replays = 0;
};

constexpr std::size_t kGrids = 4;  // a, b, c and a spare (window / guarded / evictions)

Observed run(const std::vector<Action>& script, const TwinSetup& setup, Path path,
             std::vector<Grid>* oracle) {
  RuntimeOptions options{setup.strategy};
  options.repeat_fast_path = path != Path::no_fast_path;
  options.scalar_twins = path == Path::twins;
  options.min_split_bytes = 0;  // split even these small grids
  options.device_memory = setup.device_memory;
  Runtime rt(opencl::make_opencl_devices("0-" + std::to_string(setup.devices - 1)), options);
  Program program(rt, kSource);
  program.set_log([](const std::string&) {});
  std::vector<BufferId> grids;
  std::vector<Grid> flat(kGrids, Grid(kItems));
  for (std::size_t g = 0; g < kGrids; ++g) {
    for (std::uint32_t i = 0; i < kItems; ++i) {
      flat[g][i] = (i * 2654435761U) ^ static_cast<std::uint32_t>(g * 977);
    }
    grids.push_back(rt.create_buffer(kBytes, "grid" + std::to_string(g)));
    rt.write_blocking(grids[g], 0, std::as_bytes(std::span(flat[g])));
  }
  NDRange range;
  range.global[0] = kItems;
  range.local[0] = kLocal;
  NDRange inner = range;  // window: its reads reach kLocal items beyond
  inner.global[0] = kItems - kLocal;
  const auto n = static_cast<std::int32_t>(kItems);
  Observed seen;
  // Under a cap, every launch waits: eviction prefers idle allocations, so what it evicts then
  // does not depend on timing and every path evicts the same.
  const auto settle = [&] {
    if (setup.device_memory != 0) rt.finish();
  };
  for (const Action& a : script) {
    switch (a.kind) {
      case Action::Kind::round: {
        const std::uint32_t k = 7 * a.value + 1;
        program.launch("a_step", range,
                       {Arg::buffer(grids[0]), Arg::buffer(grids[1]), Arg::scalar(n),
                        Arg::scalar(static_cast<float>(a.value))});
        settle();
        program.launch("c_step", range,
                       {Arg::buffer(grids[2]), Arg::buffer(grids[1]), Arg::scalar(k)});
        settle();
        program.launch(
            "b_step", range,
            {Arg::buffer(grids[1]), Arg::buffer(grids[0]), Arg::buffer(grids[2]), Arg::scalar(n)});
        settle();
        a_step(flat[0], flat[1], a.value);
        c_step(flat[2], flat[1], k);
        b_step(flat[1], flat[0], flat[2]);
        break;
      }
      case Action::Kind::window: {
        program.launch("window", inner,
                       {Arg::buffer(grids[a.grid]), Arg::buffer(grids[a.other]),
                        Arg::scalar(static_cast<std::int32_t>(a.value))});
        settle();
        const Grid in = flat[a.other];
        window(flat[a.grid], in, a.value);
        break;
      }
      case Action::Kind::guarded: {
        program.launch("guarded", range,
                       {Arg::buffer(grids[a.grid]), Arg::buffer(grids[a.other]),
                        Arg::scalar(static_cast<std::int32_t>(a.value))});
        settle();
        const Grid in = flat[a.other];
        guarded(flat[a.grid], in, a.value);
        break;
      }
      case Action::Kind::host_read: {
        Grid out(a.count);
        rt.read_blocking(grids[a.grid], a.at * sizeof(std::uint32_t),
                         std::as_writable_bytes(std::span(out)));
        seen.reads.push_back(out);
        if (oracle != nullptr) {
          oracle->emplace_back(flat[a.grid].begin() + a.at, flat[a.grid].begin() + a.at + a.count);
        }
        break;
      }
      case Action::Kind::host_write: {
        Grid values(a.count);
        for (std::uint32_t i = 0; i < a.count; ++i) values[i] = 13 * i + a.at + a.value;
        rt.write_blocking(grids[a.grid], a.at * sizeof(std::uint32_t),
                          std::as_bytes(std::span(values)));
        std::copy(values.begin(), values.end(), flat[a.grid].begin() + a.at);
        break;
      }
    }
  }
  for (std::size_t g = 0; g < kGrids; ++g) {
    Grid out(kItems);
    rt.read_blocking(grids[g], 0, std::as_writable_bytes(std::span(out)));
    seen.reads.push_back(out);
    if (oracle != nullptr) oracle->push_back(flat[g]);
  }
  rt.finish();
  seen.stats = rt.stats().to_json();
  seen.history_counts = testing::history_counts(
      rt, grids, {"a_step", "c_step", "b_step", "window", "guarded"}, setup.devices);
  seen.twins = program.core().twin_launches();
  seen.repeats = rt.core().repeated_launches();
  seen.periodic_replays = rt.core().periodic_replays();
  return seen;
}

// A cap that holds the round's boxes on every device but not the spare grid's too: the spare's
// launch evicts, and so does the round after it.
std::uint64_t cap_for(std::size_t devices) { return devices == 2 ? 28 * 1024 : 20 * 1024; }

bool have_devices(std::size_t devices) { return opencl::make_opencl_devices("").size() >= devices; }

// Runs the script on every path; each must equal the oracle, and the paths one another.
Observed check_paths(const std::vector<Action>& script, const TwinSetup& setup,
                     const std::string& what) {
  std::vector<Grid> oracle;
  const Observed twins = run(script, setup, Path::twins, &oracle);
  const Observed plain = run(script, setup, Path::no_twins, nullptr);
  const Observed slow = run(script, setup, Path::no_fast_path, nullptr);
  EXPECT_EQ(twins.reads.size(), oracle.size()) << what;
  for (std::size_t i = 0; i < std::min(twins.reads.size(), oracle.size()); ++i) {
    EXPECT_TRUE(twins.reads[i] == oracle[i]) << what << ": read " << i << " with twins";
    EXPECT_TRUE(plain.reads[i] == oracle[i]) << what << ": read " << i << " without twins";
    EXPECT_TRUE(slow.reads[i] == oracle[i]) << what << ": read " << i << " without the fast path";
  }
  EXPECT_EQ(twins.stats, plain.stats) << what;
  EXPECT_EQ(twins.stats, slow.stats) << what;
  EXPECT_EQ(twins.history_counts, plain.history_counts) << what;
  EXPECT_EQ(twins.history_counts, slow.history_counts) << what;
  EXPECT_EQ(plain.twins, 0u) << what;
  EXPECT_EQ(slow.twins, 0u) << what;
  EXPECT_EQ(slow.repeats, 0u) << what;
  return twins;
}

std::vector<Action> rounds(std::uint32_t count, std::uint32_t first_t = 1) {
  std::vector<Action> script;
  for (std::uint32_t r = 0; r < count; ++r) {
    Action a;
    a.value = first_t + r;
    script.push_back(a);
  }
  return script;
}

class ScalarTwinTest
    : public ::testing::TestWithParam<std::tuple<UpdateStrategy, std::size_t, bool>> {};

// fdtd2d's shape: two of the three launches take a new value every round, used in arithmetic
// only. They run as twins; on lazy and adaptive the round replays (no launch of it is the same
// launch as a round before, so without twins none ever does).
TEST_P(ScalarTwinTest, StepScalarsInArithmeticOnlyRunAsTwinsAndMatchTheOracle) {
  const auto [strategy, devices, capped] = GetParam();
  if (!have_devices(devices)) GTEST_SKIP() << "needs " << devices << " OpenCL devices";
  TwinSetup setup{strategy, devices, capped ? cap_for(devices) : 0};
  std::vector<Action> script = rounds(40);
  // Between rounds: a host read of the halo, a host write, and an unrelated launch on the spare
  // (under the cap, it evicts).
  Action read{Action::Kind::host_read, 0, 1, 0, kItems / 2 - 8, 16};
  Action write{Action::Kind::host_write, 5, 0, 0, kItems / 2 - 3, 6};
  Action spare{Action::Kind::guarded, kItems, 3, 2};
  script.insert(script.begin() + 10, read);
  script.insert(script.begin() + 14, write);
  script.insert(script.begin() + 18, spare);
  const Observed twins = check_paths(script, setup, "40 rounds");
  // Every round after the first runs both step launches as twins.
  EXPECT_GE(twins.twins, 2u * 39) << "the step launches did not run as twins";
  if (!capped && (strategy == UpdateStrategy::lazy || strategy == UpdateStrategy::adaptive)) {
    EXPECT_GT(twins.periodic_replays, 30u) << "the rounds did not replay";
  }
}

INSTANTIATE_TEST_SUITE_P(
    StrategiesDevicesCaps, ScalarTwinTest,
    ::testing::Combine(::testing::Values(UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                         UpdateStrategy::batch, UpdateStrategy::balance),
                       ::testing::Values(std::size_t{2}, std::size_t{3}),
                       ::testing::Values(false, true)),
    [](const auto& p) {
      return std::string(to_string(std::get<0>(p.param))) + "_" +
             std::to_string(std::get<1>(p.param)) + "devices" +
             (std::get<2>(p.param) ? "_capped" : "");
    });

// A scalar in a subscript (window's k) or a guard (guarded's lim) changes the bytes the launch
// touches: such launches are never twins, and each is planned with its own value.
TEST(ScalarTwinMovingTest, AScalarThatMovesAccessesNeverMakesATwin) {
  if (!have_devices(2)) GTEST_SKIP() << "needs 2 OpenCL devices";
  for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    std::vector<Action> script;
    for (std::uint32_t r = 0; r < 24; ++r) {
      // window 3 <- 0 over k = 0, 8, 16, ... and back; guarded 3 <- 1 below lim = 300 r + 5.
      script.push_back(Action{Action::Kind::window, (r % 8) * 8, 3, 0});
      script.push_back(Action{Action::Kind::guarded, 300 * r + 5, 3, 1});
      script.push_back(Action{Action::Kind::host_read, 0, 3, 0, 0, kItems});
    }
    const Observed seen = check_paths(script, TwinSetup{strategy, 2, 0}, "moving accesses");
    EXPECT_EQ(seen.twins, 0u) << "a scalar that moves accesses made a twin";
  }
}

// What makes a scalar free: the analysis finds it in no access piece. fdtd2d's fdtd_ey reads
// ny, ey_base and hz_base in its subscripts, and fict only as a value.
TEST(ScalarTwinAnalysisTest, ScalarsInAccessesAreExactlyTheSubscriptsAndGuards) {
  std::string error;
  const auto analysis = detail::ProgramAnalysis::analyze(kSource, "", &error);
  if (!analysis) GTEST_SKIP() << "no kernel analysis: " << error;
  EXPECT_EQ(analysis->scalars_in_accesses("a_step"),
            (std::vector<bool>{false, false, false, false}))
      << "a_step: n is unused by its accesses (the guard is i == 0), t is a value";
  EXPECT_EQ(analysis->scalars_in_accesses("c_step"), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(analysis->scalars_in_accesses("b_step"),
            (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(analysis->scalars_in_accesses("window"), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(analysis->scalars_in_accesses("guarded"), (std::vector<bool>{false, false, true}));
  constexpr const char* kFdtdEy = R"CLC(
kernel void fdtd_ey(global float* ey, global const float* hz, int ny, int ey_base, int hz_base,
                    float fict) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int e = (i - ey_base) * ny + j;
  const int h = (i - hz_base) * ny + j;
  ey[e] = (i == 0) ? fict : ey[e] - 0.5f * (hz[h] - hz[h - ny]);
}
)CLC";
  const auto fdtd = detail::ProgramAnalysis::analyze(kFdtdEy, "", &error);
  ASSERT_TRUE(fdtd) << error;
  EXPECT_EQ(fdtd->scalars_in_accesses("fdtd_ey"),
            (std::vector<bool>{false, false, true, true, true, false}));
}

// A random mix of rounds with random step values, launches whose scalars move their accesses,
// host reads and writes, on a random strategy, device count and cap.
TEST(ScalarTwinRandomTest, RandomRoundsAndMovingLaunchesMatchTheOracleOnEveryPath) {
  if (!have_devices(3)) GTEST_SKIP() << "needs 3 OpenCL devices";
  std::uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("UNIMEM_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("ScalarTwinRandomTest seed %llu (UNIMEM_TEST_SEED=%llu reproduces it)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const auto pick = [&rng](std::uint32_t n) {
    return static_cast<std::uint32_t>(std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng));
  };
  for (int trial = 0; trial < 3; ++trial) {
    const UpdateStrategy strategies[] = {UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                         UpdateStrategy::batch, UpdateStrategy::balance};
    const std::size_t devices = 2 + pick(2);
    TwinSetup setup{strategies[pick(4)], devices, pick(3) == 0 ? cap_for(devices) : 0};
    std::vector<Action> script;
    const std::uint32_t steps = 20 + pick(20);
    for (std::uint32_t s = 0; s < steps; ++s) {
      const std::uint32_t what = pick(10);
      if (what < 6) {
        script.push_back(Action{Action::Kind::round, pick(1000)});  // a random step value
      } else if (what == 6) {
        script.push_back(Action{Action::Kind::window, pick(kLocal), 3, pick(3)});
      } else if (what == 7) {
        script.push_back(Action{Action::Kind::guarded, pick(kItems + 1), 3, pick(3)});
      } else {
        const std::uint32_t at = pick(kItems - 64);
        script.push_back(Action{what == 8 ? Action::Kind::host_read : Action::Kind::host_write,
                                pick(100), pick(4), 0, at, 1 + pick(64)});
      }
    }
    const std::string what = "seed " + std::to_string(seed) + " trial " + std::to_string(trial) +
                             " (" + std::string(to_string(setup.strategy)) + ", " +
                             std::to_string(setup.devices) + " devices, cap " +
                             std::to_string(setup.device_memory) + ")";
    (void)check_paths(script, setup, what);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace unimem
