// Command queue, memory object, program and kernel entry points of the unimem OpenCL platform.
// A cl_mem is a shared buffer of the platform's Runtime; a cl_program is a unimem::Program built
// for every underlying device; a cl_kernel keeps its arguments until an NDRange launches it.

#include <algorithm>
#include <cstring>

#include <unimem/errors.hpp>
#include "api/program_core.hpp"
#include "device/opencl/opencl_program.hpp"
#include "platform/entry_points.hpp"

namespace unimem::platform {

namespace {

// The vendor's kernel behind `name` of `built` on runtime device `device`.
const opencl::OpenCLKernel& underlying_kernel(const Program& built, const std::string& name,
                                              std::size_t device) {
  const auto compiled = built.core().kernel_for(name, device);
  // The program keeps its kernels alive (ProgramCore caches them), so the reference stays valid.
  return dynamic_cast<const opencl::OpenCLKernel&>(*compiled);
}

bool context_has(cl_context context, cl_device_id device) {
  return std::find(context->devices.begin(), context->devices.end(), device) !=
         context->devices.end();
}

}  // namespace

// ---- command queues ------------------------------------------------------------------------

cl_command_queue CL_API_CALL CreateCommandQueue(cl_context context, cl_device_id device,
                                                cl_command_queue_properties properties,
                                                cl_int* errcode_ret) {
  if (!is_live(context, ObjectKind::context)) {
    set_error(errcode_ret, CL_INVALID_CONTEXT);
    return nullptr;
  }
  if (!is_live(device, ObjectKind::device) || !context_has(context, device)) {
    set_error(errcode_ret, CL_INVALID_DEVICE);
    return nullptr;
  }
  if ((properties & ~cl_command_queue_properties{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE |
                                                 CL_QUEUE_PROFILING_ENABLE}) != 0) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  if ((properties & CL_QUEUE_PROFILING_ENABLE) != 0) {
    try {
      PlatformState::get().time_devices();
    } catch (...) {
      set_error(errcode_ret, error_of_current_exception(context, CL_OUT_OF_RESOURCES));
      return nullptr;
    }
  }
  auto* q = make_object<_cl_command_queue>(ObjectKind::queue);
  q->context = context;
  q->device = device;
  q->properties = properties;
  retain(context->header);
  set_error(errcode_ret, CL_SUCCESS);
  return q;
}

cl_int CL_API_CALL RetainCommandQueue(cl_command_queue queue) {
  if (!is_live(queue, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  retain(queue->header);
  return CL_SUCCESS;
}

cl_int CL_API_CALL ReleaseCommandQueue(cl_command_queue queue) {
  if (!is_live(queue, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  release_queue(queue);
  return CL_SUCCESS;
}

cl_int CL_API_CALL GetCommandQueueInfo(cl_command_queue queue, cl_command_queue_info param,
                                       size_t size, void* value, size_t* size_ret) {
  if (!is_live(queue, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  switch (param) {
    case CL_QUEUE_CONTEXT:
      return answer_value(queue->context, size, value, size_ret);
    case CL_QUEUE_DEVICE:
      return answer_value(queue->device, size, value, size_ret);
    case CL_QUEUE_REFERENCE_COUNT:
      return answer_value(queue->header.references.load(), size, value, size_ret);
    case CL_QUEUE_PROPERTIES:
      return answer_value(queue->properties, size, value, size_ret);
    default:
      return CL_INVALID_VALUE;
  }
}

cl_int CL_API_CALL SetCommandQueueProperty(cl_command_queue queue, cl_command_queue_properties,
                                           cl_bool, cl_command_queue_properties*) {
  if (!is_live(queue, ObjectKind::queue)) return CL_INVALID_COMMAND_QUEUE;
  return CL_INVALID_OPERATION;  // deprecated in OpenCL 1.1; not supported
}

// ---- memory objects ------------------------------------------------------------------------

cl_mem CL_API_CALL CreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                                cl_int* errcode_ret) {
  if (!is_live(context, ObjectKind::context)) {
    set_error(errcode_ret, CL_INVALID_CONTEXT);
    return nullptr;
  }
  if (flags == 0) flags = CL_MEM_READ_WRITE;
  constexpr cl_mem_flags known = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY |
                                 CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR |
                                 CL_MEM_COPY_HOST_PTR | CL_MEM_HOST_WRITE_ONLY |
                                 CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;
  const auto count = [&](cl_mem_flags f) { return std::popcount(flags & f); };
  const bool use = (flags & CL_MEM_USE_HOST_PTR) != 0;
  const bool copy = (flags & CL_MEM_COPY_HOST_PTR) != 0;
  if ((flags & ~known) != 0 ||
      count(CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY) > 1 ||
      count(CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) > 1 ||
      (use && (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)) != 0)) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  if ((host_ptr == nullptr) == (use || copy)) {
    set_error(errcode_ret, CL_INVALID_HOST_PTR);
    return nullptr;
  }
  if (size == 0) {
    set_error(errcode_ret, CL_INVALID_BUFFER_SIZE);
    return nullptr;
  }
  try {
    PlatformState& state = PlatformState::get();
    cl_ulong max_alloc = 0;
    GetDeviceInfo(context->devices[0], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc,
                  nullptr);
    if (size > max_alloc) {
      set_error(errcode_ret, CL_INVALID_BUFFER_SIZE);
      return nullptr;
    }
    Runtime& rt = state.runtime();
    const BufferId id = rt.create_buffer(size, "cl_mem");
    if (use || copy) {
      rt.write_blocking(id, 0, std::span(static_cast<const std::byte*>(host_ptr), size));
    }
    auto* m = make_object<_cl_mem>(ObjectKind::mem);
    m->context = context;
    m->flags = flags;
    m->size = size;
    m->host_ptr = use ? host_ptr : nullptr;
    m->buffer = id;
    retain(context->header);
    set_error(errcode_ret, CL_SUCCESS);
    return m;
  } catch (...) {
    set_error(errcode_ret, error_of_current_exception(context, CL_MEM_OBJECT_ALLOCATION_FAILURE));
    return nullptr;
  }
}

cl_mem CL_API_CALL CreateSubBuffer(cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type type,
                                   const void* info, cl_int* errcode_ret) {
  if (!is_live(buffer, ObjectKind::mem) || buffer->parent != nullptr) {
    set_error(errcode_ret, CL_INVALID_MEM_OBJECT);
    return nullptr;
  }
  if (type != CL_BUFFER_CREATE_TYPE_REGION || info == nullptr ||
      (flags & (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)) != 0) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  const auto* region = static_cast<const cl_buffer_region*>(info);
  if (region->size == 0) {
    set_error(errcode_ret, CL_INVALID_BUFFER_SIZE);
    return nullptr;
  }
  if (region->origin > buffer->size || region->size > buffer->size - region->origin) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  cl_uint align_bits = 0;
  GetDeviceInfo(buffer->context->devices[0], CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits,
                &align_bits, nullptr);
  if (align_bits != 0 && region->origin % (align_bits / 8) != 0) {
    set_error(errcode_ret, CL_MISALIGNED_SUB_BUFFER_OFFSET);
    return nullptr;
  }
  auto* m = make_object<_cl_mem>(ObjectKind::mem);
  m->context = buffer->context;
  m->flags = flags == 0 ? (buffer->flags & ~cl_mem_flags{CL_MEM_COPY_HOST_PTR}) : flags;
  m->size = region->size;
  m->host_ptr =
      buffer->host_ptr ? static_cast<std::byte*>(buffer->host_ptr) + region->origin : nullptr;
  m->parent = buffer;
  m->origin = region->origin;
  m->buffer = buffer->buffer;
  retain(buffer->header);
  retain(buffer->context->header);
  set_error(errcode_ret, CL_SUCCESS);
  return m;
}

cl_int CL_API_CALL RetainMemObject(cl_mem mem) {
  if (!is_live(mem, ObjectKind::mem)) return CL_INVALID_MEM_OBJECT;
  retain(mem->header);
  return CL_SUCCESS;
}

cl_int CL_API_CALL ReleaseMemObject(cl_mem mem) {
  if (!is_live(mem, ObjectKind::mem)) return CL_INVALID_MEM_OBJECT;
  release_mem(mem);
  return CL_SUCCESS;
}

cl_int CL_API_CALL SetMemObjectDestructorCallback(cl_mem mem,
                                                  void(CL_CALLBACK* notify)(cl_mem, void*),
                                                  void* user_data) {
  if (!is_live(mem, ObjectKind::mem)) return CL_INVALID_MEM_OBJECT;
  if (notify == nullptr) return CL_INVALID_VALUE;
  std::lock_guard lock(mem->mutex);
  mem->destructor_callbacks.emplace_back(notify, user_data);
  return CL_SUCCESS;
}

cl_int CL_API_CALL GetMemObjectInfo(cl_mem mem, cl_mem_info param, size_t size, void* value,
                                    size_t* size_ret) {
  if (!is_live(mem, ObjectKind::mem)) return CL_INVALID_MEM_OBJECT;
  switch (param) {
    case CL_MEM_TYPE:
      return answer_value(cl_mem_object_type{CL_MEM_OBJECT_BUFFER}, size, value, size_ret);
    case CL_MEM_FLAGS:
      return answer_value(mem->flags, size, value, size_ret);
    case CL_MEM_SIZE:
      return answer_value(mem->size, size, value, size_ret);
    case CL_MEM_HOST_PTR:
      return answer_value(mem->host_ptr, size, value, size_ret);
    case CL_MEM_MAP_COUNT:
      return answer_value(mem->map_count.load(), size, value, size_ret);
    case CL_MEM_REFERENCE_COUNT:
      return answer_value(mem->header.references.load(), size, value, size_ret);
    case CL_MEM_CONTEXT:
      return answer_value(mem->context, size, value, size_ret);
    case CL_MEM_ASSOCIATED_MEMOBJECT:
      return answer_value(mem->parent, size, value, size_ret);
    case CL_MEM_OFFSET:
      return answer_value(mem->origin, size, value, size_ret);
    default:
      return CL_INVALID_VALUE;
  }
}

// ---- programs ------------------------------------------------------------------------------

cl_program CL_API_CALL CreateProgramWithSource(cl_context context, cl_uint count,
                                               const char** strings, const size_t* lengths,
                                               cl_int* errcode_ret) {
  if (!is_live(context, ObjectKind::context)) {
    set_error(errcode_ret, CL_INVALID_CONTEXT);
    return nullptr;
  }
  if (count == 0 || strings == nullptr) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  std::string source;
  for (cl_uint i = 0; i < count; ++i) {
    if (strings[i] == nullptr) {
      set_error(errcode_ret, CL_INVALID_VALUE);
      return nullptr;
    }
    if (lengths != nullptr && lengths[i] != 0) {
      source.append(strings[i], lengths[i]);
    } else {
      source.append(strings[i]);
    }
  }
  auto* p = make_object<_cl_program>(ObjectKind::program);
  p->context = context;
  p->source = std::move(source);
  retain(context->header);
  set_error(errcode_ret, CL_SUCCESS);
  return p;
}

cl_program CL_API_CALL CreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                               const cl_device_id* devices, const size_t* lengths,
                                               const unsigned char** binaries,
                                               cl_int* binary_status, cl_int* errcode_ret) {
  if (!is_live(context, ObjectKind::context)) {
    set_error(errcode_ret, CL_INVALID_CONTEXT);
    return nullptr;
  }
  if (num_devices == 0 || devices == nullptr || lengths == nullptr || binaries == nullptr) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  for (cl_uint i = 0; i < num_devices; ++i) {
    if (!is_live(devices[i], ObjectKind::device) || !context_has(context, devices[i])) {
      set_error(errcode_ret, CL_INVALID_DEVICE);
      return nullptr;
    }
    if (lengths[i] == 0 || binaries[i] == nullptr) {
      set_error(errcode_ret, CL_INVALID_VALUE);
      return nullptr;
    }
  }
  // unimem reads each kernel's source to learn its accesses: binaries cannot be analysed.
  for (cl_uint i = 0; binary_status != nullptr && i < num_devices; ++i) {
    binary_status[i] = CL_INVALID_BINARY;
  }
  set_error(errcode_ret, CL_INVALID_BINARY);
  return nullptr;
}

cl_program CL_API_CALL CreateProgramWithBuiltInKernels(cl_context context, cl_uint,
                                                       const cl_device_id*, const char*,
                                                       cl_int* errcode_ret) {
  set_error(errcode_ret,
            is_live(context, ObjectKind::context) ? CL_INVALID_VALUE : CL_INVALID_CONTEXT);
  return nullptr;  // CL_DEVICE_BUILT_IN_KERNELS is empty
}

cl_int CL_API_CALL RetainProgram(cl_program program) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  retain(program->header);
  return CL_SUCCESS;
}

cl_int CL_API_CALL ReleaseProgram(cl_program program) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  release_program(program);
  return CL_SUCCESS;
}

namespace {

// Checks a device list of a build/compile/link call against the program's context.
cl_int check_devices(cl_context context, cl_uint num_devices, const cl_device_id* devices) {
  if ((num_devices == 0) != (devices == nullptr)) return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_devices; ++i) {
    if (!is_live(devices[i], ObjectKind::device) || !context_has(context, devices[i])) {
      return CL_INVALID_DEVICE;
    }
  }
  return CL_SUCCESS;
}

// Builds `text` (program->source when null) with `build_options` (the user's `options` when
// null) for the platform's runtime; the program reports the user's options.
cl_int build(cl_program program, const char* options, cl_int failure,
             const std::string* text = nullptr, const std::string* build_options = nullptr) {
  std::lock_guard lock(program->mutex);
  if (program->kernels_attached > 0) return CL_INVALID_OPERATION;
  program->options = options ? options : "";
  program->status = CL_BUILD_IN_PROGRESS;
  program->built.reset();
  program->kernel_names.clear();
  program->unit.reset();
  try {
    PlatformState& state = PlatformState::get();
    // Program adds -cl-kernel-arg-info to every build: the platform reads each parameter's
    // address space from it to tell buffers from scalars.
    auto built = std::make_shared<Program>(state.runtime(), text ? *text : program->source,
                                           build_options ? *build_options : program->options);
    built->set_log([](const std::string& message) { say(message); });
    program->kernel_names = built->core().compiled(0).kernel_names();
    program->built = std::move(built);
    program->status = CL_BUILD_SUCCESS;
    program->log.clear();
    program->compiled_only = false;
    return CL_SUCCESS;
  } catch (const std::exception& e) {
    program->status = CL_BUILD_ERROR;
    program->log = e.what();
    // Options the vendor's compiler refuses are the spec's own error (of a build or a link).
    const auto* device_error = dynamic_cast<const DeviceError*>(&e);
    if (device_error != nullptr && device_error->code() == CL_INVALID_BUILD_OPTIONS) {
      return failure == CL_LINK_PROGRAM_FAILURE ? CL_INVALID_LINKER_OPTIONS
                                                : CL_INVALID_BUILD_OPTIONS;
    }
    return failure;
  }
}

}  // namespace

cl_int CL_API_CALL BuildProgram(cl_program program, cl_uint num_devices,
                                const cl_device_id* devices, const char* options,
                                void(CL_CALLBACK* notify)(cl_program, void*), void* user_data) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  if (notify == nullptr && user_data != nullptr) return CL_INVALID_VALUE;
  if (const cl_int e = check_devices(program->context, num_devices, devices); e != CL_SUCCESS) {
    return e;
  }
  const cl_int result = build(program, options, CL_BUILD_PROGRAM_FAILURE);
  if (notify != nullptr) notify(program, user_data);
  return result;
}

cl_int CL_API_CALL CompileProgram(cl_program program, cl_uint num_devices,
                                  const cl_device_id* devices, const char* options,
                                  cl_uint num_headers, const cl_program* headers,
                                  const char** header_names,
                                  void(CL_CALLBACK* notify)(cl_program, void*), void* user_data) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  if (notify == nullptr && user_data != nullptr) return CL_INVALID_VALUE;
  if ((num_headers == 0) != (headers == nullptr) ||
      (num_headers == 0) != (header_names == nullptr)) {
    return CL_INVALID_VALUE;
  }
  if (const cl_int e = check_devices(program->context, num_devices, devices); e != CL_SUCCESS) {
    return e;
  }
  std::vector<std::pair<std::string, std::string>> header_texts;
  for (cl_uint i = 0; i < num_headers; ++i) {
    if (!is_live(headers[i], ObjectKind::program)) return CL_INVALID_PROGRAM;
    if (header_names[i] == nullptr) return CL_INVALID_VALUE;
    std::lock_guard lock(headers[i]->mutex);
    header_texts.emplace_back(header_names[i], headers[i]->source);
  }
  std::shared_ptr<const HeaderDirectory> directory;
  std::string source;
  {
    std::lock_guard lock(program->mutex);
    if (program->kernels_attached > 0) return CL_INVALID_OPERATION;
    source = program->source;
    if (!header_texts.empty()) {
      try {
        directory = std::make_shared<const HeaderDirectory>(header_texts);
      } catch (const std::exception& e) {
        program->status = CL_BUILD_ERROR;
        program->log = e.what();
        return CL_COMPILE_PROGRAM_FAILURE;
      }
    }
  }
  auto unit = std::make_shared<const CompiledUnit>(
      compile_unit(source, options ? options : "", std::move(directory)));
  std::vector<cl_device_id> underlying;
  PlatformState& state = PlatformState::get();
  for (std::size_t i = 0; i < state.underlying_count(); ++i) {
    underlying.push_back(state.underlying(i));
  }
  std::string log;
  const cl_int result = vendor_compile(underlying, unit->text, unit->options, log);
  {
    std::lock_guard lock(program->mutex);
    if (program->kernels_attached > 0) return CL_INVALID_OPERATION;
    program->options = options ? options : "";
    program->built.reset();
    program->kernel_names.clear();
    program->log = std::move(log);
    program->status = result == CL_SUCCESS ? CL_BUILD_SUCCESS : CL_BUILD_ERROR;
    program->compiled_only = result == CL_SUCCESS;
    program->unit = result == CL_SUCCESS ? std::move(unit) : nullptr;
  }
  if (notify != nullptr) notify(program, user_data);
  return result;
}

cl_program CL_API_CALL LinkProgram(cl_context context, cl_uint num_devices,
                                   const cl_device_id* devices, const char* options,
                                   cl_uint num_inputs, const cl_program* inputs,
                                   void(CL_CALLBACK* notify)(cl_program, void*), void* user_data,
                                   cl_int* errcode_ret) {
  if (!is_live(context, ObjectKind::context)) {
    set_error(errcode_ret, CL_INVALID_CONTEXT);
    return nullptr;
  }
  if (num_inputs == 0 || inputs == nullptr || (notify == nullptr && user_data != nullptr)) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  if (const cl_int e = check_devices(context, num_devices, devices); e != CL_SUCCESS) {
    set_error(errcode_ret, e);
    return nullptr;
  }
  // A library would have to stay a set of units to link again later: not supported.
  if (options != nullptr && std::string(options).find("-create-library") != std::string::npos) {
    set_error(errcode_ret, CL_INVALID_LINKER_OPTIONS);
    return nullptr;
  }
  std::vector<std::shared_ptr<const CompiledUnit>> units;
  for (cl_uint i = 0; i < num_inputs; ++i) {
    if (!is_live(inputs[i], ObjectKind::program)) {
      set_error(errcode_ret, CL_INVALID_PROGRAM);
      return nullptr;
    }
    std::lock_guard lock(inputs[i]->mutex);
    if (inputs[i]->unit == nullptr) {  // not compiled with clCompileProgram (or it failed)
      set_error(errcode_ret, CL_INVALID_OPERATION);
      return nullptr;
    }
    units.push_back(inputs[i]->unit);
  }
  std::string source;
  std::vector<const CompiledUnit*> unit_list;
  for (const auto& unit : units) {
    source += unit->text;
    unit_list.push_back(unit.get());
  }
  const std::string build_options = link_options(options ? options : "", unit_list);
  const char* strings[] = {source.c_str()};
  cl_program linked = CreateProgramWithSource(context, 1, strings, nullptr, errcode_ret);
  if (linked == nullptr) return nullptr;
  {
    std::lock_guard lock(linked->mutex);
    linked->linked_units = std::move(units);
  }
  const cl_int result = build(linked, options, CL_LINK_PROGRAM_FAILURE, &source, &build_options);
  if (notify != nullptr) notify(linked, user_data);
  set_error(errcode_ret, result);
  return linked;  // on failure still returned, with its log (the spec's CL_LINK_PROGRAM_FAILURE)
}

cl_int CL_API_CALL UnloadPlatformCompiler(cl_platform_id platform) {
  return is_live(platform, ObjectKind::platform) ? CL_SUCCESS : CL_INVALID_PLATFORM;
}

cl_int CL_API_CALL UnloadCompiler() { return CL_SUCCESS; }

cl_int CL_API_CALL GetProgramInfo(cl_program program, cl_program_info param, size_t size,
                                  void* value, size_t* size_ret) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  std::lock_guard lock(program->mutex);
  const bool built = program->status == CL_BUILD_SUCCESS && !program->compiled_only;
  switch (param) {
    case CL_PROGRAM_REFERENCE_COUNT:
      return answer_value(program->header.references.load(), size, value, size_ret);
    case CL_PROGRAM_CONTEXT:
      return answer_value(program->context, size, value, size_ret);
    case CL_PROGRAM_NUM_DEVICES:
      return answer_value(static_cast<cl_uint>(program->context->devices.size()), size, value,
                          size_ret);
    case CL_PROGRAM_DEVICES:
      return answer_vector(program->context->devices, size, value, size_ret);
    case CL_PROGRAM_SOURCE:
      return answer_string(program->source, size, value, size_ret);
    case CL_PROGRAM_BINARY_SIZES:
      return answer_vector(std::vector<std::size_t>(program->context->devices.size(), 0), size,
                           value, size_ret);
    case CL_PROGRAM_BINARIES: {  // every binary has size 0 (BINARY_SIZES): nothing is written
      const std::size_t n = program->context->devices.size() * sizeof(unsigned char*);
      if (value != nullptr && size < n) return CL_INVALID_VALUE;
      if (size_ret != nullptr) *size_ret = n;
      return CL_SUCCESS;
    }
    case CL_PROGRAM_NUM_KERNELS:
      if (!built) return CL_INVALID_PROGRAM_EXECUTABLE;
      return answer_value(program->kernel_names.size(), size, value, size_ret);
    case CL_PROGRAM_KERNEL_NAMES: {
      if (!built) return CL_INVALID_PROGRAM_EXECUTABLE;
      std::string names;
      for (const auto& n : program->kernel_names) names += (names.empty() ? "" : ";") + n;
      return answer_string(names, size, value, size_ret);
    }
    default:
      return CL_INVALID_VALUE;
  }
}

cl_int CL_API_CALL GetProgramBuildInfo(cl_program program, cl_device_id device,
                                       cl_program_build_info param, size_t size, void* value,
                                       size_t* size_ret) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  if (!is_live(device, ObjectKind::device) || !context_has(program->context, device)) {
    return CL_INVALID_DEVICE;
  }
  std::lock_guard lock(program->mutex);
  switch (param) {
    case CL_PROGRAM_BUILD_STATUS:
      return answer_value(program->status, size, value, size_ret);
    case CL_PROGRAM_BUILD_OPTIONS:
      return answer_string(program->options, size, value, size_ret);
    case CL_PROGRAM_BUILD_LOG:
      return answer_string(program->log, size, value, size_ret);
    case CL_PROGRAM_BINARY_TYPE: {
      cl_program_binary_type t = CL_PROGRAM_BINARY_TYPE_NONE;
      if (program->status == CL_BUILD_SUCCESS) {
        t = program->compiled_only ? CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT
                                   : CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
      }
      return answer_value(t, size, value, size_ret);
    }
    default:
      return CL_INVALID_VALUE;
  }
}

// ---- kernels -------------------------------------------------------------------------------

namespace {

cl_kernel new_kernel(cl_program program, const std::string& name, cl_int* errcode_ret) {
  std::shared_ptr<Program> built;
  {
    std::lock_guard lock(program->mutex);
    if (program->status != CL_BUILD_SUCCESS || program->compiled_only || !program->built) {
      set_error(errcode_ret, CL_INVALID_PROGRAM_EXECUTABLE);
      return nullptr;
    }
    if (std::find(program->kernel_names.begin(), program->kernel_names.end(), name) ==
        program->kernel_names.end()) {
      set_error(errcode_ret, CL_INVALID_KERNEL_NAME);
      return nullptr;
    }
    built = program->built;
    ++program->kernels_attached;
  }
  auto* k = make_object<_cl_kernel>(ObjectKind::kernel);
  k->program = program;
  k->built = built;
  k->name = name;
  try {
    const opencl::OpenCLKernel& kernel = underlying_kernel(*built, name, 0);
    for (cl_uint i = 0; i < kernel.argument_count(); ++i) {
      cl_kernel_arg_address_qualifier q = CL_KERNEL_ARG_ADDRESS_PRIVATE;
      clGetKernelArgInfo(kernel.handle(), i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q,
                         nullptr);
      k->qualifiers.push_back(q);
    }
  } catch (...) {
    {
      std::lock_guard lock(program->mutex);
      --program->kernels_attached;
    }
    forget_object(k);
    delete k;
    set_error(errcode_ret, error_of_current_exception(program->context, CL_OUT_OF_RESOURCES));
    return nullptr;
  }
  k->args.resize(k->qualifiers.size());
  k->arg_mems.resize(k->qualifiers.size(), nullptr);
  retain(program->header);
  set_error(errcode_ret, CL_SUCCESS);
  return k;
}

}  // namespace

cl_kernel CL_API_CALL CreateKernel(cl_program program, const char* name, cl_int* errcode_ret) {
  if (!is_live(program, ObjectKind::program)) {
    set_error(errcode_ret, CL_INVALID_PROGRAM);
    return nullptr;
  }
  if (name == nullptr) {
    set_error(errcode_ret, CL_INVALID_VALUE);
    return nullptr;
  }
  return new_kernel(program, name, errcode_ret);
}

cl_int CL_API_CALL CreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                          cl_kernel* kernels, cl_uint* num_kernels_ret) {
  if (!is_live(program, ObjectKind::program)) return CL_INVALID_PROGRAM;
  std::vector<std::string> names;
  {
    std::lock_guard lock(program->mutex);
    if (program->status != CL_BUILD_SUCCESS || program->compiled_only) {
      return CL_INVALID_PROGRAM_EXECUTABLE;
    }
    names = program->kernel_names;
  }
  if (kernels != nullptr && num_kernels < names.size()) return CL_INVALID_VALUE;
  if (kernels != nullptr) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      cl_int e = CL_SUCCESS;
      kernels[i] = new_kernel(program, names[i], &e);
      if (e != CL_SUCCESS) {
        for (std::size_t j = 0; j < i; ++j) release_kernel(kernels[j]);
        return e;
      }
    }
  }
  if (num_kernels_ret != nullptr) *num_kernels_ret = static_cast<cl_uint>(names.size());
  return CL_SUCCESS;
}

cl_int CL_API_CALL RetainKernel(cl_kernel kernel) {
  if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  retain(kernel->header);
  return CL_SUCCESS;
}

cl_int CL_API_CALL ReleaseKernel(cl_kernel kernel) {
  if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  release_kernel(kernel);
  return CL_SUCCESS;
}

cl_int CL_API_CALL SetKernelArg(cl_kernel kernel, cl_uint index, size_t size, const void* value) {
  if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  if (index >= kernel->qualifiers.size()) return CL_INVALID_ARG_INDEX;
  const cl_kernel_arg_address_qualifier q = kernel->qualifiers[index];
  Arg arg;
  cl_mem mem = nullptr;
  if (q == CL_KERNEL_ARG_ADDRESS_LOCAL) {
    if (value != nullptr) return CL_INVALID_ARG_VALUE;
    if (size == 0) return CL_INVALID_ARG_SIZE;
    arg = Arg::local(size);
  } else if (q == CL_KERNEL_ARG_ADDRESS_GLOBAL || q == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
    if (size != sizeof(cl_mem)) return CL_INVALID_ARG_SIZE;
    if (value != nullptr) std::memcpy(&mem, value, sizeof mem);
    if (mem == nullptr) {
      arg = Arg::null_buffer();  // OpenCL: a NULL value for the pointer parameter
    } else {
      if (!is_live(mem, ObjectKind::mem) || mem->context != kernel->program->context) {
        return CL_INVALID_MEM_OBJECT;
      }
      // A sub-buffer: the kernel's pointer points mem->origin bytes into the shared buffer.
      arg = Arg::buffer(mem->buffer, mem->origin);
    }
  } else {
    if (value == nullptr) return CL_INVALID_ARG_VALUE;
    if (size == 0) return CL_INVALID_ARG_SIZE;
    arg.kind = Arg::Kind::scalar;
    arg.scalar_bytes.assign(static_cast<const std::byte*>(value),
                            static_cast<const std::byte*>(value) + size);
  }
  std::lock_guard lock(kernel->mutex);
  kernel->args[index] = std::move(arg);
  kernel->arg_mems[index] = mem;
  kernel->launch_args.reset();
  kernel->args_live_at = ~std::uint64_t{0};
  return CL_SUCCESS;
}

cl_int CL_API_CALL GetKernelInfo(cl_kernel kernel, cl_kernel_info param, size_t size, void* value,
                                 size_t* size_ret) {
  if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  switch (param) {
    case CL_KERNEL_FUNCTION_NAME:
      return answer_string(kernel->name, size, value, size_ret);
    case CL_KERNEL_NUM_ARGS:
      return answer_value(static_cast<cl_uint>(kernel->qualifiers.size()), size, value, size_ret);
    case CL_KERNEL_REFERENCE_COUNT:
      return answer_value(kernel->header.references.load(), size, value, size_ret);
    case CL_KERNEL_CONTEXT:
      return answer_value(kernel->program->context, size, value, size_ret);
    case CL_KERNEL_PROGRAM:
      return answer_value(kernel->program, size, value, size_ret);
    case CL_KERNEL_ATTRIBUTES: {
      try {
        return clGetKernelInfo(underlying_kernel(*kernel->built, kernel->name, 0).handle(), param,
                               size, value, size_ret);
      } catch (...) {
        return error_of_current_exception(kernel->program->context, CL_OUT_OF_RESOURCES);
      }
    }
    default:
      return CL_INVALID_VALUE;
  }
}

cl_int CL_API_CALL GetKernelArgInfo(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param,
                                    size_t size, void* value, size_t* size_ret) {
  if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  if (index >= kernel->qualifiers.size()) return CL_INVALID_ARG_INDEX;
  // Only what the user asked for: without -cl-kernel-arg-info, OpenCL has no argument info.
  bool requested = false;
  {
    std::lock_guard lock(kernel->program->mutex);
    requested = kernel->program->options.find("-cl-kernel-arg-info") != std::string::npos;
  }
  if (!requested) return CL_KERNEL_ARG_INFO_NOT_AVAILABLE;
  try {
    return clGetKernelArgInfo(underlying_kernel(*kernel->built, kernel->name, 0).handle(), index,
                              param, size, value, size_ret);
  } catch (...) {
    return error_of_current_exception(kernel->program->context, CL_OUT_OF_RESOURCES);
  }
}

cl_int CL_API_CALL GetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                          cl_kernel_work_group_info param, size_t size, void* value,
                                          size_t* size_ret) {
  if (!is_live(kernel, ObjectKind::kernel)) return CL_INVALID_KERNEL;
  if (device == nullptr && kernel->program->context->devices.size() == 1) {
    device = kernel->program->context->devices[0];
  }
  if (!is_live(device, ObjectKind::device) || !context_has(kernel->program->context, device)) {
    return CL_INVALID_DEVICE;
  }
  if (param == CL_KERNEL_GLOBAL_WORK_SIZE) return CL_INVALID_VALUE;  // custom devices only
  try {
    PlatformState& state = PlatformState::get();
    std::vector<std::size_t> indices;
    if (device->aggregate) {
      for (std::size_t i = 0; i < state.underlying_count(); ++i) indices.push_back(i);
    } else {
      indices.push_back(device->index);
    }
    // Per device, as the vendor answers; the aggregate takes the minimum of work-group sizes
    // and the maximum of memory sizes (what holds on every device it splits over).
    std::vector<std::byte> best;
    for (std::size_t i : indices) {
      const opencl::OpenCLKernel& k = underlying_kernel(*kernel->built, kernel->name, i);
      std::size_t n = 0;
      cl_int e = clGetKernelWorkGroupInfo(k.handle(), state.underlying(i), param, 0, nullptr, &n);
      if (e != CL_SUCCESS) return e;
      std::vector<std::byte> mine(n);
      e = clGetKernelWorkGroupInfo(k.handle(), state.underlying(i), param, n, mine.data(), nullptr);
      if (e != CL_SUCCESS) return e;
      if (best.empty()) {
        best = mine;
      } else if (param == CL_KERNEL_WORK_GROUP_SIZE) {
        std::size_t a = 0, b = 0;
        std::memcpy(&a, best.data(), sizeof a);
        std::memcpy(&b, mine.data(), sizeof b);
        if (b < a) best = mine;
      } else if (param == CL_KERNEL_LOCAL_MEM_SIZE || param == CL_KERNEL_PRIVATE_MEM_SIZE) {
        cl_ulong a = 0, b = 0;
        std::memcpy(&a, best.data(), sizeof a);
        std::memcpy(&b, mine.data(), sizeof b);
        if (b > a) best = mine;
      }
    }
    return answer(best.data(), best.size(), size, value, size_ret);
  } catch (...) {
    return error_of_current_exception(kernel->program->context, CL_OUT_OF_RESOURCES);
  }
}

}  // namespace unimem::platform
