// `unimem trace FILE.json -o timeline.png|svg`: draws a trace written by UNIMEM_TRACE
// (`--trace` on bench and run) as a timeline picture (tools/timeline/, cairo).

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "commands.hpp"

#if UNIMEM_HAVE_CAIRO
#include "timeline.hpp"
#endif

namespace unimem::tools {

void add_trace_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "trace",
      "Draw a trace (UNIMEM_TRACE, --trace) as a timeline: one lane per device queue, copy "
      "engine and the host, kernels and copies in distinct colours, a legend and a time axis");
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto width = std::make_shared<int>(1600);
  cmd->add_option("trace", *input, "the Chrome trace JSON file")->required();
  cmd->add_option("-o,--output", *output, "the picture to write: a .png or .svg file")->required();
  cmd->add_option("--width", *width, "picture width in pixels")->check(CLI::Range(600, 20000));
  cmd->callback([=] {
#if UNIMEM_HAVE_CAIRO
    std::ifstream in(*input, std::ios::binary);
    if (!in) throw std::runtime_error("unimem trace: cannot read '" + *input + "'");
    std::ostringstream text;
    text << in.rdbuf();
    const Timeline timeline = parse_chrome_trace(text.str(), *input);
    render_timeline(timeline, *output, *width);
    std::cout << "unimem trace: " << timeline.items.size() << " operations in "
              << timeline.lanes.size() << " lanes drawn to " << *output << "\n";
#else
    (void)width;
    throw std::runtime_error(
        "unimem trace: this unimem was built without cairo, so it cannot draw timelines "
        "(install libcairo2-dev, e.g. with scripts/setup.sh, and configure again); the trace "
        "file itself opens in ui.perfetto.dev or chrome://tracing");
#endif
  });
}

}  // namespace unimem::tools
