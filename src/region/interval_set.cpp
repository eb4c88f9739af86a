#include "region/interval_set.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace unimem {

namespace {

// Operands this many times apart in interval count are lopsided: contains, intersects, intersect
// and subtract then binary-search the large one per interval of the small one (a strided access
// of one interval per row against a block of rows) instead of merging the two lists.
constexpr std::size_t kLopsided = 16;

}  // namespace

std::string Interval::to_string() const {
  // Appended piece by piece: GCC 12 gives a false -Wrestrict on "[" + std::to_string(...) at -O2.
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += ')';
  return s;
}

namespace {

// First interval whose end is >= offset: the first one that may touch or follow offset.
std::vector<Interval>::const_iterator first_ending_at_or_after(const std::vector<Interval>& v,
                                                               std::uint64_t offset) {
  return std::lower_bound(v.begin(), v.end(), offset,
                          [](const Interval& i, std::uint64_t o) { return i.end < o; });
}

// First interval whose end is > offset: the first one that may contain offset or follow it.
std::vector<Interval>::const_iterator first_ending_after(const std::vector<Interval>& v,
                                                         std::uint64_t offset) {
  return std::upper_bound(v.begin(), v.end(), offset,
                          [](std::uint64_t o, const Interval& i) { return o < i.end; });
}

}  // namespace

IntervalSet::IntervalSet(Interval interval) {
  if (!interval.empty()) intervals_.push_back(interval);
}

IntervalSet::IntervalSet(std::initializer_list<Interval> intervals)
    : IntervalSet(from_unsorted(std::vector<Interval>(intervals))) {}

IntervalSet IntervalSet::from_unsorted(std::vector<Interval> intervals) {
  std::erase_if(intervals, [](const Interval& i) { return i.empty(); });
  const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  // Generated ranges often arrive sorted already: checking is linear, sorting is not.
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_begin)) {
    std::sort(intervals.begin(), intervals.end(), by_begin);
  }
  // Merge in place: no second buffer (large sets would pay for fresh pages).
  std::size_t kept = 0;
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    if (kept > 0 && intervals[i].begin <= intervals[kept - 1].end) {
      intervals[kept - 1].end = std::max(intervals[kept - 1].end, intervals[i].end);
    } else {
      intervals[kept++] = intervals[i];
    }
  }
  intervals.resize(kept);
  return from_normalized(std::move(intervals));
}

IntervalSet IntervalSet::from_normalized(std::vector<Interval> intervals) {
  IntervalSet out;
  out.intervals_ = std::move(intervals);
#if UNIMEM_INVARIANTS_ENABLED
  out.check_invariants();
#endif
  return out;
}

std::uint64_t IntervalSet::total_size() const {
  std::uint64_t total = 0;
  for (const Interval& i : intervals_) total += i.size();
  return total;
}

Interval IntervalSet::bounds() const {
  if (intervals_.empty()) return {};
  return {intervals_.front().begin, intervals_.back().end};
}

bool IntervalSet::contains(std::uint64_t offset) const {
  auto it = first_ending_after(intervals_, offset);
  return it != intervals_.end() && it->begin <= offset;
}

bool IntervalSet::contains(const Interval& interval) const {
  if (interval.empty()) return true;
  auto it = first_ending_after(intervals_, interval.begin);
  return it != intervals_.end() && it->contains(interval);
}

bool IntervalSet::contains(const IntervalSet& other) const {
  // A few intervals in many (a replayed halo row in a read of one interval per row): a binary
  // search per interval of the small set instead of a merge through the large one.
  if (other.intervals_.size() * kLopsided < intervals_.size()) {
    return std::all_of(other.intervals_.begin(), other.intervals_.end(),
                       [this](const Interval& o) { return contains(o); });
  }
  // Both lists are sorted: one merge pass.
  auto it = intervals_.begin();
  for (const Interval& o : other.intervals_) {
    while (it != intervals_.end() && it->end <= o.begin) ++it;
    if (it == intervals_.end() || !it->contains(o)) return false;
  }
  return true;
}

bool IntervalSet::intersects(const Interval& interval) const {
  if (interval.empty()) return false;
  auto it = first_ending_after(intervals_, interval.begin);
  return it != intervals_.end() && it->begin < interval.end;
}

bool IntervalSet::intersects(const IntervalSet& other) const {
  if (empty() || other.empty() || !bounds().overlaps(other.bounds())) return false;
  // A few intervals against many (a hazard record against a strided access): a binary search
  // per interval of the small set instead of a merge through the large one.
  const bool this_small = intervals_.size() <= other.intervals_.size();
  const IntervalSet& small = this_small ? *this : other;
  const IntervalSet& large = this_small ? other : *this;
  if (small.intervals_.size() * kLopsided < large.intervals_.size()) {
    for (const Interval& i : small.intervals_) {
      if (large.intersects(i)) return true;
    }
    return false;
  }
  auto a = intervals_.begin();
  auto b = other.intervals_.begin();
  while (a != intervals_.end() && b != other.intervals_.end()) {
    if (a->overlaps(*b)) return true;
    if (a->end <= b->end) {
      ++a;
    } else {
      ++b;
    }
  }
  return false;
}

void IntervalSet::insert(const Interval& interval) {
  if (interval.empty()) return;
  // Intervals that touch [begin, end] (adjacent ones included) are absorbed into one.
  auto first = first_ending_at_or_after(intervals_, interval.begin);
  auto last = first;
  Interval merged = interval;
  while (last != intervals_.end() && last->begin <= interval.end) {
    merged.begin = std::min(merged.begin, last->begin);
    merged.end = std::max(merged.end, last->end);
    ++last;
  }
  const auto index = first - intervals_.cbegin();
  if (first == last) {
    intervals_.insert(intervals_.begin() + index, merged);
  } else {
    intervals_[static_cast<std::size_t>(index)] = merged;
    intervals_.erase(intervals_.begin() + index + 1,
                     intervals_.begin() + (last - intervals_.cbegin()));
  }
}

void IntervalSet::erase(const Interval& interval) {
  if (interval.empty()) return;
  auto first = first_ending_after(intervals_, interval.begin);
  auto last = first;
  while (last != intervals_.end() && last->begin < interval.end) ++last;
  if (first == last) return;
  // Up to two remnants survive: the part of the first interval before, the part of the last after.
  // They are written over the removed intervals in place, so erase never allocates unless one
  // interval is split in two.
  const auto index = static_cast<std::size_t>(first - intervals_.cbegin());
  const auto count = static_cast<std::size_t>(last - first);
  const Interval back = *(last - 1);
  const bool has_head = first->begin < interval.begin;
  const bool has_tail = back.end > interval.end;
  if (has_head && has_tail && count == 1) {
    intervals_[index].end = interval.begin;
    intervals_.insert(intervals_.begin() + static_cast<std::ptrdiff_t>(index + 1),
                      Interval{interval.end, back.end});
    return;
  }
  std::size_t out = index;
  if (has_head) intervals_[out++].end = interval.begin;
  if (has_tail) intervals_[out++] = Interval{interval.end, back.end};
  intervals_.erase(intervals_.begin() + static_cast<std::ptrdiff_t>(out),
                   intervals_.begin() + static_cast<std::ptrdiff_t>(index + count));
}

IntervalSet IntervalSet::unite(const IntervalSet& other) const {
  // Launch bookkeeping unites large generated sets (one interval per row) with empty or disjoint
  // ones (reads with may-writes, rows with the halo beyond them): those are plain copies.
  if (other.empty()) return *this;
  if (empty()) return other;
  if (intervals_.back().end < other.intervals_.front().begin ||
      other.intervals_.back().end < intervals_.front().begin) {
    const bool this_first = intervals_.back().end < other.intervals_.front().begin;
    const IntervalSet& lo = this_first ? *this : other;
    const IntervalSet& hi = this_first ? other : *this;
    IntervalSet out;
    out.intervals_.reserve(intervals_.size() + other.intervals_.size());
    out.intervals_.insert(out.intervals_.end(), lo.intervals_.begin(), lo.intervals_.end());
    out.intervals_.insert(out.intervals_.end(), hi.intervals_.begin(), hi.intervals_.end());
    return out;
  }
  IntervalSet out;
  out.intervals_.reserve(intervals_.size() + other.intervals_.size());
  auto a = intervals_.begin();
  auto b = other.intervals_.begin();
  auto push = [&out](const Interval& i) {
    if (!out.intervals_.empty() && i.begin <= out.intervals_.back().end) {
      out.intervals_.back().end = std::max(out.intervals_.back().end, i.end);
    } else {
      out.intervals_.push_back(i);
    }
  };
  while (a != intervals_.end() || b != other.intervals_.end()) {
    if (b == other.intervals_.end() || (a != intervals_.end() && a->begin <= b->begin)) {
      push(*a++);
    } else {
      push(*b++);
    }
  }
  return out;
}

IntervalSet IntervalSet::intersect(const IntervalSet& other) const {
  IntervalSet out;
  if (empty() || other.empty() || !bounds().overlaps(other.bounds())) return out;
  // A few intervals against many: each small interval clips the large set's intervals it meets,
  // found by binary search. The pieces come out sorted, apart and non-empty: they lie inside
  // the small set's intervals, which are apart, and inside the large set's, which are too.
  const bool this_small = intervals_.size() <= other.intervals_.size();
  const IntervalSet& small = this_small ? *this : other;
  const IntervalSet& large = this_small ? other : *this;
  if (small.intervals_.size() * kLopsided < large.intervals_.size()) {
    for (const Interval& s : small.intervals_) {
      for (auto it = first_ending_after(large.intervals_, s.begin);
           it != large.intervals_.end() && it->begin < s.end; ++it) {
        out.intervals_.push_back(it->intersect(s));
      }
    }
    return out;
  }
  auto a = intervals_.begin();
  auto b = other.intervals_.begin();
  while (a != intervals_.end() && b != other.intervals_.end()) {
    const Interval common = a->intersect(*b);
    if (!common.empty()) out.intervals_.push_back(common);
    if (a->end <= b->end) {
      ++a;
    } else {
      ++b;
    }
  }
  return out;
}

IntervalSet IntervalSet::intersect(const Interval& interval) const {
  IntervalSet out;
  if (interval.empty()) return out;
  for (auto it = first_ending_after(intervals_, interval.begin);
       it != intervals_.end() && it->begin < interval.end; ++it) {
    out.intervals_.push_back(it->intersect(interval));
  }
  return out;
}

namespace {

// a minus b into out when b has few intervals and a many (a wide hazard record minus a write of a
// block of rows): a's intervals between two of b's are copied as a run, found by binary search,
// instead of one by one. `carry` is what is left of an interval of a that reaches past the end
// of b's interval just cut from it (it may meet the next ones).
void append_difference_lopsided(const std::vector<Interval>& a, const std::vector<Interval>& b,
                                std::vector<Interval>& out) {
  auto it = a.begin();
  std::optional<Interval> carry;
  for (const Interval& c : b) {
    if (carry) {
      if (carry->end <= c.begin) {
        out.push_back(*carry);
        carry.reset();
      } else {
        if (carry->begin < c.begin) out.emplace_back(carry->begin, c.begin);
        if (carry->end > c.end) {
          carry->begin = c.end;  // a's next intervals begin after carry's end: none meets c
          continue;
        }
        carry.reset();
      }
    }
    const auto before =
        std::partition_point(it, a.end(), [&c](const Interval& x) { return x.end <= c.begin; });
    out.insert(out.end(), it, before);
    for (it = before; it != a.end() && it->begin < c.end; ++it) {
      if (it->begin < c.begin) out.emplace_back(it->begin, c.begin);
      if (it->end > c.end) {
        carry = Interval{c.end, it->end};
        ++it;
        break;
      }
    }
  }
  if (carry) out.push_back(*carry);
  out.insert(out.end(), it, a.end());
}

// a minus b into out (empty on entry; a and b normalized and not out).
void append_difference(const std::vector<Interval>& a, const std::vector<Interval>& b,
                       std::vector<Interval>& out) {
  if (b.size() * kLopsided < a.size()) {
    append_difference_lopsided(a, b, out);
    return;
  }
  auto first = b.begin();
  for (Interval x : a) {
    while (first != b.end() && first->end <= x.begin) ++first;
    for (auto c = first; c != b.end() && c->begin < x.end; ++c) {
      if (c->begin > x.begin) out.emplace_back(x.begin, c->begin);
      x.begin = std::min(std::max(x.begin, c->end), x.end);
      if (c->end > x.end) break;
    }
    if (!x.empty()) out.push_back(x);
  }
}

}  // namespace

IntervalSet IntervalSet::subtract(const IntervalSet& other) const {
  if (empty() || other.empty() || !bounds().overlaps(other.bounds())) return *this;
  IntervalSet out;
  append_difference(intervals_, other.intervals_, out.intervals_);
  return out;
}

void IntervalSet::assign_difference(const IntervalSet& a, const IntervalSet& b) {
  if (this == &a || this == &b) {
    *this = a.subtract(b);
    return;
  }
  intervals_.clear();
  if (a.empty()) return;
  if (b.empty() || !a.bounds().overlaps(b.bounds())) {
    intervals_.assign(a.intervals_.begin(), a.intervals_.end());
    return;
  }
  if (b.intervals_.size() == 1 && a.intervals_.size() <= kLopsided) {
    // A few intervals minus one (a launch's bytes minus its own rows, every launch): each is
    // kept, cut or dropped on its own, in order.
    const Interval c = b.intervals_.front();
    for (const Interval& x : a.intervals_) {
      if (x.end <= c.begin || x.begin >= c.end) {
        intervals_.push_back(x);
        continue;
      }
      if (x.begin < c.begin) intervals_.emplace_back(x.begin, c.begin);
      if (x.end > c.end) intervals_.emplace_back(c.end, x.end);
    }
    return;
  }
  append_difference(a.intervals_, b.intervals_, intervals_);
}

IntervalSet IntervalSet::shifted(std::int64_t delta) const {
  IntervalSet out;
  out.intervals_.reserve(intervals_.size());
  for (const Interval& i : intervals_) {
    if (delta < 0) {
      const auto d = static_cast<std::uint64_t>(-(delta + 1)) + 1;
      UNIMEM_REQUIRE(i.begin >= d, "IntervalSet::shifted: offset would become negative");
      out.intervals_.emplace_back(i.begin - d, i.end - d);
    } else {
      const auto d = static_cast<std::uint64_t>(delta);
      UNIMEM_REQUIRE(i.end <= std::numeric_limits<std::uint64_t>::max() - d,
                     "IntervalSet::shifted: offset would overflow");
      out.intervals_.emplace_back(i.begin + d, i.end + d);
    }
  }
  return out;
}

void IntervalSet::check_invariants() const {
  for (std::size_t i = 0; i < intervals_.size(); ++i) {
    if (intervals_[i].empty()) {
      detail::throw_invariant("IntervalSet holds an empty interval at index " + std::to_string(i),
                              __FILE__, __LINE__);
    }
    if (i > 0 && intervals_[i - 1].end >= intervals_[i].begin) {
      detail::throw_invariant("IntervalSet intervals " + intervals_[i - 1].to_string() + " and " +
                                  intervals_[i].to_string() + " are not sorted and separated",
                              __FILE__, __LINE__);
    }
  }
}

std::string IntervalSet::to_string() const {
  std::string s = "{";
  for (std::size_t i = 0; i < intervals_.size(); ++i) {
    if (i > 0) s += ", ";
    s += intervals_[i].to_string();
  }
  return s + "}";
}

IntervalSet operator|(const IntervalSet& a, const IntervalSet& b) { return a.unite(b); }
IntervalSet operator&(const IntervalSet& a, const IntervalSet& b) { return a.intersect(b); }
IntervalSet operator-(const IntervalSet& a, const IntervalSet& b) { return a.subtract(b); }

}  // namespace unimem
