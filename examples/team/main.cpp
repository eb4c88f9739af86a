// unimem_team_example: row-wise softmax with one team per row (team_softmax.cl) on every device of
// the environment, checked against the CPU reference. Prints the kernel's footprint, the devices
// the launch ran on and the largest difference from the reference.
#include <cmath>
#include <cstdio>
#include <vector>

#include "device/opencl/opencl_context.hpp"
#include "examples/team/team_softmax.hpp"

int main() {
  using namespace unimem;
  const std::uint64_t rows = 96;
  const std::uint64_t cols = 500;
  std::vector<float> in(rows * cols);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 37) % 101) / 10.0f;
  Runtime runtime(opencl::make_opencl_devices(""));
  const examples::TeamSoftmaxRun run = examples::team_softmax(runtime, in, rows, cols);
  const std::vector<float> ref = examples::team_softmax_reference(in, rows, cols);
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    worst = std::fmax(worst, std::fabs(static_cast<double>(run.out[i]) - ref[i]));
  }
  std::printf("team_softmax: %s\n", run.footprint.to_string().c_str());
  std::printf("team_softmax: %llu rows on %zu of %zu device(s), max |difference| %.3g\n",
              static_cast<unsigned long long>(rows), run.partitions, runtime.device_count(), worst);
  return worst < 1e-6 ? 0 : 1;
}
