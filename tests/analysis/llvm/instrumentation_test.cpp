// Tests of the execution ground truth itself (tests/analysis/support): the rewriter, and recorded
// accesses of small kernels against byte sets worked out by hand.
#include <gtest/gtest.h>

#if UNIMEM_HAVE_GROUND_TRUTH

#include <cstring>
#include <string>
#include <vector>

#include "analysis/support/access_recorder.hpp"
#include "analysis/support/kernel_instrumenter.hpp"

namespace unimem::testing {
namespace {

AccessRecorder& recorder() {
  static AccessRecorder instance;
  return instance;
}

IntervalSet bytes(std::uint64_t begin, std::uint64_t end) {
  return IntervalSet(Interval{begin, end});
}

LaunchConfig launch_1d(std::size_t global, std::size_t local) {
  LaunchConfig config;
  config.global = {global};
  config.local = {local};
  return config;
}

GroupBox groups_1d(std::uint64_t begin, std::uint64_t end) {
  GroupBox box;
  box.begin[0] = begin;
  box.end[0] = end;
  return box;
}

constexpr const char* kVectorAdd = R"(
__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
})";

TEST(GroundTruthInstrumenter, DescribesKernelParameters) {
  const InstrumentedSource source = instrument_kernel_source(kVectorAdd, {});
  const KernelSignature& kernel = source.kernel("vector_add");
  ASSERT_EQ(kernel.params.size(), 4U);
  EXPECT_EQ(kernel.params[0].kind, ParamKind::global_buffer);
  EXPECT_EQ(kernel.params[0].element_size, 4U);
  EXPECT_EQ(kernel.params[0].scalar_kind, ScalarKind::floating);
  EXPECT_EQ(kernel.params[3].kind, ParamKind::scalar);
  EXPECT_EQ(kernel.params[3].scalar_kind, ScalarKind::signed_integer);
  EXPECT_EQ(kernel.log_arg_index(), 4U);
  EXPECT_EQ(source.access_sites, 3U);
  EXPECT_NE(source.instrumented.find("__global ulong* __unimem_log"), std::string::npos);
}

TEST(GroundTruthInstrumenter, AppliesDefinesBeforeRewriting) {
  const std::string text = R"(
#define AT(i) data[(i) * STRIDE]
__kernel void k(__global int* data) { AT(get_global_id(0)) += 1; })";
  const InstrumentedSource source = instrument_kernel_source(text, {"-D", "STRIDE=3"});
  EXPECT_EQ(source.access_sites, 1U);
  EXPECT_EQ(source.instrumented.find("STRIDE"), std::string::npos);
  EXPECT_NE(source.instrumented.find("* 3"), std::string::npos);
  EXPECT_EQ(options_after_preprocessing({"-D", "X=1", "-DY", "-cl-fast-relaxed-math", "-I", "/x"}),
            std::vector<std::string>{"-cl-fast-relaxed-math"});
}

TEST(GroundTruthInstrumenter, RefusesAccessesItCannotRecord) {
  EXPECT_THROW(
      instrument_kernel_source(
          "__kernel void k(__global float* a) { float4 v = vload4(0, a); a[0] = v.x; }", {}),
      InstrumentationError);
  EXPECT_THROW(instrument_kernel_source(
                   "__kernel void k(__global float4* a) { a[get_global_id(0)].x = 1.0f; }", {}),
               InstrumentationError);
  EXPECT_THROW(instrument_kernel_source("__kernel void k(__global float* a) { a[0] = ; }", {}),
               InstrumentationError);
}

TEST(GroundTruthRecorder, VectorAddTouchesExactlyItsElements) {
  const InstrumentedSource source = instrument_kernel_source(kVectorAdd, {});
  KernelInputs inputs;
  inputs.buffer_bytes = {{"a", 400}, {"b", 400}, {"c", 400}};
  inputs.scalars = {{"n", "100"}};
  const AccessTrace trace = recorder().record(source, "vector_add", {}, launch_1d(128, 32), inputs);
  // Group 1 covers work-items 32..63; group 3 work-items 96..127 of which only 96..99 pass i < n.
  const auto group1 = trace.accesses_of(groups_1d(1, 2));
  EXPECT_EQ(group1[0].read, bytes(128, 256));
  EXPECT_EQ(group1[1].read, bytes(128, 256));
  EXPECT_TRUE(group1[2].read.empty());
  EXPECT_EQ(group1[2].write, bytes(128, 256));
  EXPECT_TRUE(group1[0].write.empty());
  const auto group3 = trace.accesses_of(groups_1d(3, 4));
  EXPECT_EQ(group3[2].write, bytes(384, 400));
  const auto all = trace.accesses_of(GroupBox::all(trace.config));
  EXPECT_EQ(all[0].read, bytes(0, 400));
  EXPECT_EQ(all[2].write, bytes(0, 400));
  EXPECT_EQ(trace.records.size(), 300U);

  // The kernel computed the same sums as without instrumentation.
  const auto original =
      recorder().run_original(source, "vector_add", {}, launch_1d(128, 32), inputs);
  EXPECT_EQ(original[2], trace.final_buffers[2]);
}

TEST(GroundTruthRecorder, NestedAndCompoundAccessesAreEachLoggedOnce) {
  const std::string text = R"(
float twice(__global const float* p, int i) { return 2.0f * p[i]; }
__kernel void k(__global const int* idx, __global const float* in, __global float* out) {
  int i = get_global_id(0);
  out[idx[i]] += twice(in, i + 1);
  out[i]++;
})";
  const InstrumentedSource source = instrument_kernel_source(text, {});
  KernelInputs inputs;
  inputs.buffer_bytes = {{"idx", 16}, {"in", 20}, {"out", 64}};
  inputs.fills["idx"] = FillSpec{FillSpec::Kind::iota, 8, 0, 2, true};  // 8, 10, 12, 14
  const AccessTrace trace = recorder().record(source, "k", {}, launch_1d(4, 2), inputs);
  EXPECT_EQ(trace.records.size(), 4U * 4U);  // idx[i], in[i + 1], out[idx[i]] (RW), out[i] (RW)
  const auto all = trace.accesses_of(GroupBox::all(trace.config));
  EXPECT_EQ(all[0].read, bytes(0, 16));
  EXPECT_EQ(all[1].read, bytes(4, 20));
  const IntervalSet touched = IntervalSet{Interval{0, 16}, Interval{32, 36}, Interval{40, 44},
                                          Interval{48, 52}, Interval{56, 60}};
  EXPECT_EQ(all[2].read, touched);
  EXPECT_EQ(all[2].write, touched);
}

TEST(GroundTruthRecorder, DataDependentWritesFollowTheData) {
  const std::string text = R"(
__kernel void k(__global const float* a, __global float* b) {
  int i = get_global_id(0);
  if (a[i] > 0.0f) b[i] = a[i];
})";
  const InstrumentedSource source = instrument_kernel_source(text, {});
  KernelInputs inputs;
  inputs.buffer_bytes = {{"a", 256}, {"b", 256}};
  inputs.seed = 7;
  const AccessTrace trace = recorder().record(source, "k", {}, launch_1d(64, 16), inputs);
  const std::vector<unsigned char> a =
      fill_buffer(source.kernel("k").params[0], 256, nullptr, inputs.seed);
  std::vector<Interval> positive;
  for (std::uint64_t i = 0; i < 64; ++i) {
    float value = 0;
    std::memcpy(&value, a.data() + 4 * i, 4);
    if (value > 0.0f) positive.emplace_back(4 * i, 4 * i + 4);
  }
  ASSERT_FALSE(positive.empty());
  ASSERT_LT(positive.size(), 64U);
  const auto all = trace.accesses_of(GroupBox::all(trace.config));
  EXPECT_EQ(all[0].read, bytes(0, 256));
  EXPECT_EQ(all[1].write, IntervalSet::from_unsorted(positive));
}

TEST(GroundTruthRecorder, ReportsOutOfBoundsAccesses) {
  const InstrumentedSource source = instrument_kernel_source(
      "__kernel void k(__global float* a) { a[get_global_id(0) + 1] = 0.0f; }", {});
  KernelInputs inputs;
  inputs.buffer_bytes = {{"a", 64}};
  EXPECT_THROW(recorder().record(source, "k", {}, launch_1d(16, 4), inputs), RecorderError);
  inputs.buffer_bytes = {{"a", 68}};
  EXPECT_NO_THROW(recorder().record(source, "k", {}, launch_1d(16, 4), inputs));
}

TEST(GroundTruthRecorder, RejectsMissingArguments) {
  const InstrumentedSource source = instrument_kernel_source(kVectorAdd, {});
  KernelInputs inputs;
  inputs.buffer_bytes = {{"a", 400}, {"b", 400}};
  inputs.scalars = {{"n", "100"}};
  EXPECT_THROW(recorder().record(source, "vector_add", {}, launch_1d(128, 32), inputs),
               RecorderError);
  inputs.buffer_bytes["c"] = 400;
  inputs.scalars["n"] = "ten";
  EXPECT_THROW(recorder().record(source, "vector_add", {}, launch_1d(128, 32), inputs),
               RecorderError);
  EXPECT_THROW(recorder().record(source, "no_such_kernel", {}, launch_1d(128, 32), inputs),
               InstrumentationError);
}

}  // namespace
}  // namespace unimem::testing

#else
TEST(GroundTruthInstrumenter, SkippedWithoutOpenClAndClang) {
  GTEST_SKIP() << "OpenCL or Clang 15 not found at configure time";
}
#endif
