#pragma once

// Source-to-source instrumentation of OpenCL C kernels for execution ground truth (issue 5,
// "Evidence"): every global or constant memory access of every kernel is rewritten so that the
// work-item logs its address, size and direction into an extra kernel argument before performing
// it. The analysis under test reads the same kernels through LLVM IR; this instrumentation works on
// Clang's AST instead, so the two share no code and a mistake in one does not hide in the other.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace unimem::testing {

/// Thrown when a kernel source cannot be parsed or contains an access the instrumentation cannot
/// record faithfully (it refuses rather than produce an incomplete ground truth).
class InstrumentationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How a kernel parameter is passed.
enum class ParamKind {
  global_buffer,    ///< __global T* : a buffer whose accesses are recorded
  constant_buffer,  ///< __constant T* : a read-only buffer whose accesses are recorded
  local_buffer,     ///< __local T* : local memory, set by size only, not recorded
  scalar,           ///< a value (int, float, ...)
};

enum class ScalarKind { signed_integer, unsigned_integer, floating, other };

struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::scalar;
  std::string type_name;           ///< as written by Clang, e.g. "__global float *" or "int"
  std::uint64_t element_size = 0;  ///< pointee size for buffers, value size for scalars
  /// Of the scalar, or of the pointee's components for buffers (float for a float4 buffer).
  ScalarKind scalar_kind = ScalarKind::other;
  std::uint64_t component_size = 0;  ///< size of one component (4 for float4), 0 if not numeric
};

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  /// Index of the log argument appended by the instrumentation (== params.size()).
  [[nodiscard]] std::size_t log_arg_index() const { return params.size(); }
  [[nodiscard]] const KernelParam* find_param(std::string_view name) const;
};

/// Layout of the log buffer shared by the rewritten source and the decoder (in 64-bit words):
/// word 0 holds the record counter (low 32 bits, atomically incremented), word 1 the capacity in
/// records, words [2, 2 + kMaxParams) the base address of each buffer parameter, records start at
/// kHeaderWords, two words each: address, then group x | y << 16 | z << 32 | size << 48 |
/// kind << 62 with kind 1 = read, 2 = write, 3 = read and write.
struct AccessLogLayout {
  static constexpr std::size_t kHeaderWords = 64;
  static constexpr std::size_t kBaseWord = 2;
  static constexpr std::size_t kMaxParams = kHeaderWords - kBaseWord;
  static constexpr std::size_t kWordsPerRecord = 2;
};

struct InstrumentedSource {
  std::string original_preprocessed;  ///< the input after preprocessing with the -D options
  std::string instrumented;           ///< the rewritten source, to build without -D/-U/-I options
  std::vector<KernelSignature> kernels;
  std::size_t access_sites = 0;  ///< number of rewritten global/constant accesses
  [[nodiscard]] const KernelSignature& kernel(std::string_view name) const;
};

/// Preprocesses `source` with the -D/-U/-I entries of `build_options` (others are ignored here),
/// parses it as OpenCL C 1.2 and rewrites every global/constant memory access. Throws
/// InstrumentationError with Clang's diagnostics when the source does not compile, and when it
/// contains an access it cannot log (vloadn/vstoren, async copies, component access of a global
/// vector lvalue, builtins other than atomics that take a global pointer).
InstrumentedSource instrument_kernel_source(std::string_view source,
                                            const std::vector<std::string>& build_options,
                                            std::string_view file_name = "kernel.cl");

/// The options of `build_options` that still apply after preprocessing (all but -D, -U, -I).
std::vector<std::string> options_after_preprocessing(const std::vector<std::string>& build_options);

}  // namespace unimem::testing
