// nbody, unimem version: two shared position arrays used in turn, one velocity array, one plain
// launch per step. Body i reads every position (loop j), its own position and velocity, and
// writes its new position and velocity (nbody.cl).

#include <array>
#include <cstdint>

#include "examples/program_version.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {

using namespace nbody_parameters;

std::map<std::string, BufferId> submit_nbody_program(Runtime& runtime, Program& program,
                                                     const LaunchOptions& options,
                                                     const Problem& problem,
                                                     std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const std::array<BufferId, 2> positions = pingpong_buffers(runtime, buffers, "pos");
  const BufferId vel = buffers.at("vel");
  const IndexVar j = IndexVar::loop(0);
  AffinePiece all_bodies;  // pos_in[j], j in [0, n - 1]
  all_bodies.element_size = kBodyBytes;
  all_bodies.terms = {{j, 1}};
  all_bodies.bounds = {{j, 0, n - 1}};
  const AffinePiece own = row_major_piece(kBodyBytes, {1});
  LaunchOptions launch = options;
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read, {all_bodies, own}),
                     AccessDescriptor::affine(1, AccessMode::write, {own}),
                     AccessDescriptor::affine(2, AccessMode::read_write, {own})};
  const NDRange range = ndrange({problem.size});
  for (std::uint32_t step = 0; step < problem.steps; ++step) {
    program.launch("nbody", range,
                   {Arg::buffer(positions[step % 2]), Arg::buffer(positions[1 - step % 2]),
                    Arg::buffer(vel), Arg::scalar(static_cast<std::int32_t>(n)),
                    Arg::scalar(std::int32_t{0}), Arg::scalar(kDt), Arg::scalar(kSoftening2)},
                   launch);
  }
  return {{"pos", positions[problem.steps % 2]}, {"vel", vel}};
}

}  // namespace unimem::examples
