// `unimem bench WORKLOAD`: the unimem version of a workload (examples/<name>/unimem_program.cpp)
// and its hand-written multi-device OpenCL version side by side in one process, on the same
// devices and inputs; prints one JSON object (and, without --json, a readable summary first).
// --access says where the unimem version's per-partition bytes come from: the workload's
// hand-written access descriptors, or the kernel analysis alone (LaunchOptions::ignore_accesses).
//
// Overhead is measured as Matz et al. do (api/measurement.hpp: alpha, beta, gamma and the
// fractions). Times are medians over --iters repetitions after one untimed warm-up run (POCL
// compiles kernels on first use).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"

#if UNIMEM_HAVE_EXAMPLES
#include <nlohmann/json.hpp>

#include "api/measurement.hpp"
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
  unsigned iters = 3;
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
  std::string device_memory;  // --device-memory: a byte count, "" for none
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

std::string num(double x) {
  std::ostringstream out;
  out << std::setprecision(6) << x;
  return out.str();
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
  std::vector<Mode> runners;
  for (MeasurementMode mode : modes) {
    Mode r;
    // The warm-up runs in normal mode, so the mirrors the timed runs recycle hold real data:
    // beta and gamma kernels then compute on realistic values, not on never-written memory
    // (nbody ran 2-3x slower on it, which made overhead_fraction meaningless).
    r.runtime = std::make_unique<Runtime>(registry(), runtime_options);
    r.program = examples::build_program(*workload, *r.runtime);
    if (launch.ignore_accesses && !r.program->analyzed()) {
      throw PreconditionError("--access analysis: the kernel analysis cannot describe " +
                              workload->name() + "'s kernels: " + r.program->analysis_error());
    }
    (void)examples::run_program_version(*workload, *r.runtime, *r.program, problem, inputs, launch);
    r.runtime->set_measurement(mode);
    runners.push_back(std::move(r));
  }
  const examples::ClPlatformDevices platform = examples::discover_opencl_devices();
  UNIMEM_REQUIRE(platform.devices.size() >= k, "bench: the manual version needs as many devices");
  const std::vector<cl_device_id> manual_devices(platform.devices.begin(),
                                                 platform.devices.begin() + k);
  (void)workload->run_manual(platform, manual_devices, problem, inputs);  // warm-up
  // Each repetition runs every mode and the hand-written version back to back, so load from other
  // processes and drift hit unimem and the hand-written version alike (the ratio is what counts).
  std::vector<double> alpha, beta, gamma, manual;
  examples::ProgramRunResult first;
  std::vector<DeviceMemoryReport> first_memory;  // the device memory of the first timed run
  examples::ManualResult manual_result;
  for (unsigned i = 0; i < o.iters; ++i) {
    for (std::size_t mi = 0; mi < runners.size(); ++mi) {
      if (mi == 0 && i == 0) runners[0].runtime->core().reset_device_memory_peaks();
      examples::ProgramRunResult r = examples::run_program_version(
          *workload, *runners[mi].runtime, *runners[mi].program, problem, inputs, launch);
      (mi == 0 ? alpha : mi == 1 ? beta : gamma).push_back(r.seconds);
      if (mi == 0 && i == 0) {
        first = std::move(r);
        first_memory = runners[0].runtime->core().device_memory();
      }
    }
    examples::ManualResult r = workload->run_manual(platform, manual_devices, problem, inputs);
    manual.push_back(r.seconds);
    if (i == 0) manual_result = std::move(r);
  }
  const examples::Comparison cmp = workload->verify(problem, inputs, first.outputs);
  const examples::Comparison manual_cmp = workload->verify(problem, inputs, manual_result.outputs);

  const TransferBytes moved = TransferBytes::of(first.moved);
  const TransferBytes minimum = workload->bytes_min(problem, k);
  const TransferBytes whole = workload->bytes_whole_buffer(problem, k);
  // The first program built (normal mode) did the analysis; the others reused it.
  const ProgramBuildReport build = runners.front().program->build_report();
  const OverheadTimes times{median(alpha), median(beta), median(gamma)};
  const double a = times.alpha;
  const double m = median(manual);

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
  j["iters"] = o.iters;
  j["seconds"] = a;
  j["manual_seconds"] = m;
  j["build_seconds"] = build.opencl_build_seconds;
  j["analysis_seconds"] = build.analysis_seconds;
  if (o.overhead) {
    j["beta_seconds"] = times.beta;
    j["gamma_seconds"] = times.gamma;
    j["overhead_fraction"] = times.overhead_fraction();
    j["transfer_fraction"] = times.transfer_fraction();
  } else {
    j["overhead_fraction"] = nullptr;
  }
  j["fallbacks"] = first.log.size();
  // Device memory in the first timed run: the cap, per device the most bytes buffers held there
  // and the bytes its partitions touch (the largest over the devices), and what eviction did.
  std::uint64_t peak_held = 0;
  std::uint64_t peak_need = 0;
  nlohmann::ordered_json per_device = nlohmann::ordered_json::array();
  for (const DeviceMemoryReport& d : first_memory) {
    peak_held = std::max(peak_held, d.memory.peak_held_bytes);
    peak_need = std::max(peak_need, d.peak_need_bytes);
    per_device.push_back({{"limit", d.memory.limit},
                          {"peak_device_bytes", d.memory.peak_held_bytes},
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
  j["exact_need_bytes"] = peak_need;
  j["bytes_evicted"] = first.moved.evicted_bytes;
  j["bytes_evicted_written_back"] = first.moved.eviction_writeback_bytes;
  j["bytes_reloaded"] = first.moved.reloaded_bytes;
  j["device_memory_per_device"] = std::move(per_device);

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
              << num(m > 0 ? a / m : 0) << "x)";
    if (o.overhead) {
      std::cout << "; bookkeeping overhead " << num(100 * times.overhead_fraction())
                << "% of the run (alpha " << num(times.alpha) << " s, beta " << num(times.beta)
                << " s, gamma " << num(times.gamma) << " s)";
    }
    std::cout << "\n"
              << "  build:    OpenCL " << num(build.opencl_build_seconds) << " s, kernel analysis "
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
  cmd->add_flag("--json", o->json, "print only the JSON object");
  cmd->add_flag("!--no-overhead", o->overhead, "skip the beta/gamma overhead runs");
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
