// blackscholes: the NVIDIA SDK BlackScholes option pricer that the seeds evaluate. Split by
// options: each device reads its options and writes their prices, no communication.

#include <cmath>

#include "examples/manual_opencl.hpp"
#include "examples/workload.hpp"
#include "examples/workload_parameters.hpp"

namespace unimem::examples {
namespace embedded {
extern const char blackscholes_cl[];
}  // namespace embedded

namespace {

using namespace blackscholes_parameters;

float cumulative_normal(float d) {
  const float a1 = 0.31938153f;
  const float a2 = -0.356563782f;
  const float a3 = 1.781477937f;
  const float a4 = -1.821255978f;
  const float a5 = 1.330274429f;
  const float rsqrt_2pi = 0.39894228040143267793994605993438f;
  const float k = 1.0f / (1.0f + 0.2316419f * std::fabs(d));
  float cnd =
      rsqrt_2pi * std::exp(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  if (d > 0.0f) cnd = 1.0f - cnd;
  return cnd;
}

class Blackscholes final : public Workload {
 public:
  std::string name() const override { return "blackscholes"; }
  std::string description() const override {
    return "Black-Scholes call and put prices of N options, one launch; options split over "
           "devices, no communication";
  }
  Problem small_problem() const override { return {6000, 1}; }
  Problem medium_problem() const override { return {std::uint64_t{1} << 22, 1}; }
  SizeRules size_rules() const override {
    return {"options", 1, (std::uint64_t{1} << 31) - 1, false};
  }

  std::vector<KernelSource> kernel_sources() const override {
    return {
        {"blackscholes.cl", embedded::blackscholes_cl, "-cl-fp32-correctly-rounded-divide-sqrt"}};
  }
  // OpenCL allows exp and log 3 ulp of error, the host's libm is within 1 ulp. Prices are
  // differences of products of up to ~100, so the error is absolute: a few ulp of 100 (ulp 7.6e-6).
  // Measured on POCL 3.1: max |error| 1.5e-5 over 6000 options.
  Tolerance tolerance() const override { return {5e-5, 1e-5}; }
  Arrays make_inputs(const Problem& problem, std::uint64_t seed) const override {
    return {{"price", random_floats(problem.size, seed, 5.0f, 30.0f)},
            {"strike", random_floats(problem.size, seed + 1, 1.0f, 100.0f)},
            {"years", random_floats(problem.size, seed + 2, 0.25f, 10.0f)}};
  }
  Arrays reference(const Problem& problem, const Arrays& inputs) const override {
    const std::vector<float>& price = inputs.at("price");
    const std::vector<float>& strike = inputs.at("strike");
    const std::vector<float>& years = inputs.at("years");
    std::vector<float> call(problem.size);
    std::vector<float> put(problem.size);
    for (std::uint64_t i = 0; i < problem.size; ++i) {
      const float s = price[i];
      const float x = strike[i];
      const float t = years[i];
      const float sqrt_t = std::sqrt(t);
      const float d1 = (std::log(s / x) + (kRiskFree + 0.5f * kVolatility * kVolatility) * t) /
                       (kVolatility * sqrt_t);
      const float d2 = d1 - kVolatility * sqrt_t;
      const float cnd1 = cumulative_normal(d1);
      const float cnd2 = cumulative_normal(d2);
      const float exp_rt = std::exp(-kRiskFree * t);
      call[i] = s * cnd1 - x * exp_rt * cnd2;
      put[i] = x * exp_rt * (1.0f - cnd2) - s * (1.0f - cnd1);
    }
    return {{"call", std::move(call)}, {"put", std::move(put)}};
  }

  Arrays manual_version(ManualContext& context, const ClProgram& program, const Problem& problem,
                        const Arrays& inputs) const override {
    const unsigned count = context.device_count();
    const ClKernel kernel = context.kernel(program, "blackscholes");
    std::vector<float> call(problem.size);
    std::vector<float> put(problem.size);
    std::vector<ClMem> keep;
    for (unsigned d = 0; d < count; ++d) {
      const Block r = split_evenly(problem.size, count)[d];
      const std::uint64_t bytes = r.size() * sizeof(float);
      std::vector<ClMem> in;
      std::vector<ClEvent> uploads;
      for (const char* name : {"price", "strike", "years"}) {
        in.push_back(context.allocate(d, bytes, name));
        uploads.push_back(context.write(d, in.back(), 0, inputs.at(name).data() + r.begin, bytes));
      }
      const ClMem call_block = context.allocate(d, bytes, "call");
      const ClMem put_block = context.allocate(d, bytes, "put");
      const ClEvent done[] = {context.launch(
          d, kernel,
          {ClArg::mem(in[0]), ClArg::mem(in[1]), ClArg::mem(in[2]), ClArg::mem(call_block),
           ClArg::mem(put_block), ClArg::of(static_cast<cl_int>(r.begin)), ClArg::of(kRiskFree),
           ClArg::of(kVolatility)},
          {r.begin}, {r.size()}, uploads)};
      (void)context.read(d, call_block, 0, call.data() + r.begin, bytes, done);
      (void)context.read(d, put_block, 0, put.data() + r.begin, bytes, done);
      keep.insert(keep.end(), in.begin(), in.end());
      keep.insert(keep.end(), {call_block, put_block});
    }
    context.finish_all();
    return {{"call", std::move(call)}, {"put", std::move(put)}};
  }

  TransferBytes bytes_min(const Problem& problem, unsigned devices) const override {
    validate(problem, devices);
    const std::uint64_t array = problem.size * sizeof(float);
    return {3 * array, 2 * array, 0};
  }
  BufferPlan buffer_plan(const Problem& problem) const override {
    const std::uint64_t array = problem.size * sizeof(float);
    BufferPlan plan;
    plan.buffer_bytes = {
        {"price", array}, {"strike", array}, {"years", array}, {"call", array}, {"put", array}};
    plan.launches = {{"blackscholes", {"price", "strike", "years"}, {"call", "put"}}};
    plan.host_reads = {"call", "put"};
    return plan;
  }
};

}  // namespace

std::unique_ptr<Workload> make_blackscholes() { return std::make_unique<Blackscholes>(); }

}  // namespace unimem::examples
