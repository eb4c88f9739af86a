#pragma once

// A small layer over the raw OpenCL 1.2 API for the hand-written multi-device versions of the
// workloads: RAII handles, and a context over K devices of one platform whose transfer calls count
// the bytes they move. The manual versions are the reference unimem is measured against, so they
// use none of the runtime; only discovery, error reporting (opencl::check: errors by name, as
// DeviceError) and program builds (opencl::build_program) are the OpenCL driver's.

#include "device/opencl/opencl_api.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "examples/workload.hpp"

namespace unimem::examples {

/// Owning handle of one OpenCL object: releases it on destruction, retains on copy.
template <typename T>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T object) : object_(object) {}  // takes over one reference
  ClHandle(const ClHandle& other) : object_(other.object_) { retain(); }
  ClHandle(ClHandle&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  ClHandle& operator=(ClHandle other) noexcept {
    std::swap(object_, other.object_);
    return *this;
  }
  ~ClHandle() { release(); }
  [[nodiscard]] T get() const { return object_; }
  [[nodiscard]] explicit operator bool() const { return object_ != nullptr; }

 private:
  void retain() const;
  void release() const;
  T object_ = nullptr;
};

using ClContext = ClHandle<cl_context>;
using ClQueue = ClHandle<cl_command_queue>;
using ClMem = ClHandle<cl_mem>;
using ClProgram = ClHandle<cl_program>;
using ClKernel = ClHandle<cl_kernel>;
using ClEvent = ClHandle<cl_event>;

/// The devices of one OpenCL platform, in the platform's order.
struct ClPlatformDevices {
  cl_platform_id platform = nullptr;
  std::string platform_name;
  std::vector<cl_device_id> devices;
};

/// The platform with the most devices (POCL when it is the only platform), as
/// opencl::list_devices() lists them (so the POCL default applies). Throws DeviceError
/// (CL_DEVICE_NOT_FOUND) when there is no OpenCL device at all.
[[nodiscard]] ClPlatformDevices discover_opencl_devices();

/// A kernel argument for ManualContext::launch.
struct ClArg {
  std::vector<std::byte> bytes;
  static ClArg mem(const ClMem& m) { return of(m.get()); }
  template <typename T>
  static ClArg of(const T& value) {
    ClArg a;
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    a.bytes.assign(p, p + sizeof(T));
    return a;
  }
};

/// One context over K devices of one platform (so buffers of different devices copy peer to
/// peer with clEnqueueCopyBuffer), one in-order queue per device, and transfer helpers that count
/// every byte they move. Device indices are 0..K-1 in the order given.
class ManualContext {
 public:
  ManualContext(const ClPlatformDevices& platform, std::span<const cl_device_id> devices);

  [[nodiscard]] unsigned device_count() const { return static_cast<unsigned>(devices_.size()); }
  [[nodiscard]] cl_context context() const { return context_.get(); }
  [[nodiscard]] std::string device_name(unsigned device) const;

  /// Builds `source` for all devices of the context; a failure throws DeviceError carrying the
  /// build log of every device that failed.
  [[nodiscard]] ClProgram build(std::string_view source, std::string_view options,
                                std::string_view what) const;
  /// The kernel `name` of program, created on first use and reused afterwards (as unimem's
  /// Program keeps its kernels).
  [[nodiscard]] ClKernel kernel(const ClProgram& program, const char* name);

  /// A device buffer of `bytes` bytes (at least 1) for `device`, labelled for error messages.
  /// With reuse on (the default), the n-th allocation of a size on a device in a run is the n-th
  /// buffer of that size and device that earlier runs allocated, when there is one (the buffer
  /// holds whatever the last run left: like unimem's recycled mirrors, RuntimeOptions::
  /// recycle_bytes); with reuse off, every allocation is a new clCreateBuffer.
  [[nodiscard]] ClMem allocate(unsigned device, std::uint64_t bytes, std::string_view what);

  /// Starts a run: clears transfers() and the run's allocation counts, and rewinds reuse so that
  /// this run's allocations get the buffers of the runs before.
  void begin_run();
  void set_reuse(bool reuse);
  [[nodiscard]] bool reuse() const { return reuse_; }
  /// Since begin_run: buffers created by clCreateBuffer (not reused), and seconds spent in it.
  /// POCL (and other drivers) allocate lazily, so most of a fresh buffer's cost (page faults)
  /// comes with its first use, not in clCreateBuffer: `unimem bench` therefore times whole runs
  /// with fresh buffers as well (allocation_seconds).
  [[nodiscard]] std::uint64_t fresh_allocations() const { return fresh_allocations_; }
  [[nodiscard]] double create_buffer_seconds() const { return create_buffer_seconds_; }

  /// Asynchronous transfers on `device`'s queue after `waits`; each adds its bytes to transfers().
  ClEvent write(unsigned device, const ClMem& dst, std::uint64_t dst_offset, const void* src,
                std::uint64_t bytes, std::span<const ClEvent> waits = {});
  ClEvent read(unsigned device, const ClMem& src, std::uint64_t src_offset, void* dst,
               std::uint64_t bytes, std::span<const ClEvent> waits = {});
  /// Peer copy into a buffer of `dst_device`, enqueued on that device's queue.
  ClEvent copy(unsigned dst_device, const ClMem& src, std::uint64_t src_offset, const ClMem& dst,
               std::uint64_t dst_offset, std::uint64_t bytes, std::span<const ClEvent> waits = {});

  /// Launches `kernel` with `args` over a 1-3 dimensional range with a global offset.
  ClEvent launch(unsigned device, const ClKernel& kernel, std::span<const ClArg> args,
                 std::span<const std::size_t> offset, std::span<const std::size_t> global,
                 std::span<const ClEvent> waits = {});
  ClEvent launch(unsigned device, const ClKernel& kernel, std::initializer_list<ClArg> args,
                 std::initializer_list<std::size_t> offset,
                 std::initializer_list<std::size_t> global, std::span<const ClEvent> waits = {}) {
    const std::vector<ClArg> a(args);
    const std::vector<std::size_t> o(offset);
    const std::vector<std::size_t> g(global);
    return launch(device, kernel, a, o, g, waits);
  }

  /// Blocks until every queue is empty.
  void finish_all() const;

  [[nodiscard]] const TransferBytes& transfers() const { return transfers_; }

 private:
  std::vector<cl_device_id> devices_;
  ClContext context_;
  std::vector<ClQueue> queues_;
  TransferBytes transfers_;
  bool reuse_ = true;
  // Reuse: every buffer allocated so far by (device, bytes), and how many of them this run took.
  std::map<std::pair<unsigned, std::uint64_t>, std::vector<ClMem>> pool_;
  std::map<std::pair<unsigned, std::uint64_t>, std::size_t> taken_;
  std::map<std::pair<cl_program, std::string>, ClKernel> kernels_;
  std::uint64_t fresh_allocations_ = 0;
  double create_buffer_seconds_ = 0;
};

}  // namespace unimem::examples
