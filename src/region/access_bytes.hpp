#pragma once

// The bytes one access touches in one buffer: the single type for "what a kernel, or one
// partition of it, does to a buffer argument", whoever derived it (caller descriptors, the kernel
// analysis, the planner) and whoever consumes it (the runtime, the coherence layer).

#include "region/interval_set.hpp"

namespace unimem {

/// reads may over-approximate (costs bytes, never correctness); writes are bytes certainly written
/// (nothing to fetch first); may_writes are bytes perhaps written, fetched before the kernel like
/// reads so that the bytes it does not write stay right (DESIGN.md invariant 6).
struct AccessBytes {
  IntervalSet reads;
  IntervalSet writes;
  IntervalSet may_writes;

  /// Bytes the device must hold before the kernel: reads and may-writes.
  [[nodiscard]] IntervalSet needed() const { return reads.unite(may_writes); }
  /// Bytes the kernel may have changed afterwards: writes and may-writes.
  [[nodiscard]] IntervalSet written() const { return writes.unite(may_writes); }
  /// Whether written() and other.written() share a byte, without building either union.
  [[nodiscard]] bool written_meets(const AccessBytes& other) const {
    return writes.intersects(other.writes) || writes.intersects(other.may_writes) ||
           may_writes.intersects(other.writes) || may_writes.intersects(other.may_writes);
  }
  [[nodiscard]] bool empty() const { return reads.empty() && writes.empty() && may_writes.empty(); }
  /// Every set shifted by delta bytes (from an argument's pointer to its buffer's start).
  [[nodiscard]] AccessBytes shifted(std::int64_t delta) const {
    return {reads.shifted(delta), writes.shifted(delta), may_writes.shifted(delta)};
  }
  /// Union, field by field.
  AccessBytes& operator|=(const AccessBytes& other) {
    reads = reads.unite(other.reads);
    writes = writes.unite(other.writes);
    may_writes = may_writes.unite(other.may_writes);
    return *this;
  }
  friend bool operator==(const AccessBytes&, const AccessBytes&) = default;
};

}  // namespace unimem
