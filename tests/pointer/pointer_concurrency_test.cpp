// Several host threads touching shared memory at once (concurrent faults on the same and on
// different blocks, launches from several threads), under every protocol. Labelled
// pointer-concurrency, so the TSan stage runs it.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <unimem/unimem.h>

namespace {

const char* const kKernel = R"CLC(
__kernel void twice_plus(__global int* a, int k) {
  const size_t i = get_global_id(0);
  a[i] = 2 * a[i] + k;
}
)CLC";

class PointerConcurrency : public ::testing::TestWithParam<um_protocol> {};

TEST_P(PointerConcurrency, ThreadsWriteLaunchAndReadOneAllocationTogether) {
  ASSERT_EQ(um_set_protocol(GetParam()), UM_SUCCESS);
  ASSERT_EQ(um_set_block_size(16384), UM_SUCCESS);
  um_program p = um_program_create(kKernel, "");
  ASSERT_NE(p, nullptr) << um_last_error_text();
  constexpr int kThreads = 4;
  constexpr int kPer = 30011;  // not a multiple of the block: threads share blocks
  constexpr int n = kThreads * kPer;
  auto* a = static_cast<int*>(um_alloc(n * sizeof(int)));
  ASSERT_NE(a, nullptr);
  std::atomic<int> errors{0};
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = t * kPer; i < (t + 1) * kPer; ++i) a[i] += i % 1000;
      });
    }
    for (auto& th : threads) th.join();
    int k = round;
    um_arg args[] = {um_arg_pointer(a), um_arg_value(&k, sizeof k)};
    um_range r = um_range_1d(n, 0);
    ASSERT_EQ(um_launch(p, "twice_plus", &r, args, 2), UM_SUCCESS) << um_last_error_text();
  }
  ASSERT_EQ(um_sync(), UM_SUCCESS);
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t) {
    readers.emplace_back([&, t] {
      for (int i = t; i < n; i += kThreads) {  // interleaved: every block read by every thread
        std::int64_t v = 0;
        for (int round = 0; round < 3; ++round) v = 2 * (v + i % 1000) + round;
        if (a[i] != static_cast<int>(v)) errors.fetch_add(1);
      }
    });
  }
  for (auto& th : readers) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(um_free(a), UM_SUCCESS);
  EXPECT_EQ(um_program_release(p), UM_SUCCESS);
  EXPECT_EQ(um_set_block_size(std::size_t{512} << 10), UM_SUCCESS);
}

TEST_P(PointerConcurrency, ThreadsLaunchOnTheirOwnAllocations) {
  ASSERT_EQ(um_set_protocol(GetParam()), UM_SUCCESS);
  um_program p = um_program_create(kKernel, "");
  ASSERT_NE(p, nullptr) << um_last_error_text();
  constexpr int kThreads = 3;
  constexpr int n = 70000;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto* a = static_cast<int*>(um_alloc(n * sizeof(int)));
      if (a == nullptr) {
        errors.fetch_add(1);
        return;
      }
      for (int i = 0; i < n; ++i) a[i] = i + t;
      int k = t;
      um_arg args[] = {um_arg_pointer(a), um_arg_value(&k, sizeof k)};
      um_range r = um_range_1d(n, 0);
      if (um_launch(p, "twice_plus", &r, args, 2) != UM_SUCCESS) errors.fetch_add(1);
      for (int i = 0; i < n; ++i) {
        if (a[i] != 2 * (i + t) + t) errors.fetch_add(1);
      }
      if (um_free(a) != UM_SUCCESS) errors.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(um_sync(), UM_SUCCESS);
  EXPECT_EQ(um_program_release(p), UM_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Protocols, PointerConcurrency,
                         ::testing::Values(UM_PROTOCOL_BATCH, UM_PROTOCOL_LAZY,
                                           UM_PROTOCOL_ROLLING));

}  // namespace
