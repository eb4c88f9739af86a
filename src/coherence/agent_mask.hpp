#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/check.hpp"

namespace unimem {

/// An agent is a holder of copies of a shared buffer: agent 0 is the host (the home copy),
/// agent i + 1 is device i of the runtime.
using Agent = std::uint32_t;
inline constexpr Agent kHostAgent = 0;
/// Agents an AgentMask can name: the host plus 63 devices.
inline constexpr std::size_t kMaxAgents = 64;

[[nodiscard]] constexpr Agent agent_of_device(std::size_t device_index) {
  return static_cast<Agent>(device_index + 1);
}
[[nodiscard]] constexpr std::size_t device_of_agent(Agent agent) { return agent - 1; }

/// The set of agents whose copy of a byte is current (DSOM section 4.2.2: the segment tag, one
/// valid bit per agent). A plain 64-bit value, so directory segments compare and merge cheaply.
class AgentMask {
 public:
  constexpr AgentMask() = default;
  static constexpr AgentMask of(Agent a) { return AgentMask(bit(a)); }
  static constexpr AgentMask from_bits(std::uint64_t bits) { return AgentMask(bits); }
  /// Agents 0 .. count-1.
  static constexpr AgentMask first(std::size_t count) {
    return AgentMask(count >= kMaxAgents ? ~std::uint64_t{0} : (std::uint64_t{1} << count) - 1);
  }

  [[nodiscard]] constexpr bool contains(Agent a) const { return (bits_ & bit(a)) != 0; }
  [[nodiscard]] constexpr bool empty() const { return bits_ == 0; }
  [[nodiscard]] constexpr int count() const { return std::popcount(bits_); }
  [[nodiscard]] constexpr std::uint64_t bits() const { return bits_; }
  /// The lowest agent in the mask; the mask must not be empty.
  [[nodiscard]] constexpr Agent lowest() const {
    return static_cast<Agent>(std::countr_zero(bits_));
  }
  /// The mask without the host bit.
  [[nodiscard]] constexpr AgentMask devices() const { return AgentMask(bits_ & ~std::uint64_t{1}); }

  [[nodiscard]] constexpr AgentMask with(Agent a) const { return AgentMask(bits_ | bit(a)); }
  [[nodiscard]] constexpr AgentMask without(Agent a) const { return AgentMask(bits_ & ~bit(a)); }
  constexpr AgentMask operator|(AgentMask o) const { return AgentMask(bits_ | o.bits_); }
  constexpr AgentMask operator&(AgentMask o) const { return AgentMask(bits_ & o.bits_); }

  /// Calls f(agent) for each agent in increasing order.
  template <typename F>
  constexpr void for_each(F&& f) const {
    for (std::uint64_t b = bits_; b != 0; b &= b - 1) f(static_cast<Agent>(std::countr_zero(b)));
  }

  friend constexpr auto operator<=>(AgentMask, AgentMask) = default;
  /// "{host, d0, d3}" (devices by index, not agent number).
  [[nodiscard]] std::string to_string() const {
    std::string out = "{";
    for_each([&](Agent a) {
      if (out.size() > 1) out += ", ";
      if (a == kHostAgent) {
        out += "host";
      } else {
        out += 'd';
        out += std::to_string(device_of_agent(a));
      }
    });
    return out + "}";
  }

 private:
  constexpr explicit AgentMask(std::uint64_t bits) : bits_(bits) {}
  static constexpr std::uint64_t bit(Agent a) {
    UNIMEM_REQUIRE(a < kMaxAgents, "AgentMask: agent must be below 64");
    return std::uint64_t{1} << a;
  }
  std::uint64_t bits_ = 0;
};

}  // namespace unimem
