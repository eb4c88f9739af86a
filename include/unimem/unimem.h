#ifndef UNIMEM_UNIMEM_H
#define UNIMEM_UNIMEM_H

/* One pointer for the host and every device: the GMAC / ADSM programming model (Gelado et al.,
 * ASPLOS 2010, shared/seeds/004_b9980231408668ca.txt, section 3.3 Table 1: alloc, free, call,
 * sync) over unimem's shared buffers. A C API, usable from C and C++.
 *
 *   float* a = um_alloc(n * sizeof(float));      // a host pointer, valid in kernels too
 *   fread(a, sizeof(float), n, input);           // host code uses it like malloc'd memory
 *   um_program p = um_program_create(source, "");
 *   um_arg args[] = {um_arg_pointer(a), um_arg_value(&n, sizeof n)};
 *   um_range r = um_range_1d(n, 0);
 *   um_launch(p, "scale", &r, args, 2);          // release: host writes are published
 *   um_sync();                                   // acquire: results move when the host touches
 * them fwrite(a, sizeof(float), n, output); um_free(a);
 *
 * Consistency (ADSM section 3.3): release at um_launch, acquire at um_sync. The host view of an
 * allocation is kept coherent by page protection, block by block (default 512 KiB, as GMAC): no
 * access where the host copy is stale, read-only where it is current, read-write where the host
 * wrote it. A host access between um_launch and um_sync is also correct: it waits for the kernels
 * that write the bytes it touches.
 *
 * Errors: every function reports an um_error; functions returning a pointer or handle return NULL
 * on failure. um_last_error() / um_last_error_text() give the calling thread's last error and a
 * message naming what was wrong (pointer, kernel, argument, range).
 *
 * Thread-safety: every function may be called from any thread. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum um_error {
  UM_SUCCESS = 0,
  UM_ERROR_INVALID_VALUE = 1,   /* a bad argument: size 0, unknown protocol, bad range */
  UM_ERROR_INVALID_POINTER = 2, /* a pointer that is not (inside) a live allocation */
  UM_ERROR_OUT_OF_MEMORY = 3,   /* host or device memory exhausted */
  UM_ERROR_BUILD = 4,           /* um_program_create: the source did not compile */
  UM_ERROR_LAUNCH = 5,          /* um_launch: unknown kernel, bad arguments or range */
  UM_ERROR_DEVICE = 6,          /* a device or driver operation failed */
  UM_ERROR_IO = 7,              /* an I/O call failed (errno is set) */
  UM_ERROR_INTERNAL = 8         /* a bug in unimem */
} um_error;

/* When host-written blocks move to the devices and device results to the host. */
typedef enum um_protocol {
  UM_PROTOCOL_BATCH = 0,  /* everything to the devices at um_launch, everything back at um_sync */
  UM_PROTOCOL_LAZY = 1,   /* fetch a block on the host's first touch, publish dirty blocks at
                             um_launch (the default) */
  UM_PROTOCOL_ROLLING = 2 /* lazy, plus eager asynchronous write-back of the oldest dirty blocks
                             once more than an adaptive number of blocks are dirty */
} um_protocol;

/* ---- errors ---- */
um_error um_last_error(void);
/* The calling thread's last error message ("" after success); valid until its next um_ call. */
const char* um_last_error_text(void);
/* "UM_ERROR_INVALID_POINTER" etc. */
const char* um_error_name(um_error code);

/* ---- configuration (before the first allocation, or between runs) ---- */
/* Protocol of every allocation from now on. UNIMEM_PROTOCOL=batch|lazy|rolling sets the initial
 * one. Changing it publishes nothing by itself; blocks keep their states. */
um_error um_set_protocol(um_protocol protocol);
um_protocol um_get_protocol(void);
/* "batch" / "lazy" / "rolling"; UM_ERROR_INVALID_VALUE for anything else. */
um_error um_parse_protocol(const char* text, um_protocol* out);
/* Block size of allocations made from now on: a multiple of the page size, default 512 KiB
 * (UNIMEM_BLOCK_SIZE, bytes with an optional K / M suffix, sets the initial one). */
um_error um_set_block_size(size_t bytes);
size_t um_get_block_size(void);
/* Launches split over the first `count` devices (0: all devices, the default). */
um_error um_set_devices(size_t count);
/* The number of devices (starting unimem's runtime if needed; 0 on error). */
size_t um_device_count(void);

/* ---- memory ---- */
/* size bytes (> 0) of shared memory, zero-filled, page-aligned. NULL on error. */
void* um_alloc(size_t size);
/* ptr must be a pointer um_alloc returned. Waits for the kernels using it. NULL is a no-op. */
um_error um_free(void* ptr);
/* Both pointers may be unimem memory or not; copies without faulting (device-to-host and
 * host-to-device copies go directly between the device side and ordinary memory). */
um_error um_memcpy(void* dst, const void* src, size_t n);
um_error um_memset(void* dst, int value, size_t n);
/* Whether ptr lies inside a live allocation; the allocation's base and size when base/size are
 * not NULL. */
int um_is_shared(const void* ptr, void** base, size_t* size);

/* ---- kernels ---- */
typedef struct um_program_s* um_program;

/* OpenCL C source built for every device. NULL on error (the text holds the build log). */
um_program um_program_create(const char* source, const char* options);
um_error um_program_release(um_program program);

typedef enum um_arg_kind { UM_ARG_POINTER = 0, UM_ARG_VALUE = 1, UM_ARG_LOCAL = 2 } um_arg_kind;

/* One kernel argument: a pointer into an allocation (for a __global pointer parameter; an
 * interior pointer is passed as its buffer plus offset), a scalar's bytes, or __local bytes. */
typedef struct um_arg {
  um_arg_kind kind;
  const void* pointer; /* UM_ARG_POINTER: into an allocation; UM_ARG_VALUE: the value's bytes */
  size_t size;         /* UM_ARG_VALUE: sizeof the value; UM_ARG_LOCAL: bytes */
} um_arg;

static inline um_arg um_arg_pointer(const void* p) {
  um_arg a = {UM_ARG_POINTER, p, 0};
  return a;
}
static inline um_arg um_arg_value(const void* value, size_t size) {
  um_arg a = {UM_ARG_VALUE, value, size};
  return a;
}
static inline um_arg um_arg_local(size_t bytes) {
  um_arg a = {UM_ARG_LOCAL, NULL, bytes};
  return a;
}

/* An NDRange: dims 1..3, global sizes, local sizes (0: the driver chooses), global offsets. */
typedef struct um_range {
  unsigned dims;
  size_t global[3];
  size_t local[3];
  size_t offset[3];
} um_range;

static inline um_range um_range_1d(size_t global, size_t local) {
  um_range r = {1, {global, 1, 1}, {local, 0, 0}, {0, 0, 0}};
  return r;
}
static inline um_range um_range_2d(size_t global0, size_t global1, size_t local0, size_t local1) {
  um_range r = {2, {global0, global1, 1}, {local0, local1, 0}, {0, 0, 0}};
  return r;
}

/* Runs kernel over range, split over the devices (release: the host-written blocks of the
 * pointer arguments' allocations are published first). Asynchronous. */
um_error um_launch(um_program program, const char* kernel, const um_range* range,
                   const um_arg* args, size_t arg_count);
/* Waits for every launch (acquire). Under batch, copies every allocation back to the host. */
um_error um_sync(void);

/* ---- I/O into and out of shared memory ----
 * A system call that reads into a protected page fails with EFAULT instead of faulting; these
 * prepare the whole range first (one fetch per stale block, no fault storm) and then do the I/O
 * through the allocation's read-write view. They behave like their libc namesakes (return value,
 * errno) for any pointer, shared or not. Linking the unimem_pointer_interpose library makes
 * read / write / pread / pwrite / fread / fwrite themselves do this. */
ssize_t um_read(int fd, void* buf, size_t count);
ssize_t um_write(int fd, const void* buf, size_t count);
ssize_t um_pread(int fd, void* buf, size_t count, off_t offset);
ssize_t um_pwrite(int fd, const void* buf, size_t count, off_t offset);
size_t um_fread(void* buf, size_t size, size_t count, FILE* stream);
size_t um_fwrite(const void* buf, size_t size, size_t count, FILE* stream);

/* ---- statistics ---- */
typedef struct um_stats {
  uint64_t faults;          /* protection faults on shared memory handled */
  uint64_t read_faults;     /* of them, reads (the block was fetched, made read-only) */
  uint64_t write_faults;    /* of them, writes (the block was marked dirty, made read-write) */
  uint64_t bytes_fetched;   /* bytes copied from the devices' side into host views */
  uint64_t bytes_published; /* bytes copied from host views to the devices' side */
  uint64_t bytes_direct;    /* um_memcpy / um_memset bytes moved without the host view */
  uint64_t eager_blocks;    /* rolling: blocks written back before a launch needed them */
  uint64_t device_bytes;    /* bytes the runtime copied between its home and the devices */
  uint64_t launches;        /* um_launch calls that ran */
  uint64_t partitions;      /* device partitions those launches were split into */
} um_stats;
um_error um_get_stats(um_stats* out);
um_error um_reset_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* UNIMEM_UNIMEM_H */
