#include "pointer/pointer_runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <span>
#include <system_error>

#include <unimem/errors.hpp>
#include "api/program_core.hpp"
#include "common/byte_size.hpp"

namespace unimem::pointer {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;  // staging size of um_memcpy / um_memset
constexpr std::size_t kMaxRollingLimit = 64;

bool service_trampoline(void* context, std::byte* address, FaultKind kind) {
  return static_cast<PointerRuntime*>(context)->handle_fault(address, kind);
}

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

const char* to_string(HostProtocol p) {
  switch (p) {
    case HostProtocol::batch:
      return "batch";
    case HostProtocol::lazy:
      return "lazy";
    case HostProtocol::rolling:
      return "rolling";
  }
  return "?";
}

std::optional<HostProtocol> parse_host_protocol(const std::string& text) {
  if (text == "batch") return HostProtocol::batch;
  if (text == "lazy") return HostProtocol::lazy;
  if (text == "rolling") return HostProtocol::rolling;
  return std::nullopt;
}

PointerRuntime& PointerRuntime::instance() {
  // Never destroyed: faults and I/O may arrive from threads still running at exit.
  static PointerRuntime* const runtime = new PointerRuntime();
  return *runtime;
}

PointerRuntime::PointerRuntime() {
  if (const char* p = std::getenv("UNIMEM_PROTOCOL"); p != nullptr && *p != '\0') {
    const auto parsed = parse_host_protocol(p);
    if (!parsed) {
      std::string m = "UNIMEM_PROTOCOL='";
      m += p;
      m += "' is not batch, lazy or rolling";
      throw PointerError(kInvalidValue, m);
    }
    protocol_ = *parsed;
  }
  if (const char* b = std::getenv("UNIMEM_BLOCK_SIZE"); b != nullptr && *b != '\0') {
    std::uint64_t bytes = 0;
    try {
      bytes = require_byte_size(b, "UNIMEM_BLOCK_SIZE");
    } catch (const PreconditionError& e) {
      throw PointerError(kInvalidValue, e.what());
    }
    if (bytes % HostMapping::page_size() != 0) {
      throw PointerError(kInvalidValue, std::string("UNIMEM_BLOCK_SIZE=") + b +
                                            " is not a multiple of the page size (" +
                                            std::to_string(HostMapping::page_size()) + ")");
    }
    block_size_ = bytes;
  }
}

Runtime& PointerRuntime::runtime_locked() {
  if (!runtime_) {
    // Its fetches keep going through the home copy (RuntimeOptions::direct_host_reads off): a
    // block invalidated again refetches bytes no kernel wrote since as a host memcpy.
    RuntimeOptions options;
    options.direct_host_reads = false;
    runtime_ = std::make_unique<Runtime>(options);
    install_fault_handler(&service_trampoline, this);
  }
  return *runtime_;
}

void PointerRuntime::set_protocol(HostProtocol p) {
  const std::lock_guard lock(mutex_);
  protocol_ = p;
}

HostProtocol PointerRuntime::protocol() {
  const std::lock_guard lock(mutex_);
  return protocol_;
}

void PointerRuntime::set_block_size(std::size_t bytes) {
  if (bytes == 0 || bytes % HostMapping::page_size() != 0) {
    throw PointerError(kInvalidValue, "um_set_block_size: " + std::to_string(bytes) +
                                          " bytes is not a positive multiple of the page size (" +
                                          std::to_string(HostMapping::page_size()) + ")");
  }
  const std::lock_guard lock(mutex_);
  block_size_ = bytes;
}

std::size_t PointerRuntime::block_size() {
  const std::lock_guard lock(mutex_);
  return block_size_;
}

void PointerRuntime::set_devices(std::size_t count) {
  const std::lock_guard lock(mutex_);
  const std::size_t n = runtime_locked().device_count();
  if (count > n) {
    throw PointerError(kInvalidValue, "um_set_devices: " + std::to_string(count) +
                                          " devices asked for, but only " + std::to_string(n) +
                                          " exist");
  }
  devices_ = count;
}

std::size_t PointerRuntime::device_count() {
  const std::lock_guard lock(mutex_);
  return runtime_locked().device_count();
}

LaunchOptions PointerRuntime::launch_options_locked() {
  LaunchOptions o;
  for (std::size_t d = 0; d < devices_; ++d) o.devices.push_back(d);
  return o;
}

// ---- blocks ----

void PointerRuntime::set_state_locked(Allocation& a, std::size_t b, BlockState s) {
  const BlockState old = a.state[b];
  if (old == s) return;
  if (old == BlockState::dirty) --a.dirty;
  if (s == BlockState::dirty) ++a.dirty;
  a.state[b] = s;
  const Protection p = s == BlockState::invalid     ? Protection::none
                       : s == BlockState::read_only ? Protection::read
                                                    : Protection::read_write;
  a.mapping.protect(a.block_begin(b), a.block_length(b), p);
}

void PointerRuntime::fetch_locked(Allocation& a, std::size_t b) {
  a.publishing[b].wait();
  a.publishing[b] = Event();
  const std::size_t begin = a.block_begin(b);
  const std::size_t length = a.block_length(b);
  runtime_locked().read_blocking(a.buffer, begin,
                                 std::span<std::byte>(a.mapping.shadow() + begin, length));
  stats_.bytes_fetched += length;
}

void PointerRuntime::make_readable_locked(Allocation& a, std::size_t b) {
  if (a.state[b] != BlockState::invalid) return;
  fetch_locked(a, b);
  set_state_locked(a, b, BlockState::read_only);
}

void PointerRuntime::make_writable_locked(Allocation& a, std::size_t b, bool roll, bool fetch) {
  if (a.state[b] == BlockState::dirty) return;
  if (a.state[b] == BlockState::invalid) {
    if (fetch) {
      fetch_locked(a, b);
    } else {
      a.publishing[b].wait();
      a.publishing[b] = Event();
    }
  } else {
    // A copy to the devices' side may still be reading the shadow view of this block.
    a.publishing[b].wait();
    a.publishing[b] = Event();
  }
  set_state_locked(a, b, BlockState::dirty);
  if (protocol_ != HostProtocol::rolling) return;
  a.dirty_order.push_back(b);
  if (a.eager[b] != 0) {
    // Written again before any launch needed the eager copy: it was too early, so allow more
    // dirty blocks before rolling (the adaptive limit of GMAC's Rolling, seeds/README.md).
    a.eager[b] = 0;
    rolling_limit_ = std::min(rolling_limit_ + 1, kMaxRollingLimit);
  }
  if (roll) roll_locked(a);
}

void PointerRuntime::publish_locked(Allocation& a, std::size_t b) {
  // Read-only first, so the host cannot change the bytes while the copy reads them.
  set_state_locked(a, b, BlockState::read_only);
  const std::size_t begin = a.block_begin(b);
  const std::size_t length = a.block_length(b);
  a.publishing[b] = runtime_locked().write(
      a.buffer, begin, std::span<const std::byte>(a.mapping.shadow() + begin, length));
  stats_.bytes_published += length;
}

void PointerRuntime::invalidate_locked(Allocation& a, std::size_t b) {
  if (a.state[b] == BlockState::dirty) publish_locked(a, b);  // never drop host writes
  set_state_locked(a, b, BlockState::invalid);
}

void PointerRuntime::roll_locked(Allocation& a) {
  // Rolling (seeds/README.md): beyond the limit, the oldest dirty blocks are written back
  // asynchronously while the host goes on working.
  std::deque<std::size_t> skipped;  // pinned by an I/O call: stay dirty, keep their turn
  while (a.dirty > rolling_limit_ + skipped.size() && !a.dirty_order.empty()) {
    const std::size_t b = a.dirty_order.front();
    a.dirty_order.pop_front();
    if (a.state[b] != BlockState::dirty) continue;
    if (a.pinned[b] != 0) {
      skipped.push_back(b);
      continue;
    }
    publish_locked(a, b);
    a.eager[b] = 1;
    ++stats_.eager_blocks;
  }
  a.dirty_order.insert(a.dirty_order.begin(), skipped.begin(), skipped.end());
}

// ---- allocations ----

Allocation* PointerRuntime::find_locked(const void* p, std::size_t* offset) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  auto it = allocations_.upper_bound(at);
  if (it == allocations_.begin()) return nullptr;
  --it;
  Allocation& a = *it->second;
  if (at >= it->first + a.size()) return nullptr;
  if (offset != nullptr) *offset = at - it->first;
  return &a;
}

Allocation& PointerRuntime::require_range_locked(const void* p, std::size_t n, const char* what,
                                                 std::size_t* offset) {
  Allocation* a = find_locked(p, offset);
  if (a == nullptr) {
    throw PointerError(kInvalidPointer,
                       std::string(what) + ": " + hex(p) + " is not inside an allocation");
  }
  if (n > a->size() - *offset) {
    throw PointerError(kInvalidPointer, std::string(what) + ": bytes [" + std::to_string(*offset) +
                                            ", " + std::to_string(*offset + n) +
                                            ") leave the allocation at " + hex(a->mapping.app()) +
                                            " (" + std::to_string(a->size()) + " bytes)");
  }
  return *a;
}

bool PointerRuntime::find(const void* p, std::byte** base, std::size_t* size) {
  const std::lock_guard lock(mutex_);
  std::size_t offset = 0;
  Allocation* a = find_locked(p, &offset);
  if (a == nullptr) return false;
  if (base != nullptr) *base = a->mapping.app();
  if (size != nullptr) *size = a->size();
  return true;
}

std::byte* PointerRuntime::alloc(std::size_t size) {
  if (size == 0) throw PointerError(kInvalidValue, "um_alloc: size 0");
  const std::lock_guard lock(mutex_);
  Runtime& rt = runtime_locked();
  const bool batch = protocol_ == HostProtocol::batch;
  // Both sides start as zeros, so the host copy is current: read-only (lazy, rolling), or
  // read-write and dirty under batch, which tracks nothing and publishes everything.
  std::unique_ptr<Allocation> a;
  try {
    a = std::make_unique<Allocation>(size, block_size_,
                                     batch ? Protection::read_write : Protection::read);
  } catch (const std::system_error& e) {
    throw PointerError(kOutOfMemory,
                       std::string("um_alloc(") + std::to_string(size) + "): " + e.what());
  }
  const std::size_t blocks = (size + block_size_ - 1) / block_size_;
  a->state.assign(blocks, batch ? BlockState::dirty : BlockState::read_only);
  a->dirty = batch ? blocks : 0;
  a->publishing.resize(blocks);
  a->eager.assign(blocks, 0);
  a->pinned.assign(blocks, 0);
  a->unfilled.assign(blocks, 0);
  a->buffer = rt.create_buffer(size, "um_alloc@" + hex(a->mapping.app()));
  std::byte* app = a->mapping.app();
  register_range(app, a->mapping.mapped_size());
  allocations_[reinterpret_cast<std::uintptr_t>(app)] = std::move(a);
  return app;
}

void PointerRuntime::free(void* p) {
  const std::lock_guard lock(mutex_);
  auto it = allocations_.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == allocations_.end()) {
    std::size_t offset = 0;
    if (find_locked(p, &offset) != nullptr) {
      throw PointerError(kInvalidPointer, "um_free: " + hex(p) + " is " + std::to_string(offset) +
                                              " bytes inside an allocation, not its start");
    }
    throw PointerError(kInvalidPointer, "um_free: " + hex(p) + " is not an allocation");
  }
  Allocation& a = *it->second;
  for (Event& e : a.publishing) e.wait();
  runtime_locked().release_buffer(a.buffer);
  unregister_range(a.mapping.app());
  allocations_.erase(it);
}

// ---- copies without the application view ----

void PointerRuntime::read_direct_locked(Allocation& a, std::size_t offset, std::byte* out,
                                        std::size_t n) {
  while (n > 0) {
    const std::size_t b = offset / a.block_size;
    const std::size_t len = std::min(n, a.block_begin(b) + a.block_length(b) - offset);
    if (a.state[b] == BlockState::invalid) {
      runtime_locked().read_blocking(a.buffer, offset, std::span<std::byte>(out, len));
      stats_.bytes_direct += len;
    } else {
      std::memcpy(out, a.mapping.shadow() + offset, len);
    }
    offset += len;
    out += len;
    n -= len;
  }
}

void PointerRuntime::write_direct_locked(Allocation& a, std::size_t offset, const std::byte* in,
                                         std::size_t n) {
  while (n > 0) {
    const std::size_t b = offset / a.block_size;
    const std::size_t len = std::min(n, a.block_begin(b) + a.block_length(b) - offset);
    if (a.state[b] == BlockState::invalid) {
      // Straight to the devices' side; the host view stays invalid (GMAC's memcpy fast path).
      runtime_locked().write_blocking(a.buffer, offset, std::span<const std::byte>(in, len));
      stats_.bytes_direct += len;
    } else {
      make_writable_locked(a, b);
      std::memcpy(a.mapping.shadow() + offset, in, len);
    }
    offset += len;
    in += len;
    n -= len;
  }
}

void PointerRuntime::memcpy(void* dst, const void* src, std::size_t n) {
  if (n == 0) return;
  std::unique_lock lock(mutex_);
  std::size_t doff = 0;
  std::size_t soff = 0;
  Allocation* da = find_locked(dst, &doff);
  Allocation* sa = find_locked(src, &soff);
  if (da == nullptr && sa == nullptr) {
    lock.unlock();
    std::memcpy(dst, src, n);
    return;
  }
  if (da != nullptr) require_range_locked(dst, n, "um_memcpy destination", &doff);
  if (sa != nullptr) require_range_locked(src, n, "um_memcpy source", &soff);
  if (da == nullptr) {
    read_direct_locked(*sa, soff, static_cast<std::byte*>(dst), n);
  } else if (sa == nullptr) {
    write_direct_locked(*da, doff, static_cast<const std::byte*>(src), n);
  } else {
    std::vector<std::byte> staging(std::min(n, kChunk));
    for (std::size_t done = 0; done < n;) {
      const std::size_t len = std::min(staging.size(), n - done);
      read_direct_locked(*sa, soff + done, staging.data(), len);
      write_direct_locked(*da, doff + done, staging.data(), len);
      done += len;
    }
  }
}

void PointerRuntime::memset(void* dst, int value, std::size_t n) {
  if (n == 0) return;
  std::unique_lock lock(mutex_);
  std::size_t doff = 0;
  if (find_locked(dst, &doff) == nullptr) {
    lock.unlock();
    std::memset(dst, value, n);
    return;
  }
  Allocation& a = require_range_locked(dst, n, "um_memset", &doff);
  const std::vector<std::byte> fill(std::min(n, kChunk), static_cast<std::byte>(value));
  for (std::size_t done = 0; done < n;) {
    const std::size_t len = std::min(fill.size(), n - done);
    write_direct_locked(a, doff + done, fill.data(), len);
    done += len;
  }
}

// ---- kernels ----

std::unique_ptr<PointerProgram> PointerRuntime::build(const std::string& source,
                                                      const std::string& options) {
  auto p = std::make_unique<PointerProgram>();
  p->source = source;
  p->options = options;
  Runtime* rt = nullptr;
  {
    const std::lock_guard lock(mutex_);
    rt = &runtime_locked();
  }
  try {
    p->program = std::make_unique<Program>(*rt, source, options);
  } catch (const DeviceError& e) {
    throw PointerError(kBuild, std::string("um_program_create: ") + e.what());
  }
  return p;
}

void PointerRuntime::launch(PointerProgram& program, const std::string& kernel,
                            const NDRange& range, const std::vector<PointerArg>& args) {
  const std::lock_guard lock(mutex_);
  Runtime& rt = runtime_locked();
  // Resolve the pointers: allocation and offset per argument.
  std::vector<Allocation*> alloc_of(args.size(), nullptr);
  std::vector<std::size_t> offset_of(args.size(), 0);
  bool interior = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != PointerArg::Kind::pointer) continue;
    alloc_of[i] = find_locked(args[i].pointer, &offset_of[i]);
    if (alloc_of[i] == nullptr) {
      throw PointerError(kInvalidPointer, "um_launch: argument " + std::to_string(i) +
                                              " of kernel '" + kernel + "' (" +
                                              hex(args[i].pointer) +
                                              ") is not a pointer into an allocation");
    }
    interior = interior || offset_of[i] != 0;
  }
  // Release (ADSM section 3.3): host writes become visible to the kernel.
  std::set<Allocation*> used(alloc_of.begin(), alloc_of.end());
  used.erase(nullptr);
  auto publish_dirty = [&](Allocation& a) {
    for (std::size_t b = 0; b < a.blocks(); ++b) {
      a.eager[b] = 0;
      if (a.state[b] == BlockState::dirty) publish_locked(a, b);
    }
    a.dirty_order.clear();
  };
  if (protocol_ == HostProtocol::batch) {
    for (auto& [base, a] : allocations_) publish_dirty(*a);
  } else {
    for (Allocation* a : used) publish_dirty(*a);
  }
  // The kernel's arguments: buffer (+ offset in the rewritten variant), values, __local sizes.
  Program* target = program.program.get();
  std::vector<Arg> launch_args;
  std::vector<Allocation*> alloc_of_launch_arg;
  const std::vector<bool>* rewritten = nullptr;
  if (interior) {
    if (!program.offset_program) {
      try {
        program.rewritten = rewrite_for_offsets(program.source);
      } catch (const PreconditionError& e) {
        throw PreconditionError(std::string("um_launch: cannot pass interior pointers: ") +
                                e.what());
      }
      try {
        program.offset_program =
            std::make_unique<Program>(rt, program.rewritten.source, program.options);
      } catch (const DeviceError& e) {
        throw PointerError(kBuild, "um_launch: building kernel '" + kernel +
                                       "' for interior pointers: " + e.what());
      }
    }
    target = program.offset_program.get();
    auto it = program.rewritten.global_pointers.find(kernel);
    if (it == program.rewritten.global_pointers.end()) {
      throw PointerError(kLaunch, "um_launch: the program has no kernel '" + kernel + "'");
    }
    rewritten = &it->second;
    if (rewritten->size() != args.size()) {
      throw PointerError(kLaunch, "um_launch: kernel '" + kernel + "' takes " +
                                      std::to_string(rewritten->size()) + " arguments, " +
                                      std::to_string(args.size()) + " given");
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const PointerArg& a = args[i];
    if (rewritten != nullptr && (*rewritten)[i] != (a.kind == PointerArg::Kind::pointer)) {
      throw PointerError(kLaunch, "um_launch: argument " + std::to_string(i) + " of kernel '" +
                                      kernel + "' must be " +
                                      ((*rewritten)[i] ? "a pointer" : "a value or __local size"));
    }
    switch (a.kind) {
      case PointerArg::Kind::pointer:
        launch_args.push_back(Arg::buffer(alloc_of[i]->buffer));
        alloc_of_launch_arg.push_back(alloc_of[i]);
        if (rewritten != nullptr) {
          launch_args.push_back(Arg::scalar(static_cast<std::uint64_t>(offset_of[i])));
          alloc_of_launch_arg.push_back(nullptr);
        }
        break;
      case PointerArg::Kind::value: {
        Arg v;
        v.kind = Arg::Kind::scalar;
        const auto* bytes = static_cast<const std::byte*>(a.pointer);
        v.scalar_bytes.assign(bytes, bytes + a.size);
        launch_args.push_back(std::move(v));
        alloc_of_launch_arg.push_back(nullptr);
        break;
      }
      case PointerArg::Kind::local:
        launch_args.push_back(Arg::local(a.size));
        alloc_of_launch_arg.push_back(nullptr);
        break;
    }
  }
  std::shared_ptr<const LaunchPlan> plan;
  try {
    target->core().launch(kernel, range, launch_args, launch_options_locked(), &plan);
  } catch (const PreconditionError& e) {
    throw PointerError(kLaunch, std::string("um_launch: ") + e.what());
  } catch (const OutOfDeviceMemory& e) {
    throw PointerError(kOutOfMemory, std::string("um_launch: ") + e.what());
  } catch (const DeviceError& e) {
    throw PointerError(kDevice, std::string("um_launch: ") + e.what());
  }
  ++stats_.launches;
  stats_.partitions += plan ? plan->partitions.size() : 1;
  // What the kernel may write is stale on the host now: invalidate those blocks (all blocks of
  // every allocation under batch, which tracks nothing).
  if (protocol_ == HostProtocol::batch) {
    for (auto& [base, a] : allocations_) {
      for (std::size_t b = 0; b < a->blocks(); ++b) invalidate_locked(*a, b);
    }
    return;
  }
  std::map<Allocation*, IntervalSet> written;
  for (std::size_t i = 0; i < launch_args.size(); ++i) {
    Allocation* a = alloc_of_launch_arg[i];
    if (a == nullptr) continue;
    bool known = plan != nullptr && !plan->partitions.empty();
    if (known) {
      for (const LaunchPartition& part : plan->partitions) {
        auto it = part.accesses.find(static_cast<std::uint32_t>(i));
        if (it == part.accesses.end()) {
          known = false;
          break;
        }
        written[a] = written[a].unite(it->second.written());
      }
    }
    if (!known) written[a] = IntervalSet(Interval(0, a->size()));
  }
  for (auto& [a, bytes] : written) {
    for (const Interval& iv : bytes) {
      if (iv.empty()) continue;
      const std::size_t first = iv.begin / a->block_size;
      const std::size_t last = (iv.end - 1) / a->block_size;
      for (std::size_t b = first; b <= last && b < a->blocks(); ++b) invalidate_locked(*a, b);
    }
  }
}

void PointerRuntime::sync() {
  const std::lock_guard lock(mutex_);
  if (!runtime_) return;
  try {
    runtime_->finish();
  } catch (const DeviceError& e) {
    throw PointerError(kDevice, std::string("um_sync: ") + e.what());
  }
  for (auto& [base, a] : allocations_) {
    for (Event& e : a->publishing) e = Event();
    if (protocol_ != HostProtocol::batch) continue;
    // Batch: everything comes back at sync, and the host may write anything without faulting.
    for (std::size_t b = 0; b < a->blocks(); ++b) {
      if (a->state[b] == BlockState::invalid) fetch_locked(*a, b);
      set_state_locked(*a, b, BlockState::dirty);
    }
  }
}

// ---- host accesses ----

std::byte* PointerRuntime::prepare_host_read(const void* p, std::size_t n) {
  const std::lock_guard lock(mutex_);
  std::size_t offset = 0;
  if (find_locked(p, &offset) == nullptr) return nullptr;
  Allocation& a = require_range_locked(p, n, "I/O from shared memory", &offset);
  if (n > 0) {
    for (std::size_t b = offset / a.block_size; b <= (offset + n - 1) / a.block_size; ++b) {
      make_readable_locked(a, b);
    }
  }
  return a.mapping.shadow() + offset;
}

std::byte* PointerRuntime::prepare_host_write(const void* p, std::size_t n) {
  const std::lock_guard lock(mutex_);
  std::size_t offset = 0;
  if (find_locked(p, &offset) == nullptr) return nullptr;
  Allocation& a = require_range_locked(p, n, "I/O into shared memory", &offset);
  if (n > 0) {
    for (std::size_t b = offset / a.block_size; b <= (offset + n - 1) / a.block_size; ++b) {
      // An invalid block the call covers whole is not fetched: the call overwrites it
      // (finish_host_write fetches what a short read leaves out).
      const bool whole = a.block_begin(b) >= offset &&
                         a.block_begin(b) + a.block_length(b) <= offset + n &&
                         a.state[b] == BlockState::invalid && a.pinned[b] == 0;
      ++a.pinned[b];  // the call writes the shadow view: no eager write-back meanwhile
      if (whole) a.unfilled[b] = 1;
      make_writable_locked(a, b, false, !whole);
    }
  }
  return a.mapping.shadow() + offset;
}

void PointerRuntime::finish_host_write(const void* p, std::size_t n, std::size_t written) {
  const std::lock_guard lock(mutex_);
  std::size_t offset = 0;
  Allocation* a = find_locked(p, &offset);
  if (a == nullptr || n == 0) return;
  const std::size_t filled_end = offset + std::min(written, n);
  for (std::size_t b = offset / a->block_size; b <= (offset + n - 1) / a->block_size; ++b) {
    --a->pinned[b];
    if (a->unfilled[b] == 0) continue;
    a->unfilled[b] = 0;
    const std::size_t begin = std::max(a->block_begin(b), filled_end);
    const std::size_t end = a->block_begin(b) + a->block_length(b);
    if (begin >= end || a->state[b] == BlockState::invalid) continue;
    // The call wrote less than the whole block: the rest comes from the devices' side.
    runtime_locked().read_blocking(a->buffer, begin,
                                   std::span<std::byte>(a->mapping.shadow() + begin, end - begin));
    stats_.bytes_fetched += end - begin;
  }
  if (protocol_ == HostProtocol::rolling) roll_locked(*a);
}

void PointerRuntime::invalidate_host(const void* p, std::size_t n) {
  const std::lock_guard lock(mutex_);
  std::size_t offset = 0;
  Allocation& a = require_range_locked(p, n, "invalidate_host", &offset);
  if (n == 0) return;
  for (std::size_t b = offset / a.block_size; b <= (offset + n - 1) / a.block_size; ++b) {
    invalidate_locked(a, b);
  }
}

bool PointerRuntime::handle_fault(std::byte* address, FaultKind kind) {
  const std::lock_guard lock(mutex_);
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  auto it = allocations_.upper_bound(at);
  if (it == allocations_.begin()) return false;
  --it;
  Allocation& a = *it->second;
  if (at >= it->first + a.mapping.mapped_size()) return false;
  // The tail of the last page belongs to the last block.
  const std::size_t b = std::min((at - it->first) / a.block_size, a.blocks() - 1);
  ++stats_.faults;
  const bool write = kind == FaultKind::write ||
                     (kind == FaultKind::unknown && a.state[b] == BlockState::read_only);
  if (write) {
    ++stats_.write_faults;
    make_writable_locked(a, b);
  } else {
    ++stats_.read_faults;
    make_readable_locked(a, b);
  }
  return true;
}

PointerStats PointerRuntime::stats() {
  const std::lock_guard lock(mutex_);
  PointerStats s = stats_;
  if (runtime_) s.device_bytes = runtime_->stats().total_bytes() - device_bytes_at_reset_;
  return s;
}

void PointerRuntime::reset_stats() {
  const std::lock_guard lock(mutex_);
  stats_ = PointerStats{};
  device_bytes_at_reset_ = runtime_ ? runtime_->stats().total_bytes() : 0;
}

BlockState PointerRuntime::block_state(const void* p) {
  const std::lock_guard lock(mutex_);
  std::size_t offset = 0;
  Allocation* a = find_locked(p, &offset);
  if (a == nullptr) throw PointerError(kInvalidPointer, "block_state: not shared memory");
  return a->state[offset / a->block_size];
}

}  // namespace unimem::pointer
