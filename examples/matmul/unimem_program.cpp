// matmul, unimem version: C = A * B in one plain launch over (n, n), split by rows of C. The
// kernel (matmul.cl) reads its row of A (loop k), all of B, and writes its element of C.

#include <cstdint>

#include "examples/program_version.hpp"

namespace unimem::examples {

std::map<std::string, BufferId> submit_matmul_program(Runtime& runtime, Program& program,
                                                      const LaunchOptions& options,
                                                      const Problem& problem,
                                                      std::map<std::string, BufferId>& buffers) {
  const auto n = static_cast<std::int64_t>(problem.size);
  const BufferId c =
      scratch_buffer(runtime, buffers, "c", problem.size * problem.size * sizeof(float));
  const IndexVar k = IndexVar::loop(0);
  AffinePiece a_row;  // a[i * n + k], k in [0, n - 1]
  a_row.element_size = sizeof(float);
  a_row.terms = {{IndexVar::global_id(1), n}, {k, 1}};
  a_row.bounds = {{k, 0, n - 1}};
  LaunchOptions launch = options;
  launch.accesses = {AccessDescriptor::affine(0, AccessMode::read, {a_row}),
                     AccessDescriptor::whole(1, AccessMode::read),
                     AccessDescriptor::affine(2, AccessMode::write, {grid_piece(n)})};
  const NDRange range = ndrange({problem.size, problem.size});
  program.launch("matmul", range,
                 {Arg::buffer(buffers.at("a")), Arg::buffer(buffers.at("b")), Arg::buffer(c),
                  Arg::scalar(static_cast<std::int32_t>(n)), Arg::scalar(std::int32_t{0})},
                 launch);
  return {{"c", c}};
}

}  // namespace unimem::examples
