#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "region/interval.hpp"
#include "region/interval_set.hpp"

namespace unimem {

/// Non-overlapping segments of byte offsets, each carrying a value of type V; offsets covered by
/// no segment are unmapped. After every mutation, segments are maximal: two segments that touch
/// never carry equal values (they are merged), so the segment list is canonical and two maps are
/// equal exactly when they map every offset to the same value. This is DSOM's byte-granular
/// segment table (seeds/000_7b2a075be0870d8f.txt, section 3) with the value left generic.
///
/// Storage: the sorted segment list is cut into chunks of at most ChunkCapacity segments, each a
/// contiguous array, plus an array holding the end offset of every chunk's last segment. A lookup
/// is two binary searches (chunk, then segment): O(log n) with one or two cache misses at a
/// million segments, where a node-based tree takes a dozen. A mutation rewrites the k segments it
/// touches inside their chunk: O(log n + k + ChunkCapacity), plus, when a chunk splits or empties,
/// a shift of the chunk array (n / ChunkCapacity entries, amortized over many mutations). Tests
/// use a tiny ChunkCapacity so that small maps already span many chunks.
///
/// Every mutation builds its result before changing anything, so if a function passed to update
/// throws, the map is left unchanged. V must be copyable and equality-comparable.
/// One segment of an IntervalMap: every offset of range maps to value.
template <typename V>
struct IntervalMapSegment {
  Interval range;
  V value;
  friend bool operator==(const IntervalMapSegment&, const IntervalMapSegment&) = default;
};

template <typename V, std::size_t ChunkCapacity = 64>
class IntervalMap {
  static_assert(ChunkCapacity >= 4, "IntervalMap chunks need room for a few segments");

 public:
  using Segment = IntervalMapSegment<V>;

  IntervalMap() = default;
  /// A map with the single segment [range) = value (empty if range is).
  IntervalMap(Interval range, V value) { assign(range, std::move(value)); }

  [[nodiscard]] bool empty() const { return size_ == 0; }
  /// Number of (maximal) segments.
  [[nodiscard]] std::size_t segment_count() const { return size_; }

  /// Sets every offset of range to value (mapping offsets that were unmapped).
  void assign(const Interval& range, const V& value) {
    rewrite(range, [&](const Interval& piece, const V*, auto& emit) { emit(piece, value); });
  }
  /// The forms over an IntervalSet give the result of the one-range form applied to each of its
  /// intervals, in one pass over the segments the set reaches: a segment (or gap) that the
  /// operation leaves as it is costs one binary search however many intervals lie in it, so a set
  /// of many intervals (a strided access, one interval per row) over few segments costs in
  /// proportion to the segments, and every changed piece is spliced in with its neighbours. f is
  /// called once per segment (or gap) that the set reaches and nothing changes if it throws.
  void assign(const IntervalSet& ranges, const V& value) {
    rewrite_set(
        ranges, true, [&](const V*) { return std::optional<V>(value); }, no_report());
  }

  /// Replaces the value v of every mapped part of range by f(v); unmapped parts stay unmapped.
  template <typename F>
  void update(const Interval& range, F&& f) {
    rewrite(range, [&](const Interval& piece, const V* old, auto& emit) {
      if (old != nullptr) emit(piece, f(*old));
    });
  }
  template <typename F>
  void update(const IntervalSet& ranges, F&& f) {
    update(ranges, f, no_report());
  }
  /// update, also calling on_change(piece, old, new) for every piece of ranges whose value it
  /// changes, in order of offset, before the map changes (pieces of one segment that the set's
  /// intervals separate are reported one by one).
  template <typename F, typename OnChange>
  void update(const IntervalSet& ranges, F&& f, OnChange&& on_change) {
    rewrite_set(
        ranges, false, [&](const V* old) { return std::optional<V>(f(*old)); }, on_change);
  }

  /// Like update, but also maps the unmapped parts of range: f receives std::nullopt there.
  template <typename F>
  void update_or_insert(const Interval& range, F&& f) {
    rewrite(range, [&](const Interval& piece, const V* old, auto& emit) {
      emit(piece, old != nullptr ? f(std::optional<V>(*old)) : f(std::optional<V>()));
    });
  }
  template <typename F>
  void update_or_insert(const IntervalSet& ranges, F&& f) {
    rewrite_set(
        ranges, true,
        [&](const V* old) {
          return std::optional<V>(old != nullptr ? f(std::optional<V>(*old))
                                                 : f(std::optional<V>()));
        },
        no_report());
  }

  /// Unmaps every offset of range.
  void erase(const Interval& range) {
    rewrite(range, [](const Interval&, const V*, auto&) {});
  }
  void erase(const IntervalSet& ranges) {
    rewrite_set(
        ranges, false, [](const V*) { return std::optional<V>(); }, no_report());
  }

  /// Calls f(clipped_range, value) for every mapped part of range, in order of offset.
  template <typename F>
  void for_each_in(const Interval& range, F&& f) const {
    if (range.empty()) return;
    for (Pos p = first_ending_after(range.begin); !at_end(p); advance(p)) {
      const Segment& s = seg(p);
      if (s.range.begin >= range.end) break;
      f(s.range.intersect(range), std::as_const(s.value));
    }
  }

  /// Calls f(range, value) for every segment, in order of offset.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& chunk : chunks_) {
      for (const Segment& s : chunk) f(s.range, std::as_const(s.value));
    }
  }

  /// The mapped parts of range, clipped to it.
  [[nodiscard]] std::vector<Segment> query(const Interval& range) const {
    std::vector<Segment> out;
    for_each_in(range, [&out](const Interval& r, const V& v) { out.push_back({r, v}); });
    return out;
  }

  /// The value at offset, if mapped.
  [[nodiscard]] std::optional<V> at(std::uint64_t offset) const {
    const Pos p = first_ending_after(offset);
    if (at_end(p) || seg(p).range.begin > offset) return std::nullopt;
    return seg(p).value;
  }

  /// The offsets within range whose value satisfies pred.
  template <typename P>
  [[nodiscard]] IntervalSet select(const Interval& range, P&& pred) const {
    std::vector<Interval> out;
    for_each_in(range, [&](const Interval& r, const V& v) {
      if (!pred(v)) return;
      if (!out.empty() && out.back().end == r.begin) {
        out.back().end = r.end;
      } else {
        out.push_back(r);
      }
    });
    return IntervalSet::from_normalized(std::move(out));
  }
  /// The offsets of ranges whose value satisfies pred: as select over each interval, united, at the
  /// cost of one binary search for every segment whose value fails pred (pred is called once per
  /// segment the set reaches).
  template <typename P>
  [[nodiscard]] IntervalSet select(const IntervalSet& ranges, P&& pred) const {
    std::vector<Interval> out;
    walk(
        ranges, false, [&](const V* v) { return pred(*v); },
        [&](const Interval& r, const V*, std::size_t) {
          if (!out.empty() && out.back().end == r.begin) {
            out.back().end = r.end;
          } else {
            out.push_back(r);
          }
        });
    return IntervalSet::from_normalized(std::move(out));
  }
  /// Calls f(piece, value) for every mapped part of ranges, in order of offset.
  template <typename F>
  void for_each_in(const IntervalSet& ranges, F&& f) const {
    walk(
        ranges, false, [](const V*) { return true; },
        [&](const Interval& r, const V* v, std::size_t) { f(r, std::as_const(*v)); });
  }

  /// Every segment, in order.
  [[nodiscard]] std::vector<Segment> segments() const {
    std::vector<Segment> out;
    out.reserve(size_);
    for (const auto& chunk : chunks_) out.insert(out.end(), chunk.begin(), chunk.end());
    return out;
  }

  void clear() {
    chunks_.clear();
    chunk_end_.clear();
    size_ = 0;
  }

  /// Equal when both map every offset to the same value (chunk boundaries do not matter).
  friend bool operator==(const IntervalMap& a, const IntervalMap& b) {
    if (a.size_ != b.size_) return false;
    Pos p{0, 0};
    Pos q{0, 0};
    for (; !a.at_end(p); a.advance(p), b.advance(q)) {
      if (!(a.seg(p) == b.seg(q))) return false;
    }
    return true;
  }

  /// Throws InvariantError unless segments are non-empty, sorted, disjoint and maximal, and the
  /// chunk bookkeeping (sizes, end offsets, count) is consistent.
  void check_invariants() const {
    auto fail = [](const std::string& what) {
      detail::throw_invariant("IntervalMap " + what, __FILE__, __LINE__);
    };
    if (chunk_end_.size() != chunks_.size()) fail("chunk end array out of step");
    std::size_t count = 0;
    const Segment* prev = nullptr;
    for (std::size_t c = 0; c < chunks_.size(); ++c) {
      const auto& chunk = chunks_[c];
      if (chunk.empty() || chunk.size() > kChunkMax) {
        fail("chunk " + std::to_string(c) + " holds " + std::to_string(chunk.size()) + " segments");
      }
      if (chunk_end_[c] != chunk.back().range.end) {
        fail("chunk " + std::to_string(c) + " end offset is stale");
      }
      for (const Segment& s : chunk) {
        if (s.range.empty()) fail("segment " + s.range.to_string() + " is empty");
        if (prev != nullptr) {
          if (prev->range.end > s.range.begin) {
            fail("segments " + prev->range.to_string() + " and " + s.range.to_string() +
                 " overlap or are unsorted");
          }
          if (prev->range.end == s.range.begin && prev->value == s.value) {
            fail("segments " + prev->range.to_string() + " and " + s.range.to_string() +
                 " touch with equal values (not merged)");
          }
        }
        prev = &s;
        ++count;
      }
    }
    if (count != size_) fail("segment count is stale");
  }

 private:
  // Chunks hold at most kChunkMax segments; one that falls below kChunkMin is merged with a
  // neighbour, so chunks stay reasonably full after erasures.
  static constexpr std::size_t kChunkMax = ChunkCapacity;
  static constexpr std::size_t kChunkMin = kChunkMax / 4 + 1;
  using Chunk = std::vector<Segment>;

  // A position: segment `index` of chunk `chunk`. The end position is {chunks_.size(), 0}.
  struct Pos {
    std::size_t chunk;
    std::size_t index;
  };

  [[nodiscard]] bool at_end(const Pos& p) const { return p.chunk >= chunks_.size(); }
  [[nodiscard]] const Segment& seg(const Pos& p) const { return chunks_[p.chunk][p.index]; }
  void advance(Pos& p) const {
    if (++p.index == chunks_[p.chunk].size()) {
      ++p.chunk;
      p.index = 0;
    }
  }

  // The first segment whose end is after offset: the one containing offset, or else the first one
  // starting after it.
  [[nodiscard]] Pos first_ending_after(std::uint64_t offset) const {
    const auto c = static_cast<std::size_t>(
        std::upper_bound(chunk_end_.begin(), chunk_end_.end(), offset) - chunk_end_.begin());
    if (c == chunks_.size()) return {c, 0};
    const Chunk& chunk = chunks_[c];
    const auto i = static_cast<std::size_t>(
        std::partition_point(chunk.begin(), chunk.end(),
                             [offset](const Segment& s) { return s.range.end <= offset; }) -
        chunk.begin());
    return {c, i};
  }

  // The common body of every mutation. For each piece of range, in order, produce(piece, old,
  // emit) is told the old value (nullptr in a gap) and emits the new content of that piece
  // (nothing = unmapped). The new segments, merged on the fly and with their untouched neighbours
  // when equal, replace the old ones in one splice.
  template <typename Produce>
  void rewrite(const Interval& range, Produce&& produce) {
    if (range.empty()) return;
    std::vector<Segment>& out = scratch_.segments;
    out.clear();
    auto emit = [&out](const Interval& r, const V& v) {
      if (!out.empty() && out.back().range.end == r.begin && out.back().value == v) {
        out.back().range.end = r.end;
      } else {
        out.push_back(Segment{r, v});
      }
    };
    const Pos first = first_ending_after(range.begin);
    // The left neighbour joins the splice when it touches range (it may merge with the result).
    Pos lo = first;
    if (const auto left = previous(first); left && seg(*left).range.end == range.begin) {
      lo = *left;
      out.push_back(seg(*left));
    }
    Pos hi = lo;  // one past the last segment replaced (unnormalized: index may equal the size)
    bool replaced = lo.chunk != first.chunk || lo.index != first.index;
    if (replaced) hi = Pos{lo.chunk, lo.index + 1};
    std::uint64_t cursor = range.begin;
    for (Pos p = first; !at_end(p); advance(p)) {
      const Segment& s = seg(p);
      if (s.range.begin >= range.end) {
        // The right neighbour joins the splice when it touches range.
        if (s.range.begin == range.end) {
          if (cursor < range.end) produce(Interval{cursor, range.end}, nullptr, emit);
          cursor = range.end;
          emit(s.range, s.value);
          hi = Pos{p.chunk, p.index + 1};
          replaced = true;
        }
        break;
      }
      if (s.range.begin < range.begin) emit(Interval{s.range.begin, range.begin}, s.value);
      if (s.range.begin > cursor) produce(Interval{cursor, s.range.begin}, nullptr, emit);
      const Interval inner = s.range.intersect(range);
      produce(inner, &s.value, emit);
      cursor = inner.end;
      if (s.range.end > range.end) emit(Interval{range.end, s.range.end}, s.value);
      if (!replaced) lo = p;
      hi = Pos{p.chunk, p.index + 1};
      replaced = true;
    }
    if (cursor < range.end) produce(Interval{cursor, range.end}, nullptr, emit);
    if (!replaced && out.empty()) return;  // nothing mapped in range, nothing to map
    if (!replaced) hi = lo;
    splice(lo, hi, std::move(out));  // moves the segments, keeps out's storage
    scratch_.trim(scratch_.segments);
    check_if_enabled();
  }

  // The no-op on_change of the batch forms that report nothing.
  static auto no_report() {
    return [](const Interval&, const V&, const V&) {};
  }

  // The pass of the IntervalSet forms. Visits in order of offset every region - a segment, or with
  // `gaps` a stretch of unmapped offsets - that an interval of ranges overlaps, and asks
  // wanted(old) (old: the region's value, nullptr in a gap) whether its part of ranges matters;
  // if so, calls piece(part, old, chunk) for every part of ranges inside the region (chunk: the
  // region's chunk index, or the next segment's for a gap). An unwanted region is passed over
  // with a binary search in ranges, so the cost is O((R + P) log n) for R regions and P parts
  // visited, whatever the number of intervals in unwanted regions.
  template <typename Wanted, typename Piece>
  void walk(const IntervalSet& ranges, bool gaps, Wanted&& wanted, Piece&& piece) const {
    const std::vector<Interval>& iv = ranges.intervals();
    if (iv.empty()) return;
    const std::uint64_t last_end = iv.back().end;
    std::size_t i = 0;
    std::uint64_t cursor = iv[0].begin;  // offsets before cursor are done; iv[i] reaches past it
    Pos p = first_ending_after(cursor);
    while (true) {
      std::uint64_t region_end = 0;
      const V* old = nullptr;
      bool want = false;
      if (at_end(p) || seg(p).range.begin > cursor) {  // a gap up to the next segment
        region_end = at_end(p) ? last_end : seg(p).range.begin;
        want = gaps && wanted(nullptr);
      } else {
        old = &seg(p).value;
        region_end = seg(p).range.end;
        want = wanted(old);
      }
      if (want) {
        for (; i < iv.size() && iv[i].begin < region_end; ++i) {
          piece(Interval{std::max(iv[i].begin, cursor), std::min(iv[i].end, region_end)}, old,
                p.chunk);
          if (iv[i].end > region_end) break;
        }
      } else {
        i = static_cast<std::size_t>(
            std::partition_point(iv.begin() + static_cast<std::ptrdiff_t>(i), iv.end(),
                                 [region_end](const Interval& x) { return x.end <= region_end; }) -
            iv.begin());
      }
      if (i == iv.size()) return;
      cursor = std::max(region_end, iv[i].begin);
      if (old != nullptr) advance(p);
      if (!at_end(p) && seg(p).range.end <= cursor) p = first_ending_after(cursor);
    }
  }

  // The IntervalSet mutations: new_value(old) (old: nullptr in a gap; gaps are visited only with
  // `gaps`) gives each region's new content (nullopt: unmapped). The changed pieces are found
  // first, without touching the map (on_change(piece, old, new) hears of each changed mapped
  // piece); then the pieces within one chunk are spliced in by one rewrite.
  template <typename NewValue, typename OnChange>
  void rewrite_set(const IntervalSet& ranges, bool gaps, NewValue&& new_value,
                   OnChange&& on_change) {
    std::vector<Change>& changes = scratch_.changes;
    changes.clear();
    std::optional<V> next;
    walk(
        ranges, gaps,
        [&](const V* old) {
          next = new_value(old);
          return old != nullptr ? !(next && *next == *old) : next.has_value();
        },
        [&](const Interval& part, const V* old, std::size_t chunk) {
          if (old != nullptr && next) on_change(part, std::as_const(*old), std::as_const(*next));
          changes.push_back(Change{part, next, chunk});
        });
    for (std::size_t first = 0; first < changes.size();) {
      std::size_t last = first + 1;
      while (last < changes.size() && changes[last].chunk == changes[first].chunk) ++last;
      // Every change lies inside one region, hence inside one piece the rewrite produces.
      std::size_t k = first;
      rewrite(Interval{changes[first].range.begin, changes[last - 1].range.end},
              [&](const Interval& piece, const V* old, auto& emit) {
                std::uint64_t at = piece.begin;
                for (; k < last && changes[k].range.begin < piece.end; ++k) {
                  const Change& c = changes[k];
                  if (old != nullptr && c.range.begin > at) emit(Interval{at, c.range.begin}, *old);
                  if (c.value) emit(c.range, *c.value);
                  at = c.range.end;
                }
                if (old != nullptr && at < piece.end) emit(Interval{at, piece.end}, *old);
              });
      first = last;
    }
    scratch_.trim(changes);
  }

  [[nodiscard]] std::optional<Pos> previous(const Pos& p) const {
    if (p.index > 0) return Pos{p.chunk, p.index - 1};
    if (p.chunk == 0) return std::nullopt;
    return Pos{p.chunk - 1, chunks_[p.chunk - 1].size() - 1};
  }

  // Replaces the segments from lo to hi (hi may be lo: pure insertion) with out.
  void splice(Pos lo, Pos hi, std::vector<Segment>&& out) {
    const std::size_t removed = count_between(lo, hi);
    size_ = size_ - removed + out.size();
    if (chunks_.empty()) {
      replace_chunks(0, 0, std::move(out));
      return;
    }
    if (at_end(lo)) {  // insertion after the last segment: append to the last chunk
      lo = hi = Pos{chunks_.size() - 1, chunks_.back().size()};
    }
    if (lo.chunk == hi.chunk) {
      Chunk& chunk = chunks_[lo.chunk];
      const auto b = chunk.begin() + static_cast<std::ptrdiff_t>(lo.index);
      const auto e = chunk.begin() + static_cast<std::ptrdiff_t>(hi.index);
      // Overwrite in place where the counts overlap, then erase or insert the difference.
      const std::size_t common = std::min(removed, out.size());
      std::move(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(common), b);
      if (removed > common) {
        chunk.erase(b + static_cast<std::ptrdiff_t>(common), e);
      } else {
        chunk.insert(e, std::make_move_iterator(out.begin() + static_cast<std::ptrdiff_t>(common)),
                     std::make_move_iterator(out.end()));
      }
      rebalance(lo.chunk);
      return;
    }
    // The splice crosses chunks: join the prefix of the first, out and the suffix of the last,
    // then cut the result into chunks again.
    Chunk joined(chunks_[lo.chunk].begin(),
                 chunks_[lo.chunk].begin() + static_cast<std::ptrdiff_t>(lo.index));
    joined.insert(joined.end(), std::make_move_iterator(out.begin()),
                  std::make_move_iterator(out.end()));
    const Chunk& last = chunks_[hi.chunk];
    joined.insert(joined.end(), last.begin() + static_cast<std::ptrdiff_t>(hi.index), last.end());
    const std::size_t made = replace_chunks(lo.chunk, hi.chunk + 1, std::move(joined));
    if (made == 1) rebalance(lo.chunk);
  }

  [[nodiscard]] std::size_t count_between(const Pos& lo, const Pos& hi) const {
    if (lo.chunk == hi.chunk) return hi.index - lo.index;
    std::size_t n = chunks_[lo.chunk].size() - lo.index + hi.index;
    for (std::size_t c = lo.chunk + 1; c < hi.chunk; ++c) n += chunks_[c].size();
    return n;
  }

  // Replaces chunks [from, to) by segs cut into chunks of at most kChunkMax (balanced sizes);
  // returns how many chunks were made. When segs fits, the number of chunks is kept (the segments
  // are redistributed, as a B-tree borrows from a sibling) so that the chunk array is not shifted,
  // and the existing chunk buffers are reused.
  std::size_t replace_chunks(std::size_t from, std::size_t to, Chunk&& segs) {
    const std::size_t keep = to - from;
    std::size_t pieces = (segs.size() + kChunkMax - 1) / kChunkMax;
    if (keep > pieces && segs.size() / keep >= kChunkMin) pieces = keep;
    const auto f = static_cast<std::ptrdiff_t>(from);
    const auto t = static_cast<std::ptrdiff_t>(to);
    if (pieces > keep) {
      chunks_.insert(chunks_.begin() + t, pieces - keep, Chunk{});
      chunk_end_.insert(chunk_end_.begin() + t, pieces - keep, 0);
    } else if (pieces < keep) {
      const auto p = static_cast<std::ptrdiff_t>(pieces);
      chunks_.erase(chunks_.begin() + f + p, chunks_.begin() + t);
      chunk_end_.erase(chunk_end_.begin() + f + p, chunk_end_.begin() + t);
    }
    std::size_t taken = 0;
    for (std::size_t k = 0; k < pieces; ++k) {
      const std::size_t take = (segs.size() - taken) / (pieces - k);
      const auto b = segs.begin() + static_cast<std::ptrdiff_t>(taken);
      Chunk& chunk = chunks_[from + k];
      chunk.clear();
      chunk.reserve(kChunkMax);
      chunk.insert(chunk.end(), std::make_move_iterator(b),
                   std::make_move_iterator(b + static_cast<std::ptrdiff_t>(take)));
      chunk_end_[from + k] = chunk.back().range.end;
      taken += take;
    }
    return pieces;
  }

  // Restores the size bounds of chunk c after it changed: drops it if empty, cuts it if too
  // large, joins it with a neighbour if too small.
  void rebalance(std::size_t c) {
    Chunk& chunk = chunks_[c];
    if (chunk.empty()) {
      replace_chunks(c, c + 1, Chunk{});
      return;
    }
    chunk_end_[c] = chunk.back().range.end;
    if (chunk.size() > kChunkMax) {
      Chunk whole = std::move(chunk);  // replace_chunks overwrites chunks_[c]
      replace_chunks(c, c + 1, std::move(whole));
    } else if (chunk.size() < kChunkMin && chunks_.size() > 1) {
      const std::size_t left = c + 1 < chunks_.size() ? c : c - 1;
      Chunk joined = std::move(chunks_[left]);
      joined.insert(joined.end(), std::make_move_iterator(chunks_[left + 1].begin()),
                    std::make_move_iterator(chunks_[left + 1].end()));
      replace_chunks(left, left + 2, std::move(joined));
    }
  }

  void check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
    if (size_ <= kFullCheckLimit) check_invariants();
#endif
  }
  // Whole-structure checks are linear; above this size they would make debug runs quadratic.
  static constexpr std::size_t kFullCheckLimit = 4096;

  std::vector<Chunk> chunks_;
  std::vector<std::uint64_t> chunk_end_;  // chunk_end_[c] == chunks_[c].back().range.end
  std::size_t size_ = 0;

  // A change rewrite_set found: the new content of a part of one region (nullopt: unmapped).
  struct Change {
    Interval range;
    std::optional<V> value;
    std::size_t chunk;
  };
  // The lists of one mutation (rewrite's new segments, rewrite_set's changes), kept between
  // mutations so that a map that is changed over and over (a directory, a few segments per
  // launch) allocates nothing for them. Neither lives past the mutation that fills it (rewrite_set
  // calls rewrite, which uses the other list). Not part of the map's value: copies start without.
  struct Scratch {
    std::vector<Segment> segments;
    std::vector<Change> changes;
    Scratch() = default;
    Scratch(const Scratch&) {}
    Scratch(Scratch&&) noexcept {}
    Scratch& operator=(const Scratch&) { return *this; }
    Scratch& operator=(Scratch&&) noexcept { return *this; }
    ~Scratch() = default;
    // A large mutation's list is not kept (the map would hold its memory for good).
    template <typename T>
    static void trim(std::vector<T>& list) {
      static constexpr std::size_t kKeep = 256;
      if (list.capacity() > kKeep) std::vector<T>().swap(list);
    }
  };
  Scratch scratch_;
};

}  // namespace unimem
