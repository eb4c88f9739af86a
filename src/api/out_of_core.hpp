#pragma once

// Out-of-core launches (ProgramCore::launch, step 3c): a partition whose allocations do not fit
// its device is cut into chunks of whole work-groups that run one after another, in rounds
// (out_of_core.cpp says why that is correct).

#include <span>
#include <vector>

#include "api/program_builds.hpp"
#include "api/runtime_core.hpp"
#include "schedule/launch_plan.hpp"

namespace unimem {

/// Cuts the partitions of `plan` whose allocations do not fit their device into chunks that run
/// the build in use (group_ids: the group-id build; sizes: a whole-launch-size build), setting
/// LaunchPlan::chunks. Throws OutOfDeviceMemory when a partition cannot run in chunks.
void cut_to_fit(RuntimeCore& core, ProgramBuilds& builds, LaunchPlan& plan,
                const PlanRequest& request, std::span<const LaunchArg> launch_args, bool group_ids,
                const ProgramBuilds::SizeVariant* sizes);
/// Runs a plan with chunks (cut_to_fit) round by round; events receives every partition's kernel
/// event.
Event launch_rounds(RuntimeCore& core, const LaunchPlan& plan,
                    std::span<const LaunchArg> launch_args, std::vector<Event>* events);

}  // namespace unimem
