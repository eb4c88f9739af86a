#pragma once

namespace llvm {
class Module;
}  // namespace llvm

namespace unimem {

/// Brings freshly compiled -O0 OpenCL IR into the form the access extraction reads: every helper
/// function inlined into its kernels, allocas promoted to SSA values (mem2reg/SROA), expressions
/// simplified (instcombine, early-cse), the CFG simplified, loops in simplified/LCSSA form with
/// canonical induction variables, so that ScalarEvolution sees subscripts as add-recurrences.
/// Loops are not rotated: a loop's exit test then stays in its header and guards the body, which is
/// where the loop bound constraints come from.
void canonicalize_for_analysis(llvm::Module& module);

}  // namespace unimem
