#include "device/opencl/opencl_program.hpp"

#include <vector>

#include "common/check.hpp"
#include "device/opencl/opencl_error.hpp"

namespace unimem::opencl {

namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
      CL_SUCCESS) {
    return "(no build log available)";
  }
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS) {
    return "(no build log available)";
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

cl_build_status build_status(cl_program program, cl_device_id device) {
  cl_build_status status = CL_BUILD_NONE;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof(status), &status, nullptr);
  return status;
}

}  // namespace

OpenCLProgram::OpenCLProgram(std::shared_ptr<const Context> context, std::string source,
                             std::string options)
    : context_(std::move(context)), options_(std::move(options)) {
  UNIMEM_REQUIRE(context_ != nullptr, "an OpenCL program needs a context");
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  program_ = clCreateProgramWithSource(context_->handle(), 1, &text, &length, &status);
  check(status, "clCreateProgramWithSource", [this] { return context_->description(); });

  std::vector<cl_device_id> ids;
  for (const DeviceInfo& d : context_->devices()) ids.push_back(d.device);
  status = clBuildProgram(program_, static_cast<cl_uint>(ids.size()), ids.data(), options_.c_str(),
                          nullptr, nullptr);
  if (status == CL_SUCCESS) return;

  // Report the log of every device the build failed on (all of them, usually).
  std::string where = "program (options \"" + options_ + "\")";
  for (const DeviceInfo& d : context_->devices()) {
    if (build_status(program_, d.device) == CL_BUILD_SUCCESS) continue;
    where += "\non device " + d.unimem_name() + ", build log:\n" + build_log(program_, d.device);
  }
  clReleaseProgram(program_);
  program_ = nullptr;
  throw make_error(status, "clBuildProgram", where);
}

OpenCLProgram::~OpenCLProgram() {
  if (program_) clReleaseProgram(program_);
}

std::shared_ptr<OpenCLKernel> OpenCLProgram::kernel(const std::string& name) const {
  cl_int status = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program_, name.c_str(), &status);
  check(status, "clCreateKernel",
        [&] { return "kernel \"" + name + "\" of a program in the " + context_->description(); });
  return std::make_shared<OpenCLKernel>(context_, kernel, name);
}

OpenCLKernel::OpenCLKernel(std::shared_ptr<const Context> context, cl_kernel kernel,
                           std::string name)
    : context_(std::move(context)), kernel_(kernel), name_(std::move(name)) {
  check(clGetKernelInfo(kernel_, CL_KERNEL_NUM_ARGS, sizeof(argument_count_), &argument_count_,
                        nullptr),
        "clGetKernelInfo", [this] { return "kernel \"" + name_ + "\""; });
}

OpenCLKernel::~OpenCLKernel() { clReleaseKernel(kernel_); }

}  // namespace unimem::opencl
