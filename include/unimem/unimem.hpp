#pragma once

// Everything a program that uses unimem includes: `#include <unimem/unimem.hpp>`.

#include <unimem/errors.hpp>
#include <unimem/event.hpp>
#include <unimem/nd_range.hpp>
#include <unimem/transfer_stats.hpp>
#include <unimem/version.hpp>
