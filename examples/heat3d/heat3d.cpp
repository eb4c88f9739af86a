// heat3d: the 7-point heat equation stencil of Pochoir (Tang et al.) that the seeds evaluate
// (seeds/README.md), with clamped borders. Split by z planes, one halo plane per neighbour.

#include "examples/halo_pingpong.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {
namespace embedded {
extern const char heat3d_cl[];
}  // namespace embedded

namespace {

using namespace heat3d_parameters;

class Heat3d final : public HaloStencil {
 public:
  std::string name() const override { return "heat3d"; }
  std::string description() const override {
    return "7-point heat stencil on an N x N x N grid with clamped borders, STEPS steps; z planes "
           "split over devices, one halo plane exchanged per neighbour and step";
  }
  Problem small_problem() const override { return {14, 3}; }
  Problem medium_problem() const override { return {160, 30}; }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"heat3d.cl", embedded::heat3d_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    const std::uint64_t n = problem.size;
    return {{"grid", random_floats(n * n * n, seed, 0.0f, 1.0f)}};
  }

 protected:
  Shape shape() const override { return {3, "grid", "heat3d", {}}; }
  void reference_step(const Problem& problem, const Arrays&, const std::vector<float>& in,
                      std::vector<float>& out) const override {
    const auto n = static_cast<std::int64_t>(problem.size);
    const std::int64_t plane = n * n;
    for (std::int64_t z = 0; z < n; ++z) {
      for (std::int64_t y = 0; y < n; ++y) {
        for (std::int64_t x = 0; x < n; ++x) {
          const std::int64_t c = z * plane + y * n + x;
          const std::int64_t xm = x > 0 ? c - 1 : c;
          const std::int64_t xp = x < n - 1 ? c + 1 : c;
          const std::int64_t ym = y > 0 ? c - n : c;
          const std::int64_t yp = y < n - 1 ? c + n : c;
          const std::int64_t zm = z > 0 ? c - plane : c;
          const std::int64_t zp = z < n - 1 ? c + plane : c;
          out[c] = kCenter * in[c] +
                   kAdjacent * (((in[xm] + in[xp]) + (in[ym] + in[yp])) + (in[zm] + in[zp]));
        }
      }
    }
  }
  std::vector<ClArg> kernel_args(const Problem& problem, const ClMem& in, const ClMem& out,
                                 std::span<const ClMem>, const HaloBlock& block) const override {
    return {ClArg::mem(in),
            ClArg::mem(out),
            ClArg::of(static_cast<cl_int>(problem.size)),
            ClArg::of(static_cast<cl_int>(block.held.begin)),
            ClArg::of(kCenter),
            ClArg::of(kAdjacent)};
  }
};

}  // namespace

std::unique_ptr<Workload> make_heat3d() { return std::make_unique<Heat3d>(); }

}  // namespace unimem::examples
