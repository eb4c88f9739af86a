#pragma once

// Part of the public API: defined in include/unimem/nd_range.hpp.
#include <unimem/nd_range.hpp>
