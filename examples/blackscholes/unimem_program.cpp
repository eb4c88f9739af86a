// blackscholes, unimem version: one plain 1-D launch; option i reads element i of price, strike
// and years and writes element i of call and put (blackscholes.cl).

#include <cstdint>

#include "examples/program_version.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {

using namespace blackscholes_parameters;

std::map<std::string, BufferId> submit_blackscholes_program(
    Runtime& runtime, Program& program, const LaunchOptions& options, const Problem& problem,
    std::map<std::string, BufferId>& buffers) {
  const std::uint64_t bytes = problem.size * sizeof(float);
  const BufferId call = scratch_buffer(runtime, buffers, "call", bytes);
  const BufferId put = scratch_buffer(runtime, buffers, "put", bytes);
  const AffinePiece own = row_major_piece(sizeof(float), {1});
  LaunchOptions launch = options;
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own}),
                     AccessDescriptor::affine(1, AccessMode::read, {own}),
                     AccessDescriptor::affine(2, AccessMode::read, {own}),
                     AccessDescriptor::affine(3, AccessMode::write, {own}),
                     AccessDescriptor::affine(4, AccessMode::write, {own})};
  const NDRange range = ndrange({problem.size});
  program.launch("blackscholes", range,
                 {Arg::buffer(buffers.at("price")), Arg::buffer(buffers.at("strike")),
                  Arg::buffer(buffers.at("years")), Arg::buffer(call), Arg::buffer(put),
                  Arg::scalar(std::int32_t{0}), Arg::scalar(kRiskFree), Arg::scalar(kVolatility)},
                 launch);
  return {{"call", call}, {"put", put}};
}

}  // namespace unimem::examples
