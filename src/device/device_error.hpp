#pragma once

// DeviceError is part of the public API: it is defined in include/unimem/errors.hpp.
#include <unimem/errors.hpp>
