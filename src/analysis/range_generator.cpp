#include "analysis/range_generator.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "analysis/write_injectivity.hpp"
#include "common/check.hpp"

namespace unimem {

// 128-bit intermediates keep products of 64-bit bounds and coefficients exact.
__extension__ typedef __int128 Int128;

namespace {

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();
// Work bounds per piece: intervals emitted by the fast generator and points of the coupled
// variables enumerated. Beyond them the piece is over-approximated (and flagged inexact).
constexpr std::uint64_t kMaxIntervalsPerPiece = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxEnumeratedPoints = std::uint64_t{1} << 16;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

std::int64_t to_i64(std::uint64_t v, const char* what) {
  UNIMEM_REQUIRE(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), what);
  return static_cast<std::int64_t>(v);
}

/// A piece with parameters substituted: dense coefficient vectors over the piece's variables.
struct IntExpr {
  std::int64_t constant = 0;
  std::vector<std::int64_t> coef;
};

struct IntConstraint {
  IntExpr e;
  Constraint::Relation rel = Constraint::Relation::GreaterEqualZero;
};

struct Slot {
  Var var;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

enum class PieceStatus { Exact, Approximate, Unbounded };

class PieceEvaluator {
 public:
  PieceEvaluator(const AccessPiece& piece, const ParamValues& values, const NDRange& range,
                 const GroupBox& groups)
      : piece_(piece), values_(values), range_(range), groups_(groups) {}

  PieceStatus run(std::vector<Interval>& out) {
    collect_slots();
    subscript_ = to_int(piece_.byte_offset);
    for (const Constraint& c : piece_.constraints)
      constraints_.push_back({to_int(c.expr), c.relation});
    merge_global_ids();
    eliminate_one_sided_existentials();
    if (!tighten(slots_, constraints_)) return PieceStatus::Exact;  // empty domain
    std::vector<IntConstraint> general;
    for (const IntConstraint& c : constraints_) {
      if (!is_settled(c, slots_)) general.push_back(c);
    }
    // Unbounded variables that matter make the piece unbounded.
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      bool used = subscript_.coef[i] != 0;
      for (const IntConstraint& c : general) used = used || c.e.coef[i] != 0;
      if (used && (slots_[i].hi == kUnbounded)) return PieceStatus::Unbounded;
    }
    if (general.empty()) {
      return emit_box(slots_, subscript_, {}, out) ? PieceStatus::Exact : PieceStatus::Approximate;
    }
    return enumerate(general, out);
  }

 private:
  void collect_slots() {
    auto add = [&](Var v) {
      for (const Slot& s : slots_) {
        if (s.var == v) return;
      }
      Slot s{v, 0, 0};
      switch (v.kind) {
        case Var::Kind::GroupId:
          s.lo = to_i64(groups_.begin[v.index], "group index too large");
          s.hi = to_i64(groups_.end[v.index], "group index too large") - 1;
          break;
        case Var::Kind::LocalId:
          s.lo = 0;
          s.hi = to_i64(range_.local[v.index], "local size too large") - 1;
          break;
        case Var::Kind::Loop:
          s.lo = 0;
          s.hi = kUnbounded;
          break;
      }
      slots_.push_back(s);
    };
    for (const auto& [v, c] : piece_.byte_offset.coefficients) add(v);
    for (const Constraint& k : piece_.constraints) {
      for (const auto& [v, c] : k.expr.coefficients) add(v);
    }
  }

  IntExpr to_int(const AffineExpr& e) const {
    IntExpr r;
    r.constant = evaluate(e.constant, values_);
    r.coef.assign(slots_.size(), 0);
    for (const auto& [v, c] : e.coefficients) {
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].var == v) r.coef[i] = evaluate(c, values_);
      }
    }
    return r;
  }

  /// Where group id and local id of a dimension only occur as global id (coefficient of w is the
  /// local size times that of l), replace the pair by one variable over the global index range:
  /// a boundary test on the global id then becomes a bound of one variable (rectangular).
  void merge_global_ids() {
    for (std::uint32_t d = 0; d < 3; ++d) {
      int w = -1;
      int l = -1;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].var == Var{Var::Kind::GroupId, d}) w = static_cast<int>(i);
        if (slots_[i].var == Var{Var::Kind::LocalId, d}) l = static_cast<int>(i);
      }
      if (w < 0 || l < 0) continue;
      const std::int64_t ls = static_cast<std::int64_t>(range_.local[d]);
      auto mergeable = [&](const IntExpr& e) {
        Int128 expect = static_cast<Int128>(e.coef[l]) * ls;
        return expect == e.coef[w];
      };
      bool ok = mergeable(subscript_);
      for (const IntConstraint& c : constraints_) ok = ok && mergeable(c.e);
      if (!ok) continue;
      const Int128 lo = static_cast<Int128>(slots_[w].lo) * ls;
      const Int128 hi = static_cast<Int128>(slots_[w].hi) * ls + (ls - 1);
      UNIMEM_REQUIRE(hi < std::numeric_limits<std::int64_t>::max(), "global index too large");
      slots_[l].lo = static_cast<std::int64_t>(lo);
      slots_[l].hi = static_cast<std::int64_t>(hi);
      slots_[w].lo = 0;
      slots_[w].hi = 0;
      subscript_.coef[w] = 0;
      for (IntConstraint& c : constraints_) c.e.coef[w] = 0;
    }
  }

  /// A loop variable absent from the subscript only needs to exist. If every constraint on it is
  /// a lower bound (and it has no upper one), a large enough value satisfies them all: drop them.
  /// If every one is an upper bound, its smallest value (0) is the best witness: substitute it.
  /// (Typical: the exit test of a loop guarding a reference after the loop.)
  void eliminate_one_sided_existentials() {
    for (std::size_t v = 0; v < slots_.size(); ++v) {
      if (slots_[v].var.kind != Var::Kind::Loop || subscript_.coef[v] != 0) continue;
      bool lower_only = slots_[v].hi == kUnbounded;
      bool upper_only = true;
      bool any = false;
      for (const IntConstraint& c : constraints_) {
        const std::int64_t a = c.e.coef[v];
        if (a == 0) continue;
        any = true;
        if (c.rel != Constraint::Relation::GreaterEqualZero) {
          lower_only = upper_only = false;
          break;
        }
        lower_only = lower_only && a > 0;
        upper_only = upper_only && a < 0;
      }
      if (!any) continue;
      if (lower_only) {
        std::erase_if(constraints_, [v](const IntConstraint& c) { return c.e.coef[v] != 0; });
      } else if (upper_only) {
        for (IntConstraint& c : constraints_) {
          c.e.constant += c.e.coef[v] * slots_[v].lo;
          c.e.coef[v] = 0;
        }
      }
    }
  }

  static int single_var(const IntExpr& e) {
    int v = -1;
    for (std::size_t i = 0; i < e.coef.size(); ++i) {
      if (e.coef[i] == 0) continue;
      if (v >= 0) return -2;
      v = static_cast<int>(i);
    }
    return v;
  }

  /// A constraint that tightening has fully absorbed into bounds.
  static bool is_settled(const IntConstraint& c, const std::vector<Slot>& slots) {
    const int v = single_var(c.e);
    if (v == -1) return true;
    if (v == -2) return false;
    if (c.rel != Constraint::Relation::NotEqualZero) return true;
    // x != k with k strictly inside the range still splits it.
    const std::int64_t a = c.e.coef[v];
    if ((-c.e.constant) % a != 0) return true;
    const std::int64_t k = -c.e.constant / a;
    return k < slots[v].lo || k > slots[v].hi;
  }

  /// Tightens bounds with every single-variable constraint until nothing changes; false if the
  /// domain is empty.
  static bool tighten(std::vector<Slot>& slots, const std::vector<IntConstraint>& constraints) {
    for (std::size_t round = 0; round <= 2 * constraints.size() + 2; ++round) {
      bool changed = false;
      for (const IntConstraint& c : constraints) {
        const int v = single_var(c.e);
        if (v == -2) {
          changed = propagate(slots, c) || changed;
          if (!feasible(slots)) return false;
          continue;
        }
        if (v == -1) {
          const std::int64_t k = c.e.constant;
          const bool truth = c.rel == Constraint::Relation::GreaterEqualZero ? k >= 0
                             : c.rel == Constraint::Relation::EqualZero      ? k == 0
                                                                             : k != 0;
          if (!truth) return false;
          continue;
        }
        Slot& s = slots[v];
        const std::int64_t a = c.e.coef[v];
        const std::int64_t k = c.e.constant;
        std::int64_t lo = s.lo;
        std::int64_t hi = s.hi;
        if (c.rel == Constraint::Relation::GreaterEqualZero) {
          if (a > 0) {
            lo = std::max(lo, ceil_div(-k, a));
          } else {
            hi = std::min(hi, floor_div(k, -a));
          }
        } else if (c.rel == Constraint::Relation::EqualZero) {
          if ((-k) % a != 0) return false;
          lo = std::max(lo, -k / a);
          hi = std::min(hi, -k / a);
        } else {
          if ((-k) % a == 0) {
            const std::int64_t x = -k / a;
            if (x == lo) ++lo;
            if (x == hi && hi != kUnbounded) --hi;
          }
        }
        if (lo > hi) return false;
        if (lo != s.lo || hi != s.hi) {
          s.lo = lo;
          s.hi = hi;
          changed = true;
        }
      }
      if (!changed) return true;
    }
    return true;
  }

  static bool feasible(const std::vector<Slot>& slots) {
    for (const Slot& s : slots) {
      if (s.lo > s.hi) return false;
    }
    return true;
  }

  /// Interval bound propagation through a constraint over several variables: each variable is
  /// bounded by the extreme values of the others (a sound bounding box of the coupled domain).
  static bool propagate(std::vector<Slot>& slots, const IntConstraint& c) {
    if (c.rel == Constraint::Relation::NotEqualZero) return false;
    bool changed = false;
    for (int sign : {1, -1}) {
      if (sign == -1 && c.rel != Constraint::Relation::EqualZero) break;
      // sign * e >= 0
      for (std::size_t v = 0; v < slots.size(); ++v) {
        const Int128 av = static_cast<Int128>(sign) * c.e.coef[v];
        if (av == 0) continue;
        Int128 rest_max = static_cast<Int128>(sign) * c.e.constant;
        bool finite = true;
        for (std::size_t i = 0; i < slots.size() && finite; ++i) {
          const Int128 ai = static_cast<Int128>(sign) * c.e.coef[i];
          if (i == v || ai == 0) continue;
          const std::int64_t x = ai > 0 ? slots[i].hi : slots[i].lo;
          if (x == kUnbounded) {
            finite = false;
            break;
          }
          rest_max += ai * x;
        }
        if (!finite) continue;
        if (rest_max > std::numeric_limits<std::int64_t>::max() / 2 ||
            rest_max < std::numeric_limits<std::int64_t>::min() / 2) {
          continue;
        }
        const std::int64_t r = static_cast<std::int64_t>(rest_max);
        // av * x + r >= 0
        if (av > 0) {
          const std::int64_t lo = ceil_div(-r, static_cast<std::int64_t>(av));
          if (lo > slots[v].lo) {
            slots[v].lo = lo;
            changed = true;
          }
        } else {
          const std::int64_t hi = floor_div(r, static_cast<std::int64_t>(-av));
          if (hi < slots[v].hi) {
            slots[v].hi = hi;
            changed = true;
          }
        }
      }
    }
    return changed;
  }

  bool emit_box(const std::vector<Slot>& slots, const IntExpr& subscript,
                const std::vector<std::pair<std::int64_t, std::int64_t>>& free_var_holes,
                std::vector<Interval>& out) {
    (void)free_var_holes;
    std::vector<detail::BoxTerm> terms;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (subscript.coef[i] == 0) continue;
      terms.push_back({subscript.coef[i], slots[i].lo, slots[i].hi});
    }
    return detail::box_ranges(subscript.constant, std::move(terms), piece_.width,
                              kMaxIntervalsPerPiece, out);
  }

  /// Coupled constraints: enumerate every coupled variable but one (the one with the widest range)
  /// and, for each point, bound the remaining one and generate the rest as a box.
  PieceStatus enumerate(const std::vector<IntConstraint>& general, std::vector<Interval>& out) {
    std::vector<std::size_t> coupled;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      for (const IntConstraint& c : general) {
        if (c.e.coef[i] != 0) {
          coupled.push_back(i);
          break;
        }
      }
    }
    // Keep free the variable along which the subscript is densest (smallest stride, then widest
    // range): each enumerated point then yields one contiguous run instead of one per value.
    auto better = [&](std::size_t a, std::size_t b) {
      const std::int64_t ca = subscript_.coef[a] < 0 ? -subscript_.coef[a] : subscript_.coef[a];
      const std::int64_t cb = subscript_.coef[b] < 0 ? -subscript_.coef[b] : subscript_.coef[b];
      if ((ca != 0) != (cb != 0)) return ca != 0;
      if (ca != cb) return ca < cb;
      return slots_[a].hi - slots_[a].lo > slots_[b].hi - slots_[b].lo;
    };
    std::size_t free_var = coupled.front();
    for (std::size_t i : coupled) {
      if (better(i, free_var)) free_var = i;
    }
    std::vector<std::size_t> enumerated;
    Int128 points = 1;
    for (std::size_t i : coupled) {
      if (i == free_var) continue;
      enumerated.push_back(i);
      points *= static_cast<Int128>(slots_[i].hi) - slots_[i].lo + 1;
    }
    if (points > static_cast<Int128>(kMaxEnumeratedPoints)) {
      // Too many points: drop the coupled constraints (a superset of the exact set).
      emit_box(slots_, subscript_, {}, out);
      return PieceStatus::Approximate;
    }
    bool exact = true;
    std::vector<std::int64_t> point(enumerated.size());
    for (std::size_t k = 0; k < enumerated.size(); ++k) point[k] = slots_[enumerated[k]].lo;
    for (;;) {
      std::vector<Slot> slots = slots_;
      IntExpr sub = subscript_;
      std::vector<IntConstraint> cons = general;
      for (std::size_t k = 0; k < enumerated.size(); ++k) {
        const std::size_t i = enumerated[k];
        slots[i].lo = slots[i].hi = point[k];
        sub.constant += sub.coef[i] * point[k];
        sub.coef[i] = 0;
        for (IntConstraint& c : cons) {
          c.e.constant += c.e.coef[i] * point[k];
          c.e.coef[i] = 0;
        }
      }
      if (tighten(slots, cons)) {
        // Remaining != constraints on the free variable split its range.
        std::vector<std::int64_t> holes;
        for (const IntConstraint& c : cons) {
          if (c.rel != Constraint::Relation::NotEqualZero) continue;
          const std::int64_t a = c.e.coef[free_var];
          if (a != 0 && (-c.e.constant) % a == 0) holes.push_back(-c.e.constant / a);
        }
        std::sort(holes.begin(), holes.end());
        if (slots[free_var].hi == kUnbounded && sub.coef[free_var] != 0)
          return PieceStatus::Unbounded;
        std::int64_t lo = slots[free_var].lo;
        const std::int64_t hi = slots[free_var].hi;
        for (std::size_t h = 0; h <= holes.size(); ++h) {
          const std::int64_t end = h < holes.size() ? holes[h] - 1 : hi;
          if (h < holes.size() && (holes[h] < lo || holes[h] > hi)) continue;
          if (lo <= end) {
            std::vector<Slot> part = slots;
            part[free_var].lo = lo;
            part[free_var].hi = end;
            exact = emit_box(part, sub, {}, out) && exact;
          }
          if (h < holes.size()) lo = holes[h] + 1;
        }
      }
      std::size_t k = 0;
      for (; k < enumerated.size(); ++k) {
        if (point[k] < slots_[enumerated[k]].hi) {
          ++point[k];
          break;
        }
        point[k] = slots_[enumerated[k]].lo;
      }
      if (k == enumerated.size()) break;
    }
    return exact ? PieceStatus::Exact : PieceStatus::Approximate;
  }

  const AccessPiece& piece_;
  const ParamValues& values_;
  const NDRange& range_;
  const GroupBox& groups_;
  std::vector<Slot> slots_;
  IntExpr subscript_;
  std::vector<IntConstraint> constraints_;
};

ParamValues param_values(const KernelAccessInfo& kernel, const NDRange& range,
                         const LaunchArguments& args) {
  ParamValues v;
  v.scalar_args = args.scalars;
  v.scalar_args.resize(kernel.args.size());
  v.scalar_arg_names.resize(kernel.args.size());
  for (const ArgumentAccess& a : kernel.args) v.scalar_arg_names[a.index] = a.name;
  const std::array<std::uint64_t, 3> groups = num_groups(range);
  for (std::size_t d = 0; d < 3; ++d) {
    v.local_size[d] = to_i64(range.local[d], "local size too large");
    v.global_size[d] = to_i64(range.global[d], "global size too large");
    v.global_offset[d] = to_i64(range.offset[d], "global offset too large");
    v.num_groups[d] = to_i64(groups[d], "group count too large");
  }
  return v;
}

}  // namespace

void validate_for_analysis(const NDRange& range) {
  UNIMEM_REQUIRE(range.dims >= 1 && range.dims <= 3, "NDRange: work dimension must be 1, 2 or 3");
  for (std::size_t d = 0; d < 3; ++d) {
    if (d >= range.dims) {
      UNIMEM_REQUIRE(range.global[d] == 1 && range.local[d] <= 1 && range.offset[d] == 0,
                     "NDRange: sizes beyond the work dimension must be 1 (offset 0)");
      continue;
    }
    UNIMEM_REQUIRE(range.global[d] > 0, "NDRange: global sizes must be positive");
    UNIMEM_REQUIRE(range.local[d] > 0,
                   "NDRange: the analysis needs a concrete local size (local 0 = driver chooses)");
    UNIMEM_REQUIRE(range.global[d] % range.local[d] == 0,
                   "NDRange: local size must divide global size");
  }
}

std::array<std::uint64_t, 3> num_groups(const NDRange& range) {
  std::array<std::uint64_t, 3> groups{1, 1, 1};
  for (std::size_t d = 0; d < range.dims && d < 3; ++d)
    groups[d] = range.global[d] / range.local[d];
  return groups;
}

GroupBox GroupBox::all(const NDRange& range) {
  GroupBox b;
  b.end = num_groups(range);
  return b;
}

bool GroupBox::empty() const {
  return begin[0] >= end[0] || begin[1] >= end[1] || begin[2] >= end[2];
}

void LaunchArguments::set_scalar(std::uint32_t index, std::int64_t value) {
  if (scalars.size() <= index) scalars.resize(index + 1);
  scalars[index] = value;
}

void LaunchArguments::set_buffer_size(std::uint32_t index, std::uint64_t bytes) {
  if (buffer_sizes.size() <= index) buffer_sizes.resize(index + 1);
  buffer_sizes[index] = bytes;
}

const ArgumentRanges* LaunchRanges::find(const std::string& arg_name) const {
  for (const ArgumentRanges& a : args) {
    if (a.name == arg_name) return &a;
  }
  return nullptr;
}

RangeGenerator::RangeGenerator(KernelAccessInfo kernel) : kernel_(std::move(kernel)) {}

LaunchRanges RangeGenerator::ranges(const NDRange& range, const GroupBox& groups,
                                    const LaunchArguments& args) const {
  validate_for_analysis(range);
  const std::array<std::uint64_t, 3> total = num_groups(range);
  for (std::size_t d = 0; d < 3; ++d) {
    UNIMEM_REQUIRE(groups.begin[d] <= groups.end[d] && groups.end[d] <= total[d],
                   "group box outside the NDRange");
  }
  const ParamValues values = param_values(kernel_, range, args);
  LaunchRanges result;
  result.kernel = kernel_.name;
  result.splittable = kernel_.statically_splittable;
  result.unsplittable_reason = kernel_.unsplittable_reason;
  for (const ArgumentAccess& arg : kernel_.args) {
    if (!arg.is_buffer()) continue;
    ArgumentRanges out;
    out.index = arg.index;
    out.name = arg.name;
    const std::optional<std::uint64_t> size =
        arg.index < args.buffer_sizes.size() ? args.buffer_sizes[arg.index] : std::nullopt;
    auto whole_buffer = [&](std::vector<Interval>& v, const std::string& why) {
      if (!size) {
        throw PreconditionError("kernel '" + kernel_.name + "': the size of buffer argument '" +
                                arg.name + "' is needed (" + why + ")");
      }
      v.emplace_back(0, *size);
    };
    for (int pass = 0; pass < 2; ++pass) {
      const bool is_write = pass == 1;
      const std::vector<AccessPiece>& pieces = is_write ? arg.writes : arg.reads;
      std::vector<Interval> intervals;
      bool exact = true;
      bool conditional = false;
      if (!groups.empty()) {
        for (const AccessPiece& p : pieces) {
          if (!is_affine(p.access_class)) {
            whole_buffer(intervals,
                         std::string(to_string(p.access_class)) + " reference: " + p.reason);
            exact = false;
            conditional = true;
            continue;
          }
          PieceEvaluator eval(p, values, range, groups);
          const PieceStatus st = eval.run(intervals);
          if (st == PieceStatus::Unbounded) {
            whole_buffer(intervals, "a loop without a computable bound");
            exact = false;
            conditional = true;
            if (is_write) {
              result.splittable = false;
              result.unsplittable_reason =
                  "argument '" + arg.name + "' is written in a loop without a computable bound";
            }
            continue;
          }
          if (st == PieceStatus::Approximate) exact = false;
          if (p.conditions_dropped) {
            // A read is then a superset; a write is a may-write set (fetched first, DESIGN.md
            // invariant 6) that is still exact as such: it stays splittable.
            if (!is_write) exact = false;
            conditional = true;
          }
        }
      }
      IntervalSet set = IntervalSet::from_unsorted(std::move(intervals));
      if (size) set = set.intersect(Interval{0, *size});
      if (is_write) {
        out.write = std::move(set);
        out.write_exact = exact;
        out.write_conditional = conditional;
        if (!exact && result.splittable) {
          // An over-approximated must-write would lose data on a split launch.
          result.splittable = false;
          result.unsplittable_reason = "the write set of '" + arg.name + "' is not exact";
        }
      } else {
        out.read = std::move(set);
        out.read_exact = exact;
      }
    }
    result.args.push_back(std::move(out));
  }
  return result;
}

bool RangeGenerator::splittable(const NDRange& range, const LaunchArguments& args,
                                std::string* reason) const {
  validate_for_analysis(range);
  if (!kernel_.statically_splittable) {
    if (reason != nullptr) *reason = kernel_.unsplittable_reason;
    return false;
  }
  const ParamValues values = param_values(kernel_, range, args);
  std::string key;
  for (std::size_t d = 0; d < 3; ++d) {
    key += std::to_string(range.global[d]) + "," + std::to_string(range.local[d]) + "," +
           std::to_string(range.offset[d]) + ";";
  }
  for (const auto& s : values.scalar_args) key += s ? std::to_string(*s) + "," : "-,";
  {
    std::lock_guard lock(mutex_);
    auto it = injectivity_cache_.find(key);
    if (it != injectivity_cache_.end()) {
      if (reason != nullptr) *reason = it->second.second;
      return it->second.first;
    }
  }
  std::string why;
  const bool ok = writes_injective_over_groups(kernel_, range, values, &why);
  std::lock_guard lock(mutex_);
  injectivity_cache_[key] = {ok, why};
  if (reason != nullptr) *reason = why;
  return ok;
}

namespace detail {

bool box_ranges(std::int64_t constant, std::vector<BoxTerm> terms, std::uint64_t width,
                std::uint64_t max_intervals, std::vector<Interval>& out) {
  UNIMEM_REQUIRE(width > 0, "box_ranges: width must be positive");
  // Normalise: positive coefficients over ranges starting at 0.
  Int128 base = constant;
  std::vector<BoxTerm> norm;
  for (const BoxTerm& t : terms) {
    if (t.lower > t.upper) return true;  // empty domain
    if (t.coefficient == 0 || t.lower == t.upper) {
      base += static_cast<Int128>(t.coefficient) * t.lower;
      continue;
    }
    if (t.coefficient > 0) {
      base += static_cast<Int128>(t.coefficient) * t.lower;
      norm.push_back({t.coefficient, 0, t.upper - t.lower});
    } else {
      base += static_cast<Int128>(t.coefficient) * t.upper;
      norm.push_back({-t.coefficient, 0, t.upper - t.lower});
    }
  }
  std::sort(norm.begin(), norm.end(),
            [](const BoxTerm& a, const BoxTerm& b) { return a.coefficient < b.coefficient; });
  // Fig. 10 lines 4-7: absorb dimensions whose stride does not exceed the contiguous run.
  Int128 size = static_cast<Int128>(width);
  std::size_t k = 0;
  while (k < norm.size() && norm[k].coefficient <= size) {
    size += static_cast<Int128>(norm[k].coefficient) * norm[k].upper;
    ++k;
  }
  // Fig. 10 line 8: enumerate the remaining dimensions.
  Int128 count = 1;
  Int128 span = 0;
  for (std::size_t i = k; i < norm.size(); ++i) {
    count *= static_cast<Int128>(norm[i].upper) + 1;
    span += static_cast<Int128>(norm[i].coefficient) * norm[i].upper;
    if (count > static_cast<Int128>(max_intervals)) break;
  }
  auto push = [&out](Int128 b, Int128 e) {
    if (e <= 0) return;
    if (b < 0) b = 0;
    UNIMEM_REQUIRE(e <= static_cast<Int128>(std::numeric_limits<std::uint64_t>::max()),
                   "access range beyond 64-bit offsets");
    out.emplace_back(static_cast<std::uint64_t>(b), static_cast<std::uint64_t>(e));
  };
  if (count > static_cast<Int128>(max_intervals)) {
    span = 0;
    for (std::size_t i = k; i < norm.size(); ++i) {
      span += static_cast<Int128>(norm[i].coefficient) * norm[i].upper;
    }
    push(base, base + span + size);
    return false;
  }
  std::vector<std::int64_t> idx(norm.size() - k, 0);
  Int128 pos = 0;
  for (;;) {
    push(base + pos, base + pos + size);
    std::size_t j = 0;
    for (; j < idx.size(); ++j) {
      const BoxTerm& t = norm[k + j];
      if (idx[j] < t.upper) {
        ++idx[j];
        pos += t.coefficient;
        break;
      }
      pos -= static_cast<Int128>(t.coefficient) * idx[j];
      idx[j] = 0;
    }
    if (j == idx.size()) break;
  }
  return true;
}

}  // namespace detail

}  // namespace unimem
