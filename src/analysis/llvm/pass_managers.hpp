#pragma once

// LLVM's analysis managers (new pass manager), registered and cross-linked through one
// PassBuilder: what the canonicalizing pipeline (canonicalize.cpp) and the per-kernel extraction
// (access_extraction.cpp) both start from. Include only from files that use LLVM's pass manager.

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>

namespace unimem {

struct PassManagers {
  // Declared in the order LLVM requires: the proxies of a manager refer to the managers declared
  // before it, so they are destroyed after it.
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder;

  PassManagers();
  PassManagers(const PassManagers&) = delete;
  PassManagers& operator=(const PassManagers&) = delete;
};

}  // namespace unimem
