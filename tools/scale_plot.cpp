// The scaling study's picture (`unimem scale --plot FILE`): speedup against simulated device count
// per workload (as Matz et al. Fig. 6) beside the update strategies' speedup and bytes (as DSOM
// Figs. 12-13), drawn with cairo into a PNG or SVG file. Without cairo the command says so.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scale_study.hpp"

#if UNIMEM_HAVE_CAIRO
#include <cairo-svg.h>
#include <cairo.h>
#endif

namespace unimem::tools {

#if UNIMEM_HAVE_CAIRO
namespace {

struct Rgb {
  double r, g, b;
};

// A qualitative palette (distinct hues, readable on white).
const std::array<Rgb, 9> kPalette = {{{0.12, 0.47, 0.71},
                                      {1.00, 0.50, 0.05},
                                      {0.17, 0.63, 0.17},
                                      {0.84, 0.15, 0.16},
                                      {0.58, 0.40, 0.74},
                                      {0.55, 0.34, 0.29},
                                      {0.89, 0.47, 0.76},
                                      {0.50, 0.50, 0.50},
                                      {0.74, 0.74, 0.13}}};

void colour(cairo_t* cr, std::size_t i) {
  const Rgb& c = kPalette.at(i % kPalette.size());
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

void text(cairo_t* cr, double x, double y, const std::string& s, double size, double align = 0) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - align * e.width, y);
  cairo_show_text(cr, s.c_str());
}

std::string fixed(double v, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

struct Panel {
  double x, y, w, h;  // plot area inside the axes
};

// A tick step of 1, 2 or 5 times a power of ten giving at most about eight ticks up to ymax.
double tick_step(double ymax) {
  const double raw = ymax / 8;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// The axis top: ymax rounded up to a whole tick.
double axis_top(double ymax) {
  const double step = tick_step(ymax);
  return std::ceil(ymax / step - 1e-9) * step;
}

void axes(cairo_t* cr, const Panel& p, const std::string& xlabel, const std::string& ylabel,
          double ymax) {
  const double step = tick_step(ymax);
  const int yticks = static_cast<int>(std::lround(ymax / step));
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, p.x, p.y);
  cairo_line_to(cr, p.x, p.y + p.h);
  cairo_line_to(cr, p.x + p.w, p.y + p.h);
  cairo_stroke(cr);
  for (int t = 0; t <= yticks; ++t) {
    const double v = ymax * t / yticks;
    const double y = p.y + p.h - p.h * t / yticks;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, p.x + 1, y);
    cairo_line_to(cr, p.x + p.w, y);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, p.x - 6, y + 4, fixed(v, step < 1 ? 1 : 0), 11, 1);
  }
  text(cr, p.x + p.w / 2, p.y + p.h + 38, xlabel, 13, 0.5);
  cairo_save(cr);
  cairo_translate(cr, p.x - 40, p.y + p.h / 2);
  cairo_rotate(cr, -1.5707963);
  text(cr, 0, 0, ylabel, 13, 0.5);
  cairo_restore(cr);
}

void draw(cairo_t* cr, double width, double height, const std::string& title,
          const std::vector<ScalePoint>& scaling, const std::vector<ScalePoint>& strategies) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, width / 2, 26, title, 16, 0.5);

  // Left: speedup against device count, one line per workload, the linear speedup dashed.
  std::vector<std::string> names;
  unsigned max_devices = 1;
  double max_speedup = 1;
  for (const ScalePoint& p : scaling) {
    if (std::find(names.begin(), names.end(), p.workload) == names.end()) {
      names.push_back(p.workload);
    }
    max_devices = std::max(max_devices, p.devices);
    max_speedup = std::max(max_speedup, p.speedup);
  }
  const double ymax = axis_top(std::max<double>(max_devices, max_speedup));
  const Panel left{80, 60, width * 0.5 - 200, height - 130};
  axes(cr, left, "simulated devices", "speedup over 1 device", ymax);
  const auto px = [&](double d) {
    return left.x + left.w * (d - 1) / std::max(1.0, static_cast<double>(max_devices) - 1);
  };
  const auto py = [&](double s) { return left.y + left.h - left.h * s / ymax; };
  for (unsigned d = 1; d <= max_devices; ++d) {
    if (max_devices <= 16 || d % 4 == 0 || d == 1) {
      cairo_set_source_rgb(cr, 0, 0, 0);
      text(cr, px(d), left.y + left.h + 16, std::to_string(d), 11, 0.5);
    }
  }
  cairo_set_source_rgb(cr, 0.4, 0.4, 0.4);
  const std::array<double, 2> dash = {5, 4};
  cairo_set_dash(cr, dash.data(), 2, 0);
  cairo_move_to(cr, px(1), py(1));
  cairo_line_to(cr, px(max_devices), py(max_devices));
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
  for (std::size_t w = 0; w < names.size(); ++w) {
    colour(cr, w);
    cairo_set_line_width(cr, 2);
    bool first = true;
    for (const ScalePoint& p : scaling) {
      if (p.workload != names[w]) continue;
      if (first) {
        cairo_move_to(cr, px(p.devices), py(p.speedup));
      } else {
        cairo_line_to(cr, px(p.devices), py(p.speedup));
      }
      first = false;
    }
    cairo_stroke(cr);
    for (const ScalePoint& p : scaling) {
      if (p.workload != names[w]) continue;
      cairo_arc(cr, px(p.devices), py(p.speedup), 2.5, 0, 6.2832);
      cairo_fill(cr);
    }
  }
  // Legend of the left panel, right of it.
  const double lx = left.x + left.w + 15;
  for (std::size_t w = 0; w < names.size(); ++w) {
    const double ly = left.y + 10 + 18.0 * static_cast<double>(w);
    colour(cr, w);
    cairo_rectangle(cr, lx, ly - 8, 14, 8);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, lx + 20, ly, names[w], 12);
  }
  cairo_set_source_rgb(cr, 0.4, 0.4, 0.4);
  text(cr, lx, left.y + 18.0 * static_cast<double>(names.size()) + 14, "- - linear", 12);

  // Right: per workload one bar per strategy (speedup over one device), bytes relative to
  // batch printed above each bar (DSOM Fig. 12 normalizes to batch the same way).
  if (strategies.empty()) return;
  std::vector<std::string> workloads;
  std::vector<std::string> kinds;
  double top = 1;
  unsigned devices = 0;
  for (const ScalePoint& p : strategies) {
    if (std::find(workloads.begin(), workloads.end(), p.workload) == workloads.end()) {
      workloads.push_back(p.workload);
    }
    if (std::find(kinds.begin(), kinds.end(), p.strategy) == kinds.end()) {
      kinds.push_back(p.strategy);
    }
    top = std::max(top, p.speedup);
    devices = p.devices;
  }
  top = axis_top(top * 1.15);
  const Panel right{width * 0.5 + 60, 60, width * 0.5 - 90, height - 130};
  axes(cr, right, "workload (" + std::to_string(devices) + " simulated devices)",
       "speedup over 1 device", top);
  const double group = right.w / static_cast<double>(workloads.size());
  const double bar = group * 0.8 / static_cast<double>(kinds.size());
  for (std::size_t w = 0; w < workloads.size(); ++w) {
    double batch_bytes = 0;
    for (const ScalePoint& p : strategies) {
      if (p.workload == workloads[w] && p.strategy == "batch") {
        batch_bytes = p.bytes_h2d + p.bytes_d2h + p.bytes_d2d;
      }
    }
    const double gx = right.x + group * static_cast<double>(w) + group * 0.1;
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, gx + group * 0.4, right.y + right.h + 16, workloads[w], 11, 0.5);
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      for (const ScalePoint& p : strategies) {
        if (p.workload != workloads[w] || p.strategy != kinds[k]) continue;
        const double x = gx + bar * static_cast<double>(k);
        const double h = right.h * p.speedup / top;
        colour(cr, k);
        cairo_rectangle(cr, x, right.y + right.h - h, bar * 0.9, h);
        cairo_fill(cr);
        if (batch_bytes > 0) {
          const double rel = (p.bytes_h2d + p.bytes_d2h + p.bytes_d2d) / batch_bytes;
          cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
          cairo_save(cr);
          cairo_translate(cr, x + bar * 0.6, right.y + right.h - h - 3);
          cairo_rotate(cr, -1.5707963);
          text(cr, 0, 0, rel < 0.01 ? "<1%" : fixed(100 * rel, 0) + "%", 9);
          cairo_restore(cr);
        }
      }
    }
  }
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    const double x = right.x + 10 + 95.0 * static_cast<double>(k);
    colour(cr, k);
    cairo_rectangle(cr, x, right.y - 18, 14, 8);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, x + 18, right.y - 10, kinds[k], 12);
  }
  text(cr, right.x + right.w, right.y - 10, "above bars: bytes moved, % of batch's", 10, 1);
}

}  // namespace

bool draw_scale_plot(const std::string& path, const std::string& title,
                     const std::vector<ScalePoint>& scaling,
                     const std::vector<ScalePoint>& strategies, std::string& error) {
  const double width = 1400;
  const double height = 560;
  const bool svg = path.size() >= 4 && path.substr(path.size() - 4) == ".svg";
  const bool png = path.size() >= 4 && path.substr(path.size() - 4) == ".png";
  if (!svg && !png) {
    error = "the plot file must end in .png or .svg: '" + path + "'";
    return false;
  }
  cairo_surface_t* surface =
      svg ? cairo_svg_surface_create(path.c_str(), width, height)
          : cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(width),
                                       static_cast<int>(height));
  cairo_t* cr = cairo_create(surface);
  draw(cr, width, height, title, scaling, strategies);
  cairo_destroy(cr);
  cairo_status_t status = CAIRO_STATUS_SUCCESS;
  if (png) {
    status = cairo_surface_write_to_png(surface, path.c_str());
  } else {
    cairo_surface_finish(surface);
    status = cairo_surface_status(surface);
  }
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS) {
    error = "cannot write '" + path + "': " + cairo_status_to_string(status);
    return false;
  }
  return true;
}

#else

bool draw_scale_plot(const std::string& path, const std::string&, const std::vector<ScalePoint>&,
                     const std::vector<ScalePoint>&, std::string& error) {
  error = "this unimem is built without cairo (Debian: libcairo2-dev), cannot draw '" + path + "'";
  return false;
}

#endif

}  // namespace unimem::tools
