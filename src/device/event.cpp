#include <unimem/event.hpp>

#include <atomic>

namespace unimem {

void ManualEventState::wait() {
  std::shared_ptr<EventState> forwarded;
  {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return done_ || target_; });
    if (done_) {
      if (error_) std::rethrow_exception(error_);
      return;
    }
    forwarded = target_;
  }
  forwarded->wait();  // outside the lock: it may block for long
}

bool ManualEventState::is_complete() const {
  std::shared_ptr<EventState> forwarded;
  {
    std::lock_guard lock(mutex_);
    if (done_) return true;
    if (!target_) return false;
    forwarded = target_;
  }
  return forwarded->is_complete();  // outside the lock: may be a driver query
}

void ManualEventState::on_complete(std::function<void()> callback) {
  std::shared_ptr<EventState> forwarded;
  {
    std::lock_guard lock(mutex_);
    if (target_) {
      forwarded = target_;
    } else if (!done_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  if (forwarded) {
    forwarded->on_complete(std::move(callback));
  } else {
    callback();
  }
}

void ManualEventState::complete() { finish(nullptr); }

std::optional<EventTimes> ManualEventState::times() const {
  std::shared_ptr<EventState> forwarded;
  {
    std::lock_guard lock(mutex_);
    if (!target_) return done_ ? times_ : std::nullopt;
    forwarded = target_;
  }
  return forwarded->times();
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
    if (done_ || target_) return;  // the first outcome wins
    done_ = true;
    error_ = std::move(error);
    callbacks.swap(callbacks_);
  }
  done_cv_.notify_all();
  for (auto& cb : callbacks) cb();
}

void ManualEventState::forward_to(std::shared_ptr<EventState> target) {
  if (!target) {
    complete();
    return;
  }
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (done_ || target_) return;  // the first outcome wins
    target_ = target;
    callbacks.swap(callbacks_);
  }
  done_cv_.notify_all();  // waiters wait on the target now
  for (auto& cb : callbacks) target->on_complete(std::move(cb));
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
  // Newest first: events mostly complete in the order they were made, so once the last one is
  // done the others are too and their waits return at once; oldest first, a thread that waits
  // for thousands of queued kernels sleeps and wakes once per kernel. The failure rethrown is
  // still the first in the list's order.
  std::exception_ptr first;
  for (std::size_t i = events.size(); i-- > 0;) {
    try {
      events[i].wait();
    } catch (...) {
      first = std::current_exception();  // a lower index overwrites: the first failure wins
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
