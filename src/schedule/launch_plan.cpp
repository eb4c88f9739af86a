#include "schedule/launch_plan.hpp"

#include <algorithm>
#include <limits>

#include "common/check.hpp"
#include "region/range_generator.hpp"

namespace unimem {

namespace {

std::string arg_text(const std::string& kernel, std::uint32_t arg) {
  return "kernel '" + kernel + "' argument " + std::to_string(arg);
}

// The bytes of one affine piece over the work-items of slice; exact == false when the enumeration
// bound was hit (the result then covers more).
GeneratedRanges piece_bytes(const std::string& kernel, std::uint32_t arg, const AffinePiece& piece,
                            const NDRange& slice, std::uint64_t max_intervals) {
  if (piece.element_size == 0) throw PreconditionError(arg_text(kernel, arg) + ": element size 0");
  AffineAccess access;
  access.constant = piece.constant;
  for (const SubscriptTerm& t : piece.terms) {
    std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    if (t.var.kind == IndexVar::Kind::global_id) {
      if (t.var.index >= slice.dims) {
        throw PreconditionError(arg_text(kernel, arg) + ": subscript uses global id " +
                                std::to_string(t.var.index) + " of a " +
                                std::to_string(slice.dims) + "-D range");
      }
      lo = static_cast<std::int64_t>(slice.offset[t.var.index]);
      hi = lo + static_cast<std::int64_t>(slice.global[t.var.index]) - 1;
    }
    bool loop_bounded = t.var.kind == IndexVar::Kind::global_id;
    for (const VarBound& b : piece.bounds) {
      if (b.var == t.var) {
        lo = std::max(lo, b.lower);
        hi = std::min(hi, b.upper);
        loop_bounded = true;
      }
    }
    if (!loop_bounded) {
      throw PreconditionError(arg_text(kernel, arg) + ": loop variable " +
                              std::to_string(t.var.index) + " of piece " + piece.to_string() +
                              " has no bounds");
    }
    if (hi < lo) return {};  // empty domain: no bytes
    access.terms.push_back({t.coefficient, lo, hi});
  }
  // Bounds on variables the subscript does not use still restrict the domain (e.g. a guard on a
  // global id): an empty one means no bytes.
  for (const VarBound& b : piece.bounds) {
    const bool used = std::any_of(piece.terms.begin(), piece.terms.end(),
                                  [&](const SubscriptTerm& t) { return t.var == b.var; });
    if (used) continue;
    std::int64_t lo = b.lower;
    std::int64_t hi = b.upper;
    if (b.var.kind == IndexVar::Kind::global_id && b.var.index < slice.dims) {
      lo = std::max(lo, static_cast<std::int64_t>(slice.offset[b.var.index]));
      hi = std::min(
          hi, static_cast<std::int64_t>(slice.offset[b.var.index] + slice.global[b.var.index]) - 1);
    }
    if (hi < lo) return {};
  }
  try {
    return generate_ranges(access, piece.element_size, max_intervals);
  } catch (const PreconditionError& e) {
    throw PreconditionError(arg_text(kernel, arg) + ", piece " + piece.to_string() + ": " +
                            e.what());
  }
}

}  // namespace

AccessBytes partition_bytes(const std::string& kernel, const KernelAccess& accesses,
                            std::uint32_t arg, std::uint64_t buffer_size, const NDRange& slice,
                            std::uint64_t max_intervals) {
  AccessBytes out;
  const IntervalSet whole(Interval{0, buffer_size});
  bool described = false;
  for (const AccessDescriptor& d : accesses) {
    if (d.arg != arg) continue;
    described = true;
    IntervalSet bytes;
    bool exact = true;
    if (d.is_whole()) {
      bytes = whole;
      // A whole-buffer write is not known to write every byte: fetch first (may-write).
      exact = false;
    } else {
      for (const AffinePiece& p : std::get<std::vector<AffinePiece>>(d.pattern)) {
        GeneratedRanges r = piece_bytes(kernel, arg, p, slice, max_intervals);
        bytes = bytes.unite(r.bytes);
        exact = exact && r.exact;
      }
    }
    switch (d.mode) {
      case AccessMode::read:
        out.reads = out.reads.unite(bytes);
        break;
      case AccessMode::read_write:
        out.reads = out.reads.unite(bytes);
        [[fallthrough]];
      case AccessMode::write:
        // An inexact write set is a superset: only a may-write is safe.
        if (exact) {
          out.writes = out.writes.unite(bytes);
        } else {
          out.may_writes = out.may_writes.unite(bytes);
        }
        break;
      case AccessMode::may_write:
        out.may_writes = out.may_writes.unite(bytes);
        break;
    }
  }
  if (!described) out.may_writes = whole;  // unknown: read and maybe write everything
  out.writes = out.writes.subtract(out.may_writes);
  return out;
}

LaunchPartition derive_partition(const PlanRequest& request, const RangePartition& slice) {
  LaunchPartition p;
  static_cast<RangePartition&>(p) = slice;
  std::map<std::uint32_t, AccessBytes> derived;
  if (request.derived) derived = request.derived(slice);
  for (std::uint32_t a = 0; a < request.args.size(); ++a) {
    if (!request.args[a].is_buffer) continue;
    const bool described = std::any_of(request.accesses.begin(), request.accesses.end(),
                                       [&](const AccessDescriptor& d) { return d.arg == a; });
    auto it = derived.find(a);
    if (!described && it != derived.end()) {
      // The derived entry's node moves over (a is not in p.accesses yet: arguments go in order).
      AccessBytes& bytes = p.accesses.insert(derived.extract(it)).position->second;
      if (!bytes.may_writes.empty()) bytes.writes = bytes.writes.subtract(bytes.may_writes);
      continue;
    }
    p.accesses[a] =
        partition_bytes(request.kernel, request.accesses, a, request.args[a].buffer_size,
                        slice.range, request.max_intervals);
  }
  return p;
}

LaunchPlan plan_launch(const PlanRequest& request) {
  if (request.devices.empty()) {
    throw PreconditionError("plan_launch of kernel '" + request.kernel + "': no device to run on");
  }
  std::vector<double> weights = request.weights;
  if (weights.empty()) weights.assign(request.devices.size(), 1.0);
  if (weights.size() != request.devices.size()) {
    throw PreconditionError("plan_launch of kernel '" + request.kernel +
                            "': one weight per device is needed");
  }
  const std::uint32_t dim = split_dimension(request.range, request.dimension);
  for (const AccessDescriptor& d : request.accesses) {
    if (d.arg >= request.args.size() || !request.args[d.arg].is_buffer) {
      throw PreconditionError("kernel '" + request.kernel + "': access descriptor for argument " +
                              std::to_string(d.arg) + ", which is not a buffer argument");
    }
  }

  LaunchPlan plan;
  std::size_t most = request.devices.size();
  if (!request.unsplittable_reason.empty() && most > 1) {
    plan.fallback_reason =
        "kernel '" + request.kernel + "' cannot be split: " + request.unsplittable_reason;
    most = 1;
  }
  for (std::size_t k = most; k >= 1; --k) {
    const std::span<const std::size_t> devs(request.devices.data(), k);
    const std::span<const double> ws(weights.data(), k);
    bool any_weight = std::any_of(ws.begin(), ws.end(), [](double w) { return w > 0; });
    if (!any_weight) continue;
    std::vector<RangePartition> slices = split_by_groups(request.range, dim, devs, ws);
    std::vector<LaunchPartition> parts;
    parts.reserve(slices.size());
    for (const RangePartition& s : slices) parts.push_back(derive_partition(request, s));
    std::string conflict;
    for (std::size_t i = 0; i < parts.size() && conflict.empty(); ++i) {
      for (std::size_t j = i + 1; j < parts.size() && conflict.empty(); ++j) {
        for (const auto& [a, bi] : parts[i].accesses) {
          // The written sets' intersection, built only when not empty (the common case is
          // answered without allocating).
          const AccessBytes& bj = parts[j].accesses.at(a);
          if (!bi.written_meets(bj)) continue;
          const IntervalSet both = bi.written().intersect(bj.written());
          const std::string& name = request.args[a].name;
          conflict = "kernel '" + request.kernel + "' on " + std::to_string(parts.size()) +
                     " devices: partitions " + std::to_string(i) + " and " + std::to_string(j) +
                     " would both write bytes " + both.to_string() + " of argument " +
                     std::to_string(a) + (name.empty() ? "" : " ('" + name + "')");
          break;
        }
      }
    }
    if (conflict.empty()) {
      plan.partitions = std::move(parts);
      return plan;
    }
    if (plan.fallback_reason.empty()) plan.fallback_reason = conflict;
  }
  throw InvariantError("plan_launch of kernel '" + request.kernel +
                       "': no plan found, which a single partition always is");
}

}  // namespace unimem
