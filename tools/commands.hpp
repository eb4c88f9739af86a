#pragma once

#include <CLI/CLI.hpp>

#include "cli_numbers.hpp"  // not_negative: every unsigned option is checked with it

namespace unimem::tools {

// Each subcommand lives in its own tools/command_<name>.cpp and registers itself on the app.
void add_version_command(CLI::App& app);
void add_selftest_command(CLI::App& app);
void add_devices_command(CLI::App& app);
void add_analyze_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_scale_command(CLI::App& app);

}  // namespace unimem::tools
