// Copies of the OpenCL driver on real devices: host<->device, within a device, peer to peer and
// rectangular, each checked byte for byte against a host-side oracle.
#if UNIMEM_HAVE_OPENCL
#include <gmock/gmock.h>

#include <cstring>

#include "common/check.hpp"
#include "opencl_test_devices.hpp"

namespace unimem::opencl {
namespace {

using ::testing::HasSubstr;
using testing::OpenCLDevices;
using testing::random_bytes;

using OpenCLCopy = OpenCLDevices;

std::vector<std::byte> read_back(OpenCLDevice& d, DeviceAllocation a) {
  std::vector<std::byte> out(a.size);
  d.copy_device_to_host(a, 0, out.data(), a.size, {}).wait();
  return out;
}

TEST_F(OpenCLCopy, HostToDeviceAndBackAtOffsets) {
  OpenCLDevice& d = device(0);
  constexpr std::size_t n = 1 << 16;
  const auto data = random_bytes(n, 1);
  DeviceAllocation a = d.allocate(n);
  EXPECT_EQ(d.allocated_bytes(), n);
  Event up = d.copy_host_to_device(data.data(), a, 0, n, {});
  // Overwrite a middle piece after the first copy, chained by its event.
  const auto patch = random_bytes(1000, 2);
  Event patched = d.copy_host_to_device(patch.data(), a, 12345, patch.size(), {&up, 1});
  std::vector<std::byte> piece(3000);
  d.copy_device_to_host(a, 11345, piece.data(), piece.size(), {&patched, 1}).wait();

  std::vector<std::byte> oracle = data;
  std::memcpy(oracle.data() + 12345, patch.data(), patch.size());
  EXPECT_EQ(0, std::memcmp(piece.data(), oracle.data() + 11345, piece.size()));
  EXPECT_EQ(read_back(d, a), oracle);
  d.free(a);
  EXPECT_EQ(d.allocated_bytes(), 0U);
}

TEST_F(OpenCLCopy, ProfilingGivesEachCommandItsDeviceTimesOnlyWhileOn) {
  OpenCLDevice& d = device(0);
  constexpr std::size_t n = 1 << 16;
  const auto data = random_bytes(n, 9);
  DeviceAllocation a = d.allocate(n);
  Event plain = d.copy_host_to_device(data.data(), a, 0, n, {});
  plain.wait();
  EXPECT_FALSE(plain.times().has_value());  // the queue does not profile
  d.set_profiling(true);
  Event profiled = d.copy_host_to_device(data.data(), a, 0, n, {});
  profiled.wait();
  ASSERT_TRUE(profiled.times().has_value());
  const EventTimes t = *profiled.times();
  EXPECT_FALSE(t.host_clock);
  EXPECT_LE(t.queued, t.start);
  EXPECT_LE(t.start, t.end);
  EXPECT_EQ(read_back(d, a), data);
  d.set_profiling(false);
  Event again = d.copy_host_to_device(data.data(), a, 0, n, {});
  again.wait();
  EXPECT_FALSE(again.times().has_value());
  d.free(a);
}

TEST_F(OpenCLCopy, DeviceToDeviceWithinOneDevice) {
  OpenCLDevice& d = device(0);
  constexpr std::size_t n = 4096;
  const auto data = random_bytes(n, 3);
  DeviceAllocation a = d.allocate(n);
  DeviceAllocation b = d.allocate(n);
  Event up_a = d.copy_host_to_device(data.data(), a, 0, n, {});
  const std::vector<std::byte> zeros(n);
  Event up_b = d.copy_host_to_device(zeros.data(), b, 0, n, {});
  const Event both[] = {up_a, up_b};
  d.copy_device_to_device(a, 100, b, 2000, 1500, both).wait();
  std::vector<std::byte> oracle(n);
  std::memcpy(oracle.data() + 2000, data.data() + 100, 1500);
  EXPECT_EQ(read_back(d, b), oracle);
  // Overlapping ranges of one buffer are an OpenCL error reported by name.
  try {
    d.copy_device_to_device(a, 0, a, 10, 100, {}).wait();
    FAIL() << "overlapping copy accepted";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code_name(), "CL_MEM_COPY_OVERLAP");
    EXPECT_THAT(e.what(), HasSubstr("clEnqueueCopyBuffer"));
    EXPECT_THAT(e.what(), HasSubstr(d.name()));
  }
  d.free(a);
  d.free(b);
}

TEST_F(OpenCLCopy, PeerToPeerBetweenDevicesOfOneContext) {
  if (!need_two_peers()) GTEST_SKIP() << "needs two devices in one OpenCL context";
  OpenCLDevice& a = device(0);
  OpenCLDevice& b = device(1);
  constexpr std::size_t n = 1 << 20;
  const auto data = random_bytes(n, 4);
  DeviceAllocation src = a.allocate(n);
  DeviceAllocation dst = b.allocate(n);
  const std::vector<std::byte> zeros(n);
  const Event ready[] = {a.copy_host_to_device(data.data(), src, 0, n, {}),
                         b.copy_host_to_device(zeros.data(), dst, 0, n, {})};
  ASSERT_TRUE(b.can_copy_from_peer(a));
  b.copy_from_peer(a, src, 4096, dst, 0, n - 8192, ready).wait();
  std::vector<std::byte> oracle(n);
  std::memcpy(oracle.data(), data.data() + 4096, n - 8192);
  EXPECT_EQ(read_back(b, dst), oracle);
  // The source allocation is checked by its own device.
  EXPECT_THROW((void)b.copy_from_peer(a, dst, 0, dst, 0, 16, {}), PreconditionError);
  a.free(src);
  b.free(dst);
}

TEST_F(OpenCLCopy, AcrossContextsThereIsNoPeerCopy) {
  auto other = open_devices("0");
  ASSERT_EQ(other.size(), 1U);
  EXPECT_FALSE(device(0).can_copy_from_peer(*other[0]));
  DeviceAllocation a = other[0]->allocate(64);
  DeviceAllocation b = device(0).allocate(64);
  try {
    (void)device(0).copy_from_peer(*other[0], a, 0, b, 0, 64, {});
    FAIL() << "peer copy across contexts accepted";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not in the same OpenCL context"));
  }
  other[0]->free(a);
  device(0).free(b);
}

TEST_F(OpenCLCopy, RectanglesOfA3DArrayBothWays) {
  OpenCLDevice& d = device(0);
  // A 3-D array of 40 x 30 x 5 bytes on the device; a 7 x 11 x 3 box at (5, 6, 1) goes in and
  // out of a host array of 16 x 20 x 4 bytes at (2, 3, 1).
  constexpr std::uint64_t dw = 40, dh = 30, dd = 5, hw = 16, hh = 20, hd = 4;
  const auto device_init = random_bytes(dw * dh * dd, 5);
  const auto host_src = random_bytes(hw * hh * hd, 6);
  DeviceAllocation a = d.allocate(dw * dh * dd);
  Event up = d.copy_host_to_device(device_init.data(), a, 0, a.size, {});
  RectCopy rect;
  rect.region = {7, 11, 3};
  rect.src_origin = {2, 3, 1};
  rect.src_row_pitch = hw;
  rect.src_slice_pitch = hw * hh;
  rect.dst_origin = {5, 6, 1};
  rect.dst_row_pitch = dw;
  rect.dst_slice_pitch = dw * dh;
  Event in = d.copy_host_to_device_rect(host_src.data(), a, rect, {&up, 1});

  std::vector<std::byte> oracle = device_init;
  for (std::uint64_t z = 0; z < 3; ++z) {
    for (std::uint64_t y = 0; y < 11; ++y) {
      std::memcpy(oracle.data() + 5 + (6 + y) * dw + (1 + z) * dw * dh,
                  host_src.data() + 2 + (3 + y) * hw + (1 + z) * hw * hh, 7);
    }
  }
  in.wait();
  EXPECT_EQ(read_back(d, a), oracle);

  // And back out into a zeroed host array at the host origin.
  RectCopy out = rect;
  std::swap(out.src_origin, out.dst_origin);
  std::swap(out.src_row_pitch, out.dst_row_pitch);
  std::swap(out.src_slice_pitch, out.dst_slice_pitch);
  std::vector<std::byte> host_dst(hw * hh * hd);
  d.copy_device_to_host_rect(a, host_dst.data(), out, {}).wait();
  std::vector<std::byte> host_oracle(hw * hh * hd);
  for (std::uint64_t z = 0; z < 3; ++z) {
    for (std::uint64_t y = 0; y < 11; ++y) {
      std::memcpy(host_oracle.data() + 2 + (3 + y) * hw + (1 + z) * hw * hh,
                  host_src.data() + 2 + (3 + y) * hw + (1 + z) * hw * hh, 7);
    }
  }
  EXPECT_EQ(host_dst, host_oracle);

  // A box reaching past the allocation is refused before it reaches OpenCL.
  RectCopy too_far = rect;
  too_far.dst_origin = {5, 6, 3};
  EXPECT_THROW((void)d.copy_host_to_device_rect(host_src.data(), a, too_far, {}),
               PreconditionError);
  d.free(a);
}

TEST_F(OpenCLCopy, BadAllocationsAndRangesAreNamed) {
  OpenCLDevice& d = device(0);
  DeviceAllocation a = d.allocate(100);
  std::vector<std::byte> host(200);
  try {
    (void)d.copy_host_to_device(host.data(), a, 50, 51, {});
    FAIL();
  } catch (const PreconditionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("copy_host_to_device: bytes [50, 50 + 51) lie outside"));
    EXPECT_THAT(e.what(), HasSubstr(d.name()));
  }
  DeviceAllocation stale = a;
  d.free(a);
  EXPECT_THROW((void)d.copy_device_to_host(stale, 0, host.data(), 10, {}), PreconditionError);
  EXPECT_THROW(d.free(stale), PreconditionError);
  EXPECT_THROW((void)d.allocate(0), PreconditionError);
  try {
    (void)d.allocate(d.info().max_alloc_bytes + 1);
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.code_name(), "CL_INVALID_BUFFER_SIZE");
    EXPECT_THAT(e.what(), HasSubstr("CL_DEVICE_MAX_MEM_ALLOC_SIZE"));
  }
  EXPECT_EQ(d.capacity(), d.info().global_mem_bytes);
  // A zero-byte copy is a no-op that still honours its deps.
  auto [gate, gate_state] = Event::make_manual();
  DeviceAllocation b = d.allocate(8);
  Event nothing = d.copy_host_to_device(host.data(), b, 8, 0, {&gate, 1});
  EXPECT_FALSE(nothing.is_complete());
  gate_state->complete();
  nothing.wait();
  d.free(b);
}

}  // namespace
}  // namespace unimem::opencl
#endif
