// unimem_ground_truth: runs one kernel instrumented on the OpenCL device and prints the bytes each
// buffer argument had read and written by the chosen work-groups, in the JSON format of
// `unimem analyze --json` (same options), so the two can be compared by hand.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "analysis/support/access_recorder.hpp"
#include "analysis/support/corpus_check.hpp"
#include "analysis/support/ground_truth_json.hpp"
#include "analysis/support/kernel_instrumenter.hpp"

namespace {

std::vector<std::size_t> parse_dims(const std::string& text, const std::string& option) {
  std::vector<std::size_t> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    try {
      out.push_back(std::stoull(item));
    } catch (const std::exception&) {
      throw std::runtime_error("--" + option + ": '" + text + "' is not a list of sizes");
    }
  }
  return out;
}

std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw std::runtime_error("--" + option + ": expected NAME=VALUE, got '" + text + "'");
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

// Runs every corpus kernel (or those named by --only) and prints per-class counts and the
// comparison summary the issue note asks for.
int run_corpus(const std::string& manifest, const std::string& analyze_cli, bool in_process,
               const std::vector<std::string>& only) {
  using namespace unimem::testing;
  const Corpus corpus = load_corpus(manifest);
  AccessRecorder recorder;
  InProcessAnalysis analysis;
  AnalysisAccess access;
  access.analyze_cli = analyze_cli;
  if (in_process && in_process_analysis_available()) access.analysis = &analysis;
  const bool compared = access.analysis != nullptr || !analyze_cli.empty();
  struct ClassCount {
    std::size_t kernels = 0, configs = 0, partitions = 0, exact = 0, over = 0, failed = 0;
    std::uint64_t extra_bytes = 0, truth_bytes = 0;
  };
  std::map<std::string, ClassCount> classes;
  std::size_t failures = 0;
  for (const CorpusKernel& kernel : corpus.kernels) {
    if (!only.empty() && std::find(only.begin(), only.end(), kernel.id) == only.end()) continue;
    ClassCount& count = classes[kernel.kernel_class];
    ++count.kernels;
    KernelCheck check;
    try {
      check = check_corpus_kernel(recorder, corpus, kernel, access);
    } catch (const std::exception& error) {
      std::cout << kernel.id << ": ERROR " << error.what() << "\n";
      ++failures;
      ++count.failed;
      continue;
    }
    count.configs += check.configs;
    std::uint64_t extra = 0;
    std::size_t exact = 0;
    for (const PartitionResult& result : check.partitions) {
      ++count.partitions;
      count.truth_bytes += result.verdict.truth_bytes;
      if (!result.analyzed) continue;
      const std::uint64_t over = result.verdict.extra_read_bytes + result.verdict.extra_write_bytes;
      if (result.verdict.exact_equal) {
        ++count.exact;
        ++exact;
      } else {
        ++count.over;
      }
      count.extra_bytes += over;
      extra += over;
    }
    const std::vector<std::string> problems = check.all_problems();
    if (!problems.empty()) {
      ++failures;
      ++count.failed;
    }
    std::cout << kernel.id << " [" << kernel.kernel_class << "]: " << check.configs << " configs, "
              << check.partitions.size() << " partitions, " << check.access_sites
              << " access sites, " << check.records << " accesses recorded";
    if (compared) {
      std::cout << "; exact " << exact << "/" << check.partitions.size()
                << ", over-approximated by " << extra << " bytes";
    }
    std::cout << (problems.empty() ? "" : "; PROBLEMS:") << "\n";
    for (const std::string& problem : problems) std::cout << "  " << problem << "\n";
  }
  std::cout
      << "\n| class | kernels | configs | partitions | exact-equal | over-approx. | extra bytes "
         "| recorded bytes | failing kernels |\n|---|---|---|---|---|---|---|---|---|\n";
  ClassCount total;
  for (const auto& [name, c] : classes) {
    std::cout << "| " << name << " | " << c.kernels << " | " << c.configs << " | " << c.partitions
              << " | " << c.exact << " | " << c.over << " | " << c.extra_bytes << " | "
              << c.truth_bytes << " | " << c.failed << " |\n";
    total.kernels += c.kernels, total.configs += c.configs, total.partitions += c.partitions;
    total.exact += c.exact, total.over += c.over, total.extra_bytes += c.extra_bytes;
    total.truth_bytes += c.truth_bytes, total.failed += c.failed;
  }
  std::cout << "| total | " << total.kernels << " | " << total.configs << " | " << total.partitions
            << " | " << total.exact << " | " << total.over << " | " << total.extra_bytes << " | "
            << total.truth_bytes << " | " << total.failed << " |\n";
  std::cout << "device: " << recorder.device_name() << ", OpenCL build time "
            << recorder.build_seconds() << " s, analysis time " << analysis.analysis_ms() / 1000.0
            << " s\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Record the global-memory accesses of one OpenCL kernel by running it on POCL"};
  std::string file;
  std::vector<std::string> defines, args, buffers, locals;
  std::string kernel, global, local, offset, groups;
  bool print_source = false;
  std::string corpus, analyze_cli;
  std::vector<std::string> only;
  app.add_option("file", file, "OpenCL C source")->check(CLI::ExistingFile);
  app.add_option("-D", defines, "preprocessor definition NAME[=VALUE]");
  app.add_option("--kernel", kernel, "kernel name");
  app.add_option("--global", global, "global size X[,Y[,Z]]");
  app.add_option("--local", local, "local size X[,Y[,Z]]");
  app.add_option("--corpus", corpus, "run every kernel of this corpus manifest instead");
  app.add_option("--analyze", analyze_cli, "with --corpus: the unimem command to compare with");
  app.add_option("--only", only, "with --corpus: only these kernel ids");
  bool compare_in_process = false;
  app.add_flag("--compare", compare_in_process,
               "with --corpus: compare with the analysis linked into this program");
  app.add_option("--offset", offset, "global offset X[,Y[,Z]]");
  app.add_option("--arg", args, "scalar argument NAME=VALUE");
  app.add_option("--buffer", buffers, "buffer argument size NAME=BYTES");
  app.add_option("--local-memory", locals, "__local argument size NAME=BYTES");
  app.add_option("--groups", groups, "work-groups X0:X1[,Y0:Y1[,Z0:Z1]] (all by default)");
  app.add_flag("--print-source", print_source, "print the instrumented source instead");
  bool json = true;
  app.add_flag("--json", json, "accepted for symmetry with unimem analyze");
  CLI11_PARSE(app, argc, argv);

  try {
    using namespace unimem::testing;
    if (!corpus.empty()) return run_corpus(corpus, analyze_cli, compare_in_process, only);
    if (file.empty() || kernel.empty() || (!print_source && (global.empty() || local.empty()))) {
      throw std::runtime_error("FILE, --kernel, --global and --local are required (or --corpus)");
    }
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<std::string> options;
    for (const std::string& define : defines) options.push_back("-D" + define);
    const InstrumentedSource source = instrument_kernel_source(text.str(), options, file);
    if (print_source) {
      std::cout << source.instrumented;
      return 0;
    }
    LaunchConfig config;
    config.global = parse_dims(global, "global");
    config.local = parse_dims(local, "local");
    if (!offset.empty()) config.offset = parse_dims(offset, "offset");
    KernelInputs inputs;
    for (const std::string& a : args) inputs.scalars.insert(split_assignment(a, "arg"));
    for (const std::string& b : buffers) {
      auto [name, bytes] = split_assignment(b, "buffer");
      inputs.buffer_bytes[name] = std::stoull(bytes);
    }
    for (const std::string& l : locals) {
      auto [name, bytes] = split_assignment(l, "local-memory");
      inputs.local_bytes[name] = std::stoull(bytes);
    }
    GroupBox box = GroupBox::all(config);
    if (!groups.empty()) {
      std::stringstream stream(groups);
      std::string range;
      for (std::size_t d = 0; std::getline(stream, range, ','); ++d) {
        const auto colon = range.find(':');
        if (d >= 3 || colon == std::string::npos) {
          throw std::runtime_error("--groups: expected X0:X1[,Y0:Y1[,Z0:Z1]], got '" + groups +
                                   "'");
        }
        box.begin[d] = std::stoull(range.substr(0, colon));
        box.end[d] = std::stoull(range.substr(colon + 1));
      }
    }
    AccessRecorder recorder;
    const AccessTrace trace = recorder.record(source, kernel, options, config, inputs);
    std::cout << ground_truth_json(trace.signature, trace.accesses_of(box)) << "\n";
  } catch (const std::exception& error) {
    std::cerr << "unimem_ground_truth: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
