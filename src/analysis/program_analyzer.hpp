#pragma once

// Reading a program's kernels into access patterns: the one entry point of the Clang/LLVM
// frontend that the rest of unimem calls. Declared in the LLVM-free core so that api/ and the
// cache can call it in every build; defined by analysis/llvm/program_analyzer.cpp when unimem is
// built with the analysis (UNIMEM_WITH_ANALYSIS), otherwise by analysis/analysis_disabled.cpp.

#include <stdexcept>
#include <string>

#include "analysis/access_pattern.hpp"

namespace unimem {

/// unimem was built without the kernel analysis (UNIMEM_WITH_ANALYSIS=OFF).
class AnalysisUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Compiles an OpenCL C program with Clang, canonicalizes it and extracts every kernel's access
/// patterns (DSOM section 4.3.2: the analysis runs when the program is built), then decides the
/// write injectivity of each kernel for every launch (analysis/isl/write_injectivity.hpp).
/// Throws OpenCLCompileError (analysis/llvm/frontend.hpp) for sources or options that do not
/// compile, and AnalysisUnavailable when unimem is built without the analysis.
[[nodiscard]] ProgramAccessInfo analyze_program(const std::string& source,
                                                const std::string& options);

}  // namespace unimem
