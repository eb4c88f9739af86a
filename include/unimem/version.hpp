#pragma once

// The library version (unimem::version()); the build also defines it for the preprocessor through
// the CMake package (unimem_VERSION) and pkg-config (--modversion).

#include <string_view>

namespace unimem {

/// The library version, "MAJOR.MINOR.PATCH".
std::string_view version();

}  // namespace unimem
