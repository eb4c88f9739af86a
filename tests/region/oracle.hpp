#pragma once

// Dense oracles for the region layer: one bit (DenseSet) or one optional value (DenseMap<V>) per
// byte of a small window [base, base + size) of the 64-bit offset space. They are slow and
// obviously right; tests and fuzzers compare IntervalSet / IntervalMap against them. The window may
// sit anywhere, including at the top of the offset space (base + size == 2^64 - 1), so the same
// property tests also cover the u64 limits. No GoogleTest dependency: fuzzers include this too.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "region/interval.hpp"
#include "region/interval_map.hpp"
#include "region/interval_set.hpp"

namespace unimem::oracle {

/// A window of the offset space, [base, base + size).
struct Window {
  std::uint64_t base = 0;
  std::uint64_t size = 0;

  [[nodiscard]] std::uint64_t end() const { return base + size; }
  [[nodiscard]] Interval interval() const { return {base, base + size}; }
  [[nodiscard]] bool contains(const Interval& i) const {
    return i.empty() || (base <= i.begin && i.end <= base + size);
  }
  /// A window of size bytes ending at the largest representable interval end, 2^64 - 1.
  static Window at_top(std::uint64_t size) {
    return {std::numeric_limits<std::uint64_t>::max() - size, size};
  }
};

inline void require_inside(const Window& w, const Interval& i, const char* what) {
  if (!w.contains(i)) {
    throw std::out_of_range(std::string("oracle: ") + what + " " + i.to_string() +
                            " lies outside the window " + w.interval().to_string());
  }
}

/// One bit per byte of a window.
class DenseSet {
 public:
  explicit DenseSet(Window w) : window_(w), bits_(w.size, false) {}
  DenseSet(Window w, const IntervalSet& s) : DenseSet(w) {
    for (const Interval& i : s) insert(i);
  }

  [[nodiscard]] const Window& window() const { return window_; }
  /// Whether offset (absolute) is in the set; offsets outside the window are not.
  [[nodiscard]] bool test(std::uint64_t offset) const {
    return offset >= window_.base && offset - window_.base < window_.size &&
           bits_[offset - window_.base];
  }
  void set(std::uint64_t offset, bool value) {
    if (!(offset >= window_.base && offset - window_.base < window_.size)) {
      throw std::out_of_range("oracle: offset " + std::to_string(offset) + " outside window");
    }
    bits_[offset - window_.base] = value;
  }
  void insert(const Interval& i) { fill(i, true); }
  void erase(const Interval& i) { fill(i, false); }

  [[nodiscard]] std::uint64_t count() const {
    std::uint64_t n = 0;
    for (bool b : bits_) n += b ? 1 : 0;
    return n;
  }
  /// Every byte of i is in the set (true for an empty i).
  [[nodiscard]] bool contains(const Interval& i) const {
    for (std::uint64_t o = i.begin; o < i.end; ++o) {
      if (!test(o)) return false;
    }
    return true;
  }
  [[nodiscard]] bool intersects(const Interval& i) const {
    for (std::uint64_t o = i.begin; o < i.end; ++o) {
      if (test(o)) return true;
    }
    return false;
  }
  [[nodiscard]] bool contains(const DenseSet& other) const {
    for (std::uint64_t k = 0; k < window_.size; ++k) {
      if (other.bits_[k] && !bits_[k]) return false;
    }
    return true;
  }
  [[nodiscard]] bool intersects(const DenseSet& other) const {
    for (std::uint64_t k = 0; k < window_.size; ++k) {
      if (other.bits_[k] && bits_[k]) return true;
    }
    return false;
  }

  /// The maximal runs of set bits, built byte by byte: the canonical IntervalSet.
  [[nodiscard]] IntervalSet to_interval_set() const {
    std::vector<Interval> runs;
    for (std::uint64_t k = 0; k < window_.size; ++k) {
      if (!bits_[k]) continue;
      const std::uint64_t o = window_.base + k;
      if (!runs.empty() && runs.back().end == o) {
        runs.back().end = o + 1;
      } else {
        runs.emplace_back(o, o + 1);
      }
    }
    return IntervalSet::from_normalized(std::move(runs));
  }

  // Set algebra, byte by byte (both operands must share the window).
  friend DenseSet operator|(const DenseSet& a, const DenseSet& b) {
    return combine(a, b, [](bool x, bool y) { return x || y; });
  }
  friend DenseSet operator&(const DenseSet& a, const DenseSet& b) {
    return combine(a, b, [](bool x, bool y) { return x && y; });
  }
  friend DenseSet operator-(const DenseSet& a, const DenseSet& b) {
    return combine(a, b, [](bool x, bool y) { return x && !y; });
  }

 private:
  void fill(const Interval& i, bool value) {
    require_inside(window_, i, "interval");
    for (std::uint64_t o = i.begin; o < i.end; ++o) bits_[o - window_.base] = value;
  }
  template <typename Op>
  static DenseSet combine(const DenseSet& a, const DenseSet& b, Op op) {
    if (a.window_.base != b.window_.base || a.window_.size != b.window_.size) {
      throw std::invalid_argument("oracle: DenseSet operands have different windows");
    }
    DenseSet out(a.window_);
    for (std::uint64_t k = 0; k < a.window_.size; ++k) out.bits_[k] = op(a.bits_[k], b.bits_[k]);
    return out;
  }

  Window window_;
  std::vector<bool> bits_;
};

/// One optional value per byte of a window (std::nullopt = unmapped).
template <typename V>
class DenseMap {
 public:
  using Segment = IntervalMapSegment<V>;

  explicit DenseMap(Window w) : window_(w), values_(w.size) {}

  [[nodiscard]] const Window& window() const { return window_; }
  [[nodiscard]] std::optional<V> at(std::uint64_t offset) const {
    if (offset < window_.base || offset - window_.base >= window_.size) return std::nullopt;
    return values_[offset - window_.base];
  }

  void assign(const Interval& i, const V& v) {
    require_inside(window_, i, "assign range");
    for (std::uint64_t o = i.begin; o < i.end; ++o) slot(o) = v;
  }
  void erase(const Interval& i) {
    require_inside(window_, i, "erase range");
    for (std::uint64_t o = i.begin; o < i.end; ++o) slot(o).reset();
  }
  /// f(v) on every mapped byte of i.
  template <typename F>
  void update(const Interval& i, F&& f) {
    require_inside(window_, i, "update range");
    for (std::uint64_t o = i.begin; o < i.end; ++o) {
      if (slot(o)) slot(o) = f(*slot(o));
    }
  }
  /// f(optional v) on every byte of i.
  template <typename F>
  void update_or_insert(const Interval& i, F&& f) {
    require_inside(window_, i, "update_or_insert range");
    for (std::uint64_t o = i.begin; o < i.end; ++o) slot(o) = f(slot(o));
  }

  /// Maximal runs of equal mapped values within range (clipped to the window): exactly what a
  /// canonical IntervalMap must report for query(range).
  [[nodiscard]] std::vector<Segment> runs(const Interval& range) const {
    std::vector<Segment> out;
    const std::uint64_t b = range.begin < window_.base ? window_.base : range.begin;
    const std::uint64_t e = range.end > window_.end() ? window_.end() : range.end;
    for (std::uint64_t o = b; o < e; ++o) {
      const std::optional<V>& v = values_[o - window_.base];
      if (!v) continue;
      if (!out.empty() && out.back().range.end == o && out.back().value == *v) {
        out.back().range.end = o + 1;
      } else {
        out.push_back(Segment{Interval{o, o + 1}, *v});
      }
    }
    return out;
  }
  [[nodiscard]] std::vector<Segment> segments() const { return runs(window_.interval()); }

  /// The bytes of range whose value satisfies pred.
  template <typename P>
  [[nodiscard]] IntervalSet select(const Interval& range, P&& pred) const {
    std::vector<Interval> out;
    for (const Segment& s : runs(range)) {
      if (pred(s.value)) out.push_back(s.range);
    }
    return IntervalSet::from_unsorted(std::move(out));
  }

  /// An IntervalMap built from the runs, each assigned on its own.
  template <typename Map = IntervalMap<V>>
  [[nodiscard]] Map to_interval_map() const {
    Map m;
    for (const Segment& s : segments()) m.assign(s.range, s.value);
    return m;
  }

 private:
  std::optional<V>& slot(std::uint64_t o) { return values_[o - window_.base]; }

  Window window_;
  std::vector<std::optional<V>> values_;
};

// --- Random inputs -------------------------------------------------------------------------------

/// A random interval inside w, biased towards the window edges, tiny sizes and empty intervals.
inline Interval random_interval(std::mt19937_64& rng, const Window& w) {
  auto pick = [&rng](std::uint64_t lo, std::uint64_t hi) {  // uniform in [lo, hi]
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  const std::uint64_t kind = pick(0, 15);
  if (kind == 0) return {w.base, w.end()};  // the whole window
  if (kind == 1) {                          // empty, anywhere
    const std::uint64_t o = pick(w.base, w.end());
    return {o, o};
  }
  if (kind <= 4) {  // short: at most 4 bytes
    const std::uint64_t b = pick(w.base, w.end());
    const std::uint64_t len = pick(0, 4);
    return {b, b + (len < w.end() - b ? len : w.end() - b)};
  }
  if (kind == 5) return {w.base, pick(w.base, w.end())};   // a prefix
  if (kind == 6) return {pick(w.base, w.end()), w.end()};  // a suffix
  std::uint64_t b = pick(w.base, w.end());
  std::uint64_t e = pick(w.base, w.end());
  if (b > e) std::swap(b, e);
  return {b, e};
}

/// A random IntervalSet inside w made of up to max_pieces random intervals (possibly empty).
inline IntervalSet random_interval_set(std::mt19937_64& rng, const Window& w,
                                       std::size_t max_pieces = 8) {
  const auto n = std::uniform_int_distribution<std::size_t>(0, max_pieces)(rng);
  std::vector<Interval> pieces;
  for (std::size_t k = 0; k < n; ++k) {
    Interval i = random_interval(rng, w);
    // Mostly small pieces, so sets have many intervals rather than one big one.
    if (i.size() > w.size / 4 && rng() % 4 != 0) i = {i.begin, i.begin + w.size / 8};
    pieces.push_back(i);
  }
  return IntervalSet::from_unsorted(std::move(pieces));
}

/// "{[0, 4) = 1, [4, 8) = 2}" for failure messages; V must be streamable via std::to_string.
template <typename V>
std::string to_string(const std::vector<IntervalMapSegment<V>>& segments) {
  std::string s = "{";
  for (std::size_t k = 0; k < segments.size(); ++k) {
    if (k > 0) s += ", ";
    s += segments[k].range.to_string() + " = " + std::to_string(segments[k].value);
  }
  return s + "}";
}

}  // namespace unimem::oracle
