#pragma once

// clCompileProgram and clLinkProgram over unimem's Program, which builds one source text: a
// compiled unit is its source made self-contained (its input headers written to a directory of
// its own, its quoted and angled #includes of them made absolute, its -D / -U options turned into
// #define / #undef around it, and the macros its own text defines undefined after it), and
// linking builds the units' texts one after another. So a kernel of one unit calls functions
// another defines, and the kernel analysis reads the whole program. A compile is checked by the
// vendors' own clCompileProgram.
// Limits (README): two units may not both define a `static` function or a struct of one name,
// and macros that a unit's headers define stay defined in the units linked after it.

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/opencl/opencl_api.hpp"

namespace unimem::platform {

/// A compile's input headers on disk (a fresh temporary directory), removed with the last owner.
/// Unit texts and builds refer to it by path, so compiled and linked programs keep it alive.
class HeaderDirectory {
 public:
  /// Writes each (include name, text) below a new directory. Throws std::invalid_argument naming
  /// a header whose name is absolute or climbs out with "..".
  explicit HeaderDirectory(const std::vector<std::pair<std::string, std::string>>& headers);
  ~HeaderDirectory();
  HeaderDirectory(const HeaderDirectory&) = delete;
  HeaderDirectory& operator=(const HeaderDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// What clCompileProgram leaves for clLinkProgram.
struct CompiledUnit {
  std::string text;  ///< the source, self-contained (see the file comment)
  /// The compile's options other than -D / -U, plus -I of the header directory: the link builds
  /// with them too (nested header includes, -cl-* flags).
  std::string options;
  std::shared_ptr<const HeaderDirectory> headers;  ///< null when the compile had none
};

/// The unit of `source` compiled with `options` and `headers` (null: none).
CompiledUnit compile_unit(const std::string& source, const std::string& options,
                          std::shared_ptr<const HeaderDirectory> headers);

/// clCompileProgram of `text` by the vendors underneath, on every device of `devices` (one vendor
/// context per platform among them): the vendor's verdict (CL_SUCCESS,
/// CL_COMPILE_PROGRAM_FAILURE, CL_INVALID_COMPILER_OPTIONS, ...) and its build log. A compiled
/// unit may call functions that only another unit defines, so a full build cannot check it.
cl_int vendor_compile(const std::vector<cl_device_id>& devices, const std::string& text,
                      const std::string& options, std::string& log);

/// The options a link of `units` builds with: the link's own, then each unit's not already there.
std::string link_options(const std::string& options, const std::vector<const CompiledUnit*>& units);

}  // namespace unimem::platform
