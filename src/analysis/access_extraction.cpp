#include "analysis/access_extraction.hpp"

#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace unimem {

namespace {

constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kConstantAddressSpace = 2;
constexpr unsigned kLocalAddressSpace = 3;
// Bounds on the case splits (select / min / max pieces, disjunctive guards): beyond them the
// reference is reported as non-affine or the guard is dropped (an over-approximation).
constexpr std::size_t kMaxPieces = 32;
constexpr std::size_t kMaxDisjuncts = 32;

using Conjunction = std::vector<Constraint>;
using Dnf = std::vector<Conjunction>;  // empty = false; {{}} = true

struct Piece {
  AffineExpr expr;
  Conjunction constraints;
};
using Pieces = std::vector<Piece>;

struct Failure {
  AccessClass access_class = AccessClass::NonAffine;
  std::string reason;
};

/// The identifier inside an Itanium-mangled builtin name: "_Z13get_global_idj" -> "get_global_id".
std::string builtin_name(llvm::StringRef mangled) {
  if (!mangled.startswith("_Z")) return mangled.str();
  std::size_t i = 2;
  std::size_t len = 0;
  while (i < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[i]))) {
    len = len * 10 + static_cast<std::size_t>(mangled[i] - '0');
    ++i;
  }
  if (len == 0 || i + len > mangled.size()) return mangled.str();
  return mangled.substr(i, len).str();
}

std::string value_text(const llvm::Value* v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  v->print(os);
  os.flush();
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? s : s.substr(first);
}

Constraint ge0(AffineExpr e) { return {std::move(e), Constraint::Relation::GreaterEqualZero}; }
Constraint eq0(AffineExpr e) { return {std::move(e), Constraint::Relation::EqualZero}; }
Constraint ne0(AffineExpr e) { return {std::move(e), Constraint::Relation::NotEqualZero}; }
AffineExpr constant_expr(std::int64_t c) { return AffineExpr::of_constant(ParamPoly::constant(c)); }

/// Cartesian product of two DNFs (conjunction), bounded.
std::optional<Dnf> conjoin(const Dnf& a, const Dnf& b) {
  if (a.size() * b.size() > kMaxDisjuncts) return std::nullopt;
  Dnf out;
  for (const Conjunction& x : a) {
    for (const Conjunction& y : b) {
      Conjunction c = x;
      c.insert(c.end(), y.begin(), y.end());
      out.push_back(std::move(c));
    }
  }
  return out;
}

/// Evaluates a variable-free constraint whose expression is a plain constant; nullopt otherwise.
std::optional<bool> constant_truth(const Constraint& c) {
  if (c.expr.has_vars()) return std::nullopt;
  const std::optional<std::int64_t> v = c.expr.constant.constant_value();
  if (!v) return std::nullopt;
  switch (c.relation) {
    case Constraint::Relation::GreaterEqualZero:
      return *v >= 0;
    case Constraint::Relation::EqualZero:
      return *v == 0;
    case Constraint::Relation::NotEqualZero:
      return *v != 0;
  }
  return std::nullopt;
}

/// Removes constant-true constraints and duplicates; false if some constraint is constant-false.
bool simplify(Conjunction& c) {
  Conjunction out;
  for (Constraint& k : c) {
    const std::optional<bool> t = constant_truth(k);
    if (t.has_value()) {
      if (!*t) return false;
      continue;
    }
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
  }
  c = std::move(out);
  return true;
}

/// The variables a constraint couples, where w_d and l_d count as one (the global id) when the
/// group id's coefficient is local_size_d times the local id's.
std::size_t coupled_variable_count(const AffineExpr& e) {
  std::size_t count = 0;
  std::set<std::uint32_t> merged_dims;
  for (std::uint32_t d = 0; d < 3; ++d) {
    const ParamPoly w = e.coefficient({Var::Kind::GroupId, d});
    const ParamPoly l = e.coefficient({Var::Kind::LocalId, d});
    if (!w.is_zero() && !l.is_zero() && w == l * ParamPoly::param({Param::Kind::LocalSize, d})) {
      merged_dims.insert(d);
      ++count;
    }
  }
  for (const auto& [v, c] : e.coefficients) {
    if (v.kind != Var::Kind::Loop && merged_dims.count(v.index) != 0) continue;
    ++count;
  }
  return count;
}

class KernelExtractor {
 public:
  KernelExtractor(llvm::Function& kernel, llvm::ScalarEvolution& se, llvm::LoopInfo& loops,
                  llvm::DominatorTree& dominators, const llvm::DataLayout& layout)
      : kernel_(kernel), se_(se), loops_(loops), dt_(dominators), layout_(layout) {}

  KernelAccessInfo run() {
    info_.name = kernel_.getName().str();
    describe_arguments();
    for (llvm::Loop* l : loops_.getLoopsInPreorder()) {
      loop_ids_[l] = static_cast<std::uint32_t>(info_.loop_names.size());
      info_.loop_names.push_back("i" + std::to_string(info_.loop_names.size() + 1));
    }
    for (llvm::Instruction& inst : llvm::instructions(kernel_)) visit(inst);
    finish();
    return std::move(info_);
  }

 private:
  // ---- arguments ---------------------------------------------------------------------------

  void describe_arguments() {
    const llvm::MDNode* names = kernel_.getMetadata("kernel_arg_name");
    const llvm::MDNode* types = kernel_.getMetadata("kernel_arg_type");
    const llvm::MDNode* base_types = kernel_.getMetadata("kernel_arg_base_type");
    for (llvm::Argument& a : kernel_.args()) {
      ArgumentAccess arg;
      arg.index = a.getArgNo();
      arg.name = metadata_string(names, arg.index);
      if (arg.name.empty())
        arg.name = a.hasName() ? a.getName().str() : "arg" + std::to_string(arg.index);
      arg.type_name = metadata_string(types, arg.index);
      arg.base_type_name = metadata_string(base_types, arg.index);
      if (arg.base_type_name.empty()) arg.base_type_name = arg.type_name;
      if (auto* pt = llvm::dyn_cast<llvm::PointerType>(a.getType())) {
        const unsigned as = pt->getAddressSpace();
        arg.kind = as == kGlobalAddressSpace     ? ArgKind::GlobalBuffer
                   : as == kConstantAddressSpace ? ArgKind::ConstantBuffer
                   : as == kLocalAddressSpace    ? ArgKind::LocalBuffer
                                                 : ArgKind::Other;
      } else if (a.getType()->isIntegerTy() || a.getType()->isFloatingPointTy()) {
        arg.kind = ArgKind::Scalar;
        arg.scalar_bits = static_cast<std::uint32_t>(a.getType()->getPrimitiveSizeInBits());
        arg.scalar_floating = a.getType()->isFloatingPointTy();
      } else {
        arg.kind = ArgKind::Other;
      }
      info_.args.push_back(std::move(arg));
    }
  }

  static std::string metadata_string(const llvm::MDNode* node, unsigned index) {
    if (node == nullptr || index >= node->getNumOperands()) return "";
    if (auto* s = llvm::dyn_cast<llvm::MDString>(node->getOperand(index)))
      return s->getString().str();
    return "";
  }

  // ---- SCEV -> piecewise affine ---------------------------------------------------------------

  std::optional<Pieces> convert(const llvm::SCEV* s, Failure& why) {
    auto it = memo_.find(s);
    if (it != memo_.end()) {
      if (!it->second.has_value()) why = memo_failure_.at(s);
      return it->second;
    }
    std::optional<Pieces> r = convert_uncached(s, why);
    if (r.has_value() && r->size() > kMaxPieces) {
      why = {AccessClass::NonAffine, "too many case splits"};
      r.reset();
    }
    memo_[s] = r;
    if (!r.has_value()) memo_failure_[s] = why;
    return r;
  }

  static Pieces single(AffineExpr e) { return Pieces{Piece{std::move(e), {}}}; }

  std::optional<Pieces> convert_uncached(const llvm::SCEV* s, Failure& why) {
    using namespace llvm;
    switch (s->getSCEVType()) {
      case scConstant: {
        const APInt& v = cast<SCEVConstant>(s)->getAPInt();
        if (v.getMinSignedBits() > 64) {
          why = {AccessClass::NonAffine, "constant wider than 64 bits"};
          return std::nullopt;
        }
        return single(constant_expr(v.getSExtValue()));
      }
      case scTruncate: {
        // Truncation to an int or long is transparent (indices fit); to k < 32 bits it keeps the
        // low bits, x mod 2^k (i % 2 == 0 becomes a truncation to i1).
        const unsigned bits = s->getType()->getIntegerBitWidth();
        std::optional<Pieces> x = convert(cast<SCEVCastExpr>(s)->getOperand(0), why);
        if (!x || bits >= 32) return x;
        return divide(*x, std::int64_t{1} << bits, DivisionKind::Floor, /*remainder=*/true);
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
        Pieces acc = single(constant_expr(0));
        for (const SCEV* op : cast<SCEVAddExpr>(s)->operands()) {
          std::optional<Pieces> p = convert(op, why);
          if (!p) return std::nullopt;
          acc = combine(acc, *p, /*multiply=*/false, why);
          if (acc.empty()) return std::nullopt;
        }
        return acc;
      }
      case scMulExpr: {
        Pieces acc = single(constant_expr(1));
        for (const SCEV* op : cast<SCEVMulExpr>(s)->operands()) {
          std::optional<Pieces> p = convert(op, why);
          if (!p) return std::nullopt;
          acc = combine(acc, *p, /*multiply=*/true, why);
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
        std::vector<Pieces> ops;
        for (const SCEV* op : cast<SCEVMinMaxExpr>(s)->operands()) {
          std::optional<Pieces> p = convert(op, why);
          if (!p) return std::nullopt;
          ops.push_back(std::move(*p));
        }
        const bool is_max = s->getSCEVType() == scSMaxExpr || s->getSCEVType() == scUMaxExpr;
        return min_max(ops, is_max, why);
      }
      case scUnknown:
        return convert_unknown(cast<SCEVUnknown>(s)->getValue(), why);
      case scUDivExpr: {
        const auto* div = cast<SCEVUDivExpr>(s);
        const auto* c = dyn_cast<SCEVConstant>(div->getRHS());
        if (c == nullptr || c->getAPInt().getActiveBits() > 62 || c->getAPInt().isZero()) {
          why = {AccessClass::NonAffine, "division by a non-constant"};
          return std::nullopt;
        }
        std::optional<Pieces> x = convert(div->getLHS(), why);
        if (!x) return std::nullopt;
        // Unsigned division of a (non-negative) index: floor.
        return divide(*x, static_cast<std::int64_t>(c->getAPInt().getZExtValue()),
                      DivisionKind::FloorNonNegative, /*remainder=*/false);
      }
      default:
        why = {AccessClass::NonAffine, "subscript not computable"};
        return std::nullopt;
    }
  }

  /// Sum or product of two piece lists (cartesian). A product needs one factor free of variables.
  Pieces combine(const Pieces& a, const Pieces& b, bool multiply, Failure& why) {
    Pieces out;
    if (a.size() * b.size() > kMaxPieces) {
      why = {AccessClass::NonAffine, "too many case splits"};
      return out;
    }
    for (const Piece& x : a) {
      for (const Piece& y : b) {
        Piece p;
        if (!multiply) {
          p.expr = x.expr + y.expr;
        } else if (!x.expr.has_vars()) {
          p.expr = y.expr.scaled(x.expr.constant);
        } else if (!y.expr.has_vars()) {
          p.expr = x.expr.scaled(y.expr.constant);
        } else {
          why = {AccessClass::NonAffine, "product of two index variables"};
          return {};
        }
        p.constraints = x.constraints;
        p.constraints.insert(p.constraints.end(), y.constraints.begin(), y.constraints.end());
        if (simplify(p.constraints)) out.push_back(std::move(p));
      }
    }
    if (out.empty()) out.push_back(Piece{constant_expr(0), {ge0(constant_expr(-1))}});
    return out;
  }

  /// max(a, b, ...) as pieces: operand k where it is >= every other (> for earlier ones, so the
  /// pieces partition the domain); min likewise.
  std::optional<Pieces> min_max(const std::vector<Pieces>& ops, bool is_max, Failure& why) {
    if (ops.size() > 4) {
      why = {AccessClass::NonAffine, "min/max with many operands"};
      return std::nullopt;
    }
    Pieces out;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      for (const Piece& chosen : ops[k]) {
        Pieces partial{chosen};
        for (std::size_t j = 0; j < ops.size(); ++j) {
          if (j == k) continue;
          Pieces next;
          for (const Piece& p : partial) {
            for (const Piece& other : ops[j]) {
              Piece q = p;
              q.constraints.insert(q.constraints.end(), other.constraints.begin(),
                                   other.constraints.end());
              AffineExpr diff = is_max ? chosen.expr - other.expr : other.expr - chosen.expr;
              if (j < k) diff = diff - constant_expr(1);  // strict against earlier operands
              q.constraints.push_back(ge0(diff));
              if (simplify(q.constraints)) next.push_back(std::move(q));
            }
          }
          partial = std::move(next);
          if (partial.size() > kMaxPieces) {
            why = {AccessClass::NonAffine, "too many case splits"};
            return std::nullopt;
          }
        }
        out.insert(out.end(), partial.begin(), partial.end());
      }
    }
    if (out.size() > kMaxPieces) {
      why = {AccessClass::NonAffine, "too many case splits"};
      return std::nullopt;
    }
    return out;
  }

  /// zext(flag) (sign = false) or sext(flag) of an i1 as two exact cases: 1 (or -1) where the
  /// flag holds, 0 where it does not, each piece constrained by the flag's (negated) condition.
  /// Like a select, the flag's condition must be complete: a weakened one would let the two
  /// cases overlap.
  std::optional<Pieces> convert_flag(const llvm::SCEV* flag, bool sign, Failure& why) {
    Dnf when_true;
    Dnf when_false;
    const bool saved = partially_dropped_;
    partially_dropped_ = false;
    const bool ok =
        flag_condition(flag, true, when_true, why) && flag_condition(flag, false, when_false, why);
    const bool weakened = partially_dropped_;
    partially_dropped_ = saved;
    if (!ok || weakened) {
      if (ok) why = {AccessClass::NonAffine, "extended flag with a partly non-affine condition"};
      return std::nullopt;
    }
    Pieces out;
    for (Conjunction& c : when_true) {
      if (simplify(c)) out.push_back(Piece{constant_expr(sign ? -1 : 1), std::move(c)});
    }
    for (Conjunction& c : when_false) {
      if (simplify(c)) out.push_back(Piece{constant_expr(0), std::move(c)});
    }
    // Both DNFs empty cannot happen for a complete condition; keep the result well-formed anyway.
    if (out.empty()) out.push_back(Piece{constant_expr(0), {ge0(constant_expr(-1))}});
    return out;
  }

  /// The DNF under which an i1-typed SCEV is true (taken) or false. SCEV writes i1 logic as
  /// arithmetic modulo 2: `and` is umin (or a product, or a sequential umin for a short-circuit
  /// select), `or` is umax, a sum is exclusive or, and signed min/max swap because true is -1.
  bool flag_condition(const llvm::SCEV* s, bool taken, Dnf& out, Failure& why) {
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
          if (!merge(out, d, conjunction, next, why)) return false;
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
          if (!merge(odd, f, true, odd_f, why) || !merge(even, t, true, even_t, why) ||
              !merge(even, f, true, even_f, why) || !merge(odd, t, true, odd_t, why)) {
            return false;
          }
          if (!merge(odd_f, even_t, false, odd, why) || !merge(even_f, odd_t, false, even, why)) {
            return false;
          }
        }
        out = taken ? odd : even;
        return true;
      }
      case scTruncate: {
        // x mod 2 as pieces r in {0, 1}: true where r == 1.
        std::optional<Pieces> r = convert(s, why);
        if (!r) return false;
        out.clear();
        for (const Piece& p : *r) {
          Conjunction c = p.constraints;
          c.push_back(eq0(taken ? p.expr - constant_expr(1) : p.expr));
          if (simplify(c)) out.push_back(std::move(c));
        }
        if (out.size() > kMaxDisjuncts) {
          why = {AccessClass::NonAffine, "condition too complex"};
          return false;
        }
        return true;
      }
      default:
        why = {AccessClass::NonAffine, "flag not computable"};
        return false;
    }
  }

  enum class DivisionKind { FloorNonNegative, Floor, TowardZero };

  /// x / c (or x mod c) for a constant c > 0, exactly: a fresh existential variable q with
  /// c*q <= x <= c*q + c - 1 (floor) is the quotient. Loop-kind variables are >= 0, so a quotient
  /// that may be negative is written -q' in a second piece where x < 0.
  Pieces divide(const Pieces& xs, std::int64_t c, DivisionKind kind, bool remainder) {
    Pieces out;
    const AffineExpr cc = constant_expr(c);
    for (const Piece& x : xs) {
      const Var q{Var::Kind::Loop, static_cast<std::uint32_t>(info_.loop_names.size())};
      info_.loop_names.push_back("q" + std::to_string(info_.loop_names.size() + 1));
      const AffineExpr cq = AffineExpr::of_var(q, ParamPoly::constant(c));
      const AffineExpr qe = AffineExpr::of_var(q);
      {
        // x >= 0 (assumed for FloorNonNegative): c*q <= x <= c*q + c - 1 for both roundings.
        Piece p = x;
        if (kind != DivisionKind::FloorNonNegative) p.constraints.push_back(ge0(x.expr));
        p.constraints.push_back(ge0(x.expr - cq));
        p.constraints.push_back(ge0(cq + cc - constant_expr(1) - x.expr));
        p.expr = remainder ? x.expr - cq : qe;
        if (simplify(p.constraints)) out.push_back(std::move(p));
      }
      if (kind == DivisionKind::FloorNonNegative) continue;
      // x < 0, quotient -q: floor gives -c*q <= x <= -c*q + c - 1 (q >= 1), toward zero gives
      // -c*q - (c - 1) <= x <= -c*q.
      Piece n = x;
      n.constraints.push_back(ge0(constant_expr(-1) - x.expr));
      const AffineExpr minus_cq = cq.scaled(ParamPoly::constant(-1));
      if (kind == DivisionKind::Floor) {
        n.constraints.push_back(ge0(x.expr - minus_cq));
        n.constraints.push_back(ge0(minus_cq + cc - constant_expr(1) - x.expr));
      } else {
        n.constraints.push_back(ge0(x.expr - minus_cq + cc - constant_expr(1)));
        n.constraints.push_back(ge0(minus_cq - x.expr));
      }
      n.expr = remainder ? x.expr - minus_cq : qe.scaled(ParamPoly::constant(-1));
      if (simplify(n.constraints)) out.push_back(std::move(n));
    }
    return out;
  }

  std::optional<Pieces> convert_add_rec(const llvm::SCEVAddRecExpr* rec, Failure& why) {
    if (!rec->isAffine()) {
      why = {AccessClass::NonAffine, "non-affine recurrence"};
      return std::nullopt;
    }
    const llvm::Loop* loop = rec->getLoop();
    auto id = loop_ids_.find(loop);
    if (id == loop_ids_.end()) {
      why = {AccessClass::NonAffine, "recurrence of an unknown loop"};
      return std::nullopt;
    }
    std::optional<Pieces> start = convert(rec->getStart(), why);
    if (!start) return std::nullopt;
    std::optional<Pieces> step = convert(rec->getStepRecurrence(se_), why);
    if (!step) return std::nullopt;
    const Var iv{Var::Kind::Loop, id->second};
    Pieces scaled_iv;
    for (const Piece& st : *step) {
      if (st.expr.has_vars()) {
        why = {AccessClass::NonAffine, "loop step depends on an index variable"};
        return std::nullopt;
      }
      scaled_iv.push_back(Piece{AffineExpr::of_var(iv, st.expr.constant), st.constraints});
    }
    Pieces out = combine(*start, scaled_iv, /*multiply=*/false, why);
    if (out.empty()) return std::nullopt;
    // The iteration counter never exceeds the backedge-taken count, wherever in the loop the
    // reference sits (valid for rotated loops too, whose exit test does not guard the body).
    const llvm::SCEV* btc = se_.getBackedgeTakenCount(loop);
    if (!llvm::isa<llvm::SCEVCouldNotCompute>(btc)) {
      Failure ignored;
      std::optional<Pieces> bound = convert(btc, ignored);
      if (bound && bound->size() == 1) {
        for (Piece& p : out) {
          p.constraints.push_back(ge0((*bound)[0].expr - AffineExpr::of_var(iv)));
          p.constraints.insert(p.constraints.end(), (*bound)[0].constraints.begin(),
                               (*bound)[0].constraints.end());
        }
      }
    }
    return out;
  }

  std::optional<Pieces> convert_value(llvm::Value* v, Failure& why) {
    if (!v->getType()->isIntegerTy()) {
      why = {AccessClass::NonAffine, "non-integer index"};
      return std::nullopt;
    }
    return convert(se_.getSCEV(v), why);
  }

  std::optional<Pieces> convert_unknown(llvm::Value* v, Failure& why) {
    if (auto* a = llvm::dyn_cast<llvm::Argument>(v)) {
      if (a->getParent() == &kernel_ && a->getType()->isIntegerTy()) {
        return single(
            AffineExpr::of_constant(ParamPoly::param({Param::Kind::ScalarArg, a->getArgNo()})));
      }
    }
    if (llvm::isa<llvm::LoadInst>(v) || llvm::isa<llvm::AtomicRMWInst>(v)) {
      why = {AccessClass::Indirect, "subscript depends on loaded data"};
      return std::nullopt;
    }
    if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(v)) {
      Dnf when_true;
      Dnf when_false;
      // The arms' conditions must be complete: a weakened one would let pieces overlap into
      // a superset that is then mistaken for exact.
      const bool saved = partially_dropped_;
      partially_dropped_ = false;
      const bool ok = condition(sel->getCondition(), true, when_true, why) &&
                      condition(sel->getCondition(), false, when_false, why);
      const bool weakened = partially_dropped_;
      partially_dropped_ = saved;
      if (!ok || weakened) {
        if (ok) why = {AccessClass::NonAffine, "select on a partly non-affine condition"};
        return std::nullopt;
      }
      std::optional<Pieces> t = convert_value(sel->getTrueValue(), why);
      if (!t) return std::nullopt;
      std::optional<Pieces> f = convert_value(sel->getFalseValue(), why);
      if (!f) return std::nullopt;
      Pieces out;
      for (const auto& [dnf, arm] : {std::pair{&when_true, &*t}, std::pair{&when_false, &*f}}) {
        for (const Conjunction& conj : *dnf) {
          for (const Piece& p : *arm) {
            Piece q = p;
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
          llvm::haveNoCommonBitsSet(bin->getOperand(0), bin->getOperand(1), layout_)) {
        std::optional<Pieces> a = convert_value(bin->getOperand(0), why);
        if (!a) return std::nullopt;
        std::optional<Pieces> b = convert_value(bin->getOperand(1), why);
        if (!b) return std::nullopt;
        Pieces sum = combine(*a, *b, /*multiply=*/false, why);
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
          std::optional<Pieces> x = convert_value(bin->getOperand(0), why);
          if (!x) return std::nullopt;
          return divide(*x, c, shift ? DivisionKind::Floor : DivisionKind::TowardZero,
                        op == llvm::Instruction::SRem);
        }
      }
    }
    why = {AccessClass::NonAffine, "subscript uses " + value_text(v)};
    return std::nullopt;
  }

  std::optional<Pieces> convert_call(llvm::CallInst* call, Failure& why) {
    const llvm::Function* callee = call->getCalledFunction();
    if (callee == nullptr) {
      why = {AccessClass::UnknownCall, "indirect call"};
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
        why = {AccessClass::NonAffine, name + " with a non-constant dimension"};
        return std::nullopt;
      }
      if (*d > 2) {
        // Out-of-range dimensions: ids are 0, sizes 1 (OpenCL 1.2 section 6.12.1).
        return single(constant_expr(wi->second >= 3 && wi->second <= 5 ? 1 : 0));
      }
      const Var group{Var::Kind::GroupId, *d};
      const Var local{Var::Kind::LocalId, *d};
      const ParamPoly ls = ParamPoly::param({Param::Kind::LocalSize, *d});
      switch (wi->second) {
        case 0: {  // global id = group * local size + local id + global offset
          AffineExpr e = AffineExpr::of_var(group, ls) + AffineExpr::of_var(local);
          e.constant = ParamPoly::param({Param::Kind::GlobalOffset, *d});
          return single(e);
        }
        case 1:
          return single(AffineExpr::of_var(local));
        case 2:
          return single(AffineExpr::of_var(group));
        case 3:
          return single(AffineExpr::of_constant(ls));
        case 4:
          return single(AffineExpr::of_constant(ParamPoly::param({Param::Kind::NumGroups, *d})));
        case 5:
          return single(AffineExpr::of_constant(ParamPoly::param({Param::Kind::GlobalSize, *d})));
        default:
          return single(AffineExpr::of_constant(ParamPoly::param({Param::Kind::GlobalOffset, *d})));
      }
    }
    // Integer builtins that are affine or piecewise affine.
    std::vector<Pieces> ops;
    auto operands = [&]() -> bool {
      for (llvm::Value* a : call->args()) {
        std::optional<Pieces> p = convert_value(a, why);
        if (!p) return false;
        ops.push_back(std::move(*p));
      }
      return true;
    };
    if ((name == "mul24" || name == "mad24") && operands()) {
      Pieces r = combine(ops[0], ops[1], /*multiply=*/true, why);
      if (r.empty()) return std::nullopt;
      if (name == "mad24") r = combine(r, ops[2], /*multiply=*/false, why);
      if (r.empty()) return std::nullopt;
      return r;
    }
    if ((name == "min" || name == "max") && call->arg_size() == 2 && operands()) {
      return min_max(ops, name == "max", why);
    }
    if (name == "clamp" && call->arg_size() == 3 && operands()) {
      std::optional<Pieces> lo = min_max({ops[0], ops[1]}, /*is_max=*/true, why);
      if (!lo) return std::nullopt;
      return min_max({*lo, ops[2]}, /*is_max=*/false, why);
    }
    if (why.reason.empty()) why = {AccessClass::UnknownCall, "subscript uses call to " + name};
    return std::nullopt;
  }

  // ---- conditions -> DNF of affine constraints -------------------------------------------

  bool condition(llvm::Value* cond, bool taken, Dnf& out, Failure& why) {
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
          const bool saved = partially_dropped_;
          partially_dropped_ = false;
          const bool ok = condition(bin->getOperand(0), true, at, why) &&
                          condition(bin->getOperand(0), false, af, why) &&
                          condition(bin->getOperand(1), true, bt, why) &&
                          condition(bin->getOperand(1), false, bf, why);
          const bool weakened = partially_dropped_;
          partially_dropped_ = saved;
          if (!ok || weakened) {
            if (ok) why = {AccessClass::NonAffine, "exclusive or of partly non-affine conditions"};
            return false;
          }
          Dnf left;
          Dnf right;
          if (!merge(at, taken ? bf : bt, true, left, why) ||
              !merge(af, taken ? bt : bf, true, right, why)) {
            return false;
          }
          return merge(left, right, false, out, why);
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
        if (!merge(ct, x, true, left, why) || !merge(cf, y, true, right, why)) return false;
        return merge(left, right, false, out, why);
      }
    }
    if (llvm::isa<llvm::LoadInst>(cond)) {
      why = {AccessClass::Indirect, "condition depends on loaded data"};
    } else {
      why = {AccessClass::NonAffine, "condition " + value_text(cond)};
    }
    return false;
  }

  /// a && b (is_and) or a || b, known to be taken (true) or not. When both operands must hold
  /// (and taken, or not taken), an operand that cannot be expressed is dropped: the other still
  /// restricts the reference, which becomes a may-access (partially_dropped_).
  bool junction(llvm::Value* a, llvm::Value* b, bool is_and, bool taken, Dnf& out, Failure& why) {
    const bool both = is_and == taken;
    Dnf da;
    Dnf db;
    Failure wa;
    Failure wb;
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
    return merge(da, db, both, out, why);
  }

  bool merge(const Dnf& a, const Dnf& b, bool conjunction, Dnf& out, Failure& why) {
    if (conjunction) {
      std::optional<Dnf> r = conjoin(a, b);
      if (!r) {
        why = {AccessClass::NonAffine, "condition too complex"};
        return false;
      }
      out = std::move(*r);
    } else {
      out = a;
      out.insert(out.end(), b.begin(), b.end());
    }
    Dnf cleaned;
    for (Conjunction& c : out) {
      if (simplify(c)) cleaned.push_back(std::move(c));
    }
    out = std::move(cleaned);
    if (out.size() > kMaxDisjuncts) {
      why = {AccessClass::NonAffine, "condition too complex"};
      return false;
    }
    return true;
  }

  bool compare(llvm::ICmpInst* cmp, bool taken, Dnf& out, Failure& why) {
    if (!cmp->getOperand(0)->getType()->isIntegerTy()) {
      why = {AccessClass::NonAffine, "pointer comparison"};
      return false;
    }
    const llvm::CmpInst::Predicate pred = taken ? cmp->getPredicate() : cmp->getInversePredicate();
    std::optional<Pieces> lhs = convert_value(cmp->getOperand(0), why);
    if (!lhs) return false;
    std::optional<Pieces> rhs = convert_value(cmp->getOperand(1), why);
    if (!rhs) return false;
    out.clear();
    for (const Piece& pa : *lhs) {
      for (const Piece& pb : *rhs) {
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
            why = {AccessClass::NonAffine, "unsupported comparison"};
            return false;
        }
        for (Conjunction& alt : alternatives) {
          alt.insert(alt.end(), base.begin(), base.end());
          if (simplify(alt)) out.push_back(std::move(alt));
        }
      }
    }
    if (out.size() > kMaxDisjuncts) {
      why = {AccessClass::NonAffine, "condition too complex"};
      return false;
    }
    return true;
  }

  // ---- guards of one reference --------------------------------------------------------------

  /// The DNF of the conditions of every branch edge that dominates block; dropped is set when some
  /// such condition cannot be expressed, or when an enclosing loop can be left early.
  Dnf guards(llvm::BasicBlock* block, bool& dropped) {
    Dnf result{Conjunction{}};
    for (llvm::Loop* l = loops_.getLoopFor(block); l != nullptr; l = l->getParentLoop()) {
      llvm::SmallVector<llvm::BasicBlock*, 4> exiting;
      l->getExitingBlocks(exiting);
      if (exiting.size() > 1) dropped = true;
    }
    llvm::DomTreeNode* node = dt_.getNode(block);
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
        if (!dt_.dominates(edge, block)) continue;
        Dnf c;
        Failure why;
        partially_dropped_ = false;
        if (!condition(br->getCondition(), s == 0, c, why)) {
          dropped = true;
          continue;
        }
        if (partially_dropped_) dropped = true;
        Dnf next;
        if (!merge(result, c, true, next, why)) {
          dropped = true;
          continue;
        }
        result = std::move(next);
      }
    }
    return result;
  }

  // ---- references ---------------------------------------------------------------------------

  void visit(llvm::Instruction& inst) {
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
      record(inst, load->getPointerOperand(), size_of(load->getType()), true, false, false, nullptr,
             "load");
    } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
      record(inst, store->getPointerOperand(), size_of(store->getValueOperand()->getType()), false,
             true, false, nullptr, "store");
    } else if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&inst)) {
      record(inst, rmw->getPointerOperand(), size_of(rmw->getValOperand()->getType()), true, true,
             true, nullptr, "atomicrmw");
    } else if (auto* cx = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&inst)) {
      record(inst, cx->getPointerOperand(), size_of(cx->getNewValOperand()->getType()), true, true,
             true, nullptr, "cmpxchg");
    } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
      visit_call(*call);
    }
  }

  std::uint32_t size_of(llvm::Type* t) const {
    return static_cast<std::uint32_t>(layout_.getTypeStoreSize(t).getFixedSize());
  }

  static bool is_global_pointer(const llvm::Value* v) {
    auto* pt = llvm::dyn_cast<llvm::PointerType>(v->getType());
    return pt != nullptr && (pt->getAddressSpace() == kGlobalAddressSpace ||
                             pt->getAddressSpace() == kConstantAddressSpace);
  }

  std::uint32_t pointee_size(const llvm::Value* ptr, std::uint32_t fallback) const {
    auto* pt = llvm::cast<llvm::PointerType>(ptr->getType());
    if (!pt->isOpaque()) {
      llvm::Type* elem = pt->getNonOpaquePointerElementType();
      if (elem->isSized()) return size_of(elem);
    }
    return fallback;
  }

  void visit_call(llvm::CallInst& call) {
    if (auto* mi = llvm::dyn_cast<llvm::MemIntrinsic>(&call)) {
      llvm::Value* len = mi->getLength();
      if (auto* mt = llvm::dyn_cast<llvm::MemTransferInst>(mi)) {
        if (is_global_pointer(mt->getSource())) {
          record(call, mt->getSource(), 1, true, false, false, len, "memcpy source");
        }
      }
      if (is_global_pointer(mi->getDest())) {
        record(call, mi->getDest(), 1, false, true, false, len, "memcpy destination");
      }
      return;
    }
    const llvm::Function* callee = call.getCalledFunction();
    if (callee != nullptr && callee->isIntrinsic()) return;  // lifetime, fmuladd, ...
    const std::string name = callee != nullptr ? builtin_name(callee->getName()) : "";
    bool any_global = false;
    for (llvm::Value* a : call.args()) any_global = any_global || is_global_pointer(a);
    if (!any_global) return;
    // vloadN(offset, p) / vstoreN(data, offset, p): N elements at p + offset * N.
    auto vector_width = [&](const char* prefix) -> std::uint32_t {
      const std::string p = prefix;
      if (name.rfind(p, 0) != 0) return 0;
      const std::string rest = name.substr(p.size());
      if (rest == "2" || rest == "3" || rest == "4" || rest == "8" || rest == "16") {
        return static_cast<std::uint32_t>(std::stoul(rest));
      }
      return 0;
    };
    if (const std::uint32_t n = vector_width("vload"); n != 0 && call.arg_size() == 2) {
      llvm::Value* p = call.getArgOperand(1);
      const std::uint32_t elem = pointee_size(p, 4);
      record_vector(call, p, call.getArgOperand(0), n, elem, true, "vload");
      return;
    }
    if (const std::uint32_t n = vector_width("vstore"); n != 0 && call.arg_size() == 3) {
      llvm::Value* p = call.getArgOperand(2);
      const std::uint32_t elem = pointee_size(p, 4);
      record_vector(call, p, call.getArgOperand(1), n, elem, false, "vstore");
      return;
    }
    const bool atomic = name.find("atom") != std::string::npos;
    if (atomic && call.arg_size() >= 1 && is_global_pointer(call.getArgOperand(0))) {
      llvm::Value* p = call.getArgOperand(0);
      record(call, p, pointee_size(p, 4), true, true, true, nullptr, name);
      return;
    }
    if ((name == "async_work_group_copy") && call.arg_size() == 4) {
      llvm::Value* dst = call.getArgOperand(0);
      llvm::Value* src = call.getArgOperand(1);
      if (is_global_pointer(src)) {
        record(call, src, pointee_size(src, 4), true, false, false, call.getArgOperand(2), name);
      }
      if (is_global_pointer(dst)) {
        record(call, dst, pointee_size(dst, 4), false, true, false, call.getArgOperand(2), name);
      }
      return;
    }
    if (name == "prefetch") return;  // a hint, no access
    for (llvm::Value* a : call.args()) {
      if (!is_global_pointer(a)) continue;
      const bool constant =
          llvm::cast<llvm::PointerType>(a->getType())->getAddressSpace() == kConstantAddressSpace;
      record_unknown(call, a, !constant, AccessClass::UnknownCall,
                     "passed to " + (name.empty() ? std::string("an indirect call") : name));
    }
  }

  void record_vector(llvm::Instruction& inst, llvm::Value* ptr, llvm::Value* offset,
                     std::uint32_t n, std::uint32_t elem, bool is_read, const std::string& what) {
    // Bytes [ptr + offset * n * elem, + n * elem): the offset term is added to the subscript.
    Failure why;
    std::optional<Pieces> off = convert_value(offset, why);
    const std::uint32_t width = n * elem;
    if (!off) {
      record_unknown(inst, ptr, !is_read, why.access_class, why.reason);
      return;
    }
    Pieces scaled;
    for (const Piece& p : *off) {
      scaled.push_back(Piece{p.expr.scaled(ParamPoly::constant(static_cast<std::int64_t>(width))),
                             p.constraints});
    }
    record_with_extra(inst, ptr, width, is_read, !is_read, false, scaled, what);
  }

  void record(llvm::Instruction& inst, llvm::Value* ptr, std::uint32_t width, bool is_read,
              bool is_write, bool atomic, llvm::Value* extent, const std::string& what) {
    Pieces extra = single(constant_expr(0));
    if (extent != nullptr) {
      // An implicit range t in [0, extent): a fresh variable, bounded by a constraint.
      Failure why;
      std::optional<Pieces> len = convert_value(extent, why);
      if (!len) {
        record_unknown(inst, ptr, is_write, why.access_class, "length: " + why.reason);
        return;
      }
      const Var t{Var::Kind::Loop, static_cast<std::uint32_t>(info_.loop_names.size())};
      info_.loop_names.push_back("t" + std::to_string(info_.loop_names.size() + 1));
      extra.clear();
      for (const Piece& l : *len) {
        Piece p{AffineExpr::of_var(t, ParamPoly::constant(width)), l.constraints};
        p.constraints.push_back(ge0(l.expr - AffineExpr::of_var(t) - constant_expr(1)));
        extra.push_back(std::move(p));
      }
    }
    record_with_extra(inst, ptr, width, is_read, is_write, atomic, extra, what);
  }

  /// The kernel arguments ptr may point into; an empty result means an unknown origin.
  std::vector<const llvm::Argument*> targets(llvm::Value* ptr) {
    llvm::SmallVector<const llvm::Value*, 4> objects;
    llvm::getUnderlyingObjects(ptr, objects, &loops_, 0);
    std::vector<const llvm::Argument*> out;
    for (const llvm::Value* o : objects) {
      auto* a = llvm::dyn_cast<llvm::Argument>(o);
      if (a == nullptr || a->getParent() != &kernel_) return {};
      if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    }
    return out;
  }

  void record_unknown(llvm::Instruction& inst, llvm::Value* ptr, bool is_write, AccessClass cls,
                      const std::string& reason) {
    if (!is_global_pointer(ptr)) return;
    std::vector<const llvm::Argument*> args = targets(ptr);
    const unsigned as = llvm::cast<llvm::PointerType>(ptr->getType())->getAddressSpace();
    if (args.empty()) {
      for (llvm::Argument& a : kernel_.args()) {
        auto* pt = llvm::dyn_cast<llvm::PointerType>(a.getType());
        if (pt != nullptr && pt->getAddressSpace() == as) args.push_back(&a);
      }
    }
    info_.stats.add(cls);
    for (const llvm::Argument* a : args) {
      AccessPiece piece;
      piece.access_class = cls;
      piece.reason = reason;
      piece.origin = value_text(&inst);
      piece.conditions_dropped = true;
      ArgumentAccess& arg = info_.args[a->getArgNo()];
      arg.reads.push_back(piece);
      if (is_write) arg.writes.push_back(piece);
    }
  }

  void record_with_extra(llvm::Instruction& inst, llvm::Value* ptr, std::uint32_t width,
                         bool is_read, bool is_write, bool atomic, const Pieces& extra,
                         const std::string& what) {
    // Private and __local memory (allocas, __local arrays and arguments) is not shared memory.
    if (!is_global_pointer(ptr)) return;
    const std::vector<const llvm::Argument*> args = targets(ptr);
    if (args.empty()) {
      record_unknown(inst, ptr, is_write, AccessClass::UnknownCall, "pointer of unknown origin");
      return;
    }
    bool dropped = false;
    const Dnf guard = guards(inst.getParent(), dropped);
    AccessClass worst = AccessClass::Affine;
    std::vector<std::pair<std::uint32_t, std::vector<AccessPiece>>> per_arg;
    std::optional<Failure> failure;
    for (const llvm::Argument* a : args) {
      Failure why;
      const llvm::SCEV* offset =
          se_.getMinusSCEV(se_.getSCEV(ptr), se_.getSCEV(const_cast<llvm::Argument*>(a)));
      offset = se_.getSCEVAtScope(offset, loops_.getLoopFor(inst.getParent()));
      std::optional<Pieces> subscript;
      if (!llvm::isa<llvm::SCEVCouldNotCompute>(offset)) subscript = convert(offset, why);
      if (subscript) {
        Pieces with_extra = combine(*subscript, extra, /*multiply=*/false, why);
        if (with_extra.empty()) {
          subscript.reset();
        } else {
          subscript = std::move(with_extra);
        }
      } else if (why.reason.empty()) {
        why = {AccessClass::NonAffine, "pointer offset not computable"};
      }
      if (!subscript) {
        failure = why;
        break;
      }
      std::vector<AccessPiece> pieces;
      for (const Piece& p : *subscript) {
        for (const Conjunction& g : guard) {
          AccessPiece piece;
          piece.byte_offset = p.expr;
          piece.width = width;
          piece.constraints = p.constraints;
          piece.constraints.insert(piece.constraints.end(), g.begin(), g.end());
          eliminate_one_sided_existentials(piece);
          if (!simplify(piece.constraints)) continue;
          piece.conditions_dropped = dropped;
          piece.atomic = atomic;
          piece.origin = what + ": " + value_text(&inst);
          piece.access_class = classify(piece.constraints);
          worst = std::max(worst, piece.access_class);
          pieces.push_back(std::move(piece));
        }
      }
      per_arg.emplace_back(a->getArgNo(), std::move(pieces));
    }
    if (failure) {
      record_unknown(inst, ptr, is_write, failure->access_class, failure->reason);
      return;
    }
    info_.stats.add(worst);
    for (auto& [index, pieces] : per_arg) {
      ArgumentAccess& arg = info_.args[index];
      for (AccessPiece& p : pieces) {
        if (is_read) arg.reads.push_back(p);
        if (is_write) arg.writes.push_back(p);
      }
    }
  }

  /// Projects out loop variables that only need to exist (see the same step in the range
  /// generator), where the coefficient signs are known constants. Loop exit tests guarding a
  /// reference after the loop vanish this way.
  static void eliminate_one_sided_existentials(AccessPiece& piece) {
    std::set<Var> vars;
    for (const Constraint& c : piece.constraints) {
      for (const auto& [v, k] : c.expr.coefficients) {
        if (v.kind == Var::Kind::Loop && piece.byte_offset.coefficients.count(v) == 0)
          vars.insert(v);
      }
    }
    for (const Var& v : vars) {
      bool lower_only = true;
      bool upper_only = true;
      for (const Constraint& c : piece.constraints) {
        const ParamPoly a = c.expr.coefficient(v);
        if (a.is_zero()) continue;
        const std::optional<std::int64_t> k = a.constant_value();
        if (!k || c.relation != Constraint::Relation::GreaterEqualZero) {
          lower_only = upper_only = false;
          break;
        }
        lower_only = lower_only && *k > 0;
        upper_only = upper_only && *k < 0;
      }
      if (lower_only) {
        std::erase_if(piece.constraints,
                      [&v](const Constraint& c) { return c.expr.coefficients.count(v) != 0; });
      } else if (upper_only) {
        for (Constraint& c : piece.constraints) c.expr.coefficients.erase(v);  // v = 0
      }
    }
  }

  /// DSOM Table 2 class of an affine piece: no constraint beyond single-variable loop bounds (N1);
  /// only single-variable constraints (N2); coupled variables (N3, evaluated exactly here).
  static AccessClass classify(const Conjunction& constraints) {
    AccessClass c = AccessClass::Affine;
    for (const Constraint& k : constraints) {
      const std::size_t vars = coupled_variable_count(k.expr);
      if (vars >= 2) return AccessClass::AffineGeneral;
      const bool loop_bound = vars == 1 && k.expr.coefficients.size() == 1 &&
                              k.expr.coefficients.begin()->first.kind == Var::Kind::Loop &&
                              k.relation == Constraint::Relation::GreaterEqualZero;
      if (!loop_bound) c = AccessClass::AffineRectangular;
    }
    return c;
  }

  void finish() {
    for (const ArgumentAccess& a : info_.args) {
      for (const AccessPiece& p : a.writes) {
        if (!is_affine(p.access_class) && info_.statically_splittable) {
          info_.statically_splittable = false;
          info_.unsplittable_reason = "argument '" + a.name + "' is written through a " +
                                      std::string(to_string(p.access_class)) + " reference (" +
                                      p.reason + ")";
        }
      }
    }
  }

  llvm::Function& kernel_;
  llvm::ScalarEvolution& se_;
  llvm::LoopInfo& loops_;
  llvm::DominatorTree& dt_;
  const llvm::DataLayout& layout_;
  KernelAccessInfo info_;
  std::map<const llvm::Loop*, std::uint32_t> loop_ids_;
  bool partially_dropped_ = false;  // set by junction() when it dropped one operand
  std::map<const llvm::SCEV*, std::optional<Pieces>> memo_;
  std::map<const llvm::SCEV*, Failure> memo_failure_;
};

}  // namespace

std::vector<KernelAccessInfo> extract_kernel_accesses(llvm::Module& module) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);

  std::vector<KernelAccessInfo> kernels;
  for (llvm::Function& f : module) {
    if (f.isDeclaration() || f.getCallingConv() != llvm::CallingConv::SPIR_KERNEL) continue;
    auto& se = fam.getResult<llvm::ScalarEvolutionAnalysis>(f);
    auto& li = fam.getResult<llvm::LoopAnalysis>(f);
    auto& dt = fam.getResult<llvm::DominatorTreeAnalysis>(f);
    KernelExtractor extractor(f, se, li, dt, module.getDataLayout());
    kernels.push_back(extractor.run());
  }
  return kernels;
}

}  // namespace unimem
