#include "api/kernel_analysis.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "analysis/access_pattern.hpp"
#include "analysis/kernel_ranges.hpp"
#include "analysis/program_analyzer.hpp"

namespace unimem::detail {

namespace {

NDRange to_ndrange(const AnalysisRange& r) {
  NDRange out;
  out.dims = r.dims;
  out.offset = r.offset;
  out.global = r.global;
  out.local = r.local;
  return out;
}

LaunchArguments to_arguments(const AnalysisArguments& a) {
  LaunchArguments out;
  for (std::uint32_t i = 0; i < a.scalars.size(); ++i) {
    if (a.scalars[i]) out.set_scalar(i, *a.scalars[i]);
  }
  for (std::uint32_t i = 0; i < a.buffer_sizes.size(); ++i) {
    if (a.buffer_sizes[i]) out.set_buffer_size(i, *a.buffer_sizes[i]);
  }
  return out;
}

class AnalyzedProgram final : public ProgramAnalysis {
 public:
  explicit AnalyzedProgram(ProgramAccessInfo info) {
    for (KernelAccessInfo& k : info.kernels) {
      std::string name = k.name;
      generators_.emplace(std::move(name), std::make_unique<KernelRangeGenerator>(std::move(k)));
    }
  }
  bool has_kernel(const std::string& kernel) const override { return generators_.contains(kernel); }
  bool splittable(const std::string& kernel, const AnalysisRange& range,
                  const AnalysisArguments& args, std::string* reason) const override {
    return generators_.at(kernel)->splittable(to_ndrange(range), to_arguments(args), reason);
  }
  std::vector<AnalysisBytes> bytes(const std::string& kernel, const AnalysisRange& range,
                                   const std::array<std::uint64_t, 3>& group_begin,
                                   const std::array<std::uint64_t, 3>& group_end,
                                   const AnalysisArguments& args) const override {
    GroupBox box;
    box.begin = group_begin;
    box.end = group_end;
    std::vector<AnalysisBytes> out;
    for (const ArgumentRanges& r :
         generators_.at(kernel)->ranges(to_ndrange(range), box, to_arguments(args)).args) {
      out.push_back({r.index, r.read, r.write, r.write_exact && !r.write_conditional});
    }
    return out;
  }

 private:
  std::map<std::string, std::unique_ptr<KernelRangeGenerator>> generators_;
};

std::shared_ptr<const ProgramAnalysis> analyze_uncached(const std::string& source,
                                                        const std::string& options,
                                                        std::string* error) {
  try {
    return std::make_shared<const AnalyzedProgram>(analyze_program(source, options));
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
