// unimem_manual_workload WORKLOAD [DEVICES] [small|medium|SIZE] [STEPS] [REPEATS]
// Runs the hand-written multi-device OpenCL version of one workload (or "all") and prints one JSON
// object per run: verified against the CPU reference, bytes moved by direction, bytes_min,
// bytes_whole_buffer and seconds (best of REPEATS after one warm-up run that compiles the kernels).
// Asks POCL for DEVICES pthread devices unless POCL_DEVICES is set.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"

using namespace unimem::examples;

namespace {

void run(const Workload& workload, const ClPlatformDevices& platform, unsigned devices,
         const std::string& size, const char* steps, int repeats) {
  Problem problem = size == "small" ? workload.small_problem() : workload.medium_problem();
  if (size != "small" && size != "medium") problem.size = std::stoull(size);
  if (steps != nullptr) problem.steps = static_cast<std::uint32_t>(std::stoul(steps));
  const Arrays inputs = workload.make_inputs(problem, 1);
  const std::vector<cl_device_id> ids(platform.devices.begin(), platform.devices.begin() + devices);
  ManualResult result = workload.run_manual(platform, ids, problem, inputs);  // warm-up
  double best = result.seconds;
  for (int r = 1; r < repeats; ++r) {
    result = workload.run_manual(platform, ids, problem, inputs);
    best = std::min(best, result.seconds);
  }
  const Comparison comparison =
      compare(result.outputs, workload.reference(problem, inputs), workload.tolerance());
  const TransferBytes min = workload.bytes_min(problem, devices);
  const TransferBytes whole = workload.bytes_whole_buffer(problem, devices);
  std::printf(
      "{\"workload\": \"%s\", \"devices\": %u, \"size\": %llu, \"steps\": %u, \"verified\": %s, "
      "\"max_abs_error\": %g, \"bytes_h2d\": %llu, \"bytes_d2h\": %llu, \"bytes_d2d\": %llu, "
      "\"bytes\": %llu, \"bytes_min\": %llu, \"bytes_whole_buffer\": %llu, "
      "\"manual_seconds\": %.4f}\n",
      workload.name().c_str(), devices, static_cast<unsigned long long>(problem.size),
      problem.steps, comparison.ok ? "true" : "false", comparison.max_abs_error,
      static_cast<unsigned long long>(result.moved.h2d),
      static_cast<unsigned long long>(result.moved.d2h),
      static_cast<unsigned long long>(result.moved.d2d),
      static_cast<unsigned long long>(result.moved.total(true)),
      static_cast<unsigned long long>(min.total(true)),
      static_cast<unsigned long long>(whole.total(true)), best);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WORKLOAD|all [DEVICES] [small|medium|SIZE] [STEPS] [REPEATS]\n",
                 argv[0]);
    return 2;
  }
  try {
    const std::string name = argv[1];
    const unsigned devices = argc > 2 ? static_cast<unsigned>(std::stoul(argv[2])) : 2;
    const std::string size = argc > 3 ? argv[3] : "medium";
    const char* steps = argc > 4 && argv[4][0] != '\0' ? argv[4] : nullptr;
    const int repeats = argc > 5 ? std::stoi(argv[5]) : 3;
    request_pocl_devices(devices);
    const ClPlatformDevices platform = discover_opencl_devices();
    if (platform.devices.size() < devices) {
      std::fprintf(stderr, "platform %s has only %zu devices\n", platform.platform_name.c_str(),
                   platform.devices.size());
      return 1;
    }
    if (name == "all") {
      for (const auto& w : all_workloads()) run(*w, platform, devices, size, steps, repeats);
    } else {
      run(*find_workload(name), platform, devices, size, steps, repeats);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
