#pragma once

// The runtime: shared buffers over the host and every device, host reads and writes, and the
// statistics of the copies unimem made. Kernels are launched through a Program
// (<unimem/program.hpp>). The state lives in src/api/runtime_core.hpp (RuntimeCore); this class
// is its public face.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <unimem/event.hpp>
#include <unimem/measurement.hpp>
#include <unimem/transfer_stats.hpp>
#include <unimem/update_strategy.hpp>

namespace unimem {

class DeviceRegistry;
class RuntimeCore;

/// A shared buffer created by a Runtime.
struct BufferId {
  std::uint32_t value = 0;
  friend auto operator<=>(const BufferId&, const BufferId&) = default;
};

struct RuntimeOptions {
  UpdateStrategy strategy = UpdateStrategy::adaptive;
  MeasurementMode measurement = MeasurementMode::normal;
  /// Released buffers' device mirrors and home copies, up to this many bytes per device and for
  /// the host, are kept and reused by the next buffer of the same size (skips driver allocations
  /// and the page faults of fresh memory). 0 frees everything at release. Kept memory counts as
  /// allocated on its device until the runtime is destroyed or the device runs out of memory.
  std::uint64_t recycle_bytes = std::uint64_t{256} << 20;
  /// A cap on the device memory unimem uses on each device, in bytes, below the device's own
  /// limit (CL_DEVICE_GLOBAL_MEM_SIZE). When a new allocation does not fit, the least recently
  /// used allocations no running operation needs are evicted (their only valid bytes written
  /// home first) and fetched again when needed. 0: the environment variable
  /// UNIMEM_DEVICE_MEMORY ("256M", "1G", "65536") when set, else only the device's own limit.
  std::uint64_t device_memory = 0;
  /// Strided rows of a 2-D box (equal lengths at a constant stride) move between the host and a
  /// device as one rectangular copy (clEnqueue{Read,Write}BufferRect) instead of one per row.
  bool rect_copies = true;
  /// A file to write a timeline of the run to, as Chrome trace JSON (opens in ui.perfetto.dev;
  /// `unimem trace FILE -o timeline.png` draws it): every kernel partition, copy, eviction and
  /// host access, per device queue and host lane. Empty: the environment variable UNIMEM_TRACE
  /// when set, else no tracing. Written when the runtime is destroyed (and by write_trace()).
  std::string trace = {};
  /// A launch identical to one of the runtime's last four launches (the same Program launch
  /// again with nothing but launches in between: a loop, or a cycle such as ping-pong) skips
  /// checks and bookkeeping whose outcome is already known and, under the lazy and adaptive
  /// strategies, the directory updates too when the state shows they would change nothing (under
  /// adaptive once the buffers' histories have seen the launch repeat with no copies in between:
  /// then they only count one more repeat). Off also turns off the directory skip of a launch
  /// that writes again exactly what a buffer's last device writes wrote (floyd-warshall's
  /// pivots, with or without a repeat: SharedBuffer::acquire_rewriting_last_writes, and its
  /// families of deferred history restarts). Results, copies, statistics and the adaptive
  /// histories are the same either way (but after a launch that fails, where the skip may leave
  /// fewer current copies); off is for comparing.
  bool repeat_fast_path = true;
  /// The lean repeat: a launch that repeats the runtime's previous operation exactly (the same
  /// launch again, its last run a repeat that skipped the directory steps, nothing in between)
  /// re-enqueues that run's kernels with what the repeat path would do and nothing else
  /// (RuntimeCore::launch_again; the OpenCL platform's clEnqueueNDRangeKernel takes it). Results,
  /// copies, statistics, evictions and the state left are the same either way; off (or the
  /// environment variable UNIMEM_LEAN_REPEATS=0) is for comparing.
  bool lean_repeats = true;
  /// With repeat_fast_path: a Program launch that differs from one of its recent launches only in
  /// scalar arguments the kernel analysis finds in no access (fdtd2d's time-step value: used in
  /// arithmetic only) counts as that launch again: it reuses its plan and runs as its repeat,
  /// with its own argument values. Off, such a launch is described and planned anew, as every
  /// launch with new values is; results, copies and statistics are the same either way.
  bool scalar_twins = true;
  /// A host read (read, read_blocking) copies the bytes whose home copy is stale - current only on
  /// devices, as a kernel left them - from a device straight into the caller's memory; the home
  /// copy stays stale there, and the bytes current at home are copied from it as before. Off: the
  /// stale bytes are first copied home (which becomes current), then everything is copied out of
  /// the home copy, a second pass over the bytes. On saves that pass; off saves the device copy
  /// when the host reads the same bytes again before anything writes them.
  bool direct_host_reads = true;
  /// A launch that may split over every device (no LaunchOptions::device or devices) whose
  /// buffers hold fewer bytes than this in all runs whole on one device: the device holding the
  /// most of those bytes current (the lowest index on a tie), so it copies the least. Splitting
  /// a launch over a few KiB pays an enqueue and a wake-up on each device for microseconds of
  /// work. Unset: the environment variable UNIMEM_MIN_SPLIT_BYTES when set, else
  /// kDefaultMinSplitBytes; 0 splits every launch that can be split.
  std::optional<std::uint64_t> min_split_bytes = std::nullopt;
  /// The default of min_split_bytes (measurement: README, "The OpenCL platform"); the smallest
  /// problems of the eight workloads use more (nbody's: 9 KiB).
  static constexpr std::uint64_t kDefaultMinSplitBytes = 4096;
};

/// Shared buffers over the host and N devices.
///
/// Every operation takes effect in submission order: the result equals running everything one
/// after another on a single memory. Operations run asynchronously; each waits only for the
/// earlier operations it conflicts with (per byte), so independent launches on different
/// devices run concurrently.
///
/// Thread-safe: any thread may call any member; calls are ordered by the order in which they
/// take the runtime's lock.
class Runtime {
 public:
  /// Over the OpenCL devices UNIMEM_DEVICES selects (all devices when unset; `unimem devices`
  /// lists them). Throws DeviceError when there is none, or when unimem is built without OpenCL.
  explicit Runtime(RuntimeOptions options = {});
  /// Over the given devices (src/device/device_registry.hpp: for code built with unimem's
  /// internals, e.g. host devices in tests).
  explicit Runtime(DeviceRegistry devices, RuntimeOptions options = {});
  /// Waits for everything submitted, then frees all buffers.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  [[nodiscard]] std::size_t device_count() const;
  /// The name of device `index` (as `unimem devices` prints it).
  [[nodiscard]] std::string device_name(std::size_t index) const;

  /// A new buffer of size bytes (> 0), initially all zero. strategy overrides the runtime's.
  BufferId create_buffer(std::uint64_t size, std::string name = {},
                         std::optional<UpdateStrategy> strategy = std::nullopt);
  /// Waits for the buffer's pending operations and frees it; its copy counts stay in stats().
  void release_buffer(BufferId buffer);
  [[nodiscard]] std::uint64_t buffer_size(BufferId buffer) const;

  void set_strategy(UpdateStrategy strategy);
  [[nodiscard]] UpdateStrategy strategy() const;
  /// Overrides (or, with nullopt, stops overriding) the strategy for one buffer.
  void set_buffer_strategy(BufferId buffer, std::optional<UpdateStrategy> strategy);

  /// Copies data into bytes [offset, offset + data.size()) of buffer. Non-blocking: data must
  /// stay valid until the returned event completes.
  Event write(BufferId buffer, std::uint64_t offset, std::span<const std::byte> data);
  void write_blocking(BufferId buffer, std::uint64_t offset, std::span<const std::byte> data);
  /// Copies bytes [offset, offset + out.size()) of buffer into out, as they are after everything
  /// submitted before. Non-blocking: out must stay valid and untouched until the event completes.
  Event read(BufferId buffer, std::uint64_t offset, std::span<std::byte> out);
  void read_blocking(BufferId buffer, std::uint64_t offset, std::span<std::byte> out);

  [[nodiscard]] MeasurementMode measurement() const;
  /// Switches the measurement mode between runs; requires that no buffer is live (all released).
  /// Waits for everything submitted. For measurement only: a run in normal mode first leaves real
  /// data in the recycled mirrors, so the kernels of beta / gamma runs compute on realistic
  /// values instead of never-written memory (whose contents can change a kernel's speed).
  void set_measurement(MeasurementMode mode);

  /// Blocks until everything submitted so far has finished; rethrows the first failure.
  void finish();

  /// Copies issued so far: all buffers (including released ones), or one buffer.
  [[nodiscard]] TransferStats stats() const;
  [[nodiscard]] TransferStats buffer_stats(BufferId buffer) const;
  /// {"total": {...}, "buffers": [{"id":..,"name":..,"size":..,"stats":{...}}, ...]}
  [[nodiscard]] std::string stats_json() const;

  /// With tracing on (RuntimeOptions::trace, UNIMEM_TRACE), waits for everything submitted and
  /// writes the trace so far to its file (the destructor writes it again, complete); returns
  /// the file. Without tracing it does nothing and returns "". Throws PreconditionError naming
  /// the file when it cannot be written.
  std::string write_trace();

  /// The layers below (src/api/runtime_core.hpp): launches with explicit access sets, the
  /// devices, the directory. For Program and for code built with unimem's internals.
  [[nodiscard]] RuntimeCore& core() const { return *core_; }

 private:
  std::unique_ptr<RuntimeCore> core_;
};

}  // namespace unimem
