#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include <unimem/event.hpp>

namespace unimem::detail {

/// One worker thread running operations in FIFO order of readiness: an operation enters the queue
/// only when all of its dependencies have completed (through Event::on_complete), so the worker
/// never blocks on a foreign event and two queues waiting on each other cannot deadlock.
///
/// Thread-safety: submit() and wait_idle() may be called from any thread, including from inside
/// an operation or an event callback. Destruction stops the worker after the ready operations;
/// operations still waiting for dependencies then fail with a DeviceError.
class WorkQueue {
 public:
  explicit WorkQueue(std::string name);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  /// Runs work on the worker once every event in deps has completed; the returned event completes
  /// after work returns (or fails with the exception work threw, or with a failed dependency).
  Event submit(std::function<void()> work, std::span<const Event> deps);

  /// Blocks until every operation submitted so far (including those waiting for dependencies)
  /// has finished.
  void wait_idle();

  [[nodiscard]] const std::string& name() const;

  /// On: every operation's event records when it ran (EventState::times, host clock). Off by
  /// default; when off the worker reads no clock (one branch per operation).
  void set_timing(bool on);

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::thread worker_;
};

}  // namespace unimem::detail
