#pragma once

// The state behind the C API (<unimem/unimem.h>): a Runtime whose shared buffers are the
// devices' side of every allocation, the allocations' host mappings and block states, and the
// host protocols (GMAC's Batch / Lazy / Rolling, seeds/README.md; Gelado et al.
// 004_b9980231408668ca.txt section 3.3 for the release consistency at call and acquire at sync).
//
// Per block of an allocation the host view is in one of three states (GMAC's Invalid / ReadOnly /
// Dirty), mirrored by the application view's protection:
//   invalid    PROT_NONE   the devices' side may hold newer bytes; the first touch fetches
//   read_only  PROT_READ   the host copy is current and clean; a write marks it dirty
//   dirty      PROT_RW     the host wrote it; published before a launch that uses the allocation
// Underneath, the Runtime's byte-precise directory decides where each byte of the devices' side
// is current (DESIGN.md invariants), so a fetch copies from whichever device holds the bytes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "api/kernel_rewrite.hpp"
#include "pointer/fault_handler.hpp"
#include "pointer/host_mapping.hpp"
#include "region/interval_set.hpp"

namespace unimem::pointer {

enum class HostProtocol : std::uint8_t { batch, lazy, rolling };

[[nodiscard]] const char* to_string(HostProtocol p);
[[nodiscard]] std::optional<HostProtocol> parse_host_protocol(const std::string& text);

enum class BlockState : std::uint8_t { invalid, read_only, dirty };

/// An error of the C API with its code (the values of um_error).
class PointerError : public std::runtime_error {
 public:
  PointerError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] int code() const { return code_; }

 private:
  int code_;
};

// um_error values, repeated here so the C++ side needs no C header.
inline constexpr int kInvalidValue = 1;
inline constexpr int kInvalidPointer = 2;
inline constexpr int kOutOfMemory = 3;
inline constexpr int kBuild = 4;
inline constexpr int kLaunch = 5;
inline constexpr int kDevice = 6;
inline constexpr int kIo = 7;

/// One allocation: its host mapping, its shared buffer and its blocks.
struct Allocation {
  Allocation(std::size_t size, std::size_t block, Protection initial)
      : mapping(size, initial), block_size(block) {}
  HostMapping mapping;
  std::size_t block_size;
  BufferId buffer;
  std::vector<BlockState> state;
  std::vector<Event> publishing;        ///< per block: the last copy of it to the devices' side
  std::deque<std::size_t> dirty_order;  ///< rolling: blocks in the order they became dirty
  std::vector<char> eager;  ///< rolling: written back eagerly, not needed by a launch since
  std::vector<std::uint32_t> pinned;  ///< I/O calls writing into the block right now
  /// An I/O call covering the whole block is filling it, so it was not fetched first; the bytes
  /// the call does not write (a short read) are fetched when it returns.
  std::vector<char> unfilled;
  std::size_t dirty = 0;

  [[nodiscard]] std::size_t size() const { return mapping.size(); }
  [[nodiscard]] std::size_t blocks() const { return state.size(); }
  [[nodiscard]] std::size_t block_begin(std::size_t b) const { return b * block_size; }
  [[nodiscard]] std::size_t block_length(std::size_t b) const {
    return std::min(block_size, size() - b * block_size);
  }
};

struct PointerStats {
  std::uint64_t faults = 0;
  std::uint64_t read_faults = 0;
  std::uint64_t write_faults = 0;
  std::uint64_t bytes_fetched = 0;
  std::uint64_t bytes_published = 0;
  std::uint64_t bytes_direct = 0;
  std::uint64_t eager_blocks = 0;
  std::uint64_t device_bytes = 0;
  std::uint64_t launches = 0;
  std::uint64_t partitions = 0;
};

/// A program of the C API: the source as written, and the variant taking buffer + offset for
/// every __global pointer (api/kernel_rewrite.hpp), built on the first launch that needs it.
struct PointerProgram {
  std::string source;
  std::string options;
  std::unique_ptr<Program> program;
  std::unique_ptr<Program> offset_program;
  RewrittenSource rewritten;
};

/// A kernel argument of um_launch, in C++ terms.
struct PointerArg {
  enum class Kind : std::uint8_t { pointer, value, local };
  Kind kind = Kind::value;
  const void* pointer = nullptr;
  std::size_t size = 0;
};

/// Thread-safe: one lock serialises every operation (faults included, on the service thread).
class PointerRuntime {
 public:
  /// The process's instance (the C API's state), created on first use.
  static PointerRuntime& instance();

  void set_protocol(HostProtocol p);
  [[nodiscard]] HostProtocol protocol();
  void set_block_size(std::size_t bytes);
  [[nodiscard]] std::size_t block_size();
  void set_devices(std::size_t count);
  [[nodiscard]] std::size_t device_count();

  std::byte* alloc(std::size_t size);
  void free(void* p);
  /// Whether p lies in an allocation; its base and size when it does.
  bool find(const void* p, std::byte** base, std::size_t* size);

  void memcpy(void* dst, const void* src, std::size_t n);
  void memset(void* dst, int value, std::size_t n);

  std::unique_ptr<PointerProgram> build(const std::string& source, const std::string& options);
  void launch(PointerProgram& program, const std::string& kernel, const NDRange& range,
              const std::vector<PointerArg>& args);
  void sync();

  /// For I/O: makes [p, p + n) current on the host (read) or writable (write: marked dirty) and
  /// returns the same bytes in the shadow view; nullptr when p is not shared memory. Throws
  /// PointerError (kInvalidPointer) when the range leaves the allocation.
  std::byte* prepare_host_read(const void* p, std::size_t n);
  std::byte* prepare_host_write(const void* p, std::size_t n);
  /// The I/O into [p, p + n) that prepare_host_write prepared has finished, having written its
  /// first `written` bytes: the rest of the blocks it was to fill whole is fetched, and its blocks
  /// may be written back eagerly again (rolling never writes back a block an I/O call is filling).
  void finish_host_write(const void* p, std::size_t n, std::size_t written);

  /// Drops the host copy of the blocks covering [p, p + n) (dirty ones are published first), so
  /// the next host access faults and fetches: for tests and benchmarks.
  void invalidate_host(const void* p, std::size_t n);

  /// The fault service (fault_handler.hpp).
  bool handle_fault(std::byte* address, FaultKind kind);

  [[nodiscard]] PointerStats stats();
  void reset_stats();
  /// The block state of the block holding p (for tests).
  [[nodiscard]] BlockState block_state(const void* p);

 private:
  PointerRuntime();
  Runtime& runtime_locked();
  Allocation* find_locked(const void* p, std::size_t* offset);
  Allocation& require_range_locked(const void* p, std::size_t n, const char* what,
                                   std::size_t* offset);
  void fetch_locked(Allocation& a, std::size_t b);
  void make_readable_locked(Allocation& a, std::size_t b);
  void make_writable_locked(Allocation& a, std::size_t b, bool roll = true, bool fetch = true);
  void publish_locked(Allocation& a, std::size_t b);
  void invalidate_locked(Allocation& a, std::size_t b);
  void roll_locked(Allocation& a);
  void set_state_locked(Allocation& a, std::size_t b, BlockState s);
  /// Bytes of an allocation read into out, from the host view where it is current, else from the
  /// devices' side (no state changes).
  void read_direct_locked(Allocation& a, std::size_t offset, std::byte* out, std::size_t n);
  void write_direct_locked(Allocation& a, std::size_t offset, const std::byte* in, std::size_t n);
  [[nodiscard]] LaunchOptions launch_options_locked();

  std::mutex mutex_;
  std::unique_ptr<Runtime> runtime_;
  std::map<std::uintptr_t, std::unique_ptr<Allocation>> allocations_;  // by application view
  HostProtocol protocol_ = HostProtocol::lazy;
  std::size_t block_size_ = std::size_t{512} << 10;
  std::size_t devices_ = 0;
  std::size_t rolling_limit_ = 2;
  PointerStats stats_;
  std::uint64_t device_bytes_at_reset_ = 0;
};

}  // namespace unimem::pointer
