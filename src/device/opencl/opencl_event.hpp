#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unimem/event.hpp>
#include "common/word_mutex.hpp"
#include "device/opencl/opencl_api.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem::opencl {

class KernelQueue;

/// An Event backed by a cl_event. Owns one reference to it. wait() and a failed status throw a
/// DeviceError naming the operation; on_complete uses clSetEventCallback, so callbacks run on the
/// OpenCL implementation's notification thread (or inline when the event already finished).
class ClEventState final : public EventState {
 public:
  /// Takes over the reference the enqueue call returned and keeps context alive. `operation`
  /// describes the command and its device, for error messages ("clEnqueueWriteBuffer on
  /// pocl:...#0"); shared, so that repeated launches need not build it each time.
  ClEventState(cl_event event, std::shared_ptr<const Context> context,
               std::shared_ptr<const std::string> operation);
  ~ClEventState() override;
  ClEventState(const ClEventState&) = delete;
  ClEventState& operator=(const ClEventState&) = delete;

  void wait() override;
  [[nodiscard]] bool is_complete() const override;
  /// Whether is_complete() has seen it finished: no clGetEventInfo.
  [[nodiscard]] bool known_complete() const override {
    return final_status_.load(std::memory_order_acquire) != kUnknown;
  }
  void on_complete(std::function<void()> callback) override;
  /// CL_PROFILING_COMMAND_QUEUED / START / END on the device's clock; nullopt unless the command
  /// has finished and its queue profiles (OpenCLDevice::set_profiling).
  [[nodiscard]] std::optional<EventTimes> times() const override;

  /// The DeviceError of a failed command, null otherwise (also while it still runs). Never blocks.
  [[nodiscard]] std::exception_ptr failure() const;

  [[nodiscard]] cl_event handle() const { return event_; }
  [[nodiscard]] cl_context context() const { return context_->handle(); }
  /// The KernelQueue of a kernel enqueued there with an empty wait list (set_ordered_in), else
  /// null: the later kernels of that queue leave it out of their wait lists, as they leave out
  /// a QueuedKernelEventState (WaitList).
  [[nodiscard]] const KernelQueue* ordered_in() const { return ordered_in_.get(); }
  /// Marks the event as that of a kernel enqueued on `queue` with an empty wait list. Call once,
  /// before the event is shared.
  void set_ordered_in(std::shared_ptr<const KernelQueue> queue) { ordered_in_ = std::move(queue); }

 private:
  [[nodiscard]] cl_int status() const;

  cl_event event_;
  // Keeps the context alive as long as the event (WaitList compares contexts by handle, and a
  // released context's handle could be reused by a new one), without a driver call per event.
  std::shared_ptr<const Context> context_;
  std::shared_ptr<const std::string> operation_;
  // Held, not only compared: a destroyed queue's address may be a new queue's.
  std::shared_ptr<const KernelQueue> ordered_in_;
  // The final status (CL_COMPLETE or a negative error) once the command is seen finished, else
  // kUnknown: a finished event never changes, so later is_complete() and failure() calls need
  // no clGetEventInfo. The runtime asks often (hazard tracking, in-flight lists, wait lists),
  // and each query takes the driver's locks (POCL: 40% of the submitting thread in
  // floyd-warshall, 1024 launches).
  static constexpr cl_int kUnknown = 0x7fffffff;
  mutable std::atomic<cl_int> final_status_{kUnknown};
};

/// Storage for the event states of kernels enqueued without a cl_event (QueuedKernelEventState,
/// one per launch, with its shared_ptr control block): fixed-size blocks recycled instead of a
/// heap allocation and free per launch. A freed block goes back to one process-wide stack without
/// a lock (any thread may drop the last reference: a push, compare-and-swap); a KernelQueue takes
/// the whole stack at once (an exchange) when its own free list, under its mutex, is empty, and
/// hands out its blocks under that mutex. No block is ever popped alone from the shared stack, so
/// the stack has no ABA problem. The blocks stay reachable (the stack is a global; a queue frees
/// its list when destroyed): nothing leaks, and their number is bounded by the most event states
/// alive at once.
namespace event_blocks {
inline constexpr std::size_t kSize = 128;
struct Free {
  Free* next;
};
/// Every block freed and not yet taken by a queue, newest first.
Free* take_all() noexcept;
/// Puts a block of kSize bytes back (any thread).
void give_back(void* block) noexcept;

/// The allocator std::allocate_shared uses for one QueuedKernelEventState: it hands out the block
/// it was given (or a new one) and gives blocks back to the stack.
template <class T>
struct Allocator {
  using value_type = T;
  void* block = nullptr;
  explicit Allocator(void* given) noexcept : block(given) {}
  template <class U>
  Allocator(const Allocator<U>& other) noexcept : block(other.block) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (n * sizeof(T) > kSize || alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      if (block != nullptr) give_back(std::exchange(block, nullptr));
      return static_cast<T*>(::operator new(n * sizeof(T)));
    }
    if (block != nullptr) return static_cast<T*>(std::exchange(block, nullptr));
    return static_cast<T*>(::operator new(kSize));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) > kSize || alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      ::operator delete(p);
    } else {
      give_back(p);
    }
  }
  template <class U>
  bool operator==(const Allocator<U>& /*other*/) const noexcept {
    return true;
  }
};
}  // namespace event_blocks

/// A device's in-order queue of kernels (OpenCLDevice). Its commands run in the order they were
/// enqueued, so a kernel needs no cl_event for the later kernels of the same queue to wait for it:
/// a kernel enqueued without one gets a sequence number and a QueuedKernelEventState, and a
/// cl_event stands for it only once something asks (a wait, a query, a callback, a command of
/// another queue): a marker (clEnqueueMarkerWithWaitList, no wait list), which on an in-order
/// queue completes after every command enqueued before it. Conservative: the marker may finish
/// later than the kernel (it also waits for the kernels enqueued after it and before the marker),
/// and a failure of it is reported by every kernel it stands for. The newest marker serves every
/// kernel enqueued before it, and once one is seen finished without error every kernel it stands
/// for is known finished (finished_through), so a loop of launches asks the driver about one
/// marker now and then instead of creating, querying and releasing an event per kernel.
/// Thread-safe. The mutex is held only while enqueueing on the queue (so sequence numbers follow
/// the queue's order), never while waiting, and nothing else is locked under it.
class KernelQueue {
 public:
  /// Takes over the reference to queue; `device` names the device in error messages.
  /// `previous`: the device's kernel queue this one replaces (OpenCLDevice::set_profiling), or
  /// null. The new queue continues its numbering and first enqueues a barrier behind a marker
  /// after every kernel of it, so its commands run after those, and a number given out before
  /// still names a kernel whose predecessors a marker of this queue waits for (marker_after).
  KernelQueue(cl_command_queue queue, std::shared_ptr<const Context> context,
              const std::string& device, KernelQueue* previous = nullptr);
  ~KernelQueue();
  KernelQueue(const KernelQueue&) = delete;
  KernelQueue& operator=(const KernelQueue&) = delete;

  [[nodiscard]] cl_command_queue handle() const { return queue_; }
  [[nodiscard]] const std::shared_ptr<const Context>& context() const { return context_; }
  /// Held while a command is enqueued on the queue together with next_locked().
  [[nodiscard]] std::unique_lock<WordMutex> lock() { return std::unique_lock(mutex_); }
  /// The sequence number of the command just enqueued (call under lock(), after its enqueue
  /// succeeded).
  std::uint64_t next_locked() { return ++enqueued_; }
  /// A block for the event state of the command just enqueued (call under lock()), or null
  /// (the allocator then makes one): event_blocks.
  [[nodiscard]] void* event_block_locked() noexcept {
    if (free_blocks_ == nullptr) free_blocks_ = event_blocks::take_all();
    event_blocks::Free* b = free_blocks_;
    if (b != nullptr) free_blocks_ = b->next;
    return b;
  }
  /// The kernels enqueued so far (their largest sequence number).
  [[nodiscard]] std::uint64_t enqueued() {
    const auto held = lock();
    return enqueued_;
  }

  /// A marker after the command numbered `sequence` and the number of the last command before
  /// it: the newest marker when it came after that command, else a new one (flushed).
  struct Marker {
    std::shared_ptr<ClEventState> event;
    std::uint64_t after = 0;
  };
  [[nodiscard]] Marker marker_after(std::uint64_t sequence);

  /// Whether every command numbered up to `sequence` is known to have finished without error.
  [[nodiscard]] bool finished_through(std::uint64_t sequence) const {
    return finished_.load(std::memory_order_acquire) >= sequence;
  }
  /// Every command numbered up to `sequence` has finished without error (a marker after them did).
  void note_finished_through(std::uint64_t sequence);

 private:
  cl_command_queue queue_;
  std::shared_ptr<const Context> context_;
  std::shared_ptr<const std::string> marker_text_;
  WordMutex mutex_;             // every launch takes it: one atomic instruction a side
  std::uint64_t enqueued_ = 0;  // under mutex_
  Marker newest_;               // under mutex_
  event_blocks::Free* free_blocks_ = nullptr;  // under mutex_; owned
  std::atomic<std::uint64_t> finished_{0};
};

/// The event of a kernel enqueued on a KernelQueue without a cl_event of its own (see there):
/// complete once a marker after it is. Its times() are nullopt (Device::launch_without_times).
/// Only a kernel with an empty wait list gets one (OpenCLDevice::launch_kernel), so none of its
/// dependencies failed; a failure of the kernel's own execution is not seen (POCL completes a
/// marker after a failed command of an in-order queue normally).
class QueuedKernelEventState final : public EventState {
 public:
  QueuedKernelEventState(std::shared_ptr<KernelQueue> queue, std::uint64_t sequence)
      : queue_(std::move(queue)), sequence_(sequence) {}

  void wait() override;
  [[nodiscard]] bool is_complete() const override;
  /// Whether a marker after it was seen finished without error: no driver call.
  [[nodiscard]] bool known_complete() const override { return queue_->finished_through(sequence_); }
  void on_complete(std::function<void()> callback) override;

  [[nodiscard]] const KernelQueue* queue() const { return queue_.get(); }
  /// The marker standing for this kernel, enqueued (or shared) on the first call.
  [[nodiscard]] ClEventState& marker() const;
  /// The DeviceError of a failed marker, null otherwise (also while it still runs).
  [[nodiscard]] std::exception_ptr failure() const;

 private:
  // Small (one per launch; a once_flag, not a mutex): it stays in the allocator's fast bins.
  std::shared_ptr<KernelQueue> queue_;
  std::uint64_t sequence_;
  mutable std::once_flag marker_made_;
  mutable std::shared_ptr<ClEventState> marker_;  // set once, under marker_made_
  mutable std::uint64_t marker_after_ = 0;
};

/// Wraps a freshly enqueued cl_event into an Event; `ordered_in`: the KernelQueue of a kernel
/// enqueued there with an empty wait list (ClEventState::set_ordered_in), else null.
[[nodiscard]] Event make_event(cl_event event, std::shared_ptr<const Context> context,
                               std::shared_ptr<const std::string> operation,
                               std::shared_ptr<const KernelQueue> ordered_in = nullptr);

/// The wait list of one enqueue call, built from Device-contract deps:
/// - a ClEventState of the same context goes into the list as it is;
/// - any other unfinished event (host driver, another context, ManualEventState) is bridged by a
///   user event of this context, completed from the foreign event's on_complete (and set to an
///   error status if the foreign event failed, which fails the command);
/// - finished events are dropped, and a failed one is remembered in failed_dependency().
/// Usage: build, check failed_dependency(), enqueue with data()/size(), then arm(): the bridges are
/// connected only after the enqueue so that a user event is never released before the command
/// holds it. Destroying an unarmed list (the enqueue threw) releases its user events.
class WaitList {
 public:
  /// `ordered_by`: the KernelQueue the command goes to, if any: its own kernels' events are
  /// left out (the queue runs them first).
  WaitList(cl_context context, std::span<const Event> deps, std::string_view operation,
           const KernelQueue* ordered_by = nullptr);
  /// Whether the list of `deps` would be empty, with no failed dependency and no bridge: every
  /// one is null or a kernel of `ordered_by` enqueued with an empty wait list (a
  /// QueuedKernelEventState, or a ClEventState ordered_in it; the constructor skips those first). A
  /// launch after its queue's previous kernel builds no list then.
  [[nodiscard]] static bool empty_for(std::span<const Event> deps, const KernelQueue* ordered_by);
  ~WaitList();
  WaitList(const WaitList&) = delete;
  WaitList& operator=(const WaitList&) = delete;

  [[nodiscard]] std::exception_ptr failed_dependency() const { return failed_; }
  [[nodiscard]] const cl_event* data() const {
    if (count_ == 0) return nullptr;
    return count_ <= kInline ? inline_.data() : more_.data();
  }
  [[nodiscard]] cl_uint size() const { return static_cast<cl_uint>(count_); }
  /// Connects every bridge to its foreign event. Call once, after the enqueue succeeded.
  void arm();

 private:
  struct Bridge {
    cl_event user_event;
    Event foreign;
  };
  void add(cl_event event);
  // The list: inline while it is short (a launch mostly waits for one or two commands), so
  // building it allocates nothing; all of it in more_ once it outgrows that.
  static constexpr std::size_t kInline = 4;
  std::array<cl_event, kInline> inline_{};
  std::vector<cl_event> more_;
  std::size_t count_ = 0;
  std::vector<Bridge> bridges_;
  std::exception_ptr failed_;
};

}  // namespace unimem::opencl
