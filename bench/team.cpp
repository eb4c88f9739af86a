// The cost of sharing a variable in a team kernel (include/unimem/team.h) through a team-memory
// slot versus through the global spill area, on the machine's first OpenCL device (POCL here).
// Bercea et al. (003_f274930815df8cd3.txt, section 5.2) report the global-memory fallback up to
// an order of magnitude slower on GPUs; this measures the same two paths on the device at hand.
//
// One kernel, built twice: with the default 20 slots all its 20 shared variables sit in __local
// slots; with -DUM_TEAM_SLOTS=0 all 20 spill to global memory. Each round, the master publishes
// every variable (UM_MASTER) and every work-item reads them all (UM_PARALLEL). Counters:
// ns_per_variable = time / (teams * rounds * variables): one publish plus one read per work-item
// of the team, per variable, in wall time; cpu_ns_per_variable the same in the process's CPU time
// (all threads: less disturbed by other processes on a shared machine). BM_TeamSharingBarriersOnly
// (0 variables) is the cost of the blocks themselves (two barriers per round), to subtract.
// BM_TeamReduction*: teams of 20 work-items, each publishing its own variable every round and the
// master adding all 20 (the reduction pattern; ns_per_variable = time / (teams * rounds * 20)).
#include <benchmark/benchmark.h>

#if UNIMEM_HAVE_OPENCL
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "api/device_library.hpp"
#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_program.hpp"

namespace {

using unimem::DeviceAllocation;
using unimem::KernelArg;
using unimem::NDRange;
using unimem::opencl::OpenCLDevice;

std::vector<std::unique_ptr<OpenCLDevice>>& devices() {
  static auto opened = unimem::opencl::open_devices("");
  return opened;
}

constexpr std::uint64_t kTeamSize = 64;
constexpr std::uint64_t kTeams = 64;
constexpr int kRounds = 64;

std::string sharing_source(int variables) {
  const std::string nv = std::to_string(variables);
  return "#include <unimem/team.h>\n"
         "kernel void sharing(global int* out, int rounds, UM_TEAM_PARAM(" +
         nv +
         ")) {\n"
         "  UM_TEAM_BEGIN(team, " +
         nv +
         ");\n"
         "  int acc = 0;\n"
         "  for (int r = 0; r < rounds; ++r) {\n"
         "    UM_MASTER(team)\n"
         "      for (uint v = 0; v < " +
         nv +
         "; ++v) um_share_int(team, v, r + (int)v);\n"
         "    UM_END_MASTER(team);\n"
         "    UM_PARALLEL(team)\n"
         "      for (uint v = 0; v < " +
         nv +
         "; ++v) acc += um_shared_int(team, v);\n"
         "    UM_END_PARALLEL(team);\n"
         "  }\n"
         "  out[get_global_id(0)] = acc;\n"
         "  UM_TEAM_END(team);\n"
         "}\n";
}

// The reduction pattern: every work-item of a team of `variables` publishes its own variable
// (rank r writes variable r), then the master adds them all up.
std::string reducing_source(int variables) {
  const std::string nv = std::to_string(variables);
  return "#include <unimem/team.h>\n"
         "kernel void sharing(global int* out, int rounds, UM_TEAM_PARAM(" +
         nv +
         ")) {\n"
         "  UM_TEAM_BEGIN(team, " +
         nv +
         ");\n"
         "  int acc = 0;\n"
         "  for (int r = 0; r < rounds; ++r) {\n"
         "    UM_PARALLEL(team)\n"
         "      um_share_int(team, um_team_rank(team), r + (int)get_global_id(0));\n"
         "    UM_END_PARALLEL(team);\n"
         "    UM_MASTER(team)\n"
         "      for (uint v = 0; v < " +
         nv +
         "; ++v) acc += um_shared_int(team, v);\n"
         "    UM_END_MASTER(team);\n"
         "  }\n"
         "  out[get_global_id(0)] = acc;\n"
         "  UM_TEAM_END(team);\n"
         "}\n";
}

// Runs `sharing` with `variables` shared variables and `slots` team-memory slots.
void run_sharing(benchmark::State& state, int variables, int slots, bool reduce = false) {
  if (devices().empty()) return state.SkipWithError("no OpenCL device");
  OpenCLDevice& d = *devices()[0];
  const std::string options = "-DUM_TEAM_SLOTS=" + std::to_string(slots) + " " +
                              unimem::detail::device_library_build_options();
  const std::string source = reduce ? reducing_source(variables) : sharing_source(variables);
  auto kernel = d.build_program(source, options)->kernel("sharing");
  const std::uint64_t team_size = reduce ? static_cast<std::uint64_t>(variables) : kTeamSize;
  const std::uint64_t spilled =
      variables > slots ? static_cast<std::uint64_t>(variables - slots) : 0;
  DeviceAllocation out = d.allocate(kTeams * team_size * sizeof(int));
  DeviceAllocation spill = d.allocate(std::max<std::uint64_t>(kTeams * spilled * 8, 8));
  NDRange range;
  range.global[0] = kTeams * team_size;
  range.local[0] = team_size;
  const std::array<KernelArg, 3> args = {KernelArg::of_buffer(out), KernelArg::of_scalar(kRounds),
                                         KernelArg::of_buffer(spill)};
  d.launch(*kernel, range, args, {}).wait();  // the first launch compiles the kernel
  double seconds = 0;
  double cpu_seconds = 0;  // of the whole process: POCL's worker threads run the kernel
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    d.launch(*kernel, range, args, {}).wait();
    cpu_seconds += static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double variables_per_launch =
      static_cast<double>(kTeams) * kRounds * std::max(variables, 1);
  state.counters["ns_per_variable"] =
      seconds * 1e9 / (static_cast<double>(state.iterations()) * variables_per_launch);
  state.counters["cpu_ns_per_variable"] =
      cpu_seconds * 1e9 / (static_cast<double>(state.iterations()) * variables_per_launch);
  state.counters["team_memory_bytes"] = static_cast<double>(slots * 8);
  state.counters["spill_bytes_per_team"] = static_cast<double>(spilled * 8);
  d.free(out);
  d.free(spill);
}

void BM_TeamSharingSlots(benchmark::State& state) {
  run_sharing(state, static_cast<int>(state.range(0)), 20);
}
void BM_TeamSharingSpill(benchmark::State& state) {
  run_sharing(state, static_cast<int>(state.range(0)), 0);
}
void BM_TeamSharingBarriersOnly(benchmark::State& state) { run_sharing(state, 0, 20); }

void BM_TeamReductionSlots(benchmark::State& state) {
  run_sharing(state, static_cast<int>(state.range(0)), 20, true);
}
void BM_TeamReductionSpill(benchmark::State& state) {
  run_sharing(state, static_cast<int>(state.range(0)), 0, true);
}

BENCHMARK(BM_TeamSharingSlots)->Arg(20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TeamSharingSpill)->Arg(20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TeamSharingBarriersOnly)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TeamReductionSlots)->Arg(20)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TeamReductionSpill)->Arg(20)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
#endif

BENCHMARK_MAIN();
