// Device discovery, UNIMEM_DEVICES selection and the POCL_DEVICES default.
#if UNIMEM_HAVE_OPENCL
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_discovery.hpp"

namespace unimem::opencl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DeviceInfo fake(std::size_t index, std::string platform, std::string name, std::string type) {
  DeviceInfo d;
  d.index = index;
  d.platform_name = std::move(platform);
  d.name = std::move(name);
  d.type = std::move(type);
  return d;
}

std::vector<DeviceInfo> fake_machine() {
  return {fake(0, "Portable Computing Language", "pthread-skylake", "cpu"),
          fake(1, "Portable Computing Language", "pthread-skylake", "cpu"),
          fake(2, "NVIDIA CUDA", "NVIDIA A100", "gpu"),
          fake(3, "Intel(R) FPGA Emulation Platform", "Intel FPGA Emulator", "accelerator")};
}

std::string selection_error(std::string_view selection) {
  try {
    (void)select_devices(fake_machine(), selection);
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OpenCLSelection, EmptyOrAllSelectsEveryDeviceInIndexOrder) {
  EXPECT_THAT(select_devices(fake_machine(), ""), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(select_devices(fake_machine(), "  "), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(select_devices(fake_machine(), "all"), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(select_devices(fake_machine(), "*"), ElementsAre(0, 1, 2, 3));
}

TEST(OpenCLSelection, IndicesRangesTypesAndNamesKeepItemOrderWithoutDuplicates) {
  EXPECT_THAT(select_devices(fake_machine(), "2,0"), ElementsAre(2, 0));
  EXPECT_THAT(select_devices(fake_machine(), " 1 , 1 "), ElementsAre(1));
  EXPECT_THAT(select_devices(fake_machine(), "1-3"), ElementsAre(1, 2, 3));
  EXPECT_THAT(select_devices(fake_machine(), "type=gpu,type=CPU"), ElementsAre(2, 0, 1));
  EXPECT_THAT(select_devices(fake_machine(), "a100"), ElementsAre(2));
  EXPECT_THAT(select_devices(fake_machine(), "portable"), ElementsAre(0, 1));
  EXPECT_THAT(select_devices(fake_machine(), "pocl:"), ElementsAre(0, 1));  // unimem name
  EXPECT_THAT(select_devices(fake_machine(), "#1"), ElementsAre(1));
  EXPECT_THAT(select_devices(fake_machine(), "fpga,0"), ElementsAre(3, 0));
}

TEST(OpenCLSelection, BadItemsAreNamedAndTheExistingDevicesListed) {
  const std::string unknown = selection_error("0,quantum");
  EXPECT_THAT(unknown, HasSubstr("item \"quantum\" matches no device"));
  EXPECT_THAT(unknown, HasSubstr("2: nvidia:NVIDIA A100#2 (gpu, NVIDIA CUDA)"));
  EXPECT_THAT(unknown, HasSubstr("0: pocl:pthread-skylake#0 (cpu, Portable Computing Language)"));
  EXPECT_THAT(selection_error("4"), HasSubstr("item \"4\" is not a device index"));
  EXPECT_THAT(selection_error("2-9"), HasSubstr("item \"2-9\" is not a range of indices"));
  EXPECT_THAT(selection_error("3-1"), HasSubstr("is not a range of indices"));
  EXPECT_THAT(selection_error("0,,1"), HasSubstr("item \"\" is empty"));
  EXPECT_THAT(selection_error("type=dsp"), HasSubstr("item \"type=dsp\" matches no device"));
  try {
    (void)select_devices({}, "0");
    FAIL();
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no OpenCL device was found"));
  }
}

class IcdDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("unimem_icd_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& file, const std::string& content) {
    std::ofstream(dir_ / file) << content;
  }
  IcdSearch search() const {
    IcdSearch s;
    s.default_vendor_dir = dir_.string();
    return s;
  }
  std::filesystem::path dir_;
};

TEST_F(IcdDirectory, OnlyPoclWhenEveryRegisteredLibraryIsPocl) {
  write("pocl.icd", "libpocl.so.2.10.0\n");
  write("notes.txt", "libnvidia-opencl.so.1\n");  // not an .icd file: the loader ignores it
  EXPECT_THAT(icd_libraries(search()), ElementsAre("libpocl.so.2.10.0"));
  EXPECT_TRUE(only_pocl(icd_libraries(search())));

  const PoclDefault applied = decide_pocl_default(search(), std::nullopt);
  EXPECT_TRUE(applied.applied);
  EXPECT_EQ(applied.pocl_devices, "pthread pthread");
  EXPECT_THAT(applied.explanation, HasSubstr("POCL is the only OpenCL platform"));
  EXPECT_EQ(decide_pocl_default(search(), std::nullopt, 3).pocl_devices, "pthread pthread pthread");

  const PoclDefault user = decide_pocl_default(search(), std::string("cpu"));
  EXPECT_FALSE(user.applied);
  EXPECT_EQ(user.pocl_devices, "cpu");
  EXPECT_THAT(user.explanation, HasSubstr("set by the user"));
  // Even an empty value is the user's choice.
  EXPECT_FALSE(decide_pocl_default(search(), std::string()).applied);
}

TEST_F(IcdDirectory, AnotherVendorOrNoVendorLeavesPoclDevicesUnset) {
  EXPECT_TRUE(icd_libraries(search()).empty());
  EXPECT_FALSE(decide_pocl_default(search(), std::nullopt).applied);

  write("pocl.icd", "/usr/lib/x86_64-linux-gnu/libpocl.so.2\n");
  write("nvidia.icd", "libnvidia-opencl.so.1\n");
  EXPECT_THAT(icd_libraries(search()),
              ElementsAre("libnvidia-opencl.so.1", "/usr/lib/x86_64-linux-gnu/libpocl.so.2"));
  const PoclDefault mixed = decide_pocl_default(search(), std::nullopt);
  EXPECT_FALSE(mixed.applied);
  EXPECT_THAT(mixed.explanation, HasSubstr("other OpenCL implementations"));
}

TEST_F(IcdDirectory, FollowsOclIcdVendorsAndKhronosFilenames) {
  write("pocl.icd", "libpocl.so.2\n");
  IcdSearch s;
  s.default_vendor_dir = "/nonexistent";
  s.ocl_icd_vendors = dir_.string();  // a directory replaces the vendor directory
  EXPECT_THAT(icd_libraries(s), ElementsAre("libpocl.so.2"));
  s.ocl_icd_vendors = (dir_ / "pocl.icd").string();  // one .icd file
  EXPECT_THAT(icd_libraries(s), ElementsAre("libpocl.so.2"));
  s.ocl_icd_vendors = "pocl.icd";  // a bare .icd name is looked up in the vendor directory
  s.opencl_vendor_path = dir_.string();
  EXPECT_THAT(icd_libraries(s), ElementsAre("libpocl.so.2"));
  s.ocl_icd_vendors = "libintelocl.so";  // the library itself
  EXPECT_THAT(icd_libraries(s), ElementsAre("libintelocl.so"));
  EXPECT_FALSE(only_pocl(icd_libraries(s)));
  s.ocl_icd_vendors.clear();
  s.ocl_icd_filenames = "/opt/a/libfoo.so:libpocl.so.2";
  EXPECT_THAT(icd_libraries(s), ElementsAre("/opt/a/libfoo.so", "libpocl.so.2", "libpocl.so.2"));
}

TEST(OpenCLDiscovery, ListsRealDevicesAndAppliesThePoclDefaultFirst) {
  const std::vector<DeviceInfo> devices = list_devices();
  const PoclDefault& pocl = pocl_default();
  const char* env = std::getenv("POCL_DEVICES");
  if (pocl.applied) {
    ASSERT_NE(env, nullptr);
    EXPECT_STREQ(env, "pthread pthread");
    EXPECT_GE(devices.size(), 2U);  // POCL honoured it
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i];
    EXPECT_EQ(d.index, i);
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.platform_name.empty());
    EXPECT_GT(d.compute_units, 0U);
    EXPECT_GT(d.global_mem_bytes, 0U);
    EXPECT_GT(d.max_alloc_bytes, 0U);
    EXPECT_LE(d.max_alloc_bytes, d.global_mem_bytes);
    EXPECT_THAT(d.version, HasSubstr("OpenCL"));
    EXPECT_THAT(d.unimem_name(), HasSubstr("#" + std::to_string(i)));
  }
}

TEST(OpenCLDiscovery, OpenDevicesHonoursTheSelectionAndSharesOneContextPerPlatform) {
  const std::vector<DeviceInfo> all = list_devices();
  if (all.size() < 2) GTEST_SKIP() << "needs two OpenCL devices";
  auto both = open_devices("0,1");
  ASSERT_EQ(both.size(), 2U);
  EXPECT_EQ(both[0]->name(), all[0].unimem_name());
  EXPECT_EQ(both[1]->name(), all[1].unimem_name());
  EXPECT_EQ(both[0]->driver(), "opencl");
  if (all[0].platform == all[1].platform) {
    EXPECT_EQ(both[0]->context(), both[1]->context());
    EXPECT_TRUE(both[1]->can_copy_from_peer(*both[0]));
  }
  auto reversed = open_devices("1,0");
  EXPECT_EQ(reversed[0]->name(), all[1].unimem_name());
  EXPECT_NE(reversed[0]->context(), both[0]->context());  // a separate open, a separate context
  EXPECT_FALSE(reversed[0]->can_copy_from_peer(*both[0]));

  ::setenv(kDevicesEnvironmentVariable, "1", 1);
  auto from_env = open_devices_from_environment();
  ::unsetenv(kDevicesEnvironmentVariable);
  ASSERT_EQ(from_env.size(), 1U);
  EXPECT_EQ(from_env[0]->name(), all[1].unimem_name());
  EXPECT_THROW((void)open_devices("no-such-device"), DeviceError);

  const DeviceRegistry registry = make_opencl_devices("1,0");
  ASSERT_EQ(registry.size(), 2U);
  EXPECT_EQ(registry.index_of(all[1].unimem_name()), 0U);
  EXPECT_EQ(registry.at(1).name(), all[0].unimem_name());
  EXPECT_TRUE(registry.at(0).can_copy_from_peer(registry.at(1)) ==
              (all[0].platform == all[1].platform));
}

}  // namespace
}  // namespace unimem::opencl
#endif
