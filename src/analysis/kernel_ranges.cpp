#include "analysis/kernel_ranges.hpp"

#include <limits>
#include <new>
#include <set>
#include <utility>

#include "analysis/launch_injectivity.hpp"
#include "analysis/piece_evaluator.hpp"
#include "common/check.hpp"
#include "region/affine_box_union.hpp"

namespace unimem {

namespace {

// Work bound per piece: intervals emitted by the fast generator. Beyond it the piece is
// over-approximated (and flagged inexact).
constexpr std::uint64_t kMaxIntervalsPerPiece = std::uint64_t{1} << 20;

std::int64_t to_i64(std::uint64_t v, const char* what) {
  UNIMEM_REQUIRE(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), what);
  return static_cast<std::int64_t>(v);
}

/// The name of each argument by index (ParamValues::scalar_arg_names).
std::vector<std::string> argument_names(const KernelAccessInfo& kernel) {
  std::vector<std::string> names(kernel.args.size());
  for (const ArgumentAccess& a : kernel.args) names[a.index] = a.name;
  return names;
}

/// names: argument_names(kernel), which the values refer to.
ParamValues param_values(const KernelAccessInfo& kernel, std::span<const std::string> names,
                         const NDRange& range, const LaunchArguments& args) {
  ParamValues v;
  v.scalar_args = args.scalars;
  v.scalar_args.resize(kernel.args.size());
  v.scalar_arg_names = names;
  const std::array<std::uint64_t, 3> groups = num_groups(range);
  for (std::size_t d = 0; d < 3; ++d) {
    v.local_size[d] = to_i64(range.local[d], "local size too large");
    v.global_size[d] = to_i64(range.global[d], "global size too large");
    v.global_offset[d] = to_i64(range.offset[d], "global offset too large");
    v.num_groups[d] = to_i64(groups[d], "group count too large");
  }
  return v;
}

/// The scalar argument indices that some write piece's byte offset or guard reads, ascending.
std::vector<std::uint32_t> scalars_in_writes(const KernelAccessInfo& kernel) {
  std::set<std::uint32_t> used;
  const auto see_poly = [&used](const ParamPoly& p) {
    for (const auto& [monomial, c] : p.terms()) {
      for (const Param& q : monomial) {
        if (q.kind == Param::Kind::scalar_arg) used.insert(q.index);
      }
    }
  };
  const auto see = [&see_poly](const AffineExpr& e) {
    see_poly(e.constant);
    for (const auto& [v, c] : e.coefficients) see_poly(c);
  };
  for (const ArgumentAccess& arg : kernel.args) {
    for (const AccessPiece& p : arg.writes) {
      see(p.byte_offset);
      for (const Constraint& c : p.constraints) see(c.expr);
    }
  }
  return {used.begin(), used.end()};
}

std::optional<std::int64_t> scalar_value(const LaunchArguments& args, std::uint32_t index) {
  return index < args.scalars.size() ? args.scalars[index] : std::nullopt;
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

Box<3> all_groups(const NDRange& range) {
  const std::array<std::uint64_t, 3> n = num_groups(range);
  return Box<3>({0, 0, 0},
                {to_i64(n[0], "group count too large"), to_i64(n[1], "group count too large"),
                 to_i64(n[2], "group count too large")});
}

void LaunchArguments::set_scalar(std::uint32_t index, std::int64_t value) {
  if (scalars.size() <= index) scalars.resize(index + 1);
  scalars[index] = value;
}

void LaunchArguments::set_buffer_size(std::uint32_t index, std::uint64_t bytes) {
  if (buffer_sizes.size() <= index) buffer_sizes.resize(index + 1);
  buffer_sizes[index] = bytes;
}

namespace {

// ArgumentRanges::access_bytes, copying the sets out of a const range or moving them out of an
// expiring one. A write that is a superset or conditional goes to may_writes: fetched first.
template <typename Set>
AccessBytes access_bytes_of(bool exact_write, Set&& read, Set&& write) {
  AccessBytes b;
  b.reads = std::forward<Set>(read);
  (exact_write ? b.writes : b.may_writes) = std::forward<Set>(write);
  return b;
}

}  // namespace

AccessBytes ArgumentRanges::access_bytes() const& {
  return access_bytes_of(write_exact && !write_conditional, read, write);
}

AccessBytes ArgumentRanges::access_bytes() && {
  return access_bytes_of(write_exact && !write_conditional, std::move(read), std::move(write));
}

const ArgumentRanges* LaunchRanges::find(const std::string& arg_name) const {
  for (const ArgumentRanges& a : args) {
    if (a.name == arg_name) return &a;
  }
  return nullptr;
}

// What ranges() works in; it holds nothing from one call to the next (each use clears it).
struct KernelRangeGenerator::Scratch {
  AffineBoxUnion boxes;
  PieceScratch pieces;
};

KernelRangeGenerator::~KernelRangeGenerator() = default;

KernelRangeGenerator::KernelRangeGenerator(KernelAccessInfo kernel)
    : kernel_(std::move(kernel)),
      argument_names_(argument_names(kernel_)),
      write_scalars_(scalars_in_writes(kernel_)) {}

bool KernelRangeGenerator::same_launch(const LastVerdict& last, const NDRange& range,
                                       const LaunchArguments& args) const {
  if (last.range.dims != range.dims || last.range.offset != range.offset ||
      last.range.global != range.global || last.range.local != range.local) {
    return false;
  }
  for (std::size_t i = 0; i < write_scalars_.size(); ++i) {
    if (last.write_scalar_values[i] != scalar_value(args, write_scalars_[i])) return false;
  }
  return true;
}

void KernelRangeGenerator::remember(const NDRange& range, const LaunchArguments& args,
                                    bool injective, const std::string& reason) const {
  // (Assigned, not emplace()d: clang 15 decides LastVerdict is not default-constructible when
  // optional<LastVerdict> is instantiated inside the class, before its initializers are parsed.)
  if (!last_verdict_) last_verdict_ = LastVerdict{};
  LastVerdict& last = *last_verdict_;  // assigned in place: its storage is reused
  last.range = range;
  last.write_scalar_values.resize(write_scalars_.size());
  for (std::size_t i = 0; i < write_scalars_.size(); ++i) {
    last.write_scalar_values[i] = scalar_value(args, write_scalars_[i]);
  }
  last.injective = injective;
  last.reason = reason;
}

std::size_t KernelRangeGenerator::launch_time_checks() const {
  std::lock_guard lock(mutex_);
  return launch_time_checks_;
}

LaunchRanges KernelRangeGenerator::ranges(const NDRange& range, const Box<3>& groups,
                                          const LaunchArguments& args) const {
  validate_for_analysis(range);
  const std::array<std::uint64_t, 3> total = num_groups(range);
  for (std::size_t d = 0; d < 3 && !groups.empty(); ++d) {
    UNIMEM_REQUIRE(groups.min()[d] >= 0 && static_cast<std::uint64_t>(groups.max()[d]) <= total[d],
                   "group box outside the NDRange");
  }
  const ParamValues values = param_values(kernel_, argument_names_, range, args);
  LaunchRanges result;
  result.kernel = kernel_.name;
  result.splittable = kernel_.statically_splittable;
  result.unsplittable_reason = kernel_.unsplittable_reason;
  // A scratch from the pool (or a new one), given back when the call ends, thrown or not.
  std::unique_ptr<Scratch> lent;
  {
    std::lock_guard lock(mutex_);
    if (!scratch_pool_.empty()) {
      lent = std::move(scratch_pool_.back());
      scratch_pool_.pop_back();
    }
  }
  if (!lent) lent = std::make_unique<Scratch>();
  struct GiveBack {
    const KernelRangeGenerator& generator;
    std::unique_ptr<Scratch>& scratch;
    ~GiveBack() {
      std::lock_guard lock(generator.mutex_);
      try {
        generator.scratch_pool_.push_back(std::move(scratch));
      } catch (const std::bad_alloc&) {  // not kept: the next call makes another
      }
    }
  } give_back{*this, lent};
  AffineBoxUnion& boxes = lent->boxes;
  PieceScratch& scratch = lent->pieces;
  result.args.reserve(kernel_.args.size());
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
      boxes.clear();
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
          const PieceStatus st = evaluate_piece(p, values, range, groups, boxes, scratch);
          if (st == PieceStatus::unbounded) {
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
          if (st == PieceStatus::approximate) exact = false;
          if (p.conditions_dropped) {
            // A read is then a superset; a write is a may-write set (fetched first, DESIGN.md
            // invariant 6) that is still exact as such: it stays splittable.
            if (!is_write) exact = false;
            conditional = true;
          }
        }
      }
      IntervalSet set = boxes.bytes(kMaxIntervalsPerPiece, exact);
      if (!intervals.empty()) set = set.unite(IntervalSet::from_unsorted(std::move(intervals)));
      if (size && !set.empty() && set.bounds().end > *size) set = set.intersect(Interval{0, *size});
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

bool KernelRangeGenerator::splittable(const NDRange& range, const LaunchArguments& args,
                                      std::string* reason) const {
  validate_for_analysis(range);
  if (!kernel_.statically_splittable) {
    if (reason != nullptr) *reason = kernel_.unsplittable_reason;
    return false;
  }
  // Decided at analysis time for every launch (parametric isl check,
  // analysis/isl/write_injectivity.hpp).
  const std::array<std::uint64_t, 3> groups = num_groups(range);
  bool covered = true;  // the launch is one the analysis-time verdict covers
  for (std::uint32_t d = kernel_.write_injectivity_dims; d < 3; ++d)
    covered = covered && groups[d] == 1;
  switch (covered ? kernel_.write_injectivity : WriteInjectivity::parametric) {
    case WriteInjectivity::injective:
      if (reason != nullptr) reason->clear();
      return true;
    case WriteInjectivity::not_injective:
      if (groups[0] * groups[1] * groups[2] >= 2) {
        if (reason != nullptr) *reason = kernel_.write_injectivity_reason;
        return false;
      }
      if (reason != nullptr) reason->clear();
      return true;  // a single work-group cannot collide with another
    case WriteInjectivity::parametric:
      break;
  }
  {
    // The last launch decided, when this one equals it in all its key reads (LastVerdict).
    std::lock_guard lock(mutex_);
    if (last_verdict_ && same_launch(*last_verdict_, range, args)) {
      if (reason != nullptr) *reason = last_verdict_->reason;
      return last_verdict_->injective;
    }
  }
  const ParamValues values = param_values(kernel_, argument_names_, range, args);
  // Keyed by what the check reads (the write maps after substitution), not by every launch
  // parameter: launches that differ only in scalars no write uses share one isl check.
  const std::string key = injectivity_key(kernel_, range, values);
  {
    std::lock_guard lock(mutex_);
    auto it = injectivity_cache_.find(key);
    if (it != injectivity_cache_.end()) {
      remember(range, args, it->second.first, it->second.second);
      if (reason != nullptr) *reason = it->second.second;
      return it->second.first;
    }
  }
  std::string why;
  const bool ok = writes_injective_over_groups(kernel_, range, values, &why);
  std::lock_guard lock(mutex_);
  injectivity_cache_[key] = {ok, why};
  remember(range, args, ok, why);
  ++launch_time_checks_;
  if (reason != nullptr) *reason = why;
  return ok;
}

}  // namespace unimem
