#pragma once

// Subscripts and indices as piecewise affine expressions (DSOM section 4.3.2, Eq. 1): LLVM's
// ScalarEvolution form of a value turned into cases over work-group ids, local ids, loop iteration
// counters and launch parameters, through casts, add-recurrences, min / max, selects, flags,
// divisions by constants and the OpenCL work-item builtins.

#include <map>
#include <optional>

#include "analysis/access_class.hpp"
#include "analysis/llvm/kernel_scope.hpp"
#include "analysis/piecewise_affine.hpp"

namespace llvm {
class CallInst;
class SCEV;
class SCEVAddRecExpr;
class Value;
}  // namespace llvm

namespace unimem {

class GuardConditions;

class ScevToAffine {
 public:
  /// conditions turns the conditions of selects and flags into constraints (and uses this object
  /// for the operands of comparisons).
  ScevToAffine(KernelScope& scope, GuardConditions& conditions)
      : scope_(scope), conditions_(conditions) {}

  /// s as affine pieces; nullopt, with why set, when it has none (or more than kMaxCases).
  /// Memoized per SCEV, failures included.
  [[nodiscard]] std::optional<PiecewiseAffine> convert(const llvm::SCEV* s, ExtractionFailure& why);
  /// The integer value v as affine pieces (through its SCEV).
  [[nodiscard]] std::optional<PiecewiseAffine> convert_value(llvm::Value* v,
                                                             ExtractionFailure& why);

 private:
  std::optional<PiecewiseAffine> convert_uncached(const llvm::SCEV* s, ExtractionFailure& why);
  std::optional<PiecewiseAffine> convert_flag(const llvm::SCEV* flag, bool sign,
                                              ExtractionFailure& why);
  std::optional<PiecewiseAffine> convert_add_rec(const llvm::SCEVAddRecExpr* rec,
                                                 ExtractionFailure& why);
  std::optional<PiecewiseAffine> convert_unknown(llvm::Value* v, ExtractionFailure& why);
  std::optional<PiecewiseAffine> convert_call(llvm::CallInst* call, ExtractionFailure& why);

  KernelScope& scope_;
  GuardConditions& conditions_;
  std::map<const llvm::SCEV*, std::optional<PiecewiseAffine>> memo_;
  std::map<const llvm::SCEV*, ExtractionFailure> memo_failure_;
};

}  // namespace unimem
