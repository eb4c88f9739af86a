// `unimem devices`: the OpenCL devices this machine offers, which of them UNIMEM_DEVICES selects,
// and what unimem did about POCL_DEVICES.
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"

#if UNIMEM_HAVE_OPENCL
#include <algorithm>
#include <iomanip>
#include <optional>
#include <utility>
#include <vector>

#include "device/opencl/opencl_discovery.hpp"
#include "device/sim/sim_model.hpp"
#include "device/sim/sim_selection.hpp"
#endif

namespace unimem::tools {

namespace {

/// Indented for reading; device and platform names are not guaranteed UTF-8, so invalid bytes
/// become U+FFFD instead of failing the command.
std::string dump_json(const nlohmann::ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

#if UNIMEM_HAVE_OPENCL
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
  // sim:PRESET:COUNT[:UNDERLYING]: simulated devices over the OpenCL devices UNDERLYING selects.
  const std::optional<sim::SimSelection> simulated = sim::parse_sim_selection(selection);
  const std::string opencl_selection = simulated ? simulated->underlying : selection;
  std::vector<std::size_t> selected;
  if (!devices.empty() || !opencl_selection.empty()) {
    selected = opencl::select_devices(devices, opencl_selection);
  }
  // Simulated device i runs on selected device i mod the number selected (make_sim_devices).
  std::vector<std::pair<std::string, std::string>> simulated_devices;
  if (simulated && !selected.empty()) {
    for (std::size_t i = 0; i < simulated->count; ++i) {
      simulated_devices.emplace_back("sim:" + simulated->preset + "#" + std::to_string(i),
                                     devices[selected[i % selected.size()]].unimem_name());
    }
  }
  auto is_selected = [&](std::size_t i) {
    return std::find(selected.begin(), selected.end(), i) != selected.end();
  };

  if (json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const opencl::DeviceInfo& d = devices[i];
      nlohmann::ordered_json device;
      device["index"] = d.index;
      device["name"] = d.unimem_name();
      device["device_name"] = d.name;
      device["platform"] = d.platform_name;
      device["platform_version"] = d.platform_version;
      device["vendor"] = d.vendor;
      device["type"] = d.type;
      device["compute_units"] = d.compute_units;
      device["global_mem_bytes"] = d.global_mem_bytes;
      device["max_alloc_bytes"] = d.max_alloc_bytes;
      device["version"] = d.version;
      device["driver_version"] = d.driver_version;
      device["out_of_order_queue"] = d.out_of_order_queue;
      device["selected"] = is_selected(i);
      list.push_back(std::move(device));
    }
    nlohmann::ordered_json out;
    out["devices"] = std::move(list);
    out["selection"]["source"] = source;
    out["selection"]["text"] = selection;
    out["selection"]["indices"] = selected;
    if (simulated) {
      nlohmann::ordered_json sim_json;
      sim_json["preset"] = simulated->preset;
      sim_json["description"] = sim::find_preset(simulated->preset).description;
      nlohmann::ordered_json runs = nlohmann::ordered_json::array();
      for (const auto& [name, on] : simulated_devices)
        runs.push_back({{"name", name}, {"runs_on", on}});
      sim_json["devices"] = std::move(runs);
      out["simulated"] = std::move(sim_json);
    }
    out["pocl_default"]["applied"] = pocl.applied;
    out["pocl_default"]["pocl_devices"] = pocl.pocl_devices;
    out["pocl_default"]["icd_libraries"] = pocl.icd_libraries;
    out["pocl_default"]["explanation"] = pocl.explanation;
    std::cout << dump_json(out) << "\n";
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
  if (simulated) {
    std::cout << "Simulated devices: " << simulated->count << " x " << simulated->preset << " ("
              << sim::find_preset(simulated->preset).description << ")\n";
    for (const auto& [name, on] : simulated_devices) {
      std::cout << "   " << name << " runs on " << on << "\n";
    }
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
      nlohmann::ordered_json out;
      out["devices"] = nlohmann::ordered_json::array();
      out["opencl"] = false;
      std::cout << dump_json(out) << "\n";
    } else {
      std::cout << "This build of unimem has no OpenCL driver (configured without OpenCL).\n";
    }
#endif
  });
}

}  // namespace unimem::tools
