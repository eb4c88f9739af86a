#include "analysis/support/analysis_adapter.hpp"

#include <stdexcept>

#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS
#include "analysis/analysis_cache.hpp"
#include "analysis/kernel_ranges.hpp"
#include "analysis/program_analyzer.hpp"
#endif

namespace unimem::testing {

#if defined(UNIMEM_WITH_ANALYSIS) && UNIMEM_WITH_ANALYSIS

bool in_process_analysis_available() { return true; }

struct InProcessAnalysis::State {
  AnalysisCache cache;
  double analysis_ms = 0;
};

InProcessAnalysis::InProcessAnalysis() : state_(std::make_unique<State>()) {}
InProcessAnalysis::~InProcessAnalysis() = default;

double InProcessAnalysis::analysis_ms() const { return state_->analysis_ms; }

AnalysisReport InProcessAnalysis::report(const std::string& source,
                                         const std::vector<std::string>& options,
                                         const KernelSignature& signature,
                                         const LaunchConfig& config, const KernelInputs& inputs,
                                         const GroupBox& groups) {
  // Options as `unimem analyze` composes them: "-DNAME=VALUE" separated by spaces.
  std::string joined;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string option = options[i];
    if ((option == "-D" || option == "-U" || option == "-I") && i + 1 < options.size()) {
      option += options[++i];
    }
    joined += (joined.empty() ? "" : " ") + option;
  }
  bool hit = false;
  const auto program = state_->cache.get(source, joined, &hit);
  if (!hit) state_->analysis_ms += program->total_ms();
  const KernelAccessInfo* kernel = program->find_kernel(signature.name);
  if (kernel == nullptr) throw std::runtime_error("the analysis found no kernel " + signature.name);

  NDRange range;
  range.dims = static_cast<std::uint32_t>(config.global.size());
  for (std::size_t d = 0; d < config.global.size(); ++d) {
    range.global[d] = config.global[d];
    range.local[d] = config.local[d];
    if (!config.offset.empty()) range.offset[d] = config.offset[d];
  }
  LaunchArguments args;
  for (std::size_t i = 0; i < signature.params.size(); ++i) {
    const KernelParam& param = signature.params[i];
    const auto index = static_cast<std::uint32_t>(i);
    if (param.kind == ParamKind::global_buffer || param.kind == ParamKind::constant_buffer) {
      args.set_buffer_size(index, inputs.buffer_bytes.at(param.name));
    } else if (param.kind == ParamKind::scalar &&
               (param.scalar_kind == ScalarKind::signed_integer ||
                param.scalar_kind == ScalarKind::unsigned_integer)) {
      args.set_scalar(index, std::stoll(inputs.scalars.at(param.name), nullptr, 0));
    }
  }
  Box<3>::Point begin{};
  Box<3>::Point end{};
  for (std::size_t d = 0; d < 3; ++d) {
    begin[d] = static_cast<std::int64_t>(groups.begin[d]);
    end[d] = static_cast<std::int64_t>(groups.end[d]);
  }
  const Box<3> box(begin, end);
  KernelRangeGenerator generator(*kernel);
  LaunchRanges ranges = generator.ranges(range, box, args);
  if (ranges.splittable) ranges.splittable = generator.splittable(range, args);

  AnalysisReport out;
  out.kernel = ranges.kernel;
  out.splittable = ranges.splittable;
  for (const ArgumentRanges& arg : ranges.args) {
    AnalysisArg converted;
    converted.index = arg.index;
    converted.name = arg.name;
    converted.read = arg.read;
    converted.write = arg.write;
    converted.read_exact = arg.read_exact;
    converted.write_exact = arg.write_exact;
    converted.write_conditional = arg.write_conditional;
    out.args.push_back(std::move(converted));
  }
  return out;
}

#else

bool in_process_analysis_available() { return false; }

struct InProcessAnalysis::State {};
InProcessAnalysis::InProcessAnalysis() : state_(std::make_unique<State>()) {}
InProcessAnalysis::~InProcessAnalysis() = default;
double InProcessAnalysis::analysis_ms() const { return 0; }
AnalysisReport InProcessAnalysis::report(const std::string&, const std::vector<std::string>&,
                                         const KernelSignature&, const LaunchConfig&,
                                         const KernelInputs&, const GroupBox&) {
  throw std::runtime_error("unimem was built without the kernel access analysis");
}

#endif

}  // namespace unimem::testing
