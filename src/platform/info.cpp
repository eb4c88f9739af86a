// Platform, device and context entry points of the unimem OpenCL platform. The aggregate device
// answers each query from its underlying devices (README "The unimem OpenCL platform" lists the
// rules): sums for compute units and memory, minimums for limits, the intersection of
// extensions, no image support. A device exposed on its own answers as its vendor does, except
// for platform, version and image support.

#include "platform/entry_points.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include <unimem/version.hpp>

namespace unimem::platform {

namespace {

const char* kPlatformVersion = "OpenCL 1.2 unimem";

std::string device_version() {
  return std::string(kPlatformVersion) + " " + std::string(version());
}

template <typename T>
T underlying_value(cl_device_id d, cl_device_info param) {
  T v{};
  clGetDeviceInfo(d, param, sizeof(T), &v, nullptr);
  return v;
}

std::string underlying_string(cl_device_id d, cl_device_info param) {
  std::size_t n = 0;
  if (clGetDeviceInfo(d, param, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, param, n, s.data(), nullptr);
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::vector<cl_device_id> all_underlying() {
  PlatformState& state = PlatformState::get();
  std::vector<cl_device_id> out;
  for (std::size_t i = 0; i < state.underlying_count(); ++i) out.push_back(state.underlying(i));
  return out;
}

template <typename T>
T combine(cl_device_info param, bool sum) {
  T result{};
  bool first = true;
  for (cl_device_id d : all_underlying()) {
    const T v = underlying_value<T>(d, param);
    result = first ? v : (sum ? static_cast<T>(result + v) : std::min(result, v));
    first = false;
  }
  return result;
}

template <typename T>
T maximum(cl_device_info param) {
  T result{};
  for (cl_device_id d : all_underlying()) result = std::max(result, underlying_value<T>(d, param));
  return result;
}

// What every device offers of a bit field (floating-point configurations).
template <typename T>
T common_bits(cl_device_info param) {
  T result = ~T{0};
  for (cl_device_id d : all_underlying()) result &= underlying_value<T>(d, param);
  return result;
}

cl_bool all_true(cl_device_info param) {
  for (cl_device_id d : all_underlying()) {
    if (underlying_value<cl_bool>(d, param) == CL_FALSE) return CL_FALSE;
  }
  return CL_TRUE;
}

std::string common_extensions() {
  std::set<std::string> common;
  bool first = true;
  for (cl_device_id d : all_underlying()) {
    std::istringstream in(underlying_string(d, CL_DEVICE_EXTENSIONS));
    std::set<std::string> mine;
    for (std::string e; in >> e;) mine.insert(e);
    if (first) {
      common = mine;
    } else {
      std::set<std::string> kept;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                            std::inserter(kept, kept.begin()));
      common = kept;
    }
    first = false;
  }
  std::string out;
  for (const std::string& e : common) {
    if (e.find("image") != std::string::npos) continue;  // images are not supported
    out += (out.empty() ? "" : " ") + e;
  }
  return out;
}

// The queries whose answer is the same for the aggregate and single devices of the platform.
bool platform_answer(cl_device_id device, cl_device_info param, std::size_t size, void* value,
                     std::size_t* size_ret, cl_int& result) {
  switch (param) {
    case CL_DEVICE_PLATFORM:
      result = answer_value(PlatformState::get().platform(), size, value, size_ret);
      return true;
    case CL_DEVICE_VERSION:
      result = answer_string(device_version(), size, value, size_ret);
      return true;
    case CL_DEVICE_OPENCL_C_VERSION:
      result = answer_string("OpenCL C 1.2 ", size, value, size_ret);
      return true;
    case CL_DRIVER_VERSION:
      result = answer_string(std::string(version()), size, value, size_ret);
      return true;
    case CL_DEVICE_IMAGE_SUPPORT:
      result = answer_value(cl_bool{CL_FALSE}, size, value, size_ret);
      return true;
    case CL_DEVICE_MAX_READ_IMAGE_ARGS:
    case CL_DEVICE_MAX_WRITE_IMAGE_ARGS:
    case CL_DEVICE_MAX_SAMPLERS:
      result = answer_value(cl_uint{0}, size, value, size_ret);
      return true;
    case CL_DEVICE_IMAGE2D_MAX_WIDTH:
    case CL_DEVICE_IMAGE2D_MAX_HEIGHT:
    case CL_DEVICE_IMAGE3D_MAX_WIDTH:
    case CL_DEVICE_IMAGE3D_MAX_HEIGHT:
    case CL_DEVICE_IMAGE3D_MAX_DEPTH:
    case CL_DEVICE_IMAGE_MAX_BUFFER_SIZE:
    case CL_DEVICE_IMAGE_MAX_ARRAY_SIZE:
      result = answer_value(std::size_t{0}, size, value, size_ret);
      return true;
    case CL_DEVICE_PARENT_DEVICE:
      result = answer_value(cl_device_id{nullptr}, size, value, size_ret);
      return true;
    case CL_DEVICE_PARTITION_MAX_SUB_DEVICES:
      result = answer_value(cl_uint{0}, size, value, size_ret);
      return true;
    case CL_DEVICE_PARTITION_PROPERTIES:
    case CL_DEVICE_PARTITION_TYPE:
      result = answer_value(cl_device_partition_property{0}, size, value, size_ret);
      return true;
    case CL_DEVICE_PARTITION_AFFINITY_DOMAIN:
      result = answer_value(cl_device_affinity_domain{0}, size, value, size_ret);
      return true;
    case CL_DEVICE_REFERENCE_COUNT:
      result = answer_value(cl_uint{1}, size, value, size_ret);
      return true;
    case CL_DEVICE_QUEUE_PROPERTIES:
      result = answer_value(cl_command_queue_properties{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE |
                                                        CL_QUEUE_PROFILING_ENABLE},
                            size, value, size_ret);
      return true;
    case CL_DEVICE_BUILT_IN_KERNELS:
      result = answer_string("", size, value, size_ret);
      return true;
    case CL_DEVICE_EXECUTION_CAPABILITIES:  // native kernels are refused
      result = answer_value(cl_device_exec_capabilities{CL_EXEC_KERNEL}, size, value, size_ret);
      return true;
    case CL_DEVICE_EXTENSIONS: {
      std::string ext =
          device->aggregate ? common_extensions() : underlying_string(device->underlying, param);
      std::istringstream in(ext);
      std::string kept;
      for (std::string e; in >> e;) {
        if (e.find("image") == std::string::npos) kept += (kept.empty() ? "" : " ") + e;
      }
      result = answer_string(kept, size, value, size_ret);
      return true;
    }
    default:
      return false;
  }
}

// The aggregate device's own answers (the rest are the first underlying device's).
bool aggregate_answer(cl_device_info param, std::size_t size, void* value, std::size_t* size_ret,
                      cl_int& result) {
  PlatformState& state = PlatformState::get();
  switch (param) {
    case CL_DEVICE_NAME:
      result = answer_string("unimem: " + std::to_string(state.underlying_count()) +
                                 (state.underlying_count() == 1 ? " device" : " devices"),
                             size, value, size_ret);
      return true;
    case CL_DEVICE_VENDOR:
      result = answer_string("unimem", size, value, size_ret);
      return true;
    case CL_DEVICE_MAX_COMPUTE_UNITS:
      result = answer_value(combine<cl_uint>(param, true), size, value, size_ret);
      return true;
    case CL_DEVICE_GLOBAL_MEM_SIZE:
      result = answer_value(combine<cl_ulong>(param, true), size, value, size_ret);
      return true;
    case CL_DEVICE_MAX_MEM_ALLOC_SIZE:
    case CL_DEVICE_LOCAL_MEM_SIZE:
    case CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE:
    case CL_DEVICE_GLOBAL_MEM_CACHE_SIZE:
      result = answer_value(combine<cl_ulong>(param, false), size, value, size_ret);
      return true;
    case CL_DEVICE_MAX_WORK_GROUP_SIZE:
    case CL_DEVICE_MAX_PARAMETER_SIZE:
    case CL_DEVICE_PRINTF_BUFFER_SIZE:
      result = answer_value(combine<std::size_t>(param, false), size, value, size_ret);
      return true;
    case CL_DEVICE_MAX_CLOCK_FREQUENCY:
    case CL_DEVICE_MAX_CONSTANT_ARGS:
    case CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE:
    case CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS:
      result = answer_value(combine<cl_uint>(param, false), size, value, size_ret);
      return true;
    case CL_DEVICE_MEM_BASE_ADDR_ALIGN:
    case CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE:
      result = answer_value(maximum<cl_uint>(param), size, value, size_ret);
      return true;
    case CL_DEVICE_MAX_WORK_ITEM_SIZES: {
      std::vector<std::size_t> sizes;
      for (cl_device_id d : all_underlying()) {
        std::size_t n = 0;
        clGetDeviceInfo(d, param, 0, nullptr, &n);
        std::vector<std::size_t> mine(n / sizeof(std::size_t));
        clGetDeviceInfo(d, param, n, mine.data(), nullptr);
        if (sizes.empty()) {
          sizes = mine;
        } else {
          for (std::size_t i = 0; i < std::min(sizes.size(), mine.size()); ++i) {
            sizes[i] = std::min(sizes[i], mine[i]);
          }
        }
      }
      result = answer_vector(sizes, size, value, size_ret);
      return true;
    }
    case CL_DEVICE_AVAILABLE:
    case CL_DEVICE_COMPILER_AVAILABLE:
    case CL_DEVICE_LINKER_AVAILABLE:
    case CL_DEVICE_ERROR_CORRECTION_SUPPORT:
    case CL_DEVICE_PREFERRED_INTEROP_USER_SYNC:
      result = answer_value(all_true(param), size, value, size_ret);
      return true;
    case CL_DEVICE_SINGLE_FP_CONFIG:
    case CL_DEVICE_DOUBLE_FP_CONFIG:
    case CL_DEVICE_HALF_FP_CONFIG:  // a split kernel runs on every device
      result = answer_value(common_bits<cl_device_fp_config>(param), size, value, size_ret);
      return true;
    case CL_DEVICE_HOST_UNIFIED_MEMORY:  // the aggregate's memory is spread over devices
      result = answer_value(cl_bool{CL_FALSE}, size, value, size_ret);
      return true;
    default:
      return false;
  }
}

}  // namespace

cl_int CL_API_CALL GetPlatformIDs(cl_uint num_entries, cl_platform_id* platforms,
                                  cl_uint* num_platforms) {
  if ((num_entries == 0 && platforms != nullptr) ||
      (platforms == nullptr && num_platforms == nullptr)) {
    return CL_INVALID_VALUE;
  }
  if (platforms != nullptr) platforms[0] = PlatformState::get().platform();
  if (num_platforms != nullptr) *num_platforms = 1;
  return CL_SUCCESS;
}

cl_int CL_API_CALL GetPlatformInfo(cl_platform_id platform, cl_platform_info param, size_t size,
                                   void* value, size_t* size_ret) {
  if (platform != nullptr && !is_live(platform, ObjectKind::platform)) return CL_INVALID_PLATFORM;
  switch (param) {
    case CL_PLATFORM_PROFILE:
      return answer_string("FULL_PROFILE", size, value, size_ret);
    case CL_PLATFORM_VERSION:
      return answer_string(device_version(), size, value, size_ret);
    case CL_PLATFORM_NAME:
      return answer_string("unimem", size, value, size_ret);
    case CL_PLATFORM_VENDOR:
      return answer_string("unimem", size, value, size_ret);
    case CL_PLATFORM_EXTENSIONS:
      return answer_string("cl_khr_icd", size, value, size_ret);
    case CL_PLATFORM_ICD_SUFFIX_KHR:
      return answer_string("UNIMEM", size, value, size_ret);
    default:
      return CL_INVALID_VALUE;
  }
}

cl_int CL_API_CALL GetDeviceIDs(cl_platform_id platform, cl_device_type type, cl_uint num_entries,
                                cl_device_id* devices, cl_uint* num_devices) {
  if (platform != nullptr && !is_live(platform, ObjectKind::platform)) return CL_INVALID_PLATFORM;
  constexpr cl_device_type known = CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU |
                                   CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR |
                                   CL_DEVICE_TYPE_CUSTOM;
  if (type != CL_DEVICE_TYPE_ALL && (type & ~known) != 0) return CL_INVALID_DEVICE_TYPE;
  if ((num_entries == 0 && devices != nullptr) || (devices == nullptr && num_devices == nullptr)) {
    return CL_INVALID_VALUE;
  }
  std::vector<cl_device_id> matching;
  const auto all = PlatformState::get().devices();
  if (all.empty()) say("unimem platform: no device: " + PlatformState::get().error());
  for (std::size_t i = 0; i < all.size(); ++i) {
    cl_device_type t = underlying_value<cl_device_type>(all[i]->underlying, CL_DEVICE_TYPE) &
                       ~cl_device_type{CL_DEVICE_TYPE_DEFAULT};
    if (i == 0) t |= CL_DEVICE_TYPE_DEFAULT;
    if (type == CL_DEVICE_TYPE_ALL || (t & type) != 0) matching.push_back(all[i]);
  }
  if (matching.empty()) return CL_DEVICE_NOT_FOUND;
  if (devices != nullptr) {
    for (cl_uint i = 0; i < std::min<cl_uint>(num_entries, static_cast<cl_uint>(matching.size()));
         ++i) {
      devices[i] = matching[i];
    }
  }
  if (num_devices != nullptr) *num_devices = static_cast<cl_uint>(matching.size());
  return CL_SUCCESS;
}

cl_int CL_API_CALL GetDeviceInfo(cl_device_id device, cl_device_info param, size_t size,
                                 void* value, size_t* size_ret) {
  if (!is_live(device, ObjectKind::device)) return CL_INVALID_DEVICE;
  // The platform is OpenCL 1.2: the core queries of later versions (0x104A to 0x107F: SVM,
  // pipes, device-side queues, ...) describe features it does not implement.
  if (param >= 0x104A && param < 0x1080) return CL_INVALID_VALUE;
  cl_int result = CL_SUCCESS;
  if (param == CL_DEVICE_TYPE) {
    cl_device_type t = underlying_value<cl_device_type>(device->underlying, CL_DEVICE_TYPE) &
                       ~cl_device_type{CL_DEVICE_TYPE_DEFAULT};
    const auto all = PlatformState::get().devices();
    if (!all.empty() && all[0] == device) t |= CL_DEVICE_TYPE_DEFAULT;
    return answer_value(t, size, value, size_ret);
  }
  if (platform_answer(device, param, size, value, size_ret, result)) return result;
  if (device->aggregate && aggregate_answer(param, size, value, size_ret, result)) return result;
  return clGetDeviceInfo(device->underlying, param, size, value, size_ret);
}

cl_int CL_API_CALL CreateSubDevices(cl_device_id device, const cl_device_partition_property*,
                                    cl_uint, cl_device_id*, cl_uint*) {
  if (!is_live(device, ObjectKind::device)) return CL_INVALID_DEVICE;
  return CL_INVALID_VALUE;  // CL_DEVICE_PARTITION_PROPERTIES is empty: no partition type applies
}

cl_int CL_API_CALL RetainDevice(cl_device_id device) {
  return is_live(device, ObjectKind::device) ? CL_SUCCESS : CL_INVALID_DEVICE;
}

cl_int CL_API_CALL ReleaseDevice(cl_device_id device) {
  return is_live(device, ObjectKind::device) ? CL_SUCCESS : CL_INVALID_DEVICE;
}

namespace {

cl_context new_context(const cl_context_properties* properties, std::vector<cl_device_id> devices,
                       void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*),
                       void* user_data, cl_int* errcode_ret) {
  std::vector<cl_context_properties> props;
  if (properties != nullptr) {
    for (const cl_context_properties* p = properties; *p != 0; p += 2) {
      if (p[0] == CL_CONTEXT_PLATFORM) {
        if (!is_live(reinterpret_cast<const void*>(p[1]), ObjectKind::platform)) {
          set_error(errcode_ret, CL_INVALID_PLATFORM);
          return nullptr;
        }
      } else if (p[0] != CL_CONTEXT_INTEROP_USER_SYNC) {
        set_error(errcode_ret, CL_INVALID_PROPERTY);
        return nullptr;
      }
      props.push_back(p[0]);
      props.push_back(p[1]);
    }
    props.push_back(0);
  }
  auto* c = make_object<_cl_context>(ObjectKind::context);
  c->devices = std::move(devices);
  c->properties = std::move(props);
  c->notify = notify;
  c->notify_data = user_data;
  set_error(errcode_ret, CL_SUCCESS);
  return c;
}

}  // namespace

cl_context CL_API_CALL CreateContext(const cl_context_properties* properties, cl_uint num_devices,
                                     const cl_device_id* devices,
                                     void(CL_CALLBACK* notify)(const char*, const void*, size_t,
                                                               void*),
                                     void* user_data, cl_int* errcode_ret) {
  if (num_devices == 0 || devices == nullptr || (notify == nullptr && user_data != nullptr)) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  std::vector<cl_device_id> list;
  for (cl_uint i = 0; i < num_devices; ++i) {
    if (!is_live(devices[i], ObjectKind::device)) {
      set_error(errcode_ret, CL_INVALID_DEVICE);
      return nullptr;
    }
    if (std::find(list.begin(), list.end(), devices[i]) == list.end()) list.push_back(devices[i]);
  }
  return new_context(properties, std::move(list), notify, user_data, errcode_ret);
}

cl_context CL_API_CALL CreateContextFromType(const cl_context_properties* properties,
                                             cl_device_type type,
                                             void(CL_CALLBACK* notify)(const char*, const void*,
                                                                       size_t, void*),
                                             void* user_data, cl_int* errcode_ret) {
  if (notify == nullptr && user_data != nullptr) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  cl_uint n = 0;
  const cl_int found = GetDeviceIDs(nullptr, type, 0, nullptr, &n);
  if (found != CL_SUCCESS) {
    set_error(errcode_ret, found);
    return nullptr;
  }
  std::vector<cl_device_id> list(n);
  GetDeviceIDs(nullptr, type, n, list.data(), nullptr);
  return new_context(properties, std::move(list), notify, user_data, errcode_ret);
}

cl_int CL_API_CALL RetainContext(cl_context context) {
  if (!is_live(context, ObjectKind::context)) return CL_INVALID_CONTEXT;
  retain(context->header);
  return CL_SUCCESS;
}

cl_int CL_API_CALL ReleaseContext(cl_context context) {
  if (!is_live(context, ObjectKind::context)) return CL_INVALID_CONTEXT;
  release_context(context);
  return CL_SUCCESS;
}

cl_int CL_API_CALL GetContextInfo(cl_context context, cl_context_info param, size_t size,
                                  void* value, size_t* size_ret) {
  if (!is_live(context, ObjectKind::context)) return CL_INVALID_CONTEXT;
  switch (param) {
    case CL_CONTEXT_REFERENCE_COUNT:
      return answer_value(context->header.references.load(), size, value, size_ret);
    case CL_CONTEXT_NUM_DEVICES:
      return answer_value(static_cast<cl_uint>(context->devices.size()), size, value, size_ret);
    case CL_CONTEXT_DEVICES:
      return answer_vector(context->devices, size, value, size_ret);
    case CL_CONTEXT_PROPERTIES:
      return answer_vector(context->properties, size, value, size_ret);
    default:
      return CL_INVALID_VALUE;
  }
}

}  // namespace unimem::platform
