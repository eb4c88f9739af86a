// nbody: all-pairs gravitational n-body (GPU Gems 3, ch. 31; the seeds' nbody). Split by bodies:
// every device reads all positions and writes its bodies' new positions and velocities; after each
// step every device receives the other devices' new positions (an all-gather).

#include <array>
#include <cmath>

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {
namespace embedded {
extern const char nbody_cl[];
}  // namespace embedded

namespace {

using namespace nbody_parameters;

class Nbody final : public Workload {
 public:
  std::string name() const override { return "nbody"; }
  std::string description() const override {
    return "all-pairs n-body with N bodies, STEPS steps; bodies split over devices, new positions "
           "all-gathered between steps";
  }
  Problem small_problem() const override { return {192, 3}; }
  Problem medium_problem() const override { return {4096, 4}; }
  SizeRules size_rules() const override {
    return {"bodies", 1, (std::uint64_t{1} << 28) - 1, true};
  }

  std::vector<KernelSource> kernel_sources() const override {
    return {{"nbody.cl", embedded::nbody_cl, "-cl-fp32-correctly-rounded-divide-sqrt"}};
  }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    std::vector<float> pos = random_floats(4 * problem.size, seed, -1.0f, 1.0f);
    const std::vector<float> mass = random_floats(problem.size, seed + 1, 0.5f, 1.5f);
    std::vector<float> vel = random_floats(4 * problem.size, seed + 2, -0.1f, 0.1f);
    for (std::uint64_t i = 0; i < problem.size; ++i) {
      pos[4 * i + 3] = mass[i];
      vel[4 * i + 3] = 0.0f;
    }
    return {{"pos", std::move(pos)}, {"vel", std::move(vel)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const std::uint64_t n = problem.size;
    std::vector<float> pos = inputs.at("pos");
    std::vector<float> vel = inputs.at("vel");
    std::vector<float> next(pos.size());
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      for (std::uint64_t i = 0; i < n; ++i) {
        const float* p = &pos[4 * i];
        float ax = 0.0f;
        float ay = 0.0f;
        float az = 0.0f;
        for (std::uint64_t j = 0; j < n; ++j) {
          const float* q = &pos[4 * j];
          const float dx = q[0] - p[0];
          const float dy = q[1] - p[1];
          const float dz = q[2] - p[2];
          const float d2 = ((dx * dx + dy * dy) + dz * dz) + kSoftening2;
          const float inv = 1.0f / std::sqrt(d2);
          const float s = q[3] * ((inv * inv) * inv);
          ax = ax + dx * s;
          ay = ay + dy * s;
          az = az + dz * s;
        }
        float* v = &vel[4 * i];
        v[0] = v[0] + ax * kDt;
        v[1] = v[1] + ay * kDt;
        v[2] = v[2] + az * kDt;
        next[4 * i + 0] = p[0] + v[0] * kDt;
        next[4 * i + 1] = p[1] + v[1] * kDt;
        next[4 * i + 2] = p[2] + v[2] * kDt;
        next[4 * i + 3] = p[3];
      }
      std::swap(pos, next);
    }
    return {{"pos", std::move(pos)}, {"vel", std::move(vel)}};
  }

  Arrays manual_version(ManualContext& context, const ClProgram& program, const Problem& problem,
                        const Arrays& inputs) const override {
    const unsigned count = context.device_count();
    const ClKernel kernel = context.kernel(program, "nbody");
    const std::uint64_t n = problem.size;
    const std::vector<Block> own = split_evenly(n, count);
    const std::vector<float>& pos_in = inputs.at("pos");
    const std::vector<float>& vel_in = inputs.at("vel");
    std::vector<float> pos(pos_in.size());
    std::vector<float> vel(vel_in.size());

    // Per device: all positions twice (ping-pong), its own velocities.
    std::vector<std::array<ClMem, 2>> positions(count);
    std::vector<ClMem> velocities;
    std::vector<std::vector<ClEvent>> ready(count);
    for (unsigned d = 0; d < count; ++d) {
      for (ClMem& m : positions[d]) m = context.allocate(d, n * kBodyBytes, "positions");
      velocities.push_back(context.allocate(d, own[d].size() * kBodyBytes, "own velocities"));
      ready[d].push_back(context.write(d, positions[d][0], 0, pos_in.data(), n * kBodyBytes));
      ready[d].push_back(context.write(d, velocities[d], 0, vel_in.data() + 4 * own[d].begin,
                                       own[d].size() * kBodyBytes));
    }
    std::vector<ClEvent> kernels(count);
    for (std::uint32_t step = 0; step < problem.steps; ++step) {
      const unsigned in = step % 2;
      const unsigned out = 1 - in;
      for (unsigned d = 0; d < count; ++d) {
        kernels[d] = context.launch(
            d, kernel,
            {ClArg::mem(positions[d][in]), ClArg::mem(positions[d][out]), ClArg::mem(velocities[d]),
             ClArg::of(static_cast<cl_int>(n)), ClArg::of(static_cast<cl_int>(own[d].begin)),
             ClArg::of(kDt), ClArg::of(kSoftening2)},
            {own[d].begin}, {own[d].size()}, ready[d]);
        ready[d].clear();
      }
      if (step + 1 == problem.steps) break;
      // All-gather: device d receives every other device's new positions into its new array,
      // before its next kernel (same queue); a sender's next kernel waits for the copies out.
      for (unsigned d = 0; d < count; ++d) {
        for (unsigned e = 0; e < count; ++e) {
          if (e == d) continue;
          const ClEvent wait[] = {kernels[e]};
          const std::uint64_t offset = own[e].begin * kBodyBytes;
          ready[e].push_back(context.copy(d, positions[e][out], offset, positions[d][out], offset,
                                          own[e].size() * kBodyBytes, wait));
        }
      }
    }
    const unsigned last = problem.steps % 2;
    for (unsigned d = 0; d < count; ++d) {
      const std::uint64_t offset = own[d].begin * kBodyBytes;
      (void)context.read(d, positions[d][last], offset, pos.data() + 4 * own[d].begin,
                         own[d].size() * kBodyBytes);
      (void)context.read(d, velocities[d], 0, vel.data() + 4 * own[d].begin,
                         own[d].size() * kBodyBytes);
    }
    context.finish_all();
    return {{"pos", std::move(pos)}, {"vel", std::move(vel)}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    const std::uint64_t array = problem.size * kBodyBytes;
    // Every device reads all initial positions and its own velocities; after each step but the
    // last, every device lacks the positions the others wrote ((devices - 1) arrays in total).
    return {devices * array + array, 2 * array, (problem.steps - 1) * (devices - 1) * array};
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    const std::uint64_t array = problem.size * kBodyBytes;
    return pingpong_plan("nbody", "pos", array, problem.steps, {}, {{"vel", array}});
  }
};

}  // namespace

std::unique_ptr<Workload> make_nbody() { return std::make_unique<Nbody>(); }

}  // namespace unimem::examples
