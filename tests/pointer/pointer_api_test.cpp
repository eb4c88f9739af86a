// The C API of the pointer layer (<unimem/unimem.h>) on the OpenCL devices of the environment
// (POCL_DEVICES="pthread pthread" gives two): allocation, host access through page protection
// under every protocol, launches with whole and interior pointers, um_memcpy / um_memset fast
// paths, errors, and the SIGSEGV chaining to the application's previous handler.

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <unimem/unimem.h>
#include "pointer/pointer_runtime.hpp"

namespace {

const char* const kKernels = R"CLC(
__kernel void add(__global int* a, int amount) {
  const size_t i = get_global_id(0);
  a[i] = a[i] + amount;
}
__kernel void copy_scaled(__global const int* in, __global int* out, int factor) {
  const size_t i = get_global_id(0);
  out[i] = in[i] * factor;
}
)CLC";

um_program kernels() {
  static um_program p = [] {
    um_program q = um_program_create(kKernels, "");
    EXPECT_NE(q, nullptr) << um_last_error_text();
    return q;
  }();
  return p;
}

class PointerApi : public ::testing::TestWithParam<um_protocol> {
 protected:
  void SetUp() override {
    ASSERT_EQ(um_set_protocol(GetParam()), UM_SUCCESS);
    ASSERT_EQ(um_set_block_size(std::size_t{64} << 10), UM_SUCCESS);
    ASSERT_EQ(um_set_devices(0), UM_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(um_sync(), UM_SUCCESS) << um_last_error_text();
    EXPECT_EQ(um_set_block_size(std::size_t{512} << 10), UM_SUCCESS);
  }
};

std::string protocol_name(const ::testing::TestParamInfo<um_protocol>& info) {
  return unimem::pointer::to_string(static_cast<unimem::pointer::HostProtocol>(info.param));
}

TEST_P(PointerApi, AllocationIsZeroedPageAlignedAndWritableByTheHost) {
  const std::size_t n = 300000;
  auto* a = static_cast<unsigned char*>(um_alloc(n));
  ASSERT_NE(a, nullptr) << um_last_error_text();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 4096, 0u);
  for (std::size_t i = 0; i < n; i += 997) EXPECT_EQ(a[i], 0) << i;
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<unsigned char>(i * 7);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], static_cast<unsigned char>(i * 7)) << i;
  void* base = nullptr;
  std::size_t size = 0;
  EXPECT_EQ(um_is_shared(a + 1234, &base, &size), 1);
  EXPECT_EQ(base, a);
  EXPECT_EQ(size, n);
  int local = 0;
  EXPECT_EQ(um_is_shared(&local, nullptr, nullptr), 0);
  EXPECT_EQ(um_free(a), UM_SUCCESS);
}

TEST_P(PointerApi, KernelsSeeHostWritesAndTheHostSeesKernelResults) {
  const int n = 100000;  // several 64 KiB blocks
  auto* a = static_cast<int*>(um_alloc(n * sizeof(int)));
  ASSERT_NE(a, nullptr) << um_last_error_text();
  for (int i = 0; i < n; ++i) a[i] = i;
  ASSERT_EQ(um_reset_stats(), UM_SUCCESS);
  int amount = 5;
  um_arg args[] = {um_arg_pointer(a), um_arg_value(&amount, sizeof amount)};
  um_range r = um_range_1d(n, 0);
  ASSERT_EQ(um_launch(kernels(), "add", &r, args, 2), UM_SUCCESS) << um_last_error_text();
  ASSERT_EQ(um_sync(), UM_SUCCESS) << um_last_error_text();
  for (int i = 0; i < n; ++i) ASSERT_EQ(a[i], i + 5) << i;
  // The host writes again, the kernel adds again: release at every launch.
  for (int i = 0; i < n; i += 3) a[i] = -i;
  ASSERT_EQ(um_launch(kernels(), "add", &r, args, 2), UM_SUCCESS) << um_last_error_text();
  ASSERT_EQ(um_sync(), UM_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(a[i], (i % 3 == 0 ? -i : i + 5) + 5) << i;
  um_stats s{};
  ASSERT_EQ(um_get_stats(&s), UM_SUCCESS);
  if (GetParam() == UM_PROTOCOL_BATCH) {
    EXPECT_EQ(s.faults, 0u);  // batch fetches everything at sync
  } else {
    EXPECT_GT(s.read_faults, 0u);  // the first read of each block after a launch
    EXPECT_GT(s.write_faults, 0u);
  }
  EXPECT_GE(s.bytes_published, n * sizeof(int));
  EXPECT_GE(s.bytes_fetched, n * sizeof(int));
  EXPECT_EQ(um_free(a), UM_SUCCESS);
}

TEST_P(PointerApi, HostAccessBetweenLaunchAndSyncWaitsForTheKernel) {
  const int n = 50000;
  auto* a = static_cast<int*>(um_alloc(n * sizeof(int)));
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < n; ++i) a[i] = 2 * i;
  int amount = 1;
  um_arg args[] = {um_arg_pointer(a), um_arg_value(&amount, sizeof amount)};
  um_range r = um_range_1d(n, 0);
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(um_launch(kernels(), "add", &r, args, 2), UM_SUCCESS) << um_last_error_text();
  }
  for (int i = n - 1; i >= 0; --i) ASSERT_EQ(a[i], 2 * i + 3) << i;  // no um_sync first
  EXPECT_EQ(um_free(a), UM_SUCCESS);
}

TEST_P(PointerApi, InteriorPointersReachTheKernelAsBufferPlusOffset) {
  const int n = 40000;
  auto* in = static_cast<int*>(um_alloc(2 * n * sizeof(int)));
  auto* out = static_cast<int*>(um_alloc(2 * n * sizeof(int)));
  ASSERT_NE(in, nullptr);
  ASSERT_NE(out, nullptr);
  for (int i = 0; i < 2 * n; ++i) in[i] = i;
  const int skip_in = 1000;
  const int skip_out = 17;
  int factor = 3;
  um_arg args[] = {um_arg_pointer(in + skip_in), um_arg_pointer(out + skip_out),
                   um_arg_value(&factor, sizeof factor)};
  um_range r = um_range_1d(n, 0);
  ASSERT_EQ(um_launch(kernels(), "copy_scaled", &r, args, 3), UM_SUCCESS) << um_last_error_text();
  ASSERT_EQ(um_sync(), UM_SUCCESS);
  for (int i = 0; i < 2 * n; ++i) {
    const bool written = i >= skip_out && i < skip_out + n;
    ASSERT_EQ(out[i], written ? 3 * (i - skip_out + skip_in) : 0) << i;
  }
  EXPECT_EQ(um_free(in), UM_SUCCESS);
  EXPECT_EQ(um_free(out), UM_SUCCESS);
}

TEST_P(PointerApi, MemcpyAndMemsetMoveBytesInEveryDirection) {
  const std::size_t n = 200000;
  auto* a = static_cast<unsigned char*>(um_alloc(n));
  auto* b = static_cast<unsigned char*>(um_alloc(n));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<unsigned char> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 13 + 1);
  ASSERT_EQ(um_memcpy(a, host.data(), n), UM_SUCCESS) << um_last_error_text();
  ASSERT_EQ(um_memset(a + 100, 0xAB, 5000), UM_SUCCESS);
  ASSERT_EQ(um_memcpy(b + 10, a + 20, n - 20), UM_SUCCESS) << um_last_error_text();
  std::vector<unsigned char> back(n);
  ASSERT_EQ(um_memcpy(back.data(), b, n), UM_SUCCESS);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char expect = 0;
    if (i >= 10 && i < n - 10) {  // b[10, n - 10) <- a[20, n)
      const std::size_t s = i - 10 + 20;
      expect = (s >= 100 && s < 5100) ? 0xAB : static_cast<unsigned char>(s * 13 + 1);
    }
    ASSERT_EQ(back[i], expect) << i;
    ASSERT_EQ(b[i], expect) << i;
  }
  EXPECT_EQ(um_free(a), UM_SUCCESS);
  EXPECT_EQ(um_free(b), UM_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Protocols, PointerApi,
                         ::testing::Values(UM_PROTOCOL_BATCH, UM_PROTOCOL_LAZY,
                                           UM_PROTOCOL_ROLLING),
                         protocol_name);

TEST(PointerErrors, BadCallsReportACodeAndAMessageNamingWhatWasWrong) {
  EXPECT_EQ(um_alloc(0), nullptr);
  EXPECT_EQ(um_last_error(), UM_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(um_last_error_text()).find("size 0"), std::string::npos);
  auto* a = static_cast<int*>(um_alloc(4096));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(um_last_error(), UM_SUCCESS);
  EXPECT_EQ(um_free(a + 3), UM_ERROR_INVALID_POINTER);
  EXPECT_NE(std::string(um_last_error_text()).find("12 bytes inside"), std::string::npos)
      << um_last_error_text();
  int local[4] = {};
  um_arg args[] = {um_arg_pointer(local), um_arg_value(local, sizeof(int))};
  um_range r = um_range_1d(4, 0);
  EXPECT_EQ(um_launch(kernels(), "add", &r, args, 2), UM_ERROR_INVALID_POINTER);
  EXPECT_NE(std::string(um_last_error_text()).find("argument 0 of kernel 'add'"), std::string::npos)
      << um_last_error_text();
  args[0] = um_arg_pointer(a);
  EXPECT_EQ(um_launch(kernels(), "no_such_kernel", &r, args, 2), UM_ERROR_LAUNCH);
  EXPECT_NE(std::string(um_last_error_text()).find("no_such_kernel"), std::string::npos)
      << um_last_error_text();
  EXPECT_EQ(um_memcpy(a + 1000, local, 200), UM_ERROR_INVALID_POINTER);
  EXPECT_NE(std::string(um_last_error_text()).find("leave the allocation"), std::string::npos);
  EXPECT_EQ(um_set_block_size(1000), UM_ERROR_INVALID_VALUE);
  um_protocol p{};
  EXPECT_EQ(um_parse_protocol("eager", &p), UM_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(um_last_error_text()).find("'eager'"), std::string::npos);
  EXPECT_EQ(um_parse_protocol("rolling", &p), UM_SUCCESS);
  EXPECT_EQ(p, UM_PROTOCOL_ROLLING);
  EXPECT_EQ(um_set_devices(1000), UM_ERROR_INVALID_VALUE);
  EXPECT_EQ(um_program_create("__kernel void broken( {", ""), nullptr);
  EXPECT_EQ(um_last_error(), UM_ERROR_BUILD);
  EXPECT_STREQ(um_error_name(UM_ERROR_LAUNCH), "UM_ERROR_LAUNCH");
  // The data stayed intact through the failed calls.
  a[5] = 9;
  EXPECT_EQ(a[5], 9);
  EXPECT_EQ(um_free(a), UM_SUCCESS);
}

// Death tests run in a fresh process (threadsafe style), so unimem's handler is installed there
// after the test's own: the order a program that has its own SIGSEGV handler sees.
void exit_42(int) { _exit(42); }

TEST(PointerFaultChainDeathTest, AForeignFaultReachesThePreviousHandler) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        struct sigaction mine {};
        mine.sa_handler = &exit_42;
        sigemptyset(&mine.sa_mask);
        sigaction(SIGSEGV, &mine, nullptr);
        void* shared = um_alloc(100);
        if (shared == nullptr) _exit(3);
        static_cast<volatile char*>(shared)[5] = 1;  // ours: handled
        void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        static_cast<volatile char*>(page)[0] = 1;  // foreign: chained
        _exit(0);
      },
      ::testing::ExitedWithCode(42), "");
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// Under a sanitizer the previous handler is the sanitizer's: it reports the address and exits
// with its own status (ASan 1, TSan 66) or aborts (abort_on_error=1).
bool default_action(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGABRT || WTERMSIG(status) == SIGSEGV;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3;
}
const char* const kDefaultActionMessage = "SEGV on unknown address";
#else
bool default_action(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV; }
const char* const kDefaultActionMessage = "";
#endif

TEST(PointerFaultChainDeathTest, AForeignFaultWithoutAHandlerTakesTheDefaultAction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* shared = um_alloc(100);
        if (shared == nullptr) _exit(3);
        static_cast<volatile char*>(shared)[5] = 1;
        void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        static_cast<volatile char*>(page)[0] = 1;
        _exit(0);
      },
      default_action, kDefaultActionMessage);
}

}  // namespace

namespace {

// The environment is read when the process's pointer runtime starts: fresh processes.
TEST(PointerEnvironmentDeathTest, UnimemProtocolAndBlockSizeSetTheDefaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("UNIMEM_PROTOCOL", "rolling", 1);
        setenv("UNIMEM_BLOCK_SIZE", "64K", 1);
        const bool right = um_get_protocol() == UM_PROTOCOL_ROLLING &&
                           um_get_block_size() == std::size_t{64} << 10;
        _exit(right ? 7 : 1);
      },
      ::testing::ExitedWithCode(7), "");
}

TEST(PointerEnvironmentDeathTest, ABadUnimemProtocolIsAnErrorNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("UNIMEM_PROTOCOL", "eager", 1);
        void* p = um_alloc(100);
        const std::string text = um_last_error_text();
        const bool right = p == nullptr && um_last_error() == UM_ERROR_INVALID_VALUE &&
                           text.find("UNIMEM_PROTOCOL='eager'") != std::string::npos;
        _exit(right ? 7 : 1);
      },
      ::testing::ExitedWithCode(7), "");
  EXPECT_EXIT(
      {
        setenv("UNIMEM_BLOCK_SIZE", "1000", 1);
        void* p = um_alloc(100);
        const std::string text = um_last_error_text();
        _exit(p == nullptr && text.find("UNIMEM_BLOCK_SIZE=1000") != std::string::npos ? 7 : 1);
      },
      ::testing::ExitedWithCode(7), "");
}

}  // namespace
