#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/device.hpp"
#include "device/opencl/opencl_api.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem::opencl {

class OpenCLKernel;

/// Creates `source` in `context` and builds it with `options` for `devices` (device_names[i] names
/// devices[i] in messages). The caller owns (releases) the program. A failure throws DeviceError
/// naming `what`, the options and, for every device the build failed on, its name and the
/// compiler's full log (CL_BUILD_PROGRAM_FAILURE) or the failing call.
[[nodiscard]] cl_program build_program(cl_context context, std::span<const cl_device_id> devices,
                                       std::span<const std::string> device_names,
                                       std::string_view source, const std::string& options,
                                       std::string_view what);

/// An OpenCL C program built for every device of one Context (so one build serves all devices of
/// a platform). A failed build throws a DeviceError with CL_BUILD_PROGRAM_FAILURE whose message
/// carries, for each device the build failed on, its name and the compiler's full log.
/// Immutable after construction; thread-safe.
class OpenCLProgram final : public CompiledProgram {
 public:
  OpenCLProgram(std::shared_ptr<const Context> context, std::string source,
                std::string options = {});
  ~OpenCLProgram() override;
  OpenCLProgram(const OpenCLProgram&) = delete;
  OpenCLProgram& operator=(const OpenCLProgram&) = delete;

  /// The kernel `name` of this program; throws DeviceError (CL_INVALID_KERNEL_NAME) naming it.
  [[nodiscard]] std::shared_ptr<const CompiledKernel> kernel(
      const std::string& name) const override;
  /// From CL_PROGRAM_KERNEL_NAMES.
  [[nodiscard]] std::vector<std::string> kernel_names() const override;
  /// kernel() with the driver's own type.
  [[nodiscard]] std::shared_ptr<OpenCLKernel> opencl_kernel(const std::string& name) const;

  [[nodiscard]] cl_program handle() const { return program_; }
  [[nodiscard]] const std::shared_ptr<const Context>& context() const { return context_; }
  [[nodiscard]] const std::string& options() const { return options_; }

 private:
  std::shared_ptr<const Context> context_;
  std::string options_;
  cl_program program_ = nullptr;
};

/// One kernel of an OpenCLProgram, usable on every device of the program's context.
/// clSetKernelArg on a shared cl_kernel is not thread-safe and arguments are captured at enqueue
/// time, so a launch holds launch_lock() from its first clSetKernelArg to its enqueue.
class OpenCLKernel final : public CompiledKernel {
 public:
  OpenCLKernel(std::shared_ptr<const Context> context, cl_kernel kernel, std::string name);
  ~OpenCLKernel() override;
  OpenCLKernel(const OpenCLKernel&) = delete;
  OpenCLKernel& operator=(const OpenCLKernel&) = delete;

  [[nodiscard]] const std::string& name() const override { return name_; }
  /// From clGetKernelArgInfo (empty when the program was built without -cl-kernel-arg-info).
  [[nodiscard]] std::vector<std::string> argument_names() const override { return argument_names_; }
  [[nodiscard]] cl_kernel handle() const { return kernel_; }
  [[nodiscard]] const Context& context() const { return *context_; }
  [[nodiscard]] cl_uint argument_count() const { return argument_count_; }
  [[nodiscard]] std::unique_lock<std::mutex> launch_lock() const {
    return std::unique_lock(launch_mutex_);
  }

  /// What the last launch set with clSetKernelArg, so that a launch with the same arguments
  /// skips the calls (the cl_kernel keeps them). Only under launch_lock().
  struct ArgumentsSet {
    struct Value {
      bool known = false;  ///< false: unknown, set it (a sub-buffer view is never remembered)
      KernelArg::Kind kind = KernelArg::Kind::scalar;
      cl_mem mem = nullptr;
      std::vector<std::byte> bytes;
      std::uint64_t local_bytes = 0;
      /// Another whole allocation of `device` this argument named since released_at, checked
      /// then (the one mem held before it): a ping-pong's other buffer is not checked again.
      cl_mem checked = nullptr;
    };
    std::vector<Value> values;      ///< by argument index
    std::uint64_t released_at = 0;  ///< Context::buffers_released() when they were set
    /// The device of the last launch: its buffer values passed that device's checks, and
    /// launch_text names the kernel there (OpenCLDevice::launch).
    const void* device = nullptr;
    std::shared_ptr<const std::string> launch_text;
  };
  [[nodiscard]] ArgumentsSet& arguments_set(const std::unique_lock<std::mutex>& lock) const {
    (void)lock;
    return arguments_set_;
  }
  /// The device (an OpenCLDevice) whose launch_in_order made the kernel's last launch, with
  /// every argument held by the cl_kernel as ArgumentsSet knows it (no sub-buffer view); null
  /// after any other launch. Written under launch_lock(); read without it only by
  /// OpenCLDevice::launch_in_order_again, whose caller serialises every launch of the kernel.
  [[nodiscard]] const void*& in_order_device(const std::unique_lock<std::mutex>& lock) const {
    (void)lock;
    return in_order_device_;
  }
  [[nodiscard]] const void* in_order_device_unlocked() const { return in_order_device_; }

 private:
  std::shared_ptr<const Context> context_;
  cl_kernel kernel_;
  std::string name_;
  cl_uint argument_count_ = 0;
  std::vector<std::string> argument_names_;
  mutable std::mutex launch_mutex_;
  mutable ArgumentsSet arguments_set_;             // guarded by launch_mutex_
  mutable const void* in_order_device_ = nullptr;  // see in_order_device()
};

}  // namespace unimem::opencl
