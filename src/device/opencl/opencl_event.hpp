#pragma once

#include <array>
#include <atomic>

#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <unimem/event.hpp>
#include "device/opencl/opencl_api.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem::opencl {

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

 private:
  [[nodiscard]] cl_int status() const;

  cl_event event_;
  // Keeps the context alive as long as the event (WaitList compares contexts by handle, and a
  // released context's handle could be reused by a new one), without a driver call per event.
  std::shared_ptr<const Context> context_;
  std::shared_ptr<const std::string> operation_;
  // The final status (CL_COMPLETE or a negative error) once the command is seen finished, else
  // kUnknown: a finished event never changes, so later is_complete() and failure() calls need
  // no clGetEventInfo. The runtime asks often (hazard tracking, in-flight lists, wait lists),
  // and each query takes the driver's locks (POCL: 40% of the submitting thread in
  // floyd-warshall, 1024 launches).
  static constexpr cl_int kUnknown = 0x7fffffff;
  mutable std::atomic<cl_int> final_status_{kUnknown};
};

/// Wraps a freshly enqueued cl_event into an Event.
[[nodiscard]] Event make_event(cl_event event, std::shared_ptr<const Context> context,
                               std::shared_ptr<const std::string> operation);

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
  WaitList(cl_context context, std::span<const Event> deps, std::string_view operation);
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
