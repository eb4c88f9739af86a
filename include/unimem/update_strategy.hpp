#pragma once

// When unimem moves the bytes a kernel wrote: the four update strategies of DSOM
// (000_7b2a075be0870d8f.txt section 4.2.3). Implemented by the coherence layer
// (src/coherence/update_strategy.*).

#include <optional>
#include <string_view>

namespace unimem {

/// When results move after a kernel writes them. A strategy only decides when copies happen,
/// never whether the result is right.
enum class UpdateStrategy {
  batch,     ///< after each write: write back to the host and update every device
  balance,   ///< after each write: write back to the host only
  lazy,      ///< copy only when a reader needs the bytes (minimal bytes)
  adaptive,  ///< lazy, plus replaying a copy sequence seen twice after the same kernel
};

[[nodiscard]] std::string_view to_string(UpdateStrategy s);
/// "batch" / "balance" / "lazy" / "adaptive"; nullopt for anything else.
[[nodiscard]] std::optional<UpdateStrategy> parse_update_strategy(std::string_view text);

}  // namespace unimem
