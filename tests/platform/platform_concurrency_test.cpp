// Several host threads on the unimem platform at once: each with its own queue (and two sharing
// one), writing, launching and reading their own buffers, while the platform splits every launch
// over the devices. Every thread's result must equal its CPU reference. Runs under TSan
// (scripts/test.sh: label platform-concurrency).
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "platform/platform_test_environment.hpp"

namespace {

const bool kEnvironment = unimem::testing::use_platform_and_vendors();

cl_platform_id unimem_platform() {
  cl_uint n = 0;
  clGetPlatformIDs(0, nullptr, &n);
  std::vector<cl_platform_id> all(n);
  clGetPlatformIDs(n, all.data(), nullptr);
  for (cl_platform_id p : all) {
    char name[64] = {};
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    if (std::string(name) == "unimem") return p;
  }
  return nullptr;
}

// The platform's run report so far: {launches, lean repeats} (unimem_platform_launch_counts and
// unimem_platform_lean_launches of the platform library the loader loaded).
std::pair<std::uint64_t, std::uint64_t> platform_launches_and_lean() {
  void* library = ::dlopen(UNIMEM_PLATFORM_LIBRARY_BUILD, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr) << "the platform library is not loaded";
  if (library == nullptr) return {0, 0};
  using Counts = void (*)(std::uint64_t*, std::uint64_t*);
  using Lean = std::uint64_t (*)();
  auto counts = reinterpret_cast<Counts>(::dlsym(library, "unimem_platform_launch_counts"));
  auto lean = reinterpret_cast<Lean>(::dlsym(library, "unimem_platform_lean_launches"));
  EXPECT_NE(counts, nullptr);
  EXPECT_NE(lean, nullptr);
  std::uint64_t launches = 0, split = 0;
  if (counts != nullptr) counts(&launches, &split);
  const std::uint64_t repeats = lean != nullptr ? lean() : 0;
  ::dlclose(library);
  return {launches, repeats};
}

// The unimem platform's first device, a context on it and `source` built there: what each test
// starts from, released at the end of the test.
struct BuiltProgram {
  explicit BuiltProgram(const char* source) {
    cl_platform_id platform = unimem_platform();
    if (platform == nullptr ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
      return;
    }
    cl_int e = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &e);
    if (e != CL_SUCCESS) return;
    program = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
    if (e == CL_SUCCESS &&
        clBuildProgram(program, 1, &device, "", nullptr, nullptr) == CL_SUCCESS) {
      built = true;
    }
  }
  ~BuiltProgram() {
    if (program != nullptr) clReleaseProgram(program);
    if (context != nullptr) clReleaseContext(context);
  }
  BuiltProgram(const BuiltProgram&) = delete;
  BuiltProgram& operator=(const BuiltProgram&) = delete;

  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_program program = nullptr;
  bool built = false;  // the platform, its device, the context and the build all there
};

TEST(PlatformConcurrency, ThreadsWithTheirOwnAndSharedQueuesGetTheirOwnResults) {
  ASSERT_TRUE(kEnvironment);
  const BuiltProgram built(
      "__kernel void axpb(__global int* v, int a, int b) {"
      "  const size_t i = get_global_id(0); v[i] = a * v[i] + b; }");
  ASSERT_TRUE(built.built);
  cl_device_id device = built.device;
  cl_context context = built.context;
  cl_program program = built.program;
  cl_int e = CL_SUCCESS;
  cl_command_queue shared = clCreateCommandQueue(context, device, 0, &e);

  constexpr int kThreads = 4;
  constexpr int kItems = 1024;
  constexpr int kSteps = 8;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cl_int err = CL_SUCCESS;
      // Threads 0 and 1 share a queue; the others have their own.
      cl_command_queue queue = t < 2 ? shared : clCreateCommandQueue(context, device, 0, &err);
      cl_kernel kernel = clCreateKernel(program, "axpb", &err);
      std::vector<int> host(kItems);
      for (int i = 0; i < kItems; ++i) host[i] = i + t;
      cl_mem buffer =
          clCreateBuffer(context, CL_MEM_READ_WRITE, kItems * sizeof(int), nullptr, &err);
      clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, kItems * sizeof(int), host.data(), 0,
                           nullptr, nullptr);
      const int a = 2, b = t + 1;
      clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
      clSetKernelArg(kernel, 1, sizeof a, &a);
      clSetKernelArg(kernel, 2, sizeof b, &b);
      const std::size_t global = kItems, local = 64;
      for (int s = 0; s < kSteps; ++s) {
        clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr);
      }
      std::vector<int> result(kItems);
      err = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, kItems * sizeof(int), result.data(), 0,
                                nullptr, nullptr);
      for (int i = 0; i < kItems; ++i) {
        int want = i + t;
        for (int s = 0; s < kSteps; ++s) want = a * want + b;
        failures[t] += err != CL_SUCCESS || result[i] != want;
      }
      clReleaseMemObject(buffer);
      clReleaseKernel(kernel);
      if (t >= 2) clReleaseCommandQueue(queue);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  clReleaseCommandQueue(shared);
}

// Several threads launch one kernel over one buffer, each on its own queue: through a cl_kernel
// they share and through their own, released and made again every 50 launches, while a reader
// asks the run report meanwhile. The platform runs most of them as lean repeats (each thread's
// kernel lock held through its launch; the report counts them per LeanLaunch, added when read,
// also once the kernel is gone). Every launch runs once (each element counts them) and the report
// counts each once. Runs under TSan (label platform-concurrency).
TEST(PlatformConcurrency, LaunchesOfOneKernelFromSeveralThreadsEachRunAndAreCountedOnce) {
  ASSERT_TRUE(kEnvironment);
  const BuiltProgram built("__kernel void add_one(__global int* v) { v[get_global_id(0)] += 1; }");
  ASSERT_TRUE(built.built);
  cl_device_id device = built.device;
  cl_context context = built.context;
  cl_program program = built.program;
  cl_int e = CL_SUCCESS;
  constexpr int kThreads = 4;
  constexpr int kLaunches = 300;  // per thread
  constexpr std::size_t kItems = 256;
  std::vector<int> zero(kItems, 0);
  cl_mem buffer =
      clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, kItems * sizeof(int), zero.data(), &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_kernel shared = clCreateKernel(program, "add_one", &e);
  ASSERT_EQ(clSetKernelArg(shared, 0, sizeof buffer, &buffer), CL_SUCCESS);
  const auto [launches_before, lean_before] = platform_launches_and_lean();
  std::vector<int> failed_calls(kThreads, 0);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) (void)platform_launches_and_lean();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cl_int err = CL_SUCCESS;
      cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
      cl_kernel own = nullptr;
      const std::size_t global = kItems, local = 64;
      for (int i = 0; i < kLaunches; ++i) {
        if (i % 50 == 0) {
          if (own != nullptr) clReleaseKernel(own);
          own = clCreateKernel(program, "add_one", &err);
          failed_calls[t] += clSetKernelArg(own, 0, sizeof buffer, &buffer) != CL_SUCCESS;
        }
        cl_kernel kernel = (i / 25) % 2 == 0 ? shared : own;
        failed_calls[t] += clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0,
                                                  nullptr, nullptr) != CL_SUCCESS;
      }
      failed_calls[t] += clFinish(queue) != CL_SUCCESS;
      clReleaseKernel(own);
      clReleaseCommandQueue(queue);
    });
  }
  for (auto& th : threads) th.join();
  done.store(true);
  reader.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failed_calls[t], 0) << "thread " << t;
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &e);
  std::vector<int> result(kItems, -1);
  ASSERT_EQ(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, kItems * sizeof(int), result.data(), 0,
                                nullptr, nullptr),
            CL_SUCCESS);
  for (std::size_t i = 0; i < kItems; ++i) {
    ASSERT_EQ(result[i], kThreads * kLaunches) << "element " << i;
  }
  const auto [launches_after, lean_after] = platform_launches_and_lean();
  std::printf("platform concurrency: %llu of %d launches were lean repeats\n",
              static_cast<unsigned long long>(lean_after - lean_before), kThreads * kLaunches);
  EXPECT_EQ(launches_after - launches_before, static_cast<std::uint64_t>(kThreads * kLaunches))
      << "the run report counts another number of launches than ran";
  EXPECT_GT(lean_after - lean_before, 0U) << "no launch was a lean repeat";
  clReleaseCommandQueue(queue);
  clReleaseKernel(shared);
  clReleaseMemObject(buffer);
}

// The first profiling queue turns the devices' profiling on (PlatformState::time_devices: new
// device queues, the kernels in launch order across them) while other threads launch on plain
// queues, their lean repeats in an eventless streak. Every launch runs once, and the profiled
// launches report their times. Runs under TSan (label platform-concurrency).
TEST(PlatformConcurrency, AProfilingQueueMadeWhileOthersLaunchLeavesEveryLaunchRunOnce) {
  ASSERT_TRUE(kEnvironment);
  const BuiltProgram built("__kernel void add_one(__global int* v) { v[get_global_id(0)] += 1; }");
  ASSERT_TRUE(built.built);
  cl_int e = CL_SUCCESS;
  constexpr int kThreads = 3;
  constexpr int kLaunches = 400;  // per thread
  constexpr int kProfiled = 20;
  constexpr std::size_t kItems = 256;
  std::vector<int> zero(kItems, 0);
  cl_mem buffer =
      clCreateBuffer(built.context, CL_MEM_COPY_HOST_PTR, kItems * sizeof(int), zero.data(), &e);
  ASSERT_EQ(e, CL_SUCCESS);
  std::vector<int> failed_calls(kThreads + 1, 0);
  std::atomic<int> launched{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cl_int err = CL_SUCCESS;
      cl_command_queue queue = clCreateCommandQueue(built.context, built.device, 0, &err);
      cl_kernel kernel = clCreateKernel(built.program, "add_one", &err);
      failed_calls[t] += clSetKernelArg(kernel, 0, sizeof buffer, &buffer) != CL_SUCCESS;
      const std::size_t global = kItems, local = 64;
      for (int i = 0; i < kLaunches; ++i) {
        failed_calls[t] += clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0,
                                                  nullptr, nullptr) != CL_SUCCESS;
        launched.fetch_add(1);
      }
      failed_calls[t] += clFinish(queue) != CL_SUCCESS;
      clReleaseKernel(kernel);
      clReleaseCommandQueue(queue);
    });
  }
  // Once the others are under way: the profiling queue, and launches with events on it.
  while (launched.load() < kThreads * kLaunches / 4) std::this_thread::yield();
  cl_command_queue profiled =
      clCreateCommandQueue(built.context, built.device, CL_QUEUE_PROFILING_ENABLE, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  cl_kernel kernel = clCreateKernel(built.program, "add_one", &e);
  ASSERT_EQ(clSetKernelArg(kernel, 0, sizeof buffer, &buffer), CL_SUCCESS);
  std::vector<cl_event> events(kProfiled, nullptr);
  const std::size_t global = kItems, local = 64;
  for (cl_event& ev : events) {
    failed_calls[kThreads] += clEnqueueNDRangeKernel(profiled, kernel, 1, nullptr, &global, &local,
                                                     0, nullptr, &ev) != CL_SUCCESS;
  }
  failed_calls[kThreads] += clFinish(profiled) != CL_SUCCESS;
  for (auto& th : threads) th.join();
  for (int t = 0; t <= kThreads; ++t) EXPECT_EQ(failed_calls[t], 0) << "thread " << t;
  for (cl_event ev : events) {
    cl_ulong start = 0, end = 0;
    EXPECT_EQ(
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
        CL_SUCCESS);
    EXPECT_EQ(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
              CL_SUCCESS);
    EXPECT_LE(start, end);
    clReleaseEvent(ev);
  }
  std::vector<int> result(kItems, -1);
  ASSERT_EQ(clEnqueueReadBuffer(profiled, buffer, CL_TRUE, 0, kItems * sizeof(int), result.data(),
                                0, nullptr, nullptr),
            CL_SUCCESS);
  for (std::size_t i = 0; i < kItems; ++i) {
    ASSERT_EQ(result[i], kThreads * kLaunches + kProfiled) << "element " << i;
  }
  clReleaseKernel(kernel);
  clReleaseCommandQueue(profiled);
  clReleaseMemObject(buffer);
}

}  // namespace
