// Several host threads on the unimem platform at once: each with its own queue (and two sharing
// one), writing, launching and reading their own buffers, while the platform splits every launch
// over the devices. Every thread's result must equal its CPU reference. Runs under TSan
// (scripts/test.sh: label platform-concurrency).
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
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

TEST(PlatformConcurrency, ThreadsWithTheirOwnAndSharedQueuesGetTheirOwnResults) {
  ASSERT_TRUE(kEnvironment);
  cl_platform_id platform = unimem_platform();
  ASSERT_NE(platform, nullptr);
  cl_device_id device = nullptr;
  ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
  cl_int e = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &e);
  ASSERT_EQ(e, CL_SUCCESS);
  const char* source =
      "__kernel void axpb(__global int* v, int a, int b) {"
      "  const size_t i = get_global_id(0); v[i] = a * v[i] + b; }";
  cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &e);
  ASSERT_EQ(clBuildProgram(program, 1, &device, "", nullptr, nullptr), CL_SUCCESS);
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
  clReleaseProgram(program);
  clReleaseContext(context);
}

}  // namespace
