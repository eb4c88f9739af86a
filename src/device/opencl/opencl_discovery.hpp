#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/opencl/opencl_api.hpp"

namespace unimem::opencl {

/// One OpenCL device as the ICD loader reports it. `index` is its position in list_devices(),
/// which is what UNIMEM_DEVICES indices refer to.
struct DeviceInfo {
  std::size_t index = 0;
  std::size_t platform_index = 0;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name;
  std::string platform_vendor;
  std::string platform_version;
  std::string name;
  std::string vendor;
  std::string type;  ///< "cpu", "gpu", "accelerator", "custom" or "other"
  std::string version;
  std::string driver_version;
  std::uint32_t compute_units = 0;
  std::uint64_t global_mem_bytes = 0;
  std::uint64_t max_alloc_bytes = 0;
  std::uint64_t base_addr_align_bytes = 1;  ///< CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes
  bool out_of_order_queue = false;          ///< the device supports out-of-order host queues

  /// Short platform label: "pocl" for POCL, otherwise the platform name's first word, lowercased.
  [[nodiscard]] std::string platform_label() const;
  /// The unimem device name, unique in the process: "<platform label>:<device name>#<index>".
  [[nodiscard]] std::string unimem_name() const;
};

/// Colon-separated vendor ICD libraries that list_devices() loads itself instead of asking the
/// ICD loader. The unimem OpenCL platform (src/platform/) sets it: a process whose loader sees
/// only unimem's platform still finds the real vendors underneath, and never unimem itself.
inline constexpr const char* kVendorIcdsEnvironmentVariable = "UNIMEM_VENDOR_ICDS";
/// The symbol unimem's OpenCL platform library exports so that vendor loading recognizes it.
inline constexpr const char* kPlatformMarkerSymbol = "unimem_opencl_platform_marker";

/// The libraries of UNIMEM_VENDOR_ICDS, in order (empty when unset).
[[nodiscard]] std::vector<std::string> vendor_libraries_from_environment();

/// Every device of every platform, in platform order then device order: the platforms of the ICD
/// loader, or those of the UNIMEM_VENDOR_ICDS libraries when it is set. Applies the POCL default
/// (see pocl_default()) before its first OpenCL call. No platform at all gives an empty list.
/// Throws DeviceError when the loader reports an error other than "no platform".
[[nodiscard]] std::vector<DeviceInfo> list_devices();

/// Where the ICD loader looks for OpenCL implementations (ocl-icd's rules, libOpenCL(7)), and the
/// Khronos loader's OCL_ICD_FILENAMES. Filled from the environment by IcdSearch::from_environment.
struct IcdSearch {
  std::string ocl_icd_vendors;     ///< OCL_ICD_VENDORS: a directory, an .icd file or a library
  std::string opencl_vendor_path;  ///< OPENCL_VENDOR_PATH: replaces /etc/OpenCL/vendors
  std::string ocl_icd_filenames;   ///< OCL_ICD_FILENAMES: colon-separated libraries (Khronos)
  std::string default_vendor_dir = "/etc/OpenCL/vendors";
  /// UNIMEM_VENDOR_ICDS: when set, exactly these libraries (see list_devices).
  std::vector<std::string> vendor_icds;
  static IcdSearch from_environment();
};

/// The ICD libraries the loader will try, read from .icd files without loading any of them; an
/// empty list when nothing is registered (or the vendor directory cannot be read).
[[nodiscard]] std::vector<std::string> icd_libraries(const IcdSearch& search);

/// The vendor ICD libraries the loader would load under `search`, without unimem's own platform
/// library (libunimem_opencl*), colon-separated as UNIMEM_VENDOR_ICDS takes them.
[[nodiscard]] std::string other_vendor_libraries(const IcdSearch& search);

/// Makes `dir` a vendor directory (for OCL_ICD_VENDORS) holding an .icd file for each library of
/// `vendors` (colon-separated) and, last in the loader's order, one for `extra_library`.
void write_vendor_directory(const std::string& dir, const std::string& vendors,
                            const std::string& extra_library);

/// A private vendor directory for this process, made with a unique name under the temporary
/// directory (mkdtemp of `prefix` + "XXXXXX"), written by write_vendor_directory, and pointed to
/// by OCL_ICD_VENDORS (with UNIMEM_VENDOR_ICDS = `vendors`, so unimem's platform runs on them).
/// Call before the process's first OpenCL call: the loader reads its vendors once. The directory
/// is removed when the process exits normally. Returns its path. For tests and benchmarks that
/// load this build's platform library next to the system's vendors.
std::string use_private_vendor_directory(const std::string& prefix, const std::string& vendors,
                                         const std::string& extra_library);

/// Whether every library is POCL's (libpocl*.so*) and there is at least one.
[[nodiscard]] bool only_pocl(std::span<const std::string> libraries);

/// What unimem did about POCL_DEVICES before the first OpenCL call of the process.
struct PoclDefault {
  bool applied = false;      ///< unimem set POCL_DEVICES="pthread pthread"
  std::string pocl_devices;  ///< POCL_DEVICES as in effect afterwards ("" when unset)
  std::vector<std::string> icd_libraries;
  std::string explanation;  ///< one sentence, printed by `unimem devices`
};

/// The value unimem gives POCL_DEVICES when POCL is the only platform and the user set nothing.
inline constexpr std::string_view kPoclDefaultDevices = "pthread pthread";

/// Decides, without side effects, whether to set POCL_DEVICES (pocl_devices_env is its current
/// value, or nullopt when unset), and to how many CPU (pthread) devices.
[[nodiscard]] PoclDefault decide_pocl_default(const IcdSearch& search,
                                              std::optional<std::string> pocl_devices_env,
                                              unsigned devices = 2);

/// Runs decide_pocl_default on the process environment once and applies it (setenv without
/// overwrite); every later call returns the first result. list_devices() calls it first.
const PoclDefault& pocl_default();

/// pocl_default() asking POCL for `devices` CPU devices instead of two (tests and benchmarks that
/// need more). Only the first of pocl_default() / request_pocl_devices() decides, so call it
/// before any OpenCL use; later calls return that first decision.
const PoclDefault& request_pocl_devices(unsigned devices);

/// UNIMEM_DEVICES syntax: a comma-separated list of items, each one of
///   all | *            every device
///   N                  the device with index N (as printed by `unimem devices`)
///   N-M                indices N to M inclusive
///   type=cpu|gpu|accelerator|custom
///   anything else      a case-insensitive substring of the device name, platform name or unimem
///                      name ("pocl:pthread-...#1")
/// An empty selection means all devices. Every item must match at least one device. The result
/// keeps the order of the items, without duplicates. Throws DeviceError naming the bad item and
/// listing the devices that exist.
[[nodiscard]] std::vector<std::size_t> select_devices(std::span<const DeviceInfo> devices,
                                                      std::string_view selection);

/// The environment variable consulted by open_devices_from_environment().
inline constexpr const char* kDevicesEnvironmentVariable = "UNIMEM_DEVICES";

}  // namespace unimem::opencl
