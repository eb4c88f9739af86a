// parse_byte_size: the byte counts of UNIMEM_DEVICE_MEMORY and --device-memory.
#include "common/byte_size.hpp"

#include <gtest/gtest.h>

#include <unimem/errors.hpp>

namespace unimem {
namespace {

TEST(ByteSize, PlainNumbersAndBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("4096").bytes, 4096u);
  EXPECT_EQ(parse_byte_size(" 64k ").bytes, 64u << 10);
  EXPECT_EQ(parse_byte_size("256M").bytes, 256u << 20);
  EXPECT_EQ(parse_byte_size("256MiB").bytes, 256u << 20);
  EXPECT_EQ(parse_byte_size("2G").bytes, std::uint64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("12B").bytes, 12u);
}

TEST(ByteSize, BadValuesSayWhy) {
  EXPECT_NE(parse_byte_size("").error.find("empty"), std::string::npos);
  EXPECT_NE(parse_byte_size("-5").error.find("negative"), std::string::npos);
  EXPECT_NE(parse_byte_size("0").error.find("positive"), std::string::npos);
  EXPECT_NE(parse_byte_size("12X").error.find("unknown suffix 'X'"), std::string::npos);
  EXPECT_NE(parse_byte_size("1.5G").error.find("unknown suffix"), std::string::npos);
  EXPECT_NE(parse_byte_size("M").error.find("not a number"), std::string::npos);
  EXPECT_NE(parse_byte_size("99999999999999999999").error.find("2^64"), std::string::npos);
  EXPECT_NE(parse_byte_size("17179869184G").error.find("2^64"), std::string::npos);
  EXPECT_FALSE(parse_byte_size("12X").bytes.has_value());
  EXPECT_THROW((void)require_byte_size("x", "UNIMEM_DEVICE_MEMORY"), PreconditionError);
}

}  // namespace
}  // namespace unimem
