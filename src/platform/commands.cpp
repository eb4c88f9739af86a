// Enqueued commands and events of the unimem OpenCL platform.
//
// Ordering. The runtime already orders every operation by the bytes it touches (DESIGN.md
// invariant 5), so two commands on shared buffers need nothing more. What the runtime cannot see
// is host memory and user events:
// - a command whose wait list holds a user event, or a command not yet submitted, is deferred in
//   its queue (and every later command of that queue behind it) until those events complete;
// - a command that reads or writes host memory first waits for the unfinished commands of its
//   wait list and, on an in-order queue, for the queue's earlier commands that write host memory
//   (a read into memory that a later write sends on).
// Profiling: QUEUED at enqueue and SUBMIT when the runtime accepts the command (host steady-clock
// nanoseconds); START and END from the operations that did the command's work, on the devices or
// on the runtime's host worker, placed on the host clock (profiling.hpp says which and when not).

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <optional>

#include <unimem/errors.hpp>
#include "api/program_core.hpp"
#include "api/runtime_core.hpp"
#include "platform/entry_points.hpp"

namespace unimem::platform {

namespace {

using Record = std::shared_ptr<CommandRecord>;

// What a command does with host memory (decides its ordering, see above).
enum class HostUse { none, reads, writes };

cl_int check_wait_list(cl_context context, cl_uint n, const cl_event* list) {
  if ((n == 0) != (list == nullptr)) return CL_INVALID_EVENT_WAIT_LIST;
  for (cl_uint i = 0; i < n; ++i) {
    if (!is_live(list[i], ObjectKind::event)) return CL_INVALID_EVENT_WAIT_LIST;
    if (list[i]->context != context) return CL_INVALID_CONTEXT;
  }
  return CL_SUCCESS;
}

cl_event new_event(cl_context context, cl_command_queue queue, Record record, bool user) {
  auto* e = make_object<_cl_event>(ObjectKind::event);
  e->context = context;
  e->queue = queue;
  e->record = std::move(record);
  e->user = user;
  retain(context->header);
  if (queue != nullptr) retain(queue->header);
  return e;
}

bool profiled(cl_command_queue q) { return (q->properties & CL_QUEUE_PROFILING_ENABLE) != 0; }

// Only an event of a profiling queue can be asked for times: a command keeps its operations
// (profiling.hpp) then, and only then.
std::shared_ptr<DeviceWork> work_for(cl_command_queue q, const cl_event* event) {
  return event != nullptr && profiled(q) ? std::make_shared<DeviceWork>() : nullptr;
}

// Gives the event enqueue() handed out its command's operations; the event is this thread's
// alone until the entry point returns.
cl_int keep_work(cl_int result, cl_event* event, std::shared_ptr<DeviceWork> work) {
  if (work && result == CL_SUCCESS) (*event)->record->device_work = std::move(work);
  return result;
}

// A runtime read or write whose operations are added to work (when not null).
Event host_read(RuntimeCore& core, BufferId b, std::uint64_t at, std::span<std::byte> out,
                DeviceWork* work) {
  if (work == nullptr) return core.read(b, at, out);
  DeviceEvents parts;
  Event e = core.read(b, at, out, &parts);
  work->add(std::move(parts));
  return e;
}

Event host_write(RuntimeCore& core, BufferId b, std::uint64_t at, std::span<const std::byte> data,
                 DeviceWork* work) {
  if (work == nullptr) return core.write(b, at, data);
  DeviceEvents parts;
  Event e = core.write(b, at, data, &parts);
  work->add(std::move(parts));
  return e;
}

// A queue of the aggregate device splits over every device; a queue of one exposed device runs
// there.
LaunchOptions queue_launch_options(cl_command_queue q) {
  LaunchOptions options;
  if (!q->device->aggregate) options.device = q->device->index;
  return options;
}

void prune(cl_command_queue q) {
  std::erase_if(q->outstanding, [](const Record& r) { return r->is_complete(); });
  // Commands finish mostly in the order they were enqueued: the finished ones in front go, and
  // the scan stops at the first still running (the later ones are not asked at every pruning
  // while the host enqueues ahead of the devices; each question is a driver call).
  q->anonymous.erase(q->anonymous.begin(),
                     std::find_if(q->anonymous.begin(), q->anonymous.end(),
                                  [](const Event& e) { return !e.is_complete(); }));
  q->prune_at = 2 * (q->outstanding.size() + q->anonymous.size()) + 64;
}

// Enqueues prune only once the lists have doubled since the last pruning: a program that enqueues
// thousands of commands before waiting would otherwise rescan them on every enqueue. Finished
// commands kept a while longer are harmless (what waits on them finds them done).
void prune_amortized(cl_command_queue q) {
  if (q->outstanding.size() + q->anonymous.size() >= q->prune_at) prune(q);
}

// What clFinish, a barrier or releasing the queue waits for: every command not known finished.
EventList pending_of(cl_command_queue q) {
  EventList all;
  all.reserve(q->outstanding.size() + q->anonymous.size());
  for (const Record& r : q->outstanding) all.push_back(r->done());
  all.insert(all.end(), q->anonymous.begin(), q->anonymous.end());
  return all;
}

// Submits deferred commands from the front of the queue while their gates are done. One thread
// pumps at a time (q->pumping), without holding q->mutex while it submits (a submission may wait
// for the runtime, whose completions call back here); a completion that arrives meanwhile asks
// the pumping thread to look again (q->repump).
void run_deferred(cl_command_queue q) {
  std::unique_lock lock(q->mutex);
  if (q->pumping) {
    q->repump = true;
    return;
  }
  q->pumping = true;
  q->defers.store(true);
  do {
    q->repump = false;
    while (!q->deferred.empty()) {
      auto& front = q->deferred.front();
      bool ready = true;
      bool failed = false;
      for (const Record& g : front.gates) {
        ready = ready && g->is_complete();
        failed = failed || (g->is_complete() && g->status() < 0);
      }
      if (!ready) break;
      Record record = front.record;
      auto submit = std::move(front.submit);
      q->deferred.pop_front();
      lock.unlock();
      if (failed) {
        record->fail(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
      } else {
        try {
          record->submit(submit(), profiled(q));
        } catch (...) {
          record->fail(error_of_current_exception(q->context, CL_OUT_OF_RESOURCES));
        }
      }
      lock.lock();
    }
  } while (q->repump);
  q->pumping = false;
  q->defers.store(!q->deferred.empty());
}

// An anonymous command: nothing can name it or wait for it but the queue (clFinish, barriers),
// and nothing orders it but the runtime. Unless the queue defers (then it waits behind: nullopt,
// the caller enqueues it with a record), it is submitted at once and only its runtime event is
// kept: no CommandRecord per launch. The caller has checked that it hands out no event, waits for
// nothing, does not block and uses no host memory.
template <typename Submit>
std::optional<cl_int> submit_anonymous(cl_command_queue q, Submit& submit) {
  if (q->defers.load()) return std::nullopt;
  Event done;
  try {
    done = submit();
  } catch (...) {
    return error_of_current_exception(q->context, CL_OUT_OF_RESOURCES);
  }
  std::lock_guard lock(q->mutex);
  prune_amortized(q);
  if (!done.is_null()) q->anonymous.push_back(std::move(done));
  return CL_SUCCESS;
}

// Enqueues one command: checks the wait list, orders it (see the file comment), submits it or
// defers it, hands out its event and, when blocking, waits for it. `submit` (a callable returning
// the runtime's Event) becomes a std::function only when the command is deferred.
template <typename Submit>
cl_int enqueue(cl_command_queue q, cl_command_type type, HostUse host, cl_uint n,
               const cl_event* list, cl_event* event_out, bool blocking, Submit&& submit) {
  if (const cl_int e = check_wait_list(q->context, n, list); e != CL_SUCCESS) return e;
  if (event_out == nullptr && !blocking && n == 0 && host == HostUse::none) {
    if (const std::optional<cl_int> e = submit_anonymous(q, submit)) return *e;
  }
  auto record = std::make_shared<CommandRecord>();
  record->type = type;
  std::vector<Record> waits;
  for (cl_uint i = 0; i < n; ++i) {
    if (!list[i]->record->is_complete()) waits.push_back(list[i]->record);
  }
  bool defer = false;
  {
    std::lock_guard lock(q->mutex);
    prune_amortized(q);
    if (host != HostUse::none && (q->properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0) {
      for (const Record& r : q->outstanding) {
        if (r->type == CL_COMMAND_READ_BUFFER || r->type == CL_COMMAND_READ_BUFFER_RECT ||
            r->type == CL_COMMAND_MAP_BUFFER) {
          waits.push_back(r);
        }
      }
    }
    const bool unsubmitted = std::any_of(waits.begin(), waits.end(),
                                         [](const Record& r) { return !r->submitted.load(); });
    defer = !q->deferred.empty() || q->pumping || unsubmitted;
    q->outstanding.push_back(record);
    if (defer) {
      q->deferred.push_back({waits, record, std::function<Event()>(std::move(submit))});
      q->defers.store(true);
    }
  }
  if (defer) {
    // Outside the lock: a gate that is already done runs its callback at once.
    for (const Record& g : waits) {
      retain(q->header);
      g->state.on_complete([q] {
        run_deferred(q);
        release_queue(q);
      });
    }
    if (waits.empty()) run_deferred(q);
  }
  if (!defer) {
    // Submitted commands finish on their own: wait for them only where host memory is shared.
    if (host != HostUse::none) {
      for (const Record& r : waits) {
        try {
          r->wait();
        } catch (...) {
        }
      }
    }
    const bool failed = std::any_of(waits.begin(), waits.end(), [](const Record& r) {
      return r->is_complete() && r->status() < 0;
    });
    if (failed && host != HostUse::none) {
      record->fail(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    } else {
      try {
        record->submit(submit(), profiled(q));
      } catch (...) {
        const cl_int code = error_of_current_exception(q->context, CL_OUT_OF_RESOURCES);
        std::lock_guard lock(q->mutex);
        std::erase(q->outstanding, record);
        return code;
      }
    }
  }
  if (event_out != nullptr) *event_out = new_event(q->context, q, record, false);
  if (blocking) {
    try {
      record->wait();
    } catch (...) {
      return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
  }
  return CL_SUCCESS;
}

// One NDRange through the program's core, counted in the run report; its operations are added
// to work (when not null).
Event launch_kernel(const Program& built, const std::string& name, const NDRange& range,
                    const std::vector<Arg>& args, const LaunchOptions& options, DeviceWork* work,
                    std::shared_ptr<const void>* ticket = nullptr,
                    std::shared_ptr<const LaunchPlan>* plan_out = nullptr) {
  std::shared_ptr<const LaunchPlan> plan;
  std::vector<Event> partitions;
  Event e =
      built.core().launch(name, range, args, options, &plan, work ? &partitions : nullptr, ticket);
  PlatformState::get().record_launch(name, plan);
  if (work) work->add(*plan, partitions);
  if (plan_out != nullptr) *plan_out = std::move(plan);
  return e;
}

// Whether an NDRange call names the launch `lean` describes: the same device, dimensions and
// sizes, given or left NULL alike.
bool same_lean_launch(const _cl_kernel::LeanLaunch& lean, cl_device_id device, cl_uint dims,
                      const size_t* offset, const size_t* global, const size_t* local) {
  if (lean.device != device || lean.dims != dims || lean.offset_given != (offset != nullptr) ||
      lean.local_given != (local != nullptr)) {
    return false;
  }
  for (cl_uint d = 0; d < dims; ++d) {
    if (lean.global[d] != global[d] || (offset != nullptr && lean.offset[d] != offset[d]) ||
        (local != nullptr && lean.local[d] != local[d])) {
      return false;
    }
  }
  return true;
}

// The lean repeat of EnqueueNDRangeKernel (see there): CL_SUCCESS or the launch's error when
// the call was the kernel's LeanLaunch again and the runtime repeated it, nullopt when it goes the
// normal way. The kernel's lock is held through the launch: the ticket and the tally are used
// where they are (no copies), and no other thread replaces them meanwhile (the kernel's lock
// comes before the runtime's; nothing takes them the other way round).
std::optional<cl_int> try_lean_repeat(cl_command_queue q, cl_kernel kernel, cl_uint dims,
                                      const size_t* offset, const size_t* global,
                                      const size_t* local) {
  std::optional<Event> done;
  std::exception_ptr failure;
  {
    std::lock_guard lock(kernel->mutex);
    if (!kernel->lean || kernel->launch_args != kernel->lean->args ||
        kernel->args_live_at != mems_destroyed() ||
        !same_lean_launch(*kernel->lean, q->device, dims, offset, global, local)) {
      return std::nullopt;
    }
    _cl_kernel::LeanLaunch& lean = *kernel->lean;
    try {
      done = kernel->built->core().launch_again(lean.ticket, true);
      if (done) {
        if (!lean.tally) lean.tally = PlatformState::get().new_tally(kernel->name, lean.plan);
        lean.tally->launches.fetch_add(1, std::memory_order_relaxed);
      }
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (failure) {
    // Outside the kernel's lock: the context's callback may call back into the platform.
    try {
      std::rethrow_exception(failure);
    } catch (...) {
      return error_of_current_exception(q->context, CL_OUT_OF_RESOURCES);
    }
  }
  if (!done) return std::nullopt;
  if (done->is_null()) {
    // An eventless launch (RuntimeCore::launch_again): the queue asks for its event only when
    // something waits for the queue's commands (take_eventless_launches). No lock: the flag only.
    if (!q->eventless.load(std::memory_order_relaxed)) {
      q->eventless.store(true, std::memory_order_release);
    }
    return CL_SUCCESS;
  }
  std::lock_guard lock(q->mutex);
  prune_amortized(q);
  q->anonymous.push_back(std::move(*done));
  return CL_SUCCESS;
}

// The work-group size of a launch that leaves it to the implementation (local_work_size NULL)
// while its program splits only with one (ProgramCore::split_needs_work_group_size: it calls
// get_group_id or get_num_groups). The aggregate device is the implementation, so it chooses
// one valid on every device below it and launches with it: per dimension from the first, the
// largest divisor of the global size within the device's CL_DEVICE_MAX_WORK_ITEM_SIZES, the
// work-group items left (CL_KERNEL_WORK_GROUP_SIZE, the minimum over the devices, at most
// kChosenGroupItems) and global size / device count (so every dimension has a work-group per
// device to split at, when it has that many items). Zero when an answer is missing.
constexpr std::size_t kChosenGroupItems = 256;

std::array<std::size_t, 3> choose_work_group_size(cl_device_id device, std::size_t max_group,
                                                  cl_uint dims, const size_t* global,
                                                  std::size_t devices) {
  std::array<std::size_t, 3> local{};
  std::array<std::size_t, 3> items{};
  if (max_group == 0 || GetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items,
                                      items.data(), nullptr) != CL_SUCCESS) {
    return local;
  }
  std::size_t budget = std::min(max_group, kChosenGroupItems);
  for (cl_uint d = 0; d < dims; ++d) {
    const std::size_t cap = std::max<std::size_t>(
        1, std::min({items[d], budget, global[d] / std::max<std::size_t>(devices, 1)}));
    std::size_t l = cap;
    while (global[d] % l != 0) --l;
    local[d] = l;
    budget /= l;
  }
  return local;
}

// A buffer range check: [offset, offset + size) inside mem.
bool inside(cl_mem mem, std::size_t offset, std::size_t size) {
  return offset <= mem->size && size <= mem->size - offset;
}

cl_int check_queue_mem(cl_command_queue q, cl_mem mem) {
  if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  if (!is_live(mem, ObjectKind::mem)) return CL_INVALID_MEM_OBJECT;
  if (mem->context != q->context) return CL_INVALID_CONTEXT;
  return CL_SUCCESS;
}

// Byte offset of (x bytes, y rows, z slices) with OpenCL's pitch defaults.
struct RectGeometry {
  std::size_t row_pitch, slice_pitch;
  [[nodiscard]] std::size_t at(const size_t* origin) const {
    return origin[0] + origin[1] * row_pitch + origin[2] * slice_pitch;
  }
};

cl_int rect_geometry(const size_t* region, std::size_t row_pitch, std::size_t slice_pitch,
                     RectGeometry& g) {
  g.row_pitch = row_pitch == 0 ? region[0] : row_pitch;
  g.slice_pitch = slice_pitch == 0 ? region[1] * g.row_pitch : slice_pitch;
  if (g.row_pitch < region[0] || g.slice_pitch < region[1] * g.row_pitch) return CL_INVALID_VALUE;
  if (slice_pitch != 0 && slice_pitch % g.row_pitch != 0) return CL_INVALID_VALUE;
  return CL_SUCCESS;
}

// The last byte (exclusive) a rect touches.
std::size_t rect_end(const size_t* origin, const size_t* region, const RectGeometry& g) {
  return g.at(origin) + (region[2] - 1) * g.slice_pitch + (region[1] - 1) * g.row_pitch + region[0];
}

}  // namespace

// ---- reads, writes, copies, fills ----------------------------------------------------------

cl_int CL_API_CALL EnqueueReadBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                     size_t offset, size_t size, void* ptr, cl_uint n,
                                     const cl_event* list, cl_event* event) {
  if (const cl_int e = check_queue_mem(q, mem); e != CL_SUCCESS) return e;
  if (ptr == nullptr || size == 0 || !inside(mem, offset, size)) return CL_INVALID_VALUE;
  RuntimeCore& core = PlatformState::get().core();
  const BufferId b = mem->buffer;
  const std::size_t at = mem->origin + offset;
  auto work = work_for(q, event);
  return keep_work(enqueue(q, CL_COMMAND_READ_BUFFER, HostUse::writes, n, list, event, blocking,
                           [=, &core] {
                             return host_read(core, b, at,
                                              std::span(static_cast<std::byte*>(ptr), size),
                                              work.get());
                           }),
                   event, work);
}

cl_int CL_API_CALL EnqueueWriteBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                      size_t offset, size_t size, const void* ptr, cl_uint n,
                                      const cl_event* list, cl_event* event) {
  if (const cl_int e = check_queue_mem(q, mem); e != CL_SUCCESS) return e;
  if (ptr == nullptr || size == 0 || !inside(mem, offset, size)) return CL_INVALID_VALUE;
  RuntimeCore& core = PlatformState::get().core();
  const BufferId b = mem->buffer;
  const std::size_t at = mem->origin + offset;
  auto work = work_for(q, event);
  return keep_work(enqueue(q, CL_COMMAND_WRITE_BUFFER, HostUse::reads, n, list, event, blocking,
                           [=, &core] {
                             return host_write(core, b, at,
                                               std::span(static_cast<const std::byte*>(ptr), size),
                                               work.get());
                           }),
                   event, work);
}

cl_int CL_API_CALL EnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                                     size_t dst_offset, size_t size, cl_uint n,
                                     const cl_event* list, cl_event* event) {
  if (const cl_int e = check_queue_mem(q, src); e != CL_SUCCESS) return e;
  if (const cl_int e = check_queue_mem(q, dst); e != CL_SUCCESS) return e;
  if (size == 0 || !inside(src, src_offset, size) || !inside(dst, dst_offset, size)) {
    return CL_INVALID_VALUE;
  }
  const std::size_t from = src->origin + src_offset;
  const std::size_t to = dst->origin + dst_offset;
  if (src->buffer == dst->buffer && from < to + size && to < from + size) {
    return CL_MEM_COPY_OVERLAP;
  }
  const BufferId s = src->buffer;
  const BufferId d = dst->buffer;
  const LaunchOptions options = queue_launch_options(q);
  auto work = work_for(q, event);
  return keep_work(enqueue(q, CL_COMMAND_COPY_BUFFER, HostUse::none, n, list, event, false,
                           [=] {
                             return PlatformState::get().copies().copy(s, from, d, to, size,
                                                                       options, work.get());
                           }),
                   event, work);
}

cl_int CL_API_CALL EnqueueFillBuffer(cl_command_queue q, cl_mem mem, const void* pattern,
                                     size_t pattern_size, size_t offset, size_t size, cl_uint n,
                                     const cl_event* list, cl_event* event) {
  if (const cl_int e = check_queue_mem(q, mem); e != CL_SUCCESS) return e;
  const bool power_of_two = pattern_size != 0 && (pattern_size & (pattern_size - 1)) == 0;
  if (pattern == nullptr || !power_of_two || pattern_size > 128 || offset % pattern_size != 0 ||
      size % pattern_size != 0 || !inside(mem, offset, size)) {
    return CL_INVALID_VALUE;
  }
  auto bytes = std::make_shared<std::vector<std::byte>>(size);
  for (std::size_t i = 0; i < size; i += pattern_size) {
    std::memcpy(bytes->data() + i, pattern, pattern_size);
  }
  RuntimeCore& core = PlatformState::get().core();
  const BufferId b = mem->buffer;
  const std::size_t at = mem->origin + offset;
  auto work = work_for(q, event);
  return keep_work(enqueue(q, CL_COMMAND_FILL_BUFFER, HostUse::none, n, list, event, false,
                           [=, &core] {
                             Event e = host_write(core, b, at, *bytes, work.get());
                             // Keeps the pattern bytes alive until the write is done.
                             e.on_complete([bytes] {});
                             return e;
                           }),
                   event, work);
}

namespace {

// clEnqueueReadBufferRect (to_host) and clEnqueueWriteBufferRect: one runtime read or write per
// row of the rect, so exactly the rect's bytes move. `host` is only written when to_host.
cl_int enqueue_host_rect(cl_command_queue q, cl_mem mem, cl_bool blocking, bool to_host,
                         const size_t* buffer_origin, const size_t* host_origin,
                         const size_t* region, size_t buffer_row_pitch, size_t buffer_slice_pitch,
                         size_t host_row_pitch, size_t host_slice_pitch, std::byte* host, cl_uint n,
                         const cl_event* list, cl_event* event) {
  if (const cl_int e = check_queue_mem(q, mem); e != CL_SUCCESS) return e;
  if (host == nullptr || buffer_origin == nullptr || host_origin == nullptr || region == nullptr ||
      region[0] == 0 || region[1] == 0 || region[2] == 0) {
    return CL_INVALID_VALUE;
  }
  RectGeometry bg{}, hg{};
  if (rect_geometry(region, buffer_row_pitch, buffer_slice_pitch, bg) != CL_SUCCESS ||
      rect_geometry(region, host_row_pitch, host_slice_pitch, hg) != CL_SUCCESS ||
      rect_end(buffer_origin, region, bg) > mem->size) {
    return CL_INVALID_VALUE;
  }
  RuntimeCore& core = PlatformState::get().core();
  const BufferId b = mem->buffer;
  const std::size_t base = mem->origin + bg.at(buffer_origin);
  std::byte* const host_base = host + hg.at(host_origin);
  const std::array<std::size_t, 3> r{region[0], region[1], region[2]};
  const cl_command_type type = to_host ? CL_COMMAND_READ_BUFFER_RECT : CL_COMMAND_WRITE_BUFFER_RECT;
  auto work = work_for(q, event);
  return keep_work(
      enqueue(q, type, to_host ? HostUse::writes : HostUse::reads, n, list, event, blocking,
              [=, &core] {
                std::vector<Event> rows;
                for (std::size_t z = 0; z < r[2]; ++z) {
                  for (std::size_t y = 0; y < r[1]; ++y) {
                    const std::size_t at = base + z * bg.slice_pitch + y * bg.row_pitch;
                    const std::span row(host_base + z * hg.slice_pitch + y * hg.row_pitch, r[0]);
                    rows.push_back(to_host ? host_read(core, b, at, row, work.get())
                                           : host_write(core, b, at, row, work.get()));
                  }
                }
                return when_all(rows);
              }),
      event, work);
}

}  // namespace

cl_int CL_API_CALL EnqueueReadBufferRect(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                         const size_t* buffer_origin, const size_t* host_origin,
                                         const size_t* region, size_t buffer_row_pitch,
                                         size_t buffer_slice_pitch, size_t host_row_pitch,
                                         size_t host_slice_pitch, void* ptr, cl_uint n,
                                         const cl_event* list, cl_event* event) {
  return enqueue_host_rect(q, mem, blocking, true, buffer_origin, host_origin, region,
                           buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch,
                           static_cast<std::byte*>(ptr), n, list, event);
}

cl_int CL_API_CALL EnqueueWriteBufferRect(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                          const size_t* buffer_origin, const size_t* host_origin,
                                          const size_t* region, size_t buffer_row_pitch,
                                          size_t buffer_slice_pitch, size_t host_row_pitch,
                                          size_t host_slice_pitch, const void* ptr, cl_uint n,
                                          const cl_event* list, cl_event* event) {
  // The host bytes are only read (enqueue_host_rect writes them only when reading to the host).
  return enqueue_host_rect(q, mem, blocking, false, buffer_origin, host_origin, region,
                           buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch,
                           const_cast<std::byte*>(static_cast<const std::byte*>(ptr)), n, list,
                           event);
}

cl_int CL_API_CALL EnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst,
                                         const size_t* src_origin, const size_t* dst_origin,
                                         const size_t* region, size_t src_row_pitch,
                                         size_t src_slice_pitch, size_t dst_row_pitch,
                                         size_t dst_slice_pitch, cl_uint n, const cl_event* list,
                                         cl_event* event) {
  if (const cl_int e = check_queue_mem(q, src); e != CL_SUCCESS) return e;
  if (const cl_int e = check_queue_mem(q, dst); e != CL_SUCCESS) return e;
  if (src_origin == nullptr || dst_origin == nullptr || region == nullptr || region[0] == 0 ||
      region[1] == 0 || region[2] == 0) {
    return CL_INVALID_VALUE;
  }
  RectGeometry sg{}, dg{};
  if (rect_geometry(region, src_row_pitch, src_slice_pitch, sg) != CL_SUCCESS ||
      rect_geometry(region, dst_row_pitch, dst_slice_pitch, dg) != CL_SUCCESS ||
      rect_end(src_origin, region, sg) > src->size ||
      rect_end(dst_origin, region, dg) > dst->size) {
    return CL_INVALID_VALUE;
  }
  if (src->buffer == dst->buffer) {
    const std::size_t s0 = src->origin + sg.at(src_origin);
    const std::size_t s1 = src->origin + rect_end(src_origin, region, sg);
    const std::size_t d0 = dst->origin + dg.at(dst_origin);
    const std::size_t d1 = dst->origin + rect_end(dst_origin, region, dg);
    if (s0 < d1 && d0 < s1) return CL_MEM_COPY_OVERLAP;
  }
  const RectSide from{src->buffer, src->origin + sg.at(src_origin), sg.row_pitch, sg.slice_pitch};
  const RectSide to{dst->buffer, dst->origin + dg.at(dst_origin), dg.row_pitch, dg.slice_pitch};
  const std::array<std::uint64_t, 3> r{region[0], region[1], region[2]};
  const LaunchOptions options = queue_launch_options(q);
  auto work = work_for(q, event);
  return keep_work(enqueue(q, CL_COMMAND_COPY_BUFFER_RECT, HostUse::none, n, list, event, false,
                           [=] {
                             return PlatformState::get().copies().copy_rect(from, to, r, options,
                                                                            work.get());
                           }),
                   event, work);
}

// ---- map / unmap ---------------------------------------------------------------------------

void* CL_API_CALL EnqueueMapBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking,
                                   cl_map_flags flags, size_t offset, size_t size, cl_uint n,
                                   const cl_event* list, cl_event* event, cl_int* errcode_ret) {
  if (const cl_int e = check_queue_mem(q, mem); e != CL_SUCCESS) {
    set_error(errcode_ret, e);
    return nullptr;
  }
  constexpr cl_map_flags known = CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION;
  if (size == 0 || !inside(mem, offset, size) || (flags & ~known) != 0 ||
      ((flags & CL_MAP_WRITE_INVALIDATE_REGION) != 0 &&
       (flags & (CL_MAP_READ | CL_MAP_WRITE)) != 0)) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  _cl_mem::Mapping mapping{nullptr, offset, size, flags, nullptr};
  if (mem->host_ptr != nullptr) {
    mapping.pointer = static_cast<std::byte*>(mem->host_ptr) + offset;
  } else {
    mapping.storage = std::make_unique<std::byte[]>(size);
    mapping.pointer = mapping.storage.get();
  }
  void* pointer = mapping.pointer;
  const bool fetch = (flags & CL_MAP_WRITE_INVALIDATE_REGION) == 0;
  RuntimeCore& core = PlatformState::get().core();
  const BufferId b = mem->buffer;
  const std::size_t at = mem->origin + offset;
  {
    std::lock_guard lock(mem->mutex);
    mem->mappings.push_back(std::move(mapping));
  }
  auto work = work_for(q, event);
  const cl_int e = keep_work(
      enqueue(q, CL_COMMAND_MAP_BUFFER, HostUse::writes, n, list, event, blocking,
              [=, &core] {
                if (!fetch) return Event();
                return host_read(core, b, at, std::span(static_cast<std::byte*>(pointer), size),
                                 work.get());
              }),
      event, work);
  if (e != CL_SUCCESS) {
    std::lock_guard lock(mem->mutex);
    std::erase_if(mem->mappings, [&](const _cl_mem::Mapping& m) { return m.pointer == pointer; });
    set_error(errcode_ret, e);
    return nullptr;
  }
  mem->map_count.fetch_add(1);
  set_error(errcode_ret, CL_SUCCESS);
  return pointer;
}

cl_int CL_API_CALL EnqueueUnmapMemObject(cl_command_queue q, cl_mem mem, void* mapped, cl_uint n,
                                         const cl_event* list, cl_event* event) {
  if (const cl_int e = check_queue_mem(q, mem); e != CL_SUCCESS) return e;
  std::shared_ptr<_cl_mem::Mapping> mapping;
  {
    std::lock_guard lock(mem->mutex);
    auto it = std::find_if(mem->mappings.begin(), mem->mappings.end(),
                           [&](const _cl_mem::Mapping& m) { return m.pointer == mapped; });
    if (it == mem->mappings.end()) return CL_INVALID_VALUE;
    mapping = std::make_shared<_cl_mem::Mapping>(std::move(*it));
    mem->mappings.erase(it);
  }
  mem->map_count.fetch_sub(1);
  const bool publish = (mapping->flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) != 0;
  RuntimeCore& core = PlatformState::get().core();
  const BufferId b = mem->buffer;
  const std::size_t at = mem->origin + mapping->offset;
  auto work = work_for(q, event);
  return keep_work(
      enqueue(q, CL_COMMAND_UNMAP_MEM_OBJECT, HostUse::reads, n, list, event, false,
              [=, &core] {
                if (!publish) return Event();
                Event e = host_write(
                    core, b, at,
                    std::span(static_cast<const std::byte*>(mapping->pointer), mapping->size),
                    work.get());
                e.on_complete([mapping] {});  // the mapped bytes live until written
                return e;
              }),
      event, work);
}

cl_int CL_API_CALL EnqueueMigrateMemObjects(cl_command_queue q, cl_uint num, const cl_mem* mems,
                                            cl_mem_migration_flags flags, cl_uint n,
                                            const cl_event* list, cl_event* event) {
  if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  if (num == 0 || mems == nullptr ||
      (flags & ~cl_mem_migration_flags{CL_MIGRATE_MEM_OBJECT_HOST |
                                       CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED}) != 0) {
    return CL_INVALID_VALUE;
  }
  for (cl_uint i = 0; i < num; ++i) {
    if (const cl_int e = check_queue_mem(q, mems[i]); e != CL_SUCCESS) return e;
  }
  // The coherence layer moves bytes when a device uses them: a migration has nothing to do.
  return enqueue(q, CL_COMMAND_MIGRATE_MEM_OBJECTS, HostUse::none, n, list, event, false,
                 [] { return Event(); });
}

// ---- kernels -------------------------------------------------------------------------------

namespace {

// EnqueueNDRangeKernel but for its lean repeat. Not inlined into it: its frame (the range, the
// arguments, the plan) would be set up for every lean repeat too.
[[gnu::noinline]] cl_int enqueue_ndrange(cl_command_queue q, cl_kernel kernel, cl_uint dims,
                                         const size_t* offset, const size_t* global,
                                         const size_t* local, cl_uint n, const cl_event* list,
                                         cl_event* event) {
  if (!are_live(q, ObjectKind::queue, kernel, ObjectKind::kernel)) {
    if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
    if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  }
  if (kernel->program->context != q->context) return CL_INVALID_CONTEXT;
  if (dims < 1 || dims > 3) return CL_INVALID_WORK_DIMENSION;
  // As the vendors underneath (OpenCL 2.1 and later): no global size, or a zero one, is an empty
  // launch that succeeds.
  const bool empty =
      global == nullptr || std::any_of(global, global + dims, [](std::size_t g) { return g == 0; });
  if (empty) {
    return enqueue(q, CL_COMMAND_NDRANGE_KERNEL, HostUse::none, n, list, event, false,
                   [] { return Event(); });
  }
  NDRange range;
  range.dims = dims;
  std::size_t group_items = 1;
  for (cl_uint d = 0; d < dims; ++d) {
    range.global[d] = global[d];
    range.offset[d] = offset ? offset[d] : 0;
    if (local != nullptr) {
      if (local[d] == 0 || global[d] % local[d] != 0) return CL_INVALID_WORK_GROUP_SIZE;
      range.local[d] = local[d];
      group_items *= local[d];
    }
  }
  std::shared_ptr<const std::vector<Arg>> args;
  std::size_t max_group = 0;
  // Left to the implementation, on the aggregate device, by a program that splits only with a
  // work-group size: the platform chooses one (choose_work_group_size).
  const bool choose_group = local == nullptr && q->device->aggregate &&
                            kernel->built->core().split_needs_work_group_size();
  bool max_group_known = local == nullptr && !choose_group;
  cl_int args_error = CL_SUCCESS;
  {
    // One lock for the work-group limit and the arguments.
    std::lock_guard lock(kernel->mutex);
    if (!max_group_known) {
      auto it = kernel->max_group_size.find(q->device);
      if (it != kernel->max_group_size.end()) {
        max_group = it->second;
        max_group_known = true;
      }
    }
    // The arguments are checked again only when a memory object was destroyed since they last
    // passed (or one was set): the count is read first, so a buffer destroyed during the check
    // leaves a count that differs from the one stored.
    const std::uint64_t destroyed = mems_destroyed();
    if (kernel->args_live_at != destroyed) {
      for (std::size_t i = 0; i < kernel->args.size() && args_error == CL_SUCCESS; ++i) {
        if (!kernel->args[i] ||
            (kernel->arg_mems[i] != nullptr && !is_live(kernel->arg_mems[i], ObjectKind::mem))) {
          args_error = CL_INVALID_KERNEL_ARGS;  // unset, or released since clSetKernelArg
        }
      }
      if (args_error == CL_SUCCESS) kernel->args_live_at = destroyed;
    }
    if (args_error == CL_SUCCESS) {
      if (!kernel->launch_args) {
        std::vector<Arg> all;
        all.reserve(kernel->args.size());
        for (const auto& a : kernel->args) all.push_back(*a);
        kernel->launch_args = std::make_shared<const std::vector<Arg>>(std::move(all));
      }
      args = kernel->launch_args;
    }
  }
  if (!max_group_known &&
      GetKernelWorkGroupInfo(kernel, q->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_group,
                             &max_group, nullptr) == CL_SUCCESS) {
    std::lock_guard lock(kernel->mutex);
    kernel->max_group_size[q->device] = max_group;
  }
  if (max_group != 0 && group_items > max_group) return CL_INVALID_WORK_GROUP_SIZE;
  if (args_error != CL_SUCCESS) return args_error;
  if (choose_group) {
    std::array<std::size_t, 3> whole{};
    std::copy(global, global + dims, whole.begin());
    std::optional<std::array<std::size_t, 3>> chosen;
    {
      std::lock_guard lock(kernel->mutex);
      const auto& last = kernel->chosen_group_size;
      if (last && last->device == q->device && last->dims == dims && last->global == whole) {
        chosen = last->local;
      }
    }
    if (!chosen) {
      chosen = choose_work_group_size(q->device, max_group, dims, global,
                                      PlatformState::get().runtime().device_count());
      std::lock_guard lock(kernel->mutex);
      kernel->chosen_group_size = _cl_kernel::ChosenGroupSize{q->device, dims, whole, *chosen};
    }
    if ((*chosen)[0] != 0) {
      for (cl_uint d = 0; d < dims; ++d) range.local[d] = (*chosen)[d];
    }
  }
  if (event == nullptr && n == 0 && list == nullptr) {
    // Anonymous and, unless the queue defers, run before this call returns: the launch reads
    // the kernel's program, name and arguments where they are, without copies.
    std::shared_ptr<const void> ticket;
    std::shared_ptr<const LaunchPlan> plan;
    auto now = [&] {
      return launch_kernel(*kernel->built, kernel->name, range, *args, queue_launch_options(q),
                           nullptr, &ticket, &plan);
    };
    if (const std::optional<cl_int> e = submit_anonymous(q, now)) {
      if (*e == CL_SUCCESS && ticket) {
        // The next call naming this launch again may take the lean repeat (above).
        _cl_kernel::LeanLaunch lean;
        lean.device = q->device;
        lean.dims = dims;
        lean.offset_given = offset != nullptr;
        lean.local_given = local != nullptr;
        for (cl_uint d = 0; d < dims; ++d) {
          lean.global[d] = global[d];
          if (offset != nullptr) lean.offset[d] = offset[d];
          if (local != nullptr) lean.local[d] = local[d];
        }
        lean.args = std::move(args);
        lean.ticket = std::move(ticket);
        lean.plan = std::move(plan);
        std::lock_guard lock(kernel->mutex);
        kernel->lean = std::move(lean);
      }
      return *e;
    }
  }
  std::shared_ptr<DeviceWork> work = work_for(q, event);
  const cl_int result =
      enqueue(q, CL_COMMAND_NDRANGE_KERNEL, HostUse::none, n, list, event, false,
              [built = kernel->built, name = kernel->name, range, args = std::move(args),
               options = queue_launch_options(q),
               work] { return launch_kernel(*built, name, range, *args, options, work.get()); });
  return keep_work(result, event, std::move(work));
}

}  // namespace

cl_int CL_API_CALL EnqueueNDRangeKernel(cl_command_queue q, cl_kernel kernel, cl_uint dims,
                                        const size_t* offset, const size_t* global,
                                        const size_t* local, cl_uint n, const cl_event* list,
                                        cl_event* event) {
  // The lean repeat: an anonymous call naming the kernel's last anonymous launch again (same
  // device, sizes and arguments: _cl_kernel::LeanLaunch), on a queue that does not defer, once
  // the checks enqueue_ndrange makes first pass (its objects live, one context, a valid and not
  // empty range). What enqueue_ndrange would do for it: the checks after those pass as they did
  // (the same inputs, arguments live since: args_live_at), the arguments are launch_args, the
  // range and options are the ones computed then (choose_work_group_size and the limits depend
  // on nothing else), and submit_anonymous runs launch_kernel: ProgramCore::launch, which repeats
  // the ticket's launch, and the run report. ProgramCore::launch_again makes that launch when the
  // runtime says it would be exactly the repeat of its previous operation, and this counts it in
  // the report (the LeanLaunch's tally) and keeps its event in the queue as submit_anonymous
  // does; otherwise nothing was done and the call goes on as any other (enqueue_ndrange, which
  // also answers every failed check with its error).
  if (event == nullptr && n == 0 && list == nullptr && dims >= 1 && dims <= 3 &&
      global != nullptr && are_live(q, ObjectKind::queue, kernel, ObjectKind::kernel) &&
      kernel->program->context == q->context && !q->defers.load()) {
    bool empty = false;
    for (cl_uint d = 0; d < dims; ++d) empty = empty || global[d] == 0;
    if (!empty) {
      if (const std::optional<cl_int> e = try_lean_repeat(q, kernel, dims, offset, global, local)) {
        return *e;
      }
    }
  }
  return enqueue_ndrange(q, kernel, dims, offset, global, local, n, list, event);
}

cl_int CL_API_CALL EnqueueTask(cl_command_queue q, cl_kernel kernel, cl_uint n,
                               const cl_event* list, cl_event* event) {
  const size_t one = 1;
  return EnqueueNDRangeKernel(q, kernel, 1, nullptr, &one, &one, n, list, event);
}

cl_int CL_API_CALL EnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK*)(void*), void*, size_t,
                                       cl_uint, const cl_mem*, const void**, cl_uint,
                                       const cl_event*, cl_event*) {
  if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  return CL_INVALID_OPERATION;  // CL_DEVICE_EXECUTION_CAPABILITIES has no CL_EXEC_NATIVE_KERNEL
}

// ---- markers, barriers, flush, finish ------------------------------------------------------

namespace {

// take_eventless_launches answered as an OpenCL call answers: CL_SUCCESS, or the runtime's
// failure as its error code.
cl_int take_eventless_launches_or_error(cl_command_queue q) {
  try {
    take_eventless_launches(q);
  } catch (...) {
    return error_of_current_exception(q->context, CL_OUT_OF_RESOURCES);
  }
  return CL_SUCCESS;
}

cl_int marker(cl_command_queue q, cl_command_type type, cl_uint n, const cl_event* list,
              cl_event* event) {
  if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  std::vector<Event> before;
  if (n == 0) {
    if (const cl_int e = take_eventless_launches_or_error(q); e != CL_SUCCESS) return e;
    std::lock_guard lock(q->mutex);
    prune(q);
    before = pending_of(q);
  }
  return enqueue(q, type, HostUse::none, n, list, event, false,
                 [before] { return when_all(before); });
}

}  // namespace

cl_int CL_API_CALL EnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n, const cl_event* list,
                                             cl_event* event) {
  return marker(q, CL_COMMAND_MARKER, n, list, event);
}

cl_int CL_API_CALL EnqueueBarrierWithWaitList(cl_command_queue q, cl_uint n, const cl_event* list,
                                              cl_event* event) {
  return marker(q, CL_COMMAND_BARRIER, n, list, event);
}

cl_int CL_API_CALL EnqueueMarker(cl_command_queue q, cl_event* event) {
  if (event == nullptr) return CL_INVALID_VALUE;
  return marker(q, CL_COMMAND_MARKER, 0, nullptr, event);
}

cl_int CL_API_CALL EnqueueBarrier(cl_command_queue q) {
  return marker(q, CL_COMMAND_BARRIER, 0, nullptr, nullptr);
}

cl_int CL_API_CALL EnqueueWaitForEvents(cl_command_queue q, cl_uint n, const cl_event* list) {
  if (n == 0 || list == nullptr) return CL_INVALID_VALUE;
  return marker(q, CL_COMMAND_BARRIER, n, list, nullptr);
}

// The runtime's devices flush every command but the eventless launches' (flushed now and then,
// and when their event is made): taking them flushes them.
cl_int CL_API_CALL Flush(cl_command_queue q) {
  if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  return take_eventless_launches_or_error(q);
}

cl_int CL_API_CALL Finish(cl_command_queue q) {
  if (!is_live(q, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  if (const cl_int e = take_eventless_launches_or_error(q); e != CL_SUCCESS) return e;
  EventList pending;
  {
    std::lock_guard lock(q->mutex);
    pending = pending_of(q);
  }
  // Newest first (see wait_all): the commands finish about in order, so the waits after the
  // first return at once instead of sleeping once per command.
  for (auto e = pending.rbegin(); e != pending.rend(); ++e) {
    try {
      e->wait();
    } catch (...) {
    }
  }
  std::lock_guard lock(q->mutex);
  prune(q);
  return CL_SUCCESS;
}

// ---- events --------------------------------------------------------------------------------

cl_int CL_API_CALL WaitForEvents(cl_uint n, const cl_event* list) {
  if (n == 0 || list == nullptr) return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < n; ++i) {
    if (!is_live(list[i], ObjectKind::event)) return CL_INVALID_EVENT;
    if (list[i]->context != list[0]->context) return CL_INVALID_CONTEXT;
  }
  bool failed = false;
  for (cl_uint i = 0; i < n; ++i) {
    try {
      list[i]->record->wait();
    } catch (...) {
      failed = true;
    }
    failed = failed || list[i]->record->status() < 0;
  }
  return failed ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
}

cl_int CL_API_CALL GetEventInfo(cl_event event, cl_event_info param, size_t size, void* value,
                                size_t* size_ret) {
  if (!is_live(event, ObjectKind::event)) return CL_INVALID_EVENT;
  switch (param) {
    case CL_EVENT_COMMAND_QUEUE:
      return answer_value(event->queue, size, value, size_ret);
    case CL_EVENT_CONTEXT:
      return answer_value(event->context, size, value, size_ret);
    case CL_EVENT_COMMAND_TYPE:
      return answer_value(event->record->type, size, value, size_ret);
    case CL_EVENT_COMMAND_EXECUTION_STATUS:
      return answer_value(event->record->status(), size, value, size_ret);
    case CL_EVENT_REFERENCE_COUNT:
      return answer_value(event->header.references.load(), size, value, size_ret);
    default:
      return CL_INVALID_VALUE;
  }
}

cl_int CL_API_CALL GetEventProfilingInfo(cl_event event, cl_profiling_info param, size_t size,
                                         void* value, size_t* size_ret) {
  if (!is_live(event, ObjectKind::event)) return CL_INVALID_EVENT;
  if (event->user || event->queue == nullptr || !profiled(event->queue) ||
      event->record->status() != CL_COMPLETE) {
    return CL_PROFILING_INFO_NOT_AVAILABLE;
  }
  CommandRecord& r = *event->record;
  // A waiter may see the command complete before its completion callback noted the end: the
  // first answer notes it then (the callback keeps it), so that every answer is the same.
  cl_ulong done = r.end_ns.load();
  if (done == 0) {
    const cl_ulong seen = now_ns();
    if (r.end_ns.compare_exchange_strong(done, seen)) done = seen;
  }
  CommandTimes t{r.submit_ns.load(), r.start_ns.load(), std::max(done, r.start_ns.load())};
  if (r.device_work) {
    if (auto placed = PlatformState::get().device_clocks().place(*r.device_work, r.queued_ns.load(),
                                                                 r.submit_ns.load(), done)) {
      t = *placed;
    }
  }
  switch (param) {
    case CL_PROFILING_COMMAND_QUEUED:
      return answer_value(r.queued_ns.load(), size, value, size_ret);
    case CL_PROFILING_COMMAND_SUBMIT:
      return answer_value(t.submit, size, value, size_ret);
    case CL_PROFILING_COMMAND_START:
      return answer_value(t.start, size, value, size_ret);
    case CL_PROFILING_COMMAND_END:
      return answer_value(t.end, size, value, size_ret);
    default:
      return CL_INVALID_VALUE;
  }
}

cl_int CL_API_CALL RetainEvent(cl_event event) {
  if (!is_live(event, ObjectKind::event)) return CL_INVALID_EVENT;
  retain(event->header);
  return CL_SUCCESS;
}

cl_int CL_API_CALL ReleaseEvent(cl_event event) {
  if (!is_live(event, ObjectKind::event)) return CL_INVALID_EVENT;
  release_event(event);
  return CL_SUCCESS;
}

cl_event CL_API_CALL CreateUserEvent(cl_context context, cl_int* errcode_ret) {
  if (!is_live(context, ObjectKind::context)) {
    set_error(errcode_ret, CL_INVALID_CONTEXT);
    return nullptr;
  }
  auto record = std::make_shared<CommandRecord>();
  record->type = CL_COMMAND_USER;
  record->status_value = CL_SUBMITTED;
  set_error(errcode_ret, CL_SUCCESS);
  return new_event(context, nullptr, std::move(record), true);
}

cl_int CL_API_CALL SetUserEventStatus(cl_event event, cl_int status) {
  if (!is_live(event, ObjectKind::event) || !event->user) return CL_INVALID_EVENT;
  if (status != CL_COMPLETE && status >= 0) return CL_INVALID_VALUE;
  CommandRecord& r = *event->record;
  if (r.submitted.exchange(true)) return CL_INVALID_OPERATION;  // set once only
  r.finish_user(status);
  return CL_SUCCESS;
}

cl_int CL_API_CALL SetEventCallback(cl_event event, cl_int type,
                                    void(CL_CALLBACK* notify)(cl_event, cl_int, void*),
                                    void* user_data) {
  if (!is_live(event, ObjectKind::event)) return CL_INVALID_EVENT;
  if (notify == nullptr || (type != CL_COMPLETE && type != CL_SUBMITTED && type != CL_RUNNING)) {
    return CL_INVALID_VALUE;
  }
  // Every callback runs once the command has finished (which is after it was submitted and
  // running), with its own type, or with the error status when the command failed.
  retain(event->header);
  event->record->state.on_complete([event, type, notify, user_data] {
    const cl_int s = event->record->status();
    notify(event, s < 0 ? s : type, user_data);
    release_event(event);
  });
  return CL_SUCCESS;
}

}  // namespace unimem::platform
