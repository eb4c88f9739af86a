// Opt-in interposition of the I/O calls on shared memory (unimem_pointer_interpose): a program
// linked with this object gets read / write / pread / pwrite / fread / fwrite definitions that
// come before libc's in symbol resolution, so unmodified code (and libraries calling these
// functions through the PLT) can read into and write from um_alloc memory. Each forwards to its
// um_ counterpart (io.cpp), which calls libc through glibc's internal aliases when the buffer is
// not shared memory. Not part of libunimem itself: interposing libc for every program that
// links unimem would be a surprise.

#include <unistd.h>

#include <cstdio>

#include <unimem/unimem.h>

extern "C" {

ssize_t read(int fd, void* buf, size_t count) { return um_read(fd, buf, count); }
ssize_t write(int fd, const void* buf, size_t count) { return um_write(fd, buf, count); }
ssize_t pread(int fd, void* buf, size_t count, off_t offset) {
  return um_pread(fd, buf, count, offset);
}
ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  return um_pwrite(fd, buf, count, offset);
}
size_t fread(void* buf, size_t size, size_t count, FILE* stream) {
  return um_fread(buf, size, count, stream);
}
size_t fwrite(const void* buf, size_t size, size_t count, FILE* stream) {
  return um_fwrite(buf, size, count, stream);
}

}  // extern "C"
