// unimem_pointer_interpose: with it linked, the plain libc names read / write / pread / pwrite /
// fread / fwrite work on shared memory in any block state, without EFAULT and without a fault per
// page, and behave as before on ordinary memory. (Without it, read() into an invalid block fails
// with EFAULT: tests/pointer/pointer_io_test.cpp.)

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

class Interposed : public ::testing::Test {
 protected:
  static constexpr std::size_t kSize = 5 * 4096 * 4 + 77;
  void SetUp() override {
    ASSERT_EQ(um_set_block_size(16384), UM_SUCCESS);
    program_ = um_program_create(kKernel, "");
    ASSERT_NE(program_, nullptr) << um_last_error_text();
    a_ = static_cast<unsigned char*>(um_alloc(kSize));
    ASSERT_NE(a_, nullptr);
    std::snprintf(path_, sizeof path_, "/tmp/unimem_interpose_%d", static_cast<int>(getpid()));
    data_.resize(kSize);
    for (std::size_t i = 0; i < kSize; ++i) data_[i] = static_cast<unsigned char>(i * 29 + 3);
    const int fd = open(path_, O_CREAT | O_TRUNC | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, data_.data(), kSize), static_cast<ssize_t>(kSize));  // ordinary memory
    close(fd);
  }
  void TearDown() override {
    EXPECT_EQ(um_free(a_), UM_SUCCESS);
    EXPECT_EQ(um_program_release(program_), UM_SUCCESS);
    EXPECT_EQ(um_set_block_size(std::size_t{512} << 10), UM_SUCCESS);
    unlink(path_);
  }
  void invalidate_with(unsigned char v) {  // every block of the host view becomes invalid
    um_arg args[] = {um_arg_pointer(a_), um_arg_value(&v, 1)};
    um_range r = um_range_1d(kSize, 0);
    ASSERT_EQ(um_launch(program_, "fill", &r, args, 2), UM_SUCCESS) << um_last_error_text();
    um_reset_stats();
  }
  std::uint64_t faults() {
    um_stats s{};
    um_get_stats(&s);
    return s.faults;
  }
  um_program program_ = nullptr;
  unsigned char* a_ = nullptr;
  char path_[64] = {};
  std::vector<unsigned char> data_;
};

TEST_F(Interposed, ReadAndPreadIntoInvalidBlocks) {
  invalidate_with(1);
  const int fd = open(path_, O_RDONLY);
  ASSERT_EQ(read(fd, a_ + 5, 50000), 50000) << std::strerror(errno);
  ASSERT_EQ(pread(fd, a_ + 60000, 20000, 100), 20000) << std::strerror(errno);
  close(fd);
  EXPECT_EQ(faults(), 0u);
  EXPECT_EQ(std::memcmp(a_ + 5, data_.data(), 50000), 0);
  EXPECT_EQ(std::memcmp(a_ + 60000, data_.data() + 100, 20000), 0);
  EXPECT_EQ(a_[4], 1);
  EXPECT_EQ(a_[50005], 1);
}

TEST_F(Interposed, WriteAndPwriteFromInvalidBlocks) {
  invalidate_with(7);
  const int fd = open(path_, O_RDWR);
  ASSERT_EQ(write(fd, a_ + 3, 40000), 40000) << std::strerror(errno);
  ASSERT_EQ(pwrite(fd, a_ + 70000, 10000, 40000), 10000) << std::strerror(errno);
  EXPECT_EQ(faults(), 0u);
  std::vector<unsigned char> back(50000);
  ASSERT_EQ(pread(fd, back.data(), back.size(), 0), 50000);  // ordinary memory: libc as usual
  close(fd);
  for (unsigned char c : back) ASSERT_EQ(c, 7);
}

TEST_F(Interposed, FreadAndFwriteOfWholeAllocations) {
  invalidate_with(2);
  FILE* in = std::fopen(path_, "rb");
  ASSERT_EQ(fread(a_, 1, kSize, in), kSize);
  std::fclose(in);
  EXPECT_EQ(faults(), 0u);
  EXPECT_EQ(std::memcmp(a_, data_.data(), kSize), 0);
  invalidate_with(9);
  FILE* out = std::fopen(path_, "wb");
  ASSERT_EQ(fwrite(a_, 1, kSize, out), kSize);
  std::fclose(out);
  EXPECT_EQ(faults(), 0u);
  std::vector<unsigned char> back(kSize);
  FILE* check = std::fopen(path_, "rb");
  ASSERT_EQ(fread(back.data(), 1, kSize, check), kSize);
  std::fclose(check);
  for (unsigned char c : back) ASSERT_EQ(c, 9);
}

TEST_F(Interposed, ErrorsStayThoseOfLibc) {
  std::vector<unsigned char> buf(10);
  errno = 0;
  EXPECT_EQ(read(-1, buf.data(), buf.size()), -1);
  EXPECT_EQ(errno, EBADF);
  errno = 0;
  EXPECT_EQ(write(-1, a_, 10), -1);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
