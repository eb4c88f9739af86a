// I/O into and out of shared memory: a plain read() into a block the host does not hold fails
// with EFAULT (the reason for um_read), and each um_ I/O call works on blocks in every state
// without a fault per page.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <unimem/unimem.h>

namespace {

const char* const kKernel = R"CLC(
__kernel void fill(__global uchar* a, uchar v) { a[get_global_id(0)] = v; }
)CLC";

class PointerIo : public ::testing::Test {
 protected:
  static constexpr std::size_t kSize = 3 * 65536 + 123;
  void SetUp() override {
    ASSERT_EQ(um_set_protocol(UM_PROTOCOL_LAZY), UM_SUCCESS);
    ASSERT_EQ(um_set_block_size(65536), UM_SUCCESS);
    ASSERT_EQ(um_set_devices(0), UM_SUCCESS);
    program_ = um_program_create(kKernel, "");
    ASSERT_NE(program_, nullptr) << um_last_error_text();
    a_ = static_cast<unsigned char*>(um_alloc(kSize));
    ASSERT_NE(a_, nullptr);
    std::snprintf(path_, sizeof path_, "/tmp/unimem_pointer_io_%d", static_cast<int>(getpid()));
    pattern_.resize(kSize);
    for (std::size_t i = 0; i < kSize; ++i) pattern_[i] = static_cast<unsigned char>(i * 31 + 7);
    FILE* f = std::fopen(path_, "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(pattern_.data(), 1, kSize, f), kSize);
    std::fclose(f);
  }
  void TearDown() override {
    EXPECT_EQ(um_sync(), UM_SUCCESS);
    EXPECT_EQ(um_free(a_), UM_SUCCESS);
    EXPECT_EQ(um_program_release(program_), UM_SUCCESS);
    EXPECT_EQ(um_set_block_size(std::size_t{512} << 10), UM_SUCCESS);
    std::remove(path_);
  }
  // A kernel writes v everywhere: every block of the host view becomes invalid (PROT_NONE).
  void invalidate_with(unsigned char v) {
    um_arg args[] = {um_arg_pointer(a_), um_arg_value(&v, 1)};
    um_range r = um_range_1d(kSize, 0);
    ASSERT_EQ(um_launch(program_, "fill", &r, args, 2), UM_SUCCESS) << um_last_error_text();
  }
  std::uint64_t faults() {
    um_stats s{};
    EXPECT_EQ(um_get_stats(&s), UM_SUCCESS);
    return s.faults;
  }
  void expect_pattern(std::size_t from, std::size_t n, std::size_t pattern_from) {
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(a_[from + i], pattern_[pattern_from + i]) << "byte " << from + i;
    }
  }

  um_program program_ = nullptr;
  unsigned char* a_ = nullptr;
  char path_[64] = {};
  std::vector<unsigned char> pattern_;
};

TEST_F(PointerIo, APlainReadIntoAnInvalidBlockFailsWithEfault) {
  invalidate_with(1);
  const int fd = open(path_, O_RDONLY);
  ASSERT_GE(fd, 0);
  errno = 0;
  EXPECT_EQ(read(fd, a_ + 10, 100), -1);
  EXPECT_EQ(errno, EFAULT);
  close(fd);
}

TEST_F(PointerIo, ReadAndPreadFillInvalidBlocksWithoutFaulting) {
  invalidate_with(9);
  const int fd = open(path_, O_RDONLY);
  ASSERT_GE(fd, 0);
  um_reset_stats();
  // Across block boundaries, starting and ending inside blocks.
  ASSERT_EQ(um_read(fd, a_ + 1000, 100000), 100000) << std::strerror(errno);
  ASSERT_EQ(um_pread(fd, a_ + 150000, 30000, 5), 30000) << std::strerror(errno);
  EXPECT_EQ(faults(), 0u);
  expect_pattern(1000, 100000, 0);
  expect_pattern(150000, 30000, 5);
  EXPECT_EQ(a_[999], 9);  // the rest of a partly read block is the kernel's
  EXPECT_EQ(a_[101000], 9);
  EXPECT_EQ(a_[kSize - 1], 9);
  close(fd);
}

TEST_F(PointerIo, WriteAndPwriteSendInvalidBlocksWithoutFaulting) {
  invalidate_with(0x5A);
  char out[] = "/tmp/unimem_pointer_io_out_XXXXXX";
  const int fd = mkstemp(out);
  ASSERT_GE(fd, 0);
  um_reset_stats();
  ASSERT_EQ(um_write(fd, a_ + 7, 70000), 70000) << std::strerror(errno);
  ASSERT_EQ(um_pwrite(fd, a_ + 190000, 1000, 70000), 1000) << std::strerror(errno);
  EXPECT_EQ(faults(), 0u);
  std::vector<unsigned char> back(71000);
  ASSERT_EQ(pread(fd, back.data(), back.size(), 0), 71000);
  for (unsigned char c : back) ASSERT_EQ(c, 0x5A);
  close(fd);
  unlink(out);
}

TEST_F(PointerIo, FreadAndFwriteMoveWholeFilesThroughSharedMemory) {
  invalidate_with(3);
  FILE* in = std::fopen(path_, "rb");
  ASSERT_NE(in, nullptr);
  um_reset_stats();
  ASSERT_EQ(um_fread(a_, 1, kSize, in), kSize);
  std::fclose(in);
  EXPECT_EQ(faults(), 0u);
  expect_pattern(0, kSize, 0);
  invalidate_with(4);  // the file's bytes published, then overwritten by the kernel
  char out[] = "/tmp/unimem_pointer_io_out_XXXXXX";
  const int fd = mkstemp(out);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "wb");
  ASSERT_EQ(um_fwrite(a_ + 1, 1, kSize - 1, f), kSize - 1);
  std::fclose(f);
  FILE* check = std::fopen(out, "rb");
  std::vector<unsigned char> back(kSize - 1);
  ASSERT_EQ(std::fread(back.data(), 1, back.size(), check), back.size());
  std::fclose(check);
  for (unsigned char c : back) ASSERT_EQ(c, 4);
  unlink(out);
}

TEST_F(PointerIo, BlocksAReadCoversWholeAreNotFetchedAndAShortReadKeepsTheRest) {
  invalidate_with(6);
  um_reset_stats();
  const int fd = open(path_, O_RDONLY);
  // Blocks 1 and 2 lie wholly inside the range: not fetched; blocks 0 and 3 are fetched.
  ASSERT_EQ(um_pread(fd, a_ + 100, 3 * 65536, 0), 3 * 65536);
  um_stats s{};
  ASSERT_EQ(um_get_stats(&s), UM_SUCCESS);
  EXPECT_EQ(s.bytes_fetched, 65536u + (kSize - 3 * 65536));
  expect_pattern(100, 3 * 65536, 0);
  EXPECT_EQ(a_[99], 6);
  invalidate_with(8);
  um_reset_stats();
  // A short read (the pipe holds 60,000 bytes) into blocks 1 and 2 covered whole: what the call
  // did not write is fetched afterwards and keeps the kernel's bytes.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ASSERT_EQ(write(pipe_fds[1], pattern_.data(), 60000), 60000);
  close(pipe_fds[1]);
  const ssize_t got = um_read(pipe_fds[0], a_ + 65536, 2 * 65536);
  close(pipe_fds[0]);
  ASSERT_GT(got, 0);
  ASSERT_LE(got, 60000);
  expect_pattern(65536, static_cast<std::size_t>(got), 0);
  for (std::size_t i = 65536 + static_cast<std::size_t>(got); i < 3 * 65536; ++i) {
    ASSERT_EQ(a_[i], 8) << "byte " << i;
  }
  ASSERT_EQ(um_get_stats(&s), UM_SUCCESS);
  EXPECT_EQ(s.bytes_fetched, 2 * 65536 - static_cast<std::uint64_t>(got));
  EXPECT_EQ(s.faults, 0u);
  close(fd);
}

TEST_F(PointerIo, IoOnOrdinaryMemoryBehavesLikeLibc) {
  std::vector<unsigned char> buf(1000);
  const int fd = open(path_, O_RDONLY);
  ASSERT_EQ(um_read(fd, buf.data(), buf.size()), 1000);
  EXPECT_EQ(std::memcmp(buf.data(), pattern_.data(), 1000), 0);
  EXPECT_EQ(um_read(-1, buf.data(), 10), -1);
  EXPECT_EQ(errno, EBADF);
  close(fd);
  errno = 0;
  EXPECT_EQ(um_read(0, a_ + kSize - 10, 100), -1);  // leaves the allocation
  EXPECT_EQ(errno, EFAULT);
}

}  // namespace
