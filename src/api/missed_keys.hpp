#pragma once

// The plan cache's admission filter (ProgramCore::launch): the hashes of the keys that missed
// the cache since it was last cleared. A plan is kept only from its key's second miss on, so
// launches whose keys never come back (floyd-warshall's pivot k: 1024 keys per run against 256
// entries) keep no plans alive, while a key that recurs is cached from its second launch.
// Keeping every plan cost those launches ~3 us each on the submitting thread (256 plans held and
// then freed at once, the allocator handing out cold memory), though none was ever reused.

#include <array>
#include <cstddef>
#include <cstdint>

namespace unimem::detail {

/// A set of up to kCapacity 64-bit hashes in a fixed open-addressing table (no allocation);
/// cleared when full. A hash collision only admits a plan early, which costs memory, never a
/// result: the cache itself compares whole keys. Not thread-safe (ProgramCore's mutex_ guards it).
class MissedKeys {
 public:
  static constexpr std::size_t kCapacity = 256;

  /// Records `hash`; whether it was already recorded (since the last clear).
  bool seen_before(std::uint64_t hash) {
    if (hash == kEmpty) hash = 1;  // 0 marks an empty slot
    std::size_t slot = static_cast<std::size_t>(hash) & (kSlots - 1);
    while (slots_[slot] != kEmpty) {
      if (slots_[slot] == hash) return true;
      slot = (slot + 1) & (kSlots - 1);
    }
    if (count_ == kCapacity) {
      clear();
      slot = static_cast<std::size_t>(hash) & (kSlots - 1);
    }
    slots_[slot] = hash;
    ++count_;
    return false;
  }
  void clear() {
    slots_.fill(kEmpty);
    count_ = 0;
  }
  [[nodiscard]] std::size_t size() const { return count_; }

 private:
  static constexpr std::uint64_t kEmpty = 0;
  static constexpr std::size_t kSlots = 2 * kCapacity;  // at most half full: short probes
  std::array<std::uint64_t, kSlots> slots_{};
  std::size_t count_ = 0;
};

}  // namespace unimem::detail
