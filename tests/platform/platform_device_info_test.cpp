// clGetDeviceInfo of the unimem platform against POCL's, in every UNIMEM_PLATFORM_DEVICES mode.
// tests/platform/programs/device_info.c prints every query from 0x1000 to 0x107f for every device
// of the first platform it sees; it runs directly on POCL (a compute-unit-heterogeneous pair, one
// "basic" and one "pthread" device) and under `unimem run --platform-devices MODE` over the same
// devices. A device exposed on its own must answer as POCL's device does wherever the query
// describes the device; the aggregate must follow its documented rules (README, "What the
// aggregate device answers") against POCL's values. Every exception is listed and checked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include "run_command.hpp"

namespace {

struct Answer {
  int status = 0;
  std::size_t size = 0;
  int short_status = 0;  ///< the same query with one byte too little room
  std::vector<unsigned char> bytes;
};
using DeviceAnswers = std::map<unsigned, Answer>;  // by query

using Output = unimem::testing::CommandOutput;
Output run(const std::string& command) { return unimem::testing::run_command(command); }

std::vector<DeviceAnswers> parse(const std::string& text) {
  std::vector<DeviceAnswers> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    unsigned device = 0;
    std::string param;
    Answer a;
    std::string hex;
    if (!(in >> device >> param >> a.status >> a.size >> a.short_status)) continue;
    in >> hex;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
      a.bytes.push_back(static_cast<unsigned char>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    }
    if (out.size() <= device) out.resize(device + 1);
    out[device][static_cast<unsigned>(std::stoul(param, nullptr, 16))] = a;
  }
  return out;
}

template <typename T>
T as(const Answer& a) {
  T v{};
  EXPECT_EQ(a.bytes.size(), sizeof(T));
  std::memcpy(&v, a.bytes.data(), std::min(sizeof(T), a.bytes.size()));
  return v;
}

std::string as_string(const Answer& a) {
  return std::string(reinterpret_cast<const char*>(a.bytes.data()),
                     strnlen(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size()));
}

std::vector<std::size_t> as_sizes(const Answer& a) {
  std::vector<std::size_t> v(a.bytes.size() / sizeof(std::size_t));
  std::memcpy(v.data(), a.bytes.data(), v.size() * sizeof(std::size_t));
  return v;
}

std::set<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::set<std::string> without_images(std::set<std::string> extensions) {
  std::erase_if(extensions,
                [](const std::string& e) { return e.find("image") != std::string::npos; });
  return extensions;
}

std::string hex(unsigned param) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", param);
  return b;
}

// The devices: POCL's "basic" device has one compute unit, "pthread" several, so sums, minimums
// and "as the first device" give different answers.
const std::string kEnv =
    "env -u OCL_ICD_VENDORS -u OCL_ICD_FILENAMES -u UNIMEM_VENDOR_ICDS -u UNIMEM_DEVICES "
    "-u UNIMEM_PLATFORM_DEVICES POCL_DEVICES='basic pthread' ";

std::vector<DeviceAnswers> pocl() {
  const Output out = run(kEnv + UNIMEM_DEVICE_INFO_PROGRAM);
  EXPECT_EQ(out.status, 0) << out.text;
  return parse(out.text);
}

std::vector<DeviceAnswers> unimem(const std::string& mode) {
  const Output out = run(kEnv + UNIMEM_CLI + std::string(" run --quiet --platform-devices ") +
                         mode + " -- " + UNIMEM_DEVICE_INFO_PROGRAM);
  EXPECT_EQ(out.status, 0) << mode << ": " << out.text;
  return parse(out.text);
}

// Queries new in OpenCL 2.0 and later: the platform is OpenCL 1.2 and answers none of them
// (forwarding them would claim SVM, pipes and device-side queues it does not implement).
constexpr unsigned kFirstAfterOpenCL12 = 0x104A;

// The answers that describe the platform rather than the device, the same for the aggregate
// and a device of its own. Returns false for a query that is not one of them.
bool check_platform_answer(unsigned param, const Answer& u, const Answer& p, bool first_device) {
  const std::string at = hex(param);
  switch (param) {
    case CL_DEVICE_TYPE: {
      const auto t = as<cl_device_type>(u);
      EXPECT_EQ(t & ~cl_device_type{CL_DEVICE_TYPE_DEFAULT},
                as<cl_device_type>(p) & ~cl_device_type{CL_DEVICE_TYPE_DEFAULT});
      EXPECT_EQ((t & CL_DEVICE_TYPE_DEFAULT) != 0, first_device) << "only the first is DEFAULT";
      return true;
    }
    case CL_DEVICE_PLATFORM:
      EXPECT_NE(as<cl_platform_id>(u), nullptr);
      return true;
    case CL_DEVICE_VERSION:
      EXPECT_EQ(as_string(u).rfind("OpenCL 1.2 unimem", 0), 0u) << as_string(u);
      return true;
    case CL_DEVICE_OPENCL_C_VERSION:
      EXPECT_EQ(as_string(u).rfind("OpenCL C 1.2", 0), 0u) << as_string(u);
      return true;
    case CL_DRIVER_VERSION:
      EXPECT_FALSE(as_string(u).empty());
      return true;
    case CL_DEVICE_IMAGE_SUPPORT:
      EXPECT_EQ(as<cl_bool>(u), CL_FALSE);
      return true;
    case CL_DEVICE_MAX_READ_IMAGE_ARGS:
    case CL_DEVICE_MAX_WRITE_IMAGE_ARGS:
    case CL_DEVICE_MAX_SAMPLERS:
    case CL_DEVICE_PARTITION_MAX_SUB_DEVICES:
      EXPECT_EQ(as<cl_uint>(u), 0u) << at;
      return true;
    case CL_DEVICE_IMAGE2D_MAX_WIDTH:
    case CL_DEVICE_IMAGE2D_MAX_HEIGHT:
    case CL_DEVICE_IMAGE3D_MAX_WIDTH:
    case CL_DEVICE_IMAGE3D_MAX_HEIGHT:
    case CL_DEVICE_IMAGE3D_MAX_DEPTH:
    case CL_DEVICE_IMAGE_MAX_BUFFER_SIZE:
    case CL_DEVICE_IMAGE_MAX_ARRAY_SIZE:
      EXPECT_EQ(as<std::size_t>(u), 0u) << at;
      return true;
    case CL_DEVICE_PARTITION_PROPERTIES:
    case CL_DEVICE_PARTITION_TYPE:
    case CL_DEVICE_PARTITION_AFFINITY_DOMAIN:  // device partitioning is refused
      EXPECT_EQ(as<cl_ulong>(u), 0u) << at;
      return true;
    case CL_DEVICE_EXECUTION_CAPABILITIES:  // native kernels are refused
      EXPECT_EQ(as<cl_device_exec_capabilities>(u), cl_device_exec_capabilities{CL_EXEC_KERNEL});
      return true;
    case CL_DEVICE_QUEUE_PROPERTIES:
      EXPECT_EQ(as<cl_command_queue_properties>(u),
                cl_command_queue_properties{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE |
                                            CL_QUEUE_PROFILING_ENABLE});
      return true;
    case CL_DEVICE_BUILT_IN_KERNELS:  // clCreateProgramWithBuiltInKernels is refused
      EXPECT_EQ(as_string(u), "");
      return true;
    default:
      (void)p;
      return false;
  }
}

// A device exposed on its own against the same POCL device.
void expect_like_pocl(const DeviceAnswers& u, const DeviceAnswers& p, bool first_device,
                      const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(u.size(), p.size());
  for (const auto& [param, pa] : p) {
    const Answer& ua = u.at(param);
    const std::string at = hex(param);
    if (param >= kFirstAfterOpenCL12) {
      EXPECT_EQ(ua.status, CL_INVALID_VALUE) << at << ": a query after OpenCL 1.2";
      continue;
    }
    EXPECT_EQ(ua.status, pa.status) << at;
    if (ua.status != CL_SUCCESS || pa.status != CL_SUCCESS) continue;
    EXPECT_EQ(ua.short_status, CL_INVALID_VALUE) << at << ": too little room";
    if (check_platform_answer(param, ua, pa, first_device)) continue;
    if (param == CL_DEVICE_EXTENSIONS) {
      EXPECT_EQ(words(as_string(ua)), without_images(words(as_string(pa))));
      continue;
    }
    EXPECT_EQ(ua.bytes, pa.bytes) << at << " differs from POCL's";
  }
}

// The aggregate device against POCL's devices, rule by rule.
void expect_aggregate(const DeviceAnswers& u, const std::vector<DeviceAnswers>& p) {
  SCOPED_TRACE("aggregate");
  ASSERT_FALSE(p.empty());
  ASSERT_EQ(u.size(), p[0].size());
  std::set<unsigned> checked;
  auto each = [&](unsigned param) {
    checked.insert(param);
    std::vector<const Answer*> out;
    for (const DeviceAnswers& d : p) out.push_back(&d.at(param));
    return out;
  };
  auto sum = [&](unsigned param, auto zero) {
    decltype(zero) total = zero;
    for (const Answer* a : each(param)) total += as<decltype(zero)>(*a);
    EXPECT_EQ(as<decltype(zero)>(u.at(param)), total) << hex(param) << ": the sum";
  };
  auto minimum = [&](unsigned param, auto zero) {
    bool first = true;
    decltype(zero) m = zero;
    for (const Answer* a : each(param)) {
      m = first ? as<decltype(zero)>(*a) : std::min(m, as<decltype(zero)>(*a));
      first = false;
    }
    EXPECT_EQ(as<decltype(zero)>(u.at(param)), m) << hex(param) << ": the minimum";
  };
  auto maximum = [&](unsigned param, auto zero) {
    decltype(zero) m = zero;
    for (const Answer* a : each(param)) m = std::max(m, as<decltype(zero)>(*a));
    EXPECT_EQ(as<decltype(zero)>(u.at(param)), m) << hex(param) << ": the maximum";
  };
  auto all = [&](unsigned param, auto ones) {  // bitwise and: what every device offers
    decltype(ones) m = ones;
    for (const Answer* a : each(param)) m &= as<decltype(ones)>(*a);
    EXPECT_EQ(as<decltype(ones)>(u.at(param)), m) << hex(param) << ": the common part";
  };
  EXPECT_EQ(as_string(u.at(CL_DEVICE_NAME)), "unimem: " + std::to_string(p.size()) + " devices");
  EXPECT_EQ(as_string(u.at(CL_DEVICE_VENDOR)), "unimem");
  checked.insert({CL_DEVICE_NAME, CL_DEVICE_VENDOR});
  sum(CL_DEVICE_MAX_COMPUTE_UNITS, cl_uint{0});
  sum(CL_DEVICE_GLOBAL_MEM_SIZE, cl_ulong{0});
  for (unsigned param : {CL_DEVICE_MAX_MEM_ALLOC_SIZE, CL_DEVICE_LOCAL_MEM_SIZE,
                         CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE}) {
    minimum(param, cl_ulong{0});
  }
  for (unsigned param : {CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_MAX_PARAMETER_SIZE,
                         CL_DEVICE_PRINTF_BUFFER_SIZE}) {
    minimum(param, std::size_t{0});
  }
  for (unsigned param : {CL_DEVICE_MAX_CLOCK_FREQUENCY, CL_DEVICE_MAX_CONSTANT_ARGS,
                         CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS}) {
    minimum(param, cl_uint{0});
  }
  for (unsigned param : {CL_DEVICE_MEM_BASE_ADDR_ALIGN, CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE}) {
    maximum(param, cl_uint{0});
  }
  {
    std::vector<std::size_t> m;
    for (const Answer* a : each(CL_DEVICE_MAX_WORK_ITEM_SIZES)) {
      const auto mine = as_sizes(*a);
      if (m.empty()) m = mine;
      for (std::size_t i = 0; i < std::min(m.size(), mine.size()); ++i)
        m[i] = std::min(m[i], mine[i]);
    }
    EXPECT_EQ(as_sizes(u.at(CL_DEVICE_MAX_WORK_ITEM_SIZES)), m);
  }
  for (unsigned param :
       {CL_DEVICE_AVAILABLE, CL_DEVICE_COMPILER_AVAILABLE, CL_DEVICE_LINKER_AVAILABLE,
        CL_DEVICE_ERROR_CORRECTION_SUPPORT, CL_DEVICE_PREFERRED_INTEROP_USER_SYNC}) {
    all(param, cl_bool{CL_TRUE});
  }
  for (unsigned param :
       {CL_DEVICE_SINGLE_FP_CONFIG, CL_DEVICE_DOUBLE_FP_CONFIG, CL_DEVICE_HALF_FP_CONFIG}) {
    all(param, ~cl_device_fp_config{0});
  }
  {
    std::set<std::string> common;
    bool first = true;
    for (const Answer* a : each(CL_DEVICE_EXTENSIONS)) {
      const auto mine = words(as_string(*a));
      if (first) common = mine;
      std::erase_if(common, [&](const std::string& e) { return mine.count(e) == 0; });
      first = false;
    }
    EXPECT_EQ(words(as_string(u.at(CL_DEVICE_EXTENSIONS))), without_images(common));
  }
  EXPECT_EQ(as<cl_bool>(u.at(CL_DEVICE_HOST_UNIFIED_MEMORY)), CL_FALSE);
  checked.insert(CL_DEVICE_HOST_UNIFIED_MEMORY);
  for (const auto& [param, pa] : p[0]) {
    const Answer& ua = u.at(param);
    const std::string at = hex(param);
    if (param >= kFirstAfterOpenCL12) {
      EXPECT_EQ(ua.status, CL_INVALID_VALUE) << at << ": a query after OpenCL 1.2";
      continue;
    }
    EXPECT_EQ(ua.status, pa.status) << at;
    if (ua.status != CL_SUCCESS || pa.status != CL_SUCCESS) continue;
    EXPECT_EQ(ua.short_status, CL_INVALID_VALUE) << at << ": too little room";
    if (checked.count(param) != 0 || check_platform_answer(param, ua, pa, true)) continue;
    EXPECT_EQ(ua.bytes, pa.bytes) << at << ": everything else is the first device's";
  }
}

TEST(PlatformDeviceInfo, EachDeviceAnswersAsPoclsDevice) {
  const auto p = pocl();
  ASSERT_EQ(p.size(), 2u);
  ASSERT_NE(as<cl_uint>(p[0].at(CL_DEVICE_MAX_COMPUTE_UNITS)),
            as<cl_uint>(p[1].at(CL_DEVICE_MAX_COMPUTE_UNITS)))
      << "the devices should differ in compute units";
  const auto u = unimem("each");
  ASSERT_EQ(u.size(), p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    expect_like_pocl(u[i], p[i], i == 0, "device " + std::to_string(i));
  }
}

TEST(PlatformDeviceInfo, TheAggregateFollowsItsRulesOverPoclsDevices) {
  const auto p = pocl();
  const auto u = unimem("aggregate");
  ASSERT_EQ(u.size(), 1u);
  expect_aggregate(u[0], p);
}

TEST(PlatformDeviceInfo, BothListsTheAggregateFirstThenEachDevice) {
  const auto p = pocl();
  const auto u = unimem("both");
  ASSERT_EQ(u.size(), p.size() + 1);
  expect_aggregate(u[0], p);
  for (std::size_t i = 0; i < p.size(); ++i) {
    expect_like_pocl(u[i + 1], p[i], false, "device " + std::to_string(i));
  }
}

}  // namespace
