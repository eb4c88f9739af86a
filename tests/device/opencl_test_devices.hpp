#pragma once
// Shared by the OpenCL driver tests: real devices (POCL here), opened once per test.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <random>
#include <vector>

#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_program.hpp"

namespace unimem::opencl::testing {

/// All devices of the machine (UNIMEM_DEVICES is ignored so the tests see the same set).
class OpenCLDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = open_devices("");
    if (devices_.empty()) GTEST_SKIP() << "no OpenCL device";
  }
  void TearDown() override {
    for (auto& d : devices_) d->finish();
  }
  /// Skips the test unless two devices share a context (POCL gives two by default).
  bool need_two_peers() {
    if (devices_.size() < 2 || !devices_[1]->can_copy_from_peer(*devices_[0])) return false;
    return true;
  }
  OpenCLDevice& device(std::size_t i) { return *devices_.at(i); }

  std::vector<std::unique_ptr<OpenCLDevice>> devices_;
};

inline std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(n);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFFU);
  return bytes;
}

/// The one kernel source of the suite: few distinct kernels, because POCL compiles each one the
/// first time it runs and the tests must not rely on a warm kernel cache.
inline constexpr const char* kVectorAddSource = R"CLC(
__kernel void vadd(__global const int* a, __global const int* b, __global int* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}
)CLC";

}  // namespace unimem::opencl::testing
