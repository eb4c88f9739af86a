#pragma once

// The conditions under which a reference executes, as DNFs of affine constraints (DSOM section
// 4.3.2): the branch conditions that dominate its block, read through comparisons, and / or / xor
// of flags and short-circuit selects. A conjunct that cannot be expressed is dropped, which makes
// the reference a may-access.

#include "analysis/access_class.hpp"
#include "analysis/condition_dnf.hpp"
#include "analysis/llvm/kernel_scope.hpp"

namespace llvm {
class BasicBlock;
class ICmpInst;
class SCEV;
class Value;
}  // namespace llvm

namespace unimem {

class ScevToAffine;

class GuardConditions {
 public:
  /// subscripts turns the operands of comparisons into affine pieces.
  GuardConditions(KernelScope& scope, ScevToAffine& subscripts)
      : scope_(scope), subscripts_(subscripts) {}

  /// The DNF of the conditions of every branch edge that dominates block; dropped is set when some
  /// such condition cannot be expressed, or when an enclosing loop can be left early.
  [[nodiscard]] Dnf guards(llvm::BasicBlock* block, bool& dropped);

  /// The DNF under which the i1 value cond is true (taken) or false. False, with why set, when it
  /// cannot be expressed; an operand of a conjunction may be dropped instead (see complete).
  bool condition(llvm::Value* cond, bool taken, Dnf& out, ExtractionFailure& why);

  /// The DNF under which an i1-typed SCEV is true (taken) or false. SCEV writes i1 logic as
  /// arithmetic modulo 2: `and` is umin (or a product, or a sequential umin for a short-circuit
  /// select), `or` is umax, a sum is exclusive or, and signed min/max swap because true is -1.
  bool flag_condition(const llvm::SCEV* s, bool taken, Dnf& out, ExtractionFailure& why);

  /// Runs build (conditions needed in both polarities, as for a select's arms) and requires the
  /// conditions it builds to be complete: a weakened one (a dropped conjunct) would let the cases
  /// overlap. False when build fails, or when it dropped a conjunct (why then says
  /// weakened_reason). Whether an enclosing condition dropped one is left as it was.
  template <typename Build>
  bool complete(Build&& build, ExtractionFailure& why, const char* weakened_reason) {
    const bool saved = partially_dropped_;
    partially_dropped_ = false;
    const bool ok = build();
    const bool weakened = partially_dropped_;
    partially_dropped_ = saved;
    if (ok && weakened) why = {AccessClass::non_affine, weakened_reason};
    return ok && !weakened;
  }

 private:
  bool junction(llvm::Value* a, llvm::Value* b, bool is_and, bool taken, Dnf& out,
                ExtractionFailure& why);
  bool compare(llvm::ICmpInst* cmp, bool taken, Dnf& out, ExtractionFailure& why);

  KernelScope& scope_;
  ScevToAffine& subscripts_;
  bool partially_dropped_ = false;  // set by junction() when it dropped one operand
};

}  // namespace unimem
