#include "device/sim/sim_event.hpp"

#include <utility>

namespace unimem::sim {

namespace {

// Completion callbacks (of the real event, on a driver thread) are not the host observing the
// operation: a when_all or a work queue waiting inside one must not move simulated host time.
thread_local int callback_depth = 0;

struct CallbackScope {
  CallbackScope() { ++callback_depth; }
  ~CallbackScope() { --callback_depth; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
};

}  // namespace

void SimEventState::wait() {
  real_.wait();
  if (callback_depth == 0) clock_->advance_host(end_);
}

bool SimEventState::is_complete() const {
  return real_.is_complete() && clock_->host_time() >= end_;
}

void SimEventState::on_complete(std::function<void()> callback) {
  real_.on_complete([callback = std::move(callback)] {
    CallbackScope scope;
    callback();
  });
}

}  // namespace unimem::sim
