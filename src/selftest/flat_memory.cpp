#include "selftest/flat_memory.hpp"

namespace unimem::selftest {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 31);
}

}  // namespace

std::uint64_t KernelEffect::digest(const std::vector<const std::byte*>& memory) const {
  std::uint64_t h = mix(0, salt);
  for (std::size_t j = 0; j < buffers.size(); ++j) {
    for (const Interval& r : access[j].needed()) {
      for (std::uint64_t o = r.begin; o < r.end; ++o) {
        h = mix(h, (o << 8) | std::to_integer<std::uint64_t>(memory[j][o]));
      }
    }
  }
  return h;
}

void KernelEffect::write(std::uint64_t digest, const std::vector<std::byte*>& memory) const {
  for (std::size_t j = 0; j < buffers.size(); ++j) {
    for (const Interval& r : access[j].writes) {
      for (std::uint64_t o = r.begin; o < r.end; ++o) {
        memory[j][o] = static_cast<std::byte>(mix(digest, (j << 40) | o) & 0xFF);
      }
    }
    for (const Interval& r : access[j].may_writes.subtract(access[j].writes)) {
      for (std::uint64_t o = r.begin; o < r.end; ++o) {
        const std::uint64_t v = mix(digest, (j << 40) | o);
        if ((v & 3) == 0) memory[j][o] = static_cast<std::byte>((v >> 8) & 0xFF);
      }
    }
  }
}

FlatMemory::FlatMemory(const std::vector<std::uint64_t>& sizes, bool peer_copies, bool direct_reads)
    : peer_(peer_copies), direct_reads_(direct_reads) {
  for (std::uint64_t s : sizes) {
    memory_.emplace_back(s, std::byte{0});
    masks_.emplace_back(s, AgentMask::of(kHostAgent));
  }
}

void FlatMemory::device_read(std::size_t buffer, Agent device, const IntervalSet& bytes) {
  for (const Interval& r : bytes) {
    for (std::uint64_t o = r.begin; o < r.end; ++o) {
      AgentMask& m = masks_[buffer][o];
      if (m.contains(device)) continue;
      if (m.contains(kHostAgent) || peer_) {
        minimum_ += 1;
        m = m.with(device);
      } else {
        minimum_ += 2;  // write back, then copy from home
        m = m.with(kHostAgent).with(device);
      }
    }
  }
}

void FlatMemory::host_read(std::size_t buffer, const Interval& range) {
  for (std::uint64_t o = range.begin; o < range.end; ++o) {
    AgentMask& m = masks_[buffer][o];
    if (!m.contains(kHostAgent)) {
      minimum_ += 1;
      if (!direct_reads_) m = m.with(kHostAgent);
    }
  }
}

void FlatMemory::set_owner(std::size_t buffer, const IntervalSet& bytes, Agent agent) {
  for (const Interval& r : bytes) {
    for (std::uint64_t o = r.begin; o < r.end; ++o) masks_[buffer][o] = AgentMask::of(agent);
  }
}

std::vector<std::byte*> FlatMemory::arguments(const KernelEffect& effect) {
  std::vector<std::byte*> out;
  for (std::size_t b : effect.buffers) out.push_back(memory_[b].data());
  return out;
}

void FlatMemory::run(const KernelEffect& effect, Agent agent) {
  for (std::size_t j = 0; j < effect.buffers.size(); ++j) {
    device_read(effect.buffers[j], agent, effect.access[j].needed());
  }
  const std::vector<std::byte*> args = arguments(effect);
  effect.write(effect.digest({args.begin(), args.end()}), args);
  for (std::size_t j = 0; j < effect.buffers.size(); ++j) {
    set_owner(effect.buffers[j], effect.access[j].written(), agent);
  }
}

}  // namespace unimem::selftest
