// Team kernels (include/unimem/team.h) launched through Program on 1, 2 and 3 POCL devices:
// kernels sharing 1, 20, 21 and 100 variables, nested calls of functions with their own master
// and parallel blocks, and a reduction through shared variables all equal a CPU reference and
// split over every device; the build report gives each kernel's team memory and spill; bad
// launches are refused with messages naming the kernel.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unimem/program.hpp>
#include "api/device_library.hpp"
#include "api/program_core.hpp"
#include "device/opencl/opencl_context.hpp"

namespace unimem {
namespace {

// POCL reads POCL_DEVICES once, at the first OpenCL call of the process (an environment that sets
// it wins: POCL_DEVICES=pthread runs everything on one device).
const bool kPoclRequested = [] {
  setenv("POCL_DEVICES", "pthread pthread pthread", 0);
  return true;
}();

constexpr std::uint64_t kTeamSize = 32;  // work-items per team (work-group)
constexpr std::uint64_t kTeams = 12;     // splits evenly over 1, 2 and 3 devices

// share_<n>: the master shares n variables it computes from its team's inputs; every work-item
// then combines all n of them. Variables 0..19 sit in team memory, the rest in the spill area.
std::string share_kernel(std::uint32_t n) {
  const std::string nv = std::to_string(n);
  return "kernel void share_" + nv + "(global const int* in, global int* out, UM_TEAM_PARAM(" + nv +
         ")) {\n" + "  UM_TEAM_BEGIN(team, " + nv + ");\n" +
         "  UM_MASTER(team)\n"
         "    const uint base = um_team_num(team) * " +
         nv + ";\n" + "    for (uint v = 0; v < " + nv +
         "; ++v) um_share_int(team, v, in[base + v] * 2 + (int)v);\n"
         "  UM_END_MASTER(team);\n"
         "  UM_PARALLEL(team)\n"
         "    int acc = 0;\n"
         "    for (uint v = 0; v < " +
         nv +
         "; ++v) acc += um_shared_int(team, v) * (int)(v + 1);\n"
         "    out[get_global_id(0)] = acc + (int)um_team_rank(team);\n"
         "  UM_END_PARALLEL(team);\n"
         "  UM_TEAM_END(team);\n"
         "}\n";
}

std::vector<int> share_reference(std::uint32_t n, const std::vector<int>& in) {
  std::vector<int> out(kTeams * kTeamSize);
  for (std::uint64_t t = 0; t < kTeams; ++t) {
    int acc = 0;
    for (std::uint32_t v = 0; v < n; ++v) {
      acc += (in[t * n + v] * 2 + static_cast<int>(v)) * static_cast<int>(v + 1);
    }
    for (std::uint64_t r = 0; r < kTeamSize; ++r)
      out[t * kTeamSize + r] = acc + static_cast<int>(r);
  }
  return out;
}

// Nested calls: team functions with master and parallel blocks of their own, called from the
// kernel's team context in a loop whose bound the master shared; a helper called inside a
// parallel region reads shared variables through the team pointer.
constexpr const char* kNestedSource = R"CLC(
#define NN 24
int weighted(const um_team* team, uint first, uint count) {
  int s = 0;
  for (uint v = first; v < first + count; ++v) s += um_shared_int(team, v) * (int)v;
  return s;
}
void scale_round(um_team* team, global int* data, uint var) {
  UM_MASTER(team)
    um_share_int(team, var, um_shared_int(team, var) + 1);
  UM_END_MASTER(team);
  UM_PARALLEL(team)
    const size_t i = get_global_id(0);
    data[i] = data[i] * 3 + um_shared_int(team, var) + weighted(team, 20, 4);
  UM_END_PARALLEL(team);
}
void two_rounds(um_team* team, global int* data, uint var) {
  scale_round(team, data, var);
  scale_round(team, data, var + 1);
}
kernel void nested(global const int* in, global int* out, int rounds, UM_TEAM_PARAM(NN)) {
  UM_TEAM_BEGIN(team, NN);
  UM_MASTER(team)
    um_share_int(team, 0, rounds);
    for (uint v = 1; v < NN; ++v) um_share_int(team, v, in[um_team_num(team) * NN + v]);
  UM_END_MASTER(team);
  UM_PARALLEL(team)
    out[get_global_id(0)] = (int)get_global_id(0);
  UM_END_PARALLEL(team);
  for (int r = 0; r < um_shared_int(team, 0); ++r) two_rounds(team, out, 1 + (uint)r % 18);
  UM_TEAM_END(team);
}
)CLC";

std::vector<int> nested_reference(const std::vector<int>& in, int rounds) {
  constexpr std::uint32_t nn = 24;
  std::vector<int> out(kTeams * kTeamSize);
  for (std::uint64_t t = 0; t < kTeams; ++t) {
    std::vector<int> shared(nn);
    shared[0] = rounds;
    for (std::uint32_t v = 1; v < nn; ++v) shared[v] = in[t * nn + v];
    for (std::uint64_t r = 0; r < kTeamSize; ++r) {
      out[t * kTeamSize + r] = static_cast<int>(t * kTeamSize + r);
    }
    auto round = [&](std::uint32_t var) {
      shared[var] += 1;
      int w = 0;
      for (std::uint32_t v = 20; v < 24; ++v) w += shared[v] * static_cast<int>(v);
      for (std::uint64_t r = 0; r < kTeamSize; ++r) {
        int& d = out[t * kTeamSize + r];
        d = d * 3 + shared[var] + w;
      }
    };
    for (int r = 0; r < rounds; ++r) {
      const std::uint32_t var = 1 + static_cast<std::uint32_t>(r) % 18;
      round(var);
      round(var + 1);
    }
  }
  return out;
}

// A reduction through shared variables: every work-item publishes its partial in variable
// 1 + rank (ranks 19.. spill), the master adds them up, shares the sum in variable 0 and writes
// it out; then every work-item scales its input by it.
constexpr const char* kReduceSource = R"CLC(
#define NR 33
kernel void team_sum(global const int* in, global int* sums, global int* out, UM_TEAM_PARAM(NR)) {
  UM_TEAM_BEGIN(team, NR);
  UM_PARALLEL(team)
    const size_t i = get_global_id(0);
    um_share_int(team, 1 + um_team_rank(team), in[i] * in[i]);
  UM_END_PARALLEL(team);
  UM_MASTER(team)
    int s = 0;
    for (uint r = 0; r < um_team_size(team); ++r) s += um_shared_int(team, 1 + r);
    um_share_int(team, 0, s);
    sums[um_team_num(team)] = s;
  UM_END_MASTER(team);
  UM_PARALLEL(team)
    const size_t i = get_global_id(0);
    out[i] = in[i] * 1000 / um_shared_int(team, 0);
  UM_END_PARALLEL(team);
  UM_TEAM_END(team);
}
)CLC";

class TeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kPoclRequested);
    DeviceRegistry devices = opencl::make_opencl_devices("");
    if (devices.size() == 0) GTEST_SKIP() << "needs an OpenCL device";
    runtime_ = std::make_unique<Runtime>(std::move(devices), RuntimeOptions{UpdateStrategy::lazy});
  }
  BufferId upload(const std::vector<int>& v) {
    const BufferId b = runtime_->create_buffer(v.size() * sizeof(int));
    runtime_->write_blocking(b, 0, std::as_bytes(std::span(v)));
    return b;
  }
  std::vector<int> download(BufferId b) {
    std::vector<int> v(runtime_->buffer_size(b) / sizeof(int));
    runtime_->read_blocking(b, 0, std::as_writable_bytes(std::span(v)));
    return v;
  }
  static NDRange teams_range() {
    NDRange r;
    r.global = {kTeams * kTeamSize, 1, 1};
    r.local = {kTeamSize, 1, 1};
    return r;
  }
  // 1, 2, 3 devices (as many as the runtime has).
  std::vector<std::size_t> device_counts() const {
    std::vector<std::size_t> counts;
    for (std::size_t n = 1; n <= std::min<std::size_t>(3, runtime_->device_count()); ++n) {
      counts.push_back(n);
    }
    return counts;
  }
  static LaunchOptions on_devices(std::size_t n) {
    LaunchOptions o;
    for (std::size_t d = 0; d < n; ++d) o.devices.push_back(d);
    return o;
  }
  static std::vector<int> pattern(std::size_t n, int seed) {
    std::vector<int> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<int>((i * 7 + seed) % 23) - 11;
    return v;
  }

  void expect_team_sums(const std::string& source, int seed);

  std::unique_ptr<Runtime> runtime_;
};

TEST_F(TeamTest, SharedVariablesInSlotsAndSpillEqualTheReferenceOnOneToThreeDevices) {
  for (const std::uint32_t n : {1U, 20U, 21U, 100U}) {
    const std::string source = "#include <unimem/team.h>\n" + share_kernel(n);
    Program program(*runtime_, source);
    std::vector<std::string> log;
    program.set_log([&](const std::string& m) { log.push_back(m); });
    const std::vector<int> in = pattern(kTeams * n, static_cast<int>(n));
    const BufferId in_buf = upload(in);
    const std::vector<int> expected = share_reference(n, in);
    for (const std::size_t devices : device_counts()) {
      const BufferId out = runtime_->create_buffer(kTeams * kTeamSize * sizeof(int));
      program.launch("share_" + std::to_string(n), teams_range(),
                     {Arg::buffer(in_buf), Arg::buffer(out)}, on_devices(devices));
      EXPECT_EQ(download(out), expected) << n << " shared variables on " << devices << " devices";
      // Without the kernel analysis (UNIMEM_WITH_ANALYSIS=OFF) in and out have no byte sets and
      // the launch runs on one device; the results must be right either way.
      if (program.analyzed()) {
        EXPECT_EQ(program.core().last_plan().partitions.size(), devices)
            << n << " shared variables: the launch did not split; log: "
            << (log.empty() ? "" : log.back());
      }
      runtime_->release_buffer(out);
    }
    runtime_->release_buffer(in_buf);
  }
}

TEST_F(TeamTest, NestedTeamFunctionsEqualTheReferenceOnOneToThreeDevices) {
  Program program(*runtime_, std::string("#include <unimem/team.h>\n") + kNestedSource);
  const std::vector<int> in = pattern(kTeams * 24, 5);
  const BufferId in_buf = upload(in);
  for (const int rounds : {0, 1, 4}) {
    for (const std::size_t devices : device_counts()) {
      const BufferId out = runtime_->create_buffer(kTeams * kTeamSize * sizeof(int));
      program.launch("nested", teams_range(),
                     {Arg::buffer(in_buf), Arg::buffer(out), Arg::scalar(rounds)},
                     on_devices(devices));
      EXPECT_EQ(download(out), nested_reference(in, rounds))
          << rounds << " rounds on " << devices << " devices";
      if (program.analyzed()) {
        EXPECT_EQ(program.core().last_plan().partitions.size(), devices);
      }
      runtime_->release_buffer(out);
    }
  }
}

// Runs team_sum (kReduceSource, or a variant with the same results) on 1..3 devices against the
// reference: every team's sum of squares, and every input scaled by it.
void TeamTest::expect_team_sums(const std::string& source, int seed) {
  Program program(*runtime_, "#include <unimem/team.h>\n" + source);
  std::vector<int> in = pattern(kTeams * kTeamSize, seed);
  for (int& v : in) v += 12;  // positive: every team's sum of squares is > 0
  std::vector<int> sums(kTeams), out(kTeams * kTeamSize);
  for (std::uint64_t t = 0; t < kTeams; ++t) {
    for (std::uint64_t r = 0; r < kTeamSize; ++r)
      sums[t] += in[t * kTeamSize + r] * in[t * kTeamSize + r];
    for (std::uint64_t r = 0; r < kTeamSize; ++r) {
      out[t * kTeamSize + r] = in[t * kTeamSize + r] * 1000 / sums[t];
    }
  }
  const BufferId in_buf = upload(in);
  for (const std::size_t devices : device_counts()) {
    const BufferId sums_buf = runtime_->create_buffer(kTeams * sizeof(int));
    const BufferId out_buf = runtime_->create_buffer(kTeams * kTeamSize * sizeof(int));
    program.launch("team_sum", teams_range(),
                   {Arg::buffer(in_buf), Arg::buffer(sums_buf), Arg::buffer(out_buf)},
                   on_devices(devices));
    EXPECT_EQ(download(sums_buf), sums) << devices << " devices";
    EXPECT_EQ(download(out_buf), out) << devices << " devices";
    if (program.analyzed()) {
      EXPECT_EQ(program.core().last_plan().partitions.size(), devices);
    }
    runtime_->release_buffer(sums_buf);
    runtime_->release_buffer(out_buf);
  }
}

TEST_F(TeamTest, AReductionThroughSharedVariablesEqualsTheReferenceOnOneToThreeDevices) {
  expect_team_sums(kReduceSource, 3);
}

// A team kernel whose own code also calls get_group_id is split through the build with
// whole-launch group ids (ProgramCore); the team number must not count the offset twice.
TEST_F(TeamTest, ATeamKernelThatAlsoCallsGetGroupIdKeepsItsTeamNumbers) {
  std::string source = kReduceSource;
  const std::string team_slot = "sums[um_team_num(team)] = s;";
  source.replace(source.find(team_slot), team_slot.size(),
                 "sums[get_group_id(0)] = s + (int)(um_team_num(team) - get_group_id(0));");
  expect_team_sums(source, 4);
}

TEST_F(TeamTest, TheBuildReportGivesTeamMemoryAndSpillPerWorkGroup) {
  std::string source = "#include <unimem/team.h>\n";
  for (const std::uint32_t n : {1U, 20U, 21U, 100U}) source += share_kernel(n);
  source += "kernel void plain(global int* a) { a[get_global_id(0)] = 1; }\n";
  const Program program(*runtime_, source);
  const auto& teams = program.build_report().teams;
  ASSERT_EQ(teams.size(), 4U);
  EXPECT_FALSE(teams.contains("plain"));
  for (const std::uint32_t n : {1U, 20U, 21U, 100U}) {
    const TeamFootprint& f = teams.at("share_" + std::to_string(n));
    EXPECT_EQ(f.shared_variables, n);
    EXPECT_EQ(f.slots, 20U);
    EXPECT_EQ(f.argument, 2U);
    EXPECT_EQ(f.team_memory_bytes(), 160U);  // the paper's 20 slots of 8 bytes
    EXPECT_EQ(f.spill_bytes_per_group(), n > 20 ? (n - 20) * 8 : 0U);
  }
}

TEST_F(TeamTest, TheSlotCountIsABuildOptionAndResultsDoNotDependOnIt) {
  const std::vector<int> in = pattern(kTeams * 21, 9);
  const BufferId in_buf = upload(in);
  for (const int slots : {0, 4, 64}) {
    Program program(*runtime_, "#include <unimem/team.h>\n" + share_kernel(21),
                    "-DUM_TEAM_SLOTS=" + std::to_string(slots));
    const TeamFootprint& f = program.build_report().teams.at("share_21");
    EXPECT_EQ(f.slots, static_cast<std::uint32_t>(slots));
    EXPECT_EQ(f.spill_bytes_per_group(), slots >= 21 ? 0U : (21U - slots) * 8);
    const BufferId out = runtime_->create_buffer(kTeams * kTeamSize * sizeof(int));
    program.launch("share_21", teams_range(), {Arg::buffer(in_buf), Arg::buffer(out)},
                   on_devices(runtime_->device_count()));
    EXPECT_EQ(download(out), share_reference(21, in)) << slots << " slots";
    runtime_->release_buffer(out);
  }
}

TEST_F(TeamTest, TheSpillAreaIsScratchNoCopyMovesIt) {
  // share_100 spills 80 variables (640 B per team): the only copies are the input's upload and
  // fetches and the output's read back, never the spill area.
  Program program(*runtime_, "#include <unimem/team.h>\n" + share_kernel(100));
  const std::vector<int> in = pattern(kTeams * 100, 1);
  const BufferId in_buf = upload(in);
  const BufferId out = runtime_->create_buffer(kTeams * kTeamSize * sizeof(int));
  const TransferStats before = runtime_->stats();
  program.launch("share_100", teams_range(), {Arg::buffer(in_buf), Arg::buffer(out)},
                 on_devices(runtime_->device_count()));
  (void)download(out);
  const TransferStats after = runtime_->stats();
  const std::uint64_t moved = after.host_to_device.bytes - before.host_to_device.bytes;
  // Without the analysis, out has no byte sets either: a whole-buffer may-write, fetched first.
  const std::uint64_t allowed =
      in.size() * sizeof(int) + (program.analyzed() ? 0 : kTeams * kTeamSize * sizeof(int));
  EXPECT_LE(moved, allowed) << "more than the input went to the devices";
  EXPECT_EQ(after.device_to_host.bytes - before.device_to_host.bytes,
            kTeams * kTeamSize * sizeof(int));
  runtime_->release_buffer(out);
  runtime_->release_buffer(in_buf);
}

TEST_F(TeamTest, LaunchesATeamKernelCannotRunAreRefusedNamingTheKernel) {
  Program program(*runtime_, "#include <unimem/team.h>\n" + share_kernel(21));
  const BufferId a = runtime_->create_buffer(kTeams * 21 * sizeof(int));
  const BufferId b = runtime_->create_buffer(kTeams * kTeamSize * sizeof(int));
  auto message = [&](const NDRange& range, std::vector<Arg> args) {
    try {
      program.launch("share_21", range, std::span<const Arg>(args));
    } catch (const PreconditionError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  NDRange two_d;
  two_d.dims = 2;
  two_d.global = {kTeamSize, 2, 1};
  two_d.local = {kTeamSize, 1, 1};
  EXPECT_NE(message(two_d, {Arg::buffer(a), Arg::buffer(b)}).find("team kernel 'share_21'"),
            std::string::npos);
  NDRange no_local = teams_range();
  no_local.local = {0, 0, 0};
  EXPECT_NE(message(no_local, {Arg::buffer(a), Arg::buffer(b)}).find("explicit work-group size"),
            std::string::npos);
  NDRange offset = teams_range();
  offset.offset = {kTeamSize, 0, 0};
  EXPECT_NE(message(offset, {Arg::buffer(a), Arg::buffer(b)}).find("no global offset"),
            std::string::npos);
  EXPECT_NE(message(teams_range(), {Arg::buffer(a)}).find("1 arguments given; it takes 2"),
            std::string::npos);
}

TEST_F(TeamTest, ASpillParameterThatIsNotLastIsABuildError) {
  const std::string source =
      "#include <unimem/team.h>\n"
      "kernel void wrong(UM_TEAM_PARAM(3), global int* a) { a[0] = 1; }\n";
  try {
    const Program program(*runtime_, source);
    FAIL() << "built";
  } catch (const PreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'wrong'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("must be the kernel's last parameter"), std::string::npos);
  }
}

// Two threads launch team kernels of one Program at once, one of them with ever more teams (its
// spill area grows while the other's launches are in flight): every result stays right.
TEST_F(TeamTest, ConcurrencyLaunchesFromTwoThreadsWhileTheSpillAreaGrows) {
  Program program(*runtime_, "#include <unimem/team.h>\n" + share_kernel(21));
  const std::vector<int> in = pattern(4 * kTeams * 21, 4);
  const BufferId in_buf = upload(in);
  auto run = [&](int thread) {
    for (std::uint64_t round = 1; round <= 4; ++round) {
      const std::uint64_t teams = thread == 0 ? kTeams : round * kTeams;
      NDRange range = teams_range();
      range.global[0] = teams * kTeamSize;
      const BufferId out = runtime_->create_buffer(teams * kTeamSize * sizeof(int));
      program.launch("share_21", range, {Arg::buffer(in_buf), Arg::buffer(out)});
      std::vector<int> got(teams * kTeamSize);
      runtime_->read_blocking(out, 0, std::as_writable_bytes(std::span(got)));
      std::vector<int> expected(teams * kTeamSize);
      for (std::uint64_t t = 0; t < teams; ++t) {
        int acc = 0;
        for (std::uint32_t v = 0; v < 21; ++v) {
          acc += (in[t * 21 + v] * 2 + static_cast<int>(v)) * static_cast<int>(v + 1);
        }
        for (std::uint64_t r = 0; r < kTeamSize; ++r) {
          expected[t * kTeamSize + r] = acc + static_cast<int>(r);
        }
      }
      EXPECT_EQ(got, expected) << "thread " << thread << " round " << round;
      runtime_->release_buffer(out);
    }
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  runtime_->release_buffer(in_buf);
}

// The include directory: the environment wins; then the tree the library was installed into
// (found from the library's path, so a moved prefix works); then the source tree.
TEST(DeviceLibrary, TheIncludeDirectoryIsFoundForInstalledAndBuildTrees) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("unimem_team_include_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "prefix" / "lib");
  fs::create_directories(root / "prefix" / "include" / "unimem");
  fs::create_directories(root / "src" / "include" / "unimem");
  std::ofstream(root / "prefix" / "include" / "unimem" / "team.h") << "/* installed */\n";
  std::ofstream(root / "src" / "include" / "unimem" / "team.h") << "/* source */\n";
  const std::string lib = (root / "prefix" / "lib" / "x86_64-linux-gnu" / "libunimem.so").string();
  const std::string exe = (root / "prefix" / "bin" / "unimem").string();
  const std::string source = (root / "src" / "include").string();
  const std::vector<std::string> up = {"../../include", "../include"};
  EXPECT_EQ(detail::device_include_dir_from("/env/dir", lib, up, source), "/env/dir");
  EXPECT_EQ(detail::device_include_dir_from("", lib, up, source),
            (root / "prefix" / "include").string());
  EXPECT_EQ(detail::device_include_dir_from("", exe, up, source),
            (root / "prefix" / "include").string());
  // A library outside an installed tree (the build tree) uses the source tree.
  EXPECT_EQ(
      detail::device_include_dir_from("", (root / "build" / "libunimem.so").string(), up, source),
      source);
  EXPECT_EQ(detail::device_include_dir_from("", "", up, "/nonexistent"), "");
  fs::remove_all(root);
  // This build finds the real header.
  EXPECT_TRUE(fs::exists(fs::path(detail::device_include_dir()) / "unimem" / "team.h"));
}

}  // namespace
}  // namespace unimem
