// `unimem about`: the version, the layers this build of unimem contains and where kernels find
// the device library.
#include <iostream>
#include <string>
#include <string_view>

#include <unimem/version.hpp>
#include "api/device_library.hpp"
#include "commands.hpp"

#if !defined(UNIMEM_BUILT_LAYERS)
#error "tools/CMakeLists.txt defines UNIMEM_BUILT_LAYERS: the built layers, comma-separated"
#endif

namespace unimem::tools {

void add_version_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("about", "Print the version and what this build of unimem contains");
  cmd->callback([] {
    // The layers are listed in the order they were added: from the bottom (region) up.
    const std::string_view layers = UNIMEM_BUILT_LAYERS;
    std::cout << "unimem " << unimem::version() << "\n"
              << "A runtime that gives every compute device of a machine one shared memory.\n"
              << "Layers in this build (docs/ARCHITECTURE.md):";
    std::size_t begin = 0;
    while (begin < layers.size()) {
      std::size_t end = layers.find(',', begin);
      if (end == std::string_view::npos) end = layers.size();
      std::cout << (begin == 0 ? " " : ", ") << layers.substr(begin, end - begin);
      begin = end + 1;
    }
    std::cout << "\n";
    const std::string device_library = unimem::detail::device_include_dir();
    std::cout << "Device library (<unimem/team.h>): "
              << (device_library.empty() ? "not found (set UNIMEM_DEVICE_INCLUDE_DIR)"
                                         : device_library)
              << "\n";
  });
}

}  // namespace unimem::tools
