#pragma once

// The coherence selftest's reference: one flat memory per buffer on which a random program runs
// op by op, plus the lazy protocol's byte-exact copy count (a dense model of DSOM Table 1: one
// AgentMask per byte). KernelEffect is what a random kernel does; the device kernel and the
// flat memory both run it, so both compute exactly the same bytes.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "api/runtime_core.hpp"
#include "coherence/agent_mask.hpp"
#include "region/access_bytes.hpp"

namespace unimem::selftest {

/// What one kernel (or one partition of it) does to its buffer arguments: it digests every byte it
/// needs (reads and may-writes, all before any write, as on a device), then writes its writes with
/// values derived from the digest and the position, and a quarter of its may-writes.
struct KernelEffect {
  std::uint64_t salt = 0;
  /// Indices into the program's buffers; a buffer may be passed twice (the digest reads every
  /// argument before any write, and a later argument's write of a byte wins).
  std::vector<std::size_t> buffers;
  std::vector<AccessBytes> access;  ///< per argument

  [[nodiscard]] std::uint64_t digest(const std::vector<const std::byte*>& memory) const;
  void write(std::uint64_t digest, const std::vector<std::byte*>& memory) const;
};

/// The flat memory and the minimum bytes the lazy protocol must copy for the ops seen so far.
class FlatMemory {
 public:
  /// One zeroed buffer per size, valid only at the host. Without peer copies a device that reads
  /// a byte only another device holds costs two copies (write-back, then fetch). direct_reads
  /// (RuntimeOptions::direct_host_reads): a host read copies each byte the host lacks from a
  /// device straight to the reader, every time, and the host still lacks it afterwards; without
  /// it the byte is copied home once and the host holds it.
  FlatMemory(const std::vector<std::uint64_t>& sizes, bool peer_copies, bool direct_reads = false);

  [[nodiscard]] std::vector<std::byte>& memory(std::size_t buffer) { return memory_[buffer]; }
  [[nodiscard]] std::uint64_t minimum_bytes() const { return minimum_; }

  /// Agent `device` acquires `bytes` of `buffer` (a kernel's reads and may-writes).
  void device_read(std::size_t buffer, Agent device, const IntervalSet& bytes);
  /// The host reads `range` of `buffer`.
  void host_read(std::size_t buffer, const Interval& range);
  /// `agent` wrote `bytes` of `buffer`: it alone holds them now.
  void set_owner(std::size_t buffer, const IntervalSet& bytes, Agent agent);

  /// Runs `effect` on this memory as `agent` would (acquire, digest, write, own).
  void run(const KernelEffect& effect, Agent agent);
  /// Pointers to the buffers `effect` uses, in argument order.
  [[nodiscard]] std::vector<std::byte*> arguments(const KernelEffect& effect);

 private:
  bool peer_;
  bool direct_reads_;
  std::vector<std::vector<std::byte>> memory_;
  std::vector<std::vector<AgentMask>> masks_;
  std::uint64_t minimum_ = 0;
};

}  // namespace unimem::selftest
