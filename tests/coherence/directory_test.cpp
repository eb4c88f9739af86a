#include "coherence/directory.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace unimem {
void PrintTo(const Transfer& t, std::ostream* os) { *os << t.to_string(); }
void PrintTo(const IntervalMap<AgentMask>::Segment& s, std::ostream* os) {
  *os << s.range.to_string() << "=" << s.value.to_string();
}

namespace {

constexpr Agent H = kHostAgent;
constexpr Agent D0 = agent_of_device(0);
constexpr Agent D1 = agent_of_device(1);
constexpr Agent D2 = agent_of_device(2);

AgentMask mask(std::initializer_list<Agent> agents) {
  AgentMask m;
  for (Agent a : agents) m = m.with(a);
  return m;
}

PeerPolicy peers_allowed() {
  return [](Agent, Agent) { return true; };
}
PeerPolicy no_peers() {
  return [](Agent, Agent) { return false; };
}

TEST(AgentMask, SupportsSixtyFourAgentsAndPrintsDevicesByIndex) {
  AgentMask m = AgentMask::of(0).with(63).with(5);
  EXPECT_EQ(m.count(), 3);
  EXPECT_TRUE(m.contains(63));
  EXPECT_EQ(m.lowest(), 0u);
  EXPECT_EQ(m.devices().lowest(), 5u);
  EXPECT_EQ(m.to_string(), "{host, d4, d62}");
  EXPECT_THROW((void)AgentMask::of(64), PreconditionError);
  EXPECT_EQ(AgentMask::first(64).count(), 64);
}

// One row of DSOM Table 1 (seed 000_7b2a075be0870d8f.txt): a starting state built by `setup`,
// one request, the copies it must issue and the masks afterwards.
struct Table1Row {
  std::string name;
  std::function<void(Directory&)> setup;
  std::function<std::vector<Transfer>(Directory&)> request;
  std::vector<Transfer> expected_transfers;
  std::vector<IntervalMap<AgentMask>::Segment> expected_segments;
};

std::vector<Table1Row> table1_rows() {
  auto nothing = [](Directory&) {};
  return {
      {"device read, shared (host valid): copy from home",
       nothing,
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{4, 12}}, peers_allowed());
       },
       {{{4, 12}, H, D0}},
       {{{0, 4}, mask({H})}, {{4, 12}, mask({H, D0})}, {{12, 32}, mask({H})}}},
      {"device read hit: nothing to copy",
       [](Directory& d) {
         d.apply_device_read(D0, IntervalSet{{0, 32}}, peers_allowed());
       },
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{4, 12}}, peers_allowed());
       },
       {},
       {{{0, 32}, mask({H, D0})}}},
      {"device read, modified on a peer it can read: one peer copy, host stays stale",
       [](Directory& d) {
         d.apply_device_write(D1, IntervalSet{{0, 16}});
       },
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{8, 24}}, peers_allowed());
       },
       {{{8, 16}, D1, D0}, {{16, 24}, H, D0}},
       {{{0, 8}, mask({D1})},
        {{8, 16}, mask({D0, D1})},
        {{16, 24}, mask({H, D0})},
        {{24, 32}, mask({H})}}},
      {"device read, modified without peer path: write back, then copy from home",
       [](Directory& d) {
         d.apply_device_write(D1, IntervalSet{{0, 16}});
       },
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{8, 24}}, no_peers());
       },
       {{{8, 16}, D1, H}, {{8, 24}, H, D0}},  // home->d0 coalesced across the two states
       {{{0, 8}, mask({D1})},
        {{8, 16}, mask({H, D0, D1})},
        {{16, 24}, mask({H, D0})},
        {{24, 32}, mask({H})}}},
      {"device read, invalid on reader, shared by two devices but not home, no peer",
       [](Directory& d) {
         d.apply_device_write(D1, IntervalSet{{0, 32}});
         d.apply_device_read(D2, IntervalSet{{0, 32}}, peers_allowed());
       },
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{0, 4}}, no_peers());
       },
       {{{0, 4}, D1, H}, {{0, 4}, H, D0}},
       {{{0, 4}, mask({H, D0, D1, D2})}, {{4, 32}, mask({D1, D2})}}},
      {"device read of several ranges copies only the missing bytes",
       [](Directory& d) {
         d.apply_device_read(D0, IntervalSet{{10, 20}}, peers_allowed());
       },
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{0, 4}, {8, 24}}, peers_allowed());
       },
       {{{0, 4}, H, D0}, {{8, 10}, H, D0}, {{20, 24}, H, D0}},
       {{{0, 4}, mask({H, D0})},
        {{4, 8}, mask({H})},
        {{8, 24}, mask({H, D0})},
        {{24, 32}, mask({H})}}},
      {"device write (modified/shared/invalid): no copy, the writer becomes sole holder",
       [](Directory& d) {
         d.apply_device_read(D1, IntervalSet{{0, 32}}, peers_allowed());
       },
       [](Directory& d) {
         d.apply_device_write(D0, IntervalSet{{4, 8}, {16, 20}});
         return std::vector<Transfer>{};
       },
       {},
       {{{0, 4}, mask({H, D1})},
        {{4, 8}, mask({D0})},
        {{8, 16}, mask({H, D1})},
        {{16, 20}, mask({D0})},
        {{20, 32}, mask({H, D1})}}},
      {"host write: bytes land at home, every cache copy is invalid",
       [](Directory& d) {
         d.apply_device_write(D0, IntervalSet{{0, 32}});
       },
       [](Directory& d) {
         d.apply_host_write(IntervalSet{{8, 16}});
         return std::vector<Transfer>{};
       },
       {},
       {{{0, 8}, mask({D0})}, {{8, 16}, mask({H})}, {{16, 32}, mask({D0})}}},
      {"host read, modified: write back from the holder first",
       [](Directory& d) {
         d.apply_device_write(D2, IntervalSet{{0, 8}});
       },
       [](Directory& d) {
         return d.apply_host_read(IntervalSet{{4, 12}});
       },
       {{{4, 8}, D2, H}},
       {{{0, 4}, mask({D2})}, {{4, 8}, mask({H, D2})}, {{8, 32}, mask({H})}}},
      {"host read, shared/invalid: straight from home",
       [](Directory& d) {
         d.apply_device_read(D0, IntervalSet{{0, 32}}, peers_allowed());
       },
       [](Directory& d) {
         return d.apply_host_read(IntervalSet{{0, 32}});
       },
       {},
       {{{0, 32}, mask({H, D0})}}},
      {"segments merge again once masks agree",
       [](Directory& d) {
         d.apply_device_write(D0, IntervalSet{{4, 8}});
       },
       [](Directory& d) {
         return d.apply_device_read(D0, IntervalSet{{0, 32}}, peers_allowed());
       },
       {{{0, 4}, H, D0}, {{8, 32}, H, D0}},
       {{{0, 4}, mask({H, D0})}, {{4, 8}, mask({D0})}, {{8, 32}, mask({H, D0})}}},
  };
}

class DirectoryTable1 : public ::testing::TestWithParam<Table1Row> {};

TEST_P(DirectoryTable1, ActionIssuesExpectedCopiesAndStates) {
  const Table1Row& row = GetParam();
  Directory dir(32, 4);
  row.setup(dir);
  const std::vector<Transfer> got = row.request(dir);
  std::string got_text;
  for (const auto& t : got) got_text += t.to_string() + "; ";
  EXPECT_EQ(got, row.expected_transfers) << got_text;
  EXPECT_EQ(dir.segments(), row.expected_segments);
  dir.check_invariants();
}

INSTANTIATE_TEST_SUITE_P(Table1, DirectoryTable1, ::testing::ValuesIn(table1_rows()),
                         [](const ::testing::TestParamInfo<Table1Row>& param_info) {
                           return "row" + std::to_string(param_info.index);
                         });

TEST(Directory, RejectsBadRangesAndAgents) {
  Directory dir(16, 3);
  EXPECT_THROW(dir.apply_device_read(D0, IntervalSet{{8, 17}}, peers_allowed()), PreconditionError);
  EXPECT_THROW(dir.apply_device_write(H, IntervalSet{{0, 1}}), PreconditionError);
  EXPECT_THROW(dir.apply_device_write(agent_of_device(2), IntervalSet{{0, 1}}), PreconditionError);
  EXPECT_THROW(dir.apply_host_read(IntervalSet{{0, 100}}), PreconditionError);
  EXPECT_THROW(Directory(0, 2), PreconditionError);
  EXPECT_THROW(Directory(8, 65), PreconditionError);
  try {
    dir.apply_host_write(IntervalSet{{10, 20}});
    FAIL();
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("[10, 20)"), std::string::npos) << e.what();
  }
}

TEST(Directory, SixtyFourAgentsWork) {
  Directory dir(8, 64);
  dir.apply_device_write(63, IntervalSet{{0, 8}});
  auto t = dir.apply_device_read(1, IntervalSet{{0, 8}}, no_peers());
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(dir.mask_at(0), mask({H, 1, 63}));
}

// Random requests against a dense model (one mask per byte): the masks must agree, the copies
// must cover exactly the bytes the reader lacked, and the invariants must hold throughout.
TEST(Directory, RandomRequestsMatchDenseModel) {
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const std::uint64_t size = 1 + rng() % 200;
    const std::size_t agents = 2 + rng() % 6;
    const bool peer = rng() % 2 == 0;
    Directory dir(size, agents);
    std::vector<AgentMask> model(size, AgentMask::of(H));
    for (int step = 0; step < 300; ++step) {
      const std::uint64_t b = rng() % size;
      const std::uint64_t e = b + 1 + rng() % (size - b);
      const IntervalSet r{{b, e}};
      const Agent dev = static_cast<Agent>(1 + rng() % (agents - 1));
      switch (rng() % 4) {
        case 0: {
          // Half the reads take the form with a reused list that also gives the missing bytes:
          // what missing_on said before the read.
          const IntervalSet lacking = dir.missing_on(dev, r);
          std::vector<Transfer> t;
          if (rng() % 2 == 0) {
            t = dir.apply_device_read(dev, r, peer ? peers_allowed() : no_peers());
          } else {
            t.push_back(Transfer{Interval{0, 1}, H, dev});  // cleared by the call
            IntervalSet missing{{0, 1}};                    // replaced by the call
            dir.apply_device_read(dev, r, peer ? peers_allowed() : no_peers(), t, &missing);
            ASSERT_EQ(missing, lacking);
          }
          std::vector<int> delivered(size, 0);
          for (const Transfer& x : t) {
            ASSERT_TRUE(r.contains(x.range));
            if (x.to == dev) {
              for (auto o = x.range.begin; o < x.range.end; ++o) ++delivered[o];
            }
          }
          for (auto o = b; o < e; ++o) {
            const bool lacked = !model[o].contains(dev);
            ASSERT_EQ(delivered[o], lacked ? 1 : 0) << "offset " << o;
            if (lacked) {
              model[o] =
                  (model[o].contains(H) || peer) ? model[o].with(dev) : model[o].with(H).with(dev);
            }
          }
          break;
        }
        case 1:
          dir.apply_device_write(dev, r);
          for (auto o = b; o < e; ++o) model[o] = AgentMask::of(dev);
          break;
        case 2:
          dir.apply_host_write(r);
          for (auto o = b; o < e; ++o) model[o] = AgentMask::of(H);
          break;
        default: {
          // stale_at_home changes nothing and names the transfers apply_host_read performs.
          const std::vector<Transfer> stale = dir.stale_at_home(Interval{b, e});
          for (std::uint64_t o = 0; o < size; ++o) ASSERT_EQ(dir.mask_at(o), model[o]) << o;
          auto t = dir.apply_host_read(r);
          ASSERT_EQ(stale, t);
          std::uint64_t copied = 0;
          for (const Transfer& x : t) {
            ASSERT_EQ(x.to, H);
            copied += x.range.size();
          }
          std::uint64_t lacked = 0;
          for (auto o = b; o < e; ++o) {
            if (!model[o].contains(H)) ++lacked;
            model[o] = model[o].with(H);
          }
          ASSERT_EQ(copied, lacked);
        }
      }
      dir.check_invariants();
      for (std::uint64_t o = 0; o < size; ++o) ASSERT_EQ(dir.mask_at(o), model[o]) << o;
    }
  }
}

}  // namespace
}  // namespace unimem
