#pragma once

// Everything a program that uses unimem includes: `#include <unimem/unimem.hpp>`.

#include <unimem/access_descriptor.hpp>
#include <unimem/errors.hpp>
#include <unimem/event.hpp>
#include <unimem/measurement.hpp>
#include <unimem/nd_range.hpp>
#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include <unimem/team_footprint.hpp>
#include <unimem/transfer_stats.hpp>
#include <unimem/update_strategy.hpp>
#include <unimem/version.hpp>
