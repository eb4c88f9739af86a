#pragma once

// `unimem bench --instructions N`: the bookkeeping measure in instructions. Timed on this 2-core
// machine, two identical runtimes differ by up to 7 % of a short run in the submitting thread's
// CPU time (`--noise-floor`), far above the 0.05 % the runtime aims at. The instructions that
// thread executes barely move between repetitions, so the bench starts itself again under
// valgrind's callgrind, where each timed run of alpha, beta, gamma and a second gamma is counted
// (the run is bracketed by callgrind client requests), and reads the counts back.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace unimem::tools {

/// Whether this unimem was built with valgrind's callgrind.h (the client requests).
bool callgrind_supported();
/// Whether this process runs under valgrind.
bool running_on_valgrind();

/// Around one timed run in the child: zeroes the counters, then dumps the calling thread's count
/// under `label` (no effect outside valgrind).
void callgrind_begin_run();
void callgrind_end_run(const std::string& label);

/// The instructions the submitting thread executed in one run, and how many of them were inside
/// the OpenCL driver (calls into the ICD loader and below). The driver's part moves with timing:
/// the work a call does depends on how many earlier commands have finished (POCL frees their
/// events, the final wait polls them), so two identical runs differ there by hundreds of
/// instructions per launch; outside it they hardly differ.
///
/// The allocator's part moves too: glibc's malloc and free cost more or less per call with the
/// heap's state, which depends on which thread frees what when (the driver's threads free
/// chunks the submitting thread allocated, and an event's last reference is dropped on either
/// side). Measured on floyd-warshall (3 repetitions): the two gammas differed by -480 to +422
/// thousand instructions per run in all and by -40 to +70 thousand outside the driver and the
/// allocator; what the allocator does is then counted in calls (allocator_calls), which do not
/// move with timing.
struct RunInstructions {
  std::uint64_t total = 0;
  std::uint64_t driver = 0;
  /// Inside the allocator (malloc, free, calloc, realloc and their kin) when called from outside
  /// the driver (the driver's calls are in `driver`), and how many such calls.
  std::uint64_t allocator = 0;
  std::uint64_t allocator_calls = 0;
  /// How many calls the submitting thread made into the driver from outside it. What a call
  /// costs moves with timing, how many there are does not: equal counts in beta and gamma mean
  /// the driver's part of beta - gamma is that movement, not work the bookkeeping asked for.
  std::uint64_t driver_calls = 0;
};

/// Runs this program with `arguments` (argv[1..]) under callgrind and returns the instruction
/// counts of the main thread's runs, by the label callgrind_end_run gave them, in run order.
/// Throws std::runtime_error when valgrind is missing or the child fails, with the tail of its
/// output.
std::map<std::string, std::vector<RunInstructions>> callgrind_run_counts(
    const std::vector<std::string>& arguments);

}  // namespace unimem::tools
