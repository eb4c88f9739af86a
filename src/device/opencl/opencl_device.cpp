#include "device/opencl/opencl_device.hpp"

#include <array>
#include <optional>
#include <sstream>
#include <typeinfo>
#include <vector>

#include "common/check.hpp"
#include "device/opencl/opencl_error.hpp"
#include "device/opencl/opencl_event.hpp"
#include "device/opencl/opencl_program.hpp"

namespace unimem::opencl {

namespace {

// launch_in_order flushes the kernel queue after every this many of its kernels (see there).
constexpr std::uint64_t kInOrderFlushEvery = 32;

// A launch's range as clEnqueueNDRangeKernel takes it: all three sizes copied (OpenCL reads the
// first dims; fixed-size copies, no memcpy calls), whether a local size is given and whether the
// range is empty (OpenCL would reject a zero size), both over the first dims.
struct ClRange {
  std::array<size_t, 3> offset{}, global{}, local{};
  bool local_given = false;
  bool empty = false;
};

ClRange cl_range(const NDRange& range) {
  ClRange r;
  for (std::uint32_t d = 0; d < 3; ++d) {
    r.offset[d] = range.offset[d];
    r.global[d] = range.global[d];
    r.local[d] = range.local[d];
  }
  for (std::uint32_t d = 0; d < range.dims; ++d) {
    r.local_given = r.local_given || range.local[d] != 0;
    r.empty = r.empty || range.global[d] == 0;
  }
  return r;
}

std::string pointer_text(const void* p) {
  std::ostringstream out;
  out << p;
  return out.str();
}

std::string triple_text(const std::array<std::uint64_t, 3>& v) {
  return "{" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) +
         "}";
}

// The bytes one side of a rect copy spans, from the start of its buffer: OpenCL's layout with
// 0 pitches meaning tightly packed.
std::uint64_t rect_extent(const std::array<std::uint64_t, 3>& origin,
                          const std::array<std::uint64_t, 3>& region, std::uint64_t row_pitch,
                          std::uint64_t slice_pitch) {
  const std::uint64_t rp = row_pitch ? row_pitch : region[0];
  const std::uint64_t sp = slice_pitch ? slice_pitch : region[1] * rp;
  return origin[0] + origin[1] * rp + origin[2] * sp + region[0] + (region[1] - 1) * rp +
         (region[2] - 1) * sp;
}

// Origins and region of a rect copy between a device buffer and host memory, as
// clEnqueue{Read,Write}BufferRect take them.
struct RectTriples {
  std::array<size_t, 3> buffer_origin;
  std::array<size_t, 3> host_origin;
  std::array<size_t, 3> region;
};

std::array<size_t, 3> size_triple(const std::array<std::uint64_t, 3>& v) {
  return {static_cast<size_t>(v[0]), static_cast<size_t>(v[1]), static_cast<size_t>(v[2])};
}

RectTriples rect_triples(const std::array<std::uint64_t, 3>& buffer_origin,
                         const std::array<std::uint64_t, 3>& host_origin,
                         const std::array<std::uint64_t, 3>& region) {
  return {size_triple(buffer_origin), size_triple(host_origin), size_triple(region)};
}

bool empty_region(const RectCopy& rect) {
  return rect.region[0] == 0 || rect.region[1] == 0 || rect.region[2] == 0;
}

Event failed_event(std::exception_ptr error) {
  auto [event, state] = Event::make_manual();
  state->fail(std::move(error));
  return event;
}

}  // namespace

OpenCLDevice::OpenCLDevice(std::shared_ptr<const Context> context, DeviceInfo info,
                           QueueOrder order)
    : context_(std::move(context)),
      info_(std::move(info)),
      name_(info_.unimem_name()),
      out_of_order_(order == QueueOrder::out_of_order && info_.out_of_order_queue) {
  UNIMEM_REQUIRE(context_ != nullptr, "an OpenCL device needs a context");
  bool in_context = false;
  for (const DeviceInfo& d : context_->devices())
    in_context = in_context || d.device == info_.device;
  UNIMEM_REQUIRE(in_context, "an OpenCL device must belong to the context it is opened in");
  create_queue();
}

void OpenCLDevice::create_queue(KernelQueue* previous) {
  cl_command_queue_properties properties =
      out_of_order_ ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0;
  if (profiling_) properties |= CL_QUEUE_PROFILING_ENABLE;
  cl_int status = CL_SUCCESS;
  cl_command_queue copies =
      clCreateCommandQueue(context_->handle(), info_.device, properties, &status);
  check(status, "clCreateCommandQueue", [this] { return "device " + name_; });
  cl_command_queue kernels = clCreateCommandQueue(
      context_->handle(), info_.device, profiling_ ? CL_QUEUE_PROFILING_ENABLE : 0, &status);
  if (status != CL_SUCCESS) clReleaseCommandQueue(copies);
  check(status, "clCreateCommandQueue", [this] { return "device " + name_ + " (kernels)"; });
  try {
    kernels_ = std::make_shared<KernelQueue>(kernels, context_, name_, previous);
  } catch (...) {  // the KernelQueue released its queue
    clReleaseCommandQueue(copies);
    throw;
  }
  queue_ = copies;
}

void OpenCLDevice::finish_queues() {
  // Every kernel enqueued before the clFinish has finished when it returns: later questions
  // about their events need no marker.
  const std::uint64_t kernels = kernels_->enqueued();
  check(clFinish(kernels_->handle()), "clFinish", [this] { return "device " + name_; });
  kernels_->note_finished_through(kernels);
  for (const Replaced& r : replaced_) {
    check(clFinish(r.copies), "clFinish", [this] { return "device " + name_; });
  }
  check(clFinish(queue_), "clFinish", [this] { return "device " + name_; });
}

void OpenCLDevice::set_profiling(bool on) {
  if (on == profiling_) return;
  // Nothing is waited for: later commands go to new queues while the old ones run what they
  // hold. The copy queue's commands are ordered by their wait lists alone; the kernel queue's
  // order is a promise (orders_after, launch_in_order): the new one starts behind every kernel
  // of the old one and continues its numbering (KernelQueue's constructor). The old queues are
  // flushed and kept until the device goes (finish() waits for them too).
  check(clFlush(queue_), "clFlush", [this] { return "device " + name_; });
  check(clFlush(kernels_->handle()), "clFlush", [this] { return "device " + name_; });
  replaced_.reserve(replaced_.size() + 1);
  std::shared_ptr<KernelQueue> old_kernels = kernels_;
  cl_command_queue old_copies = queue_;
  profiling_ = on;
  try {
    create_queue(old_kernels.get());
  } catch (...) {
    profiling_ = !on;
    throw;
  }
  replaced_.push_back(Replaced{old_copies, std::move(old_kernels)});
}

OpenCLDevice::~OpenCLDevice() {
  if (kernels_) clFinish(kernels_->handle());
  if (queue_ != nullptr) clFinish(queue_);
  for (const Replaced& r : replaced_) {
    clFinish(r.copies);
    clReleaseCommandQueue(r.copies);
  }
  replaced_.clear();  // the kernel queues (their destructors release them)
  if (!allocations_.empty()) context_->note_buffer_released();
  for (const auto& [handle, size] : allocations_) {
    clReleaseMemObject(static_cast<cl_mem>(handle));
  }
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
}

DeviceAllocation OpenCLDevice::allocate(std::uint64_t bytes) {
  UNIMEM_REQUIRE(bytes > 0, "an allocation must have at least one byte");
  if (bytes > info_.max_alloc_bytes) {
    throw DeviceError("allocate: " + std::to_string(bytes) + " bytes on device " + name_ +
                          " exceed its largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE = " +
                          std::to_string(info_.max_alloc_bytes) + " bytes)",
                      CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE");
  }
  std::lock_guard lock(allocations_mutex_);
  if (bytes > capacity() - allocated_bytes_) {
    throw DeviceError("allocate: " + std::to_string(bytes) + " bytes on device " + name_ +
                          " do not fit: " + std::to_string(allocated_bytes_) + " of " +
                          std::to_string(capacity()) + " bytes are in use",
                      CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE");
  }
  cl_int status = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context_->handle(), CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer",
        [&] { return "device " + name_ + " (" + std::to_string(bytes) + " bytes)"; });
  allocations_.emplace(mem, bytes);
  allocated_bytes_ += bytes;
  return DeviceAllocation{mem, bytes};
}

void OpenCLDevice::free(DeviceAllocation allocation) {
  std::lock_guard lock(allocations_mutex_);
  const auto it = allocations_.find(allocation.handle);
  if (it == allocations_.end()) {
    throw PreconditionError("free: allocation " + pointer_text(allocation.handle) +
                            " is not a live allocation of device " + name_);
  }
  allocated_bytes_ -= it->second;
  allocations_.erase(it);
  context_->note_buffer_released();  // before: a kernel argument may name this handle
  check(clReleaseMemObject(static_cast<cl_mem>(allocation.handle)), "clReleaseMemObject",
        [&] { return "device " + name_ + ", buffer " + pointer_text(allocation.handle); });
}

std::uint64_t OpenCLDevice::allocated_bytes() const {
  std::lock_guard lock(allocations_mutex_);
  return allocated_bytes_;
}

template <typename Where>
cl_mem OpenCLDevice::checked_buffer(DeviceAllocation allocation, std::uint64_t offset,
                                    std::uint64_t bytes, const Where& operation) const {
  std::uint64_t size = 0;
  {
    std::lock_guard lock(allocations_mutex_);
    const auto it = allocations_.find(allocation.handle);
    if (it == allocations_.end()) {
      throw PreconditionError(operation() + ": allocation " + pointer_text(allocation.handle) +
                              " is not a live allocation of device " + name_);
    }
    size = it->second;
  }
  if (offset > size || bytes > size - offset) {
    throw PreconditionError(operation() + ": bytes [" + std::to_string(offset) + ", " +
                            std::to_string(offset) + " + " + std::to_string(bytes) +
                            ") lie outside allocation " + pointer_text(allocation.handle) + " (" +
                            std::to_string(size) + " bytes) of device " + name_);
  }
  return static_cast<cl_mem>(allocation.handle);
}

cl_mem OpenCLDevice::buffer(DeviceAllocation allocation, std::uint64_t offset, std::uint64_t bytes,
                            std::string_view operation) const {
  return checked_buffer(allocation, offset, bytes, [&] { return std::string(operation); });
}

template <typename Enqueue, typename Detail>
Event OpenCLDevice::submit_shared(std::string_view call,
                                  std::shared_ptr<const std::string> operation,
                                  const Detail& detail, std::span<const Event> deps,
                                  Enqueue&& enqueue) {
  WaitList wait_list(context_->handle(), deps, *operation);
  if (auto failed = wait_list.failed_dependency()) return failed_event(std::move(failed));
  cl_event event = nullptr;
  check(enqueue(wait_list.size(), wait_list.data(), &event), call, detail);
  wait_list.arm();
  Event result = make_event(event, context_, std::move(operation));
  // Start the command now: without a flush an implementation may hold it until a blocking call.
  check(clFlush(queue_), "clFlush", [this] { return "device " + name_; });
  return result;
}

template <typename Enqueue>
Event OpenCLDevice::submit(std::string_view call, std::string operation,
                           std::span<const Event> deps, Enqueue&& enqueue) {
  auto shared = std::make_shared<const std::string>(std::move(operation));
  const std::string& text = *shared;
  return submit_shared(
      call, std::move(shared), [&text] { return text; }, deps, std::forward<Enqueue>(enqueue));
}

std::shared_ptr<const std::string> OpenCLDevice::launch_text(const std::string& kernel) const {
  std::lock_guard lock(launch_texts_mutex_);
  // Launches mostly repeat one kernel: a name comparison instead of hashing it each time.
  if (last_launch_text_ && last_launch_kernel_ == kernel) return last_launch_text_;
  auto& text = launch_texts_[kernel];
  if (!text) {
    std::string t = "launch of kernel \"";  // += : GCC 12 warns falsely on a + chain here
    t += kernel;
    t += "\" on device ";
    t += name_;
    text = std::make_shared<const std::string>(std::move(t));
  }
  last_launch_kernel_ = kernel;
  last_launch_text_ = text;
  return text;
}

Event OpenCLDevice::copy_host_to_device(const std::byte* src, DeviceAllocation dst,
                                        std::uint64_t dst_offset, std::uint64_t bytes,
                                        std::span<const Event> deps) {
  cl_mem mem = buffer(dst, dst_offset, bytes, "copy_host_to_device");
  if (bytes == 0) return when_all(deps);
  UNIMEM_REQUIRE(src != nullptr, "copy_host_to_device needs a source pointer");
  return submit(
      "clEnqueueWriteBuffer",
      "copy of " + std::to_string(bytes) + " bytes from host " + pointer_text(src) + " to buffer " +
          pointer_text(mem) + "+" + std::to_string(dst_offset) + " on device " + name_,
      deps, [&](cl_uint n, const cl_event* wait, cl_event* event) {
        return clEnqueueWriteBuffer(queue_, mem, CL_FALSE, dst_offset, bytes, src, n, wait, event);
      });
}

Event OpenCLDevice::copy_device_to_host(DeviceAllocation src, std::uint64_t src_offset,
                                        std::byte* dst, std::uint64_t bytes,
                                        std::span<const Event> deps) {
  cl_mem mem = buffer(src, src_offset, bytes, "copy_device_to_host");
  if (bytes == 0) return when_all(deps);
  UNIMEM_REQUIRE(dst != nullptr, "copy_device_to_host needs a destination pointer");
  return submit(
      "clEnqueueReadBuffer",
      "copy of " + std::to_string(bytes) + " bytes from buffer " + pointer_text(mem) + "+" +
          std::to_string(src_offset) + " on device " + name_ + " to host " + pointer_text(dst),
      deps, [&](cl_uint n, const cl_event* wait, cl_event* event) {
        return clEnqueueReadBuffer(queue_, mem, CL_FALSE, src_offset, bytes, dst, n, wait, event);
      });
}

Event OpenCLDevice::copy_device_to_device(DeviceAllocation src, std::uint64_t src_offset,
                                          DeviceAllocation dst, std::uint64_t dst_offset,
                                          std::uint64_t bytes, std::span<const Event> deps) {
  return copy_from_peer(*this, src, src_offset, dst, dst_offset, bytes, deps);
}

bool OpenCLDevice::can_copy_from_peer(const Device& source) const {
  const auto* peer = dynamic_cast<const OpenCLDevice*>(&source);
  return peer != nullptr && peer->context_ == context_;
}

Event OpenCLDevice::copy_from_peer(const Device& source, DeviceAllocation src,
                                   std::uint64_t src_offset, DeviceAllocation dst,
                                   std::uint64_t dst_offset, std::uint64_t bytes,
                                   std::span<const Event> deps) {
  if (!can_copy_from_peer(source)) {
    throw DeviceError("copy_from_peer: device " + name_ + " cannot read memory of device " +
                      source.name() + " directly (not in the same OpenCL context)");
  }
  const auto& peer = static_cast<const OpenCLDevice&>(source);
  cl_mem from = peer.buffer(src, src_offset, bytes, "copy_from_peer (source)");
  cl_mem to = buffer(dst, dst_offset, bytes, "copy_from_peer (destination)");
  if (bytes == 0) return when_all(deps);
  return submit("clEnqueueCopyBuffer",
                "copy of " + std::to_string(bytes) + " bytes from buffer " + pointer_text(from) +
                    "+" + std::to_string(src_offset) + " of device " + peer.name_ + " to buffer " +
                    pointer_text(to) + "+" + std::to_string(dst_offset) + " on device " + name_,
                deps, [&](cl_uint n, const cl_event* wait, cl_event* event) {
                  return clEnqueueCopyBuffer(queue_, from, to, src_offset, dst_offset, bytes, n,
                                             wait, event);
                });
}

Event OpenCLDevice::copy_host_to_device_rect(const std::byte* src, DeviceAllocation dst,
                                             const RectCopy& rect, std::span<const Event> deps) {
  const std::uint64_t extent =
      empty_region(rect)
          ? 0
          : rect_extent(rect.dst_origin, rect.region, rect.dst_row_pitch, rect.dst_slice_pitch);
  cl_mem mem = buffer(dst, 0, extent, "copy_host_to_device_rect");
  if (extent == 0) return when_all(deps);
  const RectTriples t = rect_triples(rect.dst_origin, rect.src_origin, rect.region);
  return submit("clEnqueueWriteBufferRect",
                "rect copy of region " + triple_text(rect.region) + " from host " +
                    pointer_text(src) + " to buffer " + pointer_text(mem) + " origin " +
                    triple_text(rect.dst_origin) + " on device " + name_,
                deps, [&](cl_uint n, const cl_event* wait, cl_event* event) {
                  return clEnqueueWriteBufferRect(
                      queue_, mem, CL_FALSE, t.buffer_origin.data(), t.host_origin.data(),
                      t.region.data(), rect.dst_row_pitch, rect.dst_slice_pitch, rect.src_row_pitch,
                      rect.src_slice_pitch, src, n, wait, event);
                });
}

Event OpenCLDevice::copy_device_to_host_rect(DeviceAllocation src, std::byte* dst,
                                             const RectCopy& rect, std::span<const Event> deps) {
  const std::uint64_t extent =
      empty_region(rect)
          ? 0
          : rect_extent(rect.src_origin, rect.region, rect.src_row_pitch, rect.src_slice_pitch);
  cl_mem mem = buffer(src, 0, extent, "copy_device_to_host_rect");
  if (extent == 0) return when_all(deps);
  const RectTriples t = rect_triples(rect.src_origin, rect.dst_origin, rect.region);
  return submit("clEnqueueReadBufferRect",
                "rect copy of region " + triple_text(rect.region) + " from buffer " +
                    pointer_text(mem) + " origin " + triple_text(rect.src_origin) + " on device " +
                    name_ + " to host " + pointer_text(dst),
                deps, [&](cl_uint n, const cl_event* wait, cl_event* event) {
                  return clEnqueueReadBufferRect(
                      queue_, mem, CL_FALSE, t.buffer_origin.data(), t.host_origin.data(),
                      t.region.data(), rect.src_row_pitch, rect.src_slice_pitch, rect.dst_row_pitch,
                      rect.dst_slice_pitch, dst, n, wait, event);
                });
}

Event OpenCLDevice::launch(const CompiledKernel& kernel, const NDRange& range,
                           std::span<const KernelArg> args, std::span<const Event> deps) {
  return launch_kernel(kernel, range, args, deps, true);
}

Event OpenCLDevice::launch_without_times(const CompiledKernel& kernel, const NDRange& range,
                                         std::span<const KernelArg> args,
                                         std::span<const Event> deps) {
  return launch_kernel(kernel, range, args, deps, false);
}

bool OpenCLDevice::orders_after(const Event& previous) const {
  return WaitList::empty_for(std::span<const Event>(&previous, 1), kernels_.get());
}

namespace {

// Whether the cl_kernel holds exactly args from its last launch, as launch_kernel set them (so
// launch_kernel would set none again and check no buffer: see there).
bool holds_arguments(const OpenCLKernel::ArgumentsSet& set, std::span<const KernelArg> args) {
  if (set.values.size() != args.size()) return false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const OpenCLKernel::ArgumentsSet::Value& value = set.values[i];
    const KernelArg& arg = args[i];
    if (!value.known || value.kind != arg.kind) return false;
    switch (arg.kind) {
      case KernelArg::Kind::buffer:
        if (arg.buffer_offset != 0 || arg.allocation_base != 0 ||
            value.mem != static_cast<cl_mem>(arg.buffer.handle)) {
          return false;
        }
        break;
      case KernelArg::Kind::null_buffer:
        break;
      case KernelArg::Kind::scalar:
        if (value.bytes != arg.scalar_bytes) return false;
        break;
      case KernelArg::Kind::local_memory:
        if (value.local_bytes != arg.local_bytes) return false;
        break;
    }
  }
  return true;
}

}  // namespace

std::uint64_t OpenCLDevice::launch_in_order(const CompiledKernel& kernel, const NDRange& range,
                                            std::span<const KernelArg> args) {
  // The common case, a streak's repeat: the kernel's last launch was on this device with these
  // arguments, no buffer of the context released since. Then launch_kernel would check nothing
  // new and set no argument: only the enqueue is left (under the kernel's lock, as there).
  if (typeid(kernel) == typeid(OpenCLKernel)) {
    const auto& k = static_cast<const OpenCLKernel&>(kernel);
    auto lock = k.launch_lock();
    const OpenCLKernel::ArgumentsSet& set = k.arguments_set(lock);
    const bool valid = range.dims >= 1 && range.dims <= 3 && !cl_range(range).empty;
    const auto held_here = [&] {
      return valid && set.device == this && set.released_at == context_->buffers_released() &&
             holds_arguments(set, args);
    };
    if (held_here()) {
      const std::uint64_t sequence = enqueue_in_order(k, range);
      k.in_order_device(lock) = this;
      return sequence;
    }
    lock.unlock();
    std::uint64_t sequence = 0;
    launch_kernel(kernel, range, args, {}, false, &sequence);
    // The cl_kernel now holds args for this device when they were all remembered (no sub-buffer
    // view): launch_in_order_again may enqueue it again as it is.
    lock.lock();
    if (held_here()) k.in_order_device(lock) = this;
    return sequence;
  }
  std::uint64_t sequence = 0;
  launch_kernel(kernel, range, args, {}, false, &sequence);
  return sequence;
}

// The kernel's last launch was launch_in_order's on this device (in_order_device), whose
// arguments the cl_kernel still holds: every launch of the kernel since would have cleared it
// (launch_kernel) or set it to its own device, and none ran at once with this one (the caller's
// promise), so neither the lock nor the argument checks are needed. Invariant builds check it.
std::uint64_t OpenCLDevice::launch_in_order_again(const CompiledKernel& kernel,
                                                  const NDRange& range,
                                                  std::span<const KernelArg> args) {
  if (typeid(kernel) == typeid(OpenCLKernel)) {
    const auto& k = static_cast<const OpenCLKernel&>(kernel);
    if (k.in_order_device_unlocked() == this) {
#if UNIMEM_INVARIANTS_ENABLED
      {
        auto lock = k.launch_lock();
        const OpenCLKernel::ArgumentsSet& set = k.arguments_set(lock);
        if (set.device != this || !holds_arguments(set, args)) {
          detail::throw_invariant("launch_in_order_again of kernel \"" + k.name() +
                                      "\" on device " + name_ +
                                      ": the kernel does not hold these arguments",
                                  __FILE__, __LINE__);
        }
      }
#endif
      return enqueue_in_order(k, range);
    }
  }
  return launch_in_order(kernel, range, args);
}

std::uint64_t OpenCLDevice::enqueue_in_order(const OpenCLKernel& k, const NDRange& range) {
  const ClRange r = cl_range(range);
  std::uint64_t sequence = 0;
  {
    const auto queue_lock = kernels_->lock();
    const cl_int status = clEnqueueNDRangeKernel(
        kernels_->handle(), k.handle(), range.dims, r.offset.data(), r.global.data(),
        r.local_given ? r.local.data() : nullptr, 0, nullptr, nullptr);
    check(status, "clEnqueueNDRangeKernel", [&] {
      return "launch of kernel \"" + k.name() + "\" over global " + triple_text(range.global) +
             " on device " + name_;
    });
    sequence = kernels_->next_locked();
  }
  flush_in_order(sequence);
  return sequence;
}

bool OpenCLDevice::in_order_finished(std::uint64_t sequence) const {
  return kernels_->finished_through(sequence);
}

void OpenCLDevice::flush_in_order(std::uint64_t sequence) {
  if (sequence % kInOrderFlushEvery == 0) {
    check(clFlush(kernels_->handle()), "clFlush", [this] { return "device " + name_; });
  }
}

Event OpenCLDevice::in_order_event(std::uint64_t sequence) {
  check(clFlush(kernels_->handle()), "clFlush", [this] { return "device " + name_; });
  return Event(std::make_shared<QueuedKernelEventState>(kernels_, sequence));
}

Event OpenCLDevice::launch_kernel(const CompiledKernel& kernel, const NDRange& range,
                                  std::span<const KernelArg> args, std::span<const Event> deps,
                                  bool own_event, std::uint64_t* in_order) {
  // OpenCLKernel is final: comparing types is enough (cheaper than dynamic_cast, every launch).
  const auto* cl_kernel_object =
      typeid(kernel) == typeid(OpenCLKernel) ? static_cast<const OpenCLKernel*>(&kernel) : nullptr;
  if (cl_kernel_object == nullptr) {
    throw DeviceError("launch of kernel \"" + kernel.name() + "\" on device " + name_ +
                      ": the kernel was not compiled by the opencl driver");
  }
  const OpenCLKernel& k = *cl_kernel_object;
  if (&k.context() != context_.get()) {
    throw DeviceError("launch of kernel \"" + k.name() + "\" on device " + name_ +
                      ": the kernel was built for another OpenCL context (" +
                      k.context().description() + ")");
  }
  UNIMEM_REQUIRE(range.dims >= 1 && range.dims <= 3, "an NDRange has 1, 2 or 3 dimensions");
  if (args.size() != k.argument_count()) {
    throw PreconditionError("launch of kernel \"" + k.name() + "\" on device " + name_ + ": " +
                            std::to_string(args.size()) + " arguments given, the kernel takes " +
                            std::to_string(k.argument_count()));
  }
  // Arguments are captured at enqueue time: hold the kernel from the first clSetKernelArg to the
  // enqueue so concurrent launches cannot interleave. Taken first: what the kernel remembers of
  // its last launch (ArgumentsSet) spares this one the checks and text that did not change.
  auto lock = k.launch_lock();
  OpenCLKernel::ArgumentsSet& set = k.arguments_set(lock);
  k.in_order_device(lock) = nullptr;  // launch_in_order sets it again after its own
  const std::uint64_t released = context_->buffers_released();
  if (set.released_at != released || set.values.size() != args.size()) {
    set.values.assign(args.size(), {});
    set.released_at = released;
  }
  const bool same_device = set.device == this;
  // Resolve and check every buffer. An argument that points into its allocation gets a
  // sub-buffer, released once enqueued (OpenCL keeps a memory object alive while commands that
  // use it are outstanding).
  // Kernels rarely take more than a few buffers: no allocation for them on every launch.
  constexpr std::size_t kInlineArgs = 16;
  // Not initialised: an entry is read only for a buffer argument, after the loop below set it.
  std::array<cl_mem, kInlineArgs> inline_buffers;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  std::vector<cl_mem> many_buffers;
  if (args.size() > kInlineArgs) many_buffers.assign(args.size(), nullptr);
  cl_mem* const buffers = args.size() > kInlineArgs ? many_buffers.data() : inline_buffers.data();
  struct SubBuffers {
    std::vector<cl_mem> list;
    SubBuffers() = default;
    SubBuffers(const SubBuffers&) = delete;
    SubBuffers& operator=(const SubBuffers&) = delete;
    ~SubBuffers() {
      for (cl_mem v : list) clReleaseMemObject(v);
    }
  } views;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != KernelArg::Kind::buffer) continue;
    const auto what = [&] {
      return "launch of kernel \"" + k.name() + "\", argument " + std::to_string(i);
    };
    if (args[i].allocation_base != 0) {
      throw PreconditionError(what() + ": a rebased argument (allocation base " +
                              std::to_string(args[i].allocation_base) +
                              "): OpenCL devices take the base through a rewritten kernel");
    }
    const std::uint64_t at = args[i].buffer_offset;
    // The handle this kernel's last launch on this device checked and set, or the one it held
    // before (a ping-pong alternates two), no buffer of the context released since: it is still
    // one of this device's allocations. Checking it again cost a lock and a hash lookup whose
    // length follows where the allocator put the handles (up to 13 instructions more per launch
    // in one runtime than in another of the same process, --instructions' noise floor).
    OpenCLKernel::ArgumentsSet::Value& value = set.values[i];
    const auto handle = static_cast<cl_mem>(args[i].buffer.handle);
    const bool holds_buffer = same_device && value.known && value.kind == KernelArg::Kind::buffer;
    if (!same_device) value.checked = nullptr;  // another device's
    if (at == 0 && holds_buffer && value.mem == handle) {
      buffers[i] = handle;
      continue;
    }
    const bool checked_before =
        at == 0 && same_device && handle != nullptr && value.checked == handle;
    buffers[i] = checked_before ? handle : checked_buffer(args[i].buffer, at, 0, what);
    if (at == 0 && holds_buffer) value.checked = value.mem;  // (replaced by handle below)
    if (at == 0) continue;
    if (at >= args[i].buffer.size) {
      throw PreconditionError(what() + ": a pointer " + std::to_string(at) +
                              " bytes into an allocation of " +
                              std::to_string(args[i].buffer.size) + " bytes has no bytes to use");
    }
    const cl_buffer_region region{at, args[i].buffer.size - at};
    cl_int status = CL_SUCCESS;
    cl_mem view = clCreateSubBuffer(buffers[i], 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
    check(status, "clCreateSubBuffer", [&] {
      return what() + " on device " + name_ + " at byte offset " + std::to_string(at) +
             " (the offset must be a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN)";
    });
    views.list.push_back(view);
    buffers[i] = view;
  }
  // (Named references, not a structured binding: the lambdas below capture them.)
  const ClRange r = cl_range(range);
  const std::array<size_t, 3>& offset = r.offset;
  const std::array<size_t, 3>& global = r.global;
  const std::array<size_t, 3>& local = r.local;
  const bool local_given = r.local_given;
  if (r.empty) {  // nothing to run; OpenCL would reject a zero size
    if (in_order != nullptr) *in_order = kernels_->enqueued();  // its predecessors stand for it
    return when_all(deps);
  }

  const auto detail = [&] {
    return "launch of kernel \"" + k.name() + "\" over global " + triple_text(range.global) +
           " offset " + triple_text(range.offset) + " local " + triple_text(range.local) +
           " on device " + name_;
  };
  if (!same_device || !set.launch_text) set.launch_text = launch_text(k.name());
  // A launch right after its queue's previous kernel (the runtime's chained launches) has an empty
  // wait list: none is built (WaitList::empty_for).
  const bool ordered = WaitList::empty_for(deps, kernels_.get());
  // Its own copy, for the wait list and the cl_event (a kernel gets one when own_event or when it
  // waits for anything: then not ordered): set is the kernel's, and another thread may change it
  // once the enqueue below lets go of the kernel's lock.
  std::shared_ptr<const std::string> text;
  if (own_event || !ordered) text = set.launch_text;
  set.device = nullptr;  // until every argument is set below
  // As submit_shared, on the kernel queue: the earlier kernels of this device are left out of
  // the wait list (the queue orders them), and the kernel gets a cl_event when own_event or when
  // it waits for anything else. A failed dependency fails a command only through its wait list
  // (POCL does not fail the later commands of an in-order queue, nor a marker after them), so a
  // kernel without a cl_event must have nothing in its wait list: then, by induction over the
  // queue, no dependency of a kernel without a cl_event can have failed.
  cl_event event = nullptr;
  std::uint64_t sequence = 0;
  void* event_block = nullptr;  // for the QueuedKernelEventState (event_blocks)
  const auto enqueue = [&](cl_uint n, const cl_event* wait, cl_event* event_out) {
    // Arguments the kernel already holds from the last launch are not set again.
    for (std::size_t i = 0; i < args.size(); ++i) {
      const KernelArg& arg = args[i];
      const auto index = static_cast<cl_uint>(i);
      OpenCLKernel::ArgumentsSet::Value& value = set.values[i];
      const bool view = arg.kind == KernelArg::Kind::buffer && arg.buffer_offset != 0;
      if (value.known && !view && value.kind == arg.kind) {
        bool same = false;
        switch (arg.kind) {
          case KernelArg::Kind::buffer:
            same = value.mem == buffers[i];
            break;
          case KernelArg::Kind::null_buffer:
            same = true;
            break;
          case KernelArg::Kind::scalar:
            same = value.bytes == arg.scalar_bytes;
            break;
          case KernelArg::Kind::local_memory:
            same = value.local_bytes == arg.local_bytes;
            break;
        }
        if (same) continue;
      }
      value.known = false;  // until the call below succeeds
      cl_int status = CL_SUCCESS;
      switch (arg.kind) {
        case KernelArg::Kind::buffer:
          status = clSetKernelArg(k.handle(), index, sizeof(cl_mem), &buffers[i]);
          break;
        case KernelArg::Kind::null_buffer:  // OpenCL: a NULL value for a pointer
          status = clSetKernelArg(k.handle(), index, sizeof(cl_mem), nullptr);
          break;
        case KernelArg::Kind::scalar:
          status =
              clSetKernelArg(k.handle(), index, arg.scalar_bytes.size(), arg.scalar_bytes.data());
          break;
        case KernelArg::Kind::local_memory:
          status = clSetKernelArg(k.handle(), index, arg.local_bytes, nullptr);
          break;
      }
      check(status, "clSetKernelArg", [&] {
        return "argument " + std::to_string(i) + " of kernel \"" + k.name() + "\" on device " +
               name_;
      });
      if (view) continue;  // released after this launch: its handle may name another later
      value.known = true;
      value.kind = arg.kind;
      value.mem = arg.kind == KernelArg::Kind::buffer ? buffers[i] : nullptr;
      if (arg.kind == KernelArg::Kind::scalar) value.bytes = arg.scalar_bytes;
      value.local_bytes = arg.local_bytes;
    }
    set.device = this;
    const auto queue_lock = kernels_->lock();
    const cl_int status = clEnqueueNDRangeKernel(
        kernels_->handle(), k.handle(), range.dims, offset.data(), global.data(),
        local_given ? local.data() : nullptr, n, wait, event_out);
    if (status == CL_SUCCESS) {
      sequence = kernels_->next_locked();
      if (event_out == nullptr && in_order == nullptr) event_block = kernels_->event_block_locked();
    }
    lock.unlock();  // the arguments are captured
    return status;
  };
  bool listless = ordered;  // enqueued with an empty wait list
  if (ordered) {
    check(enqueue(0, nullptr, own_event ? &event : nullptr), "clEnqueueNDRangeKernel", detail);
  } else {
    // Built only here: an ordered launch (a chained one, the lean repeat's) does not even
    // initialise one.
    WaitList wait_list(context_->handle(), deps, *text, kernels_.get());
    if (auto failed = wait_list.failed_dependency()) return failed_event(std::move(failed));
    listless = wait_list.size() == 0;
    own_event = own_event || !listless;
    check(enqueue(wait_list.size(), wait_list.data(), own_event ? &event : nullptr),
          "clEnqueueNDRangeKernel", detail);
    wait_list.arm();
  }
  if (in_order != nullptr) {
    // No event state and, but every kInOrderFlushEvery launches, no flush: whoever asks for the
    // kernel's event gets it from in_order_event, which flushes (POCL's pthread driver starts a
    // command at enqueue anyway; the periodic flush keeps a long run of them going on drivers
    // that hold commands until one).
    *in_order = sequence;
    flush_in_order(sequence);
    return Event{};
  }
  Event result =
      own_event
          ? make_event(event, context_, text, listless ? kernels_ : nullptr)
          : Event(std::allocate_shared<QueuedKernelEventState>(
                event_blocks::Allocator<QueuedKernelEventState>(event_block), kernels_, sequence));
  // Start the command now: without a flush an implementation may hold it until a blocking call.
  check(clFlush(kernels_->handle()), "clFlush", [this] { return "device " + name_; });
  return result;
}

void OpenCLDevice::finish() { finish_queues(); }

std::shared_ptr<OpenCLProgram> OpenCLDevice::build_opencl_program(std::string source,
                                                                  std::string options) const {
  return std::make_shared<OpenCLProgram>(context_, std::move(source), std::move(options));
}

std::shared_ptr<const CompiledProgram> OpenCLDevice::build_program(
    const std::string& source, const std::string& options) const {
  return build_opencl_program(source, options);
}

}  // namespace unimem::opencl
