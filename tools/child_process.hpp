#pragma once

// Starting other programs from the unimem command: `unimem run` starts the user's program,
// `unimem bench --instructions` starts itself under valgrind.

#include <filesystem>
#include <string>
#include <vector>

namespace unimem::tools {

/// A new, empty directory under the system's temporary directory, named `prefix` + six random
/// characters. Throws std::runtime_error when it cannot be made.
std::filesystem::path make_temp_directory(const std::string& prefix);

/// Starts `command` (its first element is searched in PATH) with this process's environment and
/// waits for it. When `output_file` is not empty, the child's standard output and error go to
/// that file. Returns the exit code, or 128 + the signal's number when a signal ended it. Throws
/// std::runtime_error naming the command when it cannot be started.
int run_and_wait(const std::vector<std::string>& command, const std::string& output_file = "");

}  // namespace unimem::tools
