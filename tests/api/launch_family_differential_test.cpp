// Launch families with shifting scalars: consecutive launches of one kernel whose scalar k moves
// the bytes they read beyond their partition's own rows (floyd-warshall's row k, a column k, a
// window of rows [k, k + w)), k going up, down, jumping, repeating and crossing the partitions'
// boundaries, interrupted by host reads and writes, another kernel, another buffer, another
// partitioning, a failed launch and finish(). Random programs of such families (seed printed,
// UNIMEM_TEST_SEED reproduces one) run on two runtimes side by side over host devices (2 and 3,
// every strategy, sometimes under a device memory cap that evicts): one with every fast path on,
// the defaults, and one with RuntimeOptions::repeat_fast_path off, which turns every shortcut
// off (the repeat path and the periodic replay, the rewrite skip of
// SharedBuffer::acquire_rewriting_last_writes and its families of deferred restarts). The test
// knows nothing of the shortcuts' internals: every host read and the final contents must equal
// a flat memory running the same kernels' code, and after every family the two runtimes must
// agree on the copies (stats), the directories and the adaptive history counts (after a failed
// launch, the copies and counts: see run_program). UNIMEM_TEST_VERBOSE=1 prints every operation.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unimem/runtime.hpp>
#include "api/runtime_core.hpp"
#include "device/host/host_kernel.hpp"
#include "device/host/host_platform.hpp"
#include "history_counts.hpp"
#include "launch_failing_device.hpp"

namespace unimem {
namespace {

using testing::failing_host_devices;
using testing::FailingHostDevices;

constexpr std::uint64_t kN = 24;  // rows and columns of the matrix (uint32 entries)
constexpr std::uint64_t kRow = kN * 4;
constexpr std::uint64_t kBytes = kN * kRow;
constexpr std::uint32_t kMask = 0xFFFFF;  // entries stay below 2^20: the min-plus sums never wrap

std::optional<std::uint32_t> env_seed() {
  if (const char* s = std::getenv("UNIMEM_TEST_SEED"))
    return static_cast<std::uint32_t>(std::stoul(s));
  return std::nullopt;
}

// What a family's launch k reads beyond its partition's own rows.
enum class Shape : std::uint8_t {
  row,     // row k (floyd-warshall's pivot row)
  column,  // column k: one entry of every row
  window,  // rows [k, min(k + w, kN))
};

const char* kernel_name(Shape s) {
  switch (s) {
    case Shape::row:
      return "fam_row";
    case Shape::column:
      return "fam_column";
    case Shape::window:
      return "fam_window";
  }
  return "";
}

// The entries (row * kN + column) launch k reads beyond its own rows, in the order the row
// update below takes them.
std::vector<std::uint64_t> shape_entries(Shape s, std::uint32_t k, std::uint32_t w) {
  std::vector<std::uint64_t> out;
  switch (s) {
    case Shape::row:
      for (std::uint64_t j = 0; j < kN; ++j) out.push_back(k * kN + j);
      break;
    case Shape::column:
      for (std::uint64_t i = 0; i < kN; ++i) out.push_back(i * kN + k);
      break;
    case Shape::window:
      for (std::uint64_t e = k * kN; e < std::min<std::uint64_t>(k + w, kN) * kN; ++e) {
        out.push_back(e);
      }
      break;
  }
  return out;
}

IntervalSet shape_bytes(Shape s, std::uint32_t k, std::uint32_t w) {
  std::vector<Interval> pieces;
  for (const std::uint64_t e : shape_entries(s, k, w)) pieces.emplace_back(e * 4, e * 4 + 4);
  return IntervalSet::from_unsorted(std::move(pieces));
}

// Row i's update from the entries read (`seen`, shape_entries' order, as they were before the
// launch): the kernels and the flat model run this same code, so they agree exactly when the
// runtime gives every partition the right bytes.
void update_row(Shape s, std::uint32_t* row, std::uint64_t i, std::span<const std::uint32_t> seen,
                std::uint32_t k) {
  switch (s) {
    case Shape::row:  // min-plus: dist[i][j] = min(dist[i][j], dist[i][k] + dist[k][j])
      for (std::uint64_t j = 0; j < kN; ++j) {
        const std::uint32_t via = row[k] + seen[j];
        if (via < row[j]) row[j] = via;
      }
      break;
    case Shape::column:
      for (std::uint64_t j = 0; j < kN; ++j) row[j] = (row[j] * 3 + seen[(i + j) % kN]) & kMask;
      break;
    case Shape::window:
      for (std::uint64_t j = 0; j < kN; ++j) {
        row[j] = (row[j] + seen[(i * 7 + j) % seen.size()] + 1) & kMask;
      }
      break;
  }
}

// Arguments: the matrix, k, w (only the window reads w).
std::shared_ptr<HostKernel> family_kernel(Shape s) {
  return std::make_shared<HostKernel>(kernel_name(s), [s](const HostKernelContext& ctx) {
    auto* m = ctx.buffer<std::uint32_t>(0);
    const auto k = ctx.scalar<std::uint32_t>(1);
    const auto w = ctx.scalar<std::uint32_t>(2);
    std::vector<std::uint32_t> seen;
    for (const std::uint64_t e : shape_entries(s, k, w)) seen.push_back(m[e]);
    const std::uint64_t first = ctx.range().offset[0];
    for (std::uint64_t i = first; i < first + ctx.range().global[0]; ++i) {
      update_row(s, m + i * kN, i, seen, k);
    }
  });
}

// How a launch's rows are split: partition p takes rows [bounds[p], bounds[p + 1]) on device
// devices[p] (distinct devices).
struct Split {
  std::vector<std::uint64_t> bounds;
  std::vector<std::size_t> devices;
  bool operator==(const Split&) const = default;
};

std::string describe(const Split& s) {
  std::ostringstream out;
  for (std::size_t p = 0; p < s.devices.size(); ++p) {
    out << (p == 0 ? "" : " ") << "[" << s.bounds[p] << "," << s.bounds[p + 1] << ")@"
        << s.devices[p];
  }
  return out.str();
}

// One launch of a family; a token stands for it (equal launches pass the same token).
struct FamilyLaunch {
  Shape shape = Shape::row;
  std::uint32_t k = 0;
  std::uint32_t w = 1;
  Split split;
  bool operator==(const FamilyLaunch&) const = default;
};

std::string describe(const FamilyLaunch& f) {
  return std::string(kernel_name(f.shape)) + " k=" + std::to_string(f.k) +
         (f.shape == Shape::window ? " w=" + std::to_string(f.w) : "") + " over " +
         describe(f.split);
}

// The flat model of a launch, or of its first `ran` partitions (a launch whose partition `ran`
// failed to enqueue: the partitions before it run, the others never do).
void apply(const FamilyLaunch& f, std::vector<std::uint32_t>& flat,
           std::size_t ran = std::numeric_limits<std::size_t>::max()) {
  std::vector<std::uint32_t> seen;
  for (const std::uint64_t e : shape_entries(f.shape, f.k, f.w)) seen.push_back(flat[e]);
  for (std::size_t p = 0; p < std::min(ran, f.split.devices.size()); ++p) {
    for (std::uint64_t i = f.split.bounds[p]; i < f.split.bounds[p + 1]; ++i) {
      update_row(f.shape, flat.data() + i * kN, i, seen, f.k);
    }
  }
}

struct BuiltLaunch {
  std::vector<LaunchArg> args;
  std::vector<LaunchPartition> partitions;
};

std::vector<std::uint64_t> masks_per_byte(const std::vector<IntervalMap<AgentMask>::Segment>& s,
                                          std::uint64_t size) {
  std::vector<std::uint64_t> out(size, 0);
  for (const auto& seg : s) {
    for (std::uint64_t b = seg.range.begin; b < std::min(seg.range.end, size); ++b) {
      out[b] = seg.value.bits();
    }
  }
  return out;
}

std::string describe(const std::vector<IntervalMap<AgentMask>::Segment>& segments) {
  std::ostringstream out;
  for (const auto& seg : segments) {
    out << "[" << seg.range.begin << "," << seg.range.end << "):" << seg.value.bits() << " ";
  }
  return out.str();
}

struct ProgramSetup {
  std::size_t devices = 2;
  UpdateStrategy strategy = UpdateStrategy::adaptive;
  bool cap = false;       // a device memory cap: a launch of `other` evicts rows of the matrix
  bool peer = true;       // peer copies between the devices (else through the host)
  bool in_order = false;  // devices running their kernels in launch order (eventless streaks)
};

// What the programs of a test did on the runtime with the shortcuts, and on the one without:
// the test asserts that they took the shortcuts (and the other did not), so a program that
// stopped reaching them would fail.
struct Coverage {
  std::uint64_t rewrites = 0;           // RuntimeCore::rewriting_launch_buffers
  std::uint64_t deferred_restarts = 0;  // RuntimeCore::deferred_rewrite_restarts
  std::uint64_t repeats = 0;            // RuntimeCore::repeated_launches
  std::uint64_t lean = 0;               // RuntimeCore::lean_launches (the streak's included)
  std::uint64_t failures = 0;           // failed launches
  std::uint64_t evicted_bytes = 0;
  std::uint64_t slow_shortcuts = 0;  // the same counters on the runtime without the shortcuts
};

// One runtime of the pair.
class Side {
 public:
  Side(const ProgramSetup& s, bool fast) {
    HostDeviceOptions device_options;
    device_options.peer_copies = s.peer;
    FailingHostDevices hosts = failing_host_devices(s.devices, device_options);
    failing_ = hosts.devices;
    for (const auto& d : failing_) d->in_order = s.in_order;
    RuntimeOptions options{s.strategy};
    options.repeat_fast_path = fast;
    options.device_memory = s.cap ? kBytes + 4 * kRow : 0;
    rt_.emplace(std::move(hosts.registry), options);
    dist_ = rt_->create_buffer(kBytes, "dist");
    other_ = rt_->create_buffer(kBytes, "other");
    for (std::size_t i = 0; i < kernels_.size(); ++i) {
      kernels_[i] = family_kernel(static_cast<Shape>(i));
    }
  }

  Runtime& rt() { return *rt_; }
  BufferId dist() const { return dist_; }
  BufferId other() const { return other_; }
  void fail_launches(std::size_t device, bool on) { failing_[device]->fail_launches = on; }

  // The family launch behind its token (one per distinct launch, as Program passes them).
  // Returns whether the lean repeat (RuntimeCore::launch_again) took it; `eventless` overrides
  // the choice below. While it runs, lean_tried() says whether launch_again is being called (for
  // a launch that throws: which path failed).
  bool launch(const FamilyLaunch& f, std::optional<bool> eventless = std::nullopt) {
    std::shared_ptr<const BuiltLaunch> built;
    for (const auto& t : tokens_) {
      if (t.first == f) built = t.second;
    }
    if (!built) {
      auto b = std::make_shared<BuiltLaunch>();
      b->args = {LaunchArg::of_buffer(dist_, {}, {}), LaunchArg::of_scalar<std::uint32_t>(f.k),
                 LaunchArg::of_scalar<std::uint32_t>(f.w)};
      const IntervalSet beyond = shape_bytes(f.shape, f.k, f.w);
      for (std::size_t p = 0; p < f.split.devices.size(); ++p) {
        LaunchPartition part;
        part.device = f.split.devices[p];
        part.kernel = kernels_[static_cast<std::size_t>(f.shape)];
        part.range.dims = 1;
        part.range.offset[0] = f.split.bounds[p];
        part.range.global[0] = f.split.bounds[p + 1] - f.split.bounds[p];
        const IntervalSet own{{f.split.bounds[p] * kRow, f.split.bounds[p + 1] * kRow}};
        part.accesses[0] = AccessBytes{own.unite(beyond), own, {}};
        b->partitions.push_back(std::move(part));
      }
      built = b;
      tokens_.emplace_back(f, built);
    }
    // A tokened launch tries the lean repeat first, as the OpenCL platform does (half of them
    // asking for no event: the eventless streak).
    lean_tried_ = true;
    if (rt_->core()
            .launch_again(built.get(), built->args, eventless.value_or(f.k % 2 == 0))
            .has_value()) {
      return true;
    }
    lean_tried_ = false;
    rt_->core().launch_partitioned(built->args, built->partitions, nullptr, built);
    return false;
  }
  bool lean_tried() const { return lean_tried_; }
  const testing::LaunchFailingDevice& device(std::size_t d) const { return *failing_[d]; }

  // Another kernel on the matrix (rows [first, first + rows) halved on one device), and one on
  // the other buffer (all of it written on one device: under the cap it evicts matrix rows).
  void halve_rows(std::size_t device, std::uint64_t first, std::uint64_t rows) {
    Launch l;
    l.device = device;
    l.kernel =
        std::make_shared<HostKernel>("halve_rows", [first, rows](const HostKernelContext& c) {
          auto* m = c.buffer<std::uint32_t>(0);
          for (std::uint64_t e = first * kN; e < (first + rows) * kN; ++e) m[e] /= 2;
        });
    l.range.dims = 1;
    l.range.global[0] = 1;
    const IntervalSet bytes{{first * kRow, (first + rows) * kRow}};
    l.args = {LaunchArg::of_buffer(dist_, bytes, bytes)};
    rt_->core().launch(l);
  }
  void fill_other(std::size_t device, std::uint32_t value) {
    Launch l;
    l.device = device;
    l.kernel = std::make_shared<HostKernel>("fill_other", [value](const HostKernelContext& c) {
      auto* m = c.buffer<std::uint32_t>(0);
      for (std::uint64_t e = 0; e < kN * kN; ++e) m[e] = value + static_cast<std::uint32_t>(e);
    });
    l.range.dims = 1;
    l.range.global[0] = 1;
    const IntervalSet all{{0, kBytes}};
    l.args = {LaunchArg::of_buffer(other_, {}, all)};
    rt_->core().launch(l);
  }
  // The matrix as a kernel on `device` reads it: copied whole into the other buffer, read back.
  std::vector<std::uint32_t> read_on_device(std::size_t device) {
    Launch l;
    l.device = device;
    l.kernel = std::make_shared<HostKernel>("copy_matrix", [](const HostKernelContext& c) {
      std::copy_n(c.buffer<std::uint32_t>(0), kN * kN, c.buffer<std::uint32_t>(1));
    });
    l.range.dims = 1;
    l.range.global[0] = 1;
    const IntervalSet all{{0, kBytes}};
    l.args = {LaunchArg::of_buffer(dist_, all, {}), LaunchArg::of_buffer(other_, {}, all)};
    rt_->core().launch(l);
    return read(other_, 0, kN * kN);
  }

  std::vector<std::uint32_t> read(BufferId b, std::uint64_t at, std::uint64_t count) {
    std::vector<std::uint32_t> out(count);
    rt_->read_blocking(b, at * 4, std::as_writable_bytes(std::span(out)));
    return out;
  }

  // What the other runtime must equal after a family.
  struct State {
    std::string stats;
    std::vector<IntervalMap<AgentMask>::Segment> dist_directory;
    std::vector<IntervalMap<AgentMask>::Segment> other_directory;
    std::vector<int> history_counts;
  };
  State state() {
    State s;
    s.stats = rt_->stats().to_json();
    s.dist_directory = rt_->core().directory_segments(dist_);
    s.other_directory = rt_->core().directory_segments(other_);
    const std::vector<BufferId> buffers{dist_, other_};
    s.history_counts = testing::history_counts(
        *rt_, buffers,
        {"fam_row", "fam_column", "fam_window", "halve_rows", "fill_other", "copy_matrix"},
        rt_->device_count());
    return s;
  }

  std::uint64_t shortcuts() const {
    return rt_->core().rewriting_launch_buffers() + rt_->core().repeated_launches() +
           rt_->core().periodic_replays() + rt_->core().lean_launches();
  }

 private:
  std::vector<std::shared_ptr<testing::LaunchFailingDevice>> failing_;
  std::optional<Runtime> rt_;
  BufferId dist_{};
  BufferId other_{};
  std::array<std::shared_ptr<HostKernel>, 3> kernels_;
  std::vector<std::pair<FamilyLaunch, std::shared_ptr<const BuiltLaunch>>> tokens_;
  bool lean_tried_ = false;
};

Split random_split(std::mt19937& rng, std::size_t devices) {
  Split s;
  const std::size_t parts = devices > 1 && rng() % 5 == 0 ? devices - 1 : devices;
  std::vector<std::size_t> order(devices);
  for (std::size_t d = 0; d < devices; ++d) order[d] = d;
  if (rng() % 3 == 0) std::shuffle(order.begin(), order.end(), rng);
  s.devices.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(parts));
  std::uint64_t lo = 0;
  std::uint64_t hi = kN;
  if (rng() % 4 == 0) {  // a range of the rows
    lo = rng() % (kN / 3);
    hi = kN - rng() % (kN / 3);
  }
  s.bounds.push_back(lo);
  if (rng() % 2 == 0) {  // even
    for (std::size_t p = 1; p < parts; ++p) s.bounds.push_back(lo + (hi - lo) * p / parts);
  } else {  // uneven: distinct cuts, each partition at least one row
    std::vector<std::uint64_t> cuts;
    while (cuts.size() + 1 < parts) {
      const std::uint64_t c = lo + 1 + rng() % (hi - lo - 1);
      if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
    }
    std::sort(cuts.begin(), cuts.end());
    s.bounds.insert(s.bounds.end(), cuts.begin(), cuts.end());
  }
  s.bounds.push_back(hi);
  return s;
}

// The scalars of one family: up, down, jumping, repeating (each k twice, or a pair again) or
// crossing a boundary between partitions.
std::vector<std::uint32_t> random_ks(std::mt19937& rng, const Split& split, std::string& kind) {
  const std::size_t length = 3 + rng() % 8;
  std::vector<std::uint32_t> ks;
  const auto k0 = static_cast<std::uint32_t>(rng() % kN);
  switch (rng() % 5) {
    case 0:
      kind = "up";
      for (std::size_t i = 0; i < length; ++i)
        ks.push_back(static_cast<std::uint32_t>((k0 + i) % kN));
      break;
    case 1:
      kind = "down";
      for (std::size_t i = 0; i < length; ++i) {
        ks.push_back(static_cast<std::uint32_t>((k0 + kN - i % kN) % kN));
      }
      break;
    case 2:
      kind = "jumping";
      for (std::size_t i = 0; i < length; ++i) ks.push_back(static_cast<std::uint32_t>(rng() % kN));
      break;
    case 3:
      kind = "repeating";
      for (std::size_t i = 0; ks.size() < length; ++i) {
        const auto k = static_cast<std::uint32_t>((k0 + i) % kN);
        ks.push_back(k);
        ks.push_back(rng() % 3 == 0 ? static_cast<std::uint32_t>((k0 + i + 1) % kN) : k);
      }
      break;
    default: {
      kind = "crossing";
      const std::uint64_t boundary =
          split.devices.size() > 1 ? split.bounds[1 + rng() % (split.devices.size() - 1)] : kN / 2;
      const std::uint64_t from = boundary >= 3 ? boundary - 3 : 0;
      const std::uint64_t to = std::min<std::uint64_t>(boundary + 3, kN);
      const bool down = rng() % 2 == 0;
      for (std::uint64_t k = from; k < to; ++k) {
        ks.push_back(static_cast<std::uint32_t>(down ? to - 1 - (k - from) : k));
      }
      break;
    }
  }
  return ks;
}

// One random program on the pair of runtimes, in lockstep; every check names the seed, the
// setup and the operation.
void run_program(const ProgramSetup& setup, std::uint32_t seed, Coverage& coverage) {
  std::mt19937 rng(seed);
  Side fast(setup, true);
  Side slow(setup, false);
  std::array<Side*, 2> sides{&fast, &slow};
  const std::array<const char*, 2> side_names{"with the shortcuts", "without them"};
  std::vector<std::uint32_t> flat(kN * kN);
  for (std::uint32_t& v : flat) v = 1 + static_cast<std::uint32_t>(rng() % 1000);
  for (std::uint64_t i = 0; i < kN; ++i) flat[i * kN + i] = 0;
  std::vector<std::uint32_t> other_flat(kN * kN, 0);
  for (Side* s : sides) s->rt().write_blocking(s->dist(), 0, std::as_bytes(std::span(flat)));
  std::uint64_t op = 0;
  std::string what = "the first write";
  const auto where = [&] {
    return "seed " + std::to_string(seed) + " (UNIMEM_TEST_SEED=" + std::to_string(seed) + "), " +
           std::to_string(setup.devices) + " devices, " + std::string(to_string(setup.strategy)) +
           (setup.cap ? ", capped" : "") + (setup.peer ? "" : ", no peer copies") + ", operation " +
           std::to_string(op) + " (" + what + ")";
  };
  // UNIMEM_TEST_VERBOSE=1 prints every operation (with UNIMEM_TEST_SEED: one program's).
  const bool verbose = std::getenv("UNIMEM_TEST_VERBOSE") != nullptr;
  const auto step = [&] {
    if (verbose) std::cout << where() << "\n";
  };
  const auto settle = [&] {  // under the cap what is evicted must not depend on timing
    if (!setup.cap) return;
    for (Side* s : sides) s->rt().finish();
  };
  const auto check_read = [&](std::uint64_t at, std::uint64_t count) {
    if (count == 0) return;
    const std::vector<std::uint32_t> want(flat.begin() + static_cast<std::ptrdiff_t>(at),
                                          flat.begin() + static_cast<std::ptrdiff_t>(at + count));
    for (std::size_t i = 0; i < sides.size(); ++i) {
      EXPECT_EQ(sides[i]->read(sides[i]->dist(), at, count), want)
          << where() << ": the host read " << side_names[i];
    }
  };
  const auto compare_states = [&] {
    const Side::State a = fast.state();
    const Side::State b = slow.state();
    EXPECT_EQ(a.stats, b.stats) << where() << ": the copies";
    EXPECT_TRUE(a.dist_directory == b.dist_directory)
        << where()
        << ": the matrix's directory\n  with the shortcuts: " << describe(a.dist_directory)
        << "\n  without them:       " << describe(b.dist_directory);
    EXPECT_TRUE(a.other_directory == b.other_directory) << where() << ": the other directory";
    EXPECT_EQ(a.history_counts, b.history_counts) << where() << ": the history counts";
  };
  // An exception (an invariant check, a device error) is reported with the operation too.
  try {
    // Half the programs have one failed launch: its partitions before the failing one run and
    // their writes are published, the others never run (RuntimeCore::publish_failed_launch_locked).
    // The two runtimes then agree on the copies and the histories; a rewrite skip may leave fewer
    // current copies than the full path (it never marked the rows it copied for the failed
    // partitions), and from then on only the flat model's bytes are compared (diverged).
    const bool may_fail = rng() % 2 == 0;
    bool failed_once = false;
    bool diverged = false;
    Split split{{0}, {}};
    for (std::size_t d = 0; d < setup.devices; ++d) {
      split.devices.push_back(d);
      split.bounds.push_back(kN * (d + 1) / setup.devices);
    }
    const int families = 6 + static_cast<int>(rng() % 5);
    for (int family = 0; family < families; ++family) {
      const auto shape = static_cast<Shape>(rng() % 3);
      const auto w = static_cast<std::uint32_t>(1 + rng() % 4);
      if (family > 0 && rng() % 3 == 0) split = random_split(rng, setup.devices);
      std::string kind;
      const std::vector<std::uint32_t> ks = random_ks(rng, split, kind);
      for (const std::uint32_t k : ks) {
        const FamilyLaunch f{shape, k, w, split};
        ++op;
        if (may_fail && !failed_once && rng() % 20 == 0) {
          // A failed launch: the kernel of partition p cannot be enqueued on its device; the
          // partitions before it ran (AFailedLaunchLeavesOneValueForEachByte below).
          failed_once = true;
          const std::size_t p = rng() % split.devices.size();
          what = "family " + std::to_string(family) + " (" + kind + "), " + describe(f) +
                 ", failing on device " + std::to_string(split.devices[p]);
          step();
          const std::uint64_t before = fast.shortcuts();
          for (Side* s : sides) {
            s->rt().finish();
            s->fail_launches(split.devices[p], true);
            EXPECT_THROW(s->launch(f), DeviceError) << where();
            s->fail_launches(split.devices[p], false);
            s->rt().finish();
          }
          apply(f, flat, p);
          ++coverage.failures;
          // The fast side's skip (had it taken one) leaves fewer current copies than the full
          // path, never another one, and the same copies and histories.
          const Side::State a = fast.state();
          const Side::State b = slow.state();
          EXPECT_EQ(a.stats, b.stats) << where() << ": the copies after the failed launch";
          EXPECT_EQ(a.history_counts, b.history_counts)
              << where() << ": the history counts after the failed launch";
          const std::vector<std::uint64_t> fa = masks_per_byte(a.dist_directory, kBytes);
          const std::vector<std::uint64_t> sa = masks_per_byte(b.dist_directory, kBytes);
          for (std::uint64_t byte = 0; byte < kBytes; ++byte) {
            if ((fa[byte] & ~sa[byte]) != 0 || fa[byte] == 0) {
              ADD_FAILURE() << where() << ": after the failed launch byte " << byte
                            << " is current on agents " << fa[byte] << " with the shortcuts, "
                            << sa[byte] << " without them";
              break;
            }
          }
          if (a.dist_directory != b.dist_directory) {
            EXPECT_GT(fast.shortcuts(), before) << where() << ": directories differ without a skip";
            diverged = true;
          }
          check_read(0, kN * kN);
          continue;
        }
        what = "family " + std::to_string(family) + " (" + kind + "), " + describe(f);
        step();
        for (Side* s : sides) s->launch(f);
        apply(f, flat);
        settle();
        if (rng() % 5 != 0) continue;
        ++op;
        switch (rng() % 6) {
          case 0: {
            const std::uint64_t at = rng() % (kN * kN);
            const std::uint64_t count = 1 + rng() % std::min<std::uint64_t>(3 * kN, kN * kN - at);
            what = "a host read of entries [" + std::to_string(at) + ", +" + std::to_string(count) +
                   ")";
            check_read(at, count);
            break;
          }
          case 1: {
            const std::uint64_t at = rng() % (kN * kN);
            const std::uint64_t count = 1 + rng() % std::min<std::uint64_t>(2 * kN, kN * kN - at);
            what = "a host write of entries [" + std::to_string(at) + ", +" +
                   std::to_string(count) + ")";
            step();
            for (std::uint64_t e = at; e < at + count; ++e) {
              flat[e] = static_cast<std::uint32_t>(rng() % 1000);
            }
            for (Side* s : sides) {
              s->rt().write_blocking(s->dist(), at * 4,
                                     std::as_bytes(std::span(flat).subspan(at, count)));
            }
            break;
          }
          case 2: {
            const std::size_t device = rng() % setup.devices;
            const std::uint64_t first = rng() % kN;
            const std::uint64_t rows = 1 + rng() % std::min<std::uint64_t>(4, kN - first);
            what = "rows [" + std::to_string(first) + ", +" + std::to_string(rows) +
                   ") halved on device " + std::to_string(device);
            step();
            for (Side* s : sides) s->halve_rows(device, first, rows);
            for (std::uint64_t e = first * kN; e < (first + rows) * kN; ++e) flat[e] /= 2;
            break;
          }
          case 3: {
            const std::size_t device = rng() % setup.devices;
            const auto value = static_cast<std::uint32_t>(rng() % 1000);
            what = "the other buffer filled on device " + std::to_string(device);
            step();
            for (Side* s : sides) s->fill_other(device, value);
            for (std::uint64_t e = 0; e < kN * kN; ++e) {
              other_flat[e] = value + static_cast<std::uint32_t>(e);
            }
            break;
          }
          case 4:
            what = "finish";
            step();
            for (Side* s : sides) s->rt().finish();
            break;
          default: {  // one launch of another family's kernel in the middle
            const FamilyLaunch g{static_cast<Shape>((static_cast<int>(shape) + 1) % 3),
                                 static_cast<std::uint32_t>(rng() % kN), w, split};
            what = "another kernel's launch in the middle: " + describe(g);
            step();
            for (Side* s : sides) s->launch(g);
            apply(g, flat);
            break;
          }
        }
        settle();
      }
      ++op;
      what = "the end of family " + std::to_string(family);
      step();
      if (!diverged) compare_states();
      if (::testing::Test::HasFailure()) return;
    }
    ++op;
    what = "the final contents";
    step();
    check_read(0, kN * kN);
    for (std::size_t i = 0; i < sides.size(); ++i) {
      EXPECT_EQ(sides[i]->read(sides[i]->other(), 0, kN * kN), other_flat)
          << where() << ": the other buffer " << side_names[i];
    }
    if (!diverged) compare_states();
    coverage.rewrites += fast.rt().core().rewriting_launch_buffers();
    coverage.deferred_restarts += fast.rt().core().deferred_rewrite_restarts(fast.dist());
    coverage.repeats += fast.rt().core().repeated_launches();
    coverage.lean += fast.rt().core().lean_launches();
    coverage.evicted_bytes += fast.rt().stats().evicted_bytes;
    coverage.slow_shortcuts += slow.shortcuts();
  } catch (const std::exception& e) {
    ADD_FAILURE() << where() << ": " << e.what();
  }
}

// Every setup for each seed; returns what the programs covered.
Coverage run_seeds(std::uint32_t first, std::uint32_t count) {
  Coverage coverage;
  for (std::uint32_t seed = first; seed < first + count; ++seed) {
    std::cout << "seed " << seed << " (UNIMEM_TEST_SEED=" << seed << " reproduces it)\n";
    for (const std::size_t devices : {std::size_t{2}, std::size_t{3}}) {
      for (const UpdateStrategy strategy : {UpdateStrategy::lazy, UpdateStrategy::adaptive,
                                            UpdateStrategy::batch, UpdateStrategy::balance}) {
        for (const bool cap : {false, true}) {
          // Peer copies in two programs of three (the rewrite skip needs them).
          const ProgramSetup setup{devices, strategy, cap, (seed + devices) % 3 != 0};
          run_program(setup, seed, coverage);
          if (::testing::Test::HasFailure()) return coverage;
        }
      }
    }
  }
  return coverage;
}

void expect_covered(const Coverage& c) {
  EXPECT_GT(c.rewrites, 0U) << "no launch skipped its directory steps by rewriting";
  EXPECT_GT(c.deferred_restarts, 0U) << "no family deferred its history restarts";
  EXPECT_GT(c.repeats, 0U) << "no launch took the repeat path";
  EXPECT_GT(c.lean, 0U) << "no launch took the lean repeat";
  EXPECT_GT(c.failures, 0U) << "no launch failed";
  EXPECT_GT(c.evicted_bytes, 0U) << "nothing was evicted under the cap";
  EXPECT_EQ(c.slow_shortcuts, 0U) << "the runtime without the fast path took a shortcut";
}

TEST(LaunchFamilyDifferential, RandomFamiliesMatchFlatMemoryAndTheRuntimeWithoutShortcuts) {
  const std::optional<std::uint32_t> seed = env_seed();
  const Coverage coverage = run_seeds(seed.value_or(700), seed ? 1 : 10);
  if (!seed && !::testing::Test::HasFailure()) expect_covered(coverage);
}

// The same with many more seeds (label api-slow: tests/CMakeLists.txt).
TEST(LaunchFamilyDifferential, SlowManySeedsMatchFlatMemoryAndTheRuntimeWithoutShortcuts) {
  const std::optional<std::uint32_t> seed = env_seed();
  const Coverage coverage = run_seeds(seed.value_or(1000), seed ? 1 : 100);
  if (!seed && !::testing::Test::HasFailure()) expect_covered(coverage);
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// Found by the random programs (seed 701, 2 devices, batch): a launch failing after some
// partitions ran. Rows [0, 12) were written on device 0; the launch reads and writes them on
// device 1 (a copy from device 0 first), its partition on device 0 fails to enqueue, the one on
// device 1 runs. Its writes were not published, so the directory held rows [0, 12) current on
// both devices, which then differed: a host read and a kernel on device 1 saw different values.
// The writes of the partitions that ran are now published (publish_failed_launch_locked).
TEST(LaunchFamilyDifferential, AFailedLaunchLeavesOneValueForEachByte) {
  FailingHostDevices hosts = failing_host_devices(2);
  const auto failing = hosts.devices;
  Runtime rt(std::move(hosts.registry), RuntimeOptions{UpdateStrategy::lazy});
  const BufferId dist = rt.create_buffer(kBytes, "dist");
  const BufferId copy = rt.create_buffer(kRow, "copy");
  std::vector<std::uint32_t> flat(kN * kN, 0);
  rt.write_blocking(dist, 0, std::as_bytes(std::span(flat)));
  const auto add = std::make_shared<HostKernel>("add_one", [](const HostKernelContext& c) {
    auto* m = c.buffer<std::uint32_t>(0);
    const std::uint64_t first = c.range().offset[0];
    for (std::uint64_t e = first * kN; e < (first + c.range().global[0]) * kN; ++e) m[e] += 1;
  });
  const auto launch = [&](std::size_t first_device) {
    std::vector<LaunchPartition> parts;
    for (std::size_t p = 0; p < 2; ++p) {
      LaunchPartition part;
      part.device = p == 0 ? first_device : 1 - first_device;
      part.kernel = add;
      part.range.dims = 1;
      part.range.offset[0] = p * kN / 2;
      part.range.global[0] = kN / 2;
      const IntervalSet own{{p * kBytes / 2, (p + 1) * kBytes / 2}};
      part.accesses[0] = AccessBytes{own, own, {}};
      parts.push_back(std::move(part));
    }
    const std::vector<LaunchArg> args{LaunchArg::of_buffer(dist, {}, {})};
    rt.core().launch_partitioned(args, parts);
  };
  launch(0);  // rows [0, 12) += 1 on device 0
  rt.finish();
  failing[0]->fail_launches = true;
  EXPECT_THROW(launch(1), DeviceError);  // rows [0, 12) on device 1 (ran), [12, 24) on device 0
  failing[0]->fail_launches = false;
  rt.finish();
  // Row 0 as the host reads it, and as a kernel on device 1 reads it (copied to `copy`).
  std::vector<std::uint32_t> host(kN);
  rt.read_blocking(dist, 0, std::as_writable_bytes(std::span(host)));
  Launch l;
  l.device = 1;
  l.kernel = std::make_shared<HostKernel>("copy_row", [](const HostKernelContext& c) {
    std::copy_n(c.buffer<std::uint32_t>(0), kN, c.buffer<std::uint32_t>(1));
  });
  l.range.dims = 1;
  l.range.global[0] = 1;
  l.args = {LaunchArg::of_buffer(dist, IntervalSet{{0, kRow}}, {}),
            LaunchArg::of_buffer(copy, {}, IntervalSet{{0, kRow}})};
  rt.core().launch(l);
  std::vector<std::uint32_t> on_device(kN);
  rt.read_blocking(copy, 0, std::as_writable_bytes(std::span(on_device)));
  EXPECT_EQ(host, on_device) << "row 0 read by the host and by a kernel on device 1 (agents "
                             << rt.core().valid_agents(dist, 0).bits() << " hold it)";
  // The partition that ran (rows [0, 12) on device 1) added one again; the other did not.
  EXPECT_EQ(host, std::vector<std::uint32_t>(kN, 2));
  std::vector<std::uint32_t> last(kN);
  rt.read_blocking(dist, kBytes - kRow, std::as_writable_bytes(std::span(last)));
  EXPECT_EQ(last, std::vector<std::uint32_t>(kN, 1));
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// Found by the random programs (seed 1000, 2 devices, adaptive, no peer copies): a launch
// repeated behind its token until its repeat skips the directory steps, then a repeat that fails
// to enqueue. The repeat path counted the run in the adaptive history before submitting the
// kernels (count_unchanged_rewrite), the full path did not, so the histories differed by one
// repeat afterwards. Now each counts only a launch that went through, and publishes the writes of
// the partitions a failed one enqueued (publish_failed_launch_locked).
TEST(LaunchFamilyDifferential, AFailedRepeatCountsAsTheFullPathDoes) {
  std::array<std::vector<int>, 2> counts;
  for (const bool fast : {true, false}) {
    const ProgramSetup setup{2, UpdateStrategy::adaptive, false, false};
    Side side(setup, fast);
    std::vector<std::uint32_t> flat(kN * kN, 1);
    side.rt().write_blocking(side.dist(), 0, std::as_bytes(std::span(flat)));
    const FamilyLaunch f{Shape::column, 3, 1, Split{{0, kN}, {0}}};
    for (int i = 0; i < 4; ++i) side.launch(f);
    side.rt().finish();
    side.fail_launches(0, true);
    EXPECT_THROW(side.launch(f), DeviceError);
    side.fail_launches(0, false);
    side.rt().finish();
    counts[fast ? 0 : 1] = side.state().history_counts;
  }
  EXPECT_EQ(counts[0], counts[1]) << "the history counts with the repeat path and without it";
}

}  // namespace
}  // namespace unimem

namespace unimem {
namespace {

// A lean repeat (RuntimeCore::launch_again) or a launch of an eventless streak
// (launch_in_streak_locked) whose partition on device 1 fails to enqueue after the one on device
// 0 was enqueued: the first lean repeat, or one after three others (in the streak: the launch
// opening it, launch_in_order, or one continuing it, launch_in_order_again). Both run only after a
// repeat that skipped the directory steps, whose verification (repeat_changes_nothing) found every
// partition's written rows current on its device alone: the directory already says what the
// partition that ran leaves, so the bytes keep one value whether or not the failure publishes
// anything. What the publication (publish_failed_launch_locked) changes is the rest of the state a
// launch of the partition that ran alone leaves: under adaptive the history closes the entry's
// recording and opens one for the kernel on device 0 alone, and the buffer's last writes become
// that partition's. A runtime without the fast path (repeat_fast_path off) runs every launch in
// full, so it is the oracle: the history counts and the copies must be its own, right after the
// failure and after the launches that follow; the host and a kernel on each device must read what a
// flat memory holds.
enum class LeanPath : std::uint8_t { lean, streak };

struct FailedLeanObserved {
  std::vector<std::vector<std::uint32_t>> reads;  // the host's, then a kernel's on each device
  std::vector<Side::State> states;  // right after the failure, after the next launch, at the end
  std::uint64_t rewrites = 0;  // the launch after the failure: its buffers that took the rewrite
};

FailedLeanObserved run_failed_lean(UpdateStrategy strategy, LeanPath path, int leans_before,
                                   bool fast) {
  const ProgramSetup setup{2, strategy, false, true, path == LeanPath::streak};
  Side side(setup, fast);
  const std::string where = std::string(to_string(strategy)) +
                            (path == LeanPath::lean ? ", lean repeat" : ", streak") + " after " +
                            std::to_string(leans_before) + " lean ones" +
                            (fast ? ", with the shortcuts" : ", without them");
  std::mt19937 rng(42);
  std::vector<std::uint32_t> flat(kN * kN);
  for (std::uint32_t& v : flat) v = 1 + static_cast<std::uint32_t>(rng() % 1000);
  side.rt().write_blocking(side.dist(), 0, std::as_bytes(std::span(flat)));
  // Rows [4, 14) on device 0 and [14, 20) on device 1, each reading its own rows and row 1, which
  // no partition writes: the repeat path may skip the directory steps (repeat_leaves_directory).
  const FamilyLaunch f{Shape::row, 1, 1, Split{{4, 14, 20}, {0, 1}}};
  const bool eventless = path == LeanPath::streak;
  const auto run = [&](const FamilyLaunch& l, int times) {
    for (int i = 0; i < times; ++i) {
      side.launch(l, eventless);
      apply(l, flat);
    }
  };
  // The full path, then a repeat skipping the directory steps, after which the launch may go
  // lean (under adaptive one repeat more: the first runs the directory steps, its recording not
  // yet the empty one repeat_changes_nothing asks for).
  run(f, strategy == UpdateStrategy::adaptive ? 3 : 2);
  EXPECT_EQ(side.rt().core().lean_launches(), 0U) << where << ": a lean repeat came early";
  // Lean repeats: launch_again, each with its event, or an eventless streak (the first launch
  // opens it, launch_in_order; the next ones continue it, launch_in_order_again).
  for (int i = 0; i < leans_before; ++i) {
    EXPECT_EQ(side.launch(f, eventless), fast) << where << ": lean repeat " << i;
    apply(f, flat);
  }
  const int opened_before = side.device(1).in_order_launches;
  const int again_before = side.device(1).in_order_again_launches;
  side.fail_launches(1, true);
  EXPECT_THROW(side.launch(f, eventless), DeviceError) << where;
  side.fail_launches(1, false);
  apply(f, flat, 1);  // the partition on device 0 ran, the one on device 1 did not
  if (fast) {
    EXPECT_TRUE(side.lean_tried()) << where << ": the failed launch was no lean repeat";
    if (path == LeanPath::streak) {
      if (leans_before == 0) {
        EXPECT_EQ(side.device(1).in_order_launches, opened_before + 1)
            << where << ": the failed launch did not open a streak";
      } else {
        EXPECT_EQ(side.device(1).in_order_again_launches, again_before + 1)
            << where << ": the failed launch did not continue the streak";
      }
    }
  }
  FailedLeanObserved seen;
  const auto check_reads = [&](std::size_t first) {
    for (std::size_t i = first; i < seen.reads.size(); ++i) {
      EXPECT_EQ(seen.reads[i], flat)
          << where << ": the matrix as " << (i == first ? "the host" : "a kernel on a device")
          << " reads it (read " << i << ")";
    }
  };
  const auto observe = [&] {
    side.rt().finish();
    seen.states.push_back(side.state());
    const std::size_t first = seen.reads.size();
    seen.reads.push_back(side.read(side.dist(), 0, kN * kN));
    for (std::size_t d = 0; d < 2; ++d) seen.reads.push_back(side.read_on_device(d));
    check_reads(first);
  };
  // Right after the failure: the state, and the host's read (it leaves the directory and the
  // last writes as they are: RuntimeCore::read).
  side.rt().finish();
  seen.states.push_back(side.state());
  seen.reads.push_back(side.read(side.dist(), 0, kN * kN));
  check_reads(0);
  // The buffer's last writes: the full path leaves those of the partition that ran, rows [4, 14)
  // on device 0, so a launch of both partitions reading row 15 (device 1's rows) does not rewrite
  // them (SharedBuffer::prepare_rewrite); had the failure left both partitions' writes, it would.
  const std::uint64_t rewrites = side.rt().core().rewriting_launch_buffers();
  run(FamilyLaunch{Shape::row, 15, 1, f.split}, 1);
  seen.rewrites = side.rt().core().rewriting_launch_buffers() - rewrites;
  observe();
  // The same launch again (full, repeat, lean), another row k read, and the first again.
  run(f, 5);
  run(FamilyLaunch{Shape::row, 2, 1, f.split}, 4);
  run(f, 4);
  observe();
  return seen;
}

void expect_failed_lean_as_full_path(UpdateStrategy strategy, LeanPath path, int leans_before) {
  const FailedLeanObserved fast = run_failed_lean(strategy, path, leans_before, true);
  const FailedLeanObserved slow = run_failed_lean(strategy, path, leans_before, false);
  EXPECT_EQ(fast.rewrites, slow.rewrites)
      << "the launch after the failed one rewrote the last writes of the launch before it: the "
         "failed launch did not leave the writes of the partition that ran as the last ones";
  ASSERT_EQ(fast.states.size(), slow.states.size());
  for (std::size_t i = 0; i < fast.states.size(); ++i) {
    const std::array<const char*, 3> whens{"right after the failed launch",
                                           "after the launch that follows it", "at the end"};
    const char* when = whens.at(i);
    EXPECT_EQ(fast.states[i].history_counts, slow.states[i].history_counts)
        << when << ": the history counts with the shortcuts and without them";
    EXPECT_EQ(fast.states[i].stats, slow.states[i].stats)
        << when << ": the copies with the shortcuts and without them";
    EXPECT_TRUE(fast.states[i].dist_directory == slow.states[i].dist_directory)
        << when << ": the matrix's directory\n  with the shortcuts: "
        << describe(fast.states[i].dist_directory)
        << "\n  without them:       " << describe(slow.states[i].dist_directory);
  }
}

TEST(LaunchFamilyDifferential, AFailedLeanRepeatLeavesWhatTheFullPathLeaves) {
  for (const UpdateStrategy s : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    for (const int leans_before : {0, 3}) {
      SCOPED_TRACE(std::string(to_string(s)) + ", after " + std::to_string(leans_before) +
                   " lean repeats");
      expect_failed_lean_as_full_path(s, LeanPath::lean, leans_before);
    }
  }
}

TEST(LaunchFamilyDifferential, AFailedStreakLaunchLeavesWhatTheFullPathLeaves) {
  for (const UpdateStrategy s : {UpdateStrategy::lazy, UpdateStrategy::adaptive}) {
    for (const int leans_before : {0, 3}) {
      SCOPED_TRACE(std::string(to_string(s)) + ", after " + std::to_string(leans_before) +
                   " lean repeats");
      expect_failed_lean_as_full_path(s, LeanPath::streak, leans_before);
    }
  }
}

}  // namespace
}  // namespace unimem
