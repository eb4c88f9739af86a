// WordMutex: the one-word mutex of the launch path (Drepper's mutex3).
#include "common/word_mutex.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace unimem {
namespace {

constexpr std::uint32_t kSeed = 20261127;

TEST(WordMutex, TryLockFailsWhileHeldAndSucceedsAfter) {
  WordMutex m;
  EXPECT_TRUE(m.try_lock());
  EXPECT_FALSE(m.try_lock());
  m.unlock();
  {
    const std::lock_guard lock(m);
    EXPECT_FALSE(m.try_lock());
  }
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

// Threads that hold the lock long enough for others to wait (the contended path: the word at 2,
// waiters asleep and woken) and threads that take it in a tight loop: every increment of a plain
// counter under it counts, and a waiter left asleep would hang the test. Seeded per thread.
TEST(WordMutexConcurrency, EveryIncrementUnderTheLockCounts) {
  WordMutex m;
  std::uint64_t counter = 0;  // guarded by m
  constexpr int kThreads = 6;
  constexpr int kRounds = 4000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, &counter, t] {
      std::mt19937 rng(kSeed + static_cast<std::uint32_t>(t));
      for (int r = 0; r < kRounds; ++r) {
        const std::lock_guard lock(m);
        const std::uint64_t seen = counter;
        if (rng() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        counter = seen + 1;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(counter, std::uint64_t{kThreads} * kRounds) << "seed " << kSeed;
  EXPECT_TRUE(m.try_lock()) << "left locked";
  m.unlock();
}

}  // namespace
}  // namespace unimem
