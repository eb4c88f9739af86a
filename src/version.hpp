#pragma once

#include <string_view>

namespace unimem {

/// The library version, "MAJOR.MINOR.PATCH".
std::string_view version();

}  // namespace unimem
