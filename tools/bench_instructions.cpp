#include "bench_instructions.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "child_process.hpp"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define UNIMEM_HAVE_CALLGRIND 1
#else
#define UNIMEM_HAVE_CALLGRIND 0
#endif

namespace unimem::tools {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLabelPrefix = "Trigger: Client Request: ";

// The last lines of a file, for an error message.
std::string tail_of(const fs::path& file, std::size_t lines) {
  std::ifstream in(file);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += all[i];
    out += '\n';
  }
  return out;
}

// The OpenCL driver's code: the ICD loader and what it dispatches to (POCL here), and code of no
// known object ("???"): the stubs through which POCL's device library and the kernels it loads
// call the C library. Every object of unimem's own has a file name. Counted as the submitting
// thread's own, those stubs' calls into malloc (inside the driver's calls, already counted there)
// were subtracted twice, by as much as POCL allocated: 8-22 M per run of 20,000 short launches,
// which moved with the heap's state.
bool is_driver_object(const std::string& object) {
  return object.find("libOpenCL") != std::string::npos ||
         object.find("libpocl") != std::string::npos || object == "???";
}

// The C allocator's entry points (glibc's malloc.c; operator new and delete call them).
bool is_allocator_function(const std::string& name) {
  static constexpr const char* kNames[] = {"malloc",
                                           "free",
                                           "calloc",
                                           "realloc",
                                           "cfree",
                                           "posix_memalign",
                                           "aligned_alloc",
                                           "memalign",
                                           "valloc",
                                           "pvalloc",
                                           "malloc_usable_size"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* n) { return name == n; });
}

// The C library's own helpers of the allocator (malloc.c's _mid_memalign, _int_malloc, ...):
// their calls into malloc are inside an allocator call already (posix_memalign's into malloc).
bool is_allocator_internal(const std::string& object, const std::string& function) {
  return object.find("libc.so") != std::string::npos && !function.empty() && function[0] == '_';
}

// A file is on PATH (valgrind).
bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::error_code ec;
    if (!dir.empty() && fs::exists(fs::path(dir) / name, ec)) return true;
  }
  return false;
}

}  // namespace

bool callgrind_supported() { return UNIMEM_HAVE_CALLGRIND != 0; }

bool running_on_valgrind() {
#if UNIMEM_HAVE_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

void callgrind_begin_run() {
#if UNIMEM_HAVE_CALLGRIND
  CALLGRIND_ZERO_STATS;
#endif
}

void callgrind_end_run(const std::string& label) {
#if UNIMEM_HAVE_CALLGRIND
  CALLGRIND_DUMP_STATS_AT(label.c_str());
#else
  (void)label;
#endif
}

std::map<std::string, std::vector<RunInstructions>> callgrind_run_counts(
    const std::vector<std::string>& arguments) {
  if (!callgrind_supported()) {
    throw std::runtime_error(
        "--instructions: this unimem was built without valgrind's callgrind.h (Debian: valgrind)");
  }
  if (!on_path("valgrind")) {
    throw std::runtime_error("--instructions: valgrind is not on PATH (Debian: valgrind)");
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("--instructions: cannot find this program: " + ec.message());
  const fs::path dir = make_temp_directory("unimem-callgrind-");
  // One file per dump and thread (--separate-threads): cg.<pid>.<dump>-<thread>; the main
  // thread, which submits everything, is thread 1.
  std::vector<std::string> command{"valgrind",
                                   "--tool=callgrind",
                                   "--separate-threads=yes",
                                   "--compress-strings=no",
                                   "--callgrind-out-file=" + (dir / "cg.%p").string(),
                                   self.string()};
  command.insert(command.end(), arguments.begin(), arguments.end());
  const fs::path log = dir / "output.log";
  const int code = run_and_wait(command, log.string());
  if (code != 0) {
    const std::string tail = tail_of(log, 20);
    fs::remove_all(dir, ec);
    throw std::runtime_error("--instructions: the run under valgrind failed (exit code " +
                             std::to_string(code) + "); its last lines:\n" + tail);
  }
  // (dump number, label, count) of the main thread's dumps, ordered by dump number.
  struct Dump {
    unsigned part = 0;
    std::string label;
    RunInstructions count;
  };
  std::vector<Dump> dumps;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("cg.", 0) != 0 || name.size() < 3 || name.substr(name.size() - 3) != "-01") {
      continue;
    }
    std::ifstream in(e.path());
    Dump d;
    bool labelled = false;
    bool counted = false;
    // The body: "ob=" and "fn=" name the object and function of the costs that follow; a call
    // is "cob=" (the callee's object, else the caller's), "cfn=" (the callee, kept until the
    // next), "calls=" (its count first) and then a line whose last number is the call's inclusive
    // cost. Calls from outside the driver into it are the driver's part; calls from outside the
    // driver and the allocator into the allocator, the allocator's.
    std::string object;
    std::string function;
    std::string callee_object;
    std::string callee;
    std::uint64_t calls = 0;
    bool call_cost_next = false;
    for (std::string line; std::getline(in, line);) {
      if (call_cost_next) {
        call_cost_next = false;
        const std::string& to = callee_object.empty() ? object : callee_object;
        const std::size_t space = line.find_last_of(' ');
        const std::uint64_t cost =
            space == std::string::npos ? 0 : std::stoull(line.substr(space + 1));
        if (is_driver_object(to) && !is_driver_object(object)) {
          d.count.driver += cost;
          d.count.driver_calls += calls;
        } else if (is_allocator_function(callee) && !is_allocator_function(function) &&
                   !is_allocator_internal(object, function) && !is_driver_object(object)) {
          d.count.allocator += cost;
          d.count.allocator_calls += calls;
        }
        callee_object.clear();
      } else if (line.rfind("ob=", 0) == 0) {
        object = line.substr(3);
      } else if (line.rfind("fn=", 0) == 0) {
        function = line.substr(3);
      } else if (line.rfind("cob=", 0) == 0) {
        callee_object = line.substr(4);
      } else if (line.rfind("cfn=", 0) == 0) {
        callee = line.substr(4);
      } else if (line.rfind("calls=", 0) == 0) {
        calls = std::stoull(line.substr(6));
        call_cost_next = true;
      } else if (line.rfind("part: ", 0) == 0) {
        d.part = static_cast<unsigned>(std::stoul(line.substr(6)));
      } else if (line.rfind("desc: ", 0) == 0) {
        const std::size_t at = line.find(kLabelPrefix);
        if (at != std::string::npos) {
          d.label = line.substr(at + std::string(kLabelPrefix).size());
          labelled = true;
        }
      } else if (line.rfind("summary: ", 0) == 0) {
        d.count.total = std::stoull(line.substr(9));
        counted = true;
      }
    }
    if (labelled && counted) dumps.push_back(std::move(d));
  }
  fs::remove_all(dir, ec);
  std::sort(dumps.begin(), dumps.end(),
            [](const Dump& a, const Dump& b) { return a.part < b.part; });
  std::map<std::string, std::vector<RunInstructions>> counts;
  for (const Dump& d : dumps) counts[d.label].push_back(d.count);
  if (counts.empty()) {
    throw std::runtime_error("--instructions: valgrind ran but wrote no counted runs");
  }
  return counts;
}

}  // namespace unimem::tools
