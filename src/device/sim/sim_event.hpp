#pragma once

// The event of a simulated operation: the real operation's event plus its end on the simulated
// clock. Waiting for it from the host moves the simulated host time to that end; it reports
// complete only once the real operation finished and the simulated host time has reached it, so
// the runtime, which drops finished events from its dependency lists, never drops an operation
// that simulated time has not finished yet.

#include <functional>
#include <memory>

#include <unimem/event.hpp>
#include "device/sim/sim_model.hpp"

namespace unimem::sim {

class SimEventState final : public EventState {
 public:
  SimEventState(Event real, double end, std::shared_ptr<SimClock> clock)
      : real_(std::move(real)), end_(end), clock_(std::move(clock)) {}

  /// Waits for the real operation; a host thread (not a completion callback) then advances the
  /// simulated host time to end().
  void wait() override;
  [[nodiscard]] bool is_complete() const override;
  /// Callbacks run when the real operation completes; waits inside them do not move host time.
  void on_complete(std::function<void()> callback) override;

  [[nodiscard]] const Event& real() const { return real_; }
  [[nodiscard]] double end() const { return end_; }
  [[nodiscard]] const SimClock* clock() const { return clock_.get(); }

 private:
  Event real_;
  double end_;
  std::shared_ptr<SimClock> clock_;
};

}  // namespace unimem::sim
