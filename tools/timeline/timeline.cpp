#include "timeline.hpp"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace unimem::tools {

namespace {

using nlohmann::json;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Picture geometry: a title line, the lanes, the time axis, then the legend.
constexpr int kLabelWidth = 240;
constexpr int kRightMargin = 30;
constexpr int kTitleHeight = 36;
constexpr int kLaneHeight = 26;
constexpr int kAxisHeight = 42;
constexpr int kLegendHeight = 34;

struct Rgb {
  double r, g, b;
};

Rgb rgb(unsigned colour) {
  return {static_cast<double>((colour >> 16) & 0xFF) / 255.0,
          static_cast<double>((colour >> 8) & 0xFF) / 255.0,
          static_cast<double>(colour & 0xFF) / 255.0};
}

void set_colour(cairo_t* cr, unsigned colour) {
  const Rgb c = rgb(colour);
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

// A tick step of 1, 2 or 5 times a power of ten giving at most about `ticks` ticks over span.
double tick_step(double span, int ticks) {
  const double raw = span / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string tick_label(double us, double span) {
  char text[32];
  if (span >= 2e6) {
    std::snprintf(text, sizeof text, "%.6g s", us / 1e6);
  } else if (span >= 2e3) {
    std::snprintf(text, sizeof text, "%.6g ms", us / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.6g us", us);
  }
  return text;
}

}  // namespace

unsigned category_colour(const std::string& category) {
  static const std::map<std::string, unsigned> fixed = {
      {"kernel", 0x1f77b4},   {"copy h2d", 0xff7f0e},   {"copy d2h", 0x2ca02c},
      {"copy d2d", 0x9467bd}, {"host write", 0x8c564b}, {"host read", 0x17becf},
      {"eviction", 0xd62728}};
  if (auto it = fixed.find(category); it != fixed.end()) return it->second;
  static const unsigned palette[] = {0xe377c2, 0xbcbd22, 0x7f7f7f, 0xaec7e8, 0xffbb78, 0x98df8a};
  return palette[std::hash<std::string>{}(category) % std::size(palette)];
}

Timeline parse_chrome_trace(const std::string& json_text, const std::string& what) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw std::runtime_error(what + ": not valid JSON");
  const json* events = nullptr;
  if (doc.is_array()) {
    events = &doc;
  } else if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    events = &doc["traceEvents"];
  } else {
    throw std::runtime_error(what + ": not a Chrome trace (no \"traceEvents\" array)");
  }
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, bool> lanes;  // every (pid, tid) named or used
  for (const json& e : *events) {
    if (!e.is_object() || !e.contains("ph")) continue;
    const int pid = e.value("pid", 0);
    const int tid = e.value("tid", 0);
    if (e["ph"] == "M") {
      const std::string name = e.value("name", "");
      const std::string label =
          e.contains("args") && e["args"].is_object() ? e["args"].value("name", "") : "";
      if (name == "process_name") process_names[pid] = label;
      if (name == "thread_name") {
        thread_names[{pid, tid}] = label;
        lanes[{pid, tid}] = true;
      }
    } else if (e["ph"] == "X") {
      lanes[{pid, tid}] = true;
    }
  }
  Timeline t;
  std::map<std::pair<int, int>, std::size_t> index;
  for (const auto& [key, used] : lanes) {
    (void)used;
    index[key] = t.lanes.size();
    std::string label = process_names.count(key.first) != 0
                            ? process_names[key.first]
                            : "process " + std::to_string(key.first);
    label += " / ";
    label +=
        thread_names.count(key) != 0 ? thread_names[key] : "thread " + std::to_string(key.second);
    t.lanes.push_back({key.first, key.second, std::move(label)});
  }
  bool first = true;
  for (const json& e : *events) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    if (!e.contains("ts") || !e["ts"].is_number()) {
      throw std::runtime_error(what + ": an \"X\" event without a numeric \"ts\": " + e.dump());
    }
    TimelineItem item;
    item.lane = index.at({e.value("pid", 0), e.value("tid", 0)});
    item.start_us = e["ts"].get<double>();
    item.end_us =
        item.start_us + (e.contains("dur") && e["dur"].is_number() ? e["dur"].get<double>() : 0.0);
    item.category = e.value("cat", "");
    item.name = e.value("name", "");
    if (std::find(t.categories.begin(), t.categories.end(), item.category) == t.categories.end()) {
      t.categories.push_back(item.category);
    }
    t.begin_us = first ? item.start_us : std::min(t.begin_us, item.start_us);
    t.end_us = first ? item.end_us : std::max(t.end_us, item.end_us);
    first = false;
    t.items.push_back(std::move(item));
  }
  return t;
}

TimelineLayout layout_timeline(const Timeline& timeline, int width) {
  TimelineLayout l;
  // The label column fits the longest label (about 6.5 px per character at the 11 px font),
  // between kLabelWidth and 45% of the picture; longer labels are clipped.
  std::size_t longest = 0;
  for (const TimelineLane& lane : timeline.lanes) longest = std::max(longest, lane.label.size());
  l.width = std::max(width, kLabelWidth + kRightMargin + 200);
  l.plot_left = std::clamp(static_cast<int>(6.5 * static_cast<double>(longest)) + 20, kLabelWidth,
                           std::max(kLabelWidth, l.width * 45 / 100));
  l.plot_right = l.width - kRightMargin;
  l.lanes_top = kTitleHeight;
  l.lane_height = kLaneHeight;
  l.height = kTitleHeight + static_cast<int>(timeline.lanes.size()) * kLaneHeight + kAxisHeight +
             kLegendHeight;
  return l;
}

void render_timeline(const Timeline& timeline, const std::string& path, int width) {
  const bool png = ends_with(path, ".png");
  const bool svg = ends_with(path, ".svg");
  if (!png && !svg) {
    throw std::runtime_error("unimem trace: '" + path + "': the output must end in .png or .svg");
  }
  const TimelineLayout l = layout_timeline(timeline, width);
  using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
  Surface surface(png ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, l.width, l.height)
                      : cairo_svg_surface_create(path.c_str(), l.width, l.height),
                  &cairo_surface_destroy);
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error("unimem trace: cannot create '" + path +
                             "': " + cairo_status_to_string(cairo_surface_status(surface.get())));
  }
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> context(cairo_create(surface.get()),
                                                             &cairo_destroy);
  cairo_t* cr = context.get();
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  set_colour(cr, 0xffffff);  // background
  cairo_paint(cr);

  const double span = std::max(timeline.end_us - timeline.begin_us, 1e-3);
  const double plot_width = l.plot_right - l.plot_left;
  const auto x_of = [&](double us) {
    return l.plot_left + (us - timeline.begin_us) / span * plot_width;
  };

  // Title.
  set_colour(cr, 0x000000);
  cairo_set_font_size(cr, 15);
  cairo_move_to(cr, 10, 23);
  const std::string title = "unimem timeline: " + std::to_string(timeline.items.size()) +
                            " operations over " + tick_label(span, span);
  cairo_show_text(cr, title.c_str());

  // Lanes: alternating bands with their labels.
  cairo_set_font_size(cr, 11);
  for (std::size_t i = 0; i < timeline.lanes.size(); ++i) {
    const int top = l.lane_top(i);
    set_colour(cr, i % 2 == 0 ? 0xf2f2f2 : 0xe6e6e6);
    cairo_rectangle(cr, 0, top, l.width, l.lane_height);
    cairo_fill(cr);
    set_colour(cr, 0x202020);
    cairo_save(cr);
    cairo_rectangle(cr, 0, top, l.plot_left - 6, l.lane_height);
    cairo_clip(cr);
    cairo_move_to(cr, 8, top + l.lane_height / 2.0 + 4);
    cairo_show_text(cr, timeline.lanes[i].label.c_str());
    cairo_restore(cr);
  }

  // Entries: at least one pixel wide, so short copies stay visible.
  for (const TimelineItem& item : timeline.items) {
    const double x0 = x_of(item.start_us);
    const double x1 = std::max(x_of(item.end_us), x0 + 1.0);
    const int top = l.lane_top(item.lane);
    set_colour(cr, category_colour(item.category));
    cairo_rectangle(cr, x0, top + 3, x1 - x0, l.lane_height - 6);
    cairo_fill(cr);
  }

  // Time axis.
  const double axis_y = l.lane_top(timeline.lanes.size()) + 6;
  set_colour(cr, 0x000000);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, l.plot_left, axis_y + 0.5);
  cairo_line_to(cr, l.plot_right, axis_y + 0.5);
  cairo_stroke(cr);
  const double step = tick_step(span, 10);
  for (double t = 0; t <= span + step * 1e-9; t += step) {
    const double x = std::round(x_of(timeline.begin_us + t)) + 0.5;
    cairo_move_to(cr, x, axis_y);
    cairo_line_to(cr, x, axis_y + 6);
    cairo_stroke(cr);
    const std::string label = tick_label(t, span);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, label.c_str(), &ext);
    cairo_move_to(cr, x - ext.width / 2, axis_y + 20);
    cairo_show_text(cr, label.c_str());
  }
  cairo_move_to(cr, 8, axis_y + 20);
  cairo_show_text(cr, "time since the runtime started");

  // Legend: one swatch per category present.
  double x = 8;
  const double legend_y = axis_y + kAxisHeight - 10;
  for (const std::string& category : timeline.categories) {
    set_colour(cr, category_colour(category));
    cairo_rectangle(cr, x, legend_y, 14, 14);
    cairo_fill(cr);
    set_colour(cr, 0x000000);
    const std::string label = category.empty() ? "(no category)" : category;
    cairo_move_to(cr, x + 19, legend_y + 11);
    cairo_show_text(cr, label.c_str());
    cairo_text_extents_t ext;
    cairo_text_extents(cr, label.c_str(), &ext);
    x += 19 + ext.x_advance + 22;
  }

  context.reset();
  if (png) {
    const cairo_status_t status = cairo_surface_write_to_png(surface.get(), path.c_str());
    if (status != CAIRO_STATUS_SUCCESS) {
      throw std::runtime_error("unimem trace: cannot write '" + path +
                               "': " + cairo_status_to_string(status));
    }
  } else {
    cairo_surface_finish(surface.get());
    if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS) {
      throw std::runtime_error("unimem trace: cannot write '" + path +
                               "': " + cairo_status_to_string(cairo_surface_status(surface.get())));
    }
  }
}

}  // namespace unimem::tools
