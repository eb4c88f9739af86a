#pragma once

// Completion of asynchronous operations: every copy, kernel, host read and write returns an Event.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace unimem {

/// When an operation was queued, started and ended, in nanoseconds (tracing: UNIMEM_TRACE).
/// host_clock: on std::chrono::steady_clock (since its epoch); otherwise on the device's own
/// profiling clock (CL_PROFILING_COMMAND_*), which the trace recorder maps onto the host clock.
struct EventTimes {
  std::int64_t queued = 0;
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool host_clock = true;
};

/// The state behind an Event. Each driver may provide its own (an OpenCL driver wraps cl_event);
/// ManualEventState is the shared default.
///
/// Thread-safety: every member may be called from any thread at any time.
class EventState {
 public:
  virtual ~EventState() = default;
  /// Blocks until the operation has finished. Throws DeviceError if it failed.
  virtual void wait() = 0;
  /// True once the operation has finished (successfully or not). Never blocks.
  [[nodiscard]] virtual bool is_complete() const = 0;
  /// True if the operation is known to have finished without asking the driver again: an OpenCL
  /// event answers from what an earlier is_complete() saw, so false may be out of date. For
  /// lists that a driver filters anyway (a hazard tracker's dependencies: the driver asks each
  /// event once more before it enqueues), so that an unfinished event is asked once, not twice.
  /// Optional: is_complete() by default.
  [[nodiscard]] virtual bool known_complete() const { return is_complete(); }
  /// Runs callback exactly once after the operation finished: immediately on the calling thread if
  /// it already has, otherwise on whichever thread completes it. Callbacks must not block.
  virtual void on_complete(std::function<void()> callback) = 0;
  /// When the finished operation ran, if the driver measured it (only while profiling is on:
  /// Device::set_profiling). Optional: nullopt by default and before completion.
  [[nodiscard]] virtual std::optional<EventTimes> times() const { return std::nullopt; }
};

/// An event completed by calling complete() or fail(): used by the host driver, by drivers to
/// bridge foreign events, and by the runtime for its own operations.
class ManualEventState final : public EventState {
 public:
  void wait() override;
  [[nodiscard]] bool is_complete() const override;
  void on_complete(std::function<void()> callback) override;

  [[nodiscard]] std::optional<EventTimes> times() const override;

  void complete();
  /// Marks the event finished with an error: wait() rethrows it.
  void fail(std::exception_ptr error);
  /// Records when the operation ran (host clock); call before complete().
  void set_times(EventTimes times);
  /// Instead of complete() or fail(): from now on this event completes with `target`'s state
  /// (null: completes now). Waits, queries, times and callbacks go to it, and the callbacks kept
  /// so far move to it, so forwarding costs no completion callback of its own (the OpenCL
  /// platform hands each command's event the runtime's event this way). Like complete(), only
  /// the first outcome counts.
  void forward_to(std::shared_ptr<EventState> target);

 private:
  void finish(std::exception_ptr error);

  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::optional<EventTimes> times_;
  std::vector<std::function<void()>> callbacks_;
  std::shared_ptr<EventState> target_;  ///< forward_to's target; done_ stays false
};

/// A copyable handle to the completion of an asynchronous device operation. A default-constructed
/// Event is null and counts as already complete.
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<EventState> state) : state_(std::move(state)) {}

  /// A new event completed by hand (see ManualEventState).
  static std::pair<Event, std::shared_ptr<ManualEventState>> make_manual();

  void wait() const {
    if (state_) state_->wait();
  }
  [[nodiscard]] bool is_complete() const { return !state_ || state_->is_complete(); }
  /// EventState::known_complete(); true for a null event.
  [[nodiscard]] bool known_complete() const { return !state_ || state_->known_complete(); }
  void on_complete(std::function<void()> callback) const;
  [[nodiscard]] bool is_null() const { return !state_; }
  /// EventState::times(); nullopt for a null event.
  [[nodiscard]] std::optional<EventTimes> times() const {
    return state_ ? state_->times() : std::nullopt;
  }
  [[nodiscard]] const std::shared_ptr<EventState>& state() const { return state_; }

  friend bool operator==(const Event&, const Event&) = default;

 private:
  std::shared_ptr<EventState> state_;
};

using EventList = std::vector<Event>;

/// Waits for every event; if several failed, rethrows the first failure after all finished.
void wait_all(std::span<const Event> events);

/// An event that completes when every one of events has completed (failing if any failed).
Event when_all(std::span<const Event> events);

}  // namespace unimem
