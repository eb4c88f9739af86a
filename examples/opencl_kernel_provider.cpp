#include "examples/opencl_kernel_provider.hpp"

#include "common/check.hpp"

#if defined(UNIMEM_HAVE_OPENCL) && UNIMEM_HAVE_OPENCL
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_program.hpp"
#endif

namespace unimem::examples {

std::shared_ptr<const CompiledKernel> OpenClKernelProvider::kernel(std::size_t device,
                                                                   const KernelSource& source,
                                                                   const std::string& name) {
#if defined(UNIMEM_HAVE_OPENCL) && UNIMEM_HAVE_OPENCL
  Device& base = runtime_->device(device);
  auto* cl_device = dynamic_cast<opencl::OpenCLDevice*>(&base);
  if (cl_device == nullptr) {
    throw PreconditionError("OpenClKernelProvider: device " + std::to_string(device) + " (" +
                            base.name() + ") is not an OpenCL device");
  }
  std::lock_guard lock(mutex_);
  const void* context = cl_device->context().get();
  const auto kernel_key = std::pair{context, source.file + ":" + name};
  if (const auto it = kernels_.find(kernel_key); it != kernels_.end()) return it->second;
  const auto program_key = std::pair{context, source.file};
  auto program = programs_.find(program_key);
  if (program == programs_.end()) {
    std::shared_ptr<const void> built =
        cl_device->build_program(std::string(source.text), source.options);
    program = programs_.emplace(program_key, std::move(built)).first;
  }
  const auto* typed = static_cast<const opencl::OpenCLProgram*>(program->second.get());
  std::shared_ptr<const CompiledKernel> k = typed->kernel(name);
  kernels_[kernel_key] = k;
  return k;
#else
  (void)device;
  throw PreconditionError(
      "OpenClKernelProvider: unimem was built without the OpenCL driver; "
      "cannot provide kernel " +
      name + " of " + source.file);
#endif
}

}  // namespace unimem::examples
