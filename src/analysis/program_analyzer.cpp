#include "analysis/program_analyzer.hpp"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>

#include "analysis/access_extraction.hpp"
#include "analysis/canonicalize.hpp"
#include "analysis/frontend.hpp"
#include "analysis/write_injectivity.hpp"

namespace unimem {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

ProgramAccessInfo analyze_program(const std::string& source, const std::string& options) {
  ProgramAccessInfo info;
  llvm::LLVMContext context;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<llvm::Module> module = compile_opencl(context, source, options);
  info.frontend_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  canonicalize_for_analysis(*module);
  info.transform_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  info.kernels = extract_kernel_accesses(*module);
  info.extraction_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (KernelAccessInfo& k : info.kernels) {
    k.write_injectivity =
        parametric_write_injectivity(k, &k.write_injectivity_reason, &k.write_injectivity_dims);
  }
  info.injectivity_ms = ms_since(t0);
  return info;
}

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
