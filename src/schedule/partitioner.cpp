#include "schedule/partitioner.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.hpp"

namespace unimem {

std::uint32_t split_dimension(const NDRange& range, std::optional<std::uint32_t> requested) {
  UNIMEM_REQUIRE(range.dims >= 1 && range.dims <= 3, "NDRange: dims must be 1, 2 or 3");
  if (requested) {
    if (*requested >= range.dims) {
      throw PreconditionError("split dimension " + std::to_string(*requested) + " is outside a " +
                              std::to_string(range.dims) + "-D range");
    }
    return *requested;
  }
  return range.dims - 1;
}

std::uint64_t group_count(const NDRange& range, std::uint32_t dim) {
  UNIMEM_REQUIRE(dim < 3, "group_count: dimension out of range");
  const std::uint64_t g = range.global[dim];
  const std::uint64_t l = range.local[dim];
  if (l == 0) return g;
  if (g % l != 0) {
    throw PreconditionError("NDRange: local size " + std::to_string(l) +
                            " does not divide global " + std::to_string(g) + " in dimension " +
                            std::to_string(dim));
  }
  return g / l;
}

std::vector<RangePartition> split_by_groups(const NDRange& range, std::uint32_t dim,
                                            std::span<const std::size_t> devices,
                                            std::span<const double> weights) {
  UNIMEM_REQUIRE(!devices.empty(), "split_by_groups: no device");
  UNIMEM_REQUIRE(devices.size() == weights.size(),
                 "split_by_groups: one weight per device is needed");
  double total_weight = 0;
  for (double w : weights) {
    if (!(w >= 0) || !std::isfinite(w)) {
      throw PreconditionError("split_by_groups: weights must be finite and >= 0");
    }
    total_weight += w;
  }
  UNIMEM_REQUIRE(total_weight > 0, "split_by_groups: at least one weight must be positive");
  const std::uint64_t groups = group_count(range, dim);
  const std::uint64_t unit = range.local[dim] == 0 ? 1 : range.local[dim];

  // Largest remainder: floor shares first, then one more group to the largest fractions (ties to
  // the lower index, so equal weights give larger blocks first).
  const std::size_t k = devices.size();
  std::vector<std::uint64_t> share(k);
  std::vector<std::pair<double, std::size_t>> fractions(k);
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double exact = static_cast<double>(groups) * weights[i] / total_weight;
    share[i] = static_cast<std::uint64_t>(std::floor(exact));
    given += share[i];
    fractions[i] = {exact - std::floor(exact), i};
  }
  const auto larger = [](const auto& a, const auto& b) { return a.first > b.first; };
  if (!std::is_sorted(fractions.begin(), fractions.end(), larger)) {  // no buffer when sorted
    std::stable_sort(fractions.begin(), fractions.end(), larger);
  }
  for (std::size_t j = 0; given < groups; j = (j + 1) % k) {
    if (weights[fractions[j].second] > 0) {
      ++share[fractions[j].second];
      ++given;
    }
  }
  std::vector<RangePartition> out;
  out.reserve(k);
  std::uint64_t begin = 0;
  for (std::size_t i = 0; i < k; ++i) {
    if (share[i] == 0) continue;
    RangePartition p;
    p.device = devices[i];
    p.range = range;
    p.range.offset[dim] = range.offset[dim] + begin * unit;
    p.range.global[dim] = share[i] * unit;
    p.group_begin = begin;
    p.group_end = begin + share[i];
    begin += share[i];
    out.push_back(p);
  }
  return out;
}

void ThroughputProfile::record(const std::string& kernel, std::size_t device,
                               std::uint64_t work_items, double seconds) {
  auto it = std::find_if(table_.begin(), table_.end(), [&](const auto& e) {
    return e.first.first == kernel && e.first.second == device;
  });
  if (it == table_.end()) {
    table_.push_back({{kernel, device}, {}});
    it = std::prev(table_.end());
  }
  if (it->second.seen++ < skipped_) return;  // warm-up launches are not representative
  if (it->second.count >= samples_) return;  // only the first launches are timed
  ++it->second.count;
  it->second.items += work_items;
  it->second.seconds += std::max(seconds, 1e-9);
}

std::optional<std::vector<double>> ThroughputProfile::weights(
    const std::string& kernel, std::span<const std::size_t> devices) const {
  std::vector<double> out;
  for (std::size_t d : devices) {
    auto it = std::find_if(table_.begin(), table_.end(), [&](const auto& e) {
      return e.first.first == kernel && e.first.second == d;
    });
    if (it == table_.end() || it->second.count < samples_) return std::nullopt;
    out.push_back(static_cast<double>(it->second.items) / it->second.seconds);
  }
  return out;
}

}  // namespace unimem
