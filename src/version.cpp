#include <unimem/version.hpp>

#include "version_config.hpp"

namespace unimem {

std::string_view version() { return UNIMEM_VERSION_STRING; }

}  // namespace unimem
