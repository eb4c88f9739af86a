// `unimem devices`: the OpenCL devices this machine offers, which of them UNIMEM_DEVICES selects,
// and what unimem did about POCL_DEVICES.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "commands.hpp"

#if UNIMEM_HAVE_OPENCL
#include <algorithm>
#include <iomanip>

#include "device/opencl/opencl_discovery.hpp"
#endif

namespace unimem::tools {

namespace {

#if UNIMEM_HAVE_OPENCL
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string gib(std::uint64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1ULL << 30) << " GiB";
  return out.str();
}

void print_devices(bool json, const std::string& select_option, bool select_given) {
  const opencl::PoclDefault& pocl = opencl::pocl_default();
  const std::vector<opencl::DeviceInfo> devices = opencl::list_devices();
  const char* env = std::getenv(opencl::kDevicesEnvironmentVariable);
  const std::string selection = select_given ? select_option : (env ? std::string(env) : "");
  const std::string source = select_given ? "--select" : (env ? "UNIMEM_DEVICES" : "");
  std::vector<std::size_t> selected;
  if (!devices.empty() || !selection.empty()) selected = opencl::select_devices(devices, selection);
  auto is_selected = [&](std::size_t i) {
    return std::find(selected.begin(), selected.end(), i) != selected.end();
  };

  if (json) {
    std::ostringstream out;
    out << "{\n  \"devices\": [";
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const opencl::DeviceInfo& d = devices[i];
      out << (i ? ",\n" : "\n") << "    {\"index\": " << d.index
          << ", \"name\": " << json_string(d.unimem_name())
          << ", \"device_name\": " << json_string(d.name)
          << ", \"platform\": " << json_string(d.platform_name)
          << ", \"platform_version\": " << json_string(d.platform_version)
          << ", \"vendor\": " << json_string(d.vendor) << ", \"type\": " << json_string(d.type)
          << ", \"compute_units\": " << d.compute_units
          << ", \"global_mem_bytes\": " << d.global_mem_bytes
          << ", \"max_alloc_bytes\": " << d.max_alloc_bytes
          << ", \"version\": " << json_string(d.version)
          << ", \"driver_version\": " << json_string(d.driver_version)
          << ", \"out_of_order_queue\": " << (d.out_of_order_queue ? "true" : "false")
          << ", \"selected\": " << (is_selected(i) ? "true" : "false") << "}";
    }
    out << (devices.empty() ? "],\n" : "\n  ],\n");
    out << "  \"selection\": {\"source\": " << json_string(source)
        << ", \"text\": " << json_string(selection) << ", \"indices\": [";
    for (std::size_t i = 0; i < selected.size(); ++i) out << (i ? ", " : "") << selected[i];
    out << "]},\n  \"pocl_default\": {\"applied\": " << (pocl.applied ? "true" : "false")
        << ", \"pocl_devices\": " << json_string(pocl.pocl_devices) << ", \"icd_libraries\": [";
    for (std::size_t i = 0; i < pocl.icd_libraries.size(); ++i) {
      out << (i ? ", " : "") << json_string(pocl.icd_libraries[i]);
    }
    out << "], \"explanation\": " << json_string(pocl.explanation) << "}\n}\n";
    std::cout << out.str();
    return;
  }

  std::cout << "OpenCL devices: " << devices.size() << " found\n";
  for (const opencl::DeviceInfo& d : devices) {
    std::cout << (is_selected(d.index) ? " * " : "   ") << d.index << "  " << d.unimem_name()
              << "\n       platform " << d.platform_name << " (" << d.platform_version << ")"
              << "\n       " << d.type << ", " << d.compute_units << " compute units, "
              << gib(d.global_mem_bytes) << " global memory, " << gib(d.max_alloc_bytes)
              << " largest allocation, " << (d.out_of_order_queue ? "out-of-order" : "in-order")
              << " queue\n       " << d.version << ", driver " << d.driver_version << "\n";
  }
  std::cout << "\nSelection (*): ";
  if (source.empty()) {
    std::cout << "all devices (set UNIMEM_DEVICES to choose, e.g. UNIMEM_DEVICES=0 or "
                 "UNIMEM_DEVICES=type=gpu)\n";
  } else {
    std::cout << source << "=\"" << selection << "\"\n";
  }
  std::cout << "POCL_DEVICES: " << pocl.explanation << "\n";
  std::cout << "ICD libraries registered:";
  for (const std::string& lib : pocl.icd_libraries) std::cout << " " << lib;
  std::cout << (pocl.icd_libraries.empty() ? " none\n" : "\n");
}
#endif

}  // namespace

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "devices",
      "List the OpenCL devices unimem finds and which ones UNIMEM_DEVICES selects.\n"
      "UNIMEM_DEVICES: comma-separated items, each an index (0), a range (0-2), all, "
      "type=cpu|gpu|accelerator, or a case-insensitive substring of the device or platform name.\n"
      "When POCL is the only OpenCL platform and POCL_DEVICES is unset, unimem sets "
      "POCL_DEVICES=\"pthread pthread\" (two CPU devices).");
  auto json = std::make_shared<bool>(false);
  auto select = std::make_shared<std::string>();
  cmd->add_flag("--json", *json, "Print one JSON object");
  auto* select_option =
      cmd->add_option("--select", *select, "Preview a selection (same syntax as UNIMEM_DEVICES)");
  cmd->callback([json, select, select_option] {
#if UNIMEM_HAVE_OPENCL
    print_devices(*json, *select, select_option->count() > 0);
#else
    (void)select_option;
    if (*json) {
      std::cout << "{\"devices\": [], \"opencl\": false}\n";
    } else {
      std::cout << "This build of unimem has no OpenCL driver (configured without OpenCL).\n";
    }
#endif
  });
}

}  // namespace unimem::tools
