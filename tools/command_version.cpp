#include <iostream>

#include "commands.hpp"
#include <unimem/version.hpp>

namespace unimem::tools {

void add_version_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("about", "Print the version and what this build of unimem contains");
  cmd->callback([] {
    std::cout << "unimem " << unimem::version() << "\n"
              << "A runtime that gives every compute device of a machine one shared memory.\n"
              << "Layers in this build: region (byte intervals, interval maps, N-D boxes, array\n"
              << "layouts, fast access-range generation).\n";
  });
}

}  // namespace unimem::tools
