#pragma once
// Fixture for the layering test: an installed header must not include internals.
#include "coherence/shared_buffer.hpp"
