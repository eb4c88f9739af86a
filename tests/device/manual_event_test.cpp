// ManualEventState::forward_to: an event completed by hand can instead hand itself over to
// another event (the OpenCL platform's commands do, once the runtime accepts them).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <unimem/errors.hpp>
#include <unimem/event.hpp>

namespace unimem {
namespace {

TEST(ManualEvent, AForwardedEventCompletesWithItsTargetAndMovesItsCallbacksThere) {
  auto [event, state] = Event::make_manual();
  auto [target, target_state] = Event::make_manual();
  int early = 0;
  event.on_complete([&] { ++early; });
  state->forward_to(target.state());
  EXPECT_FALSE(event.is_complete());
  EXPECT_EQ(early, 0);
  int late = 0;
  event.on_complete([&] { ++late; });
  target_state->complete();
  EXPECT_TRUE(event.is_complete());
  EXPECT_EQ(early, 1);
  EXPECT_EQ(late, 1);
  EXPECT_NO_THROW(event.wait());
  // Later outcomes by hand no longer count.
  state->fail(std::make_exception_ptr(DeviceError("too late")));
  EXPECT_NO_THROW(event.wait());
}

// wait_all waits newest first (fewer sleeps when events finish in order) but keeps its contract:
// it returns only once every event finished, and rethrows the first failure in the list's order.
TEST(WaitAll, WaitsForEveryEventAndRethrowsTheFirstFailureInListOrder) {
  std::vector<Event> events;
  std::vector<std::shared_ptr<ManualEventState>> states;
  for (int i = 0; i < 5; ++i) {
    auto [event, state] = Event::make_manual();
    events.push_back(event);
    states.push_back(state);
  }
  states[4]->complete();  // the newest is done first: the older ones must still be waited for
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    try {
      wait_all(events);
      ADD_FAILURE() << "two events failed: wait_all must throw";
    } catch (const DeviceError& e) {
      EXPECT_STREQ(e.what(), "failure 1") << "the first failure in the list's order";
    }
    returned = true;
  });
  states[3]->fail(std::make_exception_ptr(DeviceError("failure 3")));
  states[1]->fail(std::make_exception_ptr(DeviceError("failure 1")));
  states[2]->complete();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(returned) << "wait_all returned while event 0 had not finished";
  states[0]->complete();
  waiter.join();
  EXPECT_TRUE(returned);
}

TEST(ManualEvent, AForwardedEventFailsWithItsTargetAndReportsItsTimes) {
  auto [event, state] = Event::make_manual();
  auto [target, target_state] = Event::make_manual();
  state->forward_to(target.state());
  target_state->set_times(EventTimes{1, 2, 3, true});
  target_state->fail(std::make_exception_ptr(DeviceError("the target failed")));
  EXPECT_TRUE(event.is_complete());
  EXPECT_THROW(event.wait(), DeviceError);
  ASSERT_TRUE(event.times().has_value());
  EXPECT_EQ(event.times()->end, 3);
}

TEST(ManualEvent, TheFirstOutcomeWinsAndANullTargetCompletes) {
  auto [done, done_state] = Event::make_manual();
  done_state->fail(std::make_exception_ptr(DeviceError("failed first")));
  auto [target, target_state] = Event::make_manual();
  done_state->forward_to(target.state());  // ignored: the event has its outcome
  EXPECT_TRUE(done.is_complete());
  EXPECT_THROW(done.wait(), DeviceError);

  auto [forwarded, forwarded_state] = Event::make_manual();
  forwarded_state->forward_to(target.state());
  forwarded_state->complete();  // ignored: it follows the target now
  EXPECT_FALSE(forwarded.is_complete());
  target_state->complete();
  EXPECT_TRUE(forwarded.is_complete());

  auto [to_null, to_null_state] = Event::make_manual();
  int called = 0;
  to_null.on_complete([&] { ++called; });
  to_null_state->forward_to(nullptr);
  EXPECT_TRUE(to_null.is_complete());
  EXPECT_EQ(called, 1);
}

TEST(ManualEventConcurrency, AWaiterBlockedBeforeTheForwardWakesWhenTheTargetCompletes) {
  auto [event, state] = Event::make_manual();
  auto [target, target_state] = Event::make_manual();
  std::atomic<bool> woke{false};
  std::thread waiter([&, e = event] {
    e.wait();
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  state->forward_to(target.state());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(woke.load());  // forwarded, not finished: it now waits on the target
  target_state->complete();
  waiter.join();
  EXPECT_TRUE(woke.load());
}

}  // namespace
}  // namespace unimem
