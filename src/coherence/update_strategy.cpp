#include "coherence/update_strategy.hpp"

namespace unimem {

std::string_view to_string(UpdateStrategy s) {
  switch (s) {
    case UpdateStrategy::batch:
      return "batch";
    case UpdateStrategy::balance:
      return "balance";
    case UpdateStrategy::lazy:
      return "lazy";
    case UpdateStrategy::adaptive:
      return "adaptive";
  }
  return "unknown";
}

std::optional<UpdateStrategy> parse_update_strategy(std::string_view text) {
  for (UpdateStrategy s : {UpdateStrategy::batch, UpdateStrategy::balance, UpdateStrategy::lazy,
                           UpdateStrategy::adaptive}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

}  // namespace unimem
