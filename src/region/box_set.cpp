#include "region/box_set.hpp"

#include <algorithm>
#include <iterator>
#include <span>
#include <utility>

namespace unimem {
namespace {

enum class SetOp { unite, intersect, subtract };

bool keep(SetOp op, bool in_a, bool in_b) {
  switch (op) {
    case SetOp::unite:
      return in_a || in_b;
    case SetOp::intersect:
      return in_a && in_b;
    case SetOp::subtract:
      return in_a && !in_b;
  }
  return false;
}

struct Event {
  std::int64_t x;
  int delta_a;
  int delta_b;
};

// Scratch vectors for one level of the sweep, reused across the slabs of one top-level call so
// the recursion does not allocate per slab.
template <std::size_t N>
struct Workspace {
  std::vector<std::int64_t> coords;
  std::vector<Box<N>> a;
  std::vector<Box<N>> b;
  std::vector<Box<N>> active_a;
  std::vector<Box<N>> active_b;
  std::vector<Box<N - 1>> proj_a;
  std::vector<Box<N - 1>> proj_b;
  std::vector<Box<N - 1>> current;  // cross-section of the slab being grown
  std::vector<Box<N - 1>> cross;    // cross-section of the elementary slab at hand
  Workspace<N - 1> inner;
};

template <>
struct Workspace<1> {
  std::vector<Event> events;
};

template <std::size_t N>
void combine_into(std::span<const Box<N>> a_in, std::span<const Box<N>> b_in, SetOp op,
                  Workspace<N>& ws, std::vector<Box<N>>& out);

// 1-D base case: sweep over interval end points counting how many intervals of a and of b cover
// each elementary segment; keep the segments op selects and merge touching ones.
template <>
void combine_into<1>(std::span<const Box<1>> a, std::span<const Box<1>> b, SetOp op,
                     Workspace<1>& ws, std::vector<Box<1>>& out) {
  std::vector<Event>& events = ws.events;
  events.clear();
  for (const Box<1>& box : a) {
    if (box.empty()) continue;
    events.push_back({box.min()[0], 1, 0});
    events.push_back({box.max()[0], -1, 0});
  }
  for (const Box<1>& box : b) {
    if (box.empty()) continue;
    events.push_back({box.min()[0], 0, 1});
    events.push_back({box.max()[0], 0, -1});
  }
  std::sort(events.begin(), events.end(), [](const Event& l, const Event& r) { return l.x < r.x; });
  const std::size_t first_out = out.size();
  int count_a = 0;
  int count_b = 0;
  std::size_t i = 0;
  while (i < events.size()) {
    const std::int64_t x = events[i].x;
    for (; i < events.size() && events[i].x == x; ++i) {
      count_a += events[i].delta_a;
      count_b += events[i].delta_b;
    }
    if (i == events.size() || !keep(op, count_a > 0, count_b > 0)) continue;
    const std::int64_t next = events[i].x;
    if (out.size() > first_out && out.back().max()[0] == x) {
      out.back() = Box<1>({out.back().min()[0]}, {next});
    } else {
      out.push_back(Box<1>({x}, {next}));
    }
  }
}

template <std::size_t N>
Box<N - 1> drop_first_dimension(const Box<N>& box) {
  typename Box<N - 1>::Point lo{};
  typename Box<N - 1>::Point hi{};
  for (std::size_t d = 1; d < N; ++d) {
    lo[d - 1] = box.min()[d];
    hi[d - 1] = box.max()[d];
  }
  return Box<N - 1>(lo, hi);
}

template <std::size_t N>
Box<N> extrude(std::int64_t lo0, std::int64_t hi0, const Box<N - 1>& cross) {
  typename Box<N>::Point lo{};
  typename Box<N>::Point hi{};
  lo[0] = lo0;
  hi[0] = hi0;
  for (std::size_t d = 1; d < N; ++d) {
    lo[d] = cross.min()[d - 1];
    hi[d] = cross.max()[d - 1];
  }
  return Box<N>(lo, hi);
}

// Appends to out the canonical boxes of op(union of a, union of b); a and b may hold overlapping
// and empty boxes. Sweep along dimension 0: between two consecutive box boundaries the
// cross-section is the same, so it is computed once per elementary slab by recursion in N - 1
// dimensions, and neighbouring slabs with equal cross-sections are merged. This yields the
// canonical form of BoxSet.
template <std::size_t N>
void combine_into(std::span<const Box<N>> a_in, std::span<const Box<N>> b_in, SetOp op,
                  Workspace<N>& ws, std::vector<Box<N>>& out) {
  const auto non_empty = [](const Box<N>& box) { return !box.empty(); };
  std::vector<Box<N>>& a = ws.a;
  std::vector<Box<N>>& b = ws.b;
  a.clear();
  b.clear();
  std::copy_if(a_in.begin(), a_in.end(), std::back_inserter(a), non_empty);
  std::copy_if(b_in.begin(), b_in.end(), std::back_inserter(b), non_empty);
  if (a.empty() && op != SetOp::unite) return;
  if (b.empty() && op == SetOp::intersect) return;

  std::vector<std::int64_t>& coords = ws.coords;
  coords.clear();
  for (const auto* list : {&a, &b}) {
    for (const Box<N>& box : *list) {
      coords.push_back(box.min()[0]);
      coords.push_back(box.max()[0]);
    }
  }
  std::sort(coords.begin(), coords.end());
  coords.erase(std::unique(coords.begin(), coords.end()), coords.end());
  const auto by_min0 = [](const Box<N>& l, const Box<N>& r) { return l.min()[0] < r.min()[0]; };
  std::sort(a.begin(), a.end(), by_min0);
  std::sort(b.begin(), b.end(), by_min0);

  ws.active_a.clear();
  ws.active_b.clear();
  ws.current.clear();
  std::size_t next_a = 0;
  std::size_t next_b = 0;
  std::int64_t current_lo = 0;
  std::int64_t current_hi = 0;
  const auto flush = [&] {
    for (const Box<N - 1>& cross : ws.current) {
      out.push_back(extrude<N>(current_lo, current_hi, cross));
    }
  };
  for (std::size_t i = 0; i + 1 < coords.size(); ++i) {
    const std::int64_t x0 = coords[i];
    const std::int64_t x1 = coords[i + 1];
    const auto ended = [x0](const Box<N>& box) { return box.max()[0] <= x0; };
    std::erase_if(ws.active_a, ended);
    std::erase_if(ws.active_b, ended);
    for (; next_a < a.size() && a[next_a].min()[0] == x0; ++next_a)
      ws.active_a.push_back(a[next_a]);
    for (; next_b < b.size() && b[next_b].min()[0] == x0; ++next_b)
      ws.active_b.push_back(b[next_b]);

    ws.cross.clear();
    const bool a_needed = op != SetOp::unite;
    const bool b_needed = op == SetOp::intersect;
    const bool trivially_empty = (ws.active_a.empty() && (a_needed || ws.active_b.empty())) ||
                                 (ws.active_b.empty() && b_needed);
    if (!trivially_empty) {
      ws.proj_a.clear();
      ws.proj_b.clear();
      for (const Box<N>& box : ws.active_a) ws.proj_a.push_back(drop_first_dimension(box));
      for (const Box<N>& box : ws.active_b) ws.proj_b.push_back(drop_first_dimension(box));
      combine_into<N - 1>(ws.proj_a, ws.proj_b, op, ws.inner, ws.cross);
    }
    if (!ws.cross.empty() && ws.cross == ws.current && current_hi == x0) {
      current_hi = x1;
      continue;
    }
    flush();
    std::swap(ws.current, ws.cross);
    current_lo = x0;
    current_hi = x1;
  }
  flush();
}

template <std::size_t N>
std::vector<Box<N>> combine(std::span<const Box<N>> a, std::span<const Box<N>> b, SetOp op) {
  Workspace<N> ws;
  std::vector<Box<N>> out;
  combine_into<N>(a, b, op, ws, out);
  return out;
}

bool lexicographically_less(const auto& l, const auto& r) {
  return std::lexicographical_compare(l.begin(), l.end(), r.begin(), r.end());
}

}  // namespace

template <std::size_t N>
BoxSet<N>::BoxSet(const Box<N>& box) {
  if (!box.empty()) boxes_.push_back(box);
}

template <std::size_t N>
BoxSet<N>::BoxSet(std::initializer_list<Box<N>> boxes)
    : boxes_(combine<N>(std::span<const Box<N>>(boxes.begin(), boxes.size()), {}, SetOp::unite)) {
  check_invariants_if_enabled();
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::of_normalized(std::vector<Box<N>> boxes) {
  BoxSet out;
  out.boxes_ = std::move(boxes);
  out.check_invariants_if_enabled();
  return out;
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::from_boxes(const std::vector<Box<N>>& boxes) {
  return of_normalized(combine<N>(boxes, {}, SetOp::unite));
}

template <std::size_t N>
std::uint64_t BoxSet<N>::volume() const {
  std::uint64_t total = 0;
  for (const Box<N>& box : boxes_) {
    const bool overflow = __builtin_add_overflow(total, box.volume(), &total);
    UNIMEM_REQUIRE(!overflow, "BoxSet::volume: the number of points overflows 64 bits");
  }
  return total;
}

template <std::size_t N>
Box<N> BoxSet<N>::bounds() const {
  Box<N> out;
  for (const Box<N>& box : boxes_) out = out.bounding_union(box);
  return out;
}

template <std::size_t N>
bool BoxSet<N>::contains(const Point& point) const {
  for (const Box<N>& box : boxes_) {
    if (box.min()[0] > point[0]) break;  // sorted by min corner, so by min[0] first
    if (box.contains(point)) return true;
  }
  return false;
}

template <std::size_t N>
bool BoxSet<N>::contains(const Box<N>& box) const {
  if (box.empty()) return true;
  std::vector<Box<N>> clipped;
  for (const Box<N>& mine : boxes_) {
    const Box<N> common = mine.intersect(box);
    if (!common.empty()) clipped.push_back(common);
  }
  return combine<N>(std::span<const Box<N>>(&box, 1), clipped, SetOp::subtract).empty();
}

template <std::size_t N>
bool BoxSet<N>::contains(const BoxSet& other) const {
  if (other.empty()) return true;
  return combine<N>(other.boxes_, boxes_, SetOp::subtract).empty();
}

template <std::size_t N>
bool BoxSet<N>::intersects(const Box<N>& box) const {
  return std::any_of(boxes_.begin(), boxes_.end(),
                     [&box](const Box<N>& mine) { return mine.overlaps(box); });
}

template <std::size_t N>
bool BoxSet<N>::intersects(const BoxSet& other) const {
  return std::any_of(boxes_.begin(), boxes_.end(),
                     [&other](const Box<N>& mine) { return other.intersects(mine); });
}

template <std::size_t N>
void BoxSet<N>::insert(const Box<N>& box) {
  if (box.empty()) return;
  boxes_ = combine<N>(boxes_, std::span<const Box<N>>(&box, 1), SetOp::unite);
  check_invariants_if_enabled();
}

template <std::size_t N>
void BoxSet<N>::insert(const BoxSet& other) {
  *this = unite(other);
}

template <std::size_t N>
void BoxSet<N>::erase(const Box<N>& box) {
  *this = subtract(box);
}

template <std::size_t N>
void BoxSet<N>::erase(const BoxSet& other) {
  *this = subtract(other);
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::unite(const Box<N>& box) const {
  BoxSet out = *this;
  out.insert(box);
  return out;
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::unite(const BoxSet& other) const {
  return of_normalized(combine<N>(boxes_, other.boxes_, SetOp::unite));
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::intersect(const Box<N>& box) const {
  std::vector<Box<N>> clipped;
  for (const Box<N>& mine : boxes_) {
    const Box<N> common = mine.intersect(box);
    if (!common.empty()) clipped.push_back(common);
  }
  // Clipping can make the cross-sections of neighbouring slabs equal: re-normalize.
  return of_normalized(combine<N>(clipped, {}, SetOp::unite));
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::intersect(const BoxSet& other) const {
  return of_normalized(combine<N>(boxes_, other.boxes_, SetOp::intersect));
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::subtract(const Box<N>& box) const {
  if (!intersects(box)) return *this;
  return of_normalized(combine<N>(boxes_, std::span<const Box<N>>(&box, 1), SetOp::subtract));
}

template <std::size_t N>
BoxSet<N> BoxSet<N>::subtract(const BoxSet& other) const {
  return of_normalized(combine<N>(boxes_, other.boxes_, SetOp::subtract));
}

template <std::size_t N>
const Box<N>& BoxSet<N>::operator[](std::size_t i) const {
  UNIMEM_REQUIRE(i < boxes_.size(), "BoxSet: box index out of range");
  return boxes_[i];
}

template <std::size_t N>
void BoxSet<N>::check_invariants() const {
  for (std::size_t i = 0; i < boxes_.size(); ++i) {
    if (boxes_[i].empty()) {
      detail::throw_invariant("BoxSet holds an empty box at index " + std::to_string(i), __FILE__,
                              __LINE__);
    }
    if (i > 0 && !lexicographically_less(boxes_[i - 1].min(), boxes_[i].min())) {
      detail::throw_invariant("BoxSet boxes not sorted by min corner at index " +
                                  std::to_string(i) + ": " + to_string(),
                              __FILE__, __LINE__);
    }
  }
  // Sorted by min[0]: only boxes starting before box i ends in dimension 0 can overlap it.
  for (std::size_t i = 0; i < boxes_.size(); ++i) {
    for (std::size_t j = i + 1; j < boxes_.size() && boxes_[j].min()[0] < boxes_[i].max()[0]; ++j) {
      if (boxes_[i].overlaps(boxes_[j])) {
        detail::throw_invariant(
            "BoxSet boxes " + boxes_[i].to_string() + " and " + boxes_[j].to_string() + " overlap",
            __FILE__, __LINE__);
      }
    }
  }
  if (combine<N>(boxes_, {}, SetOp::unite) != boxes_) {
    detail::throw_invariant("BoxSet is not in canonical form: " + to_string(), __FILE__, __LINE__);
  }
}

template <std::size_t N>
void BoxSet<N>::check_invariants_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
  check_invariants();
#endif
}

template <std::size_t N>
std::string BoxSet<N>::to_string() const {
  std::string s = "{";
  for (std::size_t i = 0; i < boxes_.size(); ++i) {
    if (i > 0) s += ", ";
    s += boxes_[i].to_string();
  }
  return s + "}";
}

template class BoxSet<1>;
template class BoxSet<2>;
template class BoxSet<3>;

}  // namespace unimem
