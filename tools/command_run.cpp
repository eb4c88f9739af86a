// `unimem run -- PROGRAM ARGS...`: runs an unmodified OpenCL program with the unimem platform
// (libunimem_opencl.so, src/platform/) as the only platform its ICD loader sees, then prints
// what the platform did: launches, partitions per device, fallbacks, bytes moved.
//
// How the program sees only unimem while unimem still reaches the real vendors: the child gets
// OCL_ICD_VENDORS pointing at a private directory holding only unimem.icd, and
// UNIMEM_VENDOR_ICDS listing the vendors' libraries as the loader would have found them (minus
// unimem's own); the platform's driver loads those libraries itself and never its own.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "commands.hpp"

#if UNIMEM_HAVE_OPENCL
#include "device/opencl/opencl_discovery.hpp"
#endif

namespace unimem::tools {

namespace {

#if UNIMEM_HAVE_OPENCL

namespace fs = std::filesystem;

// libunimem_opencl.so: UNIMEM_PLATFORM_LIBRARY, next to an installed `unimem`
// (<prefix>/bin/unimem -> <prefix>/lib*/libunimem_opencl.so), or the build tree's.
std::string platform_library() {
  if (const char* v = std::getenv("UNIMEM_PLATFORM_LIBRARY"); v != nullptr && *v != '\0') {
    std::error_code ec;
    if (!fs::is_regular_file(v, ec)) {
      throw std::runtime_error(std::string("UNIMEM_PLATFORM_LIBRARY=") + v + " is not a file");
    }
    return v;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* lib : {"lib", "lib64", "lib/x86_64-linux-gnu"}) {
      const fs::path candidate = exe.parent_path().parent_path() / lib / "libunimem_opencl.so";
      if (fs::exists(candidate, ec)) return candidate.string();
    }
  }
#ifdef UNIMEM_PLATFORM_LIBRARY_BUILD
  if (fs::exists(UNIMEM_PLATFORM_LIBRARY_BUILD, ec)) return UNIMEM_PLATFORM_LIBRARY_BUILD;
#endif
  throw std::runtime_error(
      "cannot find libunimem_opencl.so (set UNIMEM_PLATFORM_LIBRARY to its path)");
}

std::string summary(const nlohmann::json& r) {
  std::ostringstream out;
  const auto launches = r.value("launches", std::uint64_t{0});
  const auto split = r.value("split_launches", std::uint64_t{0});
  const auto devices = r.contains("devices") ? r["devices"].size() : 0;
  out << "unimem run: " << launches << " kernel launch" << (launches == 1 ? "" : "es") << ", "
      << split << " split over the " << devices << " device" << (devices == 1 ? "" : "s") << "\n";
  if (r.contains("partitions_per_device")) {
    for (const auto& [device, count] : r["partitions_per_device"].items()) {
      out << "  partitions on " << device << ": " << count.get<std::uint64_t>() << "\n";
    }
  }
  if (r.contains("simulated_seconds")) {
    out << "  simulated time on the simulated devices: " << r["simulated_seconds"].get<double>()
        << " s\n";
  }
  if (r.contains("fallbacks")) {
    for (const auto& f : r["fallbacks"]) {
      out << "  fallback (" << f.value("count", 0) << "x) kernel " << f.value("kernel", "?") << ": "
          << f.value("reason", "") << "\n";
    }
  }
  out << "  bytes host->device " << r.value("bytes_h2d", std::uint64_t{0}) << ", device->host "
      << r.value("bytes_d2h", std::uint64_t{0}) << ", device->device "
      << r.value("bytes_d2d", std::uint64_t{0})
      << " (the minimum is not known for an arbitrary program)\n";
  if (r.contains("error")) out << "  error: " << r["error"].get<std::string>() << "\n";
  return out.str();
}

int run_program(const std::vector<std::string>& command, const std::string& report_option,
                const std::string& devices, const std::string& exposed, const std::string& trace,
                bool quiet) {
  if (command.empty())
    throw std::runtime_error("unimem run: no program given (unimem run -- PROGRAM ARGS...)");
  const std::string library = platform_library();
  (void)opencl::pocl_default();  // the child inherits the POCL_DEVICES decision
  const char* given = std::getenv(opencl::kVendorIcdsEnvironmentVariable);
  const std::string vendors =
      given != nullptr && *given != '\0'
          ? std::string(given)
          : opencl::other_vendor_libraries(opencl::IcdSearch::from_environment());
  if (vendors.empty()) {
    throw std::runtime_error("unimem run: no OpenCL implementation is registered to run on");
  }

  const fs::path dir = make_temp_directory("unimem-run-");
  std::ofstream(dir / "unimem.icd") << fs::absolute(library).string() << "\n";
  // The report is the user's when --report or UNIMEM_REPORT names it; otherwise it lives in the
  // temporary directory, which goes with it.
  std::string report = report_option;
  if (report.empty()) {
    const char* env = std::getenv("UNIMEM_REPORT");
    if (env != nullptr && *env != '\0') report = env;
  }
  const bool report_is_ours = report.empty();
  if (report_is_ours) report = (dir / "report.json").string();
  fs::remove(report);

  ::setenv("OCL_ICD_VENDORS", dir.c_str(), 1);
  ::unsetenv("OCL_ICD_FILENAMES");
  ::setenv(opencl::kVendorIcdsEnvironmentVariable, vendors.c_str(), 1);
  ::setenv("UNIMEM_REPORT", report.c_str(), 1);
  if (!devices.empty()) ::setenv(opencl::kDevicesEnvironmentVariable, devices.c_str(), 1);
  if (!exposed.empty()) ::setenv("UNIMEM_PLATFORM_DEVICES", exposed.c_str(), 1);
  // The platform's runtime traces when UNIMEM_TRACE is set and writes the file at exit.
  std::string trace_file;
  if (!trace.empty()) {
    trace_file = fs::absolute(trace).string();
    fs::remove(trace_file);
    ::setenv("UNIMEM_TRACE", trace_file.c_str(), 1);
  }

  int code = 0;
  try {
    code = run_and_wait(command);
  } catch (const std::runtime_error& e) {
    fs::remove_all(dir);
    throw std::runtime_error(std::string("unimem run: ") + e.what());
  }

  std::ifstream in(report);
  if (in) {
    const nlohmann::json r = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!quiet) {
      std::cerr << (r.is_discarded() ? "unimem run: the report " + report + " is not valid JSON\n"
                                     : summary(r));
    }
  } else if (!quiet) {
    std::cerr << "unimem run: the program used no device of the unimem platform (no report)\n";
  }
  // Nothing of the run stays in the temporary directory but a report the user asked for there.
  std::error_code not_removed;
  if (report_is_ours) {
    fs::remove_all(dir, not_removed);
  } else {
    fs::remove(dir / "unimem.icd", not_removed);
    fs::remove(dir, not_removed);  // kept when the user's report is inside it
  }
  if (!quiet && !trace_file.empty()) {
    std::error_code ec;
    std::cerr << (fs::exists(trace_file, ec)
                      ? "unimem run: trace written to " + trace_file +
                            " (open it in ui.perfetto.dev, or `unimem trace " + trace_file +
                            " -o timeline.png`)\n"
                      : "unimem run: no trace was written (the program used no device of the "
                        "unimem platform)\n");
  }
  if (!quiet && code != 0)
    std::cerr << "unimem run: " << command[0] << " exited with " << code << "\n";
  return code;
}

#endif  // UNIMEM_HAVE_OPENCL

}  // namespace

void add_run_command(CLI::App& app) {
  CLI::App* run = app.add_subcommand(
      "run",
      "Run an unmodified OpenCL program on every device: its ICD loader sees only the unimem "
      "platform, whose device splits each kernel over all devices; prints what moved at exit.");
  auto report = std::make_shared<std::string>();
  auto devices = std::make_shared<std::string>();
  auto exposed = std::make_shared<std::string>();
  auto trace = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto command = std::make_shared<std::vector<std::string>>();
  run->add_option("--report", *report,
                  "also write the report as JSON to this file (UNIMEM_REPORT)");
  run->add_option("--devices", *devices,
                  "the devices to run on (UNIMEM_DEVICES syntax; sim:PRESET:COUNT for simulated "
                  "devices)");
  run->add_option("--platform-devices", *exposed,
                  "devices the platform exposes (UNIMEM_PLATFORM_DEVICES)")
      ->check(CLI::IsMember({"aggregate", "each", "both"}));
  run->add_option("--trace", *trace,
                  "write a timeline of the run to this file as Chrome trace JSON (UNIMEM_TRACE; "
                  "ui.perfetto.dev opens it, `unimem trace` draws it)");
  run->add_flag("--quiet", *quiet, "print no summary");
  run->add_option("command", *command, "PROGRAM ARGS... (after --)")->required();
  run->callback([=] {
#if UNIMEM_HAVE_OPENCL
    const int code = run_program(*command, *report, *devices, *exposed, *trace, *quiet);
    std::cout.flush();
    std::exit(code);
#else
    throw std::runtime_error("unimem run: this unimem was built without OpenCL");
#endif
  });
}

}  // namespace unimem::tools
