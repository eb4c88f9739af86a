// The unimem command-line tool.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include <unimem/version.hpp>
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "unimem: one shared memory over every compute device of a machine.\n"
      "Allocate a shared buffer once, launch kernels on one device or split over all of them;\n"
      "unimem derives which bytes each part reads and writes, moves only those and keeps every\n"
      "copy coherent.",
      "unimem"};
  app.set_version_flag("--version", std::string("unimem ") + std::string(unimem::version()));
  app.require_subcommand(0, 1);
  unimem::tools::add_version_command(app);
  unimem::tools::add_selftest_command(app);
  unimem::tools::add_devices_command(app);
  unimem::tools::add_analyze_command(app);
  unimem::tools::add_bench_command(app);
  unimem::tools::add_run_command(app);
  unimem::tools::add_trace_command(app);
  unimem::tools::add_scale_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "unimem: error: " << e.what() << "\n";
    return 1;
  }
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
  }
  return 0;
}
