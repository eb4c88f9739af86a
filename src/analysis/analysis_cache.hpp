#pragma once

// Analysis results of programs keyed by (source, build options), so that a program built twice is
// analysed once.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "analysis/access_pattern.hpp"

namespace unimem {

/// Thread-safe; owned by whoever builds programs (the Runtime, or a CLI invocation).
class AnalysisCache {
 public:
  /// The analysis of (source, options) (analyze_program, analysis/program_analyzer.hpp), computed
  /// on first use. hit reports whether it was cached. Failures are not cached: they throw.
  std::shared_ptr<const ProgramAccessInfo> get(const std::string& source,
                                               const std::string& options, bool* hit = nullptr);
  [[nodiscard]] std::size_t size() const;
  void clear();

  /// 64-bit FNV-1a of source, a separator and options (the cache key).
  [[nodiscard]] static std::uint64_t key(const std::string& source, const std::string& options);

 private:
  struct Entry {
    std::string source;
    std::string options;
    std::shared_ptr<const ProgramAccessInfo> info;
  };
  mutable std::mutex mutex_;
  std::multimap<std::uint64_t, Entry> entries_;
};

}  // namespace unimem
