#include "examples/manual_opencl.hpp"

#include <chrono>
#include <map>

#include "common/check.hpp"
#include "device/opencl/opencl_discovery.hpp"
#include "device/opencl/opencl_error.hpp"
#include "device/opencl/opencl_program.hpp"

namespace unimem::examples {

namespace {

using opencl::check;

}  // namespace

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

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  check(clGetDeviceInfo(device, what, 0, nullptr, &size), "clGetDeviceInfo", "device");
  std::string text(size, '\0');
  check(clGetDeviceInfo(device, what, size, text.data(), nullptr), "clGetDeviceInfo", "device");
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
  const std::vector<opencl::DeviceInfo> all = opencl::list_devices();
  std::map<std::size_t, ClPlatformDevices> platforms;  // by platform index
  for (const opencl::DeviceInfo& d : all) {
    ClPlatformDevices& p = platforms[d.platform_index];
    p.platform = d.platform;
    p.platform_name = d.platform_name;
    p.devices.push_back(d.device);
  }
  ClPlatformDevices best;
  for (auto& [index, p] : platforms) {
    if (p.devices.size() > best.devices.size()) best = std::move(p);
  }
  if (best.devices.empty()) {
    throw opencl::make_error(CL_DEVICE_NOT_FOUND, "clGetDeviceIDs", "every OpenCL platform");
  }
  return best;
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
  check(err, "clCreateContext", "platform " + platform.platform_name);
  for (unsigned d = 0; d < devices_.size(); ++d) {
    queues_.emplace_back(clCreateCommandQueue(context_.get(), devices_[d], 0, &err));
    check(err, "clCreateCommandQueue", device_name(d));
  }
}

std::string ManualContext::device_name(unsigned device) const {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext: device index out of range");
  return "device " + std::to_string(device) + " (" +
         device_string(devices_[device], CL_DEVICE_NAME) + ")";
}

ClProgram ManualContext::build(std::string_view source, std::string_view options,
                               std::string_view what) const {
  std::vector<std::string> names;
  for (unsigned d = 0; d < devices_.size(); ++d) names.push_back(device_name(d));
  return ClProgram(
      opencl::build_program(context_.get(), devices_, names, source, std::string(options), what));
}

ClKernel ManualContext::kernel(const ClProgram& program, const char* name) {
  const auto key = std::make_pair(program.get(), std::string(name));
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  cl_int err = CL_SUCCESS;
  ClKernel k(clCreateKernel(program.get(), name, &err));
  check(err, "clCreateKernel", std::string("kernel ") + name);
  kernels_.emplace(key, k);
  return k;
}

ClMem ManualContext::allocate(unsigned device, std::uint64_t bytes, std::string_view what) {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext::allocate: device index out of range");
  const auto key = std::make_pair(device, bytes);
  std::size_t& taken = taken_[key];
  std::vector<ClMem>& pool = pool_[key];
  if (reuse_ && taken < pool.size()) return pool[taken++];
  const auto start = std::chrono::steady_clock::now();
  cl_int err = CL_SUCCESS;
  ClMem mem(
      clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, bytes == 0 ? 1 : bytes, nullptr, &err));
  check(err, "clCreateBuffer",
        std::string(what) + " (" + std::to_string(bytes) + " bytes) for " + device_name(device));
  create_buffer_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++fresh_allocations_;
  if (reuse_) {
    pool.push_back(mem);
    ++taken;
  }
  return mem;
}

void ManualContext::begin_run() {
  transfers_ = {};
  taken_.clear();
  fresh_allocations_ = 0;
  create_buffer_seconds_ = 0;
}

void ManualContext::set_reuse(bool reuse) {
  reuse_ = reuse;
  if (!reuse_) pool_.clear();  // later runs allocate afresh
}

ClEvent ManualContext::write(unsigned device, const ClMem& dst, std::uint64_t dst_offset,
                             const void* src, std::uint64_t bytes, std::span<const ClEvent> waits) {
  UNIMEM_REQUIRE(device < devices_.size(), "ManualContext::write: device index out of range");
  const std::vector<cl_event> wait = raw_events(waits);
  cl_event event = nullptr;
  check(clEnqueueWriteBuffer(queues_[device].get(), dst.get(), CL_FALSE, dst_offset, bytes, src,
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
  check(clEnqueueReadBuffer(queues_[device].get(), src.get(), CL_FALSE, src_offset, bytes, dst,
                            static_cast<cl_uint>(wait.size()), wait.empty() ? nullptr : wait.data(),
                            &event),
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
  check(clEnqueueCopyBuffer(queues_[dst_device].get(), src.get(), dst.get(), src_offset, dst_offset,
                            bytes, static_cast<cl_uint>(wait.size()),
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
    check(clSetKernelArg(kernel.get(), static_cast<cl_uint>(i), args[i].bytes.size(),
                         args[i].bytes.data()),
          "clSetKernelArg", std::string("argument ") + std::to_string(i) + " of kernel " + name);
  }
  const std::vector<cl_event> wait = raw_events(waits);
  cl_event event = nullptr;
  check(clEnqueueNDRangeKernel(queues_[device].get(), kernel.get(),
                               static_cast<cl_uint>(global.size()), offset.data(), global.data(),
                               nullptr, static_cast<cl_uint>(wait.size()),
                               wait.empty() ? nullptr : wait.data(), &event),
        "clEnqueueNDRangeKernel", std::string("kernel ") + name + " on " + device_name(device));
  return ClEvent(event);
}

void ManualContext::finish_all() const {
  for (unsigned d = 0; d < queues_.size(); ++d) {
    check(clFinish(queues_[d].get()), "clFinish", device_name(d));
  }
}

}  // namespace unimem::examples
