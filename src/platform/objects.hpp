#pragma once

// The OpenCL objects of the unimem platform: each `_cl_*` struct starts with the ICD dispatch
// table pointer (Khronos cl_khr_icd: the loader calls through it), then unimem's state. Handles
// are checked against a registry of live objects before any use, so a stale or foreign handle
// gets the spec's CL_INVALID_* error instead of a crash. DSOM section 4.1 (000_7b2a075be0870d8f)
// puts its runtime under such an umbrella platform; this is unimem's.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <unimem/event.hpp>
#include <unimem/program.hpp>
#include <unimem/runtime.hpp>
#include "common/word_mutex.hpp"
#include "device/opencl/opencl_api.hpp"
#include "platform/profiling.hpp"
#include "platform/separate_compilation.hpp"

#include <CL/cl_icd.h>

namespace unimem::platform {

/// What a handle is; stored in every object and checked with the registry.
enum class ObjectKind : std::uint32_t {
  platform = 0x756d5031,
  device,
  context,
  queue,
  mem,
  program,
  kernel,
  event,
};

/// The part every object shares, after the dispatch pointer.
struct ObjectHeader {
  ObjectKind kind = ObjectKind::platform;
  std::atomic<cl_uint> references{1};
};

/// Nanoseconds on the host's steady clock (the profiling time base).
inline cl_ulong now_ns() {
  return static_cast<cl_ulong>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

/// The state of one command (or user event) that cl_events refer to. A command is submitted to
/// the runtime at once, or later when its wait list holds user events or commands not yet
/// submitted (then it is deferred in its queue).
///
/// Its completion (`state`) is pending until then (waiters block, callbacks are kept); submit()
/// forwards it to the runtime's event, after which every query, wait and callback goes straight
/// to that event, so a command costs no completion callback of its own. A user event or a
/// command that never runs is finished by hand.
struct CommandRecord : std::enable_shared_from_this<CommandRecord> {
  cl_command_type type = 0;
  ManualEventState state;
  std::atomic<bool> submitted{false};
  /// CL_QUEUED, CL_SUBMITTED, CL_COMPLETE or a negative error; status() brings it up to date.
  std::atomic<cl_int> status_value{CL_QUEUED};
  std::atomic<cl_ulong> queued_ns{0}, submit_ns{0}, start_ns{0}, end_ns{0};
  /// A kernel command on a profiling queue: its partitions, for device times (profiling.hpp).
  std::shared_ptr<DeviceWork> device_work;

  CommandRecord();
  /// The command's completion as an Event (it shares ownership of the record).
  [[nodiscard]] Event done() {
    return Event(std::shared_ptr<EventState>(shared_from_this(), &state));
  }
  [[nodiscard]] bool is_complete() const { return state.is_complete(); }
  /// Blocks until the command has finished; throws if it failed.
  void wait() { state.wait(); }
  /// Marks the command submitted with the runtime's event, whose completion finishes it. With
  /// `profiled`, the end time is taken by a callback at completion; otherwise status() notes it
  /// when it first sees the command finished.
  void submit(Event event, bool profiled);
  /// Finishes the command with an error status (negative) without running it.
  void fail(cl_int status);
  /// Finishes a user event with CL_COMPLETE or a negative status.
  void finish_user(cl_int status);
  /// The execution status now: CL_COMPLETE or the error once the command has finished.
  cl_int status();
};

const cl_icd_dispatch* dispatch_table();
void register_object(const void* object, ObjectKind kind);

/// The lean repeats of one kernel's LeanLaunch not yet in the run report: each adds one here (an
/// atomic add, no lock) and PlatformState adds them to the report when it is read
/// (PlatformState::new_tally, launch_counts, write_report).
struct LaunchTally {
  std::string kernel;
  std::shared_ptr<const LaunchPlan> plan;
  std::atomic<std::uint64_t> launches{0};
};

}  // namespace unimem::platform

struct _cl_platform_id {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
};

struct _cl_device_id {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  bool aggregate = false;             ///< every underlying device; otherwise `index` alone
  std::size_t index = 0;              ///< the runtime's device (when not aggregate)
  cl_device_id underlying = nullptr;  ///< the vendor's device (the first one, for the aggregate)
};

struct _cl_context {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  std::vector<cl_device_id> devices;
  std::vector<cl_context_properties> properties;  ///< as given, 0-terminated, or empty
  void(CL_CALLBACK* notify)(const char*, const void*, size_t, void*) = nullptr;
  void* notify_data = nullptr;
};

struct _cl_command_queue {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  cl_command_queue_properties properties = 0;
  std::mutex mutex;
  /// Commands not known to be finished (pruned now and then): what clFinish and barriers wait for.
  std::vector<std::shared_ptr<unimem::platform::CommandRecord>> outstanding;
  /// The same for commands that nothing can name (no cl_event handed out, no wait list, not
  /// deferred, no host memory): only the runtime's event is kept, no CommandRecord
  /// (commands.cpp, enqueue's anonymous path).
  std::vector<unimem::Event> anonymous;
  /// Lean NDRanges went to the runtime's eventless streak since anonymous last took them
  /// (commands.cpp, try_lean_repeat): take_eventless_launches adds their event to anonymous
  /// before anything waits for the queue's commands. Set without the mutex (atomic).
  std::atomic<bool> eventless{false};
  std::size_t prune_at = 0;  ///< outstanding's + anonymous' size at which an enqueue prunes next
  /// Commands waiting for a user event or an unsubmitted command, in enqueue order. While any
  /// is deferred, later commands of the queue are deferred behind it (in-order semantics).
  struct Deferred {
    std::vector<std::shared_ptr<unimem::platform::CommandRecord>> gates;
    std::shared_ptr<unimem::platform::CommandRecord> record;
    std::function<unimem::Event()> submit;
  };
  std::deque<Deferred> deferred;
  bool pumping = false;  ///< a thread is submitting deferred commands (commands.cpp)
  bool repump = false;   ///< a gate finished while it was
  /// !deferred.empty() || pumping, written under mutex: an anonymous enqueue reads it without
  /// the lock (commands.cpp, submit_anonymous).
  std::atomic<bool> defers{false};
};

struct _cl_mem {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  cl_context context = nullptr;
  cl_mem_flags flags = 0;
  std::size_t size = 0;
  void* host_ptr = nullptr;  ///< CL_MEM_USE_HOST_PTR
  cl_mem parent = nullptr;   ///< a sub-buffer's buffer (retained)
  std::size_t origin = 0;    ///< a sub-buffer's offset in the root buffer
  unimem::BufferId buffer;   ///< the root buffer's shared buffer
  std::atomic<cl_uint> map_count{0};
  std::mutex mutex;  // guards mappings and destructor callbacks
  struct Mapping {
    void* pointer;
    std::size_t offset;  ///< in this object
    std::size_t size;
    cl_map_flags flags;
    std::unique_ptr<std::byte[]> storage;  ///< null when mapped into host_ptr
  };
  std::vector<Mapping> mappings;
  std::vector<std::pair<void(CL_CALLBACK*)(cl_mem, void*), void*>> destructor_callbacks;
};

struct _cl_program {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  cl_context context = nullptr;
  std::mutex mutex;  // guards everything below
  std::string source;
  std::string options;         ///< of the last build, compile or link
  bool compiled_only = false;  ///< clCompileProgram ran, not yet linked
  cl_build_status status = CL_BUILD_NONE;
  std::string log;
  std::shared_ptr<unimem::Program> built;
  std::vector<std::string> kernel_names;
  /// After clCompileProgram: what clLinkProgram builds from (separate_compilation.hpp).
  std::shared_ptr<const unimem::platform::CompiledUnit> unit;
  /// A linked program's units: its build refers to their header directories.
  std::vector<std::shared_ptr<const unimem::platform::CompiledUnit>> linked_units;
  cl_uint kernels_attached = 0;  ///< live cl_kernels (a program with kernels cannot be rebuilt)
};

struct _cl_kernel {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  cl_program program = nullptr;
  std::shared_ptr<unimem::Program> built;
  std::string name;
  /// Per parameter: CL_KERNEL_ARG_ADDRESS_{GLOBAL,CONSTANT,LOCAL,PRIVATE}.
  std::vector<cl_kernel_arg_address_qualifier> qualifiers;
  unimem::WordMutex mutex;  // guards args (every NDRange takes it: one atomic instruction a side)
  std::vector<std::optional<unimem::Arg>> args;
  std::vector<cl_mem> arg_mems;  ///< the cl_mem given for a buffer argument (not retained)
  /// The arguments as launches pass them, shared by the launches since the last clSetKernelArg
  /// (null: rebuilt by the next launch).
  std::shared_ptr<const std::vector<unimem::Arg>> launch_args;
  /// CL_KERNEL_WORK_GROUP_SIZE per device, asked once (every NDRange with a local size checks it).
  std::map<cl_device_id, std::size_t> max_group_size;
  /// The work-group size the platform chose for the last launch that left it to the
  /// implementation and needed one to split (choose_work_group_size in commands.cpp), with the
  /// device and global size it was chosen for.
  struct ChosenGroupSize {
    cl_device_id device = nullptr;
    cl_uint dims = 0;
    std::array<std::size_t, 3> global{};
    std::array<std::size_t, 3> local{};
  };
  std::optional<ChosenGroupSize> chosen_group_size;
  /// mems_destroyed() when every buffer argument was last seen live (an NDRange rechecks them
  /// only after a memory object was destroyed or an argument set); ~0: not checked since.
  std::uint64_t args_live_at = ~std::uint64_t{0};
  /// The last anonymous NDRange that went through the program's core with a repeat ticket
  /// (ProgramCore::launch): a call with the same device, sizes and arguments (the same
  /// launch_args, live since) repeats it through ProgramCore::launch_again (the lean repeat;
  /// EnqueueNDRangeKernel in commands.cpp).
  struct LeanLaunch {
    cl_device_id device = nullptr;
    cl_uint dims = 0;
    bool offset_given = false;
    bool local_given = false;
    std::array<std::size_t, 3> offset{};
    std::array<std::size_t, 3> global{};
    std::array<std::size_t, 3> local{};
    std::shared_ptr<const std::vector<unimem::Arg>> args;
    std::shared_ptr<const void> ticket;
    std::shared_ptr<const unimem::LaunchPlan> plan;
    /// Its lean repeats for the run report (made by the first one).
    std::shared_ptr<unimem::platform::LaunchTally> tally;
  };
  std::optional<LeanLaunch> lean;
};

struct _cl_event {
  const cl_icd_dispatch* dispatch = nullptr;
  unimem::platform::ObjectHeader header;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;  ///< retained; null for user events
  std::shared_ptr<unimem::platform::CommandRecord> record;
  bool user = false;
};

namespace unimem::platform {

/// A new object of type T (a `_cl_*` struct) pointing at the dispatch table, with one reference,
/// registered as live.
template <typename T>
T* make_object(ObjectKind kind) {
  auto* object = new T();
  object->dispatch = dispatch_table();
  object->header.kind = kind;
  register_object(object, kind);
  return object;
}

}  // namespace unimem::platform
