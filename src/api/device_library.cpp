#include "api/device_library.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef UNIMEM_SOURCE_INCLUDE_DIR
#define UNIMEM_SOURCE_INCLUDE_DIR ""
#endif
#ifndef UNIMEM_LIBRARY_TO_INCLUDE_DIR
#define UNIMEM_LIBRARY_TO_INCLUDE_DIR "../include"
#endif
#ifndef UNIMEM_BINARY_TO_INCLUDE_DIR
#define UNIMEM_BINARY_TO_INCLUDE_DIR "../include"
#endif

namespace unimem::detail {

namespace {

bool holds_team_header(const std::filesystem::path& dir) {
  std::error_code ec;
  return !dir.empty() && std::filesystem::is_regular_file(dir / "unimem" / "team.h", ec);
}

// The file (shared library or executable) this code was loaded from.
std::string loaded_from() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&device_include_dir), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  return info.dli_fname;
}

}  // namespace

std::string device_include_dir_from(const std::string& env, const std::string& library_file,
                                    std::span<const std::string> to_include,
                                    const std::string& source_include) {
  if (!env.empty()) return env;
  if (!library_file.empty()) {
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::weakly_canonical(library_file, ec);
    for (const std::string& relative : to_include) {
      if (ec) break;
      const std::filesystem::path installed = (file.parent_path() / relative).lexically_normal();
      if (holds_team_header(installed)) return installed.string();
    }
  }
  if (holds_team_header(source_include)) return source_include;
  return {};
}

std::string device_include_dir() {
  const char* env = std::getenv("UNIMEM_DEVICE_INCLUDE_DIR");
  const std::array<std::string, 2> to_include = {UNIMEM_LIBRARY_TO_INCLUDE_DIR,
                                                 UNIMEM_BINARY_TO_INCLUDE_DIR};
  return device_include_dir_from(env != nullptr ? env : "", loaded_from(), to_include,
                                 UNIMEM_SOURCE_INCLUDE_DIR);
}

std::string device_library_build_options() {
  std::string options = "-cl-kernel-arg-info";
  const std::string dir = device_include_dir();
  if (!dir.empty()) {
    // Quoted when needed: clBuildProgram and the analysis split options at unquoted blanks.
    const bool blank = dir.find_first_of(" \t") != std::string::npos;
    options += blank ? " -I\"" + dir + "\"" : " -I" + dir;
  }
  return options;
}

}  // namespace unimem::detail
