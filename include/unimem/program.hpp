#pragma once

// Kernels on shared buffers: a Program is OpenCL C source built for every device of a Runtime;
// Program::launch runs one of its kernels over an NDRange with shared buffers, scalars and
// __local memory as arguments and, by default, splits it by work-groups over every device. User
// code never copies or partitions. The state lives in src/api/program_core.hpp (ProgramCore);
// this class is its public face.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <unimem/access_descriptor.hpp>
#include <unimem/event.hpp>
#include <unimem/nd_range.hpp>
#include <unimem/runtime.hpp>
#include <unimem/team_footprint.hpp>

namespace unimem {

class ProgramCore;

/// One argument of Program::launch, in the kernel's parameter order: a shared buffer (a
/// `__global` pointer parameter), a NULL pointer, a scalar (its bytes, as clSetKernelArg takes
/// them) or the size of a `__local` pointer parameter.
struct Arg {
  enum class Kind : std::uint8_t { buffer, scalar, local_memory, null_buffer };

  Kind kind = Kind::scalar;
  BufferId buffer_id;                   ///< Kind::buffer
  std::uint64_t buffer_offset = 0;      ///< Kind::buffer: where the kernel's pointer points
  std::vector<std::byte> scalar_bytes;  ///< Kind::scalar
  std::uint64_t local_bytes = 0;        ///< Kind::local_memory

  /// The kernel's pointer points `offset` bytes into `b` (an OpenCL sub-buffer); the kernel
  /// indexes from there, and access descriptors count from there too. On OpenCL devices the
  /// offset must be a multiple of every device's CL_DEVICE_MEM_BASE_ADDR_ALIGN.
  static Arg buffer(BufferId b, std::uint64_t offset = 0) {
    Arg a;
    a.kind = Kind::buffer;
    a.buffer_id = b;
    a.buffer_offset = offset;
    return a;
  }
  /// A NULL `__global` pointer: no bytes move; the kernel must not dereference it.
  static Arg null_buffer() {
    Arg a;
    a.kind = Kind::null_buffer;
    return a;
  }
  /// T's bytes as they are in host memory (an OpenCL C scalar or vector type of the same size).
  template <typename T>
  static Arg scalar(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "Arg::scalar takes a trivially copyable value");
    Arg a;
    a.scalar_bytes.resize(sizeof(T));
    std::memcpy(a.scalar_bytes.data(), &value, sizeof(T));
    return a;
  }
  static Arg local(std::uint64_t bytes) {
    Arg a;
    a.kind = Kind::local_memory;
    a.local_bytes = bytes;
    return a;
  }
};

/// How partition sizes are chosen.
enum class Balance : std::uint8_t {
  equal,     ///< the same number of work-groups per device (within one)
  measured,  ///< time the first launch of each kernel per device, then balance by throughput
};

struct LaunchOptions {
  /// Run on this device only (no split).
  std::optional<std::size_t> device;
  /// Split over these devices (in this order); empty = every device of the runtime.
  std::vector<std::size_t> devices;
  /// Split dimension; default the slowest-varying.
  std::optional<std::uint32_t> split_dimension;
  /// Access descriptors of the buffer arguments. They override what the analysis derives; a
  /// buffer argument with no descriptor at all is taken as read and maybe written in whole (so the
  /// launch runs on one device, with a log message).
  KernelAccess accesses;
  Balance balance = Balance::equal;
  /// Derive the bytes of buffer arguments without descriptors from the kernel analysis, when
  /// unimem is built with it (`unimem about` says).
  bool use_analysis = true;
  /// For comparisons only: ignore `accesses` and use only what the analysis derives.
  bool ignore_accesses = false;
};

/// What building a Program cost: the kernel analysis time next to the OpenCL build time.
struct ProgramBuildReport {
  /// clBuildProgram for every OpenCL context, wall time (without the build with whole-launch
  /// group ids of a get_group_id program, made on its first split launch)
  double opencl_build_seconds = 0.0;
  std::size_t contexts = 0;       ///< OpenCL contexts built for
  double analysis_seconds = 0.0;  ///< kernel analysis, wall time (near zero when cached)
  bool analysis_cached = false;   ///< the analysis of this source + options was reused
  /// The team kernels (<unimem/team.h>) by name, with their team memory and spill per
  /// work-group.
  std::map<std::string, TeamFootprint> teams;
};

/// OpenCL C source built for every device of a Runtime (once per OpenCL context). Every device's
/// driver must compile OpenCL C. Thread-safe. The Runtime must outlive the Program.
class Program {
 public:
  /// Builds source with options once per OpenCL context of runtime's devices. A build failure
  /// throws DeviceError carrying the device names and compiler logs. The device library's
  /// include directory and -cl-kernel-arg-info are added to options, so kernels may
  /// `#include <unimem/team.h>`.
  Program(Runtime& runtime, std::string source, std::string options = {});
  /// Releases the spill areas of team kernels (waits for the launches that use them).
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// Runs kernel over range with args. Buffers are shared buffers of the runtime. Returns the
  /// event of the whole launch (all partitions). Throws PreconditionError for an unknown kernel,
  /// a bad argument or descriptor, naming the kernel.
  /// A driver that fails to enqueue a partition's kernel throws DeviceError; the partitions
  /// enqueued before it (in the launch's partition order) still run and their writes count, the
  /// others never run: each byte then holds one value, that of flat memory after those
  /// partitions alone.
  ///
  /// A team kernel (build_report().teams) takes every argument but its last, the spill parameter
  /// of UM_TEAM_PARAM: the program passes a spill area of its own, sized for the launch's
  /// work-groups, and gives each partition the slices of its work-groups as write-only scratch
  /// (nothing fetched before the kernel, nothing copied after). Team kernels need a 1-D range
  /// with an explicit work-group size and no global offset.
  Event launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
               const LaunchOptions& options = {});
  Event launch(const std::string& kernel, const NDRange& range, std::initializer_list<Arg> args,
               const LaunchOptions& options = {}) {
    const std::vector<Arg> a(args);
    return launch(kernel, range, std::span<const Arg>(a), options);
  }

  /// Whether the kernel analysis describes this program (false when built without it or when it
  /// could not read the source; analysis_error() then says why).
  [[nodiscard]] bool analyzed() const;
  [[nodiscard]] const std::string& analysis_error() const;
  /// Build and analysis times of this program.
  [[nodiscard]] const ProgramBuildReport& build_report() const;

  /// Where fallback messages go (a launch that runs on fewer devices than asked, and why).
  /// Default: stderr, "unimem: ...".
  void set_log(std::function<void(const std::string&)> log);

  /// The layer below (src/api/program_core.hpp): the plan of the last launch, for tools and tests
  /// built with unimem's internals.
  [[nodiscard]] ProgramCore& core() const { return *core_; }

 private:
  std::unique_ptr<ProgramCore> core_;
};

}  // namespace unimem
