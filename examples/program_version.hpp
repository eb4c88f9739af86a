#pragma once

// The unimem version of each workload written against the user-facing API (api/program.hpp):
// shared buffers, host writes of the inputs, plain Program::launch calls with access descriptors
// per buffer argument (the kernel analysis derives the same from the source), host reads of the
// outputs. No copies, blocks or partitions in the workload code: the schedule layer splits every
// launch over the devices and derives each partition's bytes.
//
// One file per workload: examples/<name>/unimem_program.cpp.

#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unimem/program.hpp>
#include "api/runtime_core.hpp"
#include "examples/workload.hpp"

namespace unimem::examples {

/// Submits a workload's launches. `buffers` holds the inputs by name (already written); the
/// function may add scratch buffers to it and returns the output buffers by output name.
/// `options` carries the devices / balance every launch uses; the function adds descriptors.
using ProgramSubmitFunction = std::map<std::string, BufferId>(
    Runtime& runtime, Program& program, const LaunchOptions& options, const Problem& problem,
    std::map<std::string, BufferId>& buffers);
using ProgramSubmit = std::function<ProgramSubmitFunction>;

/// The Program-based submit function of workload `name`; throws PreconditionError if none.
[[nodiscard]] ProgramSubmit program_version(std::string_view name);

/// Result of a Program-based run.
struct ProgramRunResult {
  Arrays outputs;
  TransferStats moved;           ///< copies the runtime issued during the run
  double seconds = 0;            ///< from the first host write to the last host read
  std::vector<std::string> log;  ///< fallback messages of the launches
};

/// Builds the workload's program for runtime's devices (not timed), uploads the inputs, submits,
/// reads the outputs back. `options` applies to every launch.
[[nodiscard]] ProgramRunResult run_program_version(const Workload& workload, Runtime& runtime,
                                                   const Problem& problem, const Arrays& inputs,
                                                   const LaunchOptions& options = {});

/// The same with a program already built for runtime's devices (repeated runs reuse it, so
/// kernels compiled by the first run are not compiled again).
[[nodiscard]] ProgramRunResult run_program_version(const Workload& workload, Runtime& runtime,
                                                   Program& program, const Problem& problem,
                                                   const Arrays& inputs,
                                                   const LaunchOptions& options = {});
/// The workload's program built for runtime's devices.
[[nodiscard]] std::unique_ptr<Program> build_program(const Workload& workload, Runtime& runtime);

/// A new shared buffer `name` of `bytes` bytes that the host never writes, added to `buffers`.
BufferId scratch_buffer(Runtime& runtime, std::map<std::string, BufferId>& buffers,
                        const std::string& name, std::uint64_t bytes);
/// The two buffers an iterative kernel uses in turn: the input `name` and a new scratch buffer
/// `name` + " b" of the same size (added to `buffers`).
[[nodiscard]] std::array<BufferId, 2> pingpong_buffers(Runtime& runtime,
                                                       std::map<std::string, BufferId>& buffers,
                                                       const std::string& name);
/// An NDRange over `global` (1 to 3 extents), no offset, local size left to the driver.
[[nodiscard]] NDRange ndrange(std::initializer_list<std::uint64_t> global);

/// A 2-D row-major element subscript constant + g0 + pitch * g1 (floats unless element_size).
[[nodiscard]] AffinePiece grid_piece(std::int64_t pitch, std::int64_t constant = 0,
                                     std::vector<VarBound> bounds = {},
                                     std::uint64_t element_size = sizeof(float));

}  // namespace unimem::examples
