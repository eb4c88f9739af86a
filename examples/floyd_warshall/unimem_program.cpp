// floyd-warshall, unimem version: one shared distance matrix and one plain launch per k (host
// loop). Row i reads and writes its own row, reads dist[i][k] (in its row) and row k, which is
// passed as the second argument: the same shared buffer at offset k * n (floyd_warshall.cl).

#include <cstdint>

#include "examples/program_version.hpp"

namespace unimem::examples {

std::map<std::string, BufferId> submit_floyd_warshall_program(
    Runtime&, Program& program, const LaunchOptions& options, const Problem& problem,
    std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const BufferId dist = buffers.at("dist");
  const NDRange range = ndrange({problem.size, problem.size});
  for (std::int64_t k = 0; k < n; ++k) {
    LaunchOptions launch = options;
    launch.accesses = {AccessDescriptor::affine(0, AccessMode::read_write, {grid_piece(n)}),
                       AccessDescriptor::affine(1, AccessMode::read,
                                                {row_major_piece(sizeof(float), {1}, k * n)})};
    program.launch("floyd_warshall", range,
                   {Arg::buffer(dist), Arg::buffer(dist), Arg::scalar(static_cast<std::int32_t>(n)),
                    Arg::scalar(static_cast<std::int32_t>(k)), Arg::scalar(std::int32_t{0}),
                    Arg::scalar(static_cast<std::int32_t>(k * n))},
                   launch);
  }
  return {{"dist", dist}};
}

}  // namespace unimem::examples
