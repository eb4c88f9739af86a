#include "analysis/llvm/scev_to_affine.hpp"

#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>

#include <string>
#include <utility>
#include <vector>

#include "analysis/condition_dnf.hpp"
#include "analysis/llvm/guard_conditions.hpp"
#include "analysis/llvm/ir_text.hpp"

namespace unimem {

std::optional<PiecewiseAffine> ScevToAffine::convert(const llvm::SCEV* s, ExtractionFailure& why) {
  auto it = memo_.find(s);
  if (it != memo_.end()) {
    if (!it->second.has_value()) why = memo_failure_.at(s);
    return it->second;
  }
  std::optional<PiecewiseAffine> r = convert_uncached(s, why);
  if (r.has_value() && r->size() > kMaxCases) {
    why = {AccessClass::non_affine, "too many case splits"};
    r.reset();
  }
  memo_[s] = r;
  if (!r.has_value()) memo_failure_[s] = why;
  return r;
}

std::optional<PiecewiseAffine> ScevToAffine::convert_uncached(const llvm::SCEV* s,
                                                              ExtractionFailure& why) {
  using namespace llvm;
  switch (s->getSCEVType()) {
    case scConstant: {
      const APInt& v = cast<SCEVConstant>(s)->getAPInt();
      if (v.getMinSignedBits() > 64) {
        why = {AccessClass::non_affine, "constant wider than 64 bits"};
        return std::nullopt;
      }
      return single_case(constant_expr(v.getSExtValue()));
    }
    case scTruncate: {
      // Truncation to an int or long is transparent (indices fit); to k < 32 bits it keeps the
      // low bits, x mod 2^k (i % 2 == 0 becomes a truncation to i1).
      const unsigned bits = s->getType()->getIntegerBitWidth();
      std::optional<PiecewiseAffine> x = convert(cast<SCEVCastExpr>(s)->getOperand(0), why);
      if (!x || bits >= 32) return x;
      return divide_cases(*x, std::int64_t{1} << bits, DivisionKind::floor, /*remainder=*/true,
                          scope_.info.loop_names);
    }
    case scZeroExtend:
    case scSignExtend:
    case scPtrToInt: {
      // An extended i1 is a comparison used as a number: instcombine writes (j > 0) ? c - 1 : c
      // as c + sext(j > 0) and (j < n - 1) ? c + 1 : c as c + zext(j < n - 1).
      const SCEV* op = cast<SCEVCastExpr>(s)->getOperand(0);
      if (op->getType()->isIntegerTy(1)) {
        return convert_flag(op, s->getSCEVType() == scSignExtend, why);
      }
      // Other casts are transparent: OpenCL kernels compute indices in 32 or 64 bits and a
      // valid access never wraps (the same assumption Polly makes for nsw subscripts).
      return convert(op, why);
    }
    case scAddExpr: {
      PiecewiseAffine acc = single_case(constant_expr(0));
      for (const SCEV* op : cast<SCEVAddExpr>(s)->operands()) {
        std::optional<PiecewiseAffine> p = convert(op, why);
        if (!p) return std::nullopt;
        acc = combine_cases(acc, *p, /*multiply=*/false, why);
        if (acc.empty()) return std::nullopt;
      }
      return acc;
    }
    case scMulExpr: {
      PiecewiseAffine acc = single_case(constant_expr(1));
      for (const SCEV* op : cast<SCEVMulExpr>(s)->operands()) {
        std::optional<PiecewiseAffine> p = convert(op, why);
        if (!p) return std::nullopt;
        acc = combine_cases(acc, *p, /*multiply=*/true, why);
        if (acc.empty()) return std::nullopt;
      }
      return acc;
    }
    case scAddRecExpr:
      return convert_add_rec(cast<SCEVAddRecExpr>(s), why);
    case scSMaxExpr:
    case scUMaxExpr:
    case scSMinExpr:
    case scUMinExpr: {
      std::vector<PiecewiseAffine> ops;
      for (const SCEV* op : cast<SCEVMinMaxExpr>(s)->operands()) {
        std::optional<PiecewiseAffine> p = convert(op, why);
        if (!p) return std::nullopt;
        ops.push_back(std::move(*p));
      }
      const bool is_max = s->getSCEVType() == scSMaxExpr || s->getSCEVType() == scUMaxExpr;
      return min_max_cases(ops, is_max, why);
    }
    case scUnknown:
      return convert_unknown(cast<SCEVUnknown>(s)->getValue(), why);
    case scUDivExpr: {
      const auto* div = cast<SCEVUDivExpr>(s);
      const auto* c = dyn_cast<SCEVConstant>(div->getRHS());
      if (c == nullptr || c->getAPInt().getActiveBits() > 62 || c->getAPInt().isZero()) {
        why = {AccessClass::non_affine, "division by a non-constant"};
        return std::nullopt;
      }
      std::optional<PiecewiseAffine> x = convert(div->getLHS(), why);
      if (!x) return std::nullopt;
      // Unsigned division of a (non-negative) index: floor.
      return divide_cases(*x, static_cast<std::int64_t>(c->getAPInt().getZExtValue()),
                          DivisionKind::floor_non_negative, /*remainder=*/false,
                          scope_.info.loop_names);
    }
    default:
      why = {AccessClass::non_affine, "subscript not computable"};
      return std::nullopt;
  }
}

/// zext(flag) (sign = false) or sext(flag) of an i1 as two exact cases: 1 (or -1) where the
/// flag holds, 0 where it does not, each piece constrained by the flag's (negated) condition.
/// Like a select, the flag's condition must be complete: a weakened one would let the two
/// cases overlap.
std::optional<PiecewiseAffine> ScevToAffine::convert_flag(const llvm::SCEV* flag, bool sign,
                                                          ExtractionFailure& why) {
  Dnf when_true;
  Dnf when_false;
  const bool complete = conditions_.complete(
      [&] {
        return conditions_.flag_condition(flag, true, when_true, why) &&
               conditions_.flag_condition(flag, false, when_false, why);
      },
      why, "extended flag with a partly non-affine condition");
  if (!complete) return std::nullopt;
  PiecewiseAffine out;
  for (Conjunction& c : when_true) {
    if (simplify(c)) out.push_back(AffineCase{constant_expr(sign ? -1 : 1), std::move(c)});
  }
  for (Conjunction& c : when_false) {
    if (simplify(c)) out.push_back(AffineCase{constant_expr(0), std::move(c)});
  }
  // Both DNFs empty cannot happen for a complete condition; keep the result well-formed anyway.
  if (out.empty()) out.push_back(AffineCase{constant_expr(0), {ge0(constant_expr(-1))}});
  return out;
}

std::optional<PiecewiseAffine> ScevToAffine::convert_add_rec(const llvm::SCEVAddRecExpr* rec,
                                                             ExtractionFailure& why) {
  if (!rec->isAffine()) {
    why = {AccessClass::non_affine, "non-affine recurrence"};
    return std::nullopt;
  }
  const llvm::Loop* loop = rec->getLoop();
  auto id = scope_.loop_ids.find(loop);
  if (id == scope_.loop_ids.end()) {
    why = {AccessClass::non_affine, "recurrence of an unknown loop"};
    return std::nullopt;
  }
  std::optional<PiecewiseAffine> start = convert(rec->getStart(), why);
  if (!start) return std::nullopt;
  std::optional<PiecewiseAffine> step = convert(rec->getStepRecurrence(scope_.se), why);
  if (!step) return std::nullopt;
  const Var iv{Var::Kind::loop, id->second};
  PiecewiseAffine scaled_iv;
  for (const AffineCase& st : *step) {
    if (st.expr.has_vars()) {
      why = {AccessClass::non_affine, "loop step depends on an index variable"};
      return std::nullopt;
    }
    scaled_iv.push_back(AffineCase{AffineExpr::of_var(iv, st.expr.constant), st.constraints});
  }
  PiecewiseAffine out = combine_cases(*start, scaled_iv, /*multiply=*/false, why);
  if (out.empty()) return std::nullopt;
  // The iteration counter never exceeds the backedge-taken count, wherever in the loop the
  // reference sits (valid for rotated loops too, whose exit test does not guard the body).
  const llvm::SCEV* btc = scope_.se.getBackedgeTakenCount(loop);
  if (!llvm::isa<llvm::SCEVCouldNotCompute>(btc)) {
    ExtractionFailure ignored;
    std::optional<PiecewiseAffine> bound = convert(btc, ignored);
    if (bound && bound->size() == 1) {
      for (AffineCase& p : out) {
        p.constraints.push_back(ge0((*bound)[0].expr - AffineExpr::of_var(iv)));
        p.constraints.insert(p.constraints.end(), (*bound)[0].constraints.begin(),
                             (*bound)[0].constraints.end());
      }
    }
  }
  return out;
}

std::optional<PiecewiseAffine> ScevToAffine::convert_value(llvm::Value* v, ExtractionFailure& why) {
  if (!v->getType()->isIntegerTy()) {
    why = {AccessClass::non_affine, "non-integer index"};
    return std::nullopt;
  }
  return convert(scope_.se.getSCEV(v), why);
}

std::optional<PiecewiseAffine> ScevToAffine::convert_unknown(llvm::Value* v,
                                                             ExtractionFailure& why) {
  if (auto* a = llvm::dyn_cast<llvm::Argument>(v)) {
    if (a->getParent() == &scope_.kernel && a->getType()->isIntegerTy()) {
      return single_case(
          AffineExpr::of_constant(ParamPoly::param({Param::Kind::scalar_arg, a->getArgNo()})));
    }
  }
  if (llvm::isa<llvm::LoadInst>(v) || llvm::isa<llvm::AtomicRMWInst>(v)) {
    why = {AccessClass::indirect, "subscript depends on loaded data"};
    return std::nullopt;
  }
  if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(v)) {
    Dnf when_true;
    Dnf when_false;
    // The arms' conditions must be complete: a weakened one would let pieces overlap into
    // a superset that is then mistaken for exact.
    const bool complete = conditions_.complete(
        [&] {
          return conditions_.condition(sel->getCondition(), true, when_true, why) &&
                 conditions_.condition(sel->getCondition(), false, when_false, why);
        },
        why, "select on a partly non-affine condition");
    if (!complete) return std::nullopt;
    std::optional<PiecewiseAffine> t = convert_value(sel->getTrueValue(), why);
    if (!t) return std::nullopt;
    std::optional<PiecewiseAffine> f = convert_value(sel->getFalseValue(), why);
    if (!f) return std::nullopt;
    PiecewiseAffine out;
    for (const auto& [dnf, arm] : {std::pair{&when_true, &*t}, std::pair{&when_false, &*f}}) {
      for (const Conjunction& conj : *dnf) {
        for (const AffineCase& p : *arm) {
          AffineCase q = p;
          q.constraints.insert(q.constraints.end(), conj.begin(), conj.end());
          if (simplify(q.constraints)) out.push_back(std::move(q));
        }
      }
    }
    return out;
  }
  if (auto* call = llvm::dyn_cast<llvm::CallInst>(v)) return convert_call(call, why);
  if (auto* bin = llvm::dyn_cast<llvm::BinaryOperator>(v)) {
    // An `or` (or `xor`) of operands without common set bits is their sum: instcombine writes
    // 2 * i + (i >= k) as (i << 1) | zext(i >= k).
    const auto bop = bin->getOpcode();
    if ((bop == llvm::Instruction::Or || bop == llvm::Instruction::Xor) &&
        llvm::haveNoCommonBitsSet(bin->getOperand(0), bin->getOperand(1), scope_.layout)) {
      std::optional<PiecewiseAffine> a = convert_value(bin->getOperand(0), why);
      if (!a) return std::nullopt;
      std::optional<PiecewiseAffine> b = convert_value(bin->getOperand(1), why);
      if (!b) return std::nullopt;
      PiecewiseAffine sum = combine_cases(*a, *b, /*multiply=*/false, why);
      if (sum.empty()) return std::nullopt;
      return sum;
    }
    // Signed division, remainder and arithmetic shift by constants (SCEV only models the
    // unsigned forms).
    auto* k = llvm::dyn_cast<llvm::ConstantInt>(bin->getOperand(1));
    const auto op = bin->getOpcode();
    if (k != nullptr && !k->isNegative() && k->getValue().getActiveBits() < 62 &&
        (op == llvm::Instruction::SDiv || op == llvm::Instruction::SRem ||
         op == llvm::Instruction::AShr)) {
      const bool shift = op == llvm::Instruction::AShr;
      const std::uint64_t kv = k->getZExtValue();
      if ((shift && kv < 62) || (!shift && kv > 0)) {
        const std::int64_t c = shift ? (std::int64_t{1} << kv) : static_cast<std::int64_t>(kv);
        std::optional<PiecewiseAffine> x = convert_value(bin->getOperand(0), why);
        if (!x) return std::nullopt;
        return divide_cases(*x, c, shift ? DivisionKind::floor : DivisionKind::toward_zero,
                            op == llvm::Instruction::SRem, scope_.info.loop_names);
      }
    }
  }
  why = {AccessClass::non_affine, "subscript uses " + value_text(v)};
  return std::nullopt;
}

std::optional<PiecewiseAffine> ScevToAffine::convert_call(llvm::CallInst* call,
                                                          ExtractionFailure& why) {
  const llvm::Function* callee = call->getCalledFunction();
  if (callee == nullptr) {
    why = {AccessClass::unknown_call, "indirect call"};
    return std::nullopt;
  }
  const std::string name = builtin_name(callee->getName());
  auto dim_arg = [&]() -> std::optional<std::uint32_t> {
    if (call->arg_size() != 1) return std::nullopt;
    auto* c = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(0));
    if (c == nullptr) return std::nullopt;
    return static_cast<std::uint32_t>(c->getZExtValue());
  };
  static const std::map<std::string, int> kWorkItem = {
      {"get_global_id", 0},     {"get_local_id", 1},           {"get_group_id", 2},
      {"get_local_size", 3},    {"get_num_groups", 4},         {"get_global_size", 5},
      {"get_global_offset", 6}, {"get_enqueued_local_size", 3}};
  auto wi = kWorkItem.find(name);
  if (wi != kWorkItem.end()) {
    const std::optional<std::uint32_t> d = dim_arg();
    if (!d) {
      why = {AccessClass::non_affine, name + " with a non-constant dimension"};
      return std::nullopt;
    }
    if (*d > 2) {
      // Out-of-range dimensions: ids are 0, sizes 1 (OpenCL 1.2 section 6.12.1).
      return single_case(constant_expr(wi->second >= 3 && wi->second <= 5 ? 1 : 0));
    }
    const Var group{Var::Kind::group_id, *d};
    const Var local{Var::Kind::local_id, *d};
    const ParamPoly ls = ParamPoly::param({Param::Kind::local_size, *d});
    switch (wi->second) {
      case 0: {  // global id = group * local size + local id + global offset
        AffineExpr e = AffineExpr::of_var(group, ls) + AffineExpr::of_var(local);
        e.constant = ParamPoly::param({Param::Kind::global_offset, *d});
        return single_case(e);
      }
      case 1:
        return single_case(AffineExpr::of_var(local));
      case 2:
        return single_case(AffineExpr::of_var(group));
      case 3:
        return single_case(AffineExpr::of_constant(ls));
      case 4:
        return single_case(
            AffineExpr::of_constant(ParamPoly::param({Param::Kind::num_groups, *d})));
      case 5:
        return single_case(
            AffineExpr::of_constant(ParamPoly::param({Param::Kind::global_size, *d})));
      default:
        return single_case(
            AffineExpr::of_constant(ParamPoly::param({Param::Kind::global_offset, *d})));
    }
  }
  // Integer builtins that are affine or piecewise affine.
  std::vector<PiecewiseAffine> ops;
  auto operands = [&]() -> bool {
    for (llvm::Value* a : call->args()) {
      std::optional<PiecewiseAffine> p = convert_value(a, why);
      if (!p) return false;
      ops.push_back(std::move(*p));
    }
    return true;
  };
  if ((name == "mul24" || name == "mad24") && operands()) {
    PiecewiseAffine r = combine_cases(ops[0], ops[1], /*multiply=*/true, why);
    if (r.empty()) return std::nullopt;
    if (name == "mad24") r = combine_cases(r, ops[2], /*multiply=*/false, why);
    if (r.empty()) return std::nullopt;
    return r;
  }
  if ((name == "min" || name == "max") && call->arg_size() == 2 && operands()) {
    return min_max_cases(ops, name == "max", why);
  }
  if (name == "clamp" && call->arg_size() == 3 && operands()) {
    std::optional<PiecewiseAffine> lo = min_max_cases({ops[0], ops[1]}, /*is_max=*/true, why);
    if (!lo) return std::nullopt;
    return min_max_cases({*lo, ops[2]}, /*is_max=*/false, why);
  }
  if (why.reason.empty()) why = {AccessClass::unknown_call, "subscript uses call to " + name};
  return std::nullopt;
}

}  // namespace unimem
