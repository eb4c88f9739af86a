// The unimem OpenCL platform against POCL directly: the same OpenCL calls on both platforms give
// the same error codes and the same data. The process's ICD loader sees both platforms (a private
// vendor directory with unimem.icd and the system's vendors); unimem's platform runs on the
// vendors underneath (UNIMEM_VENDOR_ICDS).
//
// Entry points covered: clGetPlatformIDs, clGetPlatformInfo, clGetDeviceIDs, clGetDeviceInfo,
// clCreateContext, clCreateContextFromType, clGetContextInfo, clCreateCommandQueue,
// clGetCommandQueueInfo, clCreateBuffer (every host-pointer flag), clCreateSubBuffer,
// clGetMemObjectInfo, clEnqueue{Read,Write,Copy,Fill}Buffer, clEnqueue{Read,Write,Copy}BufferRect,
// clEnqueueMapBuffer, clEnqueueUnmapMemObject, clEnqueueMigrateMemObjects (profiling times of
// every command kind: unimem only), clCreateProgramWithSource,
// clCreateProgramWithBinary, clBuildProgram, clCompileProgram (with input headers),
// clLinkProgram, clGetProgramInfo, clGetProgramBuildInfo,
// clCreateKernel, clCreateKernelsInProgram, clSetKernelArg, clGetKernelInfo,
// clGetKernelWorkGroupInfo, clEnqueueNDRangeKernel, clEnqueueTask, clCreateUserEvent,
// clSetUserEventStatus, clWaitForEvents, clGetEventInfo, clGetEventProfilingInfo,
// clSetEventCallback, clEnqueueMarkerWithWaitList, clEnqueueBarrierWithWaitList, clFinish,
// clRetain*/clRelease*.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "platform/platform_test_environment.hpp"
#include "platform/run_command.hpp"

namespace {

namespace fs = std::filesystem;

// Before the first OpenCL call (the loader reads its vendors once).
const bool kEnvironment = unimem::testing::use_platform_and_vendors();

std::string platform_name(cl_platform_id p) {
  char name[256] = {};
  clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
  return name;
}

// One platform's first device with a context and a profiling queue.
struct OnePlatform {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string name;

  explicit OnePlatform(cl_platform_id p) : platform(p), name(platform_name(p)) {
    EXPECT_EQ(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS) << name;
    cl_int e = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &e);
    EXPECT_EQ(e, CL_SUCCESS) << name;
    queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &e);
    EXPECT_EQ(e, CL_SUCCESS) << name;
  }
  ~OnePlatform() {
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
  cl_program build(const char* source, cl_int* status, const char* options = "") {
    cl_int e = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
    EXPECT_EQ(e, CL_SUCCESS);
    *status = clBuildProgram(p, 1, &device, options, nullptr, nullptr);
    return p;
  }
};

// Nanoseconds on the host's steady clock (the platform's profiling time base).
// Device times are placed on the host clock through measured offset bounds (clock_offset.hpp);
// under load the placement can put a device operation's END after the host saw it finish (3.1 ms
// under ASan during a cold CI build). Times are checked against the run's host bounds with this
// much slack; their order among themselves is checked exactly.
constexpr cl_ulong kDevicePlacementSlack = 20'000'000;  // ns

cl_ulong host_now() {
  return static_cast<cl_ulong>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct ProfiledTimes {
  cl_ulong queued = 0, submit = 0, start = 0, end = 0;
  friend bool operator==(const ProfiledTimes&, const ProfiledTimes&) = default;
};

ProfiledTimes profiled_times(cl_event ev) {
  ProfiledTimes t;
  EXPECT_EQ(
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof t.queued, &t.queued, nullptr),
      CL_SUCCESS);
  EXPECT_EQ(
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_SUBMIT, sizeof t.submit, &t.submit, nullptr),
      CL_SUCCESS);
  EXPECT_EQ(
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t.start, &t.start, nullptr),
      CL_SUCCESS);
  EXPECT_EQ(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t.end, &t.end, nullptr),
            CL_SUCCESS);
  return t;
}

// The unimem platform's launches and split launches so far (unimem_platform_launch_counts, from
// the platform library the loader loaded).
std::pair<std::uint64_t, std::uint64_t> platform_launch_counts() {
  void* library = ::dlopen(UNIMEM_PLATFORM_LIBRARY_BUILD, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr) << "the platform library is not loaded";
  if (library == nullptr) return {0, 0};
  using Counts = void (*)(std::uint64_t*, std::uint64_t*);
  auto counts = reinterpret_cast<Counts>(::dlsym(library, "unimem_platform_launch_counts"));
  std::uint64_t launches = 0, split = 0;
  EXPECT_NE(counts, nullptr);
  if (counts != nullptr) counts(&launches, &split);
  ::dlclose(library);
  return {launches, split};
}

// The launches the unimem platform ran as lean repeats so far (unimem_platform_lean_launches).
std::uint64_t platform_lean_launches() {
  void* library = ::dlopen(UNIMEM_PLATFORM_LIBRARY_BUILD, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr) << "the platform library is not loaded";
  if (library == nullptr) return 0;
  using Count = std::uint64_t (*)();
  auto count = reinterpret_cast<Count>(::dlsym(library, "unimem_platform_lean_launches"));
  EXPECT_NE(count, nullptr);
  const std::uint64_t n = count != nullptr ? count() : 0;
  ::dlclose(library);
  return n;
}

class PlatformApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kEnvironment);
    cl_uint n = 0;
    ASSERT_EQ(clGetPlatformIDs(0, nullptr, &n), CL_SUCCESS);
    std::vector<cl_platform_id> all(n);
    ASSERT_EQ(clGetPlatformIDs(n, all.data(), nullptr), CL_SUCCESS);
    for (cl_platform_id p : all) {
      if (platform_name(p) == "unimem") {
        unimem_ = p;
      } else if (vendor_ == nullptr) {
        vendor_ = p;
      }
    }
    ASSERT_NE(unimem_, nullptr) << "the loader does not list the unimem platform";
    ASSERT_NE(vendor_, nullptr) << "no vendor platform besides unimem";
  }
  // Runs f on both platforms and expects equal results.
  template <typename F>
  void same(F f) {
    OnePlatform vendor(vendor_);
    OnePlatform unimem(unimem_);
    const auto expected = f(vendor);
    const auto actual = f(unimem);
    EXPECT_EQ(actual.size(), expected.size());
    int mismatches = 0;  // the first few are enough to see the difference
    for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
      if (actual[i] != expected[i] && ++mismatches <= 8) {
        ADD_FAILURE() << "result " << i << ": unimem platform " << actual[i] << ", " << vendor.name
                      << " " << expected[i];
      }
    }
  }
  cl_platform_id unimem_ = nullptr;
  cl_platform_id vendor_ = nullptr;
};

const char* kKernels = R"(
__kernel void scale(__global float* data, float factor) {
  const size_t i = get_global_id(0);
  data[i] = data[i] * factor + (float)i;
}
__kernel void stencil(__global const float* in, __global float* out, int n) {
  const int i = (int)get_global_id(0);
  const float left = i > 0 ? in[i - 1] : 0.0f;
  const float right = i + 1 < n ? in[i + 1] : 0.0f;
  out[i] = left + 2.0f * in[i] + right;
}
__kernel void group_sum(__global const int* in, __global int* out, __local int* scratch) {
  const size_t l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t k = 0; k < get_local_size(0); ++k) s += scratch[k];
    out[get_group_id(0)] = s;
  }
}
__kernel void one(__global int* out) { out[0] = 42; }
__kernel void add_bias(__global float* data, __global const float* bias) {
  const size_t i = get_global_id(0);
  data[i] += bias != 0 ? bias[i] : 1.0f;
}
)";

TEST_F(PlatformApi, PlatformAndAggregateDeviceDescribeThemselves) {
  char version[128] = {};
  ASSERT_EQ(clGetPlatformInfo(unimem_, CL_PLATFORM_VERSION, sizeof version, version, nullptr),
            CL_SUCCESS);
  EXPECT_EQ(std::string(version).rfind("OpenCL 1.2", 0), 0u) << version;
  OnePlatform u(unimem_);
  cl_bool images = CL_TRUE;
  ASSERT_EQ(clGetDeviceInfo(u.device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr),
            CL_SUCCESS);
  EXPECT_EQ(images, CL_FALSE);
  // The aggregate sums the compute units of the devices below it.
  cl_uint units = 0, vendor_units = 0, vendor_devices = 0;
  clGetDeviceInfo(u.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
  clGetDeviceIDs(vendor_, CL_DEVICE_TYPE_ALL, 0, nullptr, &vendor_devices);
  std::vector<cl_device_id> devices(vendor_devices);
  clGetDeviceIDs(vendor_, CL_DEVICE_TYPE_ALL, vendor_devices, devices.data(), nullptr);
  for (cl_device_id d : devices) {
    cl_uint n = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof n, &n, nullptr);
    vendor_units += n;
  }
  EXPECT_EQ(units, vendor_units);
  cl_platform_id owner = nullptr;
  clGetDeviceInfo(u.device, CL_DEVICE_PLATFORM, sizeof owner, &owner, nullptr);
  EXPECT_EQ(owner, unimem_);
}

TEST_F(PlatformApi, InvalidArgumentsGiveTheSameErrorCodes) {
  same([](OnePlatform& s) {
    std::vector<cl_int> codes;
    cl_int e = CL_SUCCESS;
    float host[4] = {};
    codes.push_back(clGetDeviceInfo(nullptr, CL_DEVICE_NAME, 0, nullptr, nullptr));
    codes.push_back(clGetContextInfo(nullptr, CL_CONTEXT_NUM_DEVICES, 0, nullptr, nullptr));
    (void)clCreateBuffer(s.context, CL_MEM_READ_WRITE, 0, nullptr, &e);
    codes.push_back(e);
    (void)clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, 16, nullptr, &e);
    codes.push_back(e);
    (void)clCreateBuffer(s.context, CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR, 16, host, &e);
    codes.push_back(e);
    (void)clCreateBuffer(s.context, CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 16, nullptr, &e);
    codes.push_back(e);
    cl_mem b = clCreateBuffer(s.context, CL_MEM_READ_WRITE, 16, nullptr, &e);
    codes.push_back(clEnqueueReadBuffer(s.queue, b, CL_TRUE, 8, 16, host, 0, nullptr, nullptr));
    codes.push_back(clEnqueueWriteBuffer(s.queue, b, CL_TRUE, 0, 16, nullptr, 0, nullptr, nullptr));
    const float pattern[3] = {};
    codes.push_back(clEnqueueFillBuffer(s.queue, b, pattern, 12, 0, 12, 0, nullptr, nullptr));
    codes.push_back(clEnqueueCopyBuffer(s.queue, b, b, 0, 4, 8, 0, nullptr, nullptr));
    cl_event bogus = nullptr;
    codes.push_back(clEnqueueReadBuffer(s.queue, b, CL_TRUE, 0, 4, host, 1, &bogus, nullptr));
    codes.push_back(clWaitForEvents(0, nullptr));
    cl_program bad = s.build("__kernel void k(__global int* p) { p[0] = undefined_name; }", &e);
    codes.push_back(e);
    std::size_t log_size = 0;
    clGetProgramBuildInfo(bad, s.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
    codes.push_back(log_size > 1 ? 1 : 0);
    cl_build_status status = CL_BUILD_NONE;
    clGetProgramBuildInfo(bad, s.device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr);
    codes.push_back(status);
    (void)clCreateKernel(bad, "k", &e);
    codes.push_back(e);
    clReleaseProgram(bad);
    cl_program p = s.build(kKernels, &e);
    codes.push_back(e);
    (void)clCreateKernel(p, "no_such_kernel", &e);
    codes.push_back(e);
    cl_kernel k = clCreateKernel(p, "scale", &e);
    codes.push_back(clSetKernelArg(k, 7, sizeof b, &b));
    const std::size_t global = 4, local = 3, zero = 0;
    codes.push_back(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr,
                                           nullptr));  // arguments not set
    codes.push_back(clSetKernelArg(k, 0, sizeof b, &b));
    const float factor = 2;
    codes.push_back(clSetKernelArg(k, 1, sizeof factor, &factor));
    codes.push_back(
        clEnqueueNDRangeKernel(s.queue, k, 0, nullptr, &global, nullptr, 0, nullptr, nullptr));
    codes.push_back(
        clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr));
    codes.push_back(
        clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &zero, nullptr, 0, nullptr, nullptr));
    codes.push_back(
        clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, nullptr, nullptr, 0, nullptr, nullptr));
    const unsigned char binary[4] = {1, 2, 3, 4};
    const unsigned char* binaries[] = {binary};
    const std::size_t lengths[] = {sizeof binary};
    cl_int binary_status = CL_SUCCESS;
    (void)clCreateProgramWithBinary(s.context, 1, &s.device, lengths, binaries, &binary_status, &e);
    codes.push_back(e);
    codes.push_back(clFinish(s.queue));
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseMemObject(b);
    return codes;
  });
}

TEST_F(PlatformApi, BuffersMoveTheSameBytes) {
  same([](OnePlatform& s) {
    std::vector<float> out;
    cl_int e = CL_SUCCESS;
    std::vector<float> host(64);
    std::iota(host.begin(), host.end(), 1.0f);
    cl_mem copied = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, 256, host.data(), &e);
    std::vector<float> used = host;
    cl_mem use = clCreateBuffer(s.context, CL_MEM_USE_HOST_PTR, 256, used.data(), &e);
    cl_mem plain = clCreateBuffer(s.context, CL_MEM_ALLOC_HOST_PTR, 256, nullptr, &e);
    const float pattern[2] = {-1.0f, -2.0f};
    clEnqueueFillBuffer(s.queue, plain, pattern, sizeof pattern, 0, 256, 0, nullptr, nullptr);
    clEnqueueCopyBuffer(s.queue, copied, plain, 16, 64, 32, 0, nullptr, nullptr);
    std::vector<float> r(64);
    clEnqueueReadBuffer(s.queue, plain, CL_TRUE, 0, 256, r.data(), 0, nullptr, nullptr);
    out.insert(out.end(), r.begin(), r.end());
    // Rect: a 3x2 block of a 8-float-wide matrix, into a 4-wide host block.
    const std::size_t buffer_origin[3] = {8, 1, 0}, host_origin[3] = {0, 0, 0},
                      region[3] = {12, 2, 1};
    std::vector<float> block(8, 0.0f);
    clEnqueueReadBufferRect(s.queue, copied, CL_TRUE, buffer_origin, host_origin, region, 32, 0, 16,
                            0, block.data(), 0, nullptr, nullptr);
    out.insert(out.end(), block.begin(), block.end());
    const float ones[6] = {9, 9, 9, 9, 9, 9};
    clEnqueueWriteBufferRect(s.queue, copied, CL_TRUE, buffer_origin, host_origin, region, 32, 0,
                             12, 0, ones, 0, nullptr, nullptr);
    clEnqueueReadBuffer(s.queue, copied, CL_TRUE, 0, 256, r.data(), 0, nullptr, nullptr);
    out.insert(out.end(), r.begin(), r.end());
    // Map for reading and writing, change, unmap: the buffer has the change.
    auto* mapped = static_cast<float*>(clEnqueueMapBuffer(
        s.queue, copied, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 32, 64, 0, nullptr, nullptr, &e));
    out.push_back(e == CL_SUCCESS ? mapped[0] : -99.0f);
    cl_uint maps = 0;
    clGetMemObjectInfo(copied, CL_MEM_MAP_COUNT, sizeof maps, &maps, nullptr);
    out.push_back(static_cast<float>(maps));
    for (int i = 0; i < 16; ++i) mapped[i] = 100.0f + static_cast<float>(i);
    clEnqueueUnmapMemObject(s.queue, copied, mapped, 0, nullptr, nullptr);
    clEnqueueReadBuffer(s.queue, copied, CL_TRUE, 0, 256, r.data(), 0, nullptr, nullptr);
    out.insert(out.end(), r.begin(), r.end());
    // A USE_HOST_PTR buffer mapped: the pointer is inside the host memory and current.
    auto* in_host = static_cast<float*>(
        clEnqueueMapBuffer(s.queue, use, CL_TRUE, CL_MAP_READ, 0, 256, 0, nullptr, nullptr, &e));
    out.push_back(in_host == used.data() ? 1.0f : 0.0f);
    out.push_back(in_host[5]);
    clEnqueueUnmapMemObject(s.queue, use, in_host, 0, nullptr, nullptr);
    // A sub-buffer reads through its parent.
    const cl_buffer_region sub_region{128, 64};
    cl_mem sub =
        clCreateSubBuffer(copied, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &sub_region, &e);
    std::vector<float> part(16);
    clEnqueueReadBuffer(s.queue, sub, CL_TRUE, 0, 64, part.data(), 0, nullptr, nullptr);
    out.insert(out.end(), part.begin(), part.end());
    std::size_t offset = 0;
    clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof offset, &offset, nullptr);
    out.push_back(static_cast<float>(offset));
    for (cl_mem m : {sub, copied, use, plain}) clReleaseMemObject(m);
    clFinish(s.queue);
    return out;
  });
}

TEST_F(PlatformApi, KernelsComputeTheSameResults) {
  same([](OnePlatform& s) {
    std::vector<float> out;
    cl_int e = CL_SUCCESS;
    cl_program p = s.build(kKernels, &e);
    cl_uint count = 0;
    clCreateKernelsInProgram(p, 0, nullptr, &count);
    out.push_back(static_cast<float>(count));
    constexpr int n = 4096;
    std::vector<float> host(n);
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 97) * 0.5f;
    cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
    cl_mem b = clCreateBuffer(s.context, CL_MEM_READ_WRITE, n * 4, nullptr, &e);
    cl_kernel scale = clCreateKernel(p, "scale", &e);
    cl_kernel stencil = clCreateKernel(p, "stencil", &e);
    const float factor = 3.0f;
    clSetKernelArg(scale, 0, sizeof a, &a);
    clSetKernelArg(scale, 1, sizeof factor, &factor);
    clSetKernelArg(stencil, 0, sizeof a, &a);
    clSetKernelArg(stencil, 1, sizeof b, &b);
    clSetKernelArg(stencil, 2, sizeof n, &n);
    const std::size_t global = n, local = 64;
    for (int step = 0; step < 3; ++step) {
      clEnqueueNDRangeKernel(s.queue, scale, 1, nullptr, &global, &local, 0, nullptr, nullptr);
      clEnqueueNDRangeKernel(s.queue, stencil, 1, nullptr, &global, &local, 0, nullptr, nullptr);
      std::swap(a, b);
      clSetKernelArg(scale, 0, sizeof a, &a);
      clSetKernelArg(stencil, 0, sizeof a, &a);
      clSetKernelArg(stencil, 1, sizeof b, &b);
    }
    std::vector<float> r(n);
    clEnqueueReadBuffer(s.queue, a, CL_TRUE, 0, n * 4, r.data(), 0, nullptr, nullptr);
    out.insert(out.end(), r.begin(), r.end());
    // __local memory and a work-group reduction.
    std::vector<int> ints(1024);
    std::iota(ints.begin(), ints.end(), -300);
    cl_mem in = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, 4096, ints.data(), &e);
    cl_mem sums = clCreateBuffer(s.context, CL_MEM_READ_WRITE, 16 * 4, nullptr, &e);
    cl_kernel group_sum = clCreateKernel(p, "group_sum", &e);
    clSetKernelArg(group_sum, 0, sizeof in, &in);
    clSetKernelArg(group_sum, 1, sizeof sums, &sums);
    out.push_back(static_cast<float>(clSetKernelArg(group_sum, 2, 64 * 4, nullptr)));
    const std::size_t g2 = 1024, l2 = 64;
    cl_event done = nullptr;
    clEnqueueNDRangeKernel(s.queue, group_sum, 1, nullptr, &g2, &l2, 0, nullptr, &done);
    out.push_back(static_cast<float>(clWaitForEvents(1, &done)));
    cl_int status = 0;
    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    out.push_back(static_cast<float>(status));
    cl_ulong start = 0, end = 0;
    out.push_back(static_cast<float>(
        clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr)));
    clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
    out.push_back(end >= start ? 1.0f : 0.0f);
    std::vector<int> s16(16);
    clEnqueueReadBuffer(s.queue, sums, CL_TRUE, 0, 64, s16.data(), 0, nullptr, nullptr);
    for (int v : s16) out.push_back(static_cast<float>(v));
    // A task.
    cl_kernel one = clCreateKernel(p, "one", &e);
    clSetKernelArg(one, 0, sizeof sums, &sums);
    clEnqueueTask(s.queue, one, 0, nullptr, nullptr);
    int first = 0;
    clEnqueueReadBuffer(s.queue, sums, CL_TRUE, 0, 4, &first, 0, nullptr, nullptr);
    out.push_back(static_cast<float>(first));
    char name[64] = {};
    clGetKernelInfo(stencil, CL_KERNEL_FUNCTION_NAME, sizeof name, name, nullptr);
    out.push_back(std::string(name) == "stencil" ? 1.0f : 0.0f);
    cl_uint args = 0;
    clGetKernelInfo(stencil, CL_KERNEL_NUM_ARGS, sizeof args, &args, nullptr);
    out.push_back(static_cast<float>(args));
    clReleaseEvent(done);
    for (cl_kernel k : {scale, stencil, group_sum, one}) clReleaseKernel(k);
    for (cl_mem m : {a, b, in, sums}) clReleaseMemObject(m);
    clReleaseProgram(p);
    return out;
  });
}

// Launches that hand out no event (the platform keeps no command record for them) are what
// clFinish, a marker without a wait list and a barrier wait for.
TEST_F(PlatformApi, LaunchesWithoutEventsAreWaitedForByFinishMarkersAndBarriers) {
  same([](OnePlatform& s) {
    std::vector<int> out;
    cl_int e = CL_SUCCESS;
    const char* source = "__kernel void add_one(__global int* v) { v[get_global_id(0)] += 1; }";
    cl_program p = s.build(source, &e);
    out.push_back(e);
    constexpr int n = 256;
    std::vector<int> host(n, 7);
    cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
    cl_mem b = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
    cl_kernel k = clCreateKernel(p, "add_one", &e);
    clSetKernelArg(k, 0, sizeof a, &a);
    const std::size_t global = n, local = 64;
    for (int i = 0; i < 300; ++i) {
      out.push_back(
          clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr));
    }
    cl_event marker = nullptr;
    out.push_back(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker));
    out.push_back(clWaitForEvents(1, &marker));
    cl_int status = 1;
    clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    out.push_back(status);
    clSetKernelArg(k, 0, sizeof b, &b);
    for (int i = 0; i < 40; ++i) {
      clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    }
    out.push_back(clEnqueueBarrierWithWaitList(s.queue, 0, nullptr, nullptr));
    out.push_back(clFinish(s.queue));
    std::vector<int> ra(n), rb(n);
    clEnqueueReadBuffer(s.queue, a, CL_TRUE, 0, n * 4, ra.data(), 0, nullptr, nullptr);
    clEnqueueReadBuffer(s.queue, b, CL_TRUE, 0, n * 4, rb.data(), 0, nullptr, nullptr);
    out.push_back(ra[0]);
    out.push_back(ra[n - 1]);
    out.push_back(rb[0]);
    out.push_back(rb[n - 1]);
    clReleaseEvent(marker);
    clReleaseKernel(k);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseProgram(p);
    return out;
  });
}

// A launch checks its buffer arguments again only after a memory object was destroyed: one
// released after many launches with the same arguments is still caught (POCL cannot be compared:
// launching a kernel whose buffer was released is undefined there).
TEST_F(PlatformApi, ALaunchAfterItsBufferWasReleasedIsRefused) {
  OnePlatform s(unimem_);
  cl_int e = CL_SUCCESS;
  const char* source = "__kernel void add_one(__global int* v) { v[get_global_id(0)] += 1; }";
  cl_program p = s.build(source, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  constexpr int n = 256;
  std::vector<int> host(n, 7);
  cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_mem b = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_mem other = clCreateBuffer(s.context, CL_MEM_READ_WRITE, n * 4, nullptr, &e);
  cl_kernel k = clCreateKernel(p, "add_one", &e);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof b, &b), CL_SUCCESS);
  const std::size_t global = n;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
              CL_SUCCESS);
  }
  // Another buffer released: the arguments are checked again and still pass.
  EXPECT_EQ(clReleaseMemObject(other), CL_SUCCESS);
  EXPECT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_SUCCESS);
  EXPECT_EQ(clFinish(s.queue), CL_SUCCESS);
  EXPECT_EQ(clReleaseMemObject(b), CL_SUCCESS);
  EXPECT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_INVALID_KERNEL_ARGS);
  // A new argument: launches run again, on it.
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof a, &a), CL_SUCCESS);
  EXPECT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_SUCCESS);
  std::vector<int> r(n);
  ASSERT_EQ(clEnqueueReadBuffer(s.queue, a, CL_TRUE, 0, n * 4, r.data(), 0, nullptr, nullptr),
            CL_SUCCESS);
  EXPECT_EQ(r[0], 8);
  EXPECT_EQ(r[n - 1], 8);
  clReleaseKernel(k);
  clReleaseMemObject(a);
  clReleaseProgram(p);
}

// Runs of the same anonymous launch (the platform's lean repeat: clEnqueueNDRangeKernel then
// re-enqueues the previous operation's kernels) broken at random by reads, writes, launches asking
// for an event, another kernel, new arguments (buffer and scalar), another global size or a
// local size, and clFinish: every read equals POCL's directly. Seed printed; UNIMEM_TEST_SEED
// reproduces it.
TEST_F(PlatformApi, RunsOfOneLaunchBrokenAtRandomGiveWhatPoclGives) {
  const char* env = std::getenv("UNIMEM_TEST_SEED");
  const std::uint32_t seed =
      env != nullptr ? static_cast<std::uint32_t>(std::stoul(env)) : std::random_device{}();
  std::printf("platform lean repeat test: seed %u (UNIMEM_TEST_SEED)\n", seed);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (UNIMEM_TEST_SEED reproduces it)");
  const std::uint64_t lean_before = platform_lean_launches();
  same([&](OnePlatform& s) {
    std::mt19937 random(seed);
    const auto pick = [&](std::uint32_t n) { return static_cast<std::size_t>(random() % n); };
    constexpr int n = 512;
    cl_int e = CL_SUCCESS;
    const char* source =
        "__kernel void add_one(__global int* v) { v[get_global_id(0)] += 1; }\n"
        "__kernel void scale(__global int* v, int c) {\n"
        "  size_t i = get_global_id(0); v[i] = v[i] * c + (int)i; }\n";
    cl_program p = s.build(source, &e);
    EXPECT_EQ(e, CL_SUCCESS);
    std::vector<int> init(n);
    std::iota(init.begin(), init.end(), 3);
    cl_mem bufs[2] = {clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, init.data(), &e),
                      clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, init.data(), &e)};
    cl_kernel add = clCreateKernel(p, "add_one", &e);
    cl_kernel scale = clCreateKernel(p, "scale", &e);
    int c = 3;
    EXPECT_EQ(clSetKernelArg(add, 0, sizeof(cl_mem), &bufs[0]), CL_SUCCESS);
    EXPECT_EQ(clSetKernelArg(scale, 0, sizeof(cl_mem), &bufs[1]), CL_SUCCESS);
    EXPECT_EQ(clSetKernelArg(scale, 1, sizeof c, &c), CL_SUCCESS);
    std::size_t global = n;
    const std::size_t local = 64;
    std::vector<int> out;
    for (int step = 0; step < 400; ++step) {
      const std::size_t what = pick(100);
      if (what < 70) {
        EXPECT_EQ(
            clEnqueueNDRangeKernel(s.queue, add, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_SUCCESS);
      } else if (what < 75) {
        std::vector<int> r(n);
        EXPECT_EQ(clEnqueueReadBuffer(s.queue, bufs[pick(2)], CL_TRUE, 0, n * 4, r.data(), 0,
                                      nullptr, nullptr),
                  CL_SUCCESS);
        out.insert(out.end(), r.begin(), r.end());
      } else if (what < 78) {
        std::vector<int> w(16, static_cast<int>(pick(1000)));
        EXPECT_EQ(clEnqueueWriteBuffer(s.queue, bufs[pick(2)], CL_TRUE, 4 * pick(n - 16), 64,
                                       w.data(), 0, nullptr, nullptr),
                  CL_SUCCESS);
      } else if (what < 82) {
        cl_event ev = nullptr;
        EXPECT_EQ(
            clEnqueueNDRangeKernel(s.queue, add, 1, nullptr, &global, nullptr, 0, nullptr, &ev),
            CL_SUCCESS);
        EXPECT_EQ(clWaitForEvents(1, &ev), CL_SUCCESS);
        clReleaseEvent(ev);
      } else if (what < 87) {
        EXPECT_EQ(clEnqueueNDRangeKernel(s.queue, scale, 1, nullptr, &global, &local, 0, nullptr,
                                         nullptr),
                  CL_SUCCESS);
      } else if (what < 90) {
        c = static_cast<int>(pick(4)) - 1;
        EXPECT_EQ(clSetKernelArg(scale, 1, sizeof c, &c), CL_SUCCESS);
      } else if (what < 93) {
        EXPECT_EQ(clSetKernelArg(add, 0, sizeof(cl_mem), &bufs[pick(2)]), CL_SUCCESS);
      } else if (what < 96) {
        global = global == n ? n / 2 : n;
      } else if (what < 98) {
        EXPECT_EQ(
            clEnqueueNDRangeKernel(s.queue, add, 1, nullptr, &global, &local, 0, nullptr, nullptr),
            CL_SUCCESS);
      } else {
        EXPECT_EQ(clFinish(s.queue), CL_SUCCESS);
      }
    }
    for (cl_mem b : bufs) {
      std::vector<int> r(n);
      EXPECT_EQ(clEnqueueReadBuffer(s.queue, b, CL_TRUE, 0, n * 4, r.data(), 0, nullptr, nullptr),
                CL_SUCCESS);
      out.insert(out.end(), r.begin(), r.end());
    }
    clReleaseKernel(add);
    clReleaseKernel(scale);
    clReleaseMemObject(bufs[0]);
    clReleaseMemObject(bufs[1]);
    clReleaseProgram(p);
    return out;
  });
  const std::uint64_t lean = platform_lean_launches() - lean_before;
  std::printf("platform lean repeat test: %llu lean launches\n",
              static_cast<unsigned long long>(lean));
  EXPECT_GT(lean, 5u) << "no launch took the lean repeat";
}

// A run of one anonymous launch is the runtime's eventless streak (RuntimeCore::launch_again with
// eventless: its launches only enqueue, and whatever comes next closes it). Each case runs 40
// launches, then one operation that must see the last of them, then reads every buffer: a read,
// another kernel reading the buffer, a marker waited for, clFinish, a write into the buffer, a
// kernel on a second queue, a map, the same launch asking for an event, and the kernel released
// in the middle of the run. Every result equals the host's (POCL orders no two queues: the cases
// with a second queue are left unordered there, so the oracle is the host).
TEST_F(PlatformApi, WhatFollowsARunOfOneLaunchSeesItsLastLaunch) {
  const std::uint64_t lean_before = platform_lean_launches();
  constexpr int kCases = 9;
  for (int what = 0; what < kCases; ++what) {
    SCOPED_TRACE("case " + std::to_string(what));
    const auto f = [what](OnePlatform& s) {
      constexpr int n = 1024;
      cl_int e = CL_SUCCESS;
      // Some work per item, so that the launches are still running when the next call comes.
      const char* source =
          "__kernel void advance(__global uint* v) {\n"
          "  size_t i = get_global_id(0); uint x = v[i];\n"
          "  for (int k = 0; k < 200; ++k) x = x * 1103515245u + 12345u;\n"
          "  v[i] = x + 1u; }\n"
          "__kernel void copy(__global const uint* a, __global uint* b) {\n"
          "  size_t i = get_global_id(0); b[i] = a[i] ^ 0x5a5au; }\n";
      cl_program p = s.build(source, &e);
      EXPECT_EQ(e, CL_SUCCESS);
      std::vector<cl_uint> init(n);
      std::iota(init.begin(), init.end(), 7u);
      cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, init.data(), &e);
      cl_mem b = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, init.data(), &e);
      cl_kernel step = clCreateKernel(p, "advance", &e);
      cl_kernel copy = clCreateKernel(p, "copy", &e);
      EXPECT_EQ(clSetKernelArg(step, 0, sizeof a, &a), CL_SUCCESS);
      EXPECT_EQ(clSetKernelArg(copy, 0, sizeof a, &a), CL_SUCCESS);
      EXPECT_EQ(clSetKernelArg(copy, 1, sizeof b, &b), CL_SUCCESS);
      cl_command_queue other = clCreateCommandQueue(s.context, s.device, 0, &e);
      const std::size_t global = n;
      std::vector<cl_uint> out;
      const auto read = [&](cl_command_queue q, cl_mem m) {
        std::vector<cl_uint> r(n);
        EXPECT_EQ(clEnqueueReadBuffer(q, m, CL_TRUE, 0, n * 4, r.data(), 0, nullptr, nullptr),
                  CL_SUCCESS);
        out.insert(out.end(), r.begin(), r.end());
      };
      const auto run = [&](int launches) {
        for (int i = 0; i < launches; ++i) {
          EXPECT_EQ(clEnqueueNDRangeKernel(s.queue, step, 1, nullptr, &global, nullptr, 0, nullptr,
                                           nullptr),
                    CL_SUCCESS);
        }
      };
      run(what == 8 ? 20 : 40);
      switch (what) {
        case 0:
          read(s.queue, a);
          break;
        case 1:
          EXPECT_EQ(clEnqueueNDRangeKernel(s.queue, copy, 1, nullptr, &global, nullptr, 0, nullptr,
                                           nullptr),
                    CL_SUCCESS);
          read(s.queue, b);
          break;
        case 2: {
          cl_event marker = nullptr;
          EXPECT_EQ(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker), CL_SUCCESS);
          EXPECT_EQ(clWaitForEvents(1, &marker), CL_SUCCESS);
          clReleaseEvent(marker);
          break;
        }
        case 3:
          EXPECT_EQ(clFinish(s.queue), CL_SUCCESS);
          break;
        case 4: {
          const std::vector<cl_uint> w(16, 99u);
          EXPECT_EQ(
              clEnqueueWriteBuffer(s.queue, a, CL_FALSE, 64, 64, w.data(), 0, nullptr, nullptr),
              CL_SUCCESS);
          EXPECT_EQ(clFinish(s.queue), CL_SUCCESS);
          break;
        }
        case 5:
          EXPECT_EQ(clEnqueueNDRangeKernel(other, copy, 1, nullptr, &global, nullptr, 0, nullptr,
                                           nullptr),
                    CL_SUCCESS);
          read(other, b);
          break;
        case 6: {
          auto* mapped = static_cast<cl_uint*>(clEnqueueMapBuffer(other, a, CL_TRUE, CL_MAP_READ, 0,
                                                                  n * 4, 0, nullptr, nullptr, &e));
          EXPECT_EQ(e, CL_SUCCESS);
          if (mapped != nullptr) out.insert(out.end(), mapped, mapped + n);
          EXPECT_EQ(clEnqueueUnmapMemObject(other, a, mapped, 0, nullptr, nullptr), CL_SUCCESS);
          EXPECT_EQ(clFinish(other), CL_SUCCESS);
          break;
        }
        case 7: {
          cl_event ev = nullptr;
          EXPECT_EQ(
              clEnqueueNDRangeKernel(s.queue, step, 1, nullptr, &global, nullptr, 0, nullptr, &ev),
              CL_SUCCESS);
          EXPECT_EQ(clWaitForEvents(1, &ev), CL_SUCCESS);
          clReleaseEvent(ev);
          break;
        }
        case 8:
          // Released with launches of it still queued, then another kernel of the same name.
          clReleaseKernel(step);
          step = clCreateKernel(p, "advance", &e);
          EXPECT_EQ(clSetKernelArg(step, 0, sizeof a, &a), CL_SUCCESS);
          run(20);
          break;
        default:
          break;
      }
      read(s.queue, a);
      read(s.queue, b);
      clReleaseCommandQueue(other);
      clReleaseKernel(step);
      clReleaseKernel(copy);
      clReleaseMemObject(a);
      clReleaseMemObject(b);
      clReleaseProgram(p);
      return out;
    };
    // The oracle: the same steps on the host.
    constexpr int n = 1024;
    std::vector<cl_uint> a(n), b(n), expected;
    std::iota(a.begin(), a.end(), 7u);
    std::iota(b.begin(), b.end(), 7u);
    const auto run = [&](int launches) {
      for (int l = 0; l < launches; ++l) {
        for (cl_uint& x : a) {
          for (int k = 0; k < 200; ++k) x = x * 1103515245u + 12345u;
          x += 1u;
        }
      }
    };
    const auto copy = [&] {
      for (int i = 0; i < n; ++i) b[i] = a[i] ^ 0x5a5au;
    };
    run(what == 8 ? 20 : 40);
    if (what == 0) expected.insert(expected.end(), a.begin(), a.end());
    if (what == 1 || what == 5) {
      copy();
      expected.insert(expected.end(), b.begin(), b.end());
    }
    if (what == 4) std::fill(a.begin() + 16, a.begin() + 32, 99u);
    if (what == 6) expected.insert(expected.end(), a.begin(), a.end());
    if (what == 7) run(1);
    if (what == 8) run(20);
    expected.insert(expected.end(), a.begin(), a.end());
    expected.insert(expected.end(), b.begin(), b.end());
    OnePlatform unimem(unimem_);
    const std::vector<cl_uint> actual = f(unimem);
    ASSERT_EQ(actual.size(), expected.size());
    int mismatches = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
      if (actual[i] != expected[i] && ++mismatches <= 4) {
        ADD_FAILURE() << "result " << i << ": unimem platform " << actual[i] << ", host "
                      << expected[i];
      }
    }
  }
  EXPECT_GT(platform_lean_launches() - lean_before, 30u * kCases)
      << "the runs did not take the lean repeat";
}

// clFinish and a marker waited for return only once the run of launches before them has run:
// the read after them finds nothing left to wait for (20 launches of about 5 ms of work each
// before, one small copy after; a wait that did not cover the run leaves it to the read).
TEST_F(PlatformApi, FinishAndAMarkerWaitForARunOfOneLaunch) {
  OnePlatform s(unimem_);
  cl_int e = CL_SUCCESS;
  const char* source =
      "__kernel void spin(__global uint* v) {\n"
      "  uint x = v[get_global_id(0)];\n"
      "  for (uint k = 0; k < (1u << 15); ++k) x = x * 1103515245u + 12345u;\n"
      "  v[get_global_id(0)] = x; }\n";
  cl_program p = s.build(source, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  std::vector<cl_uint> init(256, 1u);
  cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, 4 * init.size(), init.data(), &e);
  cl_kernel k = clCreateKernel(p, "spin", &e);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof a, &a), CL_SUCCESS);
  // About 10 ms of work per launch on this machine's cores.
  const std::size_t global = init.size();
  const std::uint64_t lean_before = platform_lean_launches();
  using Clock = std::chrono::steady_clock;
  // Round 0 is not timed: a kernel's first launches go the full way and the queue keeps their
  // events; waiting for those covers everything before on the device (see the marker above).
  for (int round = 0; round < 3; ++round) {
    const int how = round == 2 ? 1 : 0;
    SCOPED_TRACE(how == 0 ? "clFinish" : "marker");
    // A few launches first, waited for: the launches after any other operation start with full
    // ones, whose events the queue keeps (a wait for those would cover the run by itself: their
    // events are markers on the device's in-order queue, made when asked).
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(
          clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
          CL_SUCCESS);
    }
    ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(
          clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
          CL_SUCCESS);
    }
    if (how == 0) {
      ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
    } else {
      cl_event marker = nullptr;
      ASSERT_EQ(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker), CL_SUCCESS);
      ASSERT_EQ(clWaitForEvents(1, &marker), CL_SUCCESS);
      cl_int status = 0;
      EXPECT_EQ(clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                               nullptr),
                CL_SUCCESS);
      EXPECT_EQ(status, CL_COMPLETE);
      clReleaseEvent(marker);
    }
    const Clock::time_point waited = Clock::now();
    cl_uint r[4] = {};
    ASSERT_EQ(clEnqueueReadBuffer(s.queue, a, CL_TRUE, 0, sizeof r, r, 0, nullptr, nullptr),
              CL_SUCCESS);
    const Clock::time_point read = Clock::now();
    // The run took its time before the wait returned, the read almost none after it.
    if (round == 0) continue;
    EXPECT_LT(read - waited, (waited - start) / 4)
        << "wait " << std::chrono::duration<double, std::milli>(waited - start).count()
        << " ms, read after it " << std::chrono::duration<double, std::milli>(read - waited).count()
        << " ms";
  }
  EXPECT_GE(platform_lean_launches() - lean_before, 60u) << "the runs did not take the lean repeat";
  clReleaseKernel(k);
  clReleaseMemObject(a);
  clReleaseProgram(p);
}

// An enqueue remembers the last queue and kernel it found live on its thread (are_live) until any
// object is released: a kernel or queue released after many launches is still refused. The
// released handles go to the platform's entry point directly (through the ICD loader they would
// be read for their dispatch table; POCL cannot be compared: a released handle is undefined
// there).
TEST_F(PlatformApi, ALaunchOnAReleasedKernelOrQueueIsRefused) {
  OnePlatform s(unimem_);
  const auto* dispatch = *reinterpret_cast<const cl_icd_dispatch* const*>(s.context);
  const auto enqueue = dispatch->clEnqueueNDRangeKernel;
  cl_int e = CL_SUCCESS;
  const char* source = "__kernel void add_one(__global int* v) { v[get_global_id(0)] += 1; }";
  cl_program p = s.build(source, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  constexpr int n = 64;
  std::vector<int> host(n, 0);
  cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_command_queue q = clCreateCommandQueue(s.context, s.device, 0, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_kernel k = clCreateKernel(p, "add_one", &e);
  cl_kernel other = clCreateKernel(p, "add_one", &e);
  ASSERT_EQ(clSetKernelArg(k, 0, sizeof a, &a), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(other, 0, sizeof a, &a), CL_SUCCESS);
  const std::size_t global = n;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(enqueue(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
  }
  EXPECT_EQ(clFinish(s.queue), CL_SUCCESS);
  EXPECT_EQ(clReleaseKernel(k), CL_SUCCESS);
  EXPECT_EQ(enqueue(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_INVALID_KERNEL);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(enqueue(q, other, 1, nullptr, &global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
  }
  EXPECT_EQ(clFinish(q), CL_SUCCESS);
  EXPECT_EQ(clReleaseCommandQueue(q), CL_SUCCESS);
  EXPECT_EQ(enqueue(q, other, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
            CL_INVALID_COMMAND_QUEUE);
  // The live pair still launches; every launch ran.
  EXPECT_EQ(enqueue(s.queue, other, 1, nullptr, &global, nullptr, 0, nullptr, nullptr), CL_SUCCESS);
  std::vector<int> r(n);
  ASSERT_EQ(clEnqueueReadBuffer(s.queue, a, CL_TRUE, 0, n * 4, r.data(), 0, nullptr, nullptr),
            CL_SUCCESS);
  EXPECT_EQ(r[0], 41);
  EXPECT_EQ(r[n - 1], 41);
  clReleaseKernel(other);
  clReleaseMemObject(a);
  clReleaseProgram(p);
}

// clSetKernelArg with a NULL buffer and with a sub-buffer at an offset (the kernel indexes from
// the sub-buffer's origin); the unimem aggregate device splits both launches.
TEST_F(PlatformApi, NullAndSubBufferArgumentsGiveTheSameResults) {
  same([](OnePlatform& s) {
    std::vector<float> out;
    cl_int e = CL_SUCCESS;
    cl_program p = s.build(kKernels, &e);
    out.push_back(static_cast<float>(e));
    constexpr int n = 4096;
    std::vector<float> host(n), bias(n);
    for (int i = 0; i < n; ++i) {
      host[i] = static_cast<float>(i % 101);
      bias[i] = static_cast<float>(i % 7) * 0.25f;
    }
    cl_mem data = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
    cl_mem b = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, bias.data(), &e);
    cl_kernel k = clCreateKernel(p, "add_bias", &e);
    const cl_mem none = nullptr;
    out.push_back(static_cast<float>(clSetKernelArg(k, 0, sizeof data, &data)));
    out.push_back(static_cast<float>(clSetKernelArg(k, 1, sizeof none, &none)));
    const std::size_t global = n, half = n / 2;
    out.push_back(static_cast<float>(
        clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr)));
    out.push_back(static_cast<float>(clSetKernelArg(k, 1, sizeof(cl_mem), nullptr)));
    out.push_back(static_cast<float>(
        clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr)));
    // The upper half of data through a sub-buffer, biased by the lower half of b's sub-buffer.
    const cl_buffer_region upper{half * 4, half * 4}, lower{1024, half * 4};
    cl_mem data_upper =
        clCreateSubBuffer(data, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &upper, &e);
    out.push_back(static_cast<float>(e));
    cl_mem b_lower =
        clCreateSubBuffer(b, CL_MEM_READ_ONLY, CL_BUFFER_CREATE_TYPE_REGION, &lower, &e);
    out.push_back(static_cast<float>(e));
    clSetKernelArg(k, 0, sizeof data_upper, &data_upper);
    clSetKernelArg(k, 1, sizeof b_lower, &b_lower);
    out.push_back(static_cast<float>(
        clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &half, nullptr, 0, nullptr, nullptr)));
    std::vector<float> r(n);
    clEnqueueReadBuffer(s.queue, data, CL_TRUE, 0, n * 4, r.data(), 0, nullptr, nullptr);
    out.insert(out.end(), r.begin(), r.end());
    clReleaseKernel(k);
    for (cl_mem m : {data_upper, b_lower, data, b}) clReleaseMemObject(m);
    clReleaseProgram(p);
    return out;
  });
}

TEST_F(PlatformApi, UserEventsHoldBackCommandsUntilTheyAreSet) {
  same([](OnePlatform& s) {
    std::vector<int> out;
    cl_int e = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(s.context, &e);
    cl_mem b = clCreateBuffer(s.context, CL_MEM_READ_WRITE, 16, nullptr, &e);
    int values[4] = {1, 2, 3, 4};
    int result[4] = {};
    cl_event write = nullptr;
    out.push_back(clEnqueueWriteBuffer(s.queue, b, CL_FALSE, 0, 16, values, 1, &gate, &write));
    cl_event read = nullptr;
    out.push_back(clEnqueueReadBuffer(s.queue, b, CL_FALSE, 0, 16, result, 1, &write, &read));
    cl_int status = 0;
    clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    out.push_back(status == CL_COMPLETE ? 1 : 0);  // cannot have run yet
    static std::atomic<int> called{0};
    called = 0;
    clSetEventCallback(
        read, CL_COMPLETE, [](cl_event, cl_int, void*) { ++called; }, nullptr);
    out.push_back(clSetUserEventStatus(gate, CL_COMPLETE));
    out.push_back(clSetUserEventStatus(gate, CL_COMPLETE));  // only once
    out.push_back(clWaitForEvents(1, &read));
    out.insert(out.end(), result, result + 4);
    cl_event marker = nullptr;
    out.push_back(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker));
    out.push_back(clEnqueueBarrierWithWaitList(s.queue, 1, &marker, nullptr));
    out.push_back(clFinish(s.queue));
    for (int i = 0; i < 1000 && called.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    out.push_back(called.load());
    // A failed user event: the command that waits for it does not run.
    cl_event failing = clCreateUserEvent(s.context, &e);
    cl_event never = nullptr;
    int untouched[4] = {7, 7, 7, 7};
    clEnqueueReadBuffer(s.queue, b, CL_FALSE, 0, 16, untouched, 1, &failing, &never);
    clSetUserEventStatus(failing, -1);
    out.push_back(clWaitForEvents(1, &never));
    out.insert(out.end(), untouched, untouched + 4);
    for (cl_event ev : {gate, write, read, marker, failing, never}) clReleaseEvent(ev);
    clReleaseMemObject(b);
    return out;
  });
}

// Separate compilation: three sources compiled on their own, headers handed over as programs
// (input_headers, one of them including the other by its header name), linked into one program.
// A kernel of one source calls a function defined in another; a -D option of one compile stays
// with its source.
const char* kMathHeader = R"(#ifndef MATH_HELPERS_H
#define MATH_HELPERS_H
#include "lib/consts.h"
float affine(float x, float a, float b);
int twice(int x);
#endif
)";
const char* kConstsHeader = "#define FACTOR 2.5f\n#define OFFSET 3\n";
const char* kSourceA = R"(#include "lib/math_helpers.h"
#define PRIVATE_TO_A 1
float affine(float x, float a, float b) { return a * x + b; }
int twice(int x) { return 2 * x; }
__kernel void scale_a(__global float* v) {
  const size_t i = get_global_id(0);
  v[i] = affine(v[i], FACTOR, (float)i);
}
)";
const char* kSourceB = R"(#include <lib/math_helpers.h>
__kernel void twice_b(__global int* v) {
  const size_t i = get_global_id(0);
  v[i] = twice(v[i]) + OFFSET;
}
)";
const char* kSourceC = R"(__kernel void bias_c(__global int* v) {
  const size_t i = get_global_id(0);
#ifdef PRIVATE_TO_A
  v[i] = -1;  /* a macro of another source must not reach this one */
#else
  v[i] += BIAS;
#endif
}
)";

cl_program from_source(OnePlatform& s, const char* source) {
  cl_int e = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(s.context, 1, &source, nullptr, &e);
  EXPECT_EQ(e, CL_SUCCESS);
  return p;
}

TEST_F(PlatformApi, SeparatelyCompiledSourcesLinkIntoOneProgram) {
  same([](OnePlatform& s) {
    std::vector<float> out;
    cl_int e = CL_SUCCESS;
    cl_program math = from_source(s, kMathHeader);
    cl_program consts = from_source(s, kConstsHeader);
    const cl_program headers[] = {math, consts};
    const char* names[] = {"lib/math_helpers.h", "lib/consts.h"};
    cl_program a = from_source(s, kSourceA);
    cl_program b = from_source(s, kSourceB);
    cl_program c = from_source(s, kSourceC);
    out.push_back(static_cast<float>(
        clCompileProgram(a, 1, &s.device, "", 2, headers, names, nullptr, nullptr)));
    out.push_back(static_cast<float>(
        clCompileProgram(b, 1, &s.device, "", 2, headers, names, nullptr, nullptr)));
    out.push_back(static_cast<float>(
        clCompileProgram(c, 1, &s.device, "-DBIAS=7", 0, nullptr, nullptr, nullptr, nullptr)));
    cl_program_binary_type type = 0;
    clGetProgramBuildInfo(a, s.device, CL_PROGRAM_BINARY_TYPE, sizeof type, &type, nullptr);
    out.push_back(static_cast<float>(type));
    cl_build_status status = CL_BUILD_NONE;
    clGetProgramBuildInfo(b, s.device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr);
    out.push_back(static_cast<float>(status));
    const cl_program inputs[] = {a, b, c};
    cl_program linked = clLinkProgram(s.context, 1, &s.device, "", 3, inputs, nullptr, nullptr, &e);
    out.push_back(static_cast<float>(e));
    clGetProgramBuildInfo(linked, s.device, CL_PROGRAM_BINARY_TYPE, sizeof type, &type, nullptr);
    out.push_back(static_cast<float>(type));
    std::size_t kernels = 0;
    clGetProgramInfo(linked, CL_PROGRAM_NUM_KERNELS, sizeof kernels, &kernels, nullptr);
    out.push_back(static_cast<float>(kernels));
    constexpr int n = 2048;
    std::vector<float> floats(n);
    std::vector<int> ints(n);
    for (int i = 0; i < n; ++i) {
      floats[i] = static_cast<float>(i % 13) - 4.0f;
      ints[i] = i * 3 - 1000;
    }
    cl_mem fv = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, floats.data(), &e);
    cl_mem iv = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, ints.data(), &e);
    const std::size_t global = n, local = 64;
    for (const char* name : {"scale_a", "twice_b", "bias_c"}) {
      cl_kernel k = clCreateKernel(linked, name, &e);
      out.push_back(static_cast<float>(e));
      cl_mem arg = name[0] == 's' ? fv : iv;
      clSetKernelArg(k, 0, sizeof arg, &arg);
      out.push_back(static_cast<float>(
          clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr)));
      clReleaseKernel(k);
    }
    clEnqueueReadBuffer(s.queue, fv, CL_TRUE, 0, n * 4, floats.data(), 0, nullptr, nullptr);
    clEnqueueReadBuffer(s.queue, iv, CL_TRUE, 0, n * 4, ints.data(), 0, nullptr, nullptr);
    out.insert(out.end(), floats.begin(), floats.end());
    for (int v : ints) out.push_back(static_cast<float>(v));
    for (cl_mem m : {fv, iv}) clReleaseMemObject(m);
    for (cl_program p : {linked, a, b, c, math, consts}) clReleaseProgram(p);
    return out;
  });
}

TEST_F(PlatformApi, CompileAndLinkRefuseBadInputsWithTheSameCodes) {
  same([](OnePlatform& s) {
    std::vector<int> codes;
    cl_int e = CL_SUCCESS;
    cl_program header = from_source(s, kConstsHeader);
    const char* name = "lib/consts.h";
    cl_program a = from_source(s, kSourceA);
    cl_program b = from_source(s, kSourceB);
    // (Header lists that do not match their count crash POCL 3.1: checked on unimem below.)
    codes.push_back(
        clCompileProgram(nullptr, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
    codes.push_back(
        clCompileProgram(a, 0, nullptr, "-not-an-option", 1, &header, &name, nullptr, nullptr));
    // A header the source includes is missing: the compile fails with a log.
    codes.push_back(clCompileProgram(a, 0, nullptr, "", 1, &header, &name, nullptr, nullptr));
    std::size_t log_size = 0;
    clGetProgramBuildInfo(a, s.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
    codes.push_back(log_size > 1 ? 1 : 0);
    cl_build_status status = CL_BUILD_NONE;
    clGetProgramBuildInfo(a, s.device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, nullptr);
    codes.push_back(status);
    cl_program broken = from_source(s, "__kernel void k(__global int* p) { p[0] = nothing; }");
    codes.push_back(
        clCompileProgram(broken, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr));
    // Link: no inputs, a bad context, a NULL input, inputs that are not compiled.
    (void)clLinkProgram(s.context, 0, nullptr, "", 0, nullptr, nullptr, nullptr, &e);
    codes.push_back(e);
    (void)clLinkProgram(s.context, 0, nullptr, "", 1, nullptr, nullptr, nullptr, &e);
    codes.push_back(e);
    (void)clLinkProgram(nullptr, 0, nullptr, "", 1, &b, nullptr, nullptr, &e);
    codes.push_back(e);
    cl_program fresh = from_source(s, kSourceB);
    (void)clLinkProgram(s.context, 0, nullptr, "", 1, &fresh, nullptr, nullptr, &e);
    codes.push_back(e);
    codes.push_back(clBuildProgram(fresh, 0, nullptr, "", nullptr, nullptr));
    (void)clLinkProgram(s.context, 0, nullptr, "", 1, &fresh, nullptr, nullptr, &e);  // built
    codes.push_back(e);
    // Compiled, but with a call nobody defines, or a function defined twice.
    cl_program math = from_source(s, kMathHeader);
    const cl_program headers[] = {math, header};
    const char* names[] = {"lib/math_helpers.h", "lib/consts.h"};
    codes.push_back(clCompileProgram(b, 0, nullptr, "", 2, headers, names, nullptr, nullptr));
    cl_program undefined = clLinkProgram(s.context, 0, nullptr, "", 1, &b, nullptr, nullptr, &e);
    codes.push_back(e);
    if (undefined != nullptr) clReleaseProgram(undefined);  // POCL: none; unimem: with its log
    codes.push_back(clCompileProgram(a, 0, nullptr, "", 2, headers, names, nullptr, nullptr));
    const cl_program twice_defined[] = {a, a};
    cl_program dup =
        clLinkProgram(s.context, 0, nullptr, "", 2, twice_defined, nullptr, nullptr, &e);
    codes.push_back(e);
    if (dup != nullptr) clReleaseProgram(dup);
    cl_program bad_options =
        clLinkProgram(s.context, 0, nullptr, "-not-an-option", 1, &a, nullptr, nullptr, &e);
    codes.push_back(e);
    if (bad_options != nullptr) clReleaseProgram(bad_options);
    for (cl_program p : {header, a, b, broken, fresh, math}) clReleaseProgram(p);
    return codes;
  });
}

// What POCL 3.1 crashes on or answers against the spec, checked on unimem alone (OpenCL 1.2,
// clCompileProgram / clLinkProgram / clCreateKernel errors).
TEST_F(PlatformApi, CompileAndLinkFollowTheSpecWherePoclCannotBeCompared) {
  OnePlatform s(unimem_);
  cl_int e = CL_SUCCESS;
  cl_program header = from_source(s, kConstsHeader);
  cl_program math = from_source(s, kMathHeader);
  const char* name = "lib/consts.h";
  cl_program a = from_source(s, kSourceA);
  EXPECT_EQ(clCompileProgram(a, 0, nullptr, "", 1, nullptr, &name, nullptr, nullptr),
            CL_INVALID_VALUE);
  EXPECT_EQ(clCompileProgram(a, 0, nullptr, "", 1, &header, nullptr, nullptr, nullptr),
            CL_INVALID_VALUE);
  EXPECT_EQ(clCompileProgram(a, 0, nullptr, "", 0, &header, &name, nullptr, nullptr),
            CL_INVALID_VALUE);
  const cl_program no_header = nullptr;
  EXPECT_EQ(clCompileProgram(a, 0, nullptr, "", 1, &no_header, &name, nullptr, nullptr),
            CL_INVALID_PROGRAM);
  const char* outside = "../escape.h";
  EXPECT_EQ(clCompileProgram(a, 0, nullptr, "", 1, &header, &outside, nullptr, nullptr),
            CL_COMPILE_PROGRAM_FAILURE);
  std::size_t log_size = 0;
  clGetProgramBuildInfo(a, s.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
  std::string log(log_size, '\0');
  clGetProgramBuildInfo(a, s.device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
  EXPECT_NE(log.find("../escape.h"), std::string::npos) << log;
  const cl_program null_input = nullptr;
  (void)clLinkProgram(s.context, 0, nullptr, "", 1, &null_input, nullptr, nullptr, &e);
  EXPECT_EQ(e, CL_INVALID_PROGRAM);
  cl_program broken = from_source(s, "__kernel void k(__global int* p) { p[0] = nothing; }");
  EXPECT_EQ(clCompileProgram(broken, 0, nullptr, "", 0, nullptr, nullptr, nullptr, nullptr),
            CL_COMPILE_PROGRAM_FAILURE);
  (void)clLinkProgram(s.context, 0, nullptr, "", 1, &broken, nullptr, nullptr, &e);
  EXPECT_EQ(e, CL_INVALID_OPERATION) << "an input whose compile failed";
  const cl_program headers[] = {math, header};
  const char* names[] = {"lib/math_helpers.h", "lib/consts.h"};
  ASSERT_EQ(clCompileProgram(a, 0, nullptr, "", 2, headers, names, nullptr, nullptr), CL_SUCCESS);
  (void)clLinkProgram(s.context, 0, nullptr, "-create-library", 1, &a, nullptr, nullptr, &e);
  EXPECT_EQ(e, CL_INVALID_LINKER_OPTIONS) << "libraries are not supported";
  (void)clCreateKernel(a, "scale_a", &e);  // POCL: CL_INVALID_KERNEL_NAME
  EXPECT_EQ(e, CL_INVALID_PROGRAM_EXECUTABLE) << "a compiled object is not an executable";
  for (cl_program p : {header, math, a, broken}) clReleaseProgram(p);
}

// Profiling on the unimem platform: a kernel's START and END are its devices' own times placed on
// the host clock, not the host's view of submission and completion. A split kernel and a task
// that reads all it wrote are queued at once; the task must wait for every partition, so with
// device times it starts when the first has ended, though the host accepted both at once.
TEST_F(PlatformApi, KernelProfilingTimesComeFromTheDevices) {
  OnePlatform s(unimem_);
  cl_int e = CL_SUCCESS;
  const char* source = R"(__kernel void busy(__global float* v, int rounds) {
    const size_t i = get_global_id(0);
    float x = v[i];
    for (int r = 0; r < rounds; ++r) x = x * 0.999f + 0.5f;
    v[i] = x;
  }
  __kernel void total(__global const float* v, __global float* out, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += v[i];
    out[0] = sum;
  })";
  cl_program p = s.build(source, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_kernel k = clCreateKernel(p, "busy", &e);
  cl_kernel total = clCreateKernel(p, "total", &e);
  constexpr int n = 1 << 14;
  std::vector<float> host(n, 1.0f);
  cl_mem v = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_mem out = clCreateBuffer(s.context, CL_MEM_READ_WRITE, 4, nullptr, &e);
  const int rounds = 4000;
  clSetKernelArg(k, 0, sizeof v, &v);
  clSetKernelArg(k, 1, sizeof rounds, &rounds);
  clSetKernelArg(total, 0, sizeof v, &v);
  clSetKernelArg(total, 1, sizeof out, &out);
  clSetKernelArg(total, 2, sizeof n, &n);
  ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
  const std::size_t global = n, local = 64;
  const auto host_now = [] {
    return static_cast<cl_ulong>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  };
  const cl_ulong before = host_now();
  cl_event first = nullptr, second = nullptr;
  ASSERT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, &first),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueTask(s.queue, total, 0, nullptr, &second), CL_SUCCESS);
  ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
  const cl_ulong after = host_now();
  struct Times {
    cl_ulong queued = 0, submit = 0, start = 0, end = 0;
  };
  const auto times_of = [](cl_event ev) {
    Times t;
    EXPECT_EQ(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof t.queued, &t.queued,
                                      nullptr),
              CL_SUCCESS);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_SUBMIT, sizeof t.submit, &t.submit, nullptr);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t.start, &t.start, nullptr);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t.end, &t.end, nullptr);
    return t;
  };
  const Times a = times_of(first);
  const Times b = times_of(second);
  for (const Times& t : {a, b}) {
    EXPECT_LE(before, t.queued);
    EXPECT_LE(t.queued, t.submit);
    EXPECT_LE(t.submit, t.start);
    EXPECT_LT(t.start, t.end);
    EXPECT_LE(t.end, after);
  }
  // Asked again, an event answers the same.
  const Times again = times_of(second);
  EXPECT_EQ(again.start, b.start);
  EXPECT_EQ(again.end, b.end);
  // (Slack for the device clocks' placement: a tenth of the first kernel's time.)
  EXPECT_GE(b.start, a.start + (a.end - a.start) * 9 / 10)
      << "the task's START (" << (b.start - a.start) / 1000 << " us after the kernel's) is not "
      << "when it ran: the kernel ran " << (a.end - a.start) / 1000 << " us";
  std::printf("kernel %.3f ms, task %.3f ms, task started %.3f ms after the kernel\n",
              static_cast<double>(a.end - a.start) / 1e6,
              static_cast<double>(b.end - b.start) / 1e6,
              static_cast<double>(b.start - a.start) / 1e6);
  for (cl_event ev : {first, second}) clReleaseEvent(ev);
  for (cl_mem m : {v, out}) clReleaseMemObject(m);
  for (cl_kernel kk : {k, total}) clReleaseKernel(kk);
  clReleaseProgram(p);
}

// The devices profile only once a profiling queue exists (PlatformState::time_devices): one made
// while launches of a plain queue still run gets device times for its own commands (as above:
// the task's START comes after the kernel it waits for has run), and every launch of both queues
// runs, in their order, exactly once.
TEST_F(PlatformApi, AProfilingQueueMadeAfterLaunchesGetsDeviceTimes) {
  cl_device_id device = nullptr;
  ASSERT_EQ(clGetDeviceIDs(unimem_, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
  cl_int e = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_command_queue plain = clCreateCommandQueue(context, device, 0, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  const char* source = R"(__kernel void busy(__global uint* v, int rounds) {
    const size_t i = get_global_id(0);
    uint x = v[i];
    for (int r = 0; r < rounds; ++r) x = x * 3u + 1u;
    v[i] = x;
  }
  __kernel void total(__global const uint* v, __global uint* out, int n) {
    uint sum = 0;
    for (int i = 0; i < n; ++i) sum += v[i];
    out[0] = sum;
  })";
  cl_program p = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
  ASSERT_EQ(clBuildProgram(p, 1, &device, "", nullptr, nullptr), CL_SUCCESS);
  cl_kernel k = clCreateKernel(p, "busy", &e);
  cl_kernel total = clCreateKernel(p, "total", &e);
  constexpr int n = 1 << 14;
  std::vector<cl_uint> host(n);
  std::iota(host.begin(), host.end(), 0u);
  cl_mem v = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, n * 4, host.data(), &e);
  cl_mem out = clCreateBuffer(context, CL_MEM_READ_WRITE, 4, nullptr, &e);
  const int short_rounds = 10, rounds = 4000;
  clSetKernelArg(k, 0, sizeof v, &v);
  clSetKernelArg(k, 1, sizeof short_rounds, &short_rounds);
  clSetKernelArg(total, 0, sizeof v, &v);
  clSetKernelArg(total, 1, sizeof out, &out);
  clSetKernelArg(total, 2, sizeof n, &n);
  const std::size_t global = n, local = 64;
  constexpr int kPlainLaunches = 200;  // repeats: the eventless streak
  for (int i = 0; i < kPlainLaunches; ++i) {
    ASSERT_EQ(clEnqueueNDRangeKernel(plain, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
              CL_SUCCESS);
  }
  cl_event plain_done = nullptr;
  ASSERT_EQ(clEnqueueMarkerWithWaitList(plain, 0, nullptr, &plain_done), CL_SUCCESS);
  cl_command_queue profiled = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  clSetKernelArg(k, 1, sizeof rounds, &rounds);
  cl_event first = nullptr, second = nullptr;
  ASSERT_EQ(
      clEnqueueNDRangeKernel(profiled, k, 1, nullptr, &global, &local, 1, &plain_done, &first),
      CL_SUCCESS);
  ASSERT_EQ(clEnqueueTask(profiled, total, 0, nullptr, &second), CL_SUCCESS);
  ASSERT_EQ(clFinish(profiled), CL_SUCCESS);
  ASSERT_EQ(clFinish(plain), CL_SUCCESS);
  cl_uint sum = 0;
  ASSERT_EQ(clEnqueueReadBuffer(profiled, out, CL_TRUE, 0, 4, &sum, 0, nullptr, nullptr),
            CL_SUCCESS);
  std::vector<cl_uint> got(n);
  ASSERT_EQ(clEnqueueReadBuffer(profiled, v, CL_TRUE, 0, n * 4, got.data(), 0, nullptr, nullptr),
            CL_SUCCESS);
  cl_uint expected_sum = 0;
  for (int i = 0; i < n; ++i) {
    cl_uint x = host[static_cast<std::size_t>(i)];
    for (int r = 0; r < kPlainLaunches * short_rounds + rounds; ++r) x = x * 3u + 1u;
    ASSERT_EQ(got[static_cast<std::size_t>(i)], x) << "item " << i;
    expected_sum += x;
  }
  EXPECT_EQ(sum, expected_sum);
  const ProfiledTimes a = profiled_times(first), b = profiled_times(second);
  for (const ProfiledTimes& t : {a, b}) {
    EXPECT_LE(t.queued, t.submit);
    EXPECT_LE(t.submit, t.start);
    EXPECT_LT(t.start, t.end);
  }
  // With host times the task's START would be when the runtime accepted it, at once.
  EXPECT_GE(b.start, a.start + (a.end - a.start) * 9 / 10)
      << "the task's START (" << (b.start - a.start) / 1000 << " us after the kernel's) is not "
      << "when it ran: the kernel ran " << (a.end - a.start) / 1000 << " us";
  // A plain queue's event still has no times.
  EXPECT_EQ(clGetEventProfilingInfo(plain_done, CL_PROFILING_COMMAND_START, sizeof a.start, nullptr,
                                    nullptr),
            CL_PROFILING_INFO_NOT_AVAILABLE);
  for (cl_event ev : {plain_done, first, second}) clReleaseEvent(ev);
  for (cl_mem m : {v, out}) clReleaseMemObject(m);
  for (cl_kernel kk : {k, total}) clReleaseKernel(kk);
  clReleaseProgram(p);
  for (cl_command_queue q : {plain, profiled}) clReleaseCommandQueue(q);
  clReleaseContext(context);
}

// Reads, writes and copies on a profiling queue report START and END of the operations that did
// their work (profiling.hpp), not when the runtime accepted them. On one queue a large write, a
// kernel reading and writing that buffer, a device copy of it and a large read of it; on a second
// queue a small write and a read served from the home copy. The platform accepts each command at
// once (the programs are warm), but the host copies run one after another on the runtime's host
// worker, the kernel starts after the large write ended, and the device copy and the read (whose
// copies each follow their device's partition of the kernel) after the kernel started. With host
// times START would be SUBMIT: the four checks against the write's duration would fail.
TEST_F(PlatformApi, TransferProfilingTimesComeFromTheOperationsThatRan) {
  OnePlatform s(unimem_);
  cl_int e = CL_SUCCESS;
  cl_command_queue other = clCreateCommandQueue(s.context, s.device, CL_QUEUE_PROFILING_ENABLE, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  const char* source = R"(__kernel void busy(__global float* v, int rounds) {
    const size_t i = get_global_id(0);
    float x = v[i];
    for (int r = 0; r < rounds; ++r) x = x * 0.999f + 0.5f;
    v[i] = x;
  })";
  cl_program p = s.build(source, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_kernel k = clCreateKernel(p, "busy", &e);
  constexpr std::size_t n = std::size_t{1} << 23;  // 32 MiB of floats
  constexpr std::size_t small = 1024;
  std::vector<float> big(n, 1.0f), back(n), copied(n), tiny(small, 2.0f), tiny_back(small);
  cl_mem v = clCreateBuffer(s.context, CL_MEM_READ_WRITE, n * 4, nullptr, &e);
  cl_mem copy = clCreateBuffer(s.context, CL_MEM_READ_WRITE, n * 4, nullptr, &e);
  cl_mem w = clCreateBuffer(s.context, CL_MEM_READ_WRITE, small * 4, nullptr, &e);
  const int rounds = 8;
  clSetKernelArg(k, 0, sizeof v, &v);
  clSetKernelArg(k, 1, sizeof rounds, &rounds);
  const std::size_t global = n, local = 64;
  // Warm-up: builds, plans and device allocations are made now, not inside the timed commands.
  ASSERT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueCopyBuffer(s.queue, v, copy, 0, 0, n * 4, 0, nullptr, nullptr), CL_SUCCESS);
  ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
  const cl_ulong before = host_now();
  cl_event write_big = nullptr, write_small = nullptr, read_small = nullptr, kernel = nullptr,
           device_copy = nullptr, read_big = nullptr;
  ASSERT_EQ(
      clEnqueueWriteBuffer(s.queue, v, CL_FALSE, 0, n * 4, big.data(), 0, nullptr, &write_big),
      CL_SUCCESS);
  ASSERT_EQ(
      clEnqueueWriteBuffer(other, w, CL_FALSE, 0, small * 4, tiny.data(), 0, nullptr, &write_small),
      CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(other, w, CL_FALSE, 0, small * 4, tiny_back.data(), 0, nullptr,
                                &read_small),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueNDRangeKernel(s.queue, k, 1, nullptr, &global, &local, 0, nullptr, &kernel),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueCopyBuffer(s.queue, v, copy, 0, 0, n * 4, 0, nullptr, &device_copy),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(s.queue, v, CL_FALSE, 0, n * 4, back.data(), 0, nullptr, &read_big),
            CL_SUCCESS);
  ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
  ASSERT_EQ(clFinish(other), CL_SUCCESS);
  const cl_ulong after = host_now();
  ASSERT_EQ(
      clEnqueueReadBuffer(s.queue, copy, CL_TRUE, 0, n * 4, copied.data(), 0, nullptr, nullptr),
      CL_SUCCESS);
  EXPECT_EQ(tiny_back, tiny);
  EXPECT_EQ(copied, back);
  EXPECT_NE(back[0], 1.0f) << "the kernel did not run";
  const ProfiledTimes wb = profiled_times(write_big), ws = profiled_times(write_small),
                      rs = profiled_times(read_small), kt = profiled_times(kernel),
                      ct = profiled_times(device_copy), rb = profiled_times(read_big);
  for (const ProfiledTimes& t : {wb, ws, rs, kt, ct, rb}) {
    EXPECT_LE(before, t.queued);
    EXPECT_LE(t.queued, t.submit);
    EXPECT_LE(t.submit, t.start);
    EXPECT_LE(t.start, t.end);
    EXPECT_LE(t.end, after + kDevicePlacementSlack);
  }
  EXPECT_EQ(profiled_times(read_big), rb) << "asked again, an event answers the same";
  const auto us = [&](cl_ulong t) {
    return static_cast<double>(static_cast<std::int64_t>(t - wb.queued)) / 1e3;
  };
  std::printf(
      "us from the first QUEUED (SUBMIT / START-END): write 32 MiB %.0f / %.0f-%.0f, write 4 KiB "
      "%.0f / %.0f-%.0f, home read 4 KiB %.0f / %.0f-%.0f, kernel %.0f / %.0f-%.0f, device copy "
      "%.0f / %.0f-%.0f, read 32 MiB %.0f / %.0f-%.0f\n",
      us(wb.submit), us(wb.start), us(wb.end), us(ws.submit), us(ws.start), us(ws.end),
      us(rs.submit), us(rs.start), us(rs.end), us(kt.submit), us(kt.start), us(kt.end),
      us(ct.submit), us(ct.start), us(ct.end), us(rb.submit), us(rb.start), us(rb.end));
  // The host worker runs the host copies in order (one clock: no slack).
  EXPECT_GE(ws.start, wb.end) << "the small write's START is not when its host copy ran";
  EXPECT_GE(rs.start, ws.end) << "the home read's START is not when its host copy ran";
  // Device times are placed on the host clock within bounds: a tenth of the kernel's time slack.
  const cl_ulong slack = (kt.end - kt.start) / 10;
  // Each started after the large write's host copy ended, however late the platform accepted it.
  // With host times (START = SUBMIT) this fails for every command accepted before that copy
  // ended, which is all four unless the calling thread was descheduled for the whole copy (the
  // earlier form, START - SUBMIT >= half the copy, failed then: a late SUBMIT under heavy load).
  int accepted_early = 0;
  for (const auto& [t, what, on_device] :
       {std::tuple{ws, "small write", false}, std::tuple{rs, "home read", false},
        std::tuple{ct, "device copy", true}, std::tuple{rb, "read", true}}) {
    EXPECT_GE(t.start + (on_device ? slack : 0), wb.end)
        << what << ": START is before the large write it waited for ended";
    if (t.submit < wb.end) ++accepted_early;
  }
  std::printf("%d of 4 commands accepted before the large write ended\n", accepted_early);
  EXPECT_GE(kt.start + slack, wb.end) << "the kernel started before the write it reads ended";
  EXPECT_GE(ct.start + slack, kt.start) << "the device copy started before its kernel";
  EXPECT_GE(ct.end + slack, kt.end) << "the device copy ended before its kernel";
  EXPECT_GE(rb.start + slack, kt.start) << "the read started before the kernel it reads";
  EXPECT_GE(rb.end + slack, kt.end) << "the read ended before the kernel it reads";
  for (cl_event ev : {write_big, write_small, read_small, kernel, device_copy, read_big}) {
    clReleaseEvent(ev);
  }
  for (cl_mem m : {v, copy, w}) clReleaseMemObject(m);
  clReleaseKernel(k);
  clReleaseProgram(p);
  clReleaseCommandQueue(other);
}

// QUEUED <= SUBMIT <= START <= END, all between the first enqueue and the end of clFinish, and the
// same answers when asked again, over a random sequence of every kind of command (blocking or
// not), whether its times come from devices, from the host worker or from the platform.
TEST_F(PlatformApi, ProfilingTimesKeepTheirOrderOverManyRandomCommands) {
  std::uint32_t seed = std::random_device{}();
  if (const char* env = std::getenv("UNIMEM_TEST_SEED")) {
    seed = static_cast<std::uint32_t>(std::stoul(env));
  }
  SCOPED_TRACE("seed " + std::to_string(seed) + " (UNIMEM_TEST_SEED reproduces it)");
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  const auto pick = [&](std::size_t below) {
    return std::uniform_int_distribution<std::size_t>(0, below - 1)(rng);
  };
  OnePlatform s(unimem_);
  cl_int e = CL_SUCCESS;
  cl_program p = s.build(kKernels, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_kernel scale = clCreateKernel(p, "scale", &e);
  ASSERT_EQ(e, CL_SUCCESS);
  constexpr std::size_t side = 128;  // each buffer: 128 rows of 128 floats
  constexpr std::size_t floats = side * side, bytes = floats * 4;
  std::array<cl_mem, 3> buffers{};
  for (cl_mem& b : buffers) {
    b = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, nullptr, &e);
    ASSERT_EQ(e, CL_SUCCESS);
  }
  std::vector<std::vector<float>> host;  // host memory of the commands, alive until the end
  struct Command {
    cl_event event;
    int kind;
  };
  std::vector<Command> commands;
  const cl_ulong before = host_now();
  for (int i = 0; i < 160; ++i) {
    const int kind = static_cast<int>(pick(11));
    const std::size_t which = pick(buffers.size());
    cl_mem b = buffers[which];
    cl_mem other = buffers[(which + 1 + pick(buffers.size() - 1)) % buffers.size()];  // not b
    const cl_bool blocking = pick(4) == 0 ? CL_TRUE : CL_FALSE;
    const std::size_t first = pick(floats / 2), count = 1 + pick(floats / 2);
    auto& mem = host.emplace_back(floats, static_cast<float>(i));
    const size_t origin[3] = {4 * pick(side / 2), pick(side / 2), 0};
    const size_t region[3] = {4 * (1 + pick(side / 2)), 1 + pick(side / 2), 1};
    const size_t zero[3] = {0, 0, 0};
    cl_event ev = nullptr;
    cl_int r = CL_SUCCESS;
    switch (kind) {
      case 0:
        r = clEnqueueWriteBuffer(s.queue, b, blocking, first * 4, count * 4, mem.data(), 0, nullptr,
                                 &ev);
        break;
      case 1:
        r = clEnqueueReadBuffer(s.queue, b, blocking, first * 4, count * 4, mem.data(), 0, nullptr,
                                &ev);
        break;
      case 2:
        r = clEnqueueCopyBuffer(s.queue, b, other, first * 4, pick(floats / 2) * 4, count * 4, 0,
                                nullptr, &ev);
        break;
      case 3: {
        const float pattern[2] = {1.5f, static_cast<float>(i)};
        r = clEnqueueFillBuffer(s.queue, b, pattern, sizeof pattern, (first / 2) * 8,
                                ((count + 1) / 2) * 8, 0, nullptr, &ev);
        break;
      }
      case 4:
        r = clEnqueueWriteBufferRect(s.queue, b, blocking, origin, zero, region, side * 4, 0,
                                     side * 4, 0, mem.data(), 0, nullptr, &ev);
        break;
      case 5:
        r = clEnqueueReadBufferRect(s.queue, b, blocking, origin, zero, region, side * 4, 0,
                                    side * 4, 0, mem.data(), 0, nullptr, &ev);
        break;
      case 6:
        r = clEnqueueCopyBufferRect(s.queue, b, other, origin, zero, region, side * 4, 0, side * 4,
                                    0, 0, nullptr, &ev);
        break;
      case 7: {
        const cl_map_flags flags = pick(2) == 0 ? CL_MAP_READ : CL_MAP_WRITE_INVALIDATE_REGION;
        void* mapped = clEnqueueMapBuffer(s.queue, b, CL_TRUE, flags, first * 4, count * 4, 0,
                                          nullptr, &ev, &r);
        if (r == CL_SUCCESS) {
          if (flags != CL_MAP_READ) std::fill_n(static_cast<float*>(mapped), count, 3.0f);
          commands.push_back({ev, kind});
          r = clEnqueueUnmapMemObject(s.queue, b, mapped, 0, nullptr, &ev);
        }
        break;
      }
      case 8: {
        const float factor = 0.5f;
        const size_t global = floats, local = 64;
        clSetKernelArg(scale, 0, sizeof b, &b);
        clSetKernelArg(scale, 1, sizeof factor, &factor);
        r = clEnqueueNDRangeKernel(s.queue, scale, 1, nullptr, &global, &local, 0, nullptr, &ev);
        break;
      }
      case 9: {
        cl_event last = commands.empty() ? nullptr : commands.back().event;
        r = clEnqueueMarkerWithWaitList(s.queue, last ? 1 : 0, last ? &last : nullptr, &ev);
        break;
      }
      default:
        r = clEnqueueMigrateMemObjects(s.queue, 1, &b, 0, 0, nullptr, &ev);
        break;
    }
    ASSERT_EQ(r, CL_SUCCESS) << "command " << i << " of kind " << kind;
    commands.push_back({ev, kind});
  }
  ASSERT_EQ(clFinish(s.queue), CL_SUCCESS);
  const cl_ulong after = host_now();
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const ProfiledTimes t = profiled_times(commands[i].event);
    const std::string what =
        "event " + std::to_string(i) + " (kind " + std::to_string(commands[i].kind) + ")";
    EXPECT_LE(before, t.queued) << what;
    EXPECT_LE(t.queued, t.submit) << what;
    EXPECT_LE(t.submit, t.start) << what;
    EXPECT_LE(t.start, t.end) << what;
    EXPECT_LE(t.end, after + kDevicePlacementSlack) << what;
    EXPECT_EQ(profiled_times(commands[i].event), t) << what << ": asked again";
    clReleaseEvent(commands[i].event);
  }
  for (cl_mem m : buffers) clReleaseMemObject(m);
  clReleaseKernel(scale);
  clReleaseProgram(p);
}

// A kernel calling only get_group_id, launched with a global offset of its own (whole work-groups
// or not; 1-D and 2-D), reads the same group ids through the unimem platform as on POCL directly:
// OpenCL 1.2 section 6.12.1 gives get_group_id values 0 .. get_num_groups - 1 whatever the offset,
// which moves only get_global_id (as POCL does). Through the aggregate device each launch splits.
TEST_F(PlatformApi, GroupIdsUnderAGlobalOffsetMatchPoclAndSplit) {
  const char* source = R"(
__kernel void group_sums(__global const int* in, __global int* sums, __local int* scratch) {
  const size_t l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t k = 0; k < get_local_size(0); ++k) s += scratch[k];
    sums[get_group_id(0)] = s;
  }
}
__kernel void tile_ids(__global int* out, int width) {
  out[get_global_id(1) * width + get_global_id(0)] =
      (int)(get_group_id(0) + 1000 * get_group_id(1));
})";
  constexpr int groups = 64, local = 64, width = 64;
  const std::uint64_t split_before = platform_launch_counts().second;
  same([&](OnePlatform& s) {
    std::vector<int> out;
    cl_int e = CL_SUCCESS;
    cl_program p = s.build(source, &e);
    out.push_back(e);
    cl_kernel sums_kernel = clCreateKernel(p, "group_sums", &e);
    cl_kernel tiles = clCreateKernel(p, "tile_ids", &e);
    std::vector<int> in(groups * local);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 13) - 5;
    cl_mem a = clCreateBuffer(s.context, CL_MEM_COPY_HOST_PTR, in.size() * 4, in.data(), &e);
    cl_mem sums = clCreateBuffer(s.context, CL_MEM_READ_WRITE, groups * 4, nullptr, &e);
    cl_mem grid = clCreateBuffer(s.context, CL_MEM_READ_WRITE, width * width * 4, nullptr, &e);
    clSetKernelArg(sums_kernel, 0, sizeof a, &a);
    clSetKernelArg(sums_kernel, 1, sizeof sums, &sums);
    clSetKernelArg(sums_kernel, 2, local * 4, nullptr);
    clSetKernelArg(tiles, 0, sizeof grid, &grid);
    clSetKernelArg(tiles, 1, sizeof width, &width);
    const int sentinel = -12345;
    for (const std::size_t offset : {std::size_t{0}, std::size_t{local}, std::size_t{5}}) {
      const std::size_t global = (groups - 2) * local, l = local;
      clEnqueueFillBuffer(s.queue, sums, &sentinel, 4, 0, groups * 4, 0, nullptr, nullptr);
      out.push_back(clEnqueueNDRangeKernel(s.queue, sums_kernel, 1, &offset, &global, &l, 0,
                                           nullptr, nullptr));
      std::vector<int> got(groups);
      clEnqueueReadBuffer(s.queue, sums, CL_TRUE, 0, groups * 4, got.data(), 0, nullptr, nullptr);
      out.insert(out.end(), got.begin(), got.end());
    }
    const std::array<std::array<std::size_t, 2>, 3> offsets{{{0, 0}, {8, 16}, {3, 5}}};
    for (const auto& o : offsets) {
      const std::size_t global[2] = {48, 40}, l[2] = {8, 8}, offset[2] = {o[0], o[1]};
      clEnqueueFillBuffer(s.queue, grid, &sentinel, 4, 0, width * width * 4, 0, nullptr, nullptr);
      out.push_back(
          clEnqueueNDRangeKernel(s.queue, tiles, 2, offset, global, l, 0, nullptr, nullptr));
      std::vector<int> got(width * width);
      clEnqueueReadBuffer(s.queue, grid, CL_TRUE, 0, got.size() * 4, got.data(), 0, nullptr,
                          nullptr);
      out.insert(out.end(), got.begin(), got.end());
    }
    for (cl_mem m : {a, sums, grid}) clReleaseMemObject(m);
    for (cl_kernel k : {sums_kernel, tiles}) clReleaseKernel(k);
    clReleaseProgram(p);
    return out;
  });
#if UNIMEM_WITH_ANALYSIS
  // Six launches through the unimem platform, all split (with 2 or more devices underneath).
  EXPECT_EQ(platform_launch_counts().second - split_before, 6U);
#else
  (void)split_before;
#endif
}

// The same kernels launched with no work-group size (local_work_size NULL: the implementation
// chooses), with and without a global offset of their own: each work-item's rank from its group
// (get_group_id * get_local_size + get_local_id) is its global id minus the offset whatever size
// was chosen, and the platform, choosing one valid on every device below it, splits every launch.
TEST_F(PlatformApi, GroupIdsWithADriverChosenWorkGroupSizeMatchPoclAndSplit) {
  const char* source = R"(
__kernel void ranks(__global int* out) {
  out[get_global_id(0)] = (int)(get_group_id(0) * get_local_size(0) + get_local_id(0));
}
__kernel void ranks2(__global int* out, int width) {
  out[get_global_id(1) * width + get_global_id(0)] =
      (int)(get_group_id(0) * get_local_size(0) + get_local_id(0)) +
      1000 * (int)(get_group_id(1) * get_local_size(1) + get_local_id(1));
})";
  constexpr int items = 8192, width = 64;
  const std::uint64_t split_before = platform_launch_counts().second;
  int launches = 0;
  same([&](OnePlatform& s) {
    std::vector<int> out;
    cl_int e = CL_SUCCESS;
    cl_program p = s.build(source, &e);
    out.push_back(e);
    cl_kernel ranks = clCreateKernel(p, "ranks", &e);
    cl_kernel ranks2 = clCreateKernel(p, "ranks2", &e);
    cl_mem buffer = clCreateBuffer(s.context, CL_MEM_READ_WRITE, items * 4, nullptr, &e);
    clSetKernelArg(ranks, 0, sizeof buffer, &buffer);
    clSetKernelArg(ranks2, 0, sizeof buffer, &buffer);
    clSetKernelArg(ranks2, 1, sizeof width, &width);
    const int sentinel = -12345;
    std::vector<int> got(items);
    const auto read = [&] {
      clEnqueueReadBuffer(s.queue, buffer, CL_TRUE, 0, items * 4, got.data(), 0, nullptr, nullptr);
      out.insert(out.end(), got.begin(), got.end());
    };
    launches = 0;
    const std::array<std::array<std::size_t, 2>, 5> shapes{
        {{4096, 0}, {4096, 64}, {4093, 5}, {3873, 0}, {6000, 1000}}};
    for (const auto& [global, offset] : shapes) {
      clEnqueueFillBuffer(s.queue, buffer, &sentinel, 4, 0, items * 4, 0, nullptr, nullptr);
      out.push_back(clEnqueueNDRangeKernel(s.queue, ranks, 1, &offset, &global, nullptr, 0, nullptr,
                                           nullptr));
      ++launches;
      read();
      for (std::size_t i = 0; i < got.size(); ++i) {  // right, not only equal to POCL's
        const bool inside = i >= offset && i < offset + global;
        EXPECT_EQ(got[i], inside ? static_cast<int>(i - offset) : sentinel)
            << s.name << ": item " << i << " of global " << global << " offset " << offset;
        if (got[i] != (inside ? static_cast<int>(i - offset) : sentinel)) break;
      }
    }
    const std::array<std::array<std::size_t, 4>, 2> shapes2{{{48, 40, 0, 0}, {60, 33, 3, 5}}};
    for (const auto& g : shapes2) {
      const std::size_t global[2] = {g[0], g[1]}, offset[2] = {g[2], g[3]};
      clEnqueueFillBuffer(s.queue, buffer, &sentinel, 4, 0, items * 4, 0, nullptr, nullptr);
      out.push_back(
          clEnqueueNDRangeKernel(s.queue, ranks2, 2, offset, global, nullptr, 0, nullptr, nullptr));
      ++launches;
      read();
    }
    clReleaseMemObject(buffer);
    for (cl_kernel k : {ranks, ranks2}) clReleaseKernel(k);
    clReleaseProgram(p);
    return out;
  });
#if UNIMEM_WITH_ANALYSIS
  // Every launch through the unimem platform split (with 2 or more devices underneath).
  EXPECT_EQ(platform_launch_counts().second - split_before, static_cast<std::uint64_t>(launches));
#else
  (void)split_before;
#endif
}

// UNIMEM_PLATFORM_DEVICES=each: a run of anonymous launches on one of the exposed underlying
// devices goes as an eventless streak (RuntimeCore::launch_again), and what comes after it (a
// read on its queue, clFinish and launches on another device's queue, a read there) sees every
// launch of it, as the host computes. The mode is read once per process: the test runs itself
// again with it, and that child makes the calls.
TEST(PlatformEachDevices, AnEventlessRunOnOneDeviceThenReadsSeeEveryLaunch) {
  if (std::getenv("UNIMEM_TEST_EACH_CHILD") == nullptr) {
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const unimem::testing::CommandOutput out = unimem::testing::run_command(
        "env -u UNIMEM_DEVICES UNIMEM_PLATFORM_DEVICES=each UNIMEM_TEST_EACH_CHILD=1 "
        "POCL_DEVICES='pthread pthread' " +
        self +
        " --gtest_filter=PlatformEachDevices.AnEventlessRunOnOneDeviceThenReadsSeeEveryLaunch "
        "2>&1");
    EXPECT_EQ(out.status, 0) << out.text;
    EXPECT_NE(out.text.find("[  PASSED  ] 1 test"), std::string::npos) << out.text;
    return;
  }
  ASSERT_TRUE(kEnvironment);
  cl_uint n = 0;
  ASSERT_EQ(clGetPlatformIDs(0, nullptr, &n), CL_SUCCESS);
  std::vector<cl_platform_id> all(n);
  ASSERT_EQ(clGetPlatformIDs(n, all.data(), nullptr), CL_SUCCESS);
  cl_platform_id unimem = nullptr;
  for (cl_platform_id p : all) {
    if (platform_name(p) == "unimem") unimem = p;
  }
  ASSERT_NE(unimem, nullptr);
  cl_uint count = 0;
  ASSERT_EQ(clGetDeviceIDs(unimem, CL_DEVICE_TYPE_ALL, 0, nullptr, &count), CL_SUCCESS);
  ASSERT_EQ(count, 2u) << "UNIMEM_PLATFORM_DEVICES=each over two POCL devices";
  std::vector<cl_device_id> devices(count);
  ASSERT_EQ(clGetDeviceIDs(unimem, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr), CL_SUCCESS);
  cl_int e = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, count, devices.data(), nullptr, nullptr, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  std::array<cl_command_queue, 2> queues{};
  for (cl_uint d = 0; d < 2; ++d) {
    queues[d] = clCreateCommandQueue(context, devices[d], 0, &e);
    ASSERT_EQ(e, CL_SUCCESS);
  }
  const char* source = "__kernel void inc(__global int* v, int k) { v[get_global_id(0)] += k; }";
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
  ASSERT_EQ(clBuildProgram(program, count, devices.data(), "", nullptr, nullptr), CL_SUCCESS);
  cl_kernel kernel = clCreateKernel(program, "inc", &e);
  ASSERT_EQ(e, CL_SUCCESS);
  constexpr std::size_t items = 4096;
  std::vector<int> oracle(items);
  std::iota(oracle.begin(), oracle.end(), 0);
  cl_mem v = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, items * sizeof(int), oracle.data(), &e);
  ASSERT_EQ(e, CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(kernel, 0, sizeof v, &v), CL_SUCCESS);
  const std::size_t global = items, local = 64;
  // `times` launches adding k on device d's queue, and the same on the host.
  const auto run = [&](cl_uint d, int k, int times) {
    ASSERT_EQ(clSetKernelArg(kernel, 1, sizeof k, &k), CL_SUCCESS);
    for (int t = 0; t < times; ++t) {
      ASSERT_EQ(clEnqueueNDRangeKernel(queues[d], kernel, 1, nullptr, &global, &local, 0, nullptr,
                                       nullptr),
                CL_SUCCESS);
      for (int& x : oracle) x += k;
    }
  };
  const auto read = [&](cl_uint d, const char* what) {
    std::vector<int> got(items, -1);
    ASSERT_EQ(clEnqueueReadBuffer(queues[d], v, CL_TRUE, 0, items * sizeof(int), got.data(), 0,
                                  nullptr, nullptr),
              CL_SUCCESS);
    for (std::size_t i = 0; i < items; ++i) {
      ASSERT_EQ(got[i], oracle[i]) << what << ": item " << i;
    }
  };
  const std::uint64_t lean_before = platform_lean_launches();
  // (A launch with other scalar values than its plan's first ones, a scalar twin, takes no lean
  // repeat: each device's runs keep theirs.)
  run(1, 1, 60);
  read(1, "a read on the run's queue");
  run(1, 1, 40);
  ASSERT_EQ(clFinish(queues[1]), CL_SUCCESS);
  run(0, 2, 30);  // the other device, after clFinish of the run's queue
  ASSERT_EQ(clFinish(queues[0]), CL_SUCCESS);
  read(1, "a read on the first device's queue after the second device's run");
  run(1, 1, 25);
  ASSERT_EQ(clFinish(queues[1]), CL_SUCCESS);
  read(0, "a read on another device's queue after clFinish");
  EXPECT_GT(platform_lean_launches() - lean_before, 140u) << "the runs were not lean repeats";
  clReleaseMemObject(v);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  for (cl_command_queue q : queues) clReleaseCommandQueue(q);
  clReleaseContext(context);
}

}  // namespace
