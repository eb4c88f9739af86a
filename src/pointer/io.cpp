// I/O into and out of shared memory (<unimem/unimem.h>, um_read ... um_fwrite). The kernel
// cannot take a page fault on behalf of a system call: read() into a protected page fails with
// EFAULT (GMAC handles I/O calls for this reason: Gelado et al. 004_b9980231408668ca.txt section 3,
// "ADSM enables data structures used by accelerators to be passed as parameters to the
// corresponding system calls ... (e.g. read() or write())", and its section 4.4, which the stored
// text does not reach). So the whole range is prepared first, one fetch per stale block (no
// fault storm), and the call then reads or writes the allocation's shadow view, which is always
// read-write. The libc functions are reached through glibc's own aliases (__read, _IO_fread...),
// so the interposing definitions of unimem_pointer_interpose never call themselves.

#include <unistd.h>

#include <cerrno>
#include <cstdio>

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

// Ends the write of an I/O call into shared memory (PointerRuntime::finish_host_write).
class WriteDone {
 public:
  WriteDone(const void* p, std::size_t n, const void* prepared)
      : p_(p), n_(n), shared_(prepared != nullptr && prepared != p) {}
  ~WriteDone() {
    if (!shared_) return;
    try {
      PointerRuntime::instance().finish_host_write(p_, n_);
    } catch (const std::exception&) {  // only bookkeeping failed: the bytes are in place
    }
  }
  WriteDone(const WriteDone&) = delete;
  WriteDone& operator=(const WriteDone&) = delete;

 private:
  const void* p_;
  std::size_t n_;
  bool shared_;
};

}  // namespace

extern "C" {

ssize_t um_read(int fd, void* buf, size_t count) {
  void* to = prepared(buf, count, true);
  const WriteDone done(buf, count, to);
  return to == nullptr ? -1 : __read(fd, to, count);
}

ssize_t um_write(int fd, const void* buf, size_t count) {
  const void* from = prepared(buf, count, false);
  return from == nullptr ? -1 : __write(fd, from, count);
}

ssize_t um_pread(int fd, void* buf, size_t count, off_t offset) {
  void* to = prepared(buf, count, true);
  const WriteDone done(buf, count, to);
  return to == nullptr ? -1 : __pread64(fd, to, count, offset);
}

ssize_t um_pwrite(int fd, const void* buf, size_t count, off_t offset) {
  const void* from = prepared(buf, count, false);
  return from == nullptr ? -1 : __pwrite64(fd, from, count, offset);
}

size_t um_fread(void* buf, size_t size, size_t count, FILE* stream) {
  void* to = prepared(buf, size * count, true);
  const WriteDone done(buf, size * count, to);
  if (to == nullptr) return 0;
  return _IO_fread(to, size, count, stream);
}

size_t um_fwrite(const void* buf, size_t size, size_t count, FILE* stream) {
  const void* from = prepared(buf, size * count, false);
  if (from == nullptr) return 0;
  return _IO_fwrite(from, size, count, stream);
}

}  // extern "C"
