#include "analysis/llvm/canonicalize.hpp"

#include "analysis/llvm/pass_managers.hpp"

#include <llvm/IR/Attributes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>

#include <stdexcept>
#include <string>

namespace unimem {

void canonicalize_for_analysis(llvm::Module& module) {
  // -O0 marks every function noinline; helper functions must disappear into their kernels.
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    f.removeFnAttr(llvm::Attribute::NoInline);
    f.removeFnAttr(llvm::Attribute::OptimizeNone);
    if (f.getCallingConv() != llvm::CallingConv::SPIR_KERNEL) {
      f.addFnAttr(llvm::Attribute::AlwaysInline);
    }
  }
  PassManagers managers;
  llvm::ModulePassManager mpm;
  const char* pipeline =
      "always-inline,"
      "function(sroa,early-cse<>,instcombine,simplifycfg,sroa,instcombine,"
      "loop-simplify,lcssa,loop(indvars),early-cse<>,instcombine,loop-simplify)";
  if (llvm::Error err = managers.builder.parsePassPipeline(mpm, pipeline)) {
    throw std::logic_error("analysis pass pipeline does not parse: " +
                           llvm::toString(std::move(err)));
  }
  mpm.run(module, managers.modules);
}

}  // namespace unimem
