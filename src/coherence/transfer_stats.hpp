#pragma once

// Part of the public API: defined in include/unimem/transfer_stats.hpp.
#include <unimem/transfer_stats.hpp>
