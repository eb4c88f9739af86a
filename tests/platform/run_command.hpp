#pragma once

// Runs a shell command and keeps what it printed, for the platform tests that run whole programs
// (directly on the vendors, or under `unimem run`) and compare their output.

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace unimem::testing {

struct CommandOutput {
  int status = -1;  ///< as pclose returns it (-1: the command could not be started)
  std::string text;
};

inline CommandOutput run_command(const std::string& command) {
  CommandOutput out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out.text += buffer;
  out.status = ::pclose(pipe);
  return out;
}

}  // namespace unimem::testing
