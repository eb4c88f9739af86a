// PlatformState and the object lifecycle of the unimem OpenCL platform (platform_state.hpp).

#include "platform/platform_state.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include <unimem/errors.hpp>
#include <unimem/version.hpp>
#include "api/runtime_core.hpp"
#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_discovery.hpp"
#include "device/sim/sim_device.hpp"
#include "device/sim/sim_selection.hpp"
#include "device/sim/sim_system.hpp"
#include "schedule/launch_plan.hpp"

namespace unimem::platform {

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<const void*, ObjectKind>& registry() {
  static auto* r = new std::unordered_map<const void*, ObjectKind>();  // outlives static dtors
  return *r;
}

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

ExposedDevices exposed_from_environment(std::string& error) {
  const std::string v = environment("UNIMEM_PLATFORM_DEVICES");
  if (v.empty() || v == "aggregate") return ExposedDevices::aggregate;
  if (v == "each") return ExposedDevices::each;
  if (v == "both") return ExposedDevices::both;
  error = "UNIMEM_PLATFORM_DEVICES=\"" + v + "\" is not one of aggregate, each, both";
  return ExposedDevices::aggregate;
}

cl_device_id new_device(bool aggregate, std::size_t index, cl_device_id underlying) {
  auto* d = make_object<_cl_device_id>(ObjectKind::device);
  d->aggregate = aggregate;
  d->index = index;
  d->underlying = underlying;
  return d;
}

}  // namespace

void register_object(const void* object, ObjectKind kind) {
  std::lock_guard lock(registry_mutex());
  registry()[object] = kind;
}

namespace {
std::atomic<std::uint64_t> destroyed_mems{0};
// How many objects were forgotten: an object found live stays live while this count stands.
std::atomic<std::uint64_t> forgotten_objects{0};
}  // namespace

void forget_object(const void* object) {
  std::lock_guard lock(registry_mutex());
  registry().erase(object);
  forgotten_objects.fetch_add(1, std::memory_order_acq_rel);
}

std::uint64_t mems_destroyed() { return destroyed_mems.load(std::memory_order_acquire); }

bool is_live(const void* object, ObjectKind kind) {
  if (object == nullptr) return false;
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(object);
  return it != registry().end() && it->second == kind;
}

namespace {

// This thread's last pair are_live found live (an enqueue loop asks about one queue and kernel
// again and again): still live while no object was forgotten since, without the registry's lock.
struct LivePair {
  const void* a = nullptr;
  const void* b = nullptr;
  ObjectKind a_kind{}, b_kind{};
  std::uint64_t forgotten = 0;
};
thread_local LivePair last_live_pair;

// are_live's lookup in the registry (the pair is not this thread's last one, or an object was
// forgotten since). Not inlined: are_live's common path then saves no registers for it.
[[gnu::noinline]] bool are_live_in_registry(const void* a, ObjectKind a_kind, const void* b,
                                            ObjectKind b_kind, std::uint64_t forgotten) {
  std::lock_guard lock(registry_mutex());
  const auto& r = registry();
  auto ia = r.find(a);
  if (ia == r.end() || ia->second != a_kind) return false;
  auto ib = r.find(b);
  if (ib == r.end() || ib->second != b_kind) return false;
  last_live_pair = LivePair{a, b, a_kind, b_kind, forgotten};  // the count read before looking
  return true;
}

}  // namespace

bool are_live(const void* a, ObjectKind a_kind, const void* b, ObjectKind b_kind) {
  if (a == nullptr || b == nullptr) return false;
  const std::uint64_t forgotten = forgotten_objects.load(std::memory_order_acquire);
  const LivePair& last = last_live_pair;
  if (last.a == a && last.b == b && last.a_kind == a_kind && last.b_kind == b_kind &&
      last.forgotten == forgotten) {
    return true;
  }
  return are_live_in_registry(a, a_kind, b, b_kind, forgotten);
}

PlatformState& PlatformState::get() {
  static PlatformState* state = new PlatformState();  // never destroyed: see the header
  return *state;
}

PlatformState::PlatformState() {
  platform_.dispatch = dispatch_table();
  platform_.header.kind = ObjectKind::platform;
  register_object(&platform_, ObjectKind::platform);
}

std::span<const cl_device_id> PlatformState::devices() {
  std::lock_guard lock(mutex_);
  if (!discovered_) discover();
  return exposed_;
}

const std::string& PlatformState::error() {
  std::lock_guard lock(mutex_);
  return error_;
}

// The vendors underneath: UNIMEM_VENDOR_ICDS when `unimem run` (or the user) set it, otherwise
// every ICD the loader would load except this library. Either way they are loaded directly
// (opencl::list_devices), so the platform never enumerates itself, and the loader of the process
// may see only the unimem platform.
void PlatformState::discover() {
  discovered_ = true;
  const ExposedDevices exposed = exposed_from_environment(error_);
  if (!error_.empty()) return;
  if (opencl::vendor_libraries_from_environment().empty()) {
    // The loader's own search (OCL_ICD_VENDORS, ...) without unimem's library; when that leaves
    // nothing (OCL_ICD_VENDORS names only unimem.icd), the system's vendor directory. A renamed
    // copy of this library is still never loaded as a vendor: list_devices skips the marker.
    std::string libraries = opencl::other_vendor_libraries(opencl::IcdSearch::from_environment());
    if (libraries.empty()) libraries = opencl::other_vendor_libraries(opencl::IcdSearch{});
    if (libraries.empty()) {
      error_ = "no OpenCL implementation besides unimem is registered";
      return;
    }
    ::setenv(opencl::kVendorIcdsEnvironmentVariable, libraries.c_str(), 1);
  }
  try {
    // UNIMEM_DEVICES=sim:PRESET:COUNT[:SEL]: simulated devices (src/device/sim/) over the
    // OpenCL devices SEL picks; each exposed device answers queries as the one it runs on.
    const std::string selection = environment(opencl::kDevicesEnvironmentVariable);
    const std::optional<sim::SimSelection> simulated = sim::parse_sim_selection(selection);
    DeviceRegistry real =
        opencl::make_opencl_devices(simulated ? simulated->underlying : selection);
    if (real.empty()) {
      error_ = "the vendors' OpenCL implementations report no device";
      return;
    }
    const std::size_t count = simulated ? simulated->count : real.size();
    for (std::size_t i = 0; i < count; ++i) {
      auto& device = dynamic_cast<opencl::OpenCLDevice&>(real.at(i % real.size()));
      underlying_.push_back(device.info().device);
    }
    DeviceRegistry registry =
        simulated ? sim::make_sim_devices(sim::find_preset(simulated->preset).device,
                                          simulated->preset, simulated->count, real)
                  : std::move(real);
    simulation_ = sim::system_of(registry);
    RuntimeOptions options;
    if (const std::string s = environment("UNIMEM_STRATEGY"); !s.empty()) {
      const std::optional<UpdateStrategy> strategy = parse_update_strategy(s);
      if (!strategy) {
        error_ = "UNIMEM_STRATEGY=\"" + s + "\" is not one of batch, balance, lazy, adaptive";
        return;
      }
      options.strategy = *strategy;
    }
    // Device times come with the first profiling queue (time_devices).
    runtime_ = std::make_unique<Runtime>(std::move(registry), options);
    // And when the host copies of reads and writes ran, for commands served by the host.
    runtime_->core().time_host_operations();
  } catch (const std::exception& e) {
    error_ = e.what();
    return;
  }
  if (exposed != ExposedDevices::each) exposed_.push_back(new_device(true, 0, underlying_[0]));
  if (exposed != ExposedDevices::aggregate) {
    for (std::size_t i = 0; i < underlying_.size(); ++i) {
      exposed_.push_back(new_device(false, i, underlying_[i]));
    }
  }
  std::atexit([] { PlatformState::get().write_report(); });
}

Runtime& PlatformState::runtime() {
  (void)devices();
  if (!runtime_) throw DeviceError("unimem platform: " + error_);
  return *runtime_;
}

RuntimeCore& PlatformState::core() { return runtime().core(); }

void PlatformState::time_devices() {
  // A throw leaves the flag unset: the next profiling queue tries again.
  std::call_once(devices_timed_, [this] { core().time_device_operations(); });
}

DeviceCopies& PlatformState::copies() {
  Runtime& rt = runtime();
  std::call_once(copies_built_, [&] { copies_ = std::make_unique<DeviceCopies>(rt); });
  return *copies_;
}

std::size_t PlatformState::underlying_count() {
  (void)devices();
  return underlying_.size();
}

cl_device_id PlatformState::underlying(std::size_t i) {
  (void)devices();
  return underlying_.at(i);
}

void PlatformState::record_launch(const std::string& kernel,
                                  const std::shared_ptr<const LaunchPlan>& plan) {
  std::lock_guard lock(report_mutex_);
  if (plan == pending_plan_ && kernel == pending_kernel_) {
    ++pending_launches_;
    return;
  }
  count_pending_launches();
  pending_plan_ = plan;
  pending_kernel_ = kernel;
  pending_launches_ = 1;
}

void PlatformState::launch_counts(std::uint64_t& launches, std::uint64_t& split) {
  std::lock_guard lock(report_mutex_);
  count_all_launches();
  launches = report_.launches;
  split = report_.split_launches;
}

std::shared_ptr<LaunchTally> PlatformState::new_tally(const std::string& kernel,
                                                      std::shared_ptr<const LaunchPlan> plan) {
  auto tally = std::make_shared<LaunchTally>();
  tally->kernel = kernel;
  tally->plan = std::move(plan);
  std::lock_guard lock(report_mutex_);
  if (tallies_.size() >= prune_tallies_at_) {
    count_all_launches();  // drops the tallies nothing else holds
    prune_tallies_at_ = 2 * tallies_.size() + 16;
  }
  tallies_.push_back(tally);
  return tally;
}

void PlatformState::count_pending_launches() {
  const std::uint64_t n = pending_launches_;
  pending_launches_ = 0;
  if (n != 0 && pending_plan_) count_launches(pending_kernel_, *pending_plan_, n);
}

void PlatformState::count_all_launches() {
  count_pending_launches();
  // A tally only this list holds gets no more launches: counted a last time, it goes. (The
  // fence: its holder's adds happened before it let go, whose release the count read shows.)
  std::erase_if(tallies_, [this](const std::shared_ptr<LaunchTally>& t) {
    const bool last = t.use_count() == 1;
    if (last) std::atomic_thread_fence(std::memory_order_acquire);
    const std::uint64_t launches = t->launches.exchange(0, std::memory_order_relaxed);
    if (launches != 0) count_launches(t->kernel, *t->plan, launches);
    return last;
  });
}

void PlatformState::count_launches(const std::string& kernel, const LaunchPlan& plan,
                                   std::uint64_t n) {
  report_.launches += n;
  if (plan.partitions.size() > 1) report_.split_launches += n;
  for (const LaunchPartition& p : plan.partitions) {
    report_.partitions_per_device[runtime_->device_name(p.device)] += n;
  }
  if (plan.fallback_reason.empty()) return;
  for (auto& f : report_.fallbacks) {
    if (f.kernel == kernel && f.reason == plan.fallback_reason) {
      f.count += n;
      return;
    }
  }
  if (report_.fallbacks.size() < 100) {
    report_.fallbacks.push_back({kernel, plan.fallback_reason, n});
  }
}

void PlatformState::write_report() {
  if (runtime_) {
    try {
      (void)runtime_->write_trace();  // UNIMEM_TRACE (`unimem run --trace`); nothing when unset
    } catch (const std::exception& e) {
      std::fprintf(stderr, "unimem platform: %s\n", e.what());
    }
  }
  const std::string path = environment("UNIMEM_REPORT");
  if (path.empty() || !runtime_) return;
  nlohmann::json j;
  try {
    runtime_->finish();
  } catch (const std::exception& e) {
    j["error"] = e.what();
  }
  const TransferStats stats = runtime_->stats();
  {
    std::lock_guard lock(report_mutex_);
    count_all_launches();
    j["launches"] = report_.launches;
    j["split_launches"] = report_.split_launches;
    j["partitions_per_device"] = report_.partitions_per_device;
    j["fallbacks"] = nlohmann::json::array();
    for (const auto& f : report_.fallbacks) {
      j["fallbacks"].push_back({{"kernel", f.kernel}, {"reason", f.reason}, {"count", f.count}});
    }
  }
  j["bytes_h2d"] = stats.host_to_device.bytes;
  j["bytes_d2h"] = stats.device_to_host.bytes;
  j["bytes_d2d"] = stats.device_to_device.bytes;
  j["devices"] = nlohmann::json::array();
  for (std::size_t i = 0; i < runtime_->device_count(); ++i) {
    j["devices"].push_back(runtime_->device_name(i));
  }
  if (simulation_) {
    // Simulated devices: the modelled time from the first operation to the last.
    j["simulated_seconds"] = simulation_->clock().now();
  }
  j["unimem_version"] = std::string(version());
  std::ofstream out(path);
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void say(const std::string& message) {
  static const bool verbose = std::getenv("UNIMEM_PLATFORM_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "%s\n", message.c_str());
}

cl_int error_of_current_exception(cl_context context, cl_int fallback) {
  std::string message;
  cl_int code = fallback;
  try {
    throw;
  } catch (const DeviceError& e) {
    message = e.what();
    if (e.code() < 0) code = static_cast<cl_int>(e.code());
  } catch (const std::bad_alloc&) {
    message = "out of host memory";
    code = CL_OUT_OF_HOST_MEMORY;
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (context != nullptr && context->notify != nullptr) {
    context->notify(message.c_str(), nullptr, 0, context->notify_data);
  }
  say("unimem platform: " + message);
  return code;
}

CommandRecord::CommandRecord() { queued_ns = now_ns(); }

void CommandRecord::submit(Event event, bool profiled) {
  submit_ns = now_ns();
  start_ns = submit_ns.load();
  status_value = CL_SUBMITTED;
  submitted = true;
  if (profiled) {
    event.on_complete([self = shared_from_this()] {
      cl_ulong unset = 0;  // unless a profiling query noted it first (GetEventProfilingInfo)
      self->end_ns.compare_exchange_strong(unset, now_ns());
    });
  }
  state.forward_to(event.state());
}

void CommandRecord::fail(cl_int s) {
  end_ns = now_ns();
  status_value = s;
  submitted = true;
  state.fail(
      std::make_exception_ptr(DeviceError("command not run: a command it waits for failed", s)));
}

void CommandRecord::finish_user(cl_int s) {
  end_ns = now_ns();
  status_value = s;
  if (s == CL_COMPLETE) {
    state.complete();
  } else {
    state.fail(std::make_exception_ptr(DeviceError("user event failed", s)));
  }
}

cl_int CommandRecord::status() {
  const cl_int s = status_value.load();
  if (s < 0 || s == CL_COMPLETE || !submitted.load() || !state.is_complete()) return s;
  cl_int finished = CL_COMPLETE;
  try {
    state.wait();
  } catch (...) {
    finished = CL_OUT_OF_RESOURCES;  // the runtime's error reaches clWaitForEvents and the report
  }
  cl_ulong zero = 0;
  end_ns.compare_exchange_strong(zero, now_ns());
  cl_int expected = s;
  status_value.compare_exchange_strong(expected, finished);
  return status_value.load();
}

void release_context(cl_context context) {
  if (!release(context->header)) return;
  forget_object(context);
  delete context;
}

void take_eventless_launches(cl_command_queue queue) {
  if (!queue->eventless.exchange(false, std::memory_order_acq_rel)) return;
  Event e;
  try {
    e = PlatformState::get().core().close_eventless();
  } catch (...) {
    queue->eventless.store(true, std::memory_order_release);
    throw;
  }
  if (e.is_null()) return;
  std::lock_guard lock(queue->mutex);
  queue->anonymous.push_back(std::move(e));
}

void release_queue(cl_command_queue queue) {
  if (!release(queue->header)) return;
  forget_object(queue);
  // Its eventless launches are not taken (the last release may come from a completion callback,
  // which must not wait for the runtime's lock): they are the runtime's, in flight there until
  // they have run, and started (flushed) by the next runtime operation at the latest.
  std::vector<std::shared_ptr<CommandRecord>> pending;
  std::vector<Event> anonymous;
  {
    std::lock_guard lock(queue->mutex);
    pending = queue->outstanding;
    anonymous = queue->anonymous;
  }
  for (auto& r : pending) {  // the spec: releasing a queue flushes it; its commands still run
    try {
      r->wait();
    } catch (...) {
    }
  }
  for (const Event& e : anonymous) {
    try {
      e.wait();
    } catch (...) {
    }
  }
  cl_context context = queue->context;
  delete queue;
  release_context(context);
}

void release_mem(cl_mem mem) {
  if (!release(mem->header)) return;
  forget_object(mem);
  destroyed_mems.fetch_add(1, std::memory_order_acq_rel);  // after: see mems_destroyed()
  std::vector<std::pair<void(CL_CALLBACK*)(cl_mem, void*), void*>> callbacks;
  {
    std::lock_guard lock(mem->mutex);
    callbacks = mem->destructor_callbacks;
  }
  if (mem->parent == nullptr) {
    try {
      PlatformState::get().runtime().release_buffer(mem->buffer);
    } catch (...) {
    }
  }
  for (auto it = callbacks.rbegin(); it != callbacks.rend(); ++it) it->first(mem, it->second);
  cl_mem parent = mem->parent;
  cl_context context = mem->context;
  delete mem;
  if (parent != nullptr) release_mem(parent);
  release_context(context);
}

void release_program(cl_program program) {
  if (!release(program->header)) return;
  forget_object(program);
  cl_context context = program->context;
  delete program;
  release_context(context);
}

void release_kernel(cl_kernel kernel) {
  if (!release(kernel->header)) return;
  forget_object(kernel);
  cl_program program = kernel->program;
  {
    std::lock_guard lock(program->mutex);
    --program->kernels_attached;
  }
  delete kernel;
  release_program(program);
}

void release_event(cl_event event) {
  if (!release(event->header)) return;
  forget_object(event);
  cl_command_queue queue = event->queue;
  cl_context context = event->context;
  delete event;
  if (queue != nullptr) release_queue(queue);
  release_context(context);
}

}  // namespace unimem::platform
