#pragma once

// Part of the public API: defined in include/unimem/event.hpp.
#include <unimem/event.hpp>
