#pragma once

// Runs instrumented kernels on an OpenCL device (POCL on this machine) and decodes the access log
// into per-argument byte sets: the execution ground truth that the kernel access analysis (issue
// 5) is compared against. All work-groups are recorded; a partition is selected when decoding, so
// one run answers every partition of a launch.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/support/kernel_instrumenter.hpp"
#include "region/interval_set.hpp"

namespace unimem::testing {

class RecorderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// NDRange of one launch, 1 to 3 dimensions; local sizes are required (partitions are boxes of
/// work-groups); offset may be empty (all zero).
struct LaunchConfig {
  std::vector<std::size_t> global;
  std::vector<std::size_t> local;
  std::vector<std::size_t> offset;
  [[nodiscard]] std::array<std::uint64_t, 3> group_count() const;
  [[nodiscard]] std::string to_string() const;
};

/// How a buffer is filled before the launch (deterministic for a given seed). Values are written
/// per component of the element type (per float of a float4).
struct FillSpec {
  enum class Kind { random, iota, permutation, constant };
  Kind kind = Kind::random;
  /// random: values in [lo, hi) (integers: lo <= v < hi); iota: lo + i * step; permutation: a
  /// shuffle of 0 .. count - 1 (count = number of components); constant: lo.
  double lo = 0;
  double hi = 0;
  double step = 1;
  bool has_range = false;  ///< false: the default range for the element type
};

/// Everything a launch needs besides the NDRange. Scalars are given as text and converted to the
/// parameter's type ("3", "-1", "0.5").
struct KernelInputs {
  std::map<std::string, std::uint64_t> buffer_bytes;  ///< global and constant buffer parameters
  std::map<std::string, std::uint64_t> local_bytes;   ///< __local parameters
  std::map<std::string, std::string> scalars;
  std::map<std::string, FillSpec> fills;
  std::uint64_t seed = 1;
};

/// A half-open box of work-group ids; dimensions beyond the launch's are [0, 1).
struct GroupBox {
  std::array<std::uint64_t, 3> begin{0, 0, 0};
  std::array<std::uint64_t, 3> end{1, 1, 1};
  static GroupBox all(const LaunchConfig& config);
  [[nodiscard]] bool contains(std::uint64_t x, std::uint64_t y, std::uint64_t z) const;
  /// "x0:x1,y0:y1,z0:z1" restricted to `dims` dimensions (the `--groups` syntax of unimem analyze).
  [[nodiscard]] std::string to_string(std::size_t dims) const;
};

struct AccessRecord {
  std::uint64_t offset = 0;  ///< bytes from the start of the buffer
  std::uint16_t param = 0;
  std::uint16_t size = 0;
  std::uint8_t kind = 0;  ///< 1 read, 2 write, 3 both
  std::array<std::uint16_t, 3> group{};
};

/// Bytes one set of work-groups read and wrote, per kernel parameter (indexed like the signature;
/// empty for parameters that are not global/constant buffers).
struct ParamAccess {
  IntervalSet read;
  IntervalSet write;
};

struct AccessTrace {
  KernelSignature signature;
  LaunchConfig config;
  std::vector<AccessRecord> records;
  /// Contents of every buffer parameter after the kernel ran (empty for other parameters).
  std::vector<std::vector<unsigned char>> final_buffers;
  /// Accesses to program-scope __constant data, which belong to no argument and are skipped.
  std::uint64_t program_constant_accesses = 0;
  double run_seconds = 0;

  /// The bytes the work-groups of `groups` accessed, per parameter.
  [[nodiscard]] std::vector<ParamAccess> accesses_of(const GroupBox& groups) const;
};

/// One OpenCL context and in-order queue on the first device of the preferred platform (POCL if
/// present); builds are cached per (source, options).
class AccessRecorder {
 public:
  AccessRecorder();
  ~AccessRecorder();
  AccessRecorder(const AccessRecorder&) = delete;
  AccessRecorder& operator=(const AccessRecorder&) = delete;

  [[nodiscard]] std::string device_name() const;

  /// Builds (or reuses) the instrumented program and runs kernel `kernel` once with fresh inputs.
  AccessTrace record(const InstrumentedSource& source, const std::string& kernel,
                     const std::vector<std::string>& build_options, const LaunchConfig& config,
                     const KernelInputs& inputs);

  /// Runs the uninstrumented (preprocessed) source with the same inputs and returns the final
  /// buffer contents, to check that instrumentation did not change what the kernel computes.
  std::vector<std::vector<unsigned char>> run_original(
      const InstrumentedSource& source, const std::string& kernel,
      const std::vector<std::string>& build_options, const LaunchConfig& config,
      const KernelInputs& inputs);

  /// Seconds spent in clBuildProgram so far.
  [[nodiscard]] double build_seconds() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The initial contents of a buffer parameter, exactly as record() and run_original() use them.
std::vector<unsigned char> fill_buffer(const KernelParam& param, std::uint64_t bytes,
                                       const FillSpec* spec, std::uint64_t seed);

}  // namespace unimem::testing
