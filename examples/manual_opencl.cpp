#include "examples/manual_opencl.hpp"

#include <cstdlib>

#include <CL/cl_ext.h>

#include "common/check.hpp"

namespace unimem::examples {

std::string_view cl_error_name(cl_int code) {
  switch (code) {
    case CL_SUCCESS:
      return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND:
      return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:
      return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE:
      return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
      return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
      return "CL_OUT_OF_HOST_MEMORY";
    case CL_PROFILING_INFO_NOT_AVAILABLE:
      return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case CL_MEM_COPY_OVERLAP:
      return "CL_MEM_COPY_OVERLAP";
    case CL_BUILD_PROGRAM_FAILURE:
      return "CL_BUILD_PROGRAM_FAILURE";
    case CL_MAP_FAILURE:
      return "CL_MAP_FAILURE";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET:
      return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
      return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case CL_COMPILE_PROGRAM_FAILURE:
      return "CL_COMPILE_PROGRAM_FAILURE";
    case CL_LINK_PROGRAM_FAILURE:
      return "CL_LINK_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE_TYPE:
      return "CL_INVALID_DEVICE_TYPE";
    case CL_INVALID_PLATFORM:
      return "CL_INVALID_PLATFORM";
    case CL_INVALID_DEVICE:
      return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT:
      return "CL_INVALID_CONTEXT";
    case CL_INVALID_QUEUE_PROPERTIES:
      return "CL_INVALID_QUEUE_PROPERTIES";
    case CL_INVALID_COMMAND_QUEUE:
      return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_HOST_PTR:
      return "CL_INVALID_HOST_PTR";
    case CL_INVALID_MEM_OBJECT:
      return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BINARY:
      return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS:
      return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM:
      return "CL_INVALID_PROGRAM";
    case CL_INVALID_PROGRAM_EXECUTABLE:
      return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME:
      return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_DEFINITION:
      return "CL_INVALID_KERNEL_DEFINITION";
    case CL_INVALID_KERNEL:
      return "CL_INVALID_KERNEL";
    case CL_INVALID_ARG_INDEX:
      return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE:
      return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE:
      return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS:
      return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_DIMENSION:
      return "CL_INVALID_WORK_DIMENSION";
    case CL_INVALID_WORK_GROUP_SIZE:
      return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:
      return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_OFFSET:
      return "CL_INVALID_GLOBAL_OFFSET";
    case CL_INVALID_EVENT_WAIT_LIST:
      return "CL_INVALID_EVENT_WAIT_LIST";
    case CL_INVALID_EVENT:
      return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION:
      return "CL_INVALID_OPERATION";
    case CL_INVALID_BUFFER_SIZE:
      return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:
      return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_PROPERTY:
      return "CL_INVALID_PROPERTY";
    case CL_PLATFORM_NOT_FOUND_KHR:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_UNKNOWN_ERROR";
  }
}

OpenClError::OpenClError(cl_int code, std::string_view call, std::string_view where)
    : std::runtime_error(std::string(call) + " failed with " + std::string(cl_error_name(code)) +
                         " (" + std::to_string(code) + ") on " + std::string(where)),
      code_(code) {}

void cl_check(cl_int code, std::string_view call, std::string_view where) {
  if (code != CL_SUCCESS) throw OpenClError(code, call, where);
}

template <>
void ClHandle<cl_context>::retain() const {
  if (object_) clRetainContext(object_);
}
template <>
void ClHandle<cl_context>::release() const {
  if (object_) clReleaseContext(object_);
}
template <>
void ClHandle<cl_command_queue>::retain() const {
  if (object_) clRetainCommandQueue(object_);
}
template <>
void ClHandle<cl_command_queue>::release() const {
  if (object_) clReleaseCommandQueue(object_);
}
template <>
void ClHandle<cl_mem>::retain() const {
  if (object_) clRetainMemObject(object_);
}
template <>
void ClHandle<cl_mem>::release() const {
  if (object_) clReleaseMemObject(object_);
}
template <>
void ClHandle<cl_program>::retain() const {
  if (object_) clRetainProgram(object_);
}
template <>
void ClHandle<cl_program>::release() const {
  if (object_) clReleaseProgram(object_);
}
template <>
void ClHandle<cl_kernel>::retain() const {
  if (object_) clRetainKernel(object_);
}
template <>
void ClHandle<cl_kernel>::release() const {
  if (object_) clReleaseKernel(object_);
}
template <>
void ClHandle<cl_event>::retain() const {
  if (object_) clRetainEvent(object_);
}
template <>
void ClHandle<cl_event>::release() const {
  if (object_) clReleaseEvent(object_);
}

namespace {

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  cl_check(clGetPlatformInfo(platform, what, 0, nullptr, &size), "clGetPlatformInfo", "platform");
  std::string text(size, '\0');
  cl_check(clGetPlatformInfo(platform, what, size, text.data(), nullptr), "clGetPlatformInfo",
           "platform");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  cl_check(clGetDeviceInfo(device, what, 0, nullptr, &size), "clGetDeviceInfo", "device");
  std::string text(size, '\0');
  cl_check(clGetDeviceInfo(device, what, size, text.data(), nullptr), "clGetDeviceInfo", "device");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::vector<cl_event> raw_events(std::span<const ClEvent> events) {
  std::vector<cl_event> raw;
  raw.reserve(events.size());
  for (const ClEvent& e : events) {
    if (e) raw.push_back(e.get());
  }
  return raw;
}

}  // namespace

ClPlatformDevices discover_opencl_devices() {
  cl_uint count = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &count);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || count == 0) {
    throw OpenClError(CL_PLATFORM_NOT_FOUND_KHR, "clGetPlatformIDs", "the ICD loader");
  }
  cl_check(err, "clGetPlatformIDs", "the ICD loader");
  std::vector<cl_platform_id> platforms(count);
  cl_check(clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs",
           "the ICD loader");
  ClPlatformDevices best;
  for (cl_platform_id platform : platforms) {
    cl_uint n = 0;
    err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
    if (err == CL_DEVICE_NOT_FOUND || n == 0) continue;
    cl_check(err, "clGetDeviceIDs", "platform " + platform_string(platform, CL_PLATFORM_NAME));
    if (n <= best.devices.size()) continue;
    best.platform = platform;
    best.platform_name = platform_string(platform, CL_PLATFORM_NAME);
    best.devices.assign(n, nullptr);
    cl_check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, best.devices.data(), nullptr),
             "clGetDeviceIDs", "platform " + best.platform_name);
  }
  if (best.devices.empty()) {
    throw OpenClError(CL_DEVICE_NOT_FOUND, "clGetDeviceIDs", "every OpenCL platform");
  }
  return best;
}

void request_pocl_devices(unsigned devices) {
  std::string value;
  for (unsigned d = 0; d < devices; ++d) value += d == 0 ? "pthread" : " pthread";
  setenv("POCL_DEVICES", value.c_str(), 0);
}

ManualContext::ManualContext(const ClPlatformDevices& platform,
                             std::span<const cl_device_id> devices)
    : devices_(devices.begin(), devices.end()) {
  UNIMEM_REQUIRE(!devices_.empty(), "ManualContext needs at least one device");
  for (cl_device_id d : devices_) {
    bool found = false;
    for (cl_device_id p : platform.devices) found = found || p == d;
    UNIMEM_REQUIRE(found, "ManualContext: every device must belong to the given platform");
  }
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform.platform), 0};
  cl_int err = CL_SUCCESS;
  context_ = ClContext(clCreateContext(properties, static_cast<cl_uint>(devices_.size()),
                                       devices_.data(), nullptr, nullptr, &err));
  cl_check(err, "clCreateContext", "platform " + platform.platform_name);
  for (unsigned d = 0; d < devices_.size(); ++d) {
    queues_.emplace_back(clCreateCommandQueue(context_.get(), devices_[d], 0, &err));
    cl_check(err, "clCreateCommandQueue", device_name(d));
  }
}

std::string ManualContext::device_name(unsigned device) const {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext: device index out of range");
  return "device " + std::to_string(device) + " (" +
         device_string(devices_[device], CL_DEVICE_NAME) + ")";
}

ClProgram ManualContext::build(std::string_view source, std::string_view options,
                               std::string_view what) const {
  const char* text = source.data();
  const std::size_t length = source.size();
  cl_int err = CL_SUCCESS;
  ClProgram program(clCreateProgramWithSource(context_.get(), 1, &text, &length, &err));
  cl_check(err, "clCreateProgramWithSource", what);
  const std::string opts(options);
  err = clBuildProgram(program.get(), static_cast<cl_uint>(devices_.size()), devices_.data(),
                       opts.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string logs;
    for (unsigned d = 0; d < devices_.size(); ++d) {
      std::size_t size = 0;
      clGetProgramBuildInfo(program.get(), devices_[d], CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(program.get(), devices_[d], CL_PROGRAM_BUILD_LOG, size, log.data(),
                            nullptr);
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
      if (!log.empty()) logs += "\n" + device_name(d) + ":\n" + log;
    }
    throw OpenClError(err, "clBuildProgram",
                      std::string(what) + " with options '" + opts + "'" + logs);
  }
  return program;
}

ClKernel ManualContext::kernel(const ClProgram& program, const char* name) const {
  cl_int err = CL_SUCCESS;
  ClKernel k(clCreateKernel(program.get(), name, &err));
  cl_check(err, "clCreateKernel", std::string("kernel ") + name);
  return k;
}

ClMem ManualContext::allocate(unsigned device, std::uint64_t bytes, std::string_view what) const {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext::allocate: device index out of range");
  cl_int err = CL_SUCCESS;
  ClMem mem(
      clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, bytes == 0 ? 1 : bytes, nullptr, &err));
  cl_check(err, "clCreateBuffer",
           std::string(what) + " (" + std::to_string(bytes) + " bytes) for " + device_name(device));
  return mem;
}

ClEvent ManualContext::write(unsigned device, const ClMem& dst, std::uint64_t dst_offset,
                             const void* src, std::uint64_t bytes, std::span<const ClEvent> waits) {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext::write: device index out of range");
  const std::vector<cl_event> wait = raw_events(waits);
  cl_event event = nullptr;
  cl_check(clEnqueueWriteBuffer(queues_[device].get(), dst.get(), CL_FALSE, dst_offset, bytes, src,
                                static_cast<cl_uint>(wait.size()),
                                wait.empty() ? nullptr : wait.data(), &event),
           "clEnqueueWriteBuffer", device_name(device));
  transfers_.h2d += bytes;
  return ClEvent(event);
}

ClEvent ManualContext::read(unsigned device, const ClMem& src, std::uint64_t src_offset, void* dst,
                            std::uint64_t bytes, std::span<const ClEvent> waits) {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext::read: device index out of range");
  const std::vector<cl_event> wait = raw_events(waits);
  cl_event event = nullptr;
  cl_check(clEnqueueReadBuffer(queues_[device].get(), src.get(), CL_FALSE, src_offset, bytes, dst,
                               static_cast<cl_uint>(wait.size()),
                               wait.empty() ? nullptr : wait.data(), &event),
           "clEnqueueReadBuffer", device_name(device));
  transfers_.d2h += bytes;
  return ClEvent(event);
}

ClEvent ManualContext::copy(unsigned dst_device, const ClMem& src, std::uint64_t src_offset,
                            const ClMem& dst, std::uint64_t dst_offset, std::uint64_t bytes,
                            std::span<const ClEvent> waits) {
  UNIMEM_REQUIRE(dst_device < devices_.size(), "ManualContext::copy: device index out of range");
  const std::vector<cl_event> wait = raw_events(waits);
  cl_event event = nullptr;
  cl_check(clEnqueueCopyBuffer(queues_[dst_device].get(), src.get(), dst.get(), src_offset,
                               dst_offset, bytes, static_cast<cl_uint>(wait.size()),
                               wait.empty() ? nullptr : wait.data(), &event),
           "clEnqueueCopyBuffer", "peer copy into " + device_name(dst_device));
  transfers_.d2d += bytes;
  return ClEvent(event);
}

ClEvent ManualContext::launch(unsigned device, const ClKernel& kernel, std::span<const ClArg> args,
                              std::span<const std::size_t> offset,
                              std::span<const std::size_t> global, std::span<const ClEvent> waits) {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext::launch: device index out of range");
  UNIMEM_REQUIRE(!global.empty() && global.size() <= 3 && offset.size() == global.size(),
                 "ManualContext::launch: offset and global must both have 1 to 3 dimensions");
  char name[256] = {};
  clGetKernelInfo(kernel.get(), CL_KERNEL_FUNCTION_NAME, sizeof(name) - 1, name, nullptr);
  for (std::size_t i = 0; i < args.size(); ++i) {
    cl_check(clSetKernelArg(kernel.get(), static_cast<cl_uint>(i), args[i].bytes.size(),
                            args[i].bytes.data()),
             "clSetKernelArg", std::string("argument ") + std::to_string(i) + " of kernel " + name);
  }
  const std::vector<cl_event> wait = raw_events(waits);
  cl_event event = nullptr;
  cl_check(clEnqueueNDRangeKernel(queues_[device].get(), kernel.get(),
                                  static_cast<cl_uint>(global.size()), offset.data(), global.data(),
                                  nullptr, static_cast<cl_uint>(wait.size()),
                                  wait.empty() ? nullptr : wait.data(), &event),
           "clEnqueueNDRangeKernel", std::string("kernel ") + name + " on " + device_name(device));
  return ClEvent(event);
}

void ManualContext::finish_all() const {
  for (unsigned d = 0; d < queues_.size(); ++d) {
    cl_check(clFinish(queues_[d].get()), "clFinish", device_name(d));
  }
}

}  // namespace unimem::examples
