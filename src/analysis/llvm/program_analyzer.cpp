// analyze_program (declared in analysis/program_analyzer.hpp): Clang, canonicalization, access
// extraction and the parametric write-injectivity check, each timed.
#include "analysis/program_analyzer.hpp"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>

#include "analysis/isl/write_injectivity.hpp"
#include "analysis/llvm/access_extraction.hpp"
#include "analysis/llvm/canonicalize.hpp"
#include "analysis/llvm/frontend.hpp"

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

}  // namespace unimem
