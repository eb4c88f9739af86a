// The C API (<unimem/unimem.h>): argument checks, then PointerRuntime (pointer_runtime.hpp);
// every exception becomes an um_error code and the calling thread's error text.

#include <unimem/unimem.h>

#include <cerrno>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include <unimem/errors.hpp>
#include "pointer/pointer_runtime.hpp"

struct um_program_s {
  std::unique_ptr<unimem::pointer::PointerProgram> program;
};

namespace {

using unimem::pointer::PointerError;
using unimem::pointer::PointerRuntime;

thread_local um_error t_error = UM_SUCCESS;
thread_local std::string t_text;

um_error fail(um_error code, const std::string& text) {
  t_error = code;
  t_text = text;
  return code;
}

um_error ok() {
  t_error = UM_SUCCESS;
  t_text.clear();
  return UM_SUCCESS;
}

// Runs f, turning whatever it throws into an um_error and the thread's error text.
template <typename F>
um_error guarded(F&& f) {
  try {
    f();
    return ok();
  } catch (const PointerError& e) {
    return fail(static_cast<um_error>(e.code()), e.what());
  } catch (const unimem::OutOfDeviceMemory& e) {
    return fail(UM_ERROR_OUT_OF_MEMORY, e.what());
  } catch (const unimem::DeviceError& e) {
    return fail(UM_ERROR_DEVICE, e.what());
  } catch (const unimem::PreconditionError& e) {
    return fail(UM_ERROR_INVALID_VALUE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(UM_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(UM_ERROR_INTERNAL, e.what());
  }
}

}  // namespace

extern "C" {

um_error um_last_error(void) { return t_error; }
const char* um_last_error_text(void) { return t_text.c_str(); }

const char* um_error_name(um_error code) {
  switch (code) {
    case UM_SUCCESS:
      return "UM_SUCCESS";
    case UM_ERROR_INVALID_VALUE:
      return "UM_ERROR_INVALID_VALUE";
    case UM_ERROR_INVALID_POINTER:
      return "UM_ERROR_INVALID_POINTER";
    case UM_ERROR_OUT_OF_MEMORY:
      return "UM_ERROR_OUT_OF_MEMORY";
    case UM_ERROR_BUILD:
      return "UM_ERROR_BUILD";
    case UM_ERROR_LAUNCH:
      return "UM_ERROR_LAUNCH";
    case UM_ERROR_DEVICE:
      return "UM_ERROR_DEVICE";
    case UM_ERROR_IO:
      return "UM_ERROR_IO";
    case UM_ERROR_INTERNAL:
      return "UM_ERROR_INTERNAL";
  }
  return "UM_ERROR_UNKNOWN";
}

um_error um_set_protocol(um_protocol protocol) {
  return guarded([&] {
    if (protocol != UM_PROTOCOL_BATCH && protocol != UM_PROTOCOL_LAZY &&
        protocol != UM_PROTOCOL_ROLLING) {
      throw PointerError(UM_ERROR_INVALID_VALUE, "um_set_protocol: unknown protocol " +
                                                     std::to_string(static_cast<int>(protocol)));
    }
    PointerRuntime::instance().set_protocol(static_cast<unimem::pointer::HostProtocol>(protocol));
  });
}

um_protocol um_get_protocol(void) {
  um_protocol p = UM_PROTOCOL_LAZY;
  guarded([&] { p = static_cast<um_protocol>(PointerRuntime::instance().protocol()); });
  return p;
}

um_error um_parse_protocol(const char* text, um_protocol* out) {
  return guarded([&] {
    const auto p = text == nullptr ? std::nullopt : unimem::pointer::parse_host_protocol(text);
    if (!p || out == nullptr) {
      throw PointerError(UM_ERROR_INVALID_VALUE, std::string("um_parse_protocol: '") +
                                                     (text ? text : "(null)") +
                                                     "' is not batch, lazy or rolling");
    }
    *out = static_cast<um_protocol>(*p);
  });
}

um_error um_set_block_size(size_t bytes) {
  return guarded([&] { PointerRuntime::instance().set_block_size(bytes); });
}

size_t um_get_block_size(void) {
  size_t s = 0;
  guarded([&] { s = PointerRuntime::instance().block_size(); });
  return s;
}

um_error um_set_devices(size_t count) {
  return guarded([&] { PointerRuntime::instance().set_devices(count); });
}

size_t um_device_count(void) {
  size_t n = 0;
  guarded([&] { n = PointerRuntime::instance().device_count(); });
  return n;
}

void* um_alloc(size_t size) {
  void* p = nullptr;
  guarded([&] { p = PointerRuntime::instance().alloc(size); });
  return p;
}

um_error um_free(void* ptr) {
  if (ptr == nullptr) return ok();
  return guarded([&] { PointerRuntime::instance().free(ptr); });
}

um_error um_memcpy(void* dst, const void* src, size_t n) {
  return guarded([&] {
    if (n > 0 && (dst == nullptr || src == nullptr)) {
      throw PointerError(UM_ERROR_INVALID_POINTER, "um_memcpy: a NULL pointer");
    }
    PointerRuntime::instance().memcpy(dst, src, n);
  });
}

um_error um_memset(void* dst, int value, size_t n) {
  return guarded([&] {
    if (n > 0 && dst == nullptr) {
      throw PointerError(UM_ERROR_INVALID_POINTER, "um_memset: a NULL pointer");
    }
    PointerRuntime::instance().memset(dst, value, n);
  });
}

int um_is_shared(const void* ptr, void** base, size_t* size) {
  if (!unimem::pointer::in_registered_range(ptr)) return 0;
  std::byte* b = nullptr;
  std::size_t s = 0;
  bool found = false;
  guarded([&] { found = PointerRuntime::instance().find(ptr, &b, &s); });
  if (!found) return 0;
  if (base != nullptr) *base = b;
  if (size != nullptr) *size = s;
  return 1;
}

um_program um_program_create(const char* source, const char* options) {
  um_program out = nullptr;
  guarded([&] {
    if (source == nullptr) {
      throw PointerError(UM_ERROR_INVALID_VALUE, "um_program_create: source is NULL");
    }
    auto p = std::make_unique<um_program_s>();
    p->program = PointerRuntime::instance().build(source, options ? options : "");
    out = p.release();
  });
  return out;
}

um_error um_program_release(um_program program) {
  if (program == nullptr) return ok();
  return guarded([&] {
    um_sync();  // the Program waits for its launches, but faults must not see it half gone
    delete program;
  });
}

um_error um_launch(um_program program, const char* kernel, const um_range* range,
                   const um_arg* args, size_t arg_count) {
  return guarded([&] {
    if (program == nullptr || kernel == nullptr || range == nullptr ||
        (arg_count > 0 && args == nullptr)) {
      throw PointerError(UM_ERROR_INVALID_VALUE,
                         "um_launch: program, kernel, range and args must not be NULL");
    }
    if (range->dims < 1 || range->dims > 3) {
      throw PointerError(UM_ERROR_INVALID_VALUE, std::string("um_launch: kernel '") + kernel +
                                                     "': dims " + std::to_string(range->dims) +
                                                     " is not 1, 2 or 3");
    }
    unimem::NDRange r;
    r.dims = range->dims;
    for (unsigned d = 0; d < 3; ++d) {
      const bool used = d < range->dims;
      r.global[d] = used ? range->global[d] : 1;
      r.local[d] = used ? range->local[d] : 0;
      r.offset[d] = used ? range->offset[d] : 0;
    }
    std::vector<unimem::pointer::PointerArg> a(arg_count);
    for (size_t i = 0; i < arg_count; ++i) {
      switch (args[i].kind) {
        case UM_ARG_POINTER:
          a[i].kind = unimem::pointer::PointerArg::Kind::pointer;
          break;
        case UM_ARG_VALUE:
          a[i].kind = unimem::pointer::PointerArg::Kind::value;
          if (args[i].pointer == nullptr || args[i].size == 0) {
            throw PointerError(UM_ERROR_INVALID_VALUE, "um_launch: value argument " +
                                                           std::to_string(i) + " of kernel '" +
                                                           kernel + "' has no bytes");
          }
          break;
        case UM_ARG_LOCAL:
          a[i].kind = unimem::pointer::PointerArg::Kind::local;
          break;
        default:
          throw PointerError(UM_ERROR_INVALID_VALUE, "um_launch: argument " + std::to_string(i) +
                                                         " of kernel '" + kernel +
                                                         "' has an unknown kind");
      }
      a[i].pointer = args[i].pointer;
      a[i].size = args[i].size;
    }
    PointerRuntime::instance().launch(*program->program, kernel, r, a);
  });
}

um_error um_sync(void) {
  return guarded([&] { PointerRuntime::instance().sync(); });
}

um_error um_get_stats(um_stats* out) {
  return guarded([&] {
    if (out == nullptr) throw PointerError(UM_ERROR_INVALID_VALUE, "um_get_stats: out is NULL");
    const auto s = PointerRuntime::instance().stats();
    *out =
        um_stats{s.faults,       s.read_faults,  s.write_faults, s.bytes_fetched, s.bytes_published,
                 s.bytes_direct, s.eager_blocks, s.device_bytes, s.launches,      s.partitions};
  });
}

um_error um_reset_stats(void) {
  return guarded([&] { PointerRuntime::instance().reset_stats(); });
}

}  // extern "C"
