#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/device.hpp"
#include "device/opencl/opencl_api.hpp"
#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_discovery.hpp"
#include "device/opencl/opencl_event.hpp"

namespace unimem::opencl {

class OpenCLKernel;
class OpenCLProgram;

/// A Device backed by one OpenCL device and one command queue of it.
///
/// - Queue: out-of-order where supported (QueueOrder::out_of_order), so every command waits only
///   for its deps; in-order on request. Every enqueue is flushed at once so it starts without a
///   later finish().
/// - deps: cl_events of this device's Context go straight into the wait list; any other event (host
///   driver, another platform, ManualEventState) is bridged by a user event (see WaitList). A
///   dependency that already failed fails the operation without running it.
/// - Kernels go to a second queue, in-order (KernelQueue): a kernel waits for the earlier kernels
///   of its device without a wait list, and launch_without_times() enqueues a kernel whose wait
///   list is then empty without a cl_event (QueuedKernelEventState: a marker stands for it once
///   something asks). The device's kernels therefore run one after another, in launch order.
/// - Returned events wrap the command's cl_event (ClEventState), but for those kernels.
/// - Allocations are cl_mem buffers of the context (DeviceAllocation::handle is the cl_mem). The
///   device checks every allocation it is handed against its own table and every range against
///   the allocation's size, so a foreign or stale allocation is a clear PreconditionError rather
///   than an OpenCL error deep in a queue.
/// - Peer copies: devices of the same Context copy with clEnqueueCopyBuffer on the destination's
///   queue; can_copy_from_peer is false across contexts.
/// - Rect copies: clEnqueueWriteBufferRect / clEnqueueReadBufferRect; a pitch of 0 means tightly
///   packed, as in OpenCL.
/// Every hook is thread-safe.
class OpenCLDevice final : public Device {
 public:
  OpenCLDevice(std::shared_ptr<const Context> context, DeviceInfo info,
               QueueOrder order = QueueOrder::out_of_order);
  /// Waits for the queue, then releases the queue and every allocation not yet freed.
  ~OpenCLDevice() override;
  OpenCLDevice(const OpenCLDevice&) = delete;
  OpenCLDevice& operator=(const OpenCLDevice&) = delete;

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] std::string driver() const override { return "opencl"; }
  /// CL_DEVICE_GLOBAL_MEM_SIZE; allocate() refuses to go beyond it.
  [[nodiscard]] std::uint64_t capacity() const override { return info_.global_mem_bytes; }
  /// CL_DEVICE_MAX_MEM_ALLOC_SIZE; allocate() refuses larger allocations.
  [[nodiscard]] std::uint64_t max_allocation() const override { return info_.max_alloc_bytes; }
  /// CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: a sub-buffer's origin must be a multiple of it.
  [[nodiscard]] std::uint64_t argument_offset_alignment() const override {
    return info_.base_addr_align_bytes;
  }

  DeviceAllocation allocate(std::uint64_t bytes) override;
  void free(DeviceAllocation allocation) override;

  Event copy_host_to_device(const std::byte* src, DeviceAllocation dst, std::uint64_t dst_offset,
                            std::uint64_t bytes, std::span<const Event> deps) override;
  Event copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset, std::byte* dst,
                            std::uint64_t bytes, std::span<const Event> deps) override;
  Event copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset, DeviceAllocation dst,
                              std::uint64_t dst_offset, std::uint64_t bytes,
                              std::span<const Event> deps) override;

  [[nodiscard]] bool can_copy_from_peer(const Device& source) const override;
  Event copy_from_peer(const Device& source, DeviceAllocation src, std::uint64_t src_offset,
                       DeviceAllocation dst, std::uint64_t dst_offset, std::uint64_t bytes,
                       std::span<const Event> deps) override;

  Event copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst, const RectCopy& rect,
                                 std::span<const Event> deps) override;
  Event copy_device_to_host_rect(DeviceAllocation src, std::byte* dst, const RectCopy& rect,
                                 std::span<const Event> deps) override;

  /// kernel must be an OpenCLKernel of this device's Context.
  Event launch(const CompiledKernel& kernel, const NDRange& range, std::span<const KernelArg> args,
               std::span<const Event> deps) override;
  /// launch, with no cl_event of its own when it waits for nothing but earlier kernels of this
  /// device (or finished commands): a QueuedKernelEventState (no times()).
  Event launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                             std::span<const KernelArg> args, std::span<const Event> deps) override;
  /// Null, known finished, or a kernel of this device's KernelQueue (WaitList::empty_for).
  [[nodiscard]] bool orders_after(const Event& previous) const override;
  /// launch_without_times after this device's earlier kernels, with no event state at all: only
  /// the sequence number of the KernelQueue. Flushed every kInOrderFlushEvery launches (and by
  /// in_order_event), not at each one.
  std::uint64_t launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                std::span<const KernelArg> args) override;
  /// Only the enqueue when the kernel's last launch was launch_in_order(_again) on this device
  /// with its arguments held (OpenCLKernel::in_order_device): no kernel lock, no argument checks.
  std::uint64_t launch_in_order_again(const CompiledKernel& kernel, const NDRange& range,
                                      std::span<const KernelArg> args) override;
  /// A QueuedKernelEventState of the kernel numbered sequence; flushes the kernel queue.
  Event in_order_event(std::uint64_t sequence) override;
  /// KernelQueue::finished_through.
  [[nodiscard]] bool in_order_finished(std::uint64_t sequence) const override;

  void finish() override;
  /// Replaces the queues by ones with (or without) CL_QUEUE_PROFILING_ENABLE; the events of later
  /// commands then report their profiling times. Waits for nothing: the old queues run what they
  /// hold, the new kernel queue's kernels run after the old one's (KernelQueue), finish() waits
  /// for both.
  void set_profiling(bool on) override;

  /// Builds source for every device of this device's Context (its build_domain()).
  [[nodiscard]] std::shared_ptr<const CompiledProgram> build_program(
      const std::string& source, const std::string& options = {}) const override;
  [[nodiscard]] const void* build_domain() const override { return context_.get(); }
  /// build_program with the driver's own type (kernels with their OpenCL handles).
  [[nodiscard]] std::shared_ptr<OpenCLProgram> build_opencl_program(std::string source,
                                                                    std::string options = {}) const;

  [[nodiscard]] const DeviceInfo& info() const { return info_; }
  [[nodiscard]] const std::shared_ptr<const Context>& context() const { return context_; }
  [[nodiscard]] bool out_of_order() const { return out_of_order_; }
  /// Bytes currently allocated on this device.
  [[nodiscard]] std::uint64_t allocated_bytes() const;

  /// The cl_mem of allocation after checking that it belongs to this device and that
  /// [offset, offset + bytes) lies inside it; throws PreconditionError naming `operation`.
  [[nodiscard]] cl_mem buffer(DeviceAllocation allocation, std::uint64_t offset,
                              std::uint64_t bytes, std::string_view operation) const;

 private:
  // Builds the wait list from deps, runs enqueue(num_events, wait_list, &event) and wraps the
  // event; `call` and `operation` name the OpenCL call and what it did, for errors.
  template <typename Enqueue>
  Event submit(std::string_view call, std::string operation, std::span<const Event> deps,
               Enqueue&& enqueue);
  // submit with an operation text the event shares; `detail()` builds a fuller text, only for an
  // enqueue that fails.
  template <typename Enqueue, typename Detail>
  Event submit_shared(std::string_view call, std::shared_ptr<const std::string> operation,
                      const Detail& detail, std::span<const Event> deps, Enqueue&& enqueue);
  // The launches: own_event says whether the kernel gets a cl_event of its own; in_order (then
  // deps is empty and own_event false) receives the kernel's sequence number instead of an event
  // state (launch_in_order: the result is null).
  Event launch_kernel(const CompiledKernel& kernel, const NDRange& range,
                      std::span<const KernelArg> args, std::span<const Event> deps, bool own_event,
                      std::uint64_t* in_order = nullptr);
  // After the in-order kernel numbered sequence: a flush of the kernel queue every
  // kInOrderFlushEvery of them (launch_in_order).
  void flush_in_order(std::uint64_t sequence);
  // Enqueues k over range on the kernel queue with the arguments it holds, no wait list and no
  // event; returns its sequence number (flushed as flush_in_order says).
  std::uint64_t enqueue_in_order(const OpenCLKernel& k, const NDRange& range);
  // buffer() with the operation's name built only for an error.
  template <typename Where>
  [[nodiscard]] cl_mem checked_buffer(DeviceAllocation allocation, std::uint64_t offset,
                                      std::uint64_t bytes, const Where& operation) const;
  // "launch of kernel "NAME" on device D", built once per kernel name: a launch's event names
  // its command without building text at every launch.
  [[nodiscard]] std::shared_ptr<const std::string> launch_text(const std::string& kernel) const;

  std::shared_ptr<const Context> context_;
  DeviceInfo info_;
  std::string name_;
  bool out_of_order_ = false;
  bool profiling_ = false;
  cl_command_queue queue_ = nullptr;      // copies
  std::shared_ptr<KernelQueue> kernels_;  // kernels (in-order)
  // The queues set_profiling replaced, held until the device goes (finish_queues waits for the
  // copy queues; the kernel queues run before the current one).
  struct Replaced {
    cl_command_queue copies;
    std::shared_ptr<KernelQueue> kernels;
  };
  std::vector<Replaced> replaced_;
  // Creates queue_ and kernels_ (after `previous`'s kernels, KernelQueue); on failure neither
  // is changed.
  void create_queue(KernelQueue* previous = nullptr);
  // clFinish on both queues; the kernels enqueued before are then known finished.
  void finish_queues();

  mutable std::mutex launch_texts_mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const std::string>> launch_texts_;
  mutable std::string last_launch_kernel_;  // launch_text's last answer, for this name
  mutable std::shared_ptr<const std::string> last_launch_text_;

  mutable std::mutex allocations_mutex_;
  std::unordered_map<void*, std::uint64_t> allocations_;  // cl_mem -> size
  std::uint64_t allocated_bytes_ = 0;
};

}  // namespace unimem::opencl
