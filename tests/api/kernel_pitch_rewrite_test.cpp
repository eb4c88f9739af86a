// The rewrite for packed 2-D boxes (api/kernel_pitch_rewrite.hpp): which parameters it may pack,
// and what it turns their subscripts into.
#include "api/kernel_pitch_rewrite.hpp"

#include <gtest/gtest.h>

#include <unimem/errors.hpp>

namespace unimem {
namespace {

constexpr const char* kMatmul = R"CLC(
kernel void matmul(global const float* a, global const float* b, global float* c, int n) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum = sum + a[i * n + k] * b[k * n + j];
  c[i * n + j] = sum;
}
)CLC";

TEST(PitchRewrite, ParametersUsedOnlyAsSubscriptsMayBePackedAndGetTheirHiddenArguments) {
  const PitchedSource out = rewrite_for_pitches(kMatmul);
  ASSERT_TRUE(out.parameters.contains("matmul"));
  const std::vector<PitchedParameter>& p = out.parameters.at("matmul");
  ASSERT_EQ(p.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(p[i].global_pointer) << i;
    EXPECT_EQ(p[i].element_size, 4u) << i;
    EXPECT_EQ(p[i].argument_count(), 4u) << i;
  }
  EXPECT_FALSE(p[3].global_pointer);
  EXPECT_EQ(p[3].argument_count(), 1u);
  EXPECT_NE(out.source.find("b[UNIMEM_PACK_matmul_1(k * n + j)]"), std::string::npos) << out.source;
  EXPECT_NE(out.source.find("c[UNIMEM_PACK_matmul_2(i * n + j)]"), std::string::npos);
  EXPECT_NE(out.source.find("ulong b__um_row0, ulong b__um_col0"), std::string::npos);
  EXPECT_NE(out.source.find("#ifdef UNIMEM_PITCH_matmul_1"), std::string::npos);
  EXPECT_NE(out.source.find("__global const char*)b__um_base + b__um_offset"), std::string::npos);
}

TEST(PitchRewrite, AnyOtherUseOfAPointerKeepsItsSubscriptsAsWritten) {
  const PitchedSource out = rewrite_for_pitches(R"CLC(
#define AT(i) m[i]
typedef struct { float x; } pair_t;
float first(global const float* q) { return q[0]; }
kernel void k(global float* arith, global float* deref, global float* passed,
              global float* address, global pair_t* structs, global float* m,
              global float* fine, global float* member) {
  const int i = get_global_id(0);
  global float* alias = arith + 1;
  alias[i] = *deref;
  passed[i] = first(passed);
  global float* at = &address[i];
  structs[i].x = 1.0f;
  AT(i) = 2.0f;
  fine[i] = 3.0f;
  float member[2];
  member[0] = fine[i];
}
)CLC");
  const std::vector<PitchedParameter>& p = out.parameters.at("k");
  ASSERT_EQ(p.size(), 8u);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_TRUE(p[i].global_pointer) << i;
  EXPECT_EQ(p[0].element_size, 0u) << "pointer arithmetic";
  EXPECT_EQ(p[1].element_size, 0u) << "dereference";
  EXPECT_EQ(p[2].element_size, 0u) << "passed to a function";
  EXPECT_EQ(p[3].element_size, 0u) << "address of an element";
  EXPECT_EQ(p[4].element_size, 0u) << "a struct element (size unknown)";
  EXPECT_EQ(p[5].element_size, 0u) << "named in a macro";
  EXPECT_EQ(p[6].element_size, 4u) << "only subscripted";
  EXPECT_EQ(p[7].element_size, 0u) << "declared again in the body";
  EXPECT_NE(out.source.find("passed[i] = first(passed)"), std::string::npos);
  EXPECT_NE(out.source.find("fine[UNIMEM_PACK_k_6(i)] = 3.0f"), std::string::npos);
  EXPECT_NE(out.source.find("member[0] = fine[UNIMEM_PACK_k_6(i)]"), std::string::npos);
  // The helper function is not a kernel: its parameter is left alone.
  EXPECT_NE(out.source.find("return q[0];"), std::string::npos);
}

TEST(PitchRewrite, CommentsAndStringsAreNeitherUsesNorRewritten) {
  const PitchedSource out = rewrite_for_pitches(R"CLC(
// kernel void not_a_kernel(global float* x) { x + 1; }
kernel void k(global int* v /* v + 1 here is a comment */) {
  /* *v and v + 2 */ // &v[0]
  printf("v + %d, v[0]\n", 1);
  v[get_global_id(0)] = 'v';
}
)CLC");
  ASSERT_EQ(out.parameters.size(), 1u);
  const std::vector<PitchedParameter>& p = out.parameters.at("k");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].element_size, 4u);
  EXPECT_NE(out.source.find("v[UNIMEM_PACK_k_0(get_global_id(0))] = 'v'"), std::string::npos)
      << out.source;
  EXPECT_NE(out.source.find("\"v + %d, v[0]\\n\""), std::string::npos) << "string kept";
  EXPECT_NE(out.source.find("// &v[0]"), std::string::npos) << "comment kept";
}

TEST(PitchRewrite, NestedSubscriptsAreRewrittenInsideOut) {
  const PitchedSource out = rewrite_for_pitches(R"CLC(
kernel void gather(global const int* idx, global const float2* in, global float2* out) {
  const int i = get_global_id(0);
  out[idx[(i)] + idx[idx[i]]] = in[idx[i] * (2 + idx[0])];
}
)CLC");
  const std::vector<PitchedParameter>& p = out.parameters.at("gather");
  EXPECT_EQ(p[0].element_size, 4u);
  EXPECT_EQ(p[1].element_size, 8u);
  EXPECT_EQ(p[2].element_size, 8u);
  EXPECT_NE(out.source.find("out[UNIMEM_PACK_gather_2(idx[UNIMEM_PACK_gather_0((i))] + "
                            "idx[UNIMEM_PACK_gather_0(idx[UNIMEM_PACK_gather_0(i)])])] = "
                            "in[UNIMEM_PACK_gather_1(idx[UNIMEM_PACK_gather_0(i)] * (2 + "
                            "idx[UNIMEM_PACK_gather_0(0)]))]"),
            std::string::npos)
      << out.source;
}

TEST(PitchRewrite, PitchMacrosNameTheKernelAndParameter) {
  EXPECT_EQ(pitch_macros("matmul", 1, 1024, 64),
            "#define UNIMEM_PITCH_matmul_1 1024UL\n#define UNIMEM_WIDTH_matmul_1 64UL\n");
}

TEST(PitchRewrite, AnUnreadableKernelIsAnErrorNamingIt) {
  try {
    (void)rewrite_for_pitches("kernel void broken(global float* x) { x[0] = 1.0f; ");
    FAIL() << "no error";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("'broken'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace unimem
