// Scalar argument values as text (`unimem analyze --arg NAME=VALUE`): integers within the range of
// the parameter's type, floating-point numbers for float / double / half parameters, and a clear
// error naming the argument otherwise.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "analysis/scalar_argument.hpp"
#include "test_support.hpp"

namespace unimem {
namespace {

const char* const kSource = R"(
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef uint index_t;
__kernel void k(__global float* out, int i, uint u, char c, uchar uc, long l, ulong ul,
                index_t t, float f, double d, half h) {
  out[i + u + c + uc + l + ul + t] = f + (float)d + (float)h;
}
)";

const KernelAccessInfo& kernel() {
  static const KernelAccessInfo k = test::analyze_kernel(kSource, "k");
  return k;
}

const ArgumentAccess& arg(const std::string& name) {
  const ArgumentAccess* a = kernel().find_arg(name);
  if (a == nullptr) throw std::runtime_error("no argument " + name);
  return *a;
}

std::int64_t integer(const std::string& name, const std::string& text) {
  const ScalarArgumentValue v = parse_scalar_argument(arg(name), text);
  EXPECT_FALSE(v.floating) << name;
  return v.integer;
}

double real(const std::string& name, const std::string& text) {
  const ScalarArgumentValue v = parse_scalar_argument(arg(name), text);
  EXPECT_TRUE(v.floating) << name;
  return v.real;
}

/// The message of the std::invalid_argument parse_scalar_argument throws ("" if none).
std::string error(const std::string& name, const std::string& text) {
  try {
    (void)parse_scalar_argument(arg(name), text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ScalarArgument, ParameterTypesComeFromTheKernel) {
  EXPECT_EQ(arg("i").scalar_bits, 32U);
  EXPECT_FALSE(arg("i").scalar_floating);
  EXPECT_EQ(arg("c").scalar_bits, 8U);
  EXPECT_EQ(arg("ul").scalar_bits, 64U);
  EXPECT_EQ(arg("t").type_name, "index_t");
  EXPECT_EQ(arg("t").base_type_name, "uint");
  EXPECT_TRUE(arg("f").scalar_floating);
  EXPECT_EQ(arg("f").scalar_bits, 32U);
  EXPECT_EQ(arg("d").scalar_bits, 64U);
  EXPECT_EQ(arg("h").scalar_bits, 16U);
  EXPECT_EQ(arg("out").scalar_bits, 0U);
}

TEST(ScalarArgument, IntegersWithinTheirTypes) {
  EXPECT_EQ(integer("i", "42"), 42);
  EXPECT_EQ(integer("i", "-7"), -7);
  EXPECT_EQ(integer("i", "+7"), 7);
  EXPECT_EQ(integer("i", "0x10"), 16);
  EXPECT_EQ(integer("i", "2147483647"), 2147483647);
  EXPECT_EQ(integer("i", "-2147483648"), -2147483648LL);
  EXPECT_EQ(integer("u", "4294967295"), 4294967295LL);
  EXPECT_EQ(integer("c", "-128"), -128);
  EXPECT_EQ(integer("uc", "255"), 255);
  EXPECT_EQ(integer("l", "-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(integer("ul", "9223372036854775807"), INT64_MAX);
  EXPECT_EQ(integer("t", "4000000000"), 4000000000LL);  // typedef'd uint
}

TEST(ScalarArgument, IntegersOutsideTheirTypesAreRejected) {
  EXPECT_NE(error("i", "2147483648").find("does not fit a 32-bit signed int"), std::string::npos);
  EXPECT_NE(error("i", "-2147483649").find("argument 'i'"), std::string::npos);
  EXPECT_NE(error("u", "-1").find("does not fit a 32-bit unsigned uint"), std::string::npos);
  EXPECT_NE(error("u", "4294967296").find("argument 'u'"), std::string::npos);
  EXPECT_NE(error("c", "128").find("8-bit"), std::string::npos);
  EXPECT_NE(error("uc", "256").find("argument 'uc'"), std::string::npos);
  EXPECT_NE(error("t", "-1").find("argument 't' (index_t)"), std::string::npos);
  EXPECT_NE(error("l", "9223372036854775808").find("does not fit"), std::string::npos);
  EXPECT_NE(error("l", "99999999999999999999").find("does not fit"), std::string::npos);
  // ulong values above INT64_MAX cannot take part in the analysis' 64-bit arithmetic.
  EXPECT_NE(error("ul", "9223372036854775808").find("does not fit"), std::string::npos);
}

TEST(ScalarArgument, NonIntegersForIntegerParametersAreRejected) {
  for (const char* text : {"0.5", "1e3", "", " 1", "1 ", "12abc", "--1", "-+1", "0x", "inf"}) {
    const std::string message = error("i", text);
    EXPECT_NE(message.find("argument 'i' (int): '" + std::string(text) + "' is not an integer"),
              std::string::npos)
        << "'" << text << "': " << message;
  }
}

TEST(ScalarArgument, FloatingPointValues) {
  EXPECT_DOUBLE_EQ(real("f", "0.5"), 0.5);
  EXPECT_DOUBLE_EQ(real("f", "-2"), -2.0);
  EXPECT_DOUBLE_EQ(real("f", "1e-3"), 1e-3);
  EXPECT_DOUBLE_EQ(real("f", "0x1p-2"), 0.25);
  EXPECT_DOUBLE_EQ(real("f", "-3.4e38"), -3.4e38);
  EXPECT_DOUBLE_EQ(real("d", "1e300"), 1e300);
  EXPECT_DOUBLE_EQ(real("h", "65504"), 65504.0);
  EXPECT_TRUE(std::isinf(real("f", "inf")));
}

TEST(ScalarArgument, FloatingPointValuesOutsideTheirTypesAreRejected) {
  EXPECT_NE(error("f", "1e300").find("argument 'f' (float): 1e300 does not fit a 32-bit float"),
            std::string::npos);
  EXPECT_NE(error("f", "-3.5e38").find("does not fit"), std::string::npos);
  EXPECT_NE(error("h", "70000").find("does not fit a 16-bit half"), std::string::npos);
  EXPECT_NE(error("d", "1e400").find("does not fit a 64-bit double"), std::string::npos);
  for (const char* text : {"", "0.5x", "one", " 0.5", "0.5 "}) {
    EXPECT_NE(
        error("f", text).find("argument 'f' (float): '" + std::string(text) + "' is not a number"),
        std::string::npos)
        << "'" << text << "'";
  }
}

TEST(ScalarArgument, BuffersAreNotScalars) {
  EXPECT_NE(error("out", "1").find("argument 'out' (float*) is not a scalar"), std::string::npos);
}

#if defined(UNIMEM_ANALYZE_CLI) && defined(UNIMEM_CORPUS_DIR)

/// Runs `unimem analyze` with extra arguments; returns its exit status and output (both streams).
std::pair<int, std::string> run_analyze(const std::string& args) {
  const std::string command = std::string("'") + UNIMEM_ANALYZE_CLI + "' analyze '" +
                              UNIMEM_CORPUS_DIR + "/vector.cl' " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string output;
  std::array<char, 4096> chunk{};
  while (const std::size_t n = fread(chunk.data(), 1, chunk.size(), pipe.get())) {
    output.append(chunk.data(), n);
  }
  const int status = pclose(pipe.release());
  return {status, output};
}

TEST(AnalyzeCommand, TakesFloatingPointScalarArguments) {
  // saxpy_offset(float alpha, __global const float* x, __global float* y, int off, int n).
  const std::string launch =
      "--kernel saxpy_offset --global 64 --local 16 --arg off=16 --arg n=64 --buffer x=512 "
      "--buffer y=512 --json";
  const auto [status, output] = run_analyze(launch + " --arg alpha=0.5");
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("\"kernel\":\"saxpy_offset\""), std::string::npos) << output;
  const auto [bad_status, bad_output] = run_analyze(launch + " --arg alpha=1e300");
  EXPECT_NE(bad_status, 0);
  EXPECT_NE(bad_output.find("--arg: argument 'alpha' (float): 1e300 does not fit a 32-bit float"),
            std::string::npos)
      << bad_output;
  const auto [int_status, int_output] = run_analyze(launch + " --arg off=0.5");
  EXPECT_NE(int_status, 0);
  EXPECT_NE(int_output.find("argument 'off' (int): '0.5' is not an integer"), std::string::npos)
      << int_output;
}

#endif

}  // namespace
}  // namespace unimem
