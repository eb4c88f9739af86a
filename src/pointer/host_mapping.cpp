#include "pointer/host_mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace unimem::pointer {

namespace {

int to_prot(Protection p) {
  switch (p) {
    case Protection::none:
      return PROT_NONE;
    case Protection::read:
      return PROT_READ;
    case Protection::read_write:
      return PROT_READ | PROT_WRITE;
  }
  return PROT_NONE;
}

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

std::size_t HostMapping::page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

HostMapping::HostMapping(std::size_t size, Protection initial) : size_(size) {
  const std::size_t page = page_size();
  mapped_ = (size + page - 1) / page * page;
  fd_ = memfd_create("unimem", MFD_CLOEXEC);
  if (fd_ < 0) fail("memfd_create for a " + std::to_string(size) + "-byte allocation");
  if (ftruncate(fd_, static_cast<off_t>(mapped_)) != 0) {
    const int e = errno;
    close(fd_);
    errno = e;
    fail("ftruncate of the memfd to " + std::to_string(mapped_) + " bytes");
  }
  void* app = mmap(nullptr, mapped_, to_prot(initial), MAP_SHARED, fd_, 0);
  if (app == MAP_FAILED) {
    const int e = errno;
    close(fd_);
    errno = e;
    fail("mmap of the application view (" + std::to_string(mapped_) + " bytes)");
  }
  void* shadow = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (shadow == MAP_FAILED) {
    const int e = errno;
    munmap(app, mapped_);
    close(fd_);
    errno = e;
    fail("mmap of the shadow view (" + std::to_string(mapped_) + " bytes)");
  }
  app_ = static_cast<std::byte*>(app);
  shadow_ = static_cast<std::byte*>(shadow);
}

HostMapping::~HostMapping() {
  munmap(app_, mapped_);
  munmap(shadow_, mapped_);
  close(fd_);
}

void HostMapping::protect(std::size_t offset, std::size_t length, Protection p) {
  const std::size_t page = page_size();
  const std::size_t len = (length + page - 1) / page * page;
  if (len == 0) return;
  if (mprotect(app_ + offset, len, to_prot(p)) != 0) {
    fail("mprotect of bytes [" + std::to_string(offset) + ", " + std::to_string(offset + len) +
         ") of the application view");
  }
}

}  // namespace unimem::pointer
