// Program::launch on POCL devices: splits over all devices by default, honours a single device and
// a split dimension, fetches may-writes first, falls back (with a message naming the buffer and
// bytes) when partitions would write the same bytes, and reports bad kernels and sources.

#include "api/kernel_rewrite.hpp"
#include "api/program_core.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/kernel_analysis.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem {

namespace detail {
struct ProgramCoreTestAccess {
  static void wrap_derived(ProgramCore& core, std::function<DerivedBytes(DerivedBytes)> wrap) {
    core.derived_for_tests_ = std::move(wrap);
  }
};
}  // namespace detail

namespace {

// POCL reads POCL_DEVICES once, at the first OpenCL call of the process.
const bool kPoclRequested = [] {
  setenv("POCL_DEVICES", "pthread pthread pthread", 0);
  return true;
}();

constexpr const char* kSource = R"CLC(
kernel void scale(global const float* in, global float* out, float f) {
  const int i = get_global_id(0);
  out[i] = f * in[i];
}
kernel void keep_positive(global const float* in, global float* out) {
  const int i = get_global_id(0);
  if (in[i] > 0.0f) out[i] = in[i];
}
kernel void flag(global float* out) {
  out[0] = 7.0f;
}
kernel void add_bias(global float* data, global const float* bias) {
  const int i = get_global_id(0);
  data[i] += bias != 0 ? bias[i] : 1.0f;
}
kernel void transpose_add(global const float* in, global float* out, int n) {
  const int x = get_global_id(0);
  const int y = get_global_id(1);
  out[x * n + y] = in[y * n + x] + 1.0f;
}
)CLC";

class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kPoclRequested);
    DeviceRegistry devices = opencl::make_opencl_devices("");
    if (devices.size() < 2) GTEST_SKIP() << "needs two OpenCL devices";
    // These tests split launches of a few hundred bytes on purpose: no threshold.
    RuntimeOptions options{UpdateStrategy::lazy};
    options.min_split_bytes = 0;
    runtime_ = std::make_unique<Runtime>(std::move(devices), options);
    program_ = std::make_unique<Program>(*runtime_, kSource);
    program_->set_log([this](const std::string& m) { log_.push_back(m); });
  }
  BufferId upload(const std::vector<float>& v) {
    const BufferId b = runtime_->create_buffer(v.size() * sizeof(float));
    runtime_->write_blocking(b, 0, std::as_bytes(std::span(v)));
    return b;
  }
  std::vector<float> download(BufferId b) {
    std::vector<float> v(runtime_->buffer_size(b) / sizeof(float));
    runtime_->read_blocking(b, 0, std::as_writable_bytes(std::span(v)));
    return v;
  }
  static NDRange range_1d(std::uint64_t n) {
    NDRange r;
    r.global = {n, 1, 1};
    return r;
  }
  static AffinePiece own() { return row_major_piece(sizeof(float), {1}); }

  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Program> program_;
  std::vector<std::string> log_;
};

TEST_F(ProgramTest, SplitsOverEveryDeviceAndMovesOnlyEachPartitionsBytes) {
  const std::uint64_t n = 3000;
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  const BufferId a = upload(in);
  const BufferId b = runtime_->create_buffer(n * sizeof(float));
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  program_->launch("scale", range_1d(n), {Arg::buffer(a), Arg::buffer(b), Arg::scalar(2.0f)}, how);
  const LaunchPlan plan = program_->core().last_plan();
  EXPECT_EQ(plan.partitions.size(), runtime_->device_count());
  const std::vector<float> out = download(b);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;
  const TransferStats s = runtime_->stats();
  EXPECT_EQ(s.host_to_device.bytes, n * sizeof(float));  // each element of a to one device
  EXPECT_EQ(s.device_to_host.bytes, n * sizeof(float));
  EXPECT_EQ(s.device_to_device.bytes, 0U);
  EXPECT_TRUE(log_.empty());
}

// Descriptors a launch ignores (LaunchOptions::ignore_accesses, as `unimem bench --access
// analysis` passes them) do not reach the plan, so ping-pong launches share one cached plan;
// descriptors in use keep every launch planned afresh. Results are the same either way.
TEST_F(ProgramTest, IgnoredDescriptorsLeaveLaunchesToThePlanCache) {
  const std::uint64_t n = 2048;
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 97);
  for (const bool ignore : {true, false}) {
    const BufferId a = upload(in);
    const BufferId b = runtime_->create_buffer(n * sizeof(float));
    LaunchOptions how;
    how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                    AccessDescriptor::affine(1, AccessMode::write, {own()})};
    how.ignore_accesses = ignore;
    std::vector<std::shared_ptr<const LaunchPlan>> plans(4);
    for (std::size_t step = 0; step < plans.size(); ++step) {
      const BufferId from = step % 2 == 0 ? a : b;
      const BufferId to = step % 2 == 0 ? b : a;
      const std::vector<Arg> args{Arg::buffer(from), Arg::buffer(to), Arg::scalar(2.0f)};
      program_->core().launch("scale", range_1d(n), args, how, &plans[step]);
    }
    // With ignored descriptors launches 2 and 3 repeat launches 0 and 1 (the repeat path for
    // cycles: a ping-pong pair), so they reuse those launches' plans; launch 1 has launch 0's key
    // (buffer sizes, not ids) and, since the cache keeps a key's plan from its second miss on
    // (ProgramCore::missed_keys_), was planned again. With descriptors in use, every launch is
    // planned afresh.
    for (std::size_t step = 0; step < plans.size(); ++step) {
      ASSERT_TRUE(plans[step]);
      for (std::size_t earlier = 0; earlier < step; ++earlier) {
        if (ignore && earlier + 2 == step) {
          EXPECT_EQ(plans[step].get(), plans[earlier].get())
              << "launch " << step << " was planned again";
        } else if (!ignore) {
          EXPECT_NE(plans[step].get(), plans[earlier].get()) << "launch " << step;
        }
      }
    }
    const std::vector<float> out = download(a);  // four doublings
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 16.0f * in[i]) << i;
    runtime_->release_buffer(a);
    runtime_->release_buffer(b);
  }
}

// Launches whose plan keys never recur (a scalar that differs every time, as floyd-warshall's
// pivot k) keep no plans in the cache: a plan enters it on its key's second miss. A key that
// does recur is cached from then on and its plan reused. Results are exact either way.
TEST_F(ProgramTest, ThePlanCacheKeepsOnlyPlansWhoseKeysRecur) {
  // The factor reaches no access, so with scalar twins (RuntimeOptions::scalar_twins) these
  // launches would all share their first plans without asking the cache: off here.
  RuntimeOptions options{UpdateStrategy::lazy};
  options.min_split_bytes = 0;
  options.scalar_twins = false;
  program_.reset();
  runtime_ = std::make_unique<Runtime>(opencl::make_opencl_devices(""), options);
  program_ = std::make_unique<Program>(*runtime_, kSource);
  const std::uint64_t n = 2048;
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 97) - 40.0f;
  const BufferId a = upload(in);
  const BufferId b = runtime_->create_buffer(n * sizeof(float));
  std::vector<float> expected = in;
  int exponent = 0;  // factors are powers of two: every product is exact
  const auto launch = [&](std::size_t step, float f) {
    const BufferId from = step % 2 == 0 ? a : b;
    const BufferId to = step % 2 == 0 ? b : a;
    std::shared_ptr<const LaunchPlan> plan;
    const std::vector<Arg> args{Arg::buffer(from), Arg::buffer(to), Arg::scalar(f)};
    program_->core().launch("scale", range_1d(n), args, {}, &plan);
    for (float& x : expected) x *= f;
    return plan;
  };
  std::size_t step = 0;
  for (; step < 24; ++step) {  // 24 distinct factors: 2, 1/2, 4, 1/4, ...
    exponent = static_cast<int>(step / 2 + 1) * (step % 2 == 0 ? 1 : -1);
    launch(step, std::ldexp(1.0f, exponent));
  }
  EXPECT_EQ(program_->core().cached_plans(), 0U) << "plans of keys seen once were kept";
  // One key again and again (the factor of the first launch): kept from its second miss on.
  std::vector<std::shared_ptr<const LaunchPlan>> plans;
  for (int i = 0; i < 4; ++i, ++step) plans.push_back(launch(step, 2.0f));
  EXPECT_EQ(program_->core().cached_plans(), 1U);
  EXPECT_EQ(plans[1].get(), plans[0].get()) << "the key's second miss was not kept";
  EXPECT_EQ(plans[3].get(), plans[0].get());
  const std::vector<float> out = download(step % 2 == 0 ? a : b);
  ASSERT_EQ(std::memcmp(out.data(), expected.data(), n * sizeof(float)), 0);
  runtime_->release_buffer(a);
  runtime_->release_buffer(b);
}

// The same launches with scalar twins on: from the third on each is the twin of the launch two
// before (ping-pong), so it runs with that launch's plan and its own factor.
TEST_F(ProgramTest, LaunchesDifferingOnlyInAFactorRunAsTwinsWithTheirOwnFactors) {
  const std::uint64_t n = 2048;
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 97) - 40.0f;
  const BufferId a = upload(in);
  const BufferId b = runtime_->create_buffer(n * sizeof(float));
  std::vector<float> expected = in;
  std::vector<std::shared_ptr<const LaunchPlan>> plans;
  for (std::size_t step = 0; step < 24; ++step) {
    const int exponent = static_cast<int>(step / 2 + 1) * (step % 2 == 0 ? 1 : -1);
    const float f = std::ldexp(1.0f, exponent);
    std::shared_ptr<const LaunchPlan> plan;
    const std::vector<Arg> args{Arg::buffer(step % 2 == 0 ? a : b),
                                Arg::buffer(step % 2 == 0 ? b : a), Arg::scalar(f)};
    program_->core().launch("scale", range_1d(n), args, {}, &plan);
    plans.push_back(plan);
    for (float& x : expected) x *= f;
  }
  EXPECT_EQ(program_->core().twin_launches(), 22U);
  EXPECT_EQ(program_->core().cached_plans(), 0U) << "twins asked the plan cache";
  EXPECT_EQ(plans[22].get(), plans[0].get());
  EXPECT_EQ(plans[23].get(), plans[1].get());
  const std::vector<float> out = download(a);
  ASSERT_EQ(std::memcmp(out.data(), expected.data(), n * sizeof(float)), 0);
  runtime_->release_buffer(a);
  runtime_->release_buffer(b);
}

// An argument may point into its buffer (an OpenCL sub-buffer): the kernel indexes from there,
// descriptors count from there, and only the bytes it uses move.
TEST_F(ProgramTest, ArgumentsPointingIntoABufferSplitAndMoveOnlyTheirBytes) {
  const std::uint64_t n = 1024, in_at = 256, out_at = 512;
  std::vector<float> in(2048), out_before(2048, -1.0f);
  for (std::uint64_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  const BufferId a = upload(in);
  const BufferId b = upload(out_before);
  const TransferStats before = runtime_->stats();
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  program_->launch("scale", range_1d(n),
                   {Arg::buffer(a, in_at * sizeof(float)), Arg::buffer(b, out_at * sizeof(float)),
                    Arg::scalar(2.0f)},
                   how);
  EXPECT_EQ(program_->core().last_plan().partitions.size(), runtime_->device_count());
  const std::vector<float> out = download(b);
  for (std::uint64_t i = 0; i < out.size(); ++i) {
    const bool written = i >= out_at && i < out_at + n;
    ASSERT_EQ(out[i], written ? 2.0f * in[i - out_at + in_at] : -1.0f) << i;
  }
  const TransferStats s = runtime_->stats();
  EXPECT_EQ(s.host_to_device.bytes - before.host_to_device.bytes, n * sizeof(float));
  EXPECT_EQ(s.device_to_host.bytes - before.device_to_host.bytes, n * sizeof(float));
  // Through the analysis alone: the same result, split when the analysis is built in.
  program_->launch("scale", range_1d(n),
                   {Arg::buffer(b, out_at * sizeof(float)), Arg::buffer(a, in_at * sizeof(float)),
                    Arg::scalar(0.5f)});
  const std::vector<float> back = download(a);
  for (std::uint64_t i = 0; i < back.size(); ++i) {
    ASSERT_EQ(back[i], in[i]) << i;  // 0.5 * (2 * in) over exactly the range it came from
  }
  if (program_->analysis_error().empty()) {
    EXPECT_EQ(program_->core().last_plan().partitions.size(), runtime_->device_count());
  }
}

TEST_F(ProgramTest, AnArgumentOffsetTheDeviceCannotAlignIsRefusedAndNothingChanges) {
  const BufferId a = upload(std::vector<float>(256, 1.0f));
  const BufferId b = upload(std::vector<float>(256, 5.0f));
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  try {
    program_->launch("scale", range_1d(64), {Arg::buffer(a), Arg::buffer(b, 4), Arg::scalar(2.0f)},
                     how);
    FAIL() << "a 4-byte offset on POCL (128-byte CL_DEVICE_MEM_BASE_ADDR_ALIGN) was accepted";
  } catch (const PreconditionError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("argument 1 points 4 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("needs a multiple of"), std::string::npos) << m;
  }
  EXPECT_EQ(download(b), std::vector<float>(256, 5.0f));
  try {
    program_->launch("scale", range_1d(64),
                     {Arg::buffer(a), Arg::buffer(b, 2048), Arg::scalar(2.0f)}, how);
    FAIL() << "an offset beyond the buffer was accepted";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("points 2048 bytes into a buffer of 1024"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ProgramTest, ANullPointerArgumentReachesTheKernelAsNull) {
  const std::uint64_t n = 600;
  std::vector<float> data(n), bias(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    data[i] = static_cast<float>(i);
    bias[i] = static_cast<float>(3 * i);
  }
  const BufferId d = upload(data);
  const BufferId b = upload(bias);
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read_write, {own()})};
  program_->launch("add_bias", range_1d(n), {Arg::buffer(d), Arg::null_buffer()}, how);
  std::vector<float> out = download(d);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], data[i] + 1.0f) << i;
  how.accesses.push_back(AccessDescriptor::affine(1, AccessMode::read, {own()}));
  program_->launch("add_bias", range_1d(n), {Arg::buffer(d), Arg::buffer(b)}, how);
  out = download(d);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], data[i] + 1.0f + bias[i]) << i;
  // Without descriptors (the analysis, or one device): the same.
  program_->launch("add_bias", range_1d(n), {Arg::buffer(d), Arg::null_buffer()});
  out = download(d);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], data[i] + 2.0f + bias[i]) << i;
}

// A kernel that indexes by get_group_id splits (its partitions run a build whose group ids count
// over the whole launch); with a global offset of its own too, where the group ids count from that
// offset (OpenCL 1.2 section 6.12.1: get_group_id is 0 .. get_num_groups - 1, the offset only
// moves get_global_id), with one build per offset whatever the global size; with a driver-chosen
// work-group size it runs on one device and says why.
TEST_F(ProgramTest, KernelsThatUseGroupIdsSplitWithTheWholeLaunchsGroupIds) {
  Program program(*runtime_, R"CLC(
kernel void group_sums(global const int* in, global int* sums, local int* scratch) {
  const size_t l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t k = 0; k < get_local_size(0); ++k) s += scratch[k];
    sums[get_group_id(0)] = s;
  }
}
)CLC");
  program.set_log([this](const std::string& m) { log_.push_back(m); });
  constexpr std::uint64_t groups = 48, local = 32;
  std::vector<std::int32_t> in(groups * local);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i % 13) - 5;
  const BufferId a = runtime_->create_buffer(in.size() * 4);
  runtime_->write_blocking(a, 0, std::as_bytes(std::span(in)));
  const BufferId sums = runtime_->create_buffer(groups * 4);
  NDRange r = range_1d(groups * local);
  r.local = {local, 1, 1};
  program.launch("group_sums", r, {Arg::buffer(a), Arg::buffer(sums), Arg::local(local * 4)});
  std::vector<std::int32_t> got(groups);
  runtime_->read_blocking(sums, 0, std::as_writable_bytes(std::span(got)));
  for (std::uint64_t g = 0; g < groups; ++g) {
    std::int32_t want = 0;
    for (std::uint64_t k = 0; k < local; ++k) want += in[g * local + k];
    ASSERT_EQ(got[g], want) << "group " << g;
  }
  if (program.analysis_error().empty()) {
    EXPECT_EQ(program.core().last_plan().partitions.size(), runtime_->device_count());
    EXPECT_TRUE(log_.empty()) << log_.front();
  }
  // With a global offset of its own (whole groups or not), over every device, for two global
  // sizes: group g sums the items from offset + g * local; one build per offset.
  for (const std::uint64_t offset : {local, std::uint64_t{5}}) {
    for (const std::uint64_t n : {groups - 2, groups - 8}) {
      const std::vector<std::int32_t> sentinel(groups, -12345);
      runtime_->write_blocking(sums, 0, std::as_bytes(std::span(sentinel)));
      NDRange o = range_1d(n * local);
      o.local = {local, 1, 1};
      o.offset = {offset, 0, 0};
      program.launch("group_sums", o, {Arg::buffer(a), Arg::buffer(sums), Arg::local(local * 4)});
      runtime_->read_blocking(sums, 0, std::as_writable_bytes(std::span(got)));
      for (std::uint64_t g = 0; g < groups; ++g) {
        std::int32_t want = -12345;
        if (g < n) {
          want = 0;
          for (std::uint64_t k = 0; k < local; ++k) want += in[offset + g * local + k];
        }
        ASSERT_EQ(got[g], want) << "group " << g << " of " << n << " at offset " << offset;
      }
      if (program.analysis_error().empty()) {
        EXPECT_EQ(program.core().last_plan().partitions.size(), runtime_->device_count())
            << "offset " << offset << ", " << n << " groups";
        EXPECT_TRUE(log_.empty()) << log_.front();
      }
    }
  }
  EXPECT_EQ(program.core().size_variant_builds(), 2U) << "one build per offset";
  // The driver chooses the work-group size: one device, and why. (Room for any group size: one
  // item per group, up to POCL's largest group.)
  const BufferId many = runtime_->create_buffer(groups * local * 4);
  NDRange driver = range_1d(groups * local);
  program.launch("group_sums", driver, {Arg::buffer(a), Arg::buffer(many), Arg::local(4096 * 4)});
  runtime_->finish();
  EXPECT_EQ(program.core().last_plan().partitions.size(), 1U);
  ASSERT_FALSE(log_.empty());
  EXPECT_NE(log_.back().find("get_group_id"), std::string::npos) << log_.back();
  EXPECT_NE(log_.back().find("work-group size"), std::string::npos) << log_.back();
}

// The program built with whole-launch group ids is made on the first launch that splits a
// get_group_id kernel, once, even when several threads launch at once; a program whose launches
// never split (the driver picks the work-group size, or one device) never builds it. (The later
// build uses the headers as the first build read them: CallsInsideIncludedHeadersAreSeen removes
// its headers before its first launch.)
TEST_F(ProgramTest, TheGroupIdBuildIsMadeOnceOnTheFirstLaunchThatSplits) {
  const char* source = R"CLC(
kernel void group_sums(global const int* in, global int* sums, local int* scratch) {
  const size_t l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    int s = 0;
    for (size_t k = 0; k < get_local_size(0); ++k) s += scratch[k];
    sums[get_group_id(0)] = s;
  }
}
)CLC";
  constexpr std::uint64_t groups = 24, local = 16;
  std::vector<std::int32_t> in(groups * local);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i % 11) - 4;
  const BufferId a = runtime_->create_buffer(in.size() * 4);
  runtime_->write_blocking(a, 0, std::as_bytes(std::span(in)));
  const auto check = [&](BufferId sums) {
    std::vector<std::int32_t> got(groups);
    runtime_->read_blocking(sums, 0, std::as_writable_bytes(std::span(got)));
    for (std::uint64_t g = 0; g < groups; ++g) {
      std::int32_t want = 0;
      for (std::uint64_t k = 0; k < local; ++k) want += in[g * local + k];
      ASSERT_EQ(got[g], want) << "group " << g;
    }
  };
  NDRange r = range_1d(groups * local);
  r.local = {local, 1, 1};
  {
    Program never_split(*runtime_, source);
    const BufferId sums = runtime_->create_buffer(groups * 4);
    LaunchOptions one_device;
    one_device.device = 1;
    never_split.launch("group_sums", r, {Arg::buffer(a), Arg::buffer(sums), Arg::local(local * 4)},
                       one_device);
    check(sums);
    EXPECT_EQ(never_split.core().group_variant_builds(), 0U) << "built for a one-device launch";
  }
  Program program(*runtime_, source);
  EXPECT_EQ(program.core().group_variant_builds(), 0U) << "built before any launch";
  std::vector<BufferId> sums(4);
  for (BufferId& b : sums) b = runtime_->create_buffer(groups * 4);
  std::vector<std::thread> threads;
  for (const BufferId b : sums) {
    threads.emplace_back([&, b] {
      program.launch("group_sums", r, {Arg::buffer(a), Arg::buffer(b), Arg::local(local * 4)});
    });
  }
  for (std::thread& t : threads) t.join();
  for (const BufferId b : sums) check(b);
  EXPECT_EQ(program.core().group_variant_builds(), 1U);
  if (program.analysis_error().empty()) {
    EXPECT_EQ(program.core().last_plan().partitions.size(), runtime_->device_count());
  }
  program.launch("group_sums", r, {Arg::buffer(a), Arg::buffer(sums[0]), Arg::local(local * 4)});
  check(sums[0]);
  EXPECT_EQ(program.core().group_variant_builds(), 1U) << "built again";
}

// A split launch runs each partition with a global offset over part of the NDRange. A program
// calling get_global_size, get_num_groups or get_global_offset (here from a helper function, which
// a hidden kernel argument would not reach) is built per launch shape with the whole launch's
// values, and splits: with and without a global offset of its own, the values equal the whole
// launch's and those of the same launch on one device. A kernel also calling get_group_id gets
// the whole launch's group ids under a global offset too.
TEST_F(ProgramTest, KernelsReadingTheLaunchSizesSplitWithTheWholeLaunchsValues) {
  constexpr std::uint64_t groups = 48, local = 32, offset = 64;
  struct Case {
    std::string call;
    std::function<std::uint64_t(std::uint64_t item, const NDRange&)> want;
  };
  const std::vector<Case> cases = {
      {"get_global_size(0)", [](std::uint64_t, const NDRange& r) { return r.global[0]; }},
      {"get_num_groups(0)",
       [](std::uint64_t, const NDRange& r) { return r.global[0] / r.local[0]; }},
      {"get_global_offset(0)", [](std::uint64_t, const NDRange& r) { return r.offset[0]; }},
      {"get_group_id(0) * 100000 + get_num_groups(0) * 100 + get_global_offset(0)",
       [](std::uint64_t i, const NDRange& r) {
         return (i - r.offset[0]) / r.local[0] * 100000 + r.global[0] / r.local[0] * 100 +
                r.offset[0];
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.call);
    Program program(*runtime_, "ulong value(void) { return " + c.call +
                                   "; }\n"
                                   "kernel void shape(global ulong* out) {\n"
                                   "  out[get_global_id(0)] = value();\n"
                                   "}\n");
    program.set_log([this](const std::string& m) { log_.push_back(m); });
    EXPECT_EQ(program.core().size_variant_builds(), 0U) << "built before any launch";
    const std::uint64_t items = groups * local + offset;
    const BufferId split = runtime_->create_buffer(items * 8);
    const BufferId alone = runtime_->create_buffer(items * 8);
    for (const std::uint64_t user_offset : {std::uint64_t{0}, offset}) {
      SCOPED_TRACE("global offset " + std::to_string(user_offset));
      NDRange r = range_1d(groups * local - user_offset);
      r.local = {local, 1, 1};
      r.offset = {user_offset, 0, 0};
      log_.clear();
      program.launch("shape", r, {Arg::buffer(split)});
      if (program.analysis_error().empty()) {
        const LaunchPlan plan = program.core().last_plan();
        EXPECT_EQ(plan.partitions.size(), runtime_->device_count());
        EXPECT_TRUE(log_.empty()) << log_.front();
        // Partitions hold only their bytes: the rewritten kernels run, in the same variant.
        if (plan.partitions.size() > 1) {
          EXPECT_TRUE(plan.partitions.back().rebased_kernel);
        }
      }
      LaunchOptions one_device;
      one_device.device = 0;
      program.launch("shape", r, {Arg::buffer(alone)}, one_device);
      std::vector<std::uint64_t> got(items), want(items);
      runtime_->read_blocking(split, 0, std::as_writable_bytes(std::span(got)));
      runtime_->read_blocking(alone, 0, std::as_writable_bytes(std::span(want)));
      for (std::uint64_t i = r.offset[0]; i < r.offset[0] + r.global[0]; ++i) {
        ASSERT_EQ(got[i], c.want(i, r)) << "item " << i;
        ASSERT_EQ(got[i], want[i]) << "item " << i << " against one device";
      }
    }
    EXPECT_EQ(program.core().size_variant_builds(),
              runtime_->device_count() > 1 && program.analysis_error().empty() ? 2U : 0U)
        << "one build per launch shape, none for one-device launches";
  }
}

// The same in two dimensions, split along each, with a global offset in both: each dimension
// gets its own whole-launch values, and a dimension beyond the launch's reads OpenCL's 1 and 0.
TEST_F(ProgramTest, TwoDimensionalLaunchesReadEachDimensionsWholeValues) {
  Program program(*runtime_, R"CLC(
kernel void shape(global ulong* out, uint width) {
  const size_t x = get_global_id(0), y = get_global_id(1);
  out[y * width + x] = get_group_id(0) + 100 * get_group_id(1) + 10000 * get_num_groups(0) +
                       1000000 * get_num_groups(1) + 100000000 * get_global_size(2) +
                       1000000000 * get_global_offset(1) + 100000000000 * get_global_offset(2);
}
)CLC");
  program.set_log([this](const std::string& m) { log_.push_back(m); });
  NDRange r;
  r.dims = 2;
  r.offset = {8, 4, 0};
  r.global = {64, 48, 1};
  r.local = {8, 4, 1};
  const std::uint32_t width = 72, height = 52;
  const BufferId out = runtime_->create_buffer(std::uint64_t{width} * height * 8);
  for (const std::uint32_t dim : {0U, 1U}) {
    SCOPED_TRACE("split along dimension " + std::to_string(dim));
    LaunchOptions how;
    how.split_dimension = dim;
    log_.clear();
    program.launch("shape", r, {Arg::buffer(out), Arg::scalar(width)}, how);
    if (program.analysis_error().empty()) {
      EXPECT_EQ(program.core().last_plan().partitions.size(), runtime_->device_count());
      EXPECT_TRUE(log_.empty()) << log_.front();
    }
    std::vector<std::uint64_t> got(std::uint64_t{width} * height);
    runtime_->read_blocking(out, 0, std::as_writable_bytes(std::span(got)));
    for (std::uint64_t y = r.offset[1]; y < r.offset[1] + r.global[1]; ++y) {
      for (std::uint64_t x = r.offset[0]; x < r.offset[0] + r.global[0]; ++x) {
        const std::uint64_t want = (x - 8) / 8 + 100 * ((y - 4) / 4) + 10000 * 8 + 1000000 * 12 +
                                   100000000 * 1 + 1000000000ULL * 4;
        ASSERT_EQ(got[y * width + x], want) << "item " << x << ", " << y;
      }
    }
  }
}

// At most ProgramCore::kSizeVariants launch shapes get a build with the whole launch's sizes
// (one per shape, also when several threads launch a new shape at once); a launch of another
// shape runs on one device, right, and the log says why. Shapes built before still split.
TEST_F(ProgramTest, LaunchShapesBeyondTheBuildCapRunOnOneDeviceAndSaySo) {
  if (runtime_->device_count() < 2) GTEST_SKIP() << "needs 2 devices";
  Program program(*runtime_, R"CLC(
kernel void fill(global uint* out) { out[get_global_id(0)] = get_global_size(0); }
)CLC");
  program.set_log([this](const std::string& m) { log_.push_back(m); });
  constexpr std::uint64_t local = 16;
  constexpr std::uint64_t shapes = ProgramCore::kSizeVariants + 1;
  const BufferId out = runtime_->create_buffer((6 + shapes) * local * 4);
  const auto launch = [&](std::uint64_t shape) {
    NDRange r = range_1d((6 + shape) * local);
    r.local = {local, 1, 1};
    log_.clear();
    program.launch("fill", r, {Arg::buffer(out)});
    std::vector<std::uint32_t> got(r.global[0]);
    runtime_->read_blocking(out, 0, std::as_writable_bytes(std::span(got)));
    for (std::uint64_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], r.global[0]) << "item " << i << " of shape " << shape;
    }
  };
  {  // several threads launching one new shape at once: one build
    std::vector<BufferId> outs(4);
    for (BufferId& b : outs) b = runtime_->create_buffer(6 * local * 4);
    NDRange r = range_1d(6 * local);
    r.local = {local, 1, 1};
    std::vector<std::thread> threads;
    for (const BufferId b : outs) {
      threads.emplace_back([&, b] { program.launch("fill", r, {Arg::buffer(b)}); });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(program.core().size_variant_builds(), 1U);
    for (const BufferId b : outs) {
      std::vector<std::uint32_t> got(r.global[0]);
      runtime_->read_blocking(b, 0, std::as_writable_bytes(std::span(got)));
      EXPECT_EQ(got, std::vector<std::uint32_t>(r.global[0], 6 * local));
    }
  }
  for (std::uint64_t shape = 0; shape + 1 < shapes; ++shape) {
    launch(shape);
    if (program.analysis_error().empty()) {
      EXPECT_EQ(program.core().last_plan().partitions.size(), runtime_->device_count());
    }
  }
  EXPECT_EQ(program.core().size_variant_builds(), ProgramCore::kSizeVariants);
  launch(shapes - 1);
  EXPECT_EQ(program.core().last_plan().partitions.size(), 1U);
  ASSERT_FALSE(log_.empty());
  EXPECT_NE(log_.back().find("get_global_size"), std::string::npos) << log_.back();
  EXPECT_NE(log_.back().find("8 other launch shapes"), std::string::npos) << log_.back();
  EXPECT_EQ(program.core().size_variant_builds(), ProgramCore::kSizeVariants);
  launch(0);
  if (program.analysis_error().empty()) {
    EXPECT_EQ(program.core().last_plan().partitions.size(), runtime_->device_count());
  }
  EXPECT_EQ(program.core().size_variant_builds(), ProgramCore::kSizeVariants) << "built again";
}

// A kernel over a column block of a row-major grid reads and writes strided rows: with
// RuntimeOptions::rect_copies they move as one rectangular copy each way instead of one copy per
// row, with the same bytes and the same result.
TEST(ProgramRectCopies, StridedRowsMoveAsOneRectCopyWithTheSameBytesAndResult) {
  constexpr std::uint64_t width = 512, rows = 300, block = 64;
  std::vector<float> in(width * rows), out_before(width * rows, -1.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 977);
  std::vector<std::vector<float>> results;
  for (const bool rect : {true, false}) {
    SCOPED_TRACE(rect ? "rect copies" : "a copy per row");
    RuntimeOptions options{UpdateStrategy::lazy};
    options.rect_copies = rect;
    Runtime rt(opencl::make_opencl_devices(""), options);
    Program program(rt, R"CLC(
kernel void column_block(global const float* in, global float* out, int width) {
  const int x = get_global_id(0), y = get_global_id(1);
  out[y * width + x] = 2.0f * in[y * width + x];
}
)CLC");
    const BufferId a = rt.create_buffer(in.size() * sizeof(float));
    const BufferId b = rt.create_buffer(in.size() * sizeof(float));
    rt.write_blocking(a, 0, std::as_bytes(std::span(in)));
    rt.write_blocking(b, 0, std::as_bytes(std::span(out_before)));
    NDRange r;
    r.dims = 2;
    r.global = {block, rows, 1};
    LaunchOptions on_one;
    on_one.device = 0;
    program.launch("column_block", r,
                   {Arg::buffer(a), Arg::buffer(b), Arg::scalar(static_cast<std::int32_t>(width))},
                   on_one);
    std::vector<float> out(in.size());
    rt.read_blocking(b, 0, std::as_writable_bytes(std::span(out)));
    for (std::uint64_t y = 0; y < rows; ++y) {
      for (std::uint64_t x = 0; x < width; ++x) {
        const std::uint64_t i = y * width + x;
        ASSERT_EQ(out[i], x < block ? 2.0f * in[i] : -1.0f) << "x " << x << " y " << y;
      }
    }
    results.push_back(out);
    if (!program.analysis_error().empty()) continue;  // without it the whole buffer is read
    const TransferStats s = rt.stats();
    EXPECT_EQ(s.host_to_device.bytes, rows * block * sizeof(float));
    EXPECT_EQ(s.device_to_host.bytes, rows * block * sizeof(float));
    EXPECT_EQ(s.host_to_device.copies, rect ? 1U : rows);
    EXPECT_EQ(s.device_to_host.copies, rect ? 1U : rows);
  }
  EXPECT_EQ(results[0], results[1]);
}

// The offset-dependent scan reads the files a program includes: a header calling get_num_groups
// gets the build with the whole launch's sizes (unseen, a split launch would read each
// partition's group count); a header calling get_group_id gets the whole-launch group-id build.
// Both split and give the single-device result.
TEST_F(ProgramTest, CallsInsideIncludedHeadersAreSeen) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("unimem-include-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "groups.h") << "int groups_of(void) { return (int)get_num_groups(0); }\n";
    std::ofstream(dir / "group_id.h")
        << "#include \"nested.h\"\nint group_of(void) { return nested_group(); }\n";
    std::ofstream(dir / "nested.h") << "int nested_group(void) { return (int)get_group_id(0); }\n";
  }
  const std::string options = "-I" + dir.string();
  Program counts(*runtime_, R"CLC(
#include "groups.h"
kernel void count(global int* out) { out[get_global_id(0)] = groups_of(); }
)CLC",
                 options);
  counts.set_log([this](const std::string& m) { log_.push_back(m); });
  Program ids(*runtime_, R"CLC(
#include "group_id.h"
kernel void ids(global int* out) { out[get_global_id(0)] = group_of(); }
)CLC",
              options);
  ids.set_log([this](const std::string& m) { log_.push_back(m); });
  // The include directory stays while the programs launch: partial residency builds the
  // rewritten program (api/kernel_rewrite.hpp) on the first split launch that needs it.
  struct RemoveAtEnd {
    std::filesystem::path dir;
    ~RemoveAtEnd() { std::filesystem::remove_all(dir); }
  } remove_at_end{dir};
  constexpr std::uint64_t groups = 24, local = 16;
  NDRange r = range_1d(groups * local);
  r.local = {local, 1, 1};
  const BufferId out = runtime_->create_buffer(groups * local * 4);
  std::vector<std::int32_t> got(groups * local);
  counts.launch("count", r, {Arg::buffer(out)});
  if (counts.analysis_error().empty()) {
    EXPECT_EQ(counts.core().last_plan().partitions.size(), runtime_->device_count());
    EXPECT_TRUE(log_.empty()) << log_.back();
  }
  runtime_->read_blocking(out, 0, std::as_writable_bytes(std::span(got)));
  EXPECT_EQ(got, std::vector<std::int32_t>(groups * local, static_cast<std::int32_t>(groups)));
  const std::size_t logged = log_.size();
  ids.launch("ids", r, {Arg::buffer(out)});
  runtime_->read_blocking(out, 0, std::as_writable_bytes(std::span(got)));
  for (std::uint64_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], static_cast<std::int32_t>(i / local)) << i;
  }
  if (ids.analysis_error().empty()) {
    EXPECT_EQ(ids.core().last_plan().partitions.size(), runtime_->device_count());
    EXPECT_EQ(log_.size(), logged) << log_.back();
  }
}

TEST_F(ProgramTest, RunsOnOneDeviceWhenAsked) {
  const BufferId a = upload(std::vector<float>(64, 1.0f));
  const BufferId b = runtime_->create_buffer(64 * sizeof(float));
  LaunchOptions how;
  how.device = 1;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  program_->launch("scale", range_1d(64), {Arg::buffer(a), Arg::buffer(b), Arg::scalar(3.0f)}, how);
  const LaunchPlan plan = program_->core().last_plan();
  ASSERT_EQ(plan.partitions.size(), 1U);
  EXPECT_EQ(plan.partitions[0].device, 1U);
  EXPECT_EQ(download(b), std::vector<float>(64, 3.0f));
  EXPECT_EQ(runtime_->core().valid_agents(b, 0).contains(agent_of_device(1)), true);
}

TEST_F(ProgramTest, MayWritesAreFetchedFirstSoUnwrittenBytesStayRight) {
  const std::uint64_t n = 1000;
  std::vector<float> in(n);
  std::vector<float> old(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    in[i] = (i % 3 == 0) ? static_cast<float>(i) : -1.0f;
    old[i] = 0.5f + static_cast<float>(i);
  }
  const BufferId a = upload(in);
  const BufferId b = upload(old);
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::may_write, {own()})};
  runtime_->core().reset_device_memory_peaks();
  program_->launch("keep_positive", range_1d(n), {Arg::buffer(a), Arg::buffer(b)}, how);
  EXPECT_EQ(program_->core().last_plan().partitions.size(), runtime_->device_count());
  const std::vector<float> out = download(b);
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], in[i] > 0.0f ? in[i] : old[i]) << i;
  }
  // A may-write set is not exact: the buffer keeps full mirrors, and the log says so once.
  ASSERT_EQ(log_.size(), 1U);
  EXPECT_NE(log_[0].find("'keep_positive' argument 1"), std::string::npos) << log_[0];
  EXPECT_NE(log_[0].find("full mirrors"), std::string::npos) << log_[0];
  EXPECT_NE(log_[0].find("may-write"), std::string::npos) << log_[0];
  for (const DeviceMemoryReport& d : runtime_->core().device_memory()) {
    EXPECT_GE(d.memory.held_bytes, n * sizeof(float)) << "the mirror of b";
  }
  program_->launch("keep_positive", range_1d(n), {Arg::buffer(a), Arg::buffer(b)}, how);
  EXPECT_EQ(log_.size(), 1U);
}

// A buffer passed through a parameter the rewrite cannot read (here a typedef'd pointer) keeps
// full mirrors, the log names the kernel and argument, and the result is right.
TEST_F(ProgramTest, APointerTheRewriteCannotReadKeepsFullMirrorsAndIsLogged) {
  Program typed(*runtime_, R"CLC(
typedef global float* floats;
kernel void twice(global const float* in, floats out) {
  const int i = get_global_id(0);
  out[i] = 2.0f * in[i];
}
)CLC");
  typed.set_log([this](const std::string& m) { log_.push_back(m); });
  const std::uint64_t n = 2048;
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  const BufferId a = upload(in);
  const BufferId b = runtime_->create_buffer(n * sizeof(float));
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  typed.launch("twice", range_1d(n), {Arg::buffer(a), Arg::buffer(b)}, how);
  typed.launch("twice", range_1d(n), {Arg::buffer(a), Arg::buffer(b)}, how);
  ASSERT_EQ(typed.core().last_plan().partitions.size(), runtime_->device_count());
  const std::vector<float> out = download(b);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;
  ASSERT_EQ(log_.size(), 1U);
  EXPECT_NE(log_[0].find("'twice' argument 1"), std::string::npos) << log_[0];
  EXPECT_NE(log_[0].find("full mirrors"), std::string::npos) << log_[0];
  for (const DeviceMemoryReport& d : runtime_->core().device_memory()) {
    // b whole, and at least this device's share of a
    EXPECT_GE(d.memory.held_bytes,
              n * sizeof(float) + n * sizeof(float) / runtime_->device_count());
  }
}

// The rewrite itself (api/kernel_rewrite.hpp): every __global pointer of every kernel becomes
// buffer + ulong offset; a parameter list it cannot read is an error naming the kernel.
TEST(KernelRewrite, GlobalPointersTakeABufferAndAnOffset) {
  const RewrittenSource r = rewrite_for_offsets(R"CLC(
void helper(global float* p) { p[0] = 1.0f; }
kernel void k(global const float* in, int n, __global float4* restrict out, local float* s) {
  out[0] = in[n];
}
__kernel void other(float x) {}
)CLC");
  EXPECT_EQ(r.global_pointers.at("k"), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(r.global_pointers.at("other"), (std::vector<bool>{false}));
  EXPECT_EQ(r.global_pointers.count("helper"), 0U);  // not a kernel: receives rebased pointers
  EXPECT_NE(r.source.find("in__um_base, ulong in__um_offset"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("out__um_base, ulong out__um_offset"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("void helper(global float* p)"), std::string::npos) << r.source;
  try {
    (void)rewrite_for_offsets("kernel void broken(global float* a {\n}");
    FAIL() << "no error";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("'broken'"), std::string::npos) << e.what();
  }
}

// Partial residency (BBMM Algorithm 2) on OpenCL devices: each device holds only the bytes its
// partition touches, so a partition whose bytes start after byte 0 runs the rewritten kernel
// with its buffers rebased (RuntimeCore in runtime_core.hpp), with the same result.
TEST_F(ProgramTest, EachDeviceHoldsOnlyItsPartitionsBytesAndTheKernelIsRebased) {
  const std::uint64_t n = 4096;
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) - 100.0f;
  const BufferId a = upload(in);
  const BufferId b = runtime_->create_buffer(n * sizeof(float));
  runtime_->core().reset_device_memory_peaks();
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  for (int repeat = 0; repeat < 2; ++repeat) {
    program_->launch("scale", range_1d(n), {Arg::buffer(a), Arg::buffer(b), Arg::scalar(3.0f)},
                     how);
  }
  const LaunchPlan plan = program_->core().last_plan();
  ASSERT_EQ(plan.partitions.size(), runtime_->device_count());
  // The plan offers the rewritten kernel; the runtime runs it where a box starts after byte 0.
  for (const LaunchPartition& p : plan.partitions) {
    EXPECT_NE(p.rebased_kernel, nullptr);
    ASSERT_NE(p.rebased_pointers, nullptr);
    EXPECT_EQ(*p.rebased_pointers, (std::vector<bool>{true, true, false}));
  }
  const std::vector<float> out = download(b);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 3.0f * in[i]) << i;
  // A box starts at a multiple of 128 bytes (RuntimeCore: kernels' pointers stay as aligned as
  // with full mirrors), so a partition whose bytes start elsewhere holds up to 127 more bytes
  // per buffer; partitions of 2 devices start on such a multiple, those of 3 do not.
  constexpr std::uint64_t kAlignmentSlack = 2 * 127;  // two buffers
  std::uint64_t held = 0;
  for (const DeviceMemoryReport& d : runtime_->core().device_memory()) {
    EXPECT_GE(d.memory.peak_held_bytes, d.peak_need_bytes);
    EXPECT_LE(d.memory.peak_held_bytes, d.peak_need_bytes + kAlignmentSlack);
    EXPECT_LT(d.memory.peak_held_bytes, 2 * n * sizeof(float));  // less than two full mirrors
    held += d.memory.held_bytes;
  }
  // both buffers, each byte on one device (plus the alignment of boxes after the first)
  EXPECT_GE(held, 2 * n * sizeof(float));
  EXPECT_LE(held, 2 * n * sizeof(float) + kAlignmentSlack * (runtime_->device_count() - 1));
  EXPECT_TRUE(log_.empty()) << log_.front();
}

TEST_F(ProgramTest, OverlappingWritesFallBackToOneDeviceWithAMessage) {
  const BufferId b = upload(std::vector<float>(16, 0.0f));
  LaunchOptions how;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::write, {row_major_piece(4, {0})})};
  program_->launch("flag", range_1d(128), {Arg::buffer(b)}, how);
  EXPECT_EQ(program_->core().last_plan().partitions.size(), 1U);
  ASSERT_EQ(log_.size(), 1U);
  EXPECT_NE(log_[0].find("'flag'"), std::string::npos) << log_[0];
  EXPECT_NE(log_[0].find("argument 0"), std::string::npos) << log_[0];
  EXPECT_NE(log_[0].find("[0, 4)"), std::string::npos) << log_[0];
  std::vector<float> want(16, 0.0f);
  want[0] = 7.0f;
  EXPECT_EQ(download(b), want);
}

TEST_F(ProgramTest, AnArgumentWithoutDescriptorRunsOnOneDeviceAndStaysCorrect) {
  const BufferId b = upload(std::vector<float>(16, 2.0f));
  program_->launch("flag", range_1d(4), {Arg::buffer(b)});
  EXPECT_EQ(program_->core().last_plan().partitions.size(), 1U);
  EXPECT_EQ(log_.size(), 1U);
  std::vector<float> want(16, 2.0f);
  want[0] = 7.0f;
  EXPECT_EQ(download(b), want);
}

TEST_F(ProgramTest, SplitsAlongTheRequestedDimension) {
  const int n = 24;
  std::vector<float> in(n * n);
  for (int i = 0; i < n * n; ++i) in[i] = static_cast<float>(i);
  const BufferId a = upload(in);
  const BufferId b = runtime_->create_buffer(in.size() * sizeof(float));
  NDRange r;
  r.dims = 2;
  r.global = {static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(n), 1};
  LaunchOptions how;
  how.split_dimension = 0;  // x: each partition writes whole rows of out (out[x * n + y])
  // in is read at y * n + x = g0 + n * g1; out is written at x * n + y = n * g0 + g1.
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {row_major_piece(4, {1, n})}),
                  AccessDescriptor::affine(1, AccessMode::write, {row_major_piece(4, {n, 1})})};
  program_->launch("transpose_add", r, {Arg::buffer(a), Arg::buffer(b), Arg::scalar(n)}, how);
  const LaunchPlan plan = program_->core().last_plan();
  ASSERT_EQ(plan.partitions.size(), runtime_->device_count());
  EXPECT_EQ(plan.partitions[1].range.offset[0], plan.partitions[0].range.global[0]);
  EXPECT_EQ(plan.partitions[1].range.global[1], static_cast<std::uint64_t>(n));
  const std::vector<float> out = download(b);
  for (int x = 0; x < n; ++x) {
    for (int y = 0; y < n; ++y) ASSERT_EQ(out[x * n + y], in[y * n + x] + 1.0f);
  }
}

TEST_F(ProgramTest, MeasuredBalanceStaysCorrectAndCoversTheRange) {
  const std::uint64_t n = 4096;
  const BufferId a = upload(std::vector<float>(n, 1.0f));
  const BufferId b = runtime_->create_buffer(n * sizeof(float));
  LaunchOptions how;
  how.balance = Balance::measured;
  how.accesses = {AccessDescriptor::affine(0, AccessMode::read, {own()}),
                  AccessDescriptor::affine(1, AccessMode::write, {own()})};
  for (int i = 0; i < 4; ++i) {
    program_
        ->launch("scale", range_1d(n),
                 {Arg::buffer(a), Arg::buffer(b), Arg::scalar(static_cast<float>(i))}, how)
        .wait();
    std::uint64_t covered = 0;
    for (const auto& p : program_->core().last_plan().partitions) covered += p.range.global[0];
    EXPECT_EQ(covered, n);
    EXPECT_EQ(download(b), std::vector<float>(n, static_cast<float>(i)));
  }
}

TEST_F(ProgramTest, UnknownKernelsAndBadSourcesAreReportedByName) {
  const BufferId b = upload(std::vector<float>(4, 0.0f));
  try {
    program_->launch("no_such_kernel", range_1d(4), {Arg::buffer(b)});
    FAIL() << "no exception";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Program(*runtime_, "kernel void broken(global int* p) { p[0] = undeclared; }"),
               DeviceError);
}

// Issue 5: analysis results are keyed by source and options (a program built twice is analysed
// once), and the analysis time is reported next to the OpenCL build time.
TEST_F(ProgramTest, ReportsBuildAndAnalysisTimesAndAnalysesAProgramOnce) {
  // A source no other test builds, so its first build is not served from the cache.
  const std::string source = std::string(kSource) + "\n// ReportsBuildAndAnalysisTimes\n";
  const std::size_t entries = detail::ProgramAnalysis::cache_size();
  const Program first(*runtime_, source);
  const ProgramBuildReport& a = first.build_report();
  EXPECT_EQ(a.contexts, 1u);  // POCL: every device in one context
  EXPECT_GT(a.opencl_build_seconds, 0.0);
  EXPECT_FALSE(a.analysis_cached);
  EXPECT_EQ(detail::ProgramAnalysis::cache_size(), entries + 1);

  const Program second(*runtime_, source);
  EXPECT_TRUE(second.build_report().analysis_cached);
  EXPECT_EQ(second.analyzed(), first.analyzed());
  EXPECT_EQ(second.analysis_error(), first.analysis_error());
  if (first.analyzed()) {
    EXPECT_GT(a.analysis_seconds, 0.0);
  }

  const Program other_options(*runtime_, source, "-DUNUSED=1");
  EXPECT_FALSE(other_options.build_report().analysis_cached);
  EXPECT_EQ(detail::ProgramAnalysis::cache_size(), entries + 2);
}

// Out-of-core launches (issue 10): a partition whose buffers do not fit its device runs as
// chunks of its work-groups, one after another on the device, each holding only its own boxes.
class OutOfCoreTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kCap = 32 * 1024;  // bytes per device
  void SetUp() override {
    ASSERT_TRUE(kPoclRequested);
    DeviceRegistry devices = opencl::make_opencl_devices("");
    if (devices.size() < 2) GTEST_SKIP() << "needs two OpenCL devices";
    RuntimeOptions options{UpdateStrategy::lazy};
    options.device_memory = kCap;
    runtime_ = std::make_unique<Runtime>(std::move(devices), options);
    program_ = std::make_unique<Program>(*runtime_, R"CLC(
kernel void blur(global const float* in, global float* out) {
  const int i = get_global_id(0);
  out[i] = in[i] + 2.0f * in[i + 1];
}
kernel void sum_all(global const float* b, global float* out, int n) {
  float s = 0.0f;
  for (int k = 0; k < n; ++k) s += b[k];
  out[get_global_id(0)] = s;
}
)CLC");
  }
  BufferId upload(const std::vector<float>& v) {
    const BufferId b = runtime_->create_buffer(v.size() * sizeof(float));
    runtime_->write_blocking(b, 0, std::as_bytes(std::span(v)));
    return b;
  }
  std::vector<float> download(BufferId b) {
    std::vector<float> v(runtime_->buffer_size(b) / sizeof(float));
    runtime_->read_blocking(b, 0, std::as_writable_bytes(std::span(v)));
    return v;
  }
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Program> program_;
};

TEST_F(OutOfCoreTest, APartitionSeveralTimesTheCapRunsInChunksWithTheSameResult) {
  const std::uint64_t n = 64 * 1024;  // two buffers of 256 KiB: 8x the cap per device on 2 devices
  std::vector<float> a(n + 1);
  for (std::uint64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 37) % 101) - 50.0f;
  std::vector<float> b(n + 1, 0.0f);
  const BufferId ba = upload(a);
  const BufferId bb = upload(b);
  NDRange r;
  r.global = {n, 1, 1};
  r.local = {64, 1, 1};
  const auto accesses = [](std::uint32_t in, std::uint32_t out) {
    return std::vector<AccessDescriptor>{
        AccessDescriptor::affine(
            in, AccessMode::read,
            {row_major_piece(sizeof(float), {1}), row_major_piece(sizeof(float), {1}, 1)}),
        AccessDescriptor::affine(out, AccessMode::write, {row_major_piece(sizeof(float), {1})})};
  };
  runtime_->core().reset_device_memory_peaks();
  // Ping-pong a -> b -> a -> b: each step reads what the previous one wrote, chunk by chunk,
  // so dirty boxes are evicted (written home) and reloaded.
  for (int step = 0; step < 3; ++step) {
    LaunchOptions how;
    const bool forward = step % 2 == 0;
    how.accesses = accesses(0, 1);
    program_->launch("blur", r, {Arg::buffer(forward ? ba : bb), Arg::buffer(forward ? bb : ba)},
                     how);
    const LaunchPlan plan = program_->core().last_plan();
    // each device's share of 512 KiB in chunks of at most 16 KiB (half the cap)
    EXPECT_GE(plan.chunks, 512U / 16U) << "step " << step;
    EXPECT_EQ(plan.partitions.size(), plan.chunks);
    for (const LaunchPartition& p : plan.partitions) {
      EXPECT_EQ(p.group_begin * 64, p.range.offset[0]);
      EXPECT_EQ(p.range.global[0] % 64, 0U);
      EXPECT_TRUE(p.out_of_core);
    }
    // Rounds in order, and a device's consecutive rounds run chunks that do not meet (the two
    // halves of its partition alternate), so a round never replaces the last round's boxes.
    for (std::size_t i = 1; i < plan.partitions.size(); ++i) {
      EXPECT_LE(plan.partitions[i - 1].chunk, plan.partitions[i].chunk);
    }
    for (std::size_t d = 0; d < runtime_->device_count(); ++d) {
      const LaunchPartition* last = nullptr;
      for (const LaunchPartition& p : plan.partitions) {
        if (p.device != d) continue;
        if (last != nullptr) {
          EXPECT_TRUE(p.group_begin != last->group_end && p.group_end != last->group_begin)
              << "device " << d << ": groups [" << last->group_begin << ", " << last->group_end
              << ") then [" << p.group_begin << ", " << p.group_end << ")";
        }
        last = &p;
      }
    }
    std::vector<float>& src = forward ? a : b;
    std::vector<float>& dst = forward ? b : a;
    for (std::uint64_t i = 0; i < n; ++i) dst[i] = src[i] + 2.0f * src[i + 1];
  }
  EXPECT_GE(program_->core().chunks_run(), 3U * 512U / 16U);  // summed over the three launches
  const std::vector<float> got_a = download(ba);
  const std::vector<float> got_b = download(bb);
  ASSERT_EQ(got_a.size(), a.size());
  EXPECT_EQ(std::memcmp(got_a.data(), a.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(got_b.data(), b.data(), b.size() * sizeof(float)), 0);
  std::uint64_t evicted = 0;
  for (const DeviceMemoryReport& d : runtime_->core().device_memory()) {
    EXPECT_LE(d.memory.peak_held_bytes, kCap);
    EXPECT_GT(d.peak_need_bytes, 4 * kCap);
    evicted += d.memory.evicted_bytes;
  }
  EXPECT_GT(evicted, 0U);
  // Chunks' boxes replace the last ones' (no merge moves bytes inside a device), and every
  // chunk's output went home right after its kernel, so no box-out had to write any back.
  const TransferStats moved = runtime_->core().stats();
  EXPECT_EQ(moved.relocated_bytes, 0U);
  EXPECT_EQ(moved.eviction_writeback_bytes, 0U);
  EXPECT_GT(moved.evicted_bytes, 0U);
}

// A program reading the launch's sizes runs its chunks on its whole-launch-size build
// (ProgramBuilds::size_variant), so every chunk sees the whole launch's global size, group count
// and group ids, not its own.
TEST_F(OutOfCoreTest, ChunksOfAProgramReadingTheLaunchSizesSeeTheWholeLaunch) {
  Program sizes(*runtime_, R"CLC(
kernel void shape(global const float* in, global float* out) {
  const size_t i = get_global_id(0);
  out[i] = in[i] + (float)(get_global_size(0) - i) + 4096.0f * (float)get_num_groups(0) +
           (float)get_group_id(0);
}
)CLC");
  const std::uint64_t n = 32 * 1024;  // two buffers of 128 KiB: 4x the cap per device on 2 devices
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 7);
  const BufferId bi = upload(in);
  const BufferId bo = upload(std::vector<float>(n, 0.0f));
  NDRange r;
  r.global = {n, 1, 1};
  r.local = {64, 1, 1};
  LaunchOptions how;
  how.accesses = {
      AccessDescriptor::affine(0, AccessMode::read, {row_major_piece(sizeof(float), {1})}),
      AccessDescriptor::affine(1, AccessMode::write, {row_major_piece(sizeof(float), {1})})};
  sizes.launch("shape", r, {Arg::buffer(bi), Arg::buffer(bo)}, how);
  const LaunchPlan plan = sizes.core().last_plan();
  EXPECT_GT(plan.chunks, runtime_->device_count());
  EXPECT_EQ(sizes.core().size_variant_builds(), 1U);
  const std::vector<float> out = download(bo);
  const std::uint64_t groups = n / 64;
  for (std::uint64_t i = 0; i < n; ++i) {
    const float expected = in[i] + static_cast<float>(n - i) +
                           4096.0f * static_cast<float>(groups) + static_cast<float>(i / 64);
    ASSERT_EQ(out[i], expected) << "item " << i;
  }
}

// The plan cache's key holds each buffer argument's offset (and which arguments share a
// buffer): the same kernel, range and buffer sizes with a sub-buffer argument further in needs
// a wider box, here too wide for the device in one piece, so the second launch must be planned
// (and cut into chunks) anew rather than reuse the first launch's unchunked plan. Repeating a
// chunked launch runs its rounds again.
TEST_F(OutOfCoreTest, ACachedPlanIsNotReusedForOtherSubBufferOffsets) {
#if !defined(UNIMEM_WITH_ANALYSIS)
  GTEST_SKIP() << "the plan cache serves launches described by the kernel analysis";
#endif
  Program inc(*runtime_, R"CLC(
kernel void inc(global const float* in, global float* out) {
  const int i = get_global_id(0);
  out[i] = in[i] + 1.0f;
}
)CLC");
  ASSERT_TRUE(inc.analyzed()) << inc.analysis_error();
  const std::uint64_t n = 4096;                           // in: 16 KiB, 8 KiB per device
  const std::uint64_t total = 44 * 1024 / sizeof(float);  // b: 44 KiB, more than the cap
  std::vector<float> host(total);
  for (std::uint64_t i = 0; i < total; ++i) host[i] = static_cast<float>((i * 13) % 29);
  const BufferId b = upload(host);
  NDRange r;
  r.global = {n, 1, 1};
  r.local = {64, 1, 1};
  // out at 16 KiB: each device's box spans 16 + 8 = 24 KiB, within the 32 KiB cap.
  // out at 28 KiB: 36 KiB at once, so it runs in chunks (28 KiB + a chunk's 4 KiB or less);
  // the same launch again repeats the chunked plan, in rounds again.
  const std::uint64_t low = 16 * 1024;
  const std::uint64_t high = 28 * 1024;
  for (const std::uint64_t out_offset : {low, high, high}) {
    SCOPED_TRACE("out at byte " + std::to_string(out_offset));
    inc.launch("inc", r, {Arg::buffer(b), Arg::buffer(b, out_offset)});
    const LaunchPlan plan = inc.core().last_plan();
    if (out_offset == low) {
      EXPECT_EQ(plan.chunks, 0U);
    } else {
      EXPECT_GT(plan.chunks, runtime_->device_count());
    }
    for (std::uint64_t i = 0; i < n; ++i) host[out_offset / sizeof(float) + i] = host[i] + 1.0f;
  }
  const std::vector<float> got = download(b);
  ASSERT_EQ(got.size(), host.size());
  EXPECT_EQ(std::memcmp(got.data(), host.data(), host.size() * sizeof(float)), 0);
  for (const DeviceMemoryReport& d : runtime_->core().device_memory()) {
    EXPECT_LE(d.memory.peak_held_bytes, kCap);
  }
}

// The analysis described each device's whole partition, then failed on a chunk's sub-range
// (injected here): the launch falls back to planning without it, as when it fails on a whole
// launch. Without it each buffer's box is the whole buffer, too large for the device, so the
// error says so and why the analysis was not used; no byte of either buffer changes.
TEST_F(OutOfCoreTest, AnAnalysisFailureOnAChunkFallsBackAndTheErrorSaysWhy) {
#if !defined(UNIMEM_WITH_ANALYSIS)
  GTEST_SKIP() << "needs the kernel analysis";
#endif
  Program inc(*runtime_, R"CLC(
kernel void inc(global const float* in, global float* out) {
  const int i = get_global_id(0);
  out[i] = in[i] + 1.0f;
}
)CLC");
  ASSERT_TRUE(inc.analyzed()) << inc.analysis_error();
  const std::uint64_t n = 64 * 1024;  // two buffers of 256 KiB: 4x the cap per device and buffer
  const std::uint64_t groups_per_device = n / 64 / runtime_->device_count();
  detail::ProgramCoreTestAccess::wrap_derived(inc.core(), [groups_per_device](DerivedBytes inner) {
    return DerivedBytes([inner, groups_per_device](const RangePartition& p) {
      if (p.group_end - p.group_begin < groups_per_device) {
        throw PreconditionError("injected failure on groups [" + std::to_string(p.group_begin) +
                                ", " + std::to_string(p.group_end) + ")");
      }
      return inner(p);
    });
  });
  std::vector<float> in(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 11);
  const std::vector<float> out_before(n, -1.0f);
  const BufferId bi = upload(in);
  const BufferId bo = upload(out_before);
  NDRange r;
  r.global = {n, 1, 1};
  r.local = {64, 1, 1};
  try {
    inc.launch("inc", r, {Arg::buffer(bi), Arg::buffer(bo)});
    FAIL() << "no error";
  } catch (const OutOfDeviceMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'inc'"), std::string::npos) << what;
    EXPECT_NE(what.find("analysis failed for kernel 'inc' on a chunk"), std::string::npos) << what;
    EXPECT_NE(what.find("injected failure on groups"), std::string::npos) << what;
  }
  EXPECT_EQ(download(bi), in);
  EXPECT_EQ(download(bo), out_before);
}

// Packed 2-D boxes (issue 10): every work-item of a matmul reads a whole column of B, so one row
// of work-groups needs all of B, twice the cap. Chunks are tiles of rows x columns; each holds
// only its tile's columns of B (and of C), packed at their own width, and runs the pitched
// rewrite of the kernel. The result is byte-exact (small integers: every sum is exact).
TEST_F(OutOfCoreTest, AMatmulWithBFarLargerThanTheCapRunsInPackedTilesByteExact) {
  Program mm(*runtime_, R"CLC(
#pragma OPENCL FP_CONTRACT OFF
// c = a x b, n x n, row-major; b is read a column at a time
kernel void mm(global const float* a, global const float* b, global float* c, int n) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum = sum + a[i * n + k] * b[k * n + j];
  c[i * n + j] = sum;
}
)CLC");
  constexpr int n = 128;  // 64 KiB per matrix: B is twice the 32 KiB cap
  std::vector<float> a(n * n);
  std::vector<float> b(n * n);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>((i * 7) % 5) - 2.0f;
    b[i] = static_cast<float>((i * 13) % 7) - 3.0f;
  }
  std::vector<float> want(n * n, 0.0f);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < n; ++k) sum = sum + a[i * n + k] * b[k * n + j];
      want[i * n + j] = sum;
    }
  }
  const BufferId ba = upload(a);
  const BufferId bb = upload(b);
  const BufferId bc = upload(std::vector<float>(n * n, -1.0f));
  NDRange r;
  r.dims = 2;
  r.global = {n, n, 1};
  r.local = {8, 8, 1};
  runtime_->core().reset_device_memory_peaks();
  for (int run = 0; run < 2; ++run) {  // the second run repeats the cached plan
    mm.launch("mm", r, {Arg::buffer(ba), Arg::buffer(bb), Arg::buffer(bc), Arg::scalar(n)});
    const LaunchPlan plan = mm.core().last_plan();
    ASSERT_GT(plan.chunks, 2U) << "run " << run;
    std::size_t pitched = 0;
    for (const LaunchPartition& p : plan.partitions) {
      EXPECT_TRUE(p.out_of_core);
      EXPECT_LT(p.range.global[0], static_cast<std::uint64_t>(n)) << "a tile of columns";
      if (p.pitched_kernel) ++pitched;
    }
    EXPECT_EQ(pitched, plan.partitions.size());
    const std::vector<float> got = download(bc);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << "run " << run;
  }
  EXPECT_EQ(download(ba), a);
  EXPECT_EQ(download(bb), b);
  for (const DeviceMemoryReport& d : runtime_->core().device_memory()) {
    EXPECT_LE(d.memory.peak_held_bytes, kCap);
    EXPECT_GT(d.peak_need_bytes, 2 * kCap);
  }
  // One pitched build serves every tile (equal tiles: one pitch and width per buffer).
  EXPECT_EQ(mm.core().pitched_builds(), 1U);
}

// The same matmul reading B through pointer arithmetic may not be packed (the rewrite cannot
// remap `col[k * n]`): its tiles keep 1-D boxes, B's tile spans nearly all of B, and the launch
// stops with the single-work-group error, saying 2-D chunks do not fit either; nothing changed.
TEST_F(OutOfCoreTest, AMatmulWhosePointerIsNotOnlySubscriptedKeepsOneDimensionalBoxes) {
  Program mm(*runtime_, R"CLC(
kernel void mm(global const float* a, global const float* b, global float* c, int n) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  global const float* col = b + j;
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum = sum + a[i * n + k] * col[k * n];
  c[i * n + j] = sum;
}
)CLC");
  constexpr int n = 128;
  const BufferId ba = upload(std::vector<float>(n * n, 1.0f));
  const BufferId bb = upload(std::vector<float>(n * n, 2.0f));
  const std::vector<float> before(n * n, -1.0f);
  const BufferId bc = upload(before);
  NDRange r;
  r.dims = 2;
  r.global = {n, n, 1};
  r.local = {8, 8, 1};
  try {
    mm.launch("mm", r, {Arg::buffer(ba), Arg::buffer(bb), Arg::buffer(bc), Arg::scalar(n)});
    FAIL() << "no error";
  } catch (const OutOfDeviceMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'mm'"), std::string::npos) << what;
    EXPECT_NE(what.find("one work-group"), std::string::npos) << what;
    EXPECT_NE(what.find("nor do 2-D chunks"), std::string::npos) << what;
  }
  EXPECT_EQ(mm.core().pitched_builds(), 0U);
  EXPECT_EQ(download(bc), before);
}

// Several boxes per buffer (out-of-core chunks): floyd-warshall passes its matrix twice, as the
// rows it updates and as pivot row k. One bounding box over a chunk's rows and row k spans the
// matrix; a box per argument (RuntimeCore::split_uses) holds only the rows and the pivot row, so
// the launches run in chunks and match the host's result byte for byte.
TEST_F(OutOfCoreTest, ArgumentsFarApartInOneBufferGetABoxEachInAChunk) {
  Program fw(*runtime_, R"CLC(
kernel void fw(global float* dist, global const float* krow, int n, int k) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const float via = dist[i * n + k] + krow[j];
  dist[i * n + j] = via < dist[i * n + j] ? via : dist[i * n + j];
}
)CLC");
  constexpr int n = 128;  // 64 KiB: twice the cap
  std::vector<float> d(n * n);
  for (int i = 0; i < n * n; ++i) d[i] = static_cast<float>((i * 37) % 101);
  for (int i = 0; i < n; ++i) d[i * n + i] = 0.0f;  // row k is then unchanged by iteration k
  const BufferId bd = upload(d);
  NDRange r;
  r.dims = 2;
  r.global = {n, n, 1};
  r.local = {8, 8, 1};
  for (const int k : {0, 5, 64, 127, 90}) {
    fw.launch("fw", r,
              {Arg::buffer(bd), Arg::buffer(bd, static_cast<std::uint64_t>(k) * n * sizeof(float)),
               Arg::scalar(n), Arg::scalar(k)});
    const LaunchPlan plan = fw.core().last_plan();
    EXPECT_GT(plan.chunks, 2U) << "k " << k;
    const std::vector<float> row(d.begin() + k * n, d.begin() + (k + 1) * n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const float via = d[i * n + k] + row[j];
        d[i * n + j] = via < d[i * n + j] ? via : d[i * n + j];
      }
    }
  }
  const std::vector<float> got = download(bd);
  ASSERT_EQ(got.size(), d.size());
  EXPECT_EQ(std::memcmp(got.data(), d.data(), d.size() * sizeof(float)), 0);
  for (const DeviceMemoryReport& m : runtime_->core().device_memory()) {
    EXPECT_LE(m.memory.peak_held_bytes, kCap);
  }
}

TEST_F(OutOfCoreTest, OneWorkGroupLargerThanTheDeviceIsAnErrorNamingKernelArgumentAndBytes) {
  const std::uint64_t n = 16 * 1024;  // b: 64 KiB, every work-item reads all of it
  const BufferId bb = upload(std::vector<float>(n, 1.0f));
  const std::vector<float> before(256, -3.0f);
  const BufferId bo = upload(before);
  NDRange r;
  r.global = {256, 1, 1};
  r.local = {64, 1, 1};
  LaunchOptions how;
  how.accesses = {
      AccessDescriptor::whole(0, AccessMode::read),
      AccessDescriptor::affine(1, AccessMode::write, {row_major_piece(sizeof(float), {1})})};
  try {
    program_->launch("sum_all", r,
                     {Arg::buffer(bb), Arg::buffer(bo), Arg::scalar(static_cast<int>(n))}, how);
    FAIL() << "no error";
  } catch (const OutOfDeviceMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'sum_all'"), std::string::npos) << what;
    EXPECT_NE(what.find("one work-group"), std::string::npos) << what;
    EXPECT_NE(what.find("argument 0"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(n * sizeof(float)) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("capacity of " + std::to_string(kCap) + " bytes"), std::string::npos)
        << what;
  }
  const std::vector<float> after = download(bo);
  EXPECT_EQ(after, before);
  EXPECT_EQ(download(bb), std::vector<float>(n, 1.0f));
}

}  // namespace
}  // namespace unimem
