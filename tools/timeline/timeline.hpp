#pragma once

// `unimem trace FILE.json -o timeline.png|svg`: a Chrome trace (the JSON UNIMEM_TRACE writes)
// drawn as a timeline with cairo: one lane per named thread of each process (the host's accesses;
// per device its kernels, its copy engines and its evictions), entries coloured by category, a
// legend and a time axis.

#include <string>
#include <vector>

namespace unimem::tools {

/// One lane: a (pid, tid) pair of the trace, labelled "<process name> / <thread name>".
struct TimelineLane {
  int pid = 0;
  int tid = 0;
  std::string label;
};

/// One complete ("ph": "X") event, in microseconds on the trace's clock.
struct TimelineItem {
  std::size_t lane = 0;
  double start_us = 0;
  double end_us = 0;
  std::string category;
  std::string name;
};

struct Timeline {
  std::vector<TimelineLane> lanes;  // by pid, then tid
  std::vector<TimelineItem> items;
  std::vector<std::string> categories;  // in order of first appearance
  double begin_us = 0;
  double end_us = 0;
};

/// Reads Chrome trace JSON ({"traceEvents": [...]} or a bare array): lanes come from the
/// thread_name / process_name metadata and from the events themselves. Throws std::runtime_error
/// naming `what` (the file) when the text is not a trace.
[[nodiscard]] Timeline parse_chrome_trace(const std::string& json_text, const std::string& what);

/// Where things go in the picture (pixels).
struct TimelineLayout {
  int width = 0;
  int height = 0;
  int plot_left = 0;   ///< x of the time origin
  int plot_right = 0;  ///< x of the end of the time range
  int lanes_top = 0;   ///< y of the first lane's top
  int lane_height = 0;
  [[nodiscard]] int lane_top(std::size_t lane) const {
    return lanes_top + static_cast<int>(lane) * lane_height;
  }
};

[[nodiscard]] TimelineLayout layout_timeline(const Timeline& timeline, int width = 1600);

/// Draws the timeline to `path`: PNG when it ends in .png, SVG when it ends in .svg (any other
/// ending is an error naming the file). Throws std::runtime_error when cairo cannot write it.
void render_timeline(const Timeline& timeline, const std::string& path, int width = 1600);

/// The fill colour of a category, as 0xRRGGBB (kernels, each copy direction, host accesses and
/// evictions have fixed distinct colours; others get one from a palette).
[[nodiscard]] unsigned category_colour(const std::string& category);

}  // namespace unimem::tools
