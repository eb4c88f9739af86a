#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <unimem/errors.hpp>
#include <unimem/event.hpp>
#include <unimem/nd_range.hpp>

namespace unimem {

/// Device memory returned by Device::allocate. The handle is the driver's own (a std::byte* for
/// the host driver, a cl_mem for OpenCL); only the device that allocated it may interpret it.
/// It is a plain value: ownership stays with the caller, who must hand it back to free().
struct DeviceAllocation {
  void* handle = nullptr;
  std::uint64_t size = 0;
  [[nodiscard]] bool valid() const { return handle != nullptr; }
  friend bool operator==(const DeviceAllocation&, const DeviceAllocation&) = default;
};

/// A rectangular copy as clEnqueueCopyBufferRect describes it: origins and region are
/// {bytes in x, rows in y, slices in z}, x fastest-varying; pitches in bytes.
struct RectCopy {
  std::array<std::uint64_t, 3> src_origin{};
  std::array<std::uint64_t, 3> dst_origin{};
  std::array<std::uint64_t, 3> region{};  ///< {width in bytes, height in rows, depth in slices}
  std::uint64_t src_row_pitch = 0;
  std::uint64_t src_slice_pitch = 0;
  std::uint64_t dst_row_pitch = 0;
  std::uint64_t dst_slice_pitch = 0;
};

/// A kernel compiled for one device (or one driver). Drivers subclass it; a device rejects, with
/// a DeviceError, a kernel made by another driver.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  [[nodiscard]] virtual const std::string& name() const = 0;
  /// The names of the kernel's parameters, in order. Optional: empty when the driver does not
  /// know them (the OpenCL driver asks clGetKernelArgInfo; unimem builds with -cl-kernel-arg-info).
  [[nodiscard]] virtual std::vector<std::string> argument_names() const { return {}; }
};

/// OpenCL C source compiled by a driver (Device::build_program). Immutable; thread-safe.
class CompiledProgram {
 public:
  virtual ~CompiledProgram() = default;
  /// The kernel `name`, launchable on every device the program was built for. Throws DeviceError
  /// naming the kernel when the program has none by that name.
  [[nodiscard]] virtual std::shared_ptr<const CompiledKernel> kernel(
      const std::string& name) const = 0;
  /// The names of the program's kernels. Optional: empty when the driver cannot list them.
  [[nodiscard]] virtual std::vector<std::string> kernel_names() const { return {}; }
};

/// One argument of a launch.
struct KernelArg {
  enum class Kind { buffer, scalar, local_memory, null_buffer };
  Kind kind = Kind::scalar;
  DeviceAllocation buffer;          ///< Kind::buffer: the device's own allocation
  std::uint64_t buffer_offset = 0;  ///< Kind::buffer: the kernel's pointer is this far in
  /// Kind::buffer, partial residency: the allocation holds the bytes of a larger buffer from this
  /// one on, and buffer_offset counts from the buffer's start: the kernel's pointer is the
  /// allocation's start + buffer_offset - allocation_base (possibly before the allocation; the
  /// kernel touches only bytes inside it). Only for devices whose rebases_arguments() is true.
  std::uint64_t allocation_base = 0;
  std::vector<std::byte> scalar_bytes;  ///< Kind::scalar: the value's bytes
  std::uint64_t local_bytes = 0;        ///< Kind::local_memory: size of the __local buffer

  static KernelArg of_buffer(DeviceAllocation a, std::uint64_t offset = 0) {
    KernelArg arg;
    arg.kind = Kind::buffer;
    arg.buffer = a;
    arg.buffer_offset = offset;
    return arg;
  }
  /// A NULL pointer argument (Kind::null_buffer).
  static KernelArg null() {
    KernelArg arg;
    arg.kind = Kind::null_buffer;
    return arg;
  }
  template <typename T>
  static KernelArg of_scalar(const T& value) {
    KernelArg arg;
    arg.kind = Kind::scalar;
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    arg.scalar_bytes.assign(p, p + sizeof(T));
    return arg;
  }
  static KernelArg of_local(std::uint64_t bytes) {
    KernelArg arg;
    arg.kind = Kind::local_memory;
    arg.local_bytes = bytes;
    return arg;
  }
};

/// The backend interface: one compute device with its own memory.
///
/// Contract for every hook unless it says otherwise:
/// - Thread-safe: any thread may call any hook concurrently.
/// - Asynchronous hooks return an Event at once; the operation starts only after every event in
///   `deps` has completed (events of any driver are accepted) and runs in no particular order
///   relative to other operations except through events. A failed dependency fails the operation.
/// - Host pointers passed to copies must stay valid until the returned event completes.
/// - Errors detected at call time throw DeviceError (or PreconditionError for bad arguments,
///   e.g. a range outside the allocation); errors during execution fail the event.
class Device {
 public:
  virtual ~Device() = default;

  /// Human-readable name, unique within a DeviceRegistry ("host:0", "pocl:cpu-pthread#1").
  [[nodiscard]] virtual std::string name() const = 0;
  /// The driver's name ("host", "opencl").
  [[nodiscard]] virtual std::string driver() const = 0;
  /// Bytes of device memory available for allocations (OpenCL: CL_DEVICE_GLOBAL_MEM_SIZE).
  [[nodiscard]] virtual std::uint64_t capacity() const = 0;
  /// The largest single allocation the device accepts (OpenCL: CL_DEVICE_MAX_MEM_ALLOC_SIZE).
  /// Optional: the default is capacity().
  [[nodiscard]] virtual std::uint64_t max_allocation() const { return capacity(); }
  /// Optional: the byte alignment a buffer argument's offset into its allocation needs
  /// (KernelArg::buffer_offset). Default 1 (any offset).
  [[nodiscard]] virtual std::uint64_t argument_offset_alignment() const { return 1; }

  /// Optional: whether launch accepts buffer arguments with a non-zero
  /// KernelArg::allocation_base (drivers whose kernels get plain pointers can offset them).
  /// Default false: the runtime then passes the base to a rewritten kernel instead
  /// (api/kernel_rewrite.hpp), or gives the kernel full-size allocations.
  [[nodiscard]] virtual bool rebases_arguments() const { return false; }

  /// Synchronous. Throws DeviceError when the device is out of memory.
  virtual DeviceAllocation allocate(std::uint64_t bytes) = 0;
  /// Synchronous; waits for nothing: the caller must ensure no pending operation uses it.
  virtual void free(DeviceAllocation allocation) = 0;

  virtual Event copy_host_to_device(const std::byte* src, DeviceAllocation dst,
                                    std::uint64_t dst_offset, std::uint64_t bytes,
                                    std::span<const Event> deps) = 0;
  virtual Event copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset, std::byte* dst,
                                    std::uint64_t bytes, std::span<const Event> deps) = 0;
  /// Copies within this device's memory (src and dst both allocated here).
  virtual Event copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset,
                                      DeviceAllocation dst, std::uint64_t dst_offset,
                                      std::uint64_t bytes, std::span<const Event> deps) = 0;

  /// Whether copy_from_peer can read allocations of `source` directly.
  [[nodiscard]] virtual bool can_copy_from_peer(const Device& source) const {
    return &source == this;
  }
  /// Copies from an allocation of `source` into one of this device, without the host. Only when
  /// can_copy_from_peer(source); otherwise throws DeviceError.
  virtual Event copy_from_peer(const Device& source, DeviceAllocation src, std::uint64_t src_offset,
                               DeviceAllocation dst, std::uint64_t dst_offset, std::uint64_t bytes,
                               std::span<const Event> deps);

  /// Rectangular copies. Optional: the defaults issue one 1-D copy per contiguous row.
  virtual Event copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst,
                                         const RectCopy& rect, std::span<const Event> deps);
  virtual Event copy_device_to_host_rect(DeviceAllocation src, std::byte* dst, const RectCopy& rect,
                                         std::span<const Event> deps);

  /// Compiles OpenCL C `source` with `options` (pocl's per-driver build hook is the model). The
  /// result serves every device with the same build_domain(): a runtime builds once per domain.
  /// A compiler error throws DeviceError with the log. The default refuses: the driver does not
  /// compile OpenCL C (PreconditionError naming the device).
  [[nodiscard]] virtual std::shared_ptr<const CompiledProgram> build_program(
      const std::string& source, const std::string& options = {}) const;
  /// Devices whose build_domain() is equal share one build_program() result (one OpenCL context).
  /// The default is the device itself.
  [[nodiscard]] virtual const void* build_domain() const { return this; }

  /// Launches kernel over range with args (buffers must be this device's allocations).
  virtual Event launch(const CompiledKernel& kernel, const NDRange& range,
                       std::span<const KernelArg> args, std::span<const Event> deps) = 0;
  /// launch for a caller that never asks the returned event for times(): a driver may then make
  /// the event cheaper (OpenCL: no cl_event per kernel, KernelQueue). Optional: launch by default.
  virtual Event launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                                     std::span<const KernelArg> args, std::span<const Event> deps) {
    return launch(kernel, range, args, deps);
  }

  /// In-order launches without events (optional; the runtime's eventless streak,
  /// RuntimeCore::launch_again). Whether a kernel launched now runs after `previous` without
  /// being told to wait for it: previous is null, known finished, or a kernel of this device's
  /// in-order kernel order. Default false (no such order): launch_in_order is then never called.
  [[nodiscard]] virtual bool orders_after(const Event& previous) const {
    (void)previous;
    return false;
  }
  /// Only for a device whose orders_after answered true: launches kernel after every kernel
  /// launched on this device before it, with no event and no flush, and returns its number in
  /// that order (for in_order_event). Errors detected at call time throw as for launch, and then
  /// nothing was enqueued. The default throws DeviceError.
  virtual std::uint64_t launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                        std::span<const KernelArg> args);
  /// launch_in_order of the launch this device's previous launch_in_order (or
  /// launch_in_order_again) of kernel made, again: the caller promises the same range and args,
  /// and that every launch of kernel, on any device, is serialised with this call (no two run at
  /// once; RuntimeCore: under its mutex). A driver may then skip what it checked and set for that
  /// launch, and take no lock of the kernel's. When kernel was launched otherwise since (another
  /// device, launch, launch_without_times), the driver does launch_in_order. The default:
  /// launch_in_order.
  virtual std::uint64_t launch_in_order_again(const CompiledKernel& kernel, const NDRange& range,
                                              std::span<const KernelArg> args) {
    return launch_in_order(kernel, range, args);
  }
  /// Whether the kernel launch_in_order numbered `sequence` and every one before it are known
  /// finished without a driver call (an event of them was seen complete). Default false.
  [[nodiscard]] virtual bool in_order_finished(std::uint64_t sequence) const {
    (void)sequence;
    return false;
  }
  /// The event of the kernel launch_in_order numbered `sequence`: complete once it and every
  /// kernel before it on this device are (it may also wait for later ones). Starts the kernels
  /// launched so far (a flush). The default throws DeviceError.
  virtual Event in_order_event(std::uint64_t sequence);

  /// Blocks until every operation submitted so far has finished.
  virtual void finish() = 0;

  /// Profiling for traces (UNIMEM_TRACE) and the OpenCL platform's profiling queues: while on,
  /// the events of operations submitted afterwards report when they ran (EventState::times;
  /// OpenCL: CL_PROFILING_COMMAND_*). Call only while nothing is being submitted (a Runtime calls
  /// it in its constructor, or under its lock: RuntimeCore::time_device_operations); operations
  /// submitted before keep their order with later ones and run on (the OpenCL driver waits for
  /// nothing). Optional: the default does nothing, and the trace then times operations by
  /// submission and completion on the host.
  virtual void set_profiling(bool on) { (void)on; }
};

}  // namespace unimem
