// The timeline pictures of `unimem trace` (tools/timeline/): a known trace drawn as PNG has the
// size the layout says and something drawn in every lane where the trace has an operation.
#if UNIMEM_HAVE_CAIRO
#include "timeline.hpp"

#include <cairo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace unimem::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
}

// A host lane and two devices with a kernel lane and two copy engines each (pid 0 host, d + 1
// device d, as UNIMEM_TRACE writes them); one operation per lane, except device 1's copy-out
// lane, which stays empty.
json known_trace() {
  json events = json::array();
  const auto meta = [&](const char* what, int pid, int tid, const std::string& name) {
    events.push_back(
        {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  const auto op = [&](int pid, int tid, const char* cat, double ts, double dur) {
    events.push_back({{"ph", "X"},
                      {"name", cat},
                      {"cat", cat},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", ts},
                      {"dur", dur},
                      {"args", {{"bytes", 64}}}});
  };
  meta("process_name", 0, 0, "host");
  meta("thread_name", 0, 0, "host accesses");
  for (int d = 0; d < 2; ++d) {
    meta("process_name", d + 1, 0, "device " + std::to_string(d));
    meta("thread_name", d + 1, 1, "kernels");
    meta("thread_name", d + 1, 2, "copy engine in (h2d, d2d)");
    meta("thread_name", d + 1, 3, "copy engine out (d2h)");
  }
  op(0, 0, "host write", 0, 100);
  op(1, 2, "copy h2d", 100, 200);
  op(2, 2, "copy d2d", 150, 50);
  op(1, 1, "kernel", 300, 500);
  op(2, 1, "kernel", 320, 480);
  op(1, 3, "copy d2h", 800, 0.01);  // far shorter than a pixel: still drawn
  op(0, 0, "host read", 900, 100);
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

TEST(Timeline, AKnownTraceParsesIntoItsLanesAndOperations) {
  const Timeline t = parse_chrome_trace(known_trace().dump(), "known");
  ASSERT_EQ(t.lanes.size(), 7u);
  EXPECT_EQ(t.lanes[0].label, "host / host accesses");
  EXPECT_EQ(t.lanes[1].label, "device 0 / kernels");
  EXPECT_EQ(t.lanes[6].label, "device 1 / copy engine out (d2h)");
  EXPECT_EQ(t.items.size(), 7u);
  EXPECT_DOUBLE_EQ(t.begin_us, 0.0);
  EXPECT_DOUBLE_EQ(t.end_us, 1000.0);
  EXPECT_EQ(t.categories.size(), 6u);
  EXPECT_NE(category_colour("kernel"), category_colour("copy h2d"));
  EXPECT_NE(category_colour("copy h2d"), category_colour("copy d2h"));
  EXPECT_NE(category_colour("copy d2h"), category_colour("copy d2d"));
}

TEST(Timeline, RenderingAKnownTraceGivesAPngOfTheLayoutSizeWithEveryUsedLaneDrawn) {
  const Timeline t = parse_chrome_trace(known_trace().dump(), "known");
  const std::string path = temp_file("timeline.png");
  fs::remove(path);
  render_timeline(t, path, 1200);
  const TimelineLayout l = layout_timeline(t, 1200);
  cairo_surface_t* image = cairo_image_surface_create_from_png(path.c_str());
  ASSERT_EQ(cairo_surface_status(image), CAIRO_STATUS_SUCCESS) << path;
  EXPECT_EQ(cairo_image_surface_get_width(image), 1200);
  EXPECT_EQ(cairo_image_surface_get_height(image), l.height);
  EXPECT_EQ(l.height, 36 + 7 * 26 + 42 + 34);
  cairo_surface_flush(image);
  const unsigned char* data = cairo_image_surface_get_data(image);
  const int stride = cairo_image_surface_get_stride(image);
  const auto pixel = [&](int x, int y) {
    std::uint32_t p = 0;
    std::memcpy(&p, data + y * stride + 4 * x, 4);
    return p & 0xFFFFFF;
  };
  // In the plot area of each lane, count pixels of another colour than the lane's own band
  // (its background at the lane's left edge, inside the plot).
  for (std::size_t lane = 0; lane < t.lanes.size(); ++lane) {
    const int y_mid = l.lane_top(lane) + l.lane_height / 2;
    const std::uint32_t band = pixel(l.plot_right + 5, y_mid);
    int drawn = 0;
    for (int x = l.plot_left; x < l.plot_right; ++x) drawn += pixel(x, y_mid) != band ? 1 : 0;
    const bool used = lane != 6;  // device 1's copy-out lane has no operation
    if (used) {
      EXPECT_GT(drawn, 0) << "lane " << lane << " (" << t.lanes[lane].label << ") is empty";
    } else {
      EXPECT_EQ(drawn, 0) << "lane " << lane << " has pixels but no operation";
    }
  }
  // The kernel of device 0 spans half of the time range: about half of the plot width.
  {
    const int y_mid = l.lane_top(1) + l.lane_height / 2;
    const std::uint32_t kernel = category_colour("kernel");
    int blue = 0;
    for (int x = l.plot_left; x < l.plot_right; ++x) blue += pixel(x, y_mid) == kernel ? 1 : 0;
    const double expected = 0.5 * (l.plot_right - l.plot_left);
    EXPECT_NEAR(blue, expected, 3.0);
  }
  cairo_surface_destroy(image);
  fs::remove(path);
}

TEST(Timeline, SvgOutputIsAnSvgDocument) {
  const Timeline t = parse_chrome_trace(known_trace().dump(), "known");
  const std::string path = temp_file("timeline.svg");
  render_timeline(t, path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
  fs::remove(path);
}

TEST(Timeline, BadInputsAreErrorsNamingTheFile) {
  try {
    (void)parse_chrome_trace("{not json", "broken.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON"), std::string::npos);
  }
  try {
    (void)parse_chrome_trace("{\"a\": 1}", "other.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("other.json: not a Chrome trace"), std::string::npos);
  }
  const Timeline t = parse_chrome_trace(known_trace().dump(), "known");
  try {
    render_timeline(t, "picture.jpg");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'picture.jpg': the output must end in .png or .svg"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace unimem::tools
#endif
