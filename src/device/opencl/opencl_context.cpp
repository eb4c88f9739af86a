#include "device/opencl/opencl_context.hpp"

#include <cstdlib>
#include <map>

#include "common/check.hpp"
#include "device/opencl/opencl_device.hpp"
#include "device/opencl/opencl_error.hpp"

namespace unimem::opencl {

Context::Context(std::vector<DeviceInfo> devices) : devices_(std::move(devices)) {
  UNIMEM_REQUIRE(!devices_.empty(), "an OpenCL context needs at least one device");
  std::vector<cl_device_id> ids;
  for (const DeviceInfo& d : devices_) {
    UNIMEM_REQUIRE(d.platform == devices_.front().platform,
                   "all devices of an OpenCL context must belong to one platform");
    ids.push_back(d.device);
  }
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform()), 0};
  // Platforms loaded from vendor libraries directly (UNIMEM_VENDOR_ICDS) are unknown to the ICD
  // loader, which refuses them in CL_CONTEXT_PLATFORM; without properties it dispatches through
  // the devices, which all belong to this platform.
  const bool loader_knows_platform = vendor_libraries_from_environment().empty();
  cl_int status = CL_SUCCESS;
  context_ =
      clCreateContext(loader_knows_platform ? properties : nullptr,
                      static_cast<cl_uint>(ids.size()), ids.data(), nullptr, nullptr, &status);
  check(status, "clCreateContext", [this] { return description(); });
}

Context::~Context() {
  if (context_) clReleaseContext(context_);
}

std::string Context::description() const {
  std::string text = "context of platform \"" + platform_name() + "\" over";
  for (const DeviceInfo& d : devices_) text += " " + d.unimem_name();
  return text;
}

std::vector<std::unique_ptr<OpenCLDevice>> open_devices(std::string_view selection,
                                                        QueueOrder order) {
  const std::vector<DeviceInfo> all = list_devices();
  if (all.empty() && selection.find_first_not_of(" \t") == std::string_view::npos) return {};
  const std::vector<std::size_t> chosen = select_devices(all, selection);

  // One context per platform, over that platform's chosen devices.
  std::map<std::size_t, std::vector<DeviceInfo>> by_platform;
  for (std::size_t index : chosen) by_platform[all[index].platform_index].push_back(all[index]);
  std::map<std::size_t, std::shared_ptr<Context>> contexts;
  for (auto& [platform, devices] : by_platform) {
    contexts[platform] = std::make_shared<Context>(devices);
  }
  std::vector<std::unique_ptr<OpenCLDevice>> opened;
  for (std::size_t index : chosen) {
    opened.push_back(
        std::make_unique<OpenCLDevice>(contexts.at(all[index].platform_index), all[index], order));
  }
  return opened;
}

std::vector<std::unique_ptr<OpenCLDevice>> open_devices_from_environment(QueueOrder order) {
  const char* selection = std::getenv(kDevicesEnvironmentVariable);
  return open_devices(selection ? std::string_view(selection) : std::string_view(), order);
}

namespace {
DeviceRegistry registry_of(std::vector<std::unique_ptr<OpenCLDevice>> devices) {
  DeviceRegistry registry;
  for (auto& device : devices) registry.add(std::shared_ptr<Device>(std::move(device)));
  return registry;
}
}  // namespace

DeviceRegistry make_opencl_devices(std::string_view selection, QueueOrder order) {
  return registry_of(open_devices(selection, order));
}

DeviceRegistry make_opencl_devices_from_environment(QueueOrder order) {
  return registry_of(open_devices_from_environment(order));
}

}  // namespace unimem::opencl
