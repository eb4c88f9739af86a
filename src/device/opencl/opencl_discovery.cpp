#include "device/opencl/opencl_discovery.hpp"

#include <dlfcn.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <type_traits>

#include <unimem/errors.hpp>
#include "device/opencl/opencl_error.hpp"

namespace unimem::opencl {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::string environment(const char* variable) {
  const char* value = std::getenv(variable);
  return value ? std::string(value) : std::string();
}

template <typename Object, typename Info>
std::string info_string(Object object, std::type_identity_t<Info> param,
                        cl_int (*query)(Object, Info, size_t, void*, size_t*),
                        std::string_view call) {
  size_t size = 0;
  check(query(object, param, 0, nullptr, &size), call, "querying a string property");
  std::string value(size, '\0');
  check(query(object, param, size, value.data(), nullptr), call, "querying a string property");
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return std::string(trim(value));
}

template <typename T>
T device_value(cl_device_id device, cl_device_info param) {
  T value{};
  check(clGetDeviceInfo(device, param, sizeof(T), &value, nullptr), "clGetDeviceInfo",
        "querying a device property");
  return value;
}

std::string type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  if (type & CL_DEVICE_TYPE_CUSTOM) return "custom";
  return "other";
}

// The library named by the first line of an .icd file, or "" when it cannot be read.
std::string library_of_icd_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  return std::string(trim(line));
}

void add_icd_directory(const std::filesystem::path& dir, std::vector<std::string>& libraries) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".icd") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::string library = library_of_icd_file(file);
    if (!library.empty()) libraries.push_back(std::move(library));
  }
}

std::string device_list_text(std::span<const DeviceInfo> devices) {
  if (devices.empty()) return "no OpenCL device was found";
  std::string text = "the OpenCL devices are:";
  for (const DeviceInfo& d : devices) {
    text += "\n  " + std::to_string(d.index) + ": " + d.unimem_name() + " (" + d.type + ", " +
            d.platform_name + ")";
  }
  return text;
}

std::optional<std::size_t> parse_index(std::string_view text) {
  std::size_t value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string DeviceInfo::platform_label() const {
  const std::string lower = lowercase(platform_name);
  if (lower.find("portable computing language") != std::string::npos ||
      lower.find("pocl") != std::string::npos) {
    return "pocl";
  }
  std::string_view first = trim(lower);
  first = first.substr(0, first.find(' '));
  return first.empty() ? std::string("opencl") : std::string(first);
}

std::string DeviceInfo::unimem_name() const {
  return platform_label() + ":" + name + "#" + std::to_string(index);
}

namespace {

// The platforms of the ICD loader (clGetPlatformIDs).
std::vector<cl_platform_id> loader_platforms() {
  cl_uint platform_count = 0;
  const cl_int status = clGetPlatformIDs(0, nullptr, &platform_count);
  if (status == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || platform_count == 0) return {};
  check(status, "clGetPlatformIDs", "the ICD loader");
  std::vector<cl_platform_id> platforms(platform_count);
  check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs",
        "the ICD loader");
  return platforms;
}

// The platforms of vendor ICD libraries loaded directly, as the loader itself does (Khronos ICD
// spec: clGetExtensionFunctionAddress("clIcdGetPlatformIDsKHR")). Their handles carry their own
// dispatch tables, so every later call through the loader reaches the vendor. A library that
// exports kPlatformMarkerSymbol (unimem's own OpenCL platform) is skipped: unimem never
// enumerates itself. A library that cannot be loaded is skipped like the loader skips it.
std::vector<cl_platform_id> vendor_platforms(std::span<const std::string> libraries) {
  using GetAddress = void* (*)(const char*);
  using IcdGetPlatformIds = cl_int (*)(cl_uint, cl_platform_id*, cl_uint*);
  std::vector<cl_platform_id> platforms;
  for (const std::string& library : libraries) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    if (::dlsym(handle, kPlatformMarkerSymbol) != nullptr) continue;  // unimem's own platform
    auto get_address =
        reinterpret_cast<GetAddress>(::dlsym(handle, "clGetExtensionFunctionAddress"));
    if (get_address == nullptr) continue;
    auto get_platforms = reinterpret_cast<IcdGetPlatformIds>(get_address("clIcdGetPlatformIDsKHR"));
    if (get_platforms == nullptr) continue;
    cl_uint count = 0;
    if (get_platforms(0, nullptr, &count) != CL_SUCCESS || count == 0) continue;
    std::vector<cl_platform_id> found(count);
    if (get_platforms(count, found.data(), nullptr) != CL_SUCCESS) continue;
    platforms.insert(platforms.end(), found.begin(), found.end());
  }
  return platforms;
}

}  // namespace

std::vector<std::string> vendor_libraries_from_environment() {
  std::vector<std::string> libraries;
  const std::string value = environment(kVendorIcdsEnvironmentVariable);
  std::string_view names = value;
  while (!names.empty()) {
    const std::size_t colon = names.find(':');
    const std::string_view name = trim(names.substr(0, colon));
    if (!name.empty()) libraries.emplace_back(name);
    names = colon == std::string_view::npos ? std::string_view() : names.substr(colon + 1);
  }
  return libraries;
}

std::string other_vendor_libraries(const IcdSearch& search) {
  std::string out;
  for (const std::string& library : icd_libraries(search)) {
    if (std::filesystem::path(library).filename().string().starts_with("libunimem_opencl")) {
      continue;
    }
    out += (out.empty() ? "" : ":") + library;
  }
  return out;
}

void write_vendor_directory(const std::string& dir, const std::string& vendors,
                            const std::string& extra_library) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::size_t index = 0;
  std::string_view rest = vendors;
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const std::string_view library = rest.substr(0, colon);
    if (!library.empty()) {
      std::ofstream(fs::path(dir) / ("vendor" + std::to_string(index++) + ".icd"))
          << library << "\n";
    }
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  if (!extra_library.empty())
    std::ofstream(fs::path(dir) / "zz-extra.icd") << extra_library << "\n";
}

std::string use_private_vendor_directory(const std::string& prefix, const std::string& vendors,
                                         const std::string& extra_library) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (::mkdtemp(dir.data()) == nullptr) {
    throw std::runtime_error("cannot create a vendor directory " + dir + ": " +
                             std::strerror(errno));
  }
  write_vendor_directory(dir, vendors, extra_library);
  ::setenv("OCL_ICD_VENDORS", dir.c_str(), 1);
  ::setenv(kVendorIcdsEnvironmentVariable, vendors.c_str(), 1);
  // Removed at exit (the loader has read it by then); a function-local static so that the
  // removal runs once per directory, after main returns or exit() is called.
  static std::mutex mutex;
  static std::vector<std::string> made;
  const std::lock_guard lock(mutex);
  if (made.empty()) {
    std::atexit([] {
      const std::lock_guard lock_at_exit(mutex);
      for (const std::string& d : made) {
        std::error_code ec;
        fs::remove_all(d, ec);
      }
    });
  }
  made.push_back(dir);
  return dir;
}

std::vector<DeviceInfo> list_devices() {
  (void)pocl_default();  // must precede the first OpenCL call: POCL reads POCL_DEVICES once
  const std::vector<std::string> vendors = vendor_libraries_from_environment();
  const std::vector<cl_platform_id> platforms =
      vendors.empty() ? loader_platforms() : vendor_platforms(vendors);

  std::vector<DeviceInfo> devices;
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    cl_uint count = 0;
    const cl_int found = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    if (found == CL_DEVICE_NOT_FOUND || count == 0) continue;
    check(found, "clGetDeviceIDs", [&] { return "platform #" + std::to_string(p); });
    std::vector<cl_device_id> ids(count);
    check(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr),
          "clGetDeviceIDs", [&] { return "platform #" + std::to_string(p); });
    for (cl_device_id id : ids) {
      DeviceInfo info;
      info.index = devices.size();
      info.platform_index = p;
      info.platform = platforms[p];
      info.device = id;
      info.platform_name =
          info_string(platforms[p], CL_PLATFORM_NAME, clGetPlatformInfo, "clGetPlatformInfo");
      info.platform_vendor =
          info_string(platforms[p], CL_PLATFORM_VENDOR, clGetPlatformInfo, "clGetPlatformInfo");
      info.platform_version =
          info_string(platforms[p], CL_PLATFORM_VERSION, clGetPlatformInfo, "clGetPlatformInfo");
      info.name = info_string(id, CL_DEVICE_NAME, clGetDeviceInfo, "clGetDeviceInfo");
      info.vendor = info_string(id, CL_DEVICE_VENDOR, clGetDeviceInfo, "clGetDeviceInfo");
      info.version = info_string(id, CL_DEVICE_VERSION, clGetDeviceInfo, "clGetDeviceInfo");
      info.driver_version = info_string(id, CL_DRIVER_VERSION, clGetDeviceInfo, "clGetDeviceInfo");
      info.type = type_name(device_value<cl_device_type>(id, CL_DEVICE_TYPE));
      info.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
      info.global_mem_bytes = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
      info.max_alloc_bytes = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.base_addr_align_bytes =
          std::max<std::uint64_t>(1, device_value<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
      info.out_of_order_queue =
          (device_value<cl_command_queue_properties>(id, CL_DEVICE_QUEUE_PROPERTIES) &
           CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
      devices.push_back(std::move(info));
    }
  }
  return devices;
}

IcdSearch IcdSearch::from_environment() {
  IcdSearch search;
  search.vendor_icds = vendor_libraries_from_environment();
  search.ocl_icd_vendors = environment("OCL_ICD_VENDORS");
  search.opencl_vendor_path = environment("OPENCL_VENDOR_PATH");
  search.ocl_icd_filenames = environment("OCL_ICD_FILENAMES");
  return search;
}

std::vector<std::string> icd_libraries(const IcdSearch& search) {
  namespace fs = std::filesystem;
  if (!search.vendor_icds.empty()) return search.vendor_icds;
  std::vector<std::string> libraries;
  // The Khronos loader also loads every library of OCL_ICD_FILENAMES.
  std::string_view names = search.ocl_icd_filenames;
  while (!names.empty()) {
    const std::size_t colon = names.find(':');
    const std::string_view name = trim(names.substr(0, colon));
    if (!name.empty()) libraries.emplace_back(name);
    names = colon == std::string_view::npos ? std::string_view() : names.substr(colon + 1);
  }
  const fs::path vendor_dir = search.opencl_vendor_path.empty()
                                  ? fs::path(search.default_vendor_dir)
                                  : fs::path(search.opencl_vendor_path);
  const std::string& vendors = search.ocl_icd_vendors;
  std::error_code ec;
  if (vendors.empty()) {
    add_icd_directory(vendor_dir, libraries);
  } else if (fs::is_directory(vendors, ec)) {
    add_icd_directory(vendors, libraries);
  } else if (vendors.ends_with(".icd")) {
    // ocl-icd: a bare file name is first looked up in the vendor directory.
    std::string library;
    if (vendors.find('/') == std::string::npos) library = library_of_icd_file(vendor_dir / vendors);
    if (library.empty()) library = library_of_icd_file(vendors);
    if (!library.empty()) libraries.push_back(std::move(library));
  } else {
    libraries.push_back(vendors);  // the library itself
  }
  return libraries;
}

bool only_pocl(std::span<const std::string> libraries) {
  return !libraries.empty() &&
         std::all_of(libraries.begin(), libraries.end(), [](const std::string& library) {
           const std::string base = std::filesystem::path(library).filename().string();
           return base.starts_with("libpocl");
         });
}

PoclDefault decide_pocl_default(const IcdSearch& search,
                                std::optional<std::string> pocl_devices_env, unsigned devices) {
  PoclDefault result;
  result.icd_libraries = icd_libraries(search);
  if (pocl_devices_env) {
    result.pocl_devices = *pocl_devices_env;
    result.explanation = "POCL_DEVICES=\"" + *pocl_devices_env + "\" was set by the user; unimem " +
                         "leaves it unchanged.";
    return result;
  }
  if (!only_pocl(result.icd_libraries)) {
    result.explanation =
        result.icd_libraries.empty()
            ? std::string("no OpenCL implementation is registered; POCL_DEVICES is left unset.")
            : std::string(
                  "other OpenCL implementations than POCL are registered; POCL_DEVICES "
                  "is left unset.");
    return result;
  }
  result.applied = true;
  for (unsigned d = 0; d < devices; ++d) result.pocl_devices += d == 0 ? "pthread" : " pthread";
  const std::string count = devices == 2 ? std::string("two") : std::to_string(devices);
  result.explanation =
      "POCL is the only OpenCL platform and POCL_DEVICES was unset, so unimem set "
      "POCL_DEVICES=\"" +
      result.pocl_devices + "\" (" + count +
      " CPU devices) to make multi-device behaviour visible; set POCL_DEVICES yourself to "
      "override.";
  return result;
}

const PoclDefault& pocl_default() { return request_pocl_devices(2); }

const PoclDefault& request_pocl_devices(unsigned devices) {
  // The one piece of process-wide state of the driver: the environment itself is process-wide,
  // and POCL reads POCL_DEVICES once, when the ICD loader first initializes it. The first call's
  // device count decides.
  static const PoclDefault decision = [devices] {
    const char* current = std::getenv("POCL_DEVICES");
    PoclDefault d = decide_pocl_default(
        IcdSearch::from_environment(),
        current ? std::optional<std::string>(current) : std::optional<std::string>(), devices);
    if (d.applied) ::setenv("POCL_DEVICES", d.pocl_devices.c_str(), /*overwrite=*/0);
    return d;
  }();
  return decision;
}

std::vector<std::size_t> select_devices(std::span<const DeviceInfo> devices,
                                        std::string_view selection) {
  auto fail = [&](std::string_view item, std::string_view why) {
    return DeviceError("device selection \"" + std::string(selection) + "\": item \"" +
                       std::string(item) + "\" " + std::string(why) + "; " +
                       device_list_text(devices));
  };
  // The devices one item names, in index order.
  auto matches = [&](std::string_view item) {
    std::vector<std::size_t> found;
    if (item == "all" || item == "*") {
      for (const DeviceInfo& d : devices) found.push_back(d.index);
    } else if (const auto index = parse_index(item)) {
      if (*index >= devices.size()) throw fail(item, "is not a device index");
      found.push_back(*index);
    } else if (const std::size_t dash = item.find('-'); dash != std::string_view::npos &&
                                                        parse_index(item.substr(0, dash)) &&
                                                        parse_index(item.substr(dash + 1))) {
      const std::size_t first = *parse_index(item.substr(0, dash));
      const std::size_t last = *parse_index(item.substr(dash + 1));
      if (first > last || last >= devices.size()) throw fail(item, "is not a range of indices");
      for (std::size_t i = first; i <= last; ++i) found.push_back(i);
    } else if (item.starts_with("type=")) {
      const std::string type = lowercase(item.substr(5));
      for (const DeviceInfo& d : devices) {
        if (d.type == type) found.push_back(d.index);
      }
    } else {
      const std::string needle = lowercase(item);
      for (const DeviceInfo& d : devices) {
        if (lowercase(d.name).find(needle) != std::string::npos ||
            lowercase(d.platform_name).find(needle) != std::string::npos ||
            lowercase(d.unimem_name()).find(needle) != std::string::npos) {
          found.push_back(d.index);
        }
      }
    }
    return found;
  };

  std::vector<std::size_t> chosen;
  if (trim(selection).empty()) selection = "all";
  std::string_view rest = selection;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) throw fail(item, "is empty");
    const std::vector<std::size_t> found = matches(item);
    if (found.empty()) throw fail(item, "matches no device");
    for (std::size_t index : found) {
      if (std::find(chosen.begin(), chosen.end(), index) == chosen.end()) chosen.push_back(index);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return chosen;
}

}  // namespace unimem::opencl
