#include "analysis/llvm/guard_conditions.hpp"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>

#include <optional>
#include <vector>

#include "analysis/llvm/ir_text.hpp"
#include "analysis/llvm/scev_to_affine.hpp"
#include "analysis/piecewise_affine.hpp"

namespace unimem {

bool GuardConditions::flag_condition(const llvm::SCEV* s, bool taken, Dnf& out,
                                     ExtractionFailure& why) {
  using namespace llvm;
  switch (s->getSCEVType()) {
    case scConstant:
      out = (cast<SCEVConstant>(s)->getAPInt().isOne() == taken) ? Dnf{Conjunction{}} : Dnf{};
      return true;
    case scUnknown:
      return condition(cast<SCEVUnknown>(s)->getValue(), taken, out, why);
    case scUMinExpr:
    case scSequentialUMinExpr:
    case scMulExpr:
    case scSMaxExpr:
    case scUMaxExpr:
    case scSMinExpr: {
      const auto t = s->getSCEVType();
      const bool is_and =
          t == scUMinExpr || t == scSequentialUMinExpr || t == scMulExpr || t == scSMaxExpr;
      // All operands true (and, taken) or any false (and, not taken); dually for or.
      const bool conjunction = is_and == taken;
      out = conjunction ? Dnf{Conjunction{}} : Dnf{};
      for (const SCEV* op : cast<SCEVNAryExpr>(s)->operands()) {
        Dnf d;
        if (!flag_condition(op, taken, d, why)) return false;
        Dnf next;
        if (!merge_dnf(out, d, conjunction, next, why)) return false;
        out = std::move(next);
      }
      return true;
    }
    case scAddExpr: {
      // Exclusive or of the operands: track the DNFs of "odd so far" and "even so far".
      Dnf odd;
      Dnf even{Conjunction{}};
      for (const SCEV* op : cast<SCEVAddExpr>(s)->operands()) {
        Dnf t;
        Dnf f;
        if (!flag_condition(op, true, t, why) || !flag_condition(op, false, f, why)) {
          return false;
        }
        Dnf odd_f;
        Dnf even_t;
        Dnf even_f;
        Dnf odd_t;
        if (!merge_dnf(odd, f, true, odd_f, why) || !merge_dnf(even, t, true, even_t, why) ||
            !merge_dnf(even, f, true, even_f, why) || !merge_dnf(odd, t, true, odd_t, why)) {
          return false;
        }
        if (!merge_dnf(odd_f, even_t, false, odd, why) ||
            !merge_dnf(even_f, odd_t, false, even, why)) {
          return false;
        }
      }
      out = taken ? odd : even;
      return true;
    }
    case scTruncate: {
      // x mod 2 as pieces r in {0, 1}: true where r == 1.
      std::optional<PiecewiseAffine> r = subscripts_.convert(s, why);
      if (!r) return false;
      out.clear();
      for (const AffineCase& p : *r) {
        Conjunction c = p.constraints;
        c.push_back(eq0(taken ? p.expr - constant_expr(1) : p.expr));
        if (simplify(c)) out.push_back(std::move(c));
      }
      if (out.size() > kMaxDisjuncts) {
        why = {AccessClass::non_affine, "condition too complex"};
        return false;
      }
      return true;
    }
    default:
      why = {AccessClass::non_affine, "flag not computable"};
      return false;
  }
}

// ---- conditions -> DNF of affine constraints -------------------------------------------

bool GuardConditions::condition(llvm::Value* cond, bool taken, Dnf& out, ExtractionFailure& why) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(cond)) {
    out = (c->isOne() == taken) ? Dnf{Conjunction{}} : Dnf{};
    return true;
  }
  if (auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(cond)) return compare(cmp, taken, out, why);
  if (auto* bin = llvm::dyn_cast<llvm::BinaryOperator>(cond)) {
    const auto op = bin->getOpcode();
    if (op == llvm::Instruction::Xor) {
      auto* k = llvm::dyn_cast<llvm::ConstantInt>(bin->getOperand(1));
      if (k != nullptr && k->isOne()) return condition(bin->getOperand(0), !taken, out, why);
      if (bin->getType()->isIntegerTy(1)) {
        // a != b on flags: (a && !b) || (!a && b) when taken, else a == b. Both operands are
        // needed in both polarities, so neither may be weakened (see the select case).
        Dnf at;
        Dnf af;
        Dnf bt;
        Dnf bf;
        const bool both_complete = complete(
            [&] {
              return condition(bin->getOperand(0), true, at, why) &&
                     condition(bin->getOperand(0), false, af, why) &&
                     condition(bin->getOperand(1), true, bt, why) &&
                     condition(bin->getOperand(1), false, bf, why);
            },
            why, "exclusive or of partly non-affine conditions");
        if (!both_complete) return false;
        Dnf left;
        Dnf right;
        if (!merge_dnf(at, taken ? bf : bt, true, left, why) ||
            !merge_dnf(af, taken ? bt : bf, true, right, why)) {
          return false;
        }
        return merge_dnf(left, right, false, out, why);
      }
    }
    if (op == llvm::Instruction::And || op == llvm::Instruction::Or) {
      return junction(bin->getOperand(0), bin->getOperand(1), op == llvm::Instruction::And, taken,
                      out, why);
    }
  }
  if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(cond)) {
    // select(c, x, false) is c && x; select(c, true, y) is c || y (how clang and instcombine
    // write short-circuit conditions).
    if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(sel->getFalseValue()); k && k->isZero()) {
      return junction(sel->getCondition(), sel->getTrueValue(), true, taken, out, why);
    }
    if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(sel->getTrueValue()); k && k->isOne()) {
      return junction(sel->getCondition(), sel->getFalseValue(), false, taken, out, why);
    }
    if (sel->getType()->isIntegerTy(1)) {
      Dnf ct;
      Dnf cf;
      Dnf x;
      Dnf y;
      if (!condition(sel->getCondition(), true, ct, why) ||
          !condition(sel->getCondition(), false, cf, why) ||
          !condition(sel->getTrueValue(), taken, x, why) ||
          !condition(sel->getFalseValue(), taken, y, why)) {
        return false;
      }
      Dnf left;
      Dnf right;
      if (!merge_dnf(ct, x, true, left, why) || !merge_dnf(cf, y, true, right, why)) return false;
      return merge_dnf(left, right, false, out, why);
    }
  }
  if (llvm::isa<llvm::LoadInst>(cond)) {
    why = {AccessClass::indirect, "condition depends on loaded data"};
  } else {
    why = {AccessClass::non_affine, "condition " + value_text(cond)};
  }
  return false;
}

/// a && b (is_and) or a || b, known to be taken (true) or not. When both operands must hold
/// (and taken, or not taken), an operand that cannot be expressed is dropped: the other still
/// restricts the reference, which becomes a may-access (partially_dropped_).
bool GuardConditions::junction(llvm::Value* a, llvm::Value* b, bool is_and, bool taken, Dnf& out,
                               ExtractionFailure& why) {
  const bool both = is_and == taken;
  Dnf da;
  Dnf db;
  ExtractionFailure wa;
  ExtractionFailure wb;
  const bool ok_a = condition(a, taken, da, wa);
  const bool ok_b = condition(b, taken, db, wb);
  if (!ok_a || !ok_b) {
    if (!both || (!ok_a && !ok_b)) {
      why = ok_a ? wb : wa;
      return false;
    }
    partially_dropped_ = true;
    out = ok_a ? da : db;
    return true;
  }
  return merge_dnf(da, db, both, out, why);
}

bool GuardConditions::compare(llvm::ICmpInst* cmp, bool taken, Dnf& out, ExtractionFailure& why) {
  if (!cmp->getOperand(0)->getType()->isIntegerTy()) {
    why = {AccessClass::non_affine, "pointer comparison"};
    return false;
  }
  const llvm::CmpInst::Predicate pred = taken ? cmp->getPredicate() : cmp->getInversePredicate();
  std::optional<PiecewiseAffine> lhs = subscripts_.convert_value(cmp->getOperand(0), why);
  if (!lhs) return false;
  std::optional<PiecewiseAffine> rhs = subscripts_.convert_value(cmp->getOperand(1), why);
  if (!rhs) return false;
  out.clear();
  for (const AffineCase& pa : *lhs) {
    for (const AffineCase& pb : *rhs) {
      Conjunction base = pa.constraints;
      base.insert(base.end(), pb.constraints.begin(), pb.constraints.end());
      const AffineExpr& a = pa.expr;
      const AffineExpr& b = pb.expr;
      const AffineExpr one = constant_expr(1);
      std::vector<Conjunction> alternatives;
      using P = llvm::CmpInst::Predicate;
      switch (pred) {
        case P::ICMP_EQ:
          alternatives = {{eq0(a - b)}};
          break;
        case P::ICMP_NE:
          alternatives = {{ne0(a - b)}};
          break;
        case P::ICMP_SLT:
          alternatives = {{ge0(b - a - one)}};
          break;
        case P::ICMP_SLE:
          alternatives = {{ge0(b - a)}};
          break;
        case P::ICMP_SGT:
          alternatives = {{ge0(a - b - one)}};
          break;
        case P::ICMP_SGE:
          alternatives = {{ge0(a - b)}};
          break;
        // Unsigned comparisons, reading the bound (the side compared against) as non-negative:
        // a <u b  <=>  0 <= a < b;   a >u b  <=>  a > b or a < 0.
        case P::ICMP_ULT:
          alternatives = {{ge0(a), ge0(b - a - one)}};
          break;
        case P::ICMP_ULE:
          alternatives = {{ge0(a), ge0(b - a)}};
          break;
        case P::ICMP_UGT:
          alternatives = {{ge0(a - b - one)}, {ge0(constant_expr(-1) - a)}};
          break;
        case P::ICMP_UGE:
          alternatives = {{ge0(a - b)}, {ge0(constant_expr(-1) - a)}};
          break;
        default:
          why = {AccessClass::non_affine, "unsupported comparison"};
          return false;
      }
      for (Conjunction& alt : alternatives) {
        alt.insert(alt.end(), base.begin(), base.end());
        if (simplify(alt)) out.push_back(std::move(alt));
      }
    }
  }
  if (out.size() > kMaxDisjuncts) {
    why = {AccessClass::non_affine, "condition too complex"};
    return false;
  }
  return true;
}

// ---- guards of one reference --------------------------------------------------------------

Dnf GuardConditions::guards(llvm::BasicBlock* block, bool& dropped) {
  Dnf result{Conjunction{}};
  for (llvm::Loop* l = scope_.loops.getLoopFor(block); l != nullptr; l = l->getParentLoop()) {
    llvm::SmallVector<llvm::BasicBlock*, 4> exiting;
    l->getExitingBlocks(exiting);
    if (exiting.size() > 1) dropped = true;
  }
  llvm::DomTreeNode* node = scope_.dominators.getNode(block);
  if (node == nullptr) return result;
  for (llvm::DomTreeNode* up = node->getIDom(); up != nullptr; up = up->getIDom()) {
    llvm::BasicBlock* b = up->getBlock();
    auto* br = llvm::dyn_cast<llvm::BranchInst>(b->getTerminator());
    if (br == nullptr) {
      if (llvm::isa<llvm::SwitchInst>(b->getTerminator())) dropped = true;
      continue;
    }
    if (!br->isConditional() || br->getSuccessor(0) == br->getSuccessor(1)) continue;
    for (unsigned s = 0; s < 2; ++s) {
      const llvm::BasicBlockEdge edge(b, br->getSuccessor(s));
      if (!scope_.dominators.dominates(edge, block)) continue;
      Dnf c;
      ExtractionFailure why;
      partially_dropped_ = false;
      if (!condition(br->getCondition(), s == 0, c, why)) {
        dropped = true;
        continue;
      }
      if (partially_dropped_) dropped = true;
      Dnf next;
      if (!merge_dnf(result, c, true, next, why)) {
        dropped = true;
        continue;
      }
      result = std::move(next);
    }
  }
  return result;
}

}  // namespace unimem
