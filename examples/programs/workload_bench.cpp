// unimem_workload_bench WORKLOAD|all [DEVICES] [small|medium|SIZE] [STEPS] [REPEATS] [STRATEGY]
// Runs the unimem version (through the OpenCL driver) and the hand-written version of a workload
// side by side and prints one JSON object per workload (examples/side_by_side.hpp): verified
// against the CPU reference, bytes by direction, bytes_min, bytes_whole_buffer, best seconds of
// REPEATS runs after a warm-up. Asks POCL for DEVICES pthread devices unless POCL_DEVICES is set.
// The precursor of `unimem bench` (issue 4), which adds overhead_fraction.

#include <cstdio>
#include <exception>
#include <string>

#include "device/opencl/opencl_context.hpp"
#include "examples/manual_opencl.hpp"
#include "examples/opencl_kernel_provider.hpp"
#include "examples/side_by_side.hpp"
#include "examples/workload.hpp"

using namespace unimem;
using namespace unimem::examples;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s WORKLOAD|all [DEVICES] [small|medium|SIZE] [STEPS] [REPEATS] "
                 "[STRATEGY]\n",
                 argv[0]);
    return 2;
  }
  try {
    const std::string name = argv[1];
    const unsigned devices = argc > 2 ? static_cast<unsigned>(std::stoul(argv[2])) : 2;
    const std::string size = argc > 3 ? argv[3] : "medium";
    const char* steps = argc > 4 && argv[4][0] != '\0' ? argv[4] : nullptr;
    const int repeats = argc > 5 ? std::stoi(argv[5]) : 3;
    const std::string strategy_name = argc > 6 ? argv[6] : "lazy";
    const auto strategy = parse_update_strategy(strategy_name);
    if (!strategy) throw PreconditionError("unknown strategy '" + strategy_name + "'");
    request_pocl_devices(devices);
    const ClPlatformDevices platform = discover_opencl_devices();
    Runtime runtime(opencl::make_opencl_devices(), RuntimeOptions{*strategy});
    OpenClKernelProvider kernels(runtime);
    auto run = [&](const Workload& w) {
      Problem problem = size == "small" ? w.small_problem() : w.medium_problem();
      if (size != "small" && size != "medium") problem.size = std::stoull(size);
      if (steps != nullptr) problem.steps = static_cast<std::uint32_t>(std::stoul(steps));
      const SideBySide r =
          run_side_by_side(w, runtime, kernels, platform, devices, problem, repeats);
      std::printf("%s\n", to_json(r).c_str());
      if (!r.first_mismatch.empty()) std::fprintf(stderr, "%s\n", r.first_mismatch.c_str());
      std::fflush(stdout);
    };
    if (name == "all") {
      for (const auto& w : all_workloads()) run(*w);
    } else {
      run(*find_workload(name));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
