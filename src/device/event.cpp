#include <unimem/event.hpp>

#include <atomic>

namespace unimem {

void ManualEventState::wait() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool ManualEventState::is_complete() const {
  std::lock_guard lock(mutex_);
  return done_;
}

void ManualEventState::on_complete(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (!done_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void ManualEventState::complete() { finish(nullptr); }

std::optional<EventTimes> ManualEventState::times() const {
  std::lock_guard lock(mutex_);
  return done_ ? times_ : std::nullopt;
}

void ManualEventState::set_times(EventTimes times) {
  std::lock_guard lock(mutex_);
  times_ = times;
}

void ManualEventState::fail(std::exception_ptr error) { finish(std::move(error)); }

void ManualEventState::finish(std::exception_ptr error) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (done_) return;  // the first outcome wins
    done_ = true;
    error_ = std::move(error);
    callbacks.swap(callbacks_);
  }
  done_cv_.notify_all();
  for (auto& cb : callbacks) cb();
}

std::pair<Event, std::shared_ptr<ManualEventState>> Event::make_manual() {
  auto state = std::make_shared<ManualEventState>();
  return {Event(state), state};
}

void Event::on_complete(std::function<void()> callback) const {
  if (state_) {
    state_->on_complete(std::move(callback));
  } else {
    callback();
  }
}

void wait_all(std::span<const Event> events) {
  std::exception_ptr first;
  for (const Event& e : events) {
    try {
      e.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

Event when_all(std::span<const Event> events) {
  std::vector<Event> pending;
  for (const Event& e : events) {
    if (!e.is_complete()) pending.push_back(e);
  }
  if (pending.empty()) {
    // Already finished: surface a failure, if any, through a failed event.
    auto [event, state] = Event::make_manual();
    try {
      wait_all(events);
      state->complete();
    } catch (...) {
      state->fail(std::current_exception());
    }
    return event;
  }
  auto [event, state] = Event::make_manual();
  struct Join {
    std::atomic<std::size_t> remaining;
    std::vector<Event> events;
    std::shared_ptr<ManualEventState> state;
  };
  auto join = std::make_shared<Join>();
  join->remaining = pending.size();
  join->events.assign(events.begin(), events.end());  // failures of finished ones count too
  join->state = state;
  for (const Event& e : pending) {
    e.on_complete([join] {
      if (join->remaining.fetch_sub(1) != 1) return;
      try {
        wait_all(join->events);
        join->state->complete();
      } catch (...) {
        join->state->fail(std::current_exception());
      }
      join->events.clear();
    });
  }
  return event;
}

}  // namespace unimem
