#pragma once
// Fixture for the layering test: region (the bottom layer) must not include coherence.
#include "coherence/directory.hpp"
#include "region/box.hpp"
