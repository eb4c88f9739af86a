#pragma once

// The host memory of one unimem allocation (GMAC's shared address space, Gelado et al.
// 004_b9980231408668ca.txt section 4.2, and its implementation as seeds/README.md describes it:
// one file mapping mapped twice). A memfd holds the bytes; the application view is what um_alloc
// returns and its protection follows the block states (none / read / read-write); the shadow view
// is always read-write and is what unimem copies through, so a copy never faults and never needs
// the application view unprotected.

#include <cstddef>
#include <cstdint>

namespace unimem::pointer {

/// Page protection of a range of the application view.
enum class Protection : std::uint8_t { none, read, read_write };

/// Two views of one memfd. Not thread-safe (the owner serialises protect()); the views themselves
/// may be accessed from any thread.
class HostMapping {
 public:
  /// size bytes (> 0), rounded up to whole pages, zero-filled; the application view starts with
  /// `initial` protection. Throws std::system_error naming the failing call (memfd_create,
  /// ftruncate, mmap).
  HostMapping(std::size_t size, Protection initial);
  ~HostMapping();
  HostMapping(const HostMapping&) = delete;
  HostMapping& operator=(const HostMapping&) = delete;

  [[nodiscard]] std::byte* app() const { return app_; }
  [[nodiscard]] std::byte* shadow() const { return shadow_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t mapped_size() const { return mapped_; }

  /// Sets the protection of [offset, offset + length) of the application view (page-aligned
  /// offset; length rounded up to whole pages). Throws std::system_error on failure.
  void protect(std::size_t offset, std::size_t length, Protection p);

  [[nodiscard]] static std::size_t page_size();

 private:
  std::size_t size_;
  std::size_t mapped_;
  int fd_ = -1;
  std::byte* app_ = nullptr;
  std::byte* shadow_ = nullptr;
};

}  // namespace unimem::pointer
