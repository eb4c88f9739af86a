#pragma once

// A mutex of one 32-bit word, for the short critical sections of the launch path.

#include <atomic>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define UNIMEM_WORD_MUTEX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNIMEM_WORD_MUTEX_TSAN 1
#endif
#endif
#if defined(UNIMEM_WORD_MUTEX_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace unimem {

/// A mutex of one word for short critical sections on hot paths (a platform launch takes three):
/// uncontended, lock() and unlock() are one atomic instruction each, where std::mutex calls
/// pthread_mutex_lock and pthread_mutex_unlock (about 50 instructions a pair). A waiter sleeps
/// (std::atomic::wait: a futex on Linux). The algorithm is the third mutex of Drepper's
/// "Futexes Are Tricky" (2011, section 6): the word is 0 free, 1 locked, 2 locked and maybe
/// waited for; only an unlock that finds 2 wakes a waiter, and a woken waiter takes the lock as
/// 2 (another may still wait). Lockable (std::lock_guard, std::unique_lock, std::scoped_lock);
/// not recursive, no timed locking, no std::condition_variable. Under ThreadSanitizer it tells
/// the sanitizer it is a mutex (lock order and races checked as for std::mutex).
class WordMutex {
 public:
  WordMutex() {
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_create(this, __tsan_mutex_not_static);
#endif
  }
  ~WordMutex() {
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_destroy(this, __tsan_mutex_not_static);
#endif
  }
  WordMutex(const WordMutex&) = delete;
  WordMutex& operator=(const WordMutex&) = delete;

  void lock() {
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_pre_lock(this, 0);
#endif
    std::uint32_t seen = 0;
    if (!word_.compare_exchange_strong(seen, 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      lock_contended(seen);
    }
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_post_lock(this, 0, 0);
#endif
  }

  bool try_lock() {
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
#endif
    std::uint32_t seen = 0;
    const bool locked = word_.compare_exchange_strong(seen, 1, std::memory_order_acquire,
                                                      std::memory_order_relaxed);
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_post_lock(
        this, locked ? __tsan_mutex_try_lock : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed,
        0);
#endif
    return locked;
  }

  void unlock() {
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_pre_unlock(this, 0);
#endif
    if (word_.exchange(0, std::memory_order_release) == 2) word_.notify_one();
#if defined(UNIMEM_WORD_MUTEX_TSAN)
    __tsan_mutex_post_unlock(this, 0);
#endif
  }

 private:
  // seen: the word as the failed first attempt found it (1 or 2).
  void lock_contended(std::uint32_t seen) {
    if (seen != 2) seen = word_.exchange(2, std::memory_order_acquire);
    while (seen != 0) {
      word_.wait(2, std::memory_order_relaxed);
      seen = word_.exchange(2, std::memory_order_acquire);
    }
  }

  std::atomic<std::uint32_t> word_{0};
};

}  // namespace unimem
