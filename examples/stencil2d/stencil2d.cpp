// stencil2d: SHOC's Stencil2D (Danalis et al.), reduced to the 5-point form the seeds evaluate
// (Matz et al., 002_aa84334820ddd8b5.txt, section 8), with clamped borders. Split by rows.

#include "examples/halo_pingpong.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {
namespace embedded {
extern const char stencil2d_cl[];
}  // namespace embedded

namespace {

using namespace stencil2d_parameters;

class Stencil2d final : public HaloStencil {
 public:
  std::string name() const override { return "stencil2d"; }
  std::string description() const override {
    return "5-point stencil on an N x N grid with clamped borders, STEPS steps; rows split over "
           "devices, one halo row exchanged per neighbour and step";
  }
  Problem small_problem() const override { return {48, 4}; }
  Problem medium_problem() const override { return {2048, 50}; }
  std::vector<KernelSource> kernel_sources() const override {
    return {{"stencil2d.cl", embedded::stencil2d_cl, ""}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    return {{"grid", random_floats(problem.size * problem.size, seed, 0.0f, 1.0f)}};
  }

 protected:
  Shape shape() const override { return {2, "grid", "stencil2d", {}}; }
  void reference_step(const Problem& problem, const Arrays&, const std::vector<float>& in,
                      std::vector<float>& out) const override {
    const auto n = static_cast<std::int64_t>(problem.size);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const ClampedCross x = clamped_cross(i, j, n);
        out[x.center] = kCenter * in[x.center] +
                        kAdjacent * ((in[x.north] + in[x.south]) + (in[x.west] + in[x.east]));
      }
    }
  }
  std::vector<ClArg> kernel_args(const Problem& problem, const ClMem& in, const ClMem& out,
                                 std::span<const ClMem>, const HaloBlock& block) const override {
    const auto n = static_cast<cl_int>(problem.size);
    return {ClArg::mem(in),
            ClArg::mem(out),
            ClArg::of(n),
            ClArg::of(n),
            ClArg::of(static_cast<cl_int>(block.held.begin)),
            ClArg::of(kCenter),
            ClArg::of(kAdjacent)};
  }
};

}  // namespace

std::unique_ptr<Workload> make_stencil2d() { return std::make_unique<Stencil2d>(); }

}  // namespace unimem::examples
