#include "api/program.hpp"

#include <chrono>
#include <iostream>
#include <utility>

#include "common/check.hpp"

#if defined(UNIMEM_HAVE_OPENCL)
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_program.hpp"
#endif

namespace unimem {

Program::Program(Runtime& runtime, std::string source, std::string options)
    : runtime_(runtime), options_(std::move(options)) {
#if defined(UNIMEM_HAVE_OPENCL)
  std::vector<std::pair<const opencl::Context*, std::shared_ptr<opencl::OpenCLProgram>>> built;
  for (std::size_t i = 0; i < runtime_.device_count(); ++i) {
    auto* dev = dynamic_cast<opencl::OpenCLDevice*>(&runtime_.device(i));
    if (dev == nullptr) {
      throw PreconditionError("Program: device " + std::to_string(i) + " ('" +
                              runtime_.device(i).name() +
                              "') is not an OpenCL device; OpenCL C programs need OpenCL devices");
    }
    auto it = std::find_if(built.begin(), built.end(),
                           [&](const auto& b) { return b.first == dev->context().get(); });
    if (it == built.end()) {
      built.emplace_back(dev->context().get(), dev->build_program(source, options_));
      it = std::prev(built.end());
    }
    programs_.push_back(it->second);
  }
#else
  (void)source;
  throw PreconditionError("Program: unimem was built without OpenCL (UNIMEM_WITH_OPENCL=OFF)");
#endif
}

std::shared_ptr<const CompiledKernel> Program::kernel_for(const std::string& name,
                                                          std::size_t device) {
  std::lock_guard lock(mutex_);
  auto key = std::pair{name, device};
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
#if defined(UNIMEM_HAVE_OPENCL)
  // Devices of one context share one kernel object (the driver serialises its arguments).
  const auto* program = static_cast<const opencl::OpenCLProgram*>(programs_.at(device).get());
  for (const auto& [k, v] : kernels_) {
    if (k.first == name && programs_.at(k.second).get() == programs_.at(device).get()) {
      kernels_.emplace(key, v);
      return v;
    }
  }
  std::shared_ptr<const CompiledKernel> kernel;
  try {
    kernel = program->kernel(name);
  } catch (const DeviceError& e) {
    throw PreconditionError("launch: no kernel '" + name + "' in the program (" + e.what() + ")");
  }
  kernels_.emplace(key, kernel);
  return kernel;
#else
  throw PreconditionError("launch of '" + name + "': unimem was built without OpenCL");
#endif
}

Event Program::launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
                      const LaunchOptions& options) {
  PlanRequest request;
  request.kernel = kernel;
  request.range = range;
  request.dimension = options.split_dimension;
  if (options.device) {
    if (*options.device >= runtime_.device_count()) {
      throw PreconditionError("launch of '" + kernel + "': unknown device " +
                              std::to_string(*options.device));
    }
    request.devices = {*options.device};
  } else if (!options.devices.empty()) {
    request.devices = options.devices;
  } else {
    for (std::size_t i = 0; i < runtime_.device_count(); ++i) request.devices.push_back(i);
  }
  for (std::size_t d : request.devices) {
    if (d >= runtime_.device_count()) {
      throw PreconditionError("launch of '" + kernel + "': unknown device " + std::to_string(d));
    }
  }
  std::vector<LaunchArg> largs;
  for (const Arg& a : args) {
    PlanArgument pa;
    pa.is_buffer = a.value.kind == KernelArg::Kind::buffer;
    if (pa.is_buffer) pa.buffer_size = runtime_.buffer_size(a.value.buffer);
    request.args.push_back(pa);
    largs.push_back(a.value);
  }
  request.accesses = options.accesses;
  const bool measuring = options.balance == Balance::measured && request.devices.size() > 1;
  if (measuring) {
    std::lock_guard lock(profile_->mutex);
    if (auto w = profile_->table.weights(kernel, request.devices)) request.weights = *w;
  }

  LaunchPlan plan = plan_launch(request);
  if (!plan.fallback_reason.empty()) {
    const std::string message = "unimem: " + plan.fallback_reason + "; running on " +
                                std::to_string(plan.partitions.size()) + " device(s) instead";
    std::function<void(const std::string&)> log;
    {
      std::lock_guard lock(mutex_);
      log = log_;
    }
    if (log) {
      log(message);
    } else {
      std::cerr << message << "\n";
    }
  }

  std::vector<LaunchPartition> parts;
  for (const PlannedPartition& p : plan.partitions) {
    LaunchPartition lp;
    lp.device = p.slice.device;
    lp.kernel = kernel_for(kernel, p.slice.device);
    lp.range = p.slice.range;
    for (const auto& [index, bytes] : p.bytes) {
      lp.accesses[index] = BufferAccess{bytes.reads, bytes.writes, bytes.may_writes};
    }
    parts.push_back(std::move(lp));
  }
  std::vector<Event> events;
  const auto start = std::chrono::steady_clock::now();
  Event all = runtime_.launch_partitioned(largs, parts, &events);
  if (measuring) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      std::uint64_t items = 1;
      for (std::uint32_t d = 0; d < 3; ++d) items *= parts[i].range.global[d];
      events[i].on_complete([profile = profile_, kernel, device = parts[i].device, items, start] {
        const std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
        std::lock_guard lock(profile->mutex);
        profile->table.record(kernel, device, items, s.count());
      });
    }
  }
  {
    std::lock_guard lock(mutex_);
    last_plan_ = std::move(plan);
  }
  return all;
}

LaunchPlan Program::last_plan() const {
  std::lock_guard lock(mutex_);
  return last_plan_;
}

void Program::set_log(std::function<void(const std::string&)> log) {
  std::lock_guard lock(mutex_);
  log_ = std::move(log);
}

}  // namespace unimem
