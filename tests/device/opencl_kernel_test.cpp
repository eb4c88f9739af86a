// Programs and launches of the OpenCL driver on real devices.
#if UNIMEM_HAVE_OPENCL
#include <gmock/gmock.h>

#include <cstring>

#include "common/check.hpp"
#include "opencl_test_devices.hpp"

namespace unimem::opencl {
namespace {

using ::testing::HasSubstr;
using testing::kVectorAddSource;
using testing::OpenCLDevices;

using OpenCLKernelLaunch = OpenCLDevices;

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

TEST_F(OpenCLKernelLaunch, BuildFailureCarriesTheDeviceNameAndTheCompilerLog) {
  const std::string source =
      "__kernel void broken(__global int* x) { x[0] = undeclared_identifier_42; }\n";
  try {
    (void)device(0).build_program(source, "-DUNIMEM_TEST_OPTION=1");
    FAIL() << "a broken program built";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code_name(), "CL_BUILD_PROGRAM_FAILURE");
    EXPECT_EQ(e.code(), CL_BUILD_PROGRAM_FAILURE);
    const std::string message = e.what();
    EXPECT_THAT(message, HasSubstr("clBuildProgram failed with CL_BUILD_PROGRAM_FAILURE"));
    EXPECT_THAT(message, HasSubstr("-DUNIMEM_TEST_OPTION=1"));
    EXPECT_THAT(message, HasSubstr("on device " + device(0).name() + ", build log:"));
    EXPECT_THAT(message, HasSubstr("undeclared_identifier_42"));  // from the compiler's log
    EXPECT_THAT(message, HasSubstr("error"));
  }
}

TEST_F(OpenCLKernelLaunch, VectorAddOnASubRangeWithGlobalOffsetLeavesTheRestUntouched) {
  OpenCLDevice& d = device(0);
  auto program = d.build_opencl_program(kVectorAddSource);
  auto vadd = program->opencl_kernel("vadd");
  EXPECT_EQ(vadd->name(), "vadd");
  EXPECT_EQ(vadd->argument_count(), 3U);
  constexpr std::size_t n = 1024, first = 200, count = 512;
  std::vector<int> a(n), b(n), c(n, -7);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<int>(i);
    b[i] = static_cast<int>(1000 * i);
  }
  const std::uint64_t bytes = n * sizeof(int);
  DeviceAllocation da = d.allocate(bytes), db = d.allocate(bytes), dc = d.allocate(bytes);
  const Event ready[] = {
      d.copy_host_to_device(bytes_of(a).data(), da, 0, bytes, {}),
      d.copy_host_to_device(bytes_of(b).data(), db, 0, bytes, {}),
      d.copy_host_to_device(bytes_of(c).data(), dc, 0, bytes, {}),
  };
  NDRange range;
  range.dims = 1;
  range.offset[0] = first;
  range.global[0] = count;
  const KernelArg args[] = {KernelArg::of_buffer(da), KernelArg::of_buffer(db),
                            KernelArg::of_buffer(dc)};
  Event ran = d.launch(*vadd, range, args, ready);
  std::vector<int> result(n);
  d.copy_device_to_host(dc, 0, reinterpret_cast<std::byte*>(result.data()), bytes, {&ran, 1})
      .wait();
  for (std::size_t i = 0; i < n; ++i) {
    const int expected = (i >= first && i < first + count) ? static_cast<int>(1001 * i) : -7;
    ASSERT_EQ(result[i], expected) << "element " << i;
  }

  // Launch errors name the kernel and the device.
  const KernelArg two[] = {args[0], args[1]};
  try {
    (void)d.launch(*vadd, range, two, {});
    FAIL();
  } catch (const PreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("kernel \"vadd\""));
    EXPECT_THAT(e.what(), HasSubstr("2 arguments given, the kernel takes 3"));
  }
  NDRange bad_local = range;
  bad_local.local[0] = 7;  // 512 is not a multiple of 7
  try {
    d.launch(*vadd, bad_local, args, {}).wait();
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code_name(), "CL_INVALID_WORK_GROUP_SIZE");
    EXPECT_THAT(e.what(), HasSubstr("clEnqueueNDRangeKernel"));
    EXPECT_THAT(e.what(), HasSubstr("kernel \"vadd\""));
  }
  try {
    (void)program->kernel("no_such_kernel");
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code_name(), "CL_INVALID_KERNEL_NAME");
    EXPECT_THAT(e.what(), HasSubstr("no_such_kernel"));
  }
  // A kernel built in another context is refused.
  auto other = open_devices("0");
  try {
    (void)other[0]->launch(*vadd, range, args, {});
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("built for another OpenCL context"));
  }
  d.free(da);
  d.free(db);
  d.free(dc);
}

// The `add` kernel (x[i] += a over kAddInts ints) of the argument tests, with zero-filled
// buffers made and read back on a given device.
constexpr std::size_t kAddInts = 256;
constexpr std::uint64_t kAddBytes = kAddInts * sizeof(int);

std::shared_ptr<OpenCLKernel> build_add(OpenCLDevice& d) {
  return d
      .build_opencl_program(
          "__kernel void add(__global int* x, int a) { x[get_global_id(0)] += a; }\n")
      ->opencl_kernel("add");
}

DeviceAllocation zeroed_ints(OpenCLDevice& on) {
  const std::vector<int> zeros(kAddInts, 0);
  DeviceAllocation a = on.allocate(kAddBytes);
  on.copy_host_to_device(bytes_of(zeros).data(), a, 0, kAddBytes, {}).wait();
  return a;
}

std::vector<int> read_ints(OpenCLDevice& on, DeviceAllocation a) {
  std::vector<int> out(kAddInts);
  on.copy_device_to_host(a, 0, reinterpret_cast<std::byte*>(out.data()), kAddBytes, {}).wait();
  return out;
}

// A launch skips clSetKernelArg for arguments the kernel already holds from the last launch:
// every launch still sees exactly its own arguments, whether they repeat, change (scalar,
// buffer, sub-buffer view), or name a buffer allocated after another was freed (whose handle
// the implementation may hand out again).
TEST_F(OpenCLKernelLaunch, RepeatedLaunchesSeeExactlyTheirOwnArguments) {
  OpenCLDevice& d = device(0);
  auto add = build_add(d);
  constexpr std::size_t n = kAddInts;
  const std::uint64_t bytes = kAddBytes;
  const auto fresh = [&d] { return zeroed_ints(d); };
  const auto read = [&d](DeviceAllocation a) { return read_ints(d, a); };
  NDRange range;
  range.global[0] = n;
  const auto run = [&](DeviceAllocation a, int value, std::uint64_t offset = 0) {
    NDRange r = range;
    r.global[0] = n - offset / sizeof(int);
    const KernelArg args[] = {KernelArg::of_buffer(a, offset), KernelArg::of_scalar(value)};
    d.launch(*add, r, args, {}).wait();
  };
  DeviceAllocation first = fresh(), second = fresh();
  run(first, 1);
  run(first, 1);   // the same arguments again
  run(first, 5);   // a new scalar
  run(second, 5);  // a new buffer
  run(second, 5);
  run(first, 5);  // back to the first one
  EXPECT_EQ(read(first), std::vector<int>(n, 12));
  EXPECT_EQ(read(second), std::vector<int>(n, 10));
  // A view into the buffer (a sub-buffer per launch), then the whole buffer again.
  const std::uint64_t view_at = d.argument_offset_alignment();
  if (view_at < bytes) {
    run(second, 100, view_at);
    run(second, 100, view_at);
    run(second, 1);
    const std::vector<int> out = read(second);
    const std::size_t skipped = view_at / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], i < skipped ? 11 : 211) << "element " << i;
    }
  }
  // Freed and allocated again: the new buffer gets the launch, whatever its handle.
  for (int round = 0; round < 4; ++round) {
    d.free(first);
    first = fresh();
    run(first, 3);
    EXPECT_EQ(read(first), std::vector<int>(n, 3)) << "round " << round;
  }
  d.free(first);
  d.free(second);
}

// A launch does not check again a whole allocation the kernel's argument named on this device
// in its last two launches (a ping-pong's two buffers), no buffer of the context freed since;
// any other handle is checked: one freed since, or the first device's on another device (which
// shares the cl_kernel), is refused however recently the ping-pong named it.
TEST_F(OpenCLKernelLaunch, APingPongsBuffersAreCheckedAgainAfterAFreeAndOnAnotherDevice) {
  OpenCLDevice& d = device(0);
  auto add = build_add(d);
  NDRange range;
  range.global[0] = kAddInts;
  const auto run = [&](OpenCLDevice& on, DeviceAllocation a, int value) {
    const KernelArg args[] = {KernelArg::of_buffer(a), KernelArg::of_scalar(value)};
    on.launch(*add, range, args, {}).wait();
  };
  DeviceAllocation a = zeroed_ints(d), b = zeroed_ints(d);
  for (int round = 0; round < 3; ++round) {
    run(d, a, 1);
    run(d, b, 2);
  }
  EXPECT_EQ(read_ints(d, a), std::vector<int>(kAddInts, 3));
  EXPECT_EQ(read_ints(d, b), std::vector<int>(kAddInts, 6));
  if (need_two_peers()) {
    OpenCLDevice& peer = device(1);
    DeviceAllocation p = zeroed_ints(peer);
    run(peer, p, 7);
    try {
      run(peer, a, 1);
      ADD_FAILURE() << "the first device's allocation was launched on the second device";
    } catch (const PreconditionError& e) {
      EXPECT_THAT(e.what(), HasSubstr("is not a live allocation of device"));
    }
    run(d, a, 1);  // back on the first device: the kernel's values are the peer's, a is checked
    run(d, b, 2);
    EXPECT_EQ(read_ints(d, a), std::vector<int>(kAddInts, 4));
    EXPECT_EQ(read_ints(peer, p), std::vector<int>(kAddInts, 7));
    peer.free(p);
  }
  run(d, a, 1);
  d.free(a);
  try {
    run(d, a, 1);
    ADD_FAILURE() << "a freed allocation was launched";
  } catch (const PreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("is not a live allocation of device"));
  }
  d.free(b);
}

// launch_in_order_again enqueues the kernel as it is only while its last launch was
// launch_in_order's on the same device with arguments the cl_kernel still holds: after a launch
// with other arguments (on this device or a peer sharing the cl_kernel) or one through a
// sub-buffer view, it makes the full launch_in_order, so every launch sees its own arguments.
// in_order_finished answers for the kernels once an event of them was waited for.
TEST_F(OpenCLKernelLaunch, LaunchInOrderAgainRepeatsOnlyWhatTheKernelStillHolds) {
  OpenCLDevice& d = device(0);
  auto add = build_add(d);
  constexpr std::size_t n = kAddInts;
  const std::uint64_t bytes = kAddBytes;
  const auto fresh = zeroed_ints;
  const auto read = read_ints;
  NDRange range;
  range.global[0] = n;
  DeviceAllocation a = fresh(d), b = fresh(d);
  const KernelArg a1[] = {KernelArg::of_buffer(a), KernelArg::of_scalar(1)};
  const KernelArg b10[] = {KernelArg::of_buffer(b), KernelArg::of_scalar(10)};
  std::uint64_t last = d.launch_in_order(*add, range, a1);
  last = d.launch_in_order_again(*add, range, a1);
  d.launch(*add, range, b10, {}).wait();  // the cl_kernel now holds b and 10
  last = d.launch_in_order_again(*add, range, a1);
  int expected_a = 3;
  if (need_two_peers()) {
    OpenCLDevice& peer = device(1);
    DeviceAllocation p = fresh(peer);
    const KernelArg p7[] = {KernelArg::of_buffer(p), KernelArg::of_scalar(7)};
    peer.in_order_event(peer.launch_in_order(*add, range, p7)).wait();
    last = d.launch_in_order_again(*add, range, a1);  // the peer's launch came between
    ++expected_a;
    EXPECT_EQ(read(peer, p), std::vector<int>(n, 7));
    peer.free(p);
  }
  const std::uint64_t view_at = d.argument_offset_alignment();
  std::size_t skipped = 0;
  if (view_at < bytes) {  // a view: the sub-buffer is released once enqueued, never held
    NDRange r = range;
    r.global[0] = n - view_at / sizeof(int);
    const KernelArg view100[] = {KernelArg::of_buffer(a, view_at), KernelArg::of_scalar(100)};
    d.launch_in_order(*add, r, view100);
    last = d.launch_in_order_again(*add, r, view100);
    skipped = view_at / sizeof(int);
  }
  const Event done = d.in_order_event(last);
  EXPECT_FALSE(d.in_order_finished(last) && !done.is_complete());
  done.wait();
  EXPECT_TRUE(d.in_order_finished(last)) << "a waited event's kernels are known finished";
  const std::vector<int> out = read(d, a);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], expected_a + (view_at < bytes && i >= skipped ? 200 : 0)) << "element " << i;
  }
  EXPECT_EQ(read(d, b), std::vector<int>(n, 10));
  d.free(a);
  d.free(b);
}

// A copy on device A (host -> A, then A -> B peer to peer) feeds a kernel on device B, all chained
// by events without waiting in between.
TEST_F(OpenCLKernelLaunch, CopyOnOneDeviceFeedsAKernelOnAnother) {
  if (!need_two_peers()) GTEST_SKIP() << "needs two devices in one OpenCL context";
  OpenCLDevice& a = device(0);
  OpenCLDevice& b = device(1);
  auto vadd = b.build_program(kVectorAddSource)->kernel("vadd");
  constexpr std::size_t n = 1 << 16;
  const std::uint64_t bytes = n * sizeof(int);
  std::vector<int> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<int>(3 * i);
    y[i] = static_cast<int>(i) - 5;
  }
  DeviceAllocation on_a = a.allocate(bytes);
  DeviceAllocation bx = b.allocate(bytes), by = b.allocate(bytes), bz = b.allocate(bytes);
  Event up_a = a.copy_host_to_device(bytes_of(x).data(), on_a, 0, bytes, {});
  Event up_b = b.copy_host_to_device(bytes_of(y).data(), by, 0, bytes, {});
  Event peer = b.copy_from_peer(a, on_a, 0, bx, 0, bytes, {&up_a, 1});
  NDRange range;
  range.global[0] = n;
  const KernelArg args[] = {KernelArg::of_buffer(bx), KernelArg::of_buffer(by),
                            KernelArg::of_buffer(bz)};
  const Event inputs[] = {peer, up_b};
  Event ran = b.launch(*vadd, range, args, inputs);
  std::vector<int> z(n);
  b.copy_device_to_host(bz, 0, reinterpret_cast<std::byte*>(z.data()), bytes, {&ran, 1}).wait();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(z[i], x[i] + y[i]) << "element " << i;
  a.free(on_a);
  b.free(bx);
  b.free(by);
  b.free(bz);
}

}  // namespace
}  // namespace unimem::opencl
#endif
