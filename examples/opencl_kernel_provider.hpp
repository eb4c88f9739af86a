#pragma once

// KernelProvider for the OpenCL driver (src/device/opencl/): builds each workload source once per
// OpenCL context with the source's options and hands out its kernels, so the unimem version runs
// the same .cl kernels as the hand-written version.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "examples/unimem_version.hpp"

namespace unimem::examples {

/// Kernels for the OpenCL devices of a Runtime. Throws PreconditionError when asked for a device
/// that is not an OpenCL device, DeviceError (with the compiler log) when a build fails.
class OpenClKernelProvider final : public KernelProvider {
 public:
  explicit OpenClKernelProvider(const Runtime& runtime) : runtime_(&runtime) {}
  std::shared_ptr<const CompiledKernel> kernel(std::size_t device, const KernelSource& source,
                                               const std::string& name) override;

 private:
  const Runtime* runtime_;
  std::mutex mutex_;
  std::map<std::pair<const void*, std::string>, std::shared_ptr<const void>> programs_;
  std::map<std::pair<const void*, std::string>, std::shared_ptr<const CompiledKernel>> kernels_;
};

}  // namespace unimem::examples
