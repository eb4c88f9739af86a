// I/O into and out of shared memory (<unimem/unimem.h>, um_read ... um_fwrite). The kernel
// cannot take a page fault on behalf of a system call: read() into a protected page fails with
// EFAULT (GMAC handles I/O calls for this reason: Gelado et al. 004_b9980231408668ca.txt section 3,
// "ADSM enables data structures used by accelerators to be passed as parameters to the
// corresponding system calls ... (e.g. read() or write())", and its section 4.4, which the stored
// text does not reach). So the whole range is prepared first, one fetch per stale block (no
// fault storm; a stale block a read covers whole is not fetched, only what a short read leaves
// out of it afterwards), and the call then reads or writes the allocation's shadow view, which is
// always read-write. The libc functions are reached through glibc's own aliases (__read,
// _IO_fread...), so the interposing definitions of unimem_pointer_interpose never call themselves.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <unimem/unimem.h>
#include "pointer/pointer_runtime.hpp"

extern "C" {
ssize_t __read(int fd, void* buf, size_t count);
ssize_t __write(int fd, const void* buf, size_t count);
ssize_t __pread64(int fd, void* buf, size_t count, off_t offset);
ssize_t __pwrite64(int fd, const void* buf, size_t count, off_t offset);
size_t _IO_fread(void* buf, size_t size, size_t count, FILE* stream);
size_t _IO_fwrite(const void* buf, size_t size, size_t count, FILE* stream);
}

namespace {

using unimem::pointer::PointerRuntime;

// The shadow-view address of [p, p + n) once prepared, p itself when it is not shared memory,
// or nullptr with errno = EFAULT when the range leaves its allocation.
void* prepared(const void* p, std::size_t n, bool write) {
  if (n == 0 || (!unimem::pointer::in_registered_range(p) &&
                 !unimem::pointer::in_registered_range(static_cast<const char*>(p) + n - 1))) {
    return const_cast<void*>(p);
  }
  try {
    auto& rt = PointerRuntime::instance();
    std::byte* shadow = write ? rt.prepare_host_write(p, n) : rt.prepare_host_read(p, n);
    if (shadow == nullptr) {  // the range starts before an allocation and runs into it
      errno = EFAULT;
      return nullptr;
    }
    return shadow;
  } catch (const std::exception&) {
    errno = EFAULT;
    return nullptr;
  }
}

// Ends an I/O call into shared memory (PointerRuntime::finish_host_write) with the bytes it
// wrote from the start of the range.
void finish_write(const void* p, std::size_t n, const void* prepared, std::size_t written) {
  if (prepared == nullptr || prepared == p) return;  // failed before the call, or not shared
  try {
    PointerRuntime::instance().finish_host_write(p, n, written);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unimem: after I/O into shared memory: %s\n", e.what());
    std::abort();  // the bytes the call did not write could not be restored
  }
}

std::size_t written_of(ssize_t r) { return r > 0 ? static_cast<std::size_t>(r) : 0; }

}  // namespace

extern "C" {

ssize_t um_read(int fd, void* buf, size_t count) {
  void* to = prepared(buf, count, true);
  if (to == nullptr) return -1;
  const ssize_t r = __read(fd, to, count);
  const int saved = errno;
  finish_write(buf, count, to, written_of(r));
  errno = saved;
  return r;
}

ssize_t um_write(int fd, const void* buf, size_t count) {
  const void* from = prepared(buf, count, false);
  return from == nullptr ? -1 : __write(fd, from, count);
}

ssize_t um_pread(int fd, void* buf, size_t count, off_t offset) {
  void* to = prepared(buf, count, true);
  if (to == nullptr) return -1;
  const ssize_t r = __pread64(fd, to, count, offset);
  const int saved = errno;
  finish_write(buf, count, to, written_of(r));
  errno = saved;
  return r;
}

ssize_t um_pwrite(int fd, const void* buf, size_t count, off_t offset) {
  const void* from = prepared(buf, count, false);
  return from == nullptr ? -1 : __pwrite64(fd, from, count, offset);
}

size_t um_fread(void* buf, size_t size, size_t count, FILE* stream) {
  void* to = prepared(buf, size * count, true);
  if (to == nullptr) return 0;
  const std::size_t r = _IO_fread(to, size, count, stream);
  const int saved = errno;
  finish_write(buf, size * count, to, r * size);
  errno = saved;
  return r;
}

size_t um_fwrite(const void* buf, size_t size, size_t count, FILE* stream) {
  const void* from = prepared(buf, size * count, false);
  if (from == nullptr) return 0;
  return _IO_fwrite(from, size, count, stream);
}

}  // extern "C"
