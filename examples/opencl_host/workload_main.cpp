// unimem_workload_opencl: each workload of examples/ as a plain single-device OpenCL program, the
// way a newcomer writes one: the first platform and device the ICD loader offers, one context,
// one queue, write the inputs, run the kernels, read the outputs (the workload's hand-written
// version on one device: examples/<name>/<name>.cpp, manual_version). It knows nothing about
// unimem; `unimem run -- unimem_workload_opencl NAME` runs it on every device.
//
//   unimem_workload_opencl NAME [SIZE [STEPS]]
//
// Prints one JSON line (workload, platform, device, verified, checksum of the output bytes) and
// exits 0 only when the outputs match the CPU reference.
#include <CL/cl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"

namespace {

std::string platform_info(cl_platform_id p, cl_platform_info param) {
  char text[256] = {};
  clGetPlatformInfo(p, param, sizeof text, text, nullptr);
  return text;
}

std::string device_info(cl_device_id d, cl_device_info param) {
  char text[256] = {};
  clGetDeviceInfo(d, param, sizeof text, text, nullptr);
  return text;
}

// FNV-1a over the bytes of every output array, in name order.
std::uint64_t checksum(const unimem::examples::Arrays& arrays) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& [name, values] : arrays) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
    for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) {
      h = (h ^ bytes[i]) * 1099511628211ULL;
    }
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s WORKLOAD [SIZE [STEPS]]\n", argv[0]);
    return 2;
  }
  try {
    const auto workload = unimem::examples::find_workload(argv[1]);
    unimem::examples::Problem problem = workload->small_problem();
    if (argc >= 3) problem.size = std::strtoull(argv[2], nullptr, 10);
    if (argc >= 4) problem.steps = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));

    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 1, &device, nullptr) != CL_SUCCESS) {
      std::fprintf(stderr, "%s: no OpenCL platform or device\n", argv[0]);
      return 1;
    }
    unimem::examples::ClPlatformDevices devices{
        platform, platform_info(platform, CL_PLATFORM_NAME), {device}};
    const unimem::examples::Arrays inputs = workload->make_inputs(problem, 1);
    const unimem::examples::ManualResult result =
        workload->run_manual(devices, devices.devices, problem, inputs);
    const unimem::examples::Comparison check = workload->verify(problem, inputs, result.outputs);
    std::printf(
        "{\"workload\": \"%s\", \"size\": %llu, \"steps\": %u, \"platform\": \"%s\", "
        "\"device\": \"%s\", \"verified\": %s, \"checksum\": \"%016llx\", \"seconds\": %.6f}\n",
        workload->name().c_str(), static_cast<unsigned long long>(problem.size), problem.steps,
        devices.platform_name.c_str(), device_info(device, CL_DEVICE_NAME).c_str(),
        check.ok ? "true" : "false", static_cast<unsigned long long>(checksum(result.outputs)),
        result.seconds);
    if (!check.ok) std::fprintf(stderr, "%s: %s\n", argv[1], check.first_mismatch.c_str());
    return check.ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
