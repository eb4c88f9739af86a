// `unimem bench WORKLOAD`: the unimem version of a workload (examples/<name>/unimem_program.cpp)
// and its hand-written multi-device OpenCL version side by side in one process, on the same
// devices and inputs; prints one JSON object (and, without --json, a readable summary first).
// --access says where the unimem version's per-partition bytes come from: the workload's
// hand-written access descriptors, or the kernel analysis alone (LaunchOptions::ignore_accesses).
//
// Overhead is measured as Matz et al. do (api/measurement.hpp: alpha, beta, gamma and the
// fractions). Times are medians over --iters repetitions after one untimed warm-up run (POCL
// compiles kernels on first use), with their spread; both versions reuse their buffers across
// repetitions, and the runs that allocate fresh buffers are timed separately ("allocation").

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_instructions.hpp"
#include "commands.hpp"

#if UNIMEM_HAVE_EXAMPLES
#include <nlohmann/json.hpp>

#include "api/measurement.hpp"
#include "api/program_core.hpp"
#include "api/runtime_core.hpp"
#include "common/check.hpp"
#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_discovery.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/program_version.hpp"
#include "examples/workload.hpp"
#endif

namespace unimem::tools {

#if UNIMEM_HAVE_EXAMPLES
namespace {

using examples::Arrays;
using examples::Problem;
using examples::TransferBytes;
using examples::Workload;

struct BenchOptions {
  std::string workload;
  std::uint64_t size = 0;
  std::uint32_t steps = 0;
  bool small = false;
  unsigned iters = 9;
  unsigned devices = 0;
  std::string strategy = "adaptive";
  std::string balance = "equal";
#if defined(UNIMEM_WITH_ANALYSIS)
  std::string access = "analysis";  // unimem reads the kernels: no descriptors needed
#else
  std::string access = "descriptors";
#endif
  bool json = false;
  bool overhead = true;
  bool allocation = true;     // also time both versions with fresh buffers in every run
  std::string trace;          // --trace: the normal-mode runtime's timeline (Chrome trace JSON)
  std::string device_memory;  // --device-memory: a byte count, "" for none
  bool compare_uncapped = false;
  bool noise_floor = false;      // --noise-floor: a second gamma runtime
  unsigned instructions = 0;     // --instructions N: N repetitions counted under callgrind
  bool callgrind_child = false;  // this process is --instructions' run under callgrind
  std::string profile_mode;      // --profile-mode: only this mode's runtime, for callgrind
};

UpdateStrategy parse_strategy(const std::string& s) {
  for (UpdateStrategy u : {UpdateStrategy::batch, UpdateStrategy::balance, UpdateStrategy::lazy,
                           UpdateStrategy::adaptive}) {
    if (to_string(u) == s) return u;
  }
  throw PreconditionError("unknown strategy '" + s + "' (batch, balance, lazy, adaptive)");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The median and spread of repeated timings: quartiles by linear interpolation.
struct Spread {
  double median = 0, min = 0, q1 = 0, q3 = 0, max = 0;
};

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Spread s;
  if (v.empty()) return s;
  s.median = median(v);
  s.min = v.front();
  s.q1 = quantile(v, 0.25);
  s.q3 = quantile(v, 0.75);
  s.max = v.back();
  return s;
}

nlohmann::ordered_json to_json(const Spread& s) {
  return {{"median", s.median}, {"min", s.min}, {"q1", s.q1}, {"q3", s.q3}, {"max", s.max}};
}

// f(a[i], b[i], ...) per repetition: the modes of one repetition run back to back, so pairing
// them cancels the drift between repetitions (load from other processes, frequency changes).
template <typename F>
std::vector<double> paired(std::size_t n, F&& f) {
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(f(i));
  return out;
}

// CPU time of the calling thread, in seconds. The runtime's bookkeeping (directory, trackers,
// dependency lists, enqueue calls) runs on the submitting thread, while kernels and copies run on
// the drivers' threads; unlike wall time, this thread's CPU time barely moves when other
// processes load the machine.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string num(double x) {
  std::ostringstream out;
  out << std::setprecision(6) << x;
  return out.str();
}

// The first "cpu MHz" of /proc/cpuinfo in Hz, 0 when there is none.
double cpu_hertz() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    try {
      return 1e6 * std::stod(line.substr(colon + 1));
    } catch (const std::exception&) {
      break;
    }
  }
  return 0;
}

// The name a timed run is counted under in --instructions' run under callgrind: runner 0 is
// alpha, 1 beta, 2 gamma, and the --noise-floor runner the second gamma.
std::string callgrind_label(std::size_t runner, std::size_t floor_index) {
  static const char* const names[] = {"alpha", "beta", "gamma"};
  return "unimem-bench " + std::string(runner == floor_index ? "gamma2"
                                       : runner < 3          ? names[runner]
                                                             : "other");
}

// --instructions: the same problem, strategy and devices again under callgrind, `repetitions`
// timed repetitions of alpha, beta, gamma and a second gamma; the submitting thread's
// instructions per run, by mode.
std::map<std::string, std::vector<RunInstructions>> count_instructions(const BenchOptions& o,
                                                                       const Problem& problem,
                                                                       unsigned devices) {
  std::vector<std::string> args{"bench",           o.workload,
                                "--size",          std::to_string(problem.size),
                                "--steps",         std::to_string(problem.steps),
                                "--devices",       std::to_string(devices),
                                "--strategy",      o.strategy,
                                "--balance",       o.balance,
                                "--access",        o.access,
                                "--iters",         std::to_string(o.instructions),
                                "--no-allocation", "--noise-floor",
                                "--json",          "--callgrind-child"};
  if (!o.device_memory.empty()) {
    args.emplace_back("--device-memory");
    args.push_back(o.device_memory);
  }
  auto counts = callgrind_run_counts(args);
  for (const char* mode : {"alpha", "beta", "gamma", "gamma2"}) {
    const auto it = counts.find(std::string("unimem-bench ") + mode);
    if (it == counts.end() || it->second.size() != o.instructions) {
      throw std::runtime_error(std::string("--instructions: the run under callgrind counted ") +
                               std::to_string(it == counts.end() ? 0 : it->second.size()) + " " +
                               mode + " runs, not " + std::to_string(o.instructions));
    }
  }
  return counts;
}

// One timed run of --profile-mode, kept out of line so that a profiler can count it alone
// (valgrind --tool=callgrind --toggle-collect='*profiled_run*').
[[gnu::noinline]] examples::ProgramRunResult profiled_run(const Workload& workload,
                                                          Runtime& runtime, Program& program,
                                                          const Problem& problem,
                                                          const Arrays& inputs,
                                                          const LaunchOptions& launch) {
  return examples::run_program_version(workload, runtime, program, problem, inputs, launch);
}

// --profile-mode: one runtime in one measurement mode, set up as the bench sets up each of its
// runtimes (a warm-up run in the normal mode, then the mode), then --iters runs of it in a row,
// as that runtime runs them in the bench, the last through profiled_run; prints each run's
// submitting-thread CPU and wall time.
// Beta and gamma measured this way one after the other under callgrind give the bookkeeping in
// instructions, which the machine's load does not move.
int profile_mode_runs(const BenchOptions& o, const Workload& workload, DeviceRegistry devices,
                      const Problem& problem, const Arrays& inputs, const LaunchOptions& launch,
                      UpdateStrategy strategy) {
  MeasurementMode mode = MeasurementMode::normal;
  bool known = false;
  for (MeasurementMode m :
       {MeasurementMode::normal, MeasurementMode::no_transfers, MeasurementMode::no_coherence}) {
    if (o.profile_mode == measurement_name(m)) {
      mode = m;
      known = true;
    }
  }
  if (!known) {
    throw PreconditionError("--profile-mode must be alpha, beta or gamma, not '" + o.profile_mode +
                            "'");
  }
  RuntimeOptions options{strategy};
  if (!o.device_memory.empty()) {
    options.device_memory = require_byte_size(o.device_memory, "--device-memory");
  }
  Runtime runtime(std::move(devices), options);
  const std::unique_ptr<Program> program = examples::build_program(workload, runtime);
  (void)examples::run_program_version(workload, runtime, *program, problem, inputs, launch);
  runtime.set_measurement(mode);
  nlohmann::ordered_json cpu = nlohmann::ordered_json::array();
  nlohmann::ordered_json wall = nlohmann::ordered_json::array();
  bool verified = true;
  for (unsigned i = 0; i < o.iters; ++i) {
    const double start = thread_cpu_seconds();
    // Only the last run goes through profiled_run: the ones before it bring the runtime to the
    // state the bench's later repetitions find it in.
    examples::ProgramRunResult r =
        i + 1 == o.iters
            ? profiled_run(workload, runtime, *program, problem, inputs, launch)
            : examples::run_program_version(workload, runtime, *program, problem, inputs, launch);
    cpu.push_back(thread_cpu_seconds() - start);
    wall.push_back(r.seconds);
    if (mode == MeasurementMode::normal)
      verified = verified && workload.verify(problem, inputs, r.outputs).ok;
  }
  nlohmann::ordered_json j;
  j["workload"] = workload.name();
  j["size"] = problem.size;
  j["steps"] = problem.steps;
  j["mode"] = o.profile_mode;
  j["runs"] = o.iters;
  j["submit_cpu_seconds"] = std::move(cpu);
  j["seconds"] = std::move(wall);
  j["repeated_launches"] = runtime.core().repeated_launches();
  j["repeats_leaving_directory"] = runtime.core().repeats_leaving_directory();
  j["deferred_record_launches"] = runtime.core().deferred_record_launches();
  j["periodic_replays"] = runtime.core().periodic_replays();
  j["affine_replays"] = runtime.core().affine_replays();
  j["twin_launches"] = program->core().twin_launches();
  if (mode == MeasurementMode::normal) j["verified"] = verified;
  std::cout << j.dump() << std::endl;
  return verified ? 0 : 1;
}

int run_bench(const BenchOptions& o) {
#if defined(__GLIBC__)
  // Both versions run in this process, so by default the C allocator's heuristics couple them:
  // memory one version keeps (unimem's recycled buffers, RuntimeOptions::recycle_bytes) shifts
  // glibc's trim and mmap thresholds so that the other's allocations come back as fresh pages,
  // and a fresh 16 MiB costs ~9 ms of page faults here. Keep freed memory in the heap instead:
  // every repetition of either version then runs on memory already mapped, as it would when
  // each runs alone.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  const auto workload = examples::find_workload(o.workload);
  Problem problem = o.small ? workload->small_problem() : workload->medium_problem();
  if (o.size != 0) problem.size = o.size;
  if (o.steps != 0) problem.steps = o.steps;
  // POCL reads POCL_DEVICES once: ask for enough CPU devices before the first OpenCL call.
  (void)opencl::request_pocl_devices(std::max(2U, o.devices));
  const UpdateStrategy strategy = parse_strategy(o.strategy);
  if (o.balance != "equal" && o.balance != "measured") {
    throw PreconditionError("--balance must be equal or measured, not '" + o.balance + "'");
  }
  if (o.access != "descriptors" && o.access != "analysis") {
    throw PreconditionError("--access must be descriptors or analysis, not '" + o.access + "'");
  }
#if !defined(UNIMEM_WITH_ANALYSIS)
  if (o.access == "analysis") {
    throw PreconditionError(
        "--access analysis: this unimem is built without the kernel analysis "
        "(UNIMEM_WITH_ANALYSIS=OFF); use --access descriptors");
  }
#endif
  UNIMEM_REQUIRE(o.iters >= 1, "--iters must be at least 1");
  if (o.instructions > 0 && !o.overhead) {
    throw PreconditionError("--instructions counts beta and gamma: drop --no-overhead");
  }
  if (o.instructions > 0 && !o.profile_mode.empty()) {
    throw PreconditionError(
        "--instructions counts the bench's paired runs; --profile-mode runs one mode for a "
        "profiler of your own: use one of them");
  }
  if (o.instructions > 0 && !callgrind_supported()) {
    throw PreconditionError(
        "--instructions: this unimem was built without valgrind's callgrind.h (Debian: "
        "valgrind)");
  }

  DeviceRegistry all = opencl::make_opencl_devices_from_environment();
  if (all.empty()) throw PreconditionError("bench: no OpenCL device found (see `unimem devices`)");
  const unsigned k = o.devices == 0 ? static_cast<unsigned>(all.size()) : o.devices;
  if (k > all.size()) {
    throw PreconditionError("bench: --devices " + std::to_string(k) + " but only " +
                            std::to_string(all.size()) + " OpenCL devices are selected");
  }
  workload->validate(problem, k);
  bool peer = true;
  for (unsigned a = 0; a < k; ++a) {
    for (unsigned b = 0; b < k; ++b) peer = peer && all.at(b).can_copy_from_peer(all.at(a));
  }
  auto registry = [&] {
    DeviceRegistry r;
    for (unsigned d = 0; d < k; ++d) r.add(all.shared(d));
    return r;
  };
  LaunchOptions launch;
  launch.balance = o.balance == "measured" ? Balance::measured : Balance::equal;
  launch.ignore_accesses = o.access == "analysis";

  const Arrays inputs = workload->make_inputs(problem, 1);
  if (!o.profile_mode.empty()) {
    return profile_mode_runs(o, *workload, registry(), problem, inputs, launch, strategy);
  }
  // One runtime and program per measurement mode, each warmed up once (kernel compilation,
  // allocations); the timed runs interleave the modes so drift affects them alike.
  struct Mode {
    std::unique_ptr<Runtime> runtime;
    std::unique_ptr<Program> program;
  };
  std::vector<MeasurementMode> modes{MeasurementMode::normal};
  if (o.overhead) {
    modes.push_back(MeasurementMode::no_transfers);
    modes.push_back(MeasurementMode::no_coherence);
  }
  RuntimeOptions runtime_options{strategy};
  if (!o.device_memory.empty()) {
    runtime_options.device_memory = require_byte_size(o.device_memory, "--device-memory");
  }
  // Timing policy: both versions reuse. unimem recycles its released buffers' device and host
  // memory (RuntimeOptions::recycle_bytes) and keeps its program and kernels; the hand-written
  // version keeps one context, program, kernels and buffers across its runs (ManualSession with
  // reuse). What allocation costs is timed separately (--no-allocation skips it): one more
  // runtime with recycle_bytes = 0 and one more manual session without reuse, each allocating
  // fresh buffers in every run.
  std::vector<Mode> runners;
  const std::size_t fresh_index = modes.size();  // the allocating runtime, after the modes
  if (o.allocation) modes.push_back(MeasurementMode::normal);
  // --compare-uncapped: one more normal-mode runtime without the device memory cap, timed in
  // the same repetitions as the capped one, so machine load hits both alike.
  if (o.compare_uncapped && o.device_memory.empty()) {
    throw PreconditionError("--compare-uncapped needs --device-memory (the capped runs)");
  }
  const std::size_t uncapped_index = o.compare_uncapped ? modes.size() : modes.size() + 1;
  if (o.compare_uncapped) modes.push_back(MeasurementMode::normal);
  // --noise-floor: a second gamma runtime, so the bookkeeping measure is also taken between two
  // configurations that do the same work: what it reports there is its resolution.
  if (o.noise_floor && !o.overhead) {
    throw PreconditionError("--noise-floor measures the overhead measure: drop --no-overhead");
  }
  const std::size_t floor_index = o.noise_floor ? modes.size() : SIZE_MAX;  // none: no runner
  if (o.noise_floor) modes.push_back(MeasurementMode::no_coherence);
  for (std::size_t mi = 0; mi < modes.size(); ++mi) {
    const MeasurementMode mode = modes[mi];
    Mode r;
    RuntimeOptions options = runtime_options;
    if (mi == 0) options.trace = o.trace;  // the timeline of the normal-mode runs
    if (mi == fresh_index && o.allocation) options.recycle_bytes = 0;  // allocates afresh
    if (mi == uncapped_index) options.device_memory = 0;
    // The warm-up runs in normal mode, so the mirrors the timed runs recycle hold real data:
    // beta and gamma kernels then compute on realistic values, not on never-written memory
    // (nbody ran 2-3x slower on it, which made overhead_fraction meaningless).
    r.runtime = std::make_unique<Runtime>(registry(), options);
    r.program = examples::build_program(*workload, *r.runtime);
    if (launch.ignore_accesses && !r.program->analyzed()) {
      throw PreconditionError("--access analysis: the kernel analysis cannot describe " +
                              workload->name() + "'s kernels: " + r.program->analysis_error());
    }
    (void)examples::run_program_version(*workload, *r.runtime, *r.program, problem, inputs, launch);
    r.runtime->set_measurement(mode);
    runners.push_back(std::move(r));
  }
  // The run under callgrind (--instructions) counts unimem's runs only.
  const bool manual_runs = !o.callgrind_child;
  const examples::ClPlatformDevices platform = examples::discover_opencl_devices();
  UNIMEM_REQUIRE(platform.devices.size() >= k, "bench: the manual version needs as many devices");
  const std::vector<cl_device_id> manual_devices(platform.devices.begin(),
                                                 platform.devices.begin() + k);
  examples::ManualSession manual_session;
  if (manual_runs) {
    manual_session = workload->manual_session(platform, manual_devices);
    (void)workload->run_manual(manual_session, problem, inputs);  // warm-up: compiles, allocates
  }
  examples::ManualSession fresh_session;
  if (o.allocation && manual_runs) {
    fresh_session = workload->manual_session(platform, manual_devices);
    fresh_session.context->set_reuse(false);
    (void)workload->run_manual(fresh_session, problem, inputs);  // warm-up: compiles
  }
  // Each repetition runs every mode and the hand-written version back to back, so load from other
  // processes and drift hit unimem and the hand-written version alike (the ratio is what counts).
  std::vector<double> alpha, beta, gamma, manual, alpha_fresh, manual_fresh, uncapped;
  examples::ProgramRunResult first_uncapped;
  std::vector<double> manual_create_buffer;
  std::vector<double> alpha_cpu, beta_cpu, gamma_cpu;  // the submitting thread's CPU seconds
  std::vector<double> floor_cpu;                       // --noise-floor: the second gamma's
  RuntimeCore::KernelWaits mode_waits[3];              // alpha, beta, gamma over the timed runs
  std::uint64_t manual_fresh_buffers = 0;
  examples::ProgramRunResult first;
  std::vector<DeviceMemoryReport> first_memory;  // the device memory of the first timed run
  std::uint64_t first_chunks = 0;                // out-of-core chunks of the first timed run
  examples::ManualResult manual_result;
  // The order of the runs in a repetition. beta, gamma (and the second gamma) run in reverse
  // order every other repetition: a run that gains or loses from the run before it (caches, the
  // heap's state, POCL's workers waking) does so on both sides of each difference alike.
  std::vector<std::size_t> order(runners.size());
  for (unsigned i = 0; i < o.iters; ++i) {
    // alpha, then beta, gamma (and the second gamma) in this or the reverse order, then the rest.
    std::size_t next = 0;
    order[next++] = 0;
    std::vector<std::size_t> block;
    if (o.overhead) block = {1, 2};
    if (o.noise_floor) block.push_back(floor_index);
    if (i % 2 == 1) std::reverse(block.begin(), block.end());
    for (const std::size_t mi : block) order[next++] = mi;
    for (std::size_t mi = 1; mi < runners.size(); ++mi) {
      if (std::find(block.begin(), block.end(), mi) == block.end()) order[next++] = mi;
    }
    for (const std::size_t mi : order) {
      if (mi == 0 && i == 0) {
        runners[0].runtime->core().reset_device_memory_peaks();
        first_chunks = runners[0].program->core().chunks_run();
      }
      const RuntimeCore::KernelWaits waits_before = runners[mi].runtime->core().kernel_waits();
      if (o.callgrind_child) callgrind_begin_run();
      const double cpu_start = thread_cpu_seconds();
      examples::ProgramRunResult r = examples::run_program_version(
          *workload, *runners[mi].runtime, *runners[mi].program, problem, inputs, launch);
      const double cpu = thread_cpu_seconds() - cpu_start;
      if (o.callgrind_child) callgrind_end_run(callgrind_label(mi, floor_index));
      if (o.overhead && mi < 3) {  // alpha, beta, gamma
        const RuntimeCore::KernelWaits after = runners[mi].runtime->core().kernel_waits();
        mode_waits[mi].kernels += after.kernels - waits_before.kernels;
        mode_waits[mi].events += after.events - waits_before.events;
      }
      if (mi == uncapped_index) {
        uncapped.push_back(r.seconds);
        if (i == 0) first_uncapped = std::move(r);
      } else if (mi == floor_index) {
        floor_cpu.push_back(cpu);
      } else if (mi == fresh_index && o.allocation) {
        alpha_fresh.push_back(r.seconds);
      } else {
        (mi == 0 ? alpha : mi == 1 ? beta : gamma).push_back(r.seconds);
        (mi == 0 ? alpha_cpu : mi == 1 ? beta_cpu : gamma_cpu).push_back(cpu);
      }
      if (mi == 0 && i == 0) {
        first = std::move(r);
        first_memory = runners[0].runtime->core().device_memory();
        first_chunks = runners[0].program->core().chunks_run() - first_chunks;
      }
    }
    if (!manual_runs) continue;
    examples::ManualResult r = workload->run_manual(manual_session, problem, inputs);
    manual.push_back(r.seconds);
    if (i == 0) manual_result = std::move(r);
    if (o.allocation) {
      const examples::ManualResult f = workload->run_manual(fresh_session, problem, inputs);
      manual_fresh.push_back(f.seconds);
      manual_create_buffer.push_back(f.create_buffer_seconds);
      manual_fresh_buffers = f.fresh_allocations;
    }
  }
  // The devices unimem's last launch in the normal mode ran on (a chunked plan has several
  // partitions per device).
  std::size_t unimem_devices = 0;
  {
    std::vector<std::size_t> used;
    for (const LaunchPartition& p : runners.front().program->core().last_plan().partitions) {
      if (std::find(used.begin(), used.end(), p.device) == used.end()) used.push_back(p.device);
    }
    unimem_devices = used.size();
  }
  const examples::Comparison cmp = workload->verify(problem, inputs, first.outputs);
  if (o.callgrind_child) return cmp.ok ? 0 : 1;  // the parent reads the counts callgrind wrote
  const examples::Comparison manual_cmp = workload->verify(problem, inputs, manual_result.outputs);

  const TransferBytes moved = TransferBytes::of(first.moved);
  const TransferBytes minimum = workload->bytes_min(problem, k);
  const TransferBytes whole = workload->bytes_whole_buffer(problem, k);
  // The first program built (normal mode) did the analysis; the others reused it.
  const ProgramBuildReport build = runners.front().program->build_report();
  const OverheadTimes times{median(alpha), median(beta), median(gamma)};
  const double a = times.alpha;
  const double m = median(manual);
  const std::size_t n = alpha.size();
  // The overhead fractions per repetition (beta, gamma and alpha of one repetition), then their
  // median and spread: less sensitive to drift than the fraction of the three medians.
  const Spread overhead = spread(
      paired(o.overhead ? n : 0, [&](std::size_t i) { return (beta[i] - gamma[i]) / alpha[i]; }));
  const Spread transfer = spread(
      paired(o.overhead ? n : 0, [&](std::size_t i) { return (alpha[i] - beta[i]) / alpha[i]; }));
  // The same on the submitting thread's CPU time: bookkeeping = beta's CPU time minus gamma's,
  // as a share of alpha's wall time (robust where wall times are noisy: a loaded machine).
  const Spread bookkeeping_cpu = spread(paired(
      o.overhead ? n : 0, [&](std::size_t i) { return (beta_cpu[i] - gamma_cpu[i]) / alpha[i]; }));
  // --noise-floor: the same between the two gamma runtimes, which do the same work.
  const Spread noise_floor = spread(paired(o.noise_floor ? n : 0, [&](std::size_t i) {
    return (floor_cpu[i] - gamma_cpu[i]) / alpha[i];
  }));
  // --instructions: the bookkeeping in instructions of the submitting thread (beta - gamma per
  // repetition, and the second gamma - gamma as its resolution), in all and outside the OpenCL
  // driver (whose share moves with timing), turned into time at gamma's native CPU seconds per
  // instruction and at one instruction per cycle, and into shares of alpha's native wall time.
  nlohmann::ordered_json instructions = nullptr;
  if (o.instructions > 0) {
    const auto counts = count_instructions(o, problem, k);
    // Per repetition of a mode: all instructions, those outside the driver, or those outside the
    // driver and the allocator (whose cost per call moves with the heap's state: RunInstructions),
    // or the allocator's calls from outside the driver.
    // Or the driver's calls from outside it.
    enum Part { kAll, kOutsideDriver, kOutsideDriverAndAllocator, kAllocatorCalls, kDriverCalls };
    const auto of = [&](const char* mode, int part) {
      std::vector<double> v;
      for (const RunInstructions& r : counts.at(std::string("unimem-bench ") + mode)) {
        const std::uint64_t left = part == kAll             ? r.total
                                   : part == kOutsideDriver ? r.total - r.driver
                                   : part == kOutsideDriverAndAllocator
                                       ? r.total - r.driver - r.allocator
                                   : part == kDriverCalls ? r.driver_calls
                                                          : r.allocator_calls;
        v.push_back(static_cast<double>(left));
      }
      return v;
    };
    const auto minus = [&](const char* x, const char* y, int part) {
      const std::vector<double> a_runs = of(x, part), b_runs = of(y, part);
      return spread(paired(o.instructions, [&](std::size_t i) { return a_runs[i] - b_runs[i]; }));
    };
    const double gamma_instructions = median(of("gamma", kAll));
    const double per_instruction =
        gamma_instructions > 0 ? median(gamma_cpu) / gamma_instructions : 0;
    const double hz = cpu_hertz();
    const double kernels_per_run = static_cast<double>(mode_waits[1].kernels) /
                                   static_cast<double>(std::max<std::size_t>(1, n));
    // The bookkeeping and its resolution, in all or in a part.
    const auto measure = [&](int part) {
      const Spread book = minus("beta", "gamma", part);
      const Spread resolution = minus("gamma2", "gamma", part);
      nlohmann::ordered_json r = {
          {"bookkeeping_per_run", book.median},
          {"bookkeeping_per_run_spread", to_json(book)},
          {"noise_floor_per_run", resolution.median},
          {"noise_floor_per_run_spread", to_json(resolution)},
          {"bookkeeping_per_kernel", kernels_per_run > 0 ? book.median / kernels_per_run : 0},
          {"bookkeeping_fraction", a > 0 ? book.median * per_instruction / a : 0},
          {"noise_floor_fraction", a > 0 ? resolution.median * per_instruction / a : 0}};
      r["bookkeeping_fraction_at_one_per_cycle"] =
          hz > 0 && a > 0 ? nlohmann::ordered_json(book.median / hz / a) : nullptr;
      r["noise_floor_fraction_at_one_per_cycle"] =
          hz > 0 && a > 0 ? nlohmann::ordered_json(resolution.median / hz / a) : nullptr;
      return r;
    };
    const auto samples = [&](int part) {
      nlohmann::ordered_json runs;
      for (const char* mode : {"alpha", "beta", "gamma", "gamma2"}) {
        runs[mode] = nlohmann::ordered_json::array();
        for (const double count : of(mode, part)) {
          runs[mode].push_back(static_cast<std::uint64_t>(count));
        }
      }
      return runs;
    };
    instructions = {
        {"method",
         "callgrind: instructions of the submitting thread in each timed run, counted in a "
         "second process under valgrind (same problem, devices and strategy); bookkeeping = beta "
         "- gamma per repetition, noise floor = a second gamma - gamma, in all, outside the "
         "OpenCL driver (calls into libOpenCL and below) and outside the driver and the C "
         "allocator (calls into malloc, free and their kin, counted as allocator_calls; calls "
         "into the driver are counted as driver_calls); "
         "fractions convert them to time at "
         "gamma's native CPU seconds per instruction, and at one instruction per cycle of "
         "/proc/cpuinfo's clock, over alpha's native wall time"},
        {"repetitions", o.instructions},
        {"kernels_per_run", kernels_per_run},
        {"seconds_per_instruction", per_instruction},
        {"cpu_hertz", hz > 0 ? nlohmann::ordered_json(hz) : nullptr},
        {"samples", samples(kAll)},
        {"samples_outside_driver", samples(kOutsideDriver)},
        {"samples_outside_driver_and_allocator", samples(kOutsideDriverAndAllocator)}};
    // The whole count first (its fields at the top level), then the parts.
    const nlohmann::ordered_json overall = measure(kAll);
    for (auto it = overall.begin(); it != overall.end(); ++it) instructions[it.key()] = it.value();
    instructions["outside_driver"] = measure(kOutsideDriver);
    instructions["outside_driver_and_allocator"] = measure(kOutsideDriverAndAllocator);
    // Calls from outside the driver into the allocator, and into the driver
    // (RunInstructions::driver_calls): gamma's per run, beta - gamma and gamma2 - gamma.
    const auto calls = [&](int part) {
      return nlohmann::ordered_json{
          {"gamma_per_run", median(of("gamma", part))},
          {"bookkeeping_per_run", to_json(minus("beta", "gamma", part))},
          {"noise_floor_per_run", to_json(minus("gamma2", "gamma", part))}};
    };
    instructions["allocator_calls"] = calls(kAllocatorCalls);
    instructions["driver_calls"] = calls(kDriverCalls);
  }
  std::size_t beta_above_alpha = 0;
  for (std::size_t i = 0; o.overhead && i < n; ++i) beta_above_alpha += beta[i] > alpha[i] ? 1 : 0;

  nlohmann::ordered_json j;
  j["workload"] = workload->name();
  j["size"] = problem.size;
  j["steps"] = problem.steps;
  j["devices"] = k;
  j["peer_to_peer"] = peer;
  j["strategy"] = o.strategy;
  j["balance"] = o.balance;
  j["access"] = o.access;
  j["verified"] = cmp.ok;
  j["manual_verified"] = manual_cmp.ok;
  j["bytes_h2d"] = moved.h2d;
  j["bytes_d2h"] = moved.d2h;
  j["bytes_d2d"] = moved.d2d;
  j["bytes_total"] = moved.total(peer);
  j["bytes_min"] = minimum.total(peer);
  j["bytes_min_h2d"] = minimum.h2d;
  j["bytes_min_d2h"] = minimum.d2h;
  j["bytes_min_d2d"] = minimum.d2d;
  j["bytes_whole_buffer"] = whole.total(peer);
  j["manual_bytes"] = manual_result.moved.total(peer);
  j["prefetch_bytes"] = first.moved.prefetch_bytes;
  j["prefetch_unread_bytes"] = first.moved.prefetch_unread_bytes;
  // Launches the normal mode's runtime replayed as a verified periodic cycle, over all its runs
  // (RuntimeCore::periodic_replays), and the launches that skipped the directory as repeats.
  j["periodic_replays"] = runners[0].runtime->core().periodic_replays();
  // Launches of rewriting families replayed on chains (RuntimeCore::affine_replays).
  j["affine_replays"] = runners[0].runtime->core().affine_replays();
  j["repeats_leaving_directory"] = runners[0].runtime->core().repeats_leaving_directory();
  // Launches that ran as the scalar twin of a recent one (RuntimeOptions::scalar_twins).
  j["twin_launches"] = runners[0].program->core().twin_launches();
  j["iters"] = o.iters;
  j["timing"] =
      "both reuse: unimem recycles buffers, the hand-written version keeps its context, program, "
      "kernels and buffers; medians over iters repetitions after one warm-up";
  j["seconds"] = a;
  j["manual_seconds"] = m;
  j["ratio_to_manual"] = m > 0 ? a / m : 0;
  // The hand-written version always splits over all k devices; unimem runs a launch whose
  // buffers are under min_split_bytes whole on one device. Then the two do different work (one
  // kernel per step against k kernels and their halo copies), and the ratio does not compare
  // like with like: `--devices` with unimem's count does.
  j["unimem_launch_devices"] = unimem_devices;
  j["like_for_like"] = unimem_devices == k;
  j["seconds_spread"] = to_json(spread(alpha));
  j["manual_seconds_spread"] = to_json(spread(manual));
  if (o.allocation) {
    // The same runs with fresh buffers every time (unimem: recycle_bytes 0; hand-written: no
    // reuse), and the difference per repetition: what allocating costs each version.
    const double af = median(alpha_fresh);
    const double mf = median(manual_fresh);
    j["allocation"] = {
        {"unimem_fresh_seconds", af},
        {"manual_fresh_seconds", mf},
        {"fresh_ratio_to_manual", mf > 0 ? af / mf : 0},
        {"unimem_allocation_seconds",
         median(paired(n, [&](std::size_t i) { return alpha_fresh[i] - alpha[i]; }))},
        {"manual_allocation_seconds",
         median(paired(n, [&](std::size_t i) { return manual_fresh[i] - manual[i]; }))},
        {"manual_fresh_buffers", manual_fresh_buffers},
        {"manual_create_buffer_seconds", median(manual_create_buffer)}};
  } else {
    j["allocation"] = nullptr;
  }
  j["build_seconds"] = build.opencl_build_seconds;
  j["analysis_seconds"] = build.analysis_seconds;
  if (o.overhead) {
    j["beta_seconds"] = times.beta;
    j["gamma_seconds"] = times.gamma;
    j["beta_seconds_spread"] = to_json(spread(beta));
    j["gamma_seconds_spread"] = to_json(spread(gamma));
    j["overhead_fraction"] = overhead.median;
    j["overhead_fraction_spread"] = to_json(overhead);
    j["overhead_fraction_of_medians"] = times.overhead_fraction();
    j["transfer_fraction"] = transfer.median;
    j["transfer_fraction_spread"] = to_json(transfer);
    j["beta_above_alpha_runs"] = beta_above_alpha;
    j["bookkeeping_cpu_fraction"] = bookkeeping_cpu.median;
    j["bookkeeping_cpu_fraction_spread"] = to_json(bookkeeping_cpu);
    j["submit_cpu_seconds"] = {
        {"alpha", median(alpha_cpu)}, {"beta", median(beta_cpu)}, {"gamma", median(gamma_cpu)}};
    j["run_order"] = "alpha first; beta and gamma swap places every other repetition";
    j["instructions"] = instructions;
    if (o.noise_floor) {
      j["bookkeeping_cpu_noise_floor"] = noise_floor.median;
      j["bookkeeping_cpu_noise_floor_spread"] = to_json(noise_floor);
    } else {
      j["bookkeeping_cpu_noise_floor"] = nullptr;
    }
    const auto per_kernel = [&](std::size_t mode) {
      return mode_waits[mode].kernels == 0 ? 0.0
                                           : static_cast<double>(mode_waits[mode].events) /
                                                 static_cast<double>(mode_waits[mode].kernels);
    };
    j["wait_events_per_kernel"] = {
        {"alpha", per_kernel(0)}, {"beta", per_kernel(1)}, {"gamma", per_kernel(2)}};
  } else {
    j["overhead_fraction"] = nullptr;
  }
  j["fallbacks"] = first.log.size();
  // Device memory in the first timed run: the cap, per device the most bytes buffers held there
  // and the bytes its partitions touch (the largest over the devices), and what eviction did.
  std::uint64_t peak_held = 0;
  std::uint64_t peak_settled = 0;
  std::uint64_t peak_need = 0;
  nlohmann::ordered_json per_device = nlohmann::ordered_json::array();
  for (const DeviceMemoryReport& d : first_memory) {
    peak_held = std::max(peak_held, d.memory.peak_held_bytes);
    peak_settled = std::max(peak_settled, d.memory.peak_settled_bytes);
    peak_need = std::max(peak_need, d.peak_need_bytes);
    per_device.push_back({{"limit", d.memory.limit},
                          {"peak_device_bytes", d.memory.peak_held_bytes},
                          {"peak_settled_device_bytes", d.memory.peak_settled_bytes},
                          {"exact_need_bytes", d.peak_need_bytes},
                          {"evictions", d.memory.evictions},
                          {"evicted_allocation_bytes", d.memory.evicted_bytes}});
  }
  if (o.device_memory.empty()) {
    j["device_memory"] = nullptr;
  } else {
    j["device_memory"] = runtime_options.device_memory;
  }
  j["peak_device_bytes"] = peak_held;
  j["peak_settled_device_bytes"] = peak_settled;
  j["exact_need_bytes"] = peak_need;
  j["bytes_evicted"] = first.moved.evicted_bytes;
  j["bytes_evicted_written_back"] = first.moved.eviction_writeback_bytes;
  j["bytes_reloaded"] = first.moved.reloaded_bytes;
  j["bytes_relocated"] = first.moved.relocated_bytes;
  j["bytes_read_direct"] = first.moved.direct_read_bytes;   // device -> the reader's memory
  j["bytes_read_from_home"] = first.moved.home_read_bytes;  // host memcpy out of the home copy
  j["device_memory_per_device"] = std::move(per_device);
  j["launch_chunks"] = first_chunks;  // out-of-core chunks (README): 0 when every partition fit
  if (o.compare_uncapped) {
    // The capped runs (alpha) against the same program without the cap, timed in the same
    // repetitions: the ratio per repetition, then its median and spread.
    const Spread ratio = spread(
        paired(n, [&](std::size_t i) { return uncapped[i] > 0 ? alpha[i] / uncapped[i] : 0; }));
    const examples::Comparison ucmp = workload->verify(problem, inputs, first_uncapped.outputs);
    j["uncapped"] = {{"seconds", median(uncapped)},
                     {"seconds_spread", to_json(spread(uncapped))},
                     {"verified", ucmp.ok},
                     {"capped_to_uncapped", ratio.median},
                     {"capped_to_uncapped_spread", to_json(ratio)},
                     {"samples", uncapped}};
  } else {
    j["uncapped"] = nullptr;
  }
  {
    nlohmann::ordered_json samples;
    samples["alpha"] = alpha;
    if (o.overhead) {
      samples["beta"] = beta;
      samples["gamma"] = gamma;
    }
    samples["manual"] = manual;
    if (o.allocation) {
      samples["alpha_fresh"] = alpha_fresh;
      samples["manual_fresh"] = manual_fresh;
    }
    j["samples"] = std::move(samples);
  }
  if (!o.trace.empty()) j["trace"] = runners[0].runtime->write_trace();

  if (!o.json) {
    std::cout << workload->name() << " (" << workload->description() << ")\n"
              << "  size " << problem.size << ", steps " << problem.steps << ", " << k
              << " device(s), strategy " << o.strategy << ", bytes from the "
              << (o.access == "analysis" ? "kernel analysis" : "access descriptors") << "\n"
              << "  result:   "
              << (cmp.ok ? "verified against the CPU reference" : "MISMATCH: " + cmp.first_mismatch)
              << "\n"
              << "  bytes:    unimem " << moved.total(peer) << " = " << examples::to_string(moved)
              << "\n"
              << "            minimum " << minimum.total(peer) << " ("
              << (moved.total(peer) == minimum.total(peer)
                      ? std::string("equal")
                      : num(static_cast<double>(moved.total(peer)) /
                            static_cast<double>(std::max<std::uint64_t>(1, minimum.total(peer)))) +
                            "x")
              << "), whole-buffer coherence " << whole.total(peer) << " ("
              << num(static_cast<double>(whole.total(peer)) /
                     static_cast<double>(std::max<std::uint64_t>(1, moved.total(peer))))
              << "x unimem's), hand-written " << manual_result.moved.total(peer) << "\n"
              << "  time:     unimem " << num(a) << " s, hand-written " << num(m) << " s ("
              << num(m > 0 ? a / m : 0) << "x; both reuse buffers, medians of " << o.iters << ")\n";
    if (unimem_devices != k) {
      std::cout << "  placement: unimem ran its launches on " << unimem_devices << " of " << k
                << " devices (min_split_bytes), the hand-written version splits over all " << k
                << ": the ratio compares different work; --devices " << unimem_devices
                << " times both alike\n";
    }
    if (o.compare_uncapped) {
      std::cout << "  uncapped: " << num(median(uncapped))
                << " s without --device-memory; capped / "
                << "uncapped " << num(j["uncapped"]["capped_to_uncapped"].get<double>())
                << "x (median of the ratios of " << n << " alternating runs)\n";
    }
    if (o.allocation) {
      std::cout << "  fresh:    allocating in every run: unimem " << num(median(alpha_fresh))
                << " s, hand-written " << num(median(manual_fresh)) << " s\n";
    }
    if (o.overhead) {
      std::cout << "  overhead: bookkeeping " << num(100 * overhead.median)
                << "% of the run (median"
                << " of " << n << ", quartiles " << num(100 * overhead.q1) << " .. "
                << num(100 * overhead.q3) << "%; alpha " << num(times.alpha) << " s, beta "
                << num(times.beta) << " s, gamma " << num(times.gamma) << " s)\n"
                << "            on the submitting thread's CPU time: "
                << num(100 * bookkeeping_cpu.median) << "% (quartiles "
                << num(100 * bookkeeping_cpu.q1) << " .. " << num(100 * bookkeeping_cpu.q3)
                << "%)\n";
      if (o.noise_floor) {
        std::cout << "            noise floor (gamma against a second gamma, same work): "
                  << num(100 * noise_floor.median) << "% (quartiles " << num(100 * noise_floor.q1)
                  << " .. " << num(100 * noise_floor.q3) << "%)\n";
      }
      if (o.instructions > 0) {
        // One line for all instructions, one for each part.
        const auto line = [&](const nlohmann::ordered_json& f, const char* what) {
          const auto pct = [&](const char* key) {
            return f[key].is_null() ? std::string("-") : num(100 * f[key].get<double>()) + "%";
          };
          std::cout << "            " << what << ": beta - gamma "
                    << num(f["bookkeeping_per_run"].get<double>()) << " per run ("
                    << num(f["bookkeeping_per_kernel"].get<double>()) << " per kernel), "
                    << pct("bookkeeping_fraction") << " at gamma's speed, "
                    << pct("bookkeeping_fraction_at_one_per_cycle")
                    << " at one per cycle; second gamma - gamma "
                    << num(f["noise_floor_per_run"].get<double>()) << " ("
                    << pct("noise_floor_fraction") << ", "
                    << pct("noise_floor_fraction_at_one_per_cycle") << ")\n";
        };
        line(instructions,
             ("instructions (callgrind, " + std::to_string(o.instructions) + " runs)").c_str());
        line(instructions["outside_driver"], "  outside the OpenCL driver");
        line(instructions["outside_driver_and_allocator"], "  outside the driver and allocator");
      }
    }
    if (!o.trace.empty()) {
      std::cout << "  trace:    " << o.trace << " (ui.perfetto.dev, or `unimem trace " << o.trace
                << " -o timeline.png`)\n";
    }
    std::cout << "  build:    OpenCL " << num(build.opencl_build_seconds) << " s, kernel analysis "
              << num(build.analysis_seconds) << " s" << (build.analysis_cached ? " (cached)" : "")
              << "\n";
    for (const std::string& line : first.log) std::cout << "  note: " << line << "\n";
  }
  std::cout << j.dump() << std::endl;
  return cmp.ok ? 0 : 1;
}

}  // namespace
#endif

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Run a workload's unimem version and hand-written version side by side (JSON)");
#if UNIMEM_HAVE_EXAMPLES
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("workload", o->workload,
                  "stencil2d, heat3d, fdtd2d, floyd-warshall, matmul, nbody, blackscholes, "
                  "hotspot")
      ->required();
  cmd->add_option("--size", o->size, "problem size (default: the workload's medium size)")
      ->check(not_negative);
  cmd->add_option("--steps", o->steps, "time steps (iterative workloads)")->check(not_negative);
  cmd->add_flag("--small", o->small, "use the workload's small (test) size");
  cmd->add_option("--iters", o->iters, "timed repetitions (median reported)")
      ->check(not_negative)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--devices", o->devices, "number of OpenCL devices (default: all selected)")
      ->check(not_negative);
  cmd->add_option("--strategy", o->strategy, "batch, balance, lazy or adaptive");
  cmd->add_option("--balance", o->balance, "equal or measured partition sizes");
  cmd->add_option("--access", o->access,
                  "where the unimem version's per-partition bytes come from: analysis (the "
                  "kernel analysis reads the OpenCL C source; the default when unimem is built "
                  "with UNIMEM_WITH_ANALYSIS) or descriptors (the workload's hand-written access "
                  "descriptors; the default otherwise)");
  cmd->add_option("--device-memory", o->device_memory,
                  "cap on the memory unimem uses on each device, in bytes (K, M, G suffixes: "
                  "256M); least recently used allocations are evicted to stay under it")
      ->check(not_negative)
      ->check(byte_size);
  cmd->add_flag("--compare-uncapped", o->compare_uncapped,
                "with --device-memory: also run the workload without the cap in the same process, "
                "alternating with the capped runs, and report the ratio capped / uncapped per "
                "repetition (JSON \"uncapped\")");
  cmd->add_flag("--noise-floor", o->noise_floor,
                "also time a second gamma (no coherence) runtime in every repetition and report "
                "the bookkeeping measure between the two gammas, which do the same work: the "
                "resolution of bookkeeping_cpu_fraction (JSON \"bookkeeping_cpu_noise_floor\")");
  cmd->add_option("--instructions", o->instructions,
                  "also count the submitting thread's instructions in N repetitions of alpha, "
                  "beta, gamma and a second gamma under valgrind's callgrind (a second process; "
                  "slow) and report the bookkeeping as beta - gamma instructions, with the two "
                  "gammas' difference as its resolution (JSON \"instructions\")")
      ->check(not_negative);
  cmd->add_flag("--callgrind-child", o->callgrind_child,
                "internal: this is --instructions' run under callgrind")
      ->group("");
  cmd->add_option(
      "--profile-mode", o->profile_mode,
      "run only one measurement mode (alpha, beta or gamma): one runtime set up as "
      "the bench sets up each, then --iters runs in a row, the last through profiled_run "
      "(for valgrind --tool=callgrind --toggle-collect='*profiled_run*'); prints each "
      "run's submitting-thread CPU and wall time");
  cmd->add_flag("--json", o->json, "print only the JSON object");
  cmd->add_flag("!--no-overhead", o->overhead, "skip the beta/gamma overhead runs");
  cmd->add_flag("!--no-allocation", o->allocation,
                "skip the runs that allocate fresh buffers every time (JSON \"allocation\")");
  cmd->add_option("--trace", o->trace,
                  "write a timeline of the unimem runs (normal mode, warm-up included) to this "
                  "file as Chrome trace JSON; `unimem trace FILE -o timeline.png` draws it");
  cmd->callback([o] {
    const int rc = run_bench(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
#else
  cmd->allow_extras();
  cmd->callback([] {
    std::cerr << "unimem bench: built without the examples (UNIMEM_BUILD_EXAMPLES=OFF or no "
                 "OpenCL)\n";
    throw CLI::RuntimeError(2);
  });
#endif
}

}  // namespace unimem::tools
