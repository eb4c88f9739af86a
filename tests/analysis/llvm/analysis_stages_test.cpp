// Unit tests of the analysis stages: frontend, extraction classes, Fig. 10 generator, isl link,
// cache.
#include <gtest/gtest.h>

#include "analysis/analysis_cache.hpp"
#include "analysis/isl/write_injectivity.hpp"
#include "analysis/llvm/frontend.hpp"
#include "analysis/test_support.hpp"

namespace unimem {
namespace {

TEST(IslLink, BindsToSystemIsl025NotLlvmPollyCopy) {
  // DESIGN.md pitfall: libLLVM-15.so exports Polly's isl 0.24. The link order must put libisl
  // first; if it does not, isl_version() reports 0.24 and this fails.
  const std::string v = isl_runtime_version();
  EXPECT_NE(v.find("isl-0.25"), std::string::npos) << v;
}

TEST(Frontend, SyntaxErrorCarriesDiagnostics) {
  try {
    (void)analyze_program("__kernel void k(__global int* a) { a[0] = ; }", "");
    FAIL() << "expected OpenCLCompileError";
  } catch (const OpenCLCompileError& e) {
    EXPECT_NE(std::string(e.what()).find("error"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernel.cl:1"), std::string::npos) << e.what();
  }
}

TEST(Frontend, UnknownBuildOptionIsRejected) {
  EXPECT_THROW((void)analyze_program("__kernel void k() {}", "-fancy-option"), OpenCLCompileError);
  EXPECT_THROW((void)opencl_options_to_cc1("-D"), OpenCLCompileError);
}

TEST(Frontend, DefinesAndStandardReachTheCompiler) {
  const auto v = opencl_options_to_cc1("-D N=4 -DM -I /tmp -cl-std=CL2.0 -cl-mad-enable");
  const std::vector<std::string> expect{"-DN=4", "-DM", "-I/tmp", "-cl-std=CL2.0",
                                        "-cl-mad-enable"};
  EXPECT_EQ(v, expect);
  // Without -D N the kernel does not compile; with it, it does.
  const char* src = "__kernel void k(__global int* a) { a[get_global_id(0)] = N; }";
  EXPECT_THROW((void)analyze_program(src, ""), OpenCLCompileError);
  EXPECT_EQ(analyze_program(src, "-D N=3 -cl-std=CL2.0").kernels.size(), 1U);
  // Every clBuildProgram option of OpenCL 1.2 that examples use is accepted.
  EXPECT_EQ(
      analyze_program(src, "-DN=1 -cl-fp32-correctly-rounded-divide-sqrt -g -w").kernels.size(),
      1U);
}

TEST(Extraction, ArgumentsAndClassesOfAStencil) {
  const char* src = R"(
    __kernel void s(__global const float* in, __global float* out, __local float* tmp, int w) {
      int x = get_global_id(0);
      out[x] = in[x];
      if (x > 0 && x < w - 1) out[x] += in[x - 1] + in[x + 1];
    })";
  const KernelAccessInfo k = test::analyze_kernel(src, "s");
  ASSERT_EQ(k.args.size(), 4U);
  EXPECT_EQ(k.args[0].name, "in");
  EXPECT_EQ(k.args[0].kind, ArgKind::global_buffer);
  EXPECT_EQ(k.args[2].kind, ArgKind::local_buffer);
  EXPECT_EQ(k.args[3].kind, ArgKind::scalar);
  EXPECT_GE(k.stats.affine, 2U);
  EXPECT_GE(k.stats.affine_rectangular, 3U);
  EXPECT_EQ(k.stats.indirect + k.stats.non_affine + k.stats.unknown_call, 0U);
  const std::string text = to_string(k);
  EXPECT_NE(text.find("Read:"), std::string::npos);
  EXPECT_NE(text.find("l_x"), std::string::npos) << text;
}

TEST(Extraction, NonAffineSubscriptIsClassified) {
  const char* src = R"(
    __kernel void sq(__global float* a) {
      int i = get_global_id(0);
      a[i * i] = 1.0f;
    })";
  const KernelAccessInfo k = test::analyze_kernel(src, "sq");
  EXPECT_EQ(k.stats.non_affine, 1U);
  EXPECT_FALSE(k.statically_splittable);
  EXPECT_NE(k.unsplittable_reason.find("'a'"), std::string::npos) << k.unsplittable_reason;
}

TEST(Extraction, VloadVstoreAndUnknownPointers) {
  const char* src = R"(
    __kernel void v(__global const float* in, __global float* out) {
      size_t i = get_global_id(0);
      vstore4(vload4(i, in) * 2.0f, i, out);
    })";
  const KernelRangeGenerator gen(test::analyze_kernel(src, "v"));
  const NDRange r = test::nd({8, 1, 1}, {2, 1, 1}, 1);
  const Box<3> g({1, 0, 0}, {2, 1, 1});
  const LaunchRanges lr = gen.ranges(r, g, {});
  EXPECT_EQ(lr.find("in")->read, IntervalSet(Interval{32, 64}));
  EXPECT_EQ(lr.find("out")->write, IntervalSet(Interval{32, 64}));
  EXPECT_TRUE(lr.find("out")->write_exact);
}

TEST(AnalysisCacheTest, SecondBuildOfSameProgramIsAHit) {
  AnalysisCache cache;
  const std::string src = "__kernel void k(__global int* a) { a[get_global_id(0)] = 1; }";
  bool hit = true;
  auto first = cache.get(src, "-DX=1", &hit);
  EXPECT_FALSE(hit);
  auto second = cache.get(src, "-DX=1", &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(first.get(), second.get());
  (void)cache.get(src, "-DX=2", &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.size(), 2U);
  EXPECT_NE(AnalysisCache::key(src, "a"), AnalysisCache::key(src, "b"));
}

TEST(WriteInjectivity, MapTextIsReadableByIsl) {
  const KernelAccessInfo k =
      test::analyze_kernel("__kernel void k(__global int* a) { a[get_global_id(0)] = 1; }", "k");
  const NDRange r = test::nd({8, 1, 1}, {4, 1, 1}, 1);
  ParamValues values;
  values.local_size = {4, 1, 1};
  values.num_groups = {2, 1, 1};
  values.global_size = {8, 1, 1};
  values.scalar_args.resize(1);
  const std::string text = detail::write_map_text(k.args[0], r, values);
  EXPECT_NE(text.find("[w0, w1, w2] -> [b]"), std::string::npos) << text;
  std::string why;
  EXPECT_TRUE(writes_injective_over_groups(k, r, values, &why)) << why;
}

}  // namespace
}  // namespace unimem
