#include "device/work_queue.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include <unimem/errors.hpp>

namespace unimem::detail {

struct WorkQueue::State {
  struct Op {
    std::function<void()> work;
    std::vector<Event> deps;  // all complete when the op is ready; checked for failure
    std::shared_ptr<ManualEventState> done;
  };

  explicit State(std::string n) : name(std::move(n)) {}

  void push_ready(Op op) {
    {
      std::lock_guard lock(mutex);
      if (!stopping) {
        ready.push_back(std::move(op));
        ready_cv.notify_one();
        return;
      }
    }
    op.done->fail(std::make_exception_ptr(
        DeviceError("work queue " + name + " was destroyed before an operation could run")));
    finish_one();
  }

  void finish_one() {
    std::lock_guard lock(mutex);
    if (--outstanding == 0) idle_cv.notify_all();
  }

  void run() {
    for (;;) {
      Op op;
      {
        std::unique_lock lock(mutex);
        ready_cv.wait(lock, [this] { return stopping || !ready.empty(); });
        if (ready.empty()) return;  // stopping and drained
        op = std::move(ready.front());
        ready.pop_front();
      }
      try {
        wait_all(op.deps);  // never blocks: every dependency has completed
        if (timing.load(std::memory_order_relaxed)) {
          const std::int64_t start = now_ns();
          op.work();
          op.done->set_times({start, start, now_ns(), true});
        } else {
          op.work();
        }
        op.work = nullptr;  // release captures before signalling completion
        op.done->complete();
      } catch (...) {
        op.work = nullptr;
        op.done->fail(std::current_exception());
      }
      finish_one();
    }
  }

  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  const std::string name;
  std::atomic<bool> timing{false};
  std::mutex mutex;
  std::condition_variable ready_cv;
  std::condition_variable idle_cv;
  std::deque<Op> ready;
  std::size_t outstanding = 0;
  bool stopping = false;
};

WorkQueue::WorkQueue(std::string name) : state_(std::make_shared<State>(std::move(name))) {
  worker_ = std::thread([state = state_] { state->run(); });
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->ready_cv.notify_all();
  worker_.join();
}

Event WorkQueue::submit(std::function<void()> work, std::span<const Event> deps) {
  auto [event, done] = Event::make_manual();
  {
    std::lock_guard lock(state_->mutex);
    ++state_->outstanding;
  }
  State::Op op{std::move(work), std::vector<Event>(deps.begin(), deps.end()), done};
  std::vector<Event> pending;
  for (const Event& e : deps) {
    if (!e.is_complete()) pending.push_back(e);
  }
  if (pending.empty()) {
    state_->push_ready(std::move(op));
    return event;
  }
  // The op becomes ready on whichever thread completes its last dependency. One dependency
  // (a kernel after the previous one) needs no joining event: run() checks the op's deps for
  // failure either way.
  Event all = pending.size() == 1 ? pending.front() : when_all(pending);
  auto shared_op = std::make_shared<State::Op>(std::move(op));
  all.on_complete([state = state_, shared_op] { state->push_ready(std::move(*shared_op)); });
  return event;
}

void WorkQueue::wait_idle() {
  std::unique_lock lock(state_->mutex);
  state_->idle_cv.wait(lock, [this] { return state_->outstanding == 0; });
}

const std::string& WorkQueue::name() const { return state_->name; }

void WorkQueue::set_timing(bool on) { state_->timing.store(on, std::memory_order_relaxed); }

}  // namespace unimem::detail
