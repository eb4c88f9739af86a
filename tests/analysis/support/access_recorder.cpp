#include "analysis/support/access_recorder.hpp"

#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <utility>

#include <unimem/errors.hpp>
#include "device/opencl/opencl_error.hpp"
#include "device/opencl/opencl_program.hpp"

namespace unimem::testing {
namespace {

// Errors by name come from the OpenCL driver (device/opencl/opencl_error.hpp), as RecorderError.
void check_cl(cl_int code, const std::string& what) {
  if (code != CL_SUCCESS) throw RecorderError(opencl::make_error(code, what, {}).what());
}

struct MemObject {
  cl_mem mem = nullptr;
  MemObject() = default;
  explicit MemObject(cl_mem m) : mem(m) {}
  MemObject(MemObject&& other) noexcept : mem(std::exchange(other.mem, nullptr)) {}
  MemObject& operator=(MemObject&& other) noexcept {
    std::swap(mem, other.mem);
    return *this;
  }
  MemObject(const MemObject&) = delete;
  MemObject& operator=(const MemObject&) = delete;
  ~MemObject() {
    if (mem != nullptr) clReleaseMemObject(mem);
  }
};

struct KernelObject {
  cl_kernel kernel = nullptr;
  explicit KernelObject(cl_kernel k) : kernel(k) {}
  KernelObject(const KernelObject&) = delete;
  KernelObject& operator=(const KernelObject&) = delete;
  ~KernelObject() {
    if (kernel != nullptr) clReleaseKernel(kernel);
  }
};

std::string join_options(const std::vector<std::string>& options) {
  std::string out;
  for (const std::string& option : options) {
    if (!out.empty()) out += ' ';
    out += option;
  }
  return out;
}

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t hash_text(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

template <typename T>
void store(std::vector<unsigned char>& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

void store_number(std::vector<unsigned char>& bytes, std::size_t at, std::size_t size,
                  ScalarKind kind, double value) {
  if (kind == ScalarKind::floating) {
    if (size == 4) return store(bytes, at, static_cast<float>(value));
    if (size == 8) return store(bytes, at, value);
  }
  const auto integer = static_cast<std::int64_t>(std::floor(value));
  switch (size) {
    case 1:
      return store(bytes, at, static_cast<std::int8_t>(integer));
    case 2:
      return store(bytes, at, static_cast<std::int16_t>(integer));
    case 4:
      return store(bytes, at, static_cast<std::int32_t>(integer));
    case 8:
      return store(bytes, at, integer);
    default:
      throw RecorderError("cannot store a number of " + std::to_string(size) + " bytes");
  }
}

std::vector<unsigned char> scalar_bytes(const std::string& kernel, const KernelParam& param,
                                        const std::string& text) {
  std::vector<unsigned char> bytes(param.element_size);
  try {
    std::size_t used = 0;
    if (param.scalar_kind == ScalarKind::floating) {
      store_number(bytes, 0, param.element_size, param.scalar_kind, std::stod(text, &used));
    } else if (param.scalar_kind == ScalarKind::signed_integer ||
               param.scalar_kind == ScalarKind::unsigned_integer) {
      const long long value = std::stoll(text, &used, 0);
      std::memcpy(bytes.data(), &value, std::min<std::size_t>(bytes.size(), sizeof(value)));
    } else {
      throw RecorderError("kernel '" + kernel + "': scalar parameter '" + param.name +
                          "' of type " + param.type_name + " is not supported");
    }
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::logic_error&) {
    throw RecorderError("kernel '" + kernel + "': value '" + text + "' for scalar parameter '" +
                        param.name + "' (" + param.type_name + ") is not a number");
  }
  return bytes;
}

}  // namespace

std::array<std::uint64_t, 3> LaunchConfig::group_count() const {
  std::array<std::uint64_t, 3> groups{1, 1, 1};
  for (std::size_t d = 0; d < global.size() && d < 3; ++d) {
    groups[d] = (global[d] + local[d] - 1) / local[d];
  }
  return groups;
}

std::string LaunchConfig::to_string() const {
  auto list = [](const std::vector<std::size_t>& values) {
    std::string out;
    for (const std::size_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
    return out;
  };
  std::string out = "global " + list(global) + " local " + list(local);
  if (!offset.empty()) out += " offset " + list(offset);
  return out;
}

GroupBox GroupBox::all(const LaunchConfig& config) {
  GroupBox box;
  box.end = config.group_count();
  return box;
}

bool GroupBox::contains(std::uint64_t x, std::uint64_t y, std::uint64_t z) const {
  return begin[0] <= x && x < end[0] && begin[1] <= y && y < end[1] && begin[2] <= z && z < end[2];
}

std::string GroupBox::to_string(std::size_t dims) const {
  std::string out;
  for (std::size_t d = 0; d < dims && d < 3; ++d) {
    if (d > 0) out += ',';
    out += std::to_string(begin[d]) + ":" + std::to_string(end[d]);
  }
  return out;
}

std::vector<ParamAccess> AccessTrace::accesses_of(const GroupBox& groups) const {
  std::vector<std::vector<Interval>> reads(signature.params.size());
  std::vector<std::vector<Interval>> writes(signature.params.size());
  for (const AccessRecord& record : records) {
    if (!groups.contains(record.group[0], record.group[1], record.group[2])) continue;
    const Interval bytes{record.offset, record.offset + record.size};
    if ((record.kind & 1U) != 0) reads[record.param].push_back(bytes);
    if ((record.kind & 2U) != 0) writes[record.param].push_back(bytes);
  }
  std::vector<ParamAccess> out(signature.params.size());
  for (std::size_t p = 0; p < out.size(); ++p) {
    out[p].read = IntervalSet::from_unsorted(std::move(reads[p]));
    out[p].write = IntervalSet::from_unsorted(std::move(writes[p]));
  }
  return out;
}

std::vector<unsigned char> fill_buffer(const KernelParam& param, std::uint64_t bytes,
                                       const FillSpec* spec, std::uint64_t seed) {
  std::vector<unsigned char> out(bytes);
  std::uint64_t state = seed ^ hash_text(param.name);
  if (param.component_size == 0 || param.scalar_kind == ScalarKind::other) {
    for (auto& byte : out) byte = static_cast<unsigned char>(splitmix(state));
    return out;
  }
  const std::size_t width = param.component_size;
  const std::size_t count = bytes / width;
  FillSpec fill = spec != nullptr ? *spec : FillSpec{};
  if (!fill.has_range && fill.kind == FillSpec::Kind::random) {
    switch (param.scalar_kind) {
      case ScalarKind::floating:
        fill.lo = -1, fill.hi = 1;
        break;
      case ScalarKind::signed_integer:
        fill.lo = -32, fill.hi = 32;
        break;
      default:
        fill.lo = 0, fill.hi = 64;
        break;
    }
  }
  std::vector<std::uint64_t> permutation;
  if (fill.kind == FillSpec::Kind::permutation) {
    permutation.resize(count);
    std::iota(permutation.begin(), permutation.end(), 0);
    for (std::size_t i = count; i > 1; --i) {
      std::swap(permutation[i - 1], permutation[splitmix(state) % i]);
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    double value = 0;
    switch (fill.kind) {
      case FillSpec::Kind::random: {
        const double unit = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53;
        value = param.scalar_kind == ScalarKind::floating
                    ? fill.lo + unit * (fill.hi - fill.lo)
                    : fill.lo + std::floor(unit * (fill.hi - fill.lo));
        break;
      }
      case FillSpec::Kind::iota:
        value = fill.lo + static_cast<double>(i) * fill.step;
        break;
      case FillSpec::Kind::permutation:
        value = static_cast<double>(permutation[i]);
        break;
      case FillSpec::Kind::constant:
        value = fill.lo;
        break;
    }
    store_number(out, i * width, width, param.scalar_kind, value);
  }
  return out;
}

struct AccessRecorder::State {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::map<std::pair<std::string, std::string>, cl_program> programs;
  double build_seconds = 0;

  ~State() {
    for (auto& [key, program] : programs) clReleaseProgram(program);
    if (queue != nullptr) clReleaseCommandQueue(queue);
    if (context != nullptr) clReleaseContext(context);
  }

  std::string device_name() const {
    char name[512] = {};
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr);
    return name;
  }

  cl_program program(const std::string& source, const std::vector<std::string>& options) {
    const std::string joined = join_options(options);
    auto key = std::make_pair(source, joined);
    if (auto it = programs.find(key); it != programs.end()) return it->second;
    const auto start = std::chrono::steady_clock::now();
    cl_program built = nullptr;
    try {
      const std::string name = device_name();
      built = opencl::build_program(context, {&device, 1}, {&name, 1}, source, joined,
                                    "instrumented program");
    } catch (const DeviceError& e) {
      throw RecorderError(e.what());
    }
    build_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    programs.emplace(std::move(key), built);
    return built;
  }

  struct Launch {
    std::vector<MemObject> buffers;  // per parameter (null for non-buffers)
    double seconds = 0;
  };

  // Creates the kernel, sets every argument of `signature` (plus `extra` as the last one, if not
  // null), runs it and waits.
  Launch launch(cl_program program, const KernelSignature& signature, const LaunchConfig& config,
                const KernelInputs& inputs, const MemObject* extra) {
    const std::string& name = signature.name;
    const std::string where = "kernel '" + name + "' (" + config.to_string() + ")";
    cl_int status = CL_SUCCESS;
    KernelObject kernel(clCreateKernel(program, name.c_str(), &status));
    check_cl(status, "clCreateKernel for " + where);
    Launch out;
    out.buffers.resize(signature.params.size());
    for (std::size_t i = 0; i < signature.params.size(); ++i) {
      const KernelParam& param = signature.params[i];
      const auto index = static_cast<cl_uint>(i);
      switch (param.kind) {
        case ParamKind::global_buffer:
        case ParamKind::constant_buffer: {
          auto size = inputs.buffer_bytes.find(param.name);
          if (size == inputs.buffer_bytes.end() || size->second == 0) {
            throw RecorderError(where + ": no size given for buffer parameter '" + param.name +
                                "'");
          }
          auto fill = inputs.fills.find(param.name);
          std::vector<unsigned char> data =
              fill_buffer(param, size->second, fill == inputs.fills.end() ? nullptr : &fill->second,
                          inputs.seed);
          out.buffers[i] =
              MemObject(clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                       data.size(), data.data(), &status));
          check_cl(status, "clCreateBuffer for '" + param.name + "' of " + where);
          check_cl(clSetKernelArg(kernel.kernel, index, sizeof(cl_mem), &out.buffers[i].mem),
                   "clSetKernelArg '" + param.name + "' of " + where);
          break;
        }
        case ParamKind::local_buffer: {
          auto size = inputs.local_bytes.find(param.name);
          if (size == inputs.local_bytes.end()) {
            throw RecorderError(where + ": no size given for __local parameter '" + param.name +
                                "'");
          }
          check_cl(clSetKernelArg(kernel.kernel, index, size->second, nullptr),
                   "clSetKernelArg '" + param.name + "' of " + where);
          break;
        }
        case ParamKind::scalar: {
          auto value = inputs.scalars.find(param.name);
          if (value == inputs.scalars.end()) {
            throw RecorderError(where + ": no value given for scalar parameter '" + param.name +
                                "'");
          }
          std::vector<unsigned char> bytes = scalar_bytes(name, param, value->second);
          check_cl(clSetKernelArg(kernel.kernel, index, bytes.size(), bytes.data()),
                   "clSetKernelArg '" + param.name + "' of " + where);
          break;
        }
      }
    }
    if (extra != nullptr) {
      check_cl(clSetKernelArg(kernel.kernel, static_cast<cl_uint>(signature.params.size()),
                              sizeof(cl_mem), &extra->mem),
               "clSetKernelArg (access log) of " + where);
    }
    const auto dims = static_cast<cl_uint>(config.global.size());
    if (dims < 1 || dims > 3 || config.local.size() != dims ||
        (!config.offset.empty() && config.offset.size() != dims)) {
      throw RecorderError(where + ": global, local and offset must have the same 1 to 3 entries");
    }
    const auto start = std::chrono::steady_clock::now();
    check_cl(clEnqueueNDRangeKernel(queue, kernel.kernel, dims,
                                    config.offset.empty() ? nullptr : config.offset.data(),
                                    config.global.data(), config.local.data(), 0, nullptr, nullptr),
             "clEnqueueNDRangeKernel for " + where);
    check_cl(clFinish(queue), "clFinish after " + where);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

  std::vector<std::vector<unsigned char>> read_buffers(const KernelSignature& signature,
                                                       const KernelInputs& inputs,
                                                       const Launch& launched) {
    std::vector<std::vector<unsigned char>> out(signature.params.size());
    for (std::size_t i = 0; i < signature.params.size(); ++i) {
      if (launched.buffers[i].mem == nullptr) continue;
      out[i].resize(inputs.buffer_bytes.at(signature.params[i].name));
      check_cl(clEnqueueReadBuffer(queue, launched.buffers[i].mem, CL_TRUE, 0, out[i].size(),
                                   out[i].data(), 0, nullptr, nullptr),
               "reading back '" + signature.params[i].name + "'");
    }
    return out;
  }
};

AccessRecorder::AccessRecorder() : state_(std::make_unique<State>()) {
  cl_uint platform_count = 0;
  check_cl(clGetPlatformIDs(0, nullptr, &platform_count), "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(platform_count);
  check_cl(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");
  // POCL first: it is the platform the analysis is checked on; otherwise any with a device.
  std::stable_sort(platforms.begin(), platforms.end(), [](cl_platform_id a, cl_platform_id b) {
    auto is_pocl = [](cl_platform_id p) {
      char name[256] = {};
      clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(name) - 1, name, nullptr);
      return std::string(name).find("Portable") != std::string::npos;
    };
    return is_pocl(a) && !is_pocl(b);
  });
  for (cl_platform_id platform : platforms) {
    cl_device_id device = nullptr;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS) {
      state_->platform = platform;
      state_->device = device;
      break;
    }
  }
  if (state_->device == nullptr) throw RecorderError("no OpenCL device found");
  cl_int status = CL_SUCCESS;
  state_->context = clCreateContext(nullptr, 1, &state_->device, nullptr, nullptr, &status);
  check_cl(status, "clCreateContext");
  state_->queue = clCreateCommandQueue(state_->context, state_->device, 0, &status);
  check_cl(status, "clCreateCommandQueue");
}

AccessRecorder::~AccessRecorder() = default;

std::string AccessRecorder::device_name() const { return state_->device_name(); }

double AccessRecorder::build_seconds() const { return state_->build_seconds; }

AccessTrace AccessRecorder::record(const InstrumentedSource& source, const std::string& kernel,
                                   const std::vector<std::string>& build_options,
                                   const LaunchConfig& config, const KernelInputs& inputs) {
  const KernelSignature& signature = source.kernel(kernel);
  cl_program program =
      state_->program(source.instrumented, options_after_preprocessing(build_options));
  const std::string where = "kernel '" + kernel + "' (" + config.to_string() + ")";
  const auto groups = config.group_count();
  for (const std::uint64_t g : groups) {
    if (g > 0xffff) throw RecorderError(where + ": more than 65535 work-groups in a dimension");
  }

  std::uint64_t capacity = 1ULL << 16;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::size_t words =
        AccessLogLayout::kHeaderWords + capacity * AccessLogLayout::kWordsPerRecord;
    std::vector<std::uint64_t> log(words, 0);
    log[1] = capacity;
    cl_int status = CL_SUCCESS;
    MemObject log_buffer(clCreateBuffer(state_->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                        words * sizeof(std::uint64_t), log.data(), &status));
    check_cl(status, "clCreateBuffer (access log) for " + where);
    State::Launch launched = state_->launch(program, signature, config, inputs, &log_buffer);
    check_cl(clEnqueueReadBuffer(state_->queue, log_buffer.mem, CL_TRUE, 0,
                                 words * sizeof(std::uint64_t), log.data(), 0, nullptr, nullptr),
             "reading the access log of " + where);
    const std::uint64_t count = log[0] & 0xffffffffULL;
    if (count > capacity) {
      capacity = count + count / 8 + 16;
      continue;
    }

    AccessTrace trace;
    trace.signature = signature;
    trace.config = config;
    trace.run_seconds = launched.seconds;
    trace.final_buffers = state_->read_buffers(signature, inputs, launched);
    // Buffers sorted by base address, to attribute each logged address to its argument.
    struct Span {
      std::uint64_t base;
      std::uint64_t size;
      std::uint16_t param;
    };
    std::vector<Span> spans;
    for (std::size_t i = 0; i < signature.params.size(); ++i) {
      const ParamKind kind = signature.params[i].kind;
      if (kind != ParamKind::global_buffer && kind != ParamKind::constant_buffer) continue;
      spans.push_back({log[AccessLogLayout::kBaseWord + i],
                       inputs.buffer_bytes.at(signature.params[i].name),
                       static_cast<std::uint16_t>(i)});
    }
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.base < b.base; });
    trace.records.reserve(count);
    for (std::uint64_t r = 0; r < count; ++r) {
      const std::uint64_t address =
          log[AccessLogLayout::kHeaderWords + r * AccessLogLayout::kWordsPerRecord];
      const std::uint64_t meta =
          log[AccessLogLayout::kHeaderWords + r * AccessLogLayout::kWordsPerRecord + 1];
      AccessRecord record;
      record.group = {static_cast<std::uint16_t>(meta & 0xffff),
                      static_cast<std::uint16_t>((meta >> 16) & 0xffff),
                      static_cast<std::uint16_t>((meta >> 32) & 0xffff)};
      record.size = static_cast<std::uint16_t>((meta >> 48) & 0x1fff);
      const auto kind = static_cast<unsigned>(meta >> 61);
      record.kind = static_cast<std::uint8_t>(kind & 3U);
      auto it = std::upper_bound(spans.begin(), spans.end(), address,
                                 [](std::uint64_t a, const Span& s) { return a < s.base; });
      const Span* span = it == spans.begin() ? nullptr : &*(it - 1);
      if (span == nullptr || address + record.size > span->base + span->size) {
        if ((kind & 4U) != 0) {  // program-scope __constant data
          ++trace.program_constant_accesses;
          continue;
        }
        std::ostringstream message;
        message << where << ": work-group (" << record.group[0] << "," << record.group[1] << ","
                << record.group[2] << ") accessed " << record.size << " bytes at an address ";
        if (span != nullptr) {
          message << "offset " << (address - span->base) << " of '"
                  << signature.params[span->param].name << "' (" << span->size << " bytes)";
        } else {
          message << "below every buffer";
        }
        message << ": out of bounds";
        throw RecorderError(message.str());
      }
      record.param = span->param;
      record.offset = address - span->base;
      if (record.group[0] >= groups[0] || record.group[1] >= groups[1] ||
          record.group[2] >= groups[2]) {
        throw RecorderError(where + ": logged a group id outside the launch (corrupt log)");
      }
      trace.records.push_back(record);
    }
    return trace;
  }
  throw RecorderError(where + ": the access log kept overflowing");
}

std::vector<std::vector<unsigned char>> AccessRecorder::run_original(
    const InstrumentedSource& source, const std::string& kernel,
    const std::vector<std::string>& build_options, const LaunchConfig& config,
    const KernelInputs& inputs) {
  const KernelSignature& signature = source.kernel(kernel);
  cl_program program =
      state_->program(source.original_preprocessed, options_after_preprocessing(build_options));
  State::Launch launched = state_->launch(program, signature, config, inputs, nullptr);
  return state_->read_buffers(signature, inputs, launched);
}

}  // namespace unimem::testing
