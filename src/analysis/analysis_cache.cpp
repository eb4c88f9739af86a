#include "analysis/analysis_cache.hpp"

#include "analysis/program_analyzer.hpp"

namespace unimem {

std::uint64_t AnalysisCache::key(const std::string& source, const std::string& options) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (char c : source) mix(static_cast<unsigned char>(c));
  mix(0);
  for (char c : options) mix(static_cast<unsigned char>(c));
  return h;
}

std::shared_ptr<const ProgramAccessInfo> AnalysisCache::get(const std::string& source,
                                                            const std::string& options, bool* hit) {
  const std::uint64_t k = key(source, options);
  {
    std::lock_guard lock(mutex_);
    auto [lo, hi] = entries_.equal_range(k);
    for (auto it = lo; it != hi; ++it) {
      if (it->second.source == source && it->second.options == options) {
        if (hit != nullptr) *hit = true;
        return it->second.info;
      }
    }
  }
  // Analyse outside the lock; a concurrent duplicate analysis is harmless (same result).
  auto info = std::make_shared<const ProgramAccessInfo>(analyze_program(source, options));
  std::lock_guard lock(mutex_);
  entries_.emplace(k, Entry{source, options, info});
  if (hit != nullptr) *hit = false;
  return info;
}

std::size_t AnalysisCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void AnalysisCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

}  // namespace unimem
