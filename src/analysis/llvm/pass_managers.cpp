#include "analysis/llvm/pass_managers.hpp"

namespace unimem {

PassManagers::PassManagers() {
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
}

}  // namespace unimem
