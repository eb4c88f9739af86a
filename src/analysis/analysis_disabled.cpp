// Built instead of analysis/llvm/ and analysis/isl/ when unimem is configured with
// UNIMEM_WITH_ANALYSIS=OFF: the LLVM/isl-free core and api/ link, and every request for what only
// those parts can answer says that the analysis is not there.
#include "analysis/launch_injectivity.hpp"
#include "analysis/program_analyzer.hpp"

namespace unimem {

ProgramAccessInfo analyze_program(const std::string& /*source*/, const std::string& /*options*/) {
  throw AnalysisUnavailable("unimem was built without the kernel analysis");
}

std::string injectivity_key(const KernelAccessInfo& /*kernel*/, const NDRange& /*range*/,
                            const ParamValues& /*values*/) {
  return {};  // every launch gets the same answer below
}

bool writes_injective_over_groups(const KernelAccessInfo& kernel, const NDRange& /*range*/,
                                  const ParamValues& /*values*/, std::string* reason) {
  if (reason != nullptr) {
    *reason = "the write injectivity of kernel '" + kernel.name +
              "' needs isl, and unimem was built without the kernel analysis";
  }
  return false;
}

}  // namespace unimem
