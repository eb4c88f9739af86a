#include "analysis/support/corpus_check.hpp"

#include <exception>
#include <optional>

namespace unimem::testing {

std::vector<std::string> KernelCheck::all_problems() const {
  std::vector<std::string> out = problems;
  for (const PartitionResult& result : partitions) {
    for (const std::string& problem : result.verdict.problems) {
      out.push_back("config " + std::to_string(result.config) + " (" + result.launch + ") groups " +
                    result.groups + ": " + problem);
    }
  }
  return out;
}

namespace {

bool same_answer(const AnalysisReport& a, const AnalysisReport& b) {
  if (a.kernel != b.kernel || a.splittable != b.splittable || a.args.size() != b.args.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.args.size(); ++i) {
    const AnalysisArg& x = a.args[i];
    const AnalysisArg& y = b.args[i];
    if (x.index != y.index || x.name != y.name || x.read != y.read || x.write != y.write ||
        x.read_exact != y.read_exact || x.write_exact != y.write_exact ||
        x.write_conditional != y.write_conditional) {
      return false;
    }
  }
  return true;
}

}  // namespace

KernelCheck check_corpus_kernel(AccessRecorder& recorder, const Corpus& corpus,
                                const CorpusKernel& kernel, const AnalysisAccess& access) {
  KernelCheck check;
  const std::string text = corpus.read_source(kernel);
  const InstrumentedSource source = instrument_kernel_source(text, kernel.options, kernel.file);
  check.access_sites = source.access_sites;
  const std::string file = (corpus.directory / kernel.file).string();
  const bool analyzed = access.analysis != nullptr || !access.analyze_cli.empty();
  for (std::size_t c = 0; c < kernel.configs.size(); ++c) {
    const CorpusConfig& config = kernel.configs[c];
    const std::string where =
        "config " + std::to_string(c) + " (" + config.launch.to_string() + ")";
    const AccessTrace trace =
        recorder.record(source, kernel.kernel, kernel.options, config.launch, config.inputs);
    ++check.configs;
    check.records += trace.records.size();
    const auto original =
        recorder.run_original(source, kernel.kernel, kernel.options, config.launch, config.inputs);
    for (std::size_t p = 0; p < original.size(); ++p) {
      if (original[p] != trace.final_buffers[p]) {
        check.problems.push_back(where + ": buffer '" + trace.signature.params[p].name +
                                 "' differs between the instrumented and the original kernel");
      }
    }
    std::string overlap;
    const bool overlapping = groups_write_overlap(trace, &overlap);

    std::vector<GroupBox> boxes = {GroupBox::all(config.launch)};
    boxes.insert(boxes.end(), config.partitions.begin(), config.partitions.end());
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      PartitionResult result;
      result.config = c;
      result.launch = config.launch.to_string();
      result.groups = boxes[b].to_string(config.launch.global.size());
      result.whole_launch = b == 0;
      const std::vector<ParamAccess> truth = trace.accesses_of(boxes[b]);
      if (!analyzed) {
        for (const ParamAccess& recorded : truth) {
          result.verdict.truth_bytes += recorded.read.total_size() + recorded.write.total_size();
        }
        check.partitions.push_back(std::move(result));
        continue;
      }
      try {
        std::optional<AnalysisReport> in_process;
        if (access.analysis != nullptr) {
          in_process = access.analysis->report(text, kernel.options, trace.signature, config.launch,
                                               config.inputs, boxes[b]);
        }
        std::optional<AnalysisReport> command;
        if (!access.analyze_cli.empty() && (b == 0 || !in_process)) {
          command = run_analyze_command(access.analyze_cli, file, kernel.options, trace.signature,
                                        config.launch, config.inputs, boxes[b]);
        }
        const AnalysisReport& report = in_process ? *in_process : *command;
        result.analyzed = true;
        result.verdict = compare_partition(trace.signature, report, truth, kernel.data_dependent,
                                           kernel.conditional_writes);
        if (in_process && command && !same_answer(*in_process, *command)) {
          result.verdict.problems.push_back(
              "`unimem analyze --json` and the in-process analysis disagree");
        }
        if (b == 0 && overlapping && report.splittable) {
          result.verdict.problems.push_back("work-groups write the same bytes (" + overlap +
                                            ") but the kernel is reported splittable");
        }
      } catch (const std::exception& error) {
        result.verdict.problems.push_back(std::string("analysis failed: ") + error.what());
      }
      check.partitions.push_back(std::move(result));
    }
  }
  if (check.records == 0) check.problems.push_back("no access was recorded in any configuration");
  return check;
}

}  // namespace unimem::testing
