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

cl_program build_program(cl_context context, std::span<const cl_device_id> devices,
                         std::span<const std::string> device_names, std::string_view source,
                         const std::string& options, std::string_view what) {
  UNIMEM_REQUIRE(devices.size() == device_names.size(), "build_program: one name per device");
  const char* text = source.data();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &status);
  check(status, "clCreateProgramWithSource", what);
  status = clBuildProgram(program, static_cast<cl_uint>(devices.size()), devices.data(),
                          options.c_str(), nullptr, nullptr);
  if (status == CL_SUCCESS) return program;

  // Report the log of every device the build failed on (all of them, usually).
  std::string where = std::string(what) + " (options \"" + options + "\")";
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (build_status(program, devices[d]) == CL_BUILD_SUCCESS) continue;
    where += "\non device " + device_names[d] + ", build log:\n" + build_log(program, devices[d]);
  }
  clReleaseProgram(program);
  throw make_error(status, "clBuildProgram", where);
}

OpenCLProgram::OpenCLProgram(std::shared_ptr<const Context> context, std::string source,
                             std::string options)
    : context_(std::move(context)), options_(std::move(options)) {
  UNIMEM_REQUIRE(context_ != nullptr, "an OpenCL program needs a context");
  std::vector<cl_device_id> ids;
  std::vector<std::string> names;
  for (const DeviceInfo& d : context_->devices()) {
    ids.push_back(d.device);
    names.push_back(d.unimem_name());
  }
  program_ = build_program(context_->handle(), ids, names, source, options_,
                           "program in the " + context_->description());
}

OpenCLProgram::~OpenCLProgram() {
  if (program_) clReleaseProgram(program_);
}

std::shared_ptr<const CompiledKernel> OpenCLProgram::kernel(const std::string& name) const {
  return opencl_kernel(name);
}

std::vector<std::string> OpenCLProgram::kernel_names() const {
  size_t size = 0;
  check(clGetProgramInfo(program_, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size), "clGetProgramInfo",
        [&] { return "kernel names of a program in the " + context_->description(); });
  std::string text(size, '\0');
  check(clGetProgramInfo(program_, CL_PROGRAM_KERNEL_NAMES, size, text.data(), nullptr),
        "clGetProgramInfo",
        [&] { return "kernel names of a program in the " + context_->description(); });
  std::vector<std::string> names;
  std::string current;
  for (char c : text) {  // "a;b;c", NUL-terminated
    if (c == ';' || c == '\0') {
      if (!current.empty()) names.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) names.push_back(current);
  return names;
}

std::shared_ptr<OpenCLKernel> OpenCLProgram::opencl_kernel(const std::string& name) const {
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
  // Names are optional: without -cl-kernel-arg-info the query fails and the list stays empty.
  for (cl_uint i = 0; i < argument_count_; ++i) {
    size_t size = 0;
    if (clGetKernelArgInfo(kernel_, i, CL_KERNEL_ARG_NAME, 0, nullptr, &size) != CL_SUCCESS) {
      argument_names_.clear();
      break;
    }
    std::string arg_name(size, '\0');
    if (clGetKernelArgInfo(kernel_, i, CL_KERNEL_ARG_NAME, size, arg_name.data(), nullptr) !=
        CL_SUCCESS) {
      argument_names_.clear();
      break;
    }
    while (!arg_name.empty() && arg_name.back() == '\0') arg_name.pop_back();
    argument_names_.push_back(std::move(arg_name));
  }
}

OpenCLKernel::~OpenCLKernel() { clReleaseKernel(kernel_); }

}  // namespace unimem::opencl
