// libFuzzer target: decodes its input into a sequence of IntervalMap operations (assign, update,
// update_or_insert, erase, query, for_each_in, at, select; the mutations and queries also over a
// strided IntervalSet, one interval per row) over a 4096-byte window and checks every result, and
// the whole map after every mutation, against the dense oracle of tests/region/.
// Any mismatch aborts with a message naming the operation. Each input runs twice: on a map with
// the default chunk capacity and on one with tiny chunks. The first input byte picks the window:
// at offset 0 or at the very top of the 64-bit offset space.
//
// Reproduce a crash: build/fuzz/fuzz/unimem_fuzz_interval_map <crash-file>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "region/interval_map.hpp"
#include "region/oracle.hpp"

namespace {

using unimem::Interval;
using unimem::IntervalMap;
using unimem::IntervalSet;
namespace oracle = unimem::oracle;

constexpr std::uint64_t kUniverse = 4096;
constexpr std::size_t kMaxOperations = 256;
constexpr int kValues = 4;  // few distinct values, so neighbours merge often

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  [[nodiscard]] bool done() const { return pos_ >= size_; }
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | (byte() << 8)); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "unimem_fuzz_interval_map: MISMATCH: %s\n", what.c_str());
  std::abort();
}

// An interval inside the window: a start anywhere in it and a length that is short (< 64 bytes)
// half of the time, so ranges hit segment edges often.
Interval read_interval(Reader& in, const oracle::Window& w) {
  const std::uint64_t begin = in.u16() % (w.size + 1);
  const std::uint16_t raw = in.u16();
  const std::uint64_t room = w.size - begin;
  const std::uint64_t length = (raw & 1) != 0 ? (raw >> 1) % 64 : (raw >> 1);
  return {w.base + begin, w.base + begin + (length < room ? length : room)};
}

// Rows of up to 64 bytes at a stride of up to 256 from the start of r, within r (one interval when
// the stride leaves no gap).
IntervalSet read_rows(Reader& in, const Interval& r) {
  const std::uint64_t length = 1 + in.byte() % 64;
  const std::uint64_t stride = length + in.byte();
  std::vector<Interval> rows;
  for (std::uint64_t at = r.begin; at < r.end;) {
    rows.emplace_back(at, at + std::min(length, r.end - at));
    if (stride > r.end - at) break;
    at += stride;
  }
  return IntervalSet::from_unsorted(std::move(rows));
}

template <typename Map>
std::string describe(const Map& m) {
  return oracle::to_string<int>(m.segments());
}

template <typename Map>
void check_whole_map(const Map& m, const oracle::DenseMap<int>& d, const std::string& op) {
  try {
    m.check_invariants();
  } catch (const std::exception& e) {
    fail(op + ": " + e.what());
  }
  if (m.segments() != d.segments()) {
    fail(op + ": map " + describe(m) + " but oracle " + oracle::to_string<int>(d.segments()));
  }
}

// Operations 8..11: the IntervalSet forms over rows, against the oracle applied row by row.
template <typename Map>
void run_set_operation(Map& m, oracle::DenseMap<int>& d, int op, const IntervalSet& rows, int v,
                       const std::string& name) {
  const std::string what = name + " rows " + rows.to_string();
  switch (op) {
    case 8:
      m.assign(rows, v);
      for (const Interval& r : rows) d.assign(r, v);
      check_whole_map(m, d, what + " (assign set)");
      break;
    case 9: {
      const auto f = [v](int x) { return (x + v) % kValues; };
      std::vector<typename Map::Segment> expected;  // runs whose value f changes, row by row
      for (const Interval& r : rows) {
        for (const auto& run : d.runs(r)) {
          if (f(run.value) != run.value) expected.push_back(run);
        }
      }
      std::vector<typename Map::Segment> seen;
      m.update(rows, f, [&seen](const Interval& i, int old, int) { seen.push_back({i, old}); });
      for (const Interval& r : rows) d.update(r, f);
      check_whole_map(m, d, what + " (update set)");
      if (seen != expected) fail(what + " (update set): reported changes differ");
      break;
    }
    case 10: {
      const auto f = [v](std::optional<int> x) { return x ? (*x + 1) % kValues : v; };
      m.update_or_insert(rows, f);
      for (const Interval& r : rows) d.update_or_insert(r, f);
      check_whole_map(m, d, what + " (update_or_insert set)");
      break;
    }
    default: {
      const auto pred = [v](int x) { return x >= v; };
      IntervalSet expected;
      std::vector<typename Map::Segment> pieces;
      for (const Interval& r : rows) {
        expected = expected.unite(d.select(r, pred));
        for (const auto& run : d.runs(r)) pieces.push_back(run);
      }
      if (m.select(rows, pred) != expected) fail(what + " (select set): map " + describe(m));
      std::vector<typename Map::Segment> seen;
      m.for_each_in(rows, [&seen](const Interval& i, int x) { seen.push_back({i, x}); });
      if (seen != pieces) fail(what + " (for_each_in set): map " + describe(m));
      if (v == 0) {  // erase rides on this case now and then
        m.erase(rows);
        for (const Interval& r : rows) d.erase(r);
        check_whole_map(m, d, what + " (erase set)");
      }
      break;
    }
  }
}

template <typename Map>
void run(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  const oracle::Window w =
      (in.byte() & 1) != 0 ? oracle::Window::at_top(kUniverse) : oracle::Window{0, kUniverse};
  Map m;
  oracle::DenseMap<int> d(w);
  for (std::size_t step = 0; step < kMaxOperations && !in.done(); ++step) {
    const std::uint8_t op = in.byte();
    const Interval r = read_interval(in, w);
    const int v = in.byte() % kValues;
    const std::string name = "step " + std::to_string(step) + " op " + std::to_string(op % 12) +
                             " range " + r.to_string() + " value " + std::to_string(v);
    if (op % 12 >= 8) {
      run_set_operation(m, d, op % 12, read_rows(in, r), v, name);
      continue;
    }
    switch (op % 8) {
      case 0:
        m.assign(r, v);
        d.assign(r, v);
        check_whole_map(m, d, name + " (assign)");
        break;
      case 1: {
        const auto f = [v](int x) { return (x + v) % kValues; };  // v = 0: identity
        m.update(r, f);
        d.update(r, f);
        check_whole_map(m, d, name + " (update)");
        break;
      }
      case 2: {
        const auto f = [v](std::optional<int> x) { return x ? (*x + 1) % kValues : v; };
        m.update_or_insert(r, f);
        d.update_or_insert(r, f);
        check_whole_map(m, d, name + " (update_or_insert)");
        break;
      }
      case 3:
        m.erase(r);
        d.erase(r);
        check_whole_map(m, d, name + " (erase)");
        break;
      case 4:
        if (m.query(r) != d.runs(r)) {
          fail(name + " (query): map " + describe(m) + " query gives " +
               oracle::to_string<int>(m.query(r)));
        }
        break;
      case 5: {
        std::vector<typename Map::Segment> seen;
        m.for_each_in(r, [&seen](const Interval& i, int x) { seen.push_back({i, x}); });
        if (seen != d.runs(r)) fail(name + " (for_each_in): map " + describe(m));
        break;
      }
      case 6:
        for (std::uint64_t o = r.begin; o < r.end; ++o) {
          if (m.at(o) != d.at(o))
            fail(name + " (at " + std::to_string(o) + "): map " + describe(m));
        }
        break;
      default: {
        const auto pred = [v](int x) { return x >= v; };
        const IntervalSet s = m.select(r, pred);
        if (s != d.select(r, pred)) {
          fail(name + " (select): map " + describe(m) + " gives " + s.to_string());
        }
        break;
      }
    }
  }
  if (m != d.template to_interval_map<Map>())
    fail("final map differs from the map rebuilt from the oracle");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run<IntervalMap<int>>(data, size);     // the production chunk capacity
  run<IntervalMap<int, 4>>(data, size);  // tiny chunks: every chunk split / join path
  return 0;
}
