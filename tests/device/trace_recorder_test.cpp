#include "device/trace_recorder.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace unimem {
namespace {

using nlohmann::json;

// A finished operation whose times are on a device clock that runs `skew` ns behind the host's.
class DeviceClockEvent final : public EventState {
 public:
  DeviceClockEvent(EventTimes t) : times_(t) {}
  void wait() override {}
  [[nodiscard]] bool is_complete() const override { return true; }
  void on_complete(std::function<void()> callback) override { callback(); }
  [[nodiscard]] std::optional<EventTimes> times() const override { return times_; }

 private:
  EventTimes times_;
};

std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") out.push_back(e);
  }
  return out;
}

TEST(TraceRecorder, DeviceProfilingTimesAreMappedOntoTheHostClock) {
  TraceRecorder trace("unused.json", {"dev"});
  constexpr std::int64_t skew = 5'000'000'000;  // the device clock is 5 s behind
  // An operation queued at the submission, run for 2 ms, finished just before the host saw it.
  const std::int64_t submitted = TraceRecorder::now_ns();
  const std::int64_t host_end = submitted + 3'000'000;
  const EventTimes device{submitted - skew, submitted + 1'000'000 - skew, host_end - skew, false};
  // The host sees completion at "now" (the callback runs at once), which is after host_end only
  // if we wait: spin until then so the bound holds as it would for a real command.
  while (TraceRecorder::now_ns() < host_end) {
  }
  trace.operation(TraceLane::kernels, 0, TraceCategory::kernel, "k",
                  Event(std::make_shared<DeviceClockEvent>(device)), submitted, {});
  const json j = json::parse(trace.to_json());
  const std::vector<json> events = complete_events(j);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["args"]["timed_by"], "device profiling");
  EXPECT_NEAR(events[0]["dur"].get<double>(), 2000.0, 1e-6);  // microseconds
  // The offset lies in [submitted - queued, seen - end] = [skew, skew + callback delay]: the
  // start maps to within that delay of submitted + 1 ms on the host clock.
  const double start_us = events[0]["ts"].get<double>();
  const std::int64_t offset = j["otherData"]["device_clocks"][0]["device_clock_offset_ns"];
  EXPECT_GE(offset, skew);
  EXPECT_LT(offset, skew + 50'000'000);  // the callback ran within 50 ms
  EXPECT_GE(start_us, 0.0);
}

TEST(TraceRecorder, WithoutMeasuredTimesAnOperationSpansSubmissionToCompletion) {
  TraceRecorder trace("unused.json", {"dev"});
  auto [event, state] = Event::make_manual();
  const std::int64_t submitted = TraceRecorder::now_ns();
  trace.operation(TraceLane::copy_in, 0, TraceCategory::copy_h2d, "h2d a", event, submitted,
                  {TraceArg::of("bytes", 64), TraceArg::of("buffer", "a")});
  EXPECT_EQ(complete_events(json::parse(trace.to_json())).size(), 0u);  // not finished yet
  state->complete();
  const std::vector<json> events = complete_events(json::parse(trace.to_json()));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["args"]["timed_by"], "submission to completion");
  EXPECT_EQ(events[0]["args"]["bytes"], 64);
  EXPECT_EQ(events[0]["args"]["buffer"], "a");
  EXPECT_EQ(events[0]["cat"], "copy h2d");
  EXPECT_EQ(events[0]["pid"], 1);
  EXPECT_EQ(events[0]["tid"], static_cast<int>(TraceLane::copy_in));
  EXPECT_GE(events[0]["dur"].get<double>(), 0.0);
}

TEST(TraceRecorder, AHostTimedWorkQueueEventReportsItsOwnTimes) {
  auto [event, state] = Event::make_manual();
  state->set_times({10, 20, 30, true});
  EXPECT_FALSE(event.times().has_value());  // not before completion
  state->complete();
  ASSERT_TRUE(event.times().has_value());
  EXPECT_EQ(event.times()->start, 20);
  EXPECT_EQ(event.times()->end, 30);
  EXPECT_FALSE(Event{}.times().has_value());
}

}  // namespace
}  // namespace unimem
