// libFuzzer target: decodes its input into a sequence of IntervalMap operations (assign, update,
// update_or_insert, erase, query, for_each_in, at, select) over a 4096-byte window and checks every
// result, and the whole map after every mutation, against the dense oracle of tests/region/.
// Any mismatch aborts with a message naming the operation. Each input runs twice: on a map with
// the default chunk capacity and on one with tiny chunks. The first input byte picks the window:
// at offset 0 or at the very top of the 64-bit offset space.
//
// Reproduce a crash: build/fuzz/fuzz/unimem_fuzz_interval_map <crash-file>

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
    const std::string name = "step " + std::to_string(step) + " op " + std::to_string(op % 8) +
                             " range " + r.to_string() + " value " + std::to_string(v);
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
