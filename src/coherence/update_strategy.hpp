#pragma once

// The update strategies (DSOM section 4.2.3): the enum is public (<unimem/update_strategy.hpp>);
// its names are parsed and printed in update_strategy.cpp.

#include <unimem/update_strategy.hpp>
