#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "analysis/access_pattern.hpp"

namespace unimem {

/// Compiles an OpenCL C program with Clang, canonicalizes it and extracts every kernel's access
/// patterns (DSOM section 4.3.2: the analysis runs when the program is built). Throws
/// OpenCLCompileError (analysis/frontend.hpp) for sources or options that do not compile.
[[nodiscard]] ProgramAccessInfo analyze_program(const std::string& source,
                                                const std::string& options);

/// Analysis results keyed by (source, build options): a program built twice is analysed once.
/// Thread-safe; owned by whoever builds programs (the Runtime, or a CLI invocation).
class AnalysisCache {
 public:
  /// The analysis of (source, options), computed on first use. hit reports whether it was cached.
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
