// TransferStats: sums and the JSON form that `Runtime::stats_json` and the tools embed.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <unimem/transfer_stats.hpp>

namespace unimem {
namespace {

TransferStats example_stats(std::uint64_t d2d_bytes = 8) {
  TransferStats s;
  s.host_to_device = {32, 1};
  s.device_to_host = {16, 2};
  s.device_to_device = {d2d_bytes, 3};
  s.prefetch_bytes = 4;
  s.prefetch_unread_bytes = 5;
  s.replays = 6;
  s.mispredictions = 7;
  s.evicted_bytes = 9;
  s.eviction_writeback_bytes = 10;
  s.reloaded_bytes = 11;
  s.relocated_bytes = 12;
  s.direct_read_bytes = 13;
  s.home_read_bytes = 14;
  return s;
}

TEST(TransferStats, JsonHasEveryDirectionTheTotalAndTheAdaptiveCounts) {
  EXPECT_EQ(example_stats().to_json(),
            "{\"h2d\":{\"bytes\":32,\"copies\":1},\"d2h\":{\"bytes\":16,\"copies\":2},"
            "\"d2d\":{\"bytes\":8,\"copies\":3},\"total\":{\"bytes\":56,\"copies\":6},"
            "\"prefetch_bytes\":4,\"prefetch_unread_bytes\":5,\"replays\":6,\"mispredictions\":7,"
            "\"evicted_bytes\":9,\"eviction_writeback_bytes\":10,\"reloaded_bytes\":11,\"relocated_"
            "bytes\":12,\"direct_read_bytes\":13,\"home_read_bytes\":14}");
}

TEST(TransferStats, JsonWritesLargeCountsAsUnsignedIntegers) {
  const TransferStats s = example_stats(18446744073709551615ULL);
  EXPECT_NE(s.to_json().find("\"d2d\":{\"bytes\":18446744073709551615,\"copies\":3}"),
            std::string::npos)
      << s.to_json();
}

TEST(TransferStats, EmptyStatsAreAllZero) {
  EXPECT_EQ(TransferStats{}.to_json(),
            "{\"h2d\":{\"bytes\":0,\"copies\":0},\"d2h\":{\"bytes\":0,\"copies\":0},"
            "\"d2d\":{\"bytes\":0,\"copies\":0},\"total\":{\"bytes\":0,\"copies\":0},"
            "\"prefetch_bytes\":0,\"prefetch_unread_bytes\":0,\"replays\":0,\"mispredictions\":0,"
            "\"evicted_bytes\":0,\"eviction_writeback_bytes\":0,\"reloaded_bytes\":0,\"relocated_"
            "bytes\":0,\"direct_read_bytes\":0,\"home_read_bytes\":0}");
}

TEST(TransferStats, SumAddsEveryField) {
  const TransferStats a = example_stats();
  TransferStats sum;
  sum += a;
  sum += a;
  EXPECT_EQ(sum.host_to_device, (CopyCount{64, 2}));
  EXPECT_EQ(sum.device_to_device, (CopyCount{16, 6}));
  EXPECT_EQ(sum.total_bytes(), 112u);
  EXPECT_EQ(sum.total_copies(), 12u);
  EXPECT_EQ(sum.mispredictions, 14u);
  EXPECT_EQ(sum.evicted_bytes, 18u);
  EXPECT_EQ(sum.eviction_writeback_bytes, 20u);
  EXPECT_EQ(sum.reloaded_bytes, 22u);
  EXPECT_EQ(sum.relocated_bytes, 24u);
  EXPECT_EQ(sum.direct_read_bytes, 26u);
  EXPECT_EQ(sum.home_read_bytes, 28u);
}

}  // namespace
}  // namespace unimem
