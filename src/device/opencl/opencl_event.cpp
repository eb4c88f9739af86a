#include "device/opencl/opencl_event.hpp"

#include <memory>
#include <typeinfo>

#include <unimem/errors.hpp>
#include "device/opencl/opencl_error.hpp"

namespace unimem::opencl {

namespace {

void CL_CALLBACK run_callback(cl_event /*event*/, cl_int /*status*/, void* user_data) {
  std::unique_ptr<std::function<void()>> callback(static_cast<std::function<void()>*>(user_data));
  (*callback)();
}

// Status a bridged user event gets when its foreign event failed: any negative value terminates
// the commands waiting on it.
constexpr cl_int kForeignDependencyFailed = -1;

// The ClEventState behind an event, or null. ClEventState is final, so comparing types is enough
// (cheaper than dynamic_cast; asked for every dependency of every enqueue).
const ClEventState* as_cl_event(const EventState* state) {
  return state != nullptr && typeid(*state) == typeid(ClEventState)
             ? static_cast<const ClEventState*>(state)
             : nullptr;
}

// The QueuedKernelEventState behind an event, or null (final: comparing types is enough).
const QueuedKernelEventState* as_queued_kernel(const EventState* state) {
  return state != nullptr && typeid(*state) == typeid(QueuedKernelEventState)
             ? static_cast<const QueuedKernelEventState*>(state)
             : nullptr;
}

// The failure of a finished event, or null. Never blocks and makes no blocking OpenCL call, so it
// is safe inside an OpenCL event callback.
std::exception_ptr failure_of_finished(const Event& event) {
  if (const auto* native = as_cl_event(event.state().get())) return native->failure();
  if (const auto* queued = as_queued_kernel(event.state().get())) return queued->failure();
  try {
    event.wait();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

ClEventState::ClEventState(cl_event event, std::shared_ptr<const Context> context,
                           std::shared_ptr<const std::string> operation)
    : event_(event), context_(std::move(context)), operation_(std::move(operation)) {}

ClEventState::~ClEventState() { clReleaseEvent(event_); }

cl_int ClEventState::status() const {
  if (const cl_int known = final_status_.load(std::memory_order_acquire); known != kUnknown) {
    return known;
  }
  cl_int status = CL_COMPLETE;
  check(clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr),
        "clGetEventInfo", *operation_);
  if (status <= CL_COMPLETE) final_status_.store(status, std::memory_order_release);
  return status;
}

void ClEventState::wait() {
  // A finished command needs no clWaitForEvents, whose call costs more than the status query
  // (Runtime::finish waits for every in-flight event newest first: the older ones have mostly
  // finished by then, and one seen finished before asks the driver nothing).
  if (const cl_int now = status(); now <= CL_COMPLETE) {
    if (now < 0) throw make_error(now, "the command", *operation_);
    return;
  }
  // clWaitForEvents reports a failed command as CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  // the event's own status says why, so report that instead.
  const cl_int waited = clWaitForEvents(1, &event_);
  const cl_int final_status = status();
  if (final_status < 0) throw make_error(final_status, "the command", *operation_);
  check(waited, "clWaitForEvents", *operation_);
}

std::exception_ptr ClEventState::failure() const {
  const cl_int final_status = status();
  if (final_status >= 0) return nullptr;
  return std::make_exception_ptr(make_error(final_status, "the command", *operation_));
}

bool ClEventState::is_complete() const { return status() <= CL_COMPLETE; }

void ClEventState::on_complete(std::function<void()> callback) {
  if (is_complete()) {
    callback();
    return;
  }
  auto owned = std::make_unique<std::function<void()>>(std::move(callback));
  check(clSetEventCallback(event_, CL_COMPLETE, run_callback, owned.get()), "clSetEventCallback",
        *operation_);
  (void)owned.release();  // run_callback owns it now
}

std::optional<EventTimes> ClEventState::times() const {
  if (!is_complete()) return std::nullopt;
  cl_ulong stamps[3] = {0, 0, 0};
  const cl_profiling_info what[3] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_START,
                                     CL_PROFILING_COMMAND_END};
  for (int i = 0; i < 3; ++i) {
    // CL_PROFILING_INFO_NOT_AVAILABLE when the queue does not profile: no times, not an error.
    if (clGetEventProfilingInfo(event_, what[i], sizeof(cl_ulong), &stamps[i], nullptr) !=
        CL_SUCCESS) {
      return std::nullopt;
    }
  }
  return EventTimes{static_cast<std::int64_t>(stamps[0]), static_cast<std::int64_t>(stamps[1]),
                    static_cast<std::int64_t>(stamps[2]), false};
}

namespace event_blocks {
namespace {
std::atomic<Free*> returned{nullptr};
}  // namespace

Free* take_all() noexcept {
  if (returned.load(std::memory_order_relaxed) == nullptr) return nullptr;
  return returned.exchange(nullptr, std::memory_order_acquire);
}

void give_back(void* block) noexcept {
  auto* b = static_cast<Free*>(block);
  b->next = returned.load(std::memory_order_relaxed);
  while (!returned.compare_exchange_weak(b->next, b, std::memory_order_release,
                                         std::memory_order_relaxed)) {
  }
}
}  // namespace event_blocks

KernelQueue::KernelQueue(cl_command_queue queue, std::shared_ptr<const Context> context,
                         const std::string& device, KernelQueue* previous)
    : queue_(queue),
      context_(std::move(context)),
      marker_text_(std::make_shared<const std::string>(
          "a kernel on device " + device + " (a marker after the kernels of its queue failed)")) {
  if (previous == nullptr) return;
  const std::uint64_t before = previous->enqueued();
  if (before == 0) return;
  try {
    // The marker completes normally even after a failed kernel of its in-order queue (POCL), so
    // the barrier never waits for a failed event (a command that does never runs).
    const Marker last = previous->marker_after(before);
    cl_event after = last.event->handle();
    check(clEnqueueBarrierWithWaitList(queue_, 1, &after, nullptr), "clEnqueueBarrierWithWaitList",
          *marker_text_);
  } catch (...) {
    clReleaseCommandQueue(queue_);
    throw;
  }
  enqueued_ = before;
  finished_.store(previous->finished_.load(std::memory_order_acquire), std::memory_order_release);
}

KernelQueue::~KernelQueue() {
  newest_.event.reset();  // its cl_event before the queue
  while (free_blocks_ != nullptr)
    ::operator delete(std::exchange(free_blocks_, free_blocks_->next));
  clReleaseCommandQueue(queue_);
}

KernelQueue::Marker KernelQueue::marker_after(std::uint64_t sequence) {
  const auto held = lock();
  if (newest_.event && newest_.after >= sequence) return newest_;
  cl_event event = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &event), "clEnqueueMarkerWithWaitList",
        *marker_text_);
  newest_ = Marker{std::make_shared<ClEventState>(event, context_, marker_text_), enqueued_};
  check(clFlush(queue_), "clFlush", *marker_text_);
  return newest_;
}

void KernelQueue::note_finished_through(std::uint64_t sequence) {
  std::uint64_t now = finished_.load(std::memory_order_relaxed);
  while (now < sequence &&
         !finished_.compare_exchange_weak(now, sequence, std::memory_order_acq_rel)) {
  }
}

ClEventState& QueuedKernelEventState::marker() const {
  // A throwing enqueue leaves the flag unset: the next call tries again.
  std::call_once(marker_made_, [this] {
    KernelQueue::Marker m = queue_->marker_after(sequence_);
    marker_after_ = m.after;
    marker_ = std::move(m.event);
  });
  return *marker_;
}

std::exception_ptr QueuedKernelEventState::failure() const {
  if (known_complete()) return nullptr;
  return marker().failure();
}

bool QueuedKernelEventState::is_complete() const {
  if (known_complete()) return true;
  ClEventState& m = marker();
  if (!m.is_complete()) return false;
  if (!m.failure()) queue_->note_finished_through(marker_after_);
  return true;
}

void QueuedKernelEventState::wait() {
  if (known_complete()) return;
  ClEventState& m = marker();
  m.wait();  // throws the marker's DeviceError when it (or a kernel before it) failed
  queue_->note_finished_through(marker_after_);
}

void QueuedKernelEventState::on_complete(std::function<void()> callback) {
  if (known_complete()) {
    callback();
    return;
  }
  marker().on_complete(std::move(callback));
}

Event make_event(cl_event event, std::shared_ptr<const Context> context,
                 std::shared_ptr<const std::string> operation,
                 std::shared_ptr<const KernelQueue> ordered_in) {
  auto state = std::make_shared<ClEventState>(event, std::move(context), std::move(operation));
  if (ordered_in) state->set_ordered_in(std::move(ordered_in));
  return Event(std::move(state));
}

namespace {

// Whether `dep` is a kernel of the in-order queue `ordered_by` enqueued with an empty wait list:
// a QueuedKernelEventState, or a ClEventState of one (a kernel whose times were asked for). Either
// runs before the queue's later commands and had no dependency that could fail, so leaving it out
// of a later kernel's wait list keeps the order. A failure of its own execution is then reported
// by its own event and by finish(), and by the later kernel only when it was seen before that
// kernel was enqueued (as for a QueuedKernelEventState, whose failure no marker shows). (Before, a
// ClEventState was put in the list while it ran and left out once it had finished, and the next
// kernel got a cl_event of its own because its list was not empty: a chain that held as long as the
// host stayed ahead of the device, so what a launch cost depended on timing.)
bool ordered_in(const Event& dep, const KernelQueue* ordered_by) {
  const EventState* state = dep.state().get();
  if (const auto* queued = as_queued_kernel(state)) return queued->queue() == ordered_by;
  const auto* native = as_cl_event(state);
  // One that is known to have failed still fails the kernel after it (WaitList records it), as
  // before; one still running cannot be told from a kernel that will succeed, and finish()
  // reports its failure (the in-flight list keeps a failed launch).
  return native != nullptr && ordered_by != nullptr && native->ordered_in() == ordered_by &&
         native->failure() == nullptr;
}

}  // namespace

bool WaitList::empty_for(std::span<const Event> deps, const KernelQueue* ordered_by) {
  for (const Event& dep : deps) {
    if (!dep.is_null() && !ordered_in(dep, ordered_by)) return false;
  }
  return true;
}

WaitList::WaitList(cl_context context, std::span<const Event> deps, std::string_view operation,
                   const KernelQueue* ordered_by) {
  for (const Event& dep : deps) {
    if (dep.is_null()) continue;
    const ClEventState* native = as_cl_event(dep.state().get());
    if (native != nullptr && ordered_by != nullptr && native->ordered_in() == ordered_by &&
        !native->is_complete()) {
      continue;  // runs before this command (see ordered_in); a finished one is looked at below
    }
    if (const auto* queued = as_queued_kernel(dep.state().get())) {
      // An earlier kernel of the queue this command goes to runs before it anyway; any other
      // command waits for a marker after the kernel.
      if (queued->queue() == ordered_by || queued->known_complete()) continue;
      native = &queued->marker();
    }
    if (dep.is_complete()) {
      if (!failed_) failed_ = failure_of_finished(dep);
      continue;
    }
    if (native && native->context() == context) {
      add(native->handle());
      continue;
    }
    cl_int status = CL_SUCCESS;
    cl_event user_event = clCreateUserEvent(context, &status);
    check(status, "clCreateUserEvent",
          [&] { return "bridging a foreign dependency of " + std::string(operation); });
    add(user_event);
    bridges_.push_back(Bridge{user_event, dep});
  }
}

void WaitList::add(cl_event event) {
  if (count_ < kInline) {
    inline_[count_] = event;
  } else {
    if (count_ == kInline) more_.assign(inline_.begin(), inline_.end());
    more_.push_back(event);
  }
  ++count_;
}

WaitList::~WaitList() {
  for (const Bridge& bridge : bridges_) {
    clSetUserEventStatus(bridge.user_event, kForeignDependencyFailed);
    clReleaseEvent(bridge.user_event);
  }
}

void WaitList::arm() {
  for (Bridge& bridge : bridges_) {
    const Event foreign = bridge.foreign;
    cl_event user_event = bridge.user_event;
    foreign.on_complete([foreign, user_event] {
      const cl_int outcome = failure_of_finished(foreign) ? kForeignDependencyFailed : CL_COMPLETE;
      clSetUserEventStatus(user_event, outcome);
      clReleaseEvent(user_event);
    });
  }
  bridges_.clear();
}

}  // namespace unimem::opencl
