#pragma once

// The seeds' workloads (DESIGN.md "Workloads the seeds evaluate") behind one
// interface, so the bench command, the demo and the tests treat them alike. Each workload has:
// OpenCL C kernels (examples/<name>/<name>.cl), a CPU reference with the kernels' arithmetic order,
// a hand-written multi-device OpenCL version with minimal transfers (the speed and bytes
// reference), and the exact byte counts of a K-device run computed from its geometry.
//
// Partitioning convention shared by every form (manual, unimem): a launch is split along its
// slowest-varying dimension into K contiguous blocks of nearly equal size (split_evenly), block d
// on device d. bytes_min and bytes_whole_buffer assume that split.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <unimem/transfer_stats.hpp>

typedef struct _cl_device_id* cl_device_id;
typedef struct _cl_program* cl_program;

namespace unimem::examples {

struct ClPlatformDevices;
class ManualContext;
template <typename T>
class ClHandle;
using ClProgram = ClHandle<cl_program>;

/// Problem size: `size` is the workload's one size parameter (grid edge, node count, body count,
/// option count, matrix edge); `steps` the number of time steps (ignored by workloads that run a
/// fixed launch sequence: matmul, blackscholes, floyd-warshall, whose step count is its size).
struct Problem {
  std::uint64_t size = 0;
  std::uint32_t steps = 1;
};

/// The problem sizes a workload accepts (Workload::validate checks them).
struct SizeRules {
  std::string_view units;      ///< what `size` counts and the split divides ("rows", "bodies")
  std::uint64_t min_size = 1;  ///< smallest size the kernels handle
  std::uint64_t max_size = 0;  ///< largest size whose indices fit the kernels' 32-bit ints
  bool iterative = true;       ///< `steps` is used and must be at least 1
};

/// Bytes moved by a run, by direction. d2d counts each peer-to-peer copy once.
struct TransferBytes {
  std::uint64_t h2d = 0;
  std::uint64_t d2h = 0;
  std::uint64_t d2d = 0;
  /// Total bytes moved; a device-to-device copy counts twice when the devices cannot copy peer to
  /// peer (it goes through the host: down, then up).
  [[nodiscard]] std::uint64_t total(bool peer_to_peer) const {
    return h2d + d2h + (peer_to_peer ? d2d : 2 * d2d);
  }
  friend bool operator==(const TransferBytes&, const TransferBytes&) = default;
  /// The bytes of a runtime's copy counts, by direction.
  [[nodiscard]] static TransferBytes of(const TransferStats& stats) {
    return {stats.host_to_device.bytes, stats.device_to_host.bytes, stats.device_to_device.bytes};
  }
};

[[nodiscard]] std::string to_string(const TransferBytes& bytes);

/// Named host arrays (inputs or outputs of a run), all float; a float4 array stores 4 floats per
/// element. The names are the kernels' buffer names.
using Arrays = std::map<std::string, std::vector<float>>;

/// Allowed difference between a result and the CPU reference. Both zero: bitwise equality.
struct Tolerance {
  double max_abs = 0.0;  ///< |got - want| <= max_abs + max_rel * |want| passes
  double max_rel = 0.0;
  [[nodiscard]] bool bitwise() const { return max_abs == 0.0 && max_rel == 0.0; }
};

/// Result of comparing arrays against a reference.
struct Comparison {
  bool ok = true;
  double max_abs_error = 0.0;
  std::uint64_t mismatches = 0;
  std::string first_mismatch;  ///< "array[index]: got X want Y", empty when ok
};

/// Compares every array of `want` with the array of the same name in `got` (bitwise when
/// tolerance.bitwise(), NaN equal to NaN only bitwise). A missing array or a size mismatch fails.
[[nodiscard]] Comparison compare(const Arrays& got, const Arrays& want, Tolerance tolerance);

/// One kernel source file of a workload with the build options its kernels need.
struct KernelSource {
  std::string file;  ///< "stencil2d.cl"
  std::string_view text;
  std::string options;  ///< passed to clBuildProgram
};

/// A contiguous block [begin, end) of a split dimension.
struct Block {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  [[nodiscard]] std::uint64_t size() const { return end - begin; }
};

/// Splits [0, total) into `parts` contiguous blocks whose sizes differ by at most one, larger
/// blocks first. Requires parts >= 1 and total >= parts (no empty block).
[[nodiscard]] std::vector<Block> split_evenly(std::uint64_t total, unsigned parts);

/// `count` floats uniform in [low, high) from a fixed generator seeded with `seed` (the same on
/// every platform: it does not use std::uniform_real_distribution).
[[nodiscard]] std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float low,
                                               float high);

/// Buffer-level description of a run, for the whole-buffer coherence model: the shared buffers,
/// the launches in order with the buffers each reads and writes, and the buffers the host reads at
/// the end. Every buffer starts valid on the host only (the host wrote the inputs).
struct BufferPlan {
  struct Launch {
    std::string kernel;
    std::vector<std::string> reads;
    std::vector<std::string> writes;
  };
  std::map<std::string, std::uint64_t> buffer_bytes;
  std::vector<Launch> launches;
  std::vector<std::string> host_reads;
};

/// The launch sequence of an iterative kernel that reads `grid` + " a" and writes `grid` + " b",
/// then the other way round, for `steps` steps; it also reads every buffer of `read_only` and
/// reads and writes every buffer of `read_write`. The host reads the last grid and `read_write`.
[[nodiscard]] BufferPlan pingpong_plan(const std::string& kernel, const std::string& grid,
                                       std::uint64_t grid_bytes, std::uint32_t steps,
                                       const std::map<std::string, std::uint64_t>& read_only = {},
                                       const std::map<std::string, std::uint64_t>& read_write = {});

/// Bytes whole-buffer coherence moves for `plan` run with every launch split over `devices`
/// devices. The model (validity tracked per buffer, as a directory without byte ranges would):
/// - before a launch, each device gets a whole valid copy of every buffer the launch reads or
///   writes that it does not hold (a partial writer needs the bytes it does not write): from the
///   host when the host copy is valid (h2d), else from a device holding it (d2d);
/// - after it, a buffer written by one device is valid there only; a buffer written in parts by
///   several devices is merged on the host (each writer sends its whole copy: d2h), valid there;
/// - at the end the host fetches each buffer it reads whose host copy is not valid (d2h).
[[nodiscard]] TransferBytes whole_buffer_bytes(const BufferPlan& plan, unsigned devices);

/// Result of the hand-written multi-device OpenCL version.
struct ManualResult {
  Arrays outputs;
  TransferBytes moved;  ///< bytes its transfer calls moved
  double seconds = 0;   ///< from the first upload to the last download (excludes program build)
  std::uint64_t fresh_allocations = 0;  ///< buffers the run created (not reused)
  double create_buffer_seconds = 0;     ///< time inside clCreateBuffer (lazy drivers: little)
};

/// A context over the devices with the workload's program built on it, kept across runs of the
/// hand-written version (Workload::manual_session) so that repeated runs pay what unimem's do:
/// no context creation or build, kernels and (with reuse, the default) buffers of earlier runs.
struct ManualSession {
  std::unique_ptr<ManualContext> context;
  std::unique_ptr<ClProgram> program;
  ManualSession();
  ManualSession(ManualSession&&) noexcept;
  ManualSession& operator=(ManualSession&&) noexcept;
  ~ManualSession();
};

/// A workload of the seeds' evaluations in every form built so far.
class Workload {
 public:
  virtual ~Workload() = default;

  [[nodiscard]] virtual std::string name() const = 0;
  /// One line: what it computes and how it is split.
  [[nodiscard]] virtual std::string description() const = 0;
  /// A size for tests (seconds on POCL) and one for benchmarks.
  [[nodiscard]] virtual Problem small_problem() const = 0;
  [[nodiscard]] virtual Problem medium_problem() const = 0;
  /// The sizes it accepts.
  [[nodiscard]] virtual SizeRules size_rules() const = 0;
  /// Throws PreconditionError naming the workload, the size and the limit when `problem` cannot
  /// run on `devices` devices (no device, no step, too small, fewer units than devices, too large).
  void validate(const Problem& problem, unsigned devices) const;

  [[nodiscard]] virtual std::vector<KernelSource> kernel_sources() const = 0;
  /// Deterministic inputs for `seed`.
  [[nodiscard]] virtual Arrays make_inputs(const Problem& problem, std::uint64_t seed) const = 0;
  /// The CPU reference: the outputs, computed in the kernels' arithmetic order.
  [[nodiscard]] virtual Arrays reference(const Problem& problem, const Arrays& inputs) const = 0;
  /// How close the OpenCL results must be to the reference (bitwise unless transcendental
  /// functions are involved).
  [[nodiscard]] virtual Tolerance tolerance() const { return {}; }

  /// Checks `got` (outputs of a run) against the CPU reference within tolerance().
  [[nodiscard]] Comparison verify(const Problem& problem, const Arrays& inputs,
                                  const Arrays& got) const {
    return compare(got, reference(problem, inputs), tolerance());
  }

  /// Runs the hand-written version on `devices` (a subset of `platform`'s devices, at least 1):
  /// validates, builds the kernels on one context over the devices (not timed), then times
  /// manual_version from the first upload to the last download.
  [[nodiscard]] ManualResult run_manual(const ClPlatformDevices& platform,
                                        std::span<const cl_device_id> devices,
                                        const Problem& problem, const Arrays& inputs) const;
  /// The context and built program run_manual(session, ...) reuses.
  [[nodiscard]] ManualSession manual_session(const ClPlatformDevices& platform,
                                             std::span<const cl_device_id> devices) const;
  /// One timed run of the hand-written version on a session (its context's reuse setting says
  /// whether buffers of earlier runs are reused).
  [[nodiscard]] ManualResult run_manual(ManualSession& session, const Problem& problem,
                                        const Arrays& inputs) const;

  /// The exact minimum a run on `devices` devices must move with the split_evenly partition: the
  /// bytes each device reads before any device of the run wrote them (uploaded once), the bytes
  /// it reads that another device wrote since it last held them (peer copies), and the outputs
  /// (downloaded once).
  [[nodiscard]] virtual TransferBytes bytes_min(const Problem& problem, unsigned devices) const = 0;
  /// The buffer-level launch sequence of the run (for whole-buffer coherence).
  [[nodiscard]] virtual BufferPlan buffer_plan(const Problem& problem) const = 0;
  /// What whole-buffer coherence would move (see whole_buffer_bytes).
  [[nodiscard]] TransferBytes bytes_whole_buffer(const Problem& problem, unsigned devices) const {
    return whole_buffer_bytes(buffer_plan(problem), devices);
  }

 protected:
  /// The hand-written version's transfers and kernels on `context` (`program`: kernel_sources()
  /// built on it); returns the outputs once every transfer into them has completed.
  [[nodiscard]] virtual Arrays manual_version(ManualContext& context, const ClProgram& program,
                                              const Problem& problem,
                                              const Arrays& inputs) const = 0;
};

/// Every workload, in a fixed order.
[[nodiscard]] std::vector<std::unique_ptr<Workload>> all_workloads();
/// The workload called `name`; throws PreconditionError listing the known names otherwise.
[[nodiscard]] std::unique_ptr<Workload> find_workload(std::string_view name);

std::unique_ptr<Workload> make_stencil2d();
std::unique_ptr<Workload> make_heat3d();
std::unique_ptr<Workload> make_fdtd2d();
std::unique_ptr<Workload> make_floyd_warshall();
std::unique_ptr<Workload> make_matmul();
std::unique_ptr<Workload> make_nbody();
std::unique_ptr<Workload> make_blackscholes();
std::unique_ptr<Workload> make_hotspot();

}  // namespace unimem::examples
