// `unimem scale WORKLOAD|all`: speedup over one simulated device for 1..16 simulated devices
// (Matz et al., seed 002, Fig. 6) and the update strategies compared (DSOM, seed 000, Figs. 12-13:
// bytes and time normalized to batch / to one device), on the `sim` driver (src/device/sim/):
// kernels and copies run for real on the OpenCL devices (results are verified against each
// workload's CPU reference), times come from the simulated clock.
//
// Problem sizes: each workload runs for real at a moderate size and is modelled at a size s
// times larger in every array dimension (the modelled size is what the JSON reports). Kernel
// work comes from per-kernel cost formulas at the modelled size; the bytes of each real copy are
// scaled to the modelled geometry: whole-row (or whole-plane) blocks by s per dimension, halo
// copies of one row or plane only along the row (docs/SIMULATION.md, "Problem sizes").

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "scale_study.hpp"

#if UNIMEM_HAVE_EXAMPLES
#include <nlohmann/json.hpp>

#include "api/runtime_core.hpp"
#include "common/check.hpp"
#include "device/opencl/opencl_context.hpp"
#include "device/opencl/opencl_discovery.hpp"
#include "device/sim/sim_device.hpp"
#include "device/sim/sim_model.hpp"
#include "examples/program_version.hpp"
#include "examples/workload.hpp"
#endif

namespace unimem::tools {

#if UNIMEM_HAVE_EXAMPLES
namespace {

using examples::Arrays;
using examples::Problem;

// How a workload's real run stands for the modelled problem.
struct ScaleSetup {
  std::string workload;
  Problem real;
  double s = 1;               // modelled extent / real extent, in every array dimension
  unsigned array_dims = 1;    // 1: bodies/options, 2: grids and matrices, 3: heat3d
  bool halos = false;         // a copy of at most one row (plane) is a halo (stencils)
  double flops_per_item = 0;  // per modelled work-item, beyond the inner loop
  double bytes_per_item = 0;
  double loop_flops = 0;  // per modelled work-item and iteration of an n-long loop
  double loop_bytes = 0;
  std::uint32_t loop_arg = 0;  // the scalar argument holding n (when loop_flops > 0)
};

// Per-work-item costs: FLOP from the kernels' arithmetic (examples/*/*.cl), bytes as a GPU reads
// them (neighbours and tiles served from cache / local memory: each array element once).
std::vector<ScaleSetup> setups() {
  std::vector<ScaleSetup> all;
  // nbody: 20 FLOP per interaction (nbody.cl), bodies tiled 256 at a time through local memory.
  // Real 2,048 bodies, modelled 131,072 (Matz et al. Table 1, medium).
  all.push_back({"nbody", {2048, 16}, 64, 1, false, 20, 64, 20, 16.0 / 256, 3});
  // hotspot: ~15 FLOP, temp and power read once, temp written. Real 512^2, modelled 16,384^2
  // (Table 1, medium).
  all.push_back({"hotspot", {512, 100}, 32, 2, true, 15, 12, 0, 0, 0});
  // matmul: a multiply and an add per k, 16x16 tiles. Real 512, modelled 16,384 (Table 1,
  // medium).
  all.push_back({"matmul", {512, 1}, 32, 2, false, 0, 4, 2, 8.0 / 16, 3});
  // The others at GPU sizes: 8,192^2 grids, a 512^3 grid, 16.8 M options.
  all.push_back({"stencil2d", {512, 100}, 16, 2, true, 9, 8, 0, 0, 0});
  all.push_back({"fdtd2d", {512, 50}, 16, 2, true, 5, 12, 0, 0, 0});
  all.push_back({"heat3d", {64, 30}, 8, 3, true, 8, 8, 0, 0, 0});
  all.push_back({"blackscholes", {std::uint64_t{1} << 20, 1}, 16, 1, false, 150, 20, 0, 0, 0});
  // floyd-warshall launches n kernels; that count cannot be modelled larger: run as is.
  all.push_back({"floyd-warshall", {1024, 1}, 1, 2, false, 2, 12, 0, 0, 0});
  return all;
}

const ScaleSetup& find_setup(const std::string& name) {
  static const std::vector<ScaleSetup> all = setups();
  for (const ScaleSetup& s : all) {
    if (s.workload == name) return s;
  }
  throw PreconditionError("scale: no scale setup for workload '" + name + "'");
}

std::uint64_t modelled_size(const ScaleSetup& setup) {
  return static_cast<std::uint64_t>(std::llround(static_cast<double>(setup.real.size) * setup.s));
}

// The workload model of one setup on a simulated machine.
void install_model(sim::SimSystem& system, const ScaleSetup& setup) {
  system.clear_workload_model();
  const double s = setup.s;
  const double item_scale = std::pow(s, setup.array_dims);
  system.set_default_kernel_cost(
      [setup, s, item_scale](const NDRange& range, std::span<const KernelArg> args) {
        const double items = static_cast<double>(range.global[0]) *
                             static_cast<double>(range.global[1]) *
                             static_cast<double>(range.global[2]) * item_scale;
        sim::KernelWork w{items * setup.flops_per_item, items * setup.bytes_per_item};
        if (setup.loop_flops > 0 && setup.loop_arg < args.size() &&
            args[setup.loop_arg].scalar_bytes.size() == sizeof(std::int32_t)) {
          std::int32_t n = 0;
          std::memcpy(&n, args[setup.loop_arg].scalar_bytes.data(), sizeof n);
          const double loop = static_cast<double>(n) * s;
          w.flops += items * loop * setup.loop_flops;
          w.bytes += items * loop * setup.loop_bytes;
        }
        return w;
      });
  const double block_scale = item_scale;
  const double halo_scale = std::pow(s, setup.array_dims - 1);
  // Bytes of one real row (2-D) or plane (3-D) of floats; 0 when the workload has no halos.
  const std::uint64_t row = !setup.halos ? 0
                                         : sizeof(float) * setup.real.size *
                                               (setup.array_dims == 3 ? setup.real.size : 1);
  system.set_copy_bytes_model([=](std::uint64_t bytes) {
    // A copy of at most one row (plane) is a halo: it grows only along the row (plane).
    const bool halo = row != 0 && bytes <= row;
    return static_cast<double>(bytes) * (halo ? halo_scale : block_scale);
  });
}

std::vector<unsigned> parse_device_counts(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    const std::size_t dots = item.find("..");
    try {
      if (dots == std::string::npos) {
        out.push_back(static_cast<unsigned>(std::stoul(item)));
      } else {
        const unsigned a = static_cast<unsigned>(std::stoul(item.substr(0, dots)));
        const unsigned b = static_cast<unsigned>(std::stoul(item.substr(dots + 2)));
        for (unsigned k = a; k <= b; ++k) out.push_back(k);
      }
    } catch (const std::logic_error&) {
      std::string message = "--devices '";
      message += text;
      message += "': expected counts like 1..16 or 1,2,4,8 (bad item '";
      message += item;
      message += "')";
      throw PreconditionError(message);
    }
  }
  for (unsigned k : out) {
    if (k < 1 || k > 64) {
      throw PreconditionError("--devices '" + text + "': every count must be in 1..64");
    }
  }
  if (out.empty()) throw PreconditionError("--devices '" + text + "': no device count");
  return out;
}

struct ScaleOptions {
  std::string workload = "all";
  std::string devices = "1..16";
  std::string preset = "k80";
  std::string strategy = "adaptive";
  std::string strategies = "batch,balance,lazy,adaptive";
  unsigned strategy_devices = 8;
  std::string csv;
  std::string plot;
  std::string from;
  std::string underlying;
  std::uint64_t size = 0;
  std::uint32_t steps = 0;
  bool json = false;
};

UpdateStrategy parse_strategy(const std::string& s) {
  for (UpdateStrategy u : {UpdateStrategy::batch, UpdateStrategy::balance, UpdateStrategy::lazy,
                           UpdateStrategy::adaptive}) {
    if (to_string(u) == s) return u;
  }
  throw PreconditionError("unknown strategy '" + s + "' (batch, balance, lazy, adaptive)");
}

class Study {
 public:
  Study(const sim::Preset& preset, DeviceRegistry real) : preset_(preset), real_(std::move(real)) {}

  ScalePoint run(const examples::Workload& workload, const ScaleSetup& setup,
                 const Problem& problem, const Arrays& inputs, const Arrays& reference,
                 unsigned devices, UpdateStrategy strategy) {
    DeviceRegistry registry = sim::make_sim_devices(preset_.device, preset_.name, devices, real_);
    const std::shared_ptr<sim::SimSystem> system = sim::system_of(registry);
    Runtime runtime(std::move(registry), RuntimeOptions{strategy});
    const std::unique_ptr<Program> program = examples::build_program(workload, runtime);
    install_model(*system, setup);
    system->reset_counters();
    const double start = system->clock().now();
    const examples::ProgramRunResult r =
        examples::run_program_version(workload, runtime, *program, problem, inputs, {});
    runtime.finish();
    const double seconds = system->clock().now() - start;
    ScalePoint p;
    p.workload = workload.name();
    p.strategy = to_string(strategy);
    p.devices = devices;
    p.seconds = seconds;
    p.verified = examples::compare(r.outputs, reference, workload.tolerance()).ok;
    for (const sim::DeviceCounters& c : system->counters()) {
      p.bytes_h2d += c.host_to_device_bytes;
      p.bytes_d2h += c.device_to_host_bytes;
      p.bytes_d2d += c.peer_in_bytes;
      p.bytes_in_per_device.push_back(c.bytes_in());
      p.bytes_in_per_device_max = std::max(p.bytes_in_per_device_max, c.bytes_in());
      p.kernel_seconds_per_device_max = std::max(p.kernel_seconds_per_device_max, c.kernel_seconds);
      p.copy_seconds_per_device_max = std::max(p.copy_seconds_per_device_max, c.copy_seconds);
    }
    return p;
  }

 private:
  const sim::Preset& preset_;
  DeviceRegistry real_;
};

nlohmann::ordered_json to_json(const ScalePoint& p) {
  nlohmann::ordered_json j;
  j["workload"] = p.workload;
  j["strategy"] = p.strategy;
  j["devices"] = p.devices;
  j["seconds"] = p.seconds;
  j["speedup"] = p.speedup;
  j["verified"] = p.verified;
  j["bytes_h2d"] = p.bytes_h2d;
  j["bytes_d2h"] = p.bytes_d2h;
  j["bytes_d2d"] = p.bytes_d2d;
  j["bytes_in_per_device_max"] = p.bytes_in_per_device_max;
  j["kernel_seconds_per_device_max"] = p.kernel_seconds_per_device_max;
  j["copy_seconds_per_device_max"] = p.copy_seconds_per_device_max;
  j["bytes_in_per_device"] = p.bytes_in_per_device;
  return j;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

ScalePoint point_of(const nlohmann::json& j) {
  ScalePoint p;
  p.workload = j.at("workload").get<std::string>();
  p.strategy = j.at("strategy").get<std::string>();
  p.devices = j.at("devices").get<unsigned>();
  p.seconds = j.at("seconds").get<double>();
  p.speedup = j.at("speedup").get<double>();
  p.verified = j.at("verified").get<bool>();
  p.bytes_h2d = j.at("bytes_h2d").get<double>();
  p.bytes_d2h = j.at("bytes_d2h").get<double>();
  p.bytes_d2d = j.at("bytes_d2d").get<double>();
  return p;
}

// --from FILE --plot OUT: draws the plot of an earlier run's JSON without running anything.
int replot(const ScaleOptions& o) {
  if (o.plot.empty()) throw PreconditionError("--from needs --plot (it only draws)");
  std::ifstream in(o.from);
  if (!in) throw PreconditionError("--from: cannot read '" + o.from + "'");
  try {
    nlohmann::json j;
    in >> j;
    std::vector<ScalePoint> scaling;
    std::vector<ScalePoint> strategies;
    for (const auto& p : j.at("scaling")) scaling.push_back(point_of(p));
    for (const auto& p : j.at("strategies")) strategies.push_back(point_of(p));
    std::string error;
    if (!draw_scale_plot(o.plot,
                         "unimem on simulated " + j.at("preset").get<std::string>() + " devices",
                         scaling, strategies, error)) {
      throw PreconditionError("--plot: " + error);
    }
  } catch (const nlohmann::json::exception& e) {
    std::string message = "--from '";
    message += o.from;
    message += "': not the JSON of unimem scale (";
    message += e.what();
    message += ")";
    throw PreconditionError(message);
  }
  std::cerr << "plot written to " << o.plot << "\n";
  return 0;
}

int run_scale(const ScaleOptions& o) {
  if (!o.from.empty()) return replot(o);
  const sim::Preset& preset = sim::find_preset(o.preset);
  const std::vector<unsigned> counts = parse_device_counts(o.devices);
  const UpdateStrategy main_strategy = parse_strategy(o.strategy);
  std::vector<UpdateStrategy> compared;
  if (o.strategies != "none") {
    for (const std::string& s : split_list(o.strategies)) compared.push_back(parse_strategy(s));
  }
  std::vector<std::unique_ptr<examples::Workload>> workloads;
  if (o.workload == "all") {
    workloads = examples::all_workloads();
  } else {
    for (const std::string& name : split_list(o.workload)) {
      workloads.push_back(examples::find_workload(name));
    }
  }
  DeviceRegistry real = opencl::make_opencl_devices(o.underlying);
  if (real.empty()) throw PreconditionError("scale: no OpenCL device to run the simulation on");
  Study study(preset, std::move(real));

  std::vector<ScalePoint> scaling;
  std::vector<ScalePoint> strategies;
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const auto& workload : workloads) {
    const ScaleSetup& setup = find_setup(workload->name());
    Problem problem = setup.real;
    if (o.size != 0) problem.size = o.size;
    if (o.steps != 0) problem.steps = o.steps;
    ScaleSetup used = setup;
    used.real = problem;
    const unsigned most = std::max(*std::max_element(counts.begin(), counts.end()),
                                   compared.empty() ? 1U : o.strategy_devices);
    workload->validate(problem, most);
    const Arrays inputs = workload->make_inputs(problem, 1);
    const Arrays reference = workload->reference(problem, inputs);
    problems.push_back({{"workload", workload->name()},
                        {"real_size", problem.size},
                        {"modelled_size", modelled_size(used)},
                        {"steps", problem.steps},
                        {"scale", used.s}});
    double one = 0;
    std::vector<unsigned> with_one = counts;
    if (std::find(counts.begin(), counts.end(), 1U) == counts.end()) {
      with_one.insert(with_one.begin(), 1U);
    }
    for (unsigned k : with_one) {
      ScalePoint p = study.run(*workload, used, problem, inputs, reference, k, main_strategy);
      if (k == 1) one = p.seconds;
      p.speedup = one / p.seconds;
      if (!o.json) {
        std::cerr << workload->name() << " on " << k << " x " << preset.name << ": " << p.seconds
                  << " s simulated, speedup " << p.speedup
                  << (p.verified ? "" : " (RESULT MISMATCH)") << "\n";
      }
      if (std::find(counts.begin(), counts.end(), k) != counts.end()) scaling.push_back(p);
    }
    for (UpdateStrategy s : compared) {
      ScalePoint p = study.run(*workload, used, problem, inputs, reference, o.strategy_devices, s);
      p.speedup = one / p.seconds;  // over one device with the main strategy, as DSOM Fig. 13
      if (!o.json) {
        std::cerr << workload->name() << " strategy " << to_string(s) << " on "
                  << o.strategy_devices << ": " << p.seconds << " s, speedup " << p.speedup
                  << ", bytes " << p.bytes_h2d + p.bytes_d2h + p.bytes_d2d << "\n";
      }
      strategies.push_back(p);
    }
  }

  nlohmann::ordered_json j;
  j["preset"] = preset.name;
  j["preset_description"] = preset.description;
  const sim::DeviceModel& m = preset.device;
  j["model"] = {{"compute_flops", m.compute_flops},
                {"memory_bandwidth", m.memory_bandwidth},
                {"kernel_latency", m.kernel_latency},
                {"capacity", m.capacity},
                {"host_link_bandwidth", m.host_link.bandwidth},
                {"host_link_latency", m.host_link.latency},
                {"devices_per_host_link", m.devices_per_host_link},
                {"peer_link_bandwidth", m.peer_link.bandwidth},
                {"peer_link_latency", m.peer_link.latency},
                {"peer_group_size", m.peer_group_size}};
  j["strategy"] = o.strategy;
  j["problems"] = problems;
  nlohmann::ordered_json sj = nlohmann::ordered_json::array();
  for (const ScalePoint& p : scaling) sj.push_back(to_json(p));
  j["scaling"] = sj;
  nlohmann::ordered_json tj = nlohmann::ordered_json::array();
  for (const ScalePoint& p : strategies) tj.push_back(to_json(p));
  j["strategy_devices"] = o.strategy_devices;
  j["strategies"] = tj;
  bool all_verified = true;
  for (const ScalePoint& p : scaling) all_verified = all_verified && p.verified;
  for (const ScalePoint& p : strategies) all_verified = all_verified && p.verified;
  j["verified"] = all_verified;

  if (!o.csv.empty()) {
    std::ofstream csv(o.csv);
    if (!csv) throw PreconditionError("--csv: cannot write '" + o.csv + "'");
    csv << "study,workload,strategy,devices,seconds,speedup,verified,bytes_h2d,bytes_d2h,"
           "bytes_d2d,bytes_in_per_device_max,kernel_seconds_per_device_max,"
           "copy_seconds_per_device_max\n";
    const auto row = [&](const char* study_name, const ScalePoint& p) {
      csv << study_name << "," << p.workload << "," << p.strategy << "," << p.devices << ","
          << std::setprecision(9) << p.seconds << "," << p.speedup << "," << (p.verified ? 1 : 0)
          << "," << p.bytes_h2d << "," << p.bytes_d2h << "," << p.bytes_d2d << ","
          << p.bytes_in_per_device_max << "," << p.kernel_seconds_per_device_max << ","
          << p.copy_seconds_per_device_max << "\n";
    };
    for (const ScalePoint& p : scaling) row("scaling", p);
    for (const ScalePoint& p : strategies) row("strategies", p);
  }
  if (!o.plot.empty()) {
    std::string error;
    if (!draw_scale_plot(o.plot, "unimem on simulated " + preset.name + " devices", scaling,
                         strategies, error)) {
      throw PreconditionError("--plot: " + error);
    }
    if (!o.json) std::cerr << "plot written to " << o.plot << "\n";
  }
  std::cout << j.dump() << std::endl;
  return all_verified ? 0 : 1;
}

}  // namespace
#endif

void add_scale_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "scale",
      "Speedup over one simulated device for 1..N simulated devices, and the update strategies "
      "compared (JSON; the sim driver, docs/SIMULATION.md)");
#if UNIMEM_HAVE_EXAMPLES
  auto o = std::make_shared<ScaleOptions>();
  cmd->add_option("workload", o->workload,
                  "a workload, a comma-separated list, or all (default): nbody, hotspot, matmul, "
                  "stencil2d, fdtd2d, heat3d, blackscholes, floyd-warshall");
  cmd->add_option("--devices", o->devices, "simulated device counts: 1..16 or 1,2,4,8,16");
  cmd->add_option("--preset", o->preset, "simulated device preset: k80 (default), pcie, nvlink");
  cmd->add_option("--strategy", o->strategy, "update strategy of the scaling runs");
  cmd->add_option("--strategies", o->strategies,
                  "strategies to compare (comma-separated; none: no comparison)");
  cmd->add_option("--strategy-devices", o->strategy_devices,
                  "simulated devices of the strategy comparison")
      ->check(not_negative)
      ->check(CLI::Range(1U, 64U));
  cmd->add_option("--csv", o->csv, "also write every point as CSV to this file");
  cmd->add_option("--plot", o->plot, "draw both studies into this PNG or SVG file (cairo)");
  cmd->add_option("--from", o->from,
                  "draw --plot from this earlier --json output instead of running the study");
  cmd->add_option(
      "--underlying", o->underlying,
      "the OpenCL devices that execute the kernels (UNIMEM_DEVICES syntax; default all)");
  cmd->add_option("--size", o->size, "real problem size (default: the study's, see docs)")
      ->check(not_negative);
  cmd->add_option("--steps", o->steps, "time steps (iterative workloads)")->check(not_negative);
  cmd->add_flag("--json", o->json, "print only the JSON object");
  cmd->callback([o] {
    const int rc = run_scale(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
#else
  cmd->allow_extras();
  cmd->callback([] {
    std::cerr << "unimem scale: built without the examples (UNIMEM_BUILD_EXAMPLES=OFF or no "
                 "OpenCL)\n";
    throw CLI::RuntimeError(2);
  });
#endif
}

}  // namespace unimem::tools
