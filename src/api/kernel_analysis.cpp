#include "api/kernel_analysis.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "analysis/access_pattern.hpp"
#include "analysis/kernel_ranges.hpp"
#include "analysis/program_analyzer.hpp"

namespace unimem::detail {

ProgramAnalysis::ProgramAnalysis(ProgramAccessInfo info) {
  for (KernelAccessInfo& k : info.kernels) {
    std::string name = k.name;
    scalars_in_accesses_.emplace(name, unimem::scalars_in_accesses(k));
    generators_.emplace(std::move(name), std::make_unique<KernelRangeGenerator>(std::move(k)));
  }
}

bool ProgramAnalysis::has_kernel(const std::string& kernel) const {
  return generators_.contains(kernel);
}

bool ProgramAnalysis::splittable(const std::string& kernel, const NDRange& range,
                                 const LaunchArguments& args, std::string* reason) const {
  return generators_.at(kernel)->splittable(range, args, reason);
}

std::map<std::uint32_t, AccessBytes> ProgramAnalysis::bytes(const std::string& kernel,
                                                            const NDRange& range,
                                                            const Box<3>& groups,
                                                            const LaunchArguments& args) const {
  std::map<std::uint32_t, AccessBytes> out;
  for (ArgumentRanges& r : generators_.at(kernel)->ranges(range, groups, args).args) {
    out[r.index] = std::move(r).access_bytes();
  }
  return out;
}

namespace {

std::shared_ptr<const ProgramAnalysis> analyze_uncached(const std::string& source,
                                                        const std::string& options,
                                                        std::string* error) {
  try {
    return std::make_shared<const ProgramAnalysis>(analyze_program(source, options));
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

struct CachedAnalysis {
  std::shared_ptr<const ProgramAnalysis> analysis;  // null when it failed
  std::string error;
};

// Process-wide: the analysis of a source depends only on the source, the options and the Clang
// compiled in. Concurrent first requests for one key may both analyse; the first stored wins.
struct AnalysisCacheState {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, CachedAnalysis> entries;
};

AnalysisCacheState& cache_state() {
  static AnalysisCacheState state;
  return state;
}

}  // namespace

std::shared_ptr<const ProgramAnalysis> ProgramAnalysis::analyze(const std::string& source,
                                                                const std::string& options,
                                                                std::string* error,
                                                                AnalysisTiming* timing) {
  const auto start = std::chrono::steady_clock::now();
  AnalysisCacheState& state = cache_state();
  auto key = std::pair{source, options};
  auto report = [&](const CachedAnalysis& entry, bool cached) {
    if (error != nullptr) *error = entry.error;
    if (timing != nullptr) {
      timing->cached = cached;
      timing->seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return entry.analysis;
  };
  {
    std::lock_guard lock(state.mutex);
    auto it = state.entries.find(key);
    if (it != state.entries.end()) return report(it->second, true);
  }
  CachedAnalysis fresh;
  fresh.analysis = analyze_uncached(source, options, &fresh.error);
  std::lock_guard lock(state.mutex);
  const auto [it, inserted] = state.entries.emplace(std::move(key), std::move(fresh));
  (void)inserted;
  return report(it->second, false);
}

std::size_t ProgramAnalysis::cache_size() {
  std::lock_guard lock(cache_state().mutex);
  return cache_state().entries.size();
}

void ProgramAnalysis::clear_cache() {
  std::lock_guard lock(cache_state().mutex);
  cache_state().entries.clear();
}

}  // namespace unimem::detail
