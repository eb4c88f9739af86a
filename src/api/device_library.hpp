#pragma once

// Where the OpenCL C device library (include/unimem/team.h) is found when unimem builds a
// program, and the build options that make `#include <unimem/team.h>` work in kernels, for the
// build tree and for an installed (even relocated) tree alike.

#include <span>
#include <string>

namespace unimem::detail {

/// The directory holding unimem/team.h for kernels: $UNIMEM_DEVICE_INCLUDE_DIR when set; else
/// the include directory of the tree the running unimem library was installed into (found from
/// the library's own path, so a relocated prefix works); else the source tree's include/
/// directory (unimem used from its build tree). Empty when none holds unimem/team.h.
[[nodiscard]] std::string device_include_dir();

/// device_include_dir's rule with its inputs given: env (may be empty), the path of the file the
/// library was loaded from (libunimem.so, or an executable it is linked into), the relative paths
/// from that file's directory to the installed include directory (from the library directory and
/// from the binary directory, tried in order), and the source tree's include directory. Exposed
/// for tests.
[[nodiscard]] std::string device_include_dir_from(const std::string& env,
                                                  const std::string& library_file,
                                                  std::span<const std::string> to_include,
                                                  const std::string& source_include);

/// The options unimem adds to every program build: the device library's include directory and
/// -cl-kernel-arg-info (so the driver reports parameter names: team kernels are recognised by
/// the name of their spill parameter).
[[nodiscard]] std::string device_library_build_options();

}  // namespace unimem::detail
