#include "analysis/support/corpus_check.hpp"

#include <exception>

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

KernelCheck check_corpus_kernel(AccessRecorder& recorder, const Corpus& corpus,
                                const CorpusKernel& kernel, const std::string& analyze_cli) {
  KernelCheck check;
  const InstrumentedSource source =
      instrument_kernel_source(corpus.read_source(kernel), kernel.options, kernel.file);
  check.access_sites = source.access_sites;
  const std::string file = (corpus.directory / kernel.file).string();
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
      if (!analyze_cli.empty()) {
        try {
          const AnalysisReport report =
              run_analyze_command(analyze_cli, file, kernel.options, trace.signature, config.launch,
                                  config.inputs, boxes[b]);
          result.analyzed = true;
          result.verdict = compare_partition(trace.signature, report, truth, kernel.data_dependent,
                                             kernel.conditional_writes);
          if (b == 0 && overlapping && report.splittable) {
            result.verdict.problems.push_back("work-groups write the same bytes (" + overlap +
                                              ") but the kernel is reported splittable");
          }
        } catch (const std::exception& error) {
          result.verdict.problems.push_back(std::string("analysis failed: ") + error.what());
        }
      } else {
        for (const ParamAccess& access : truth) {
          result.verdict.truth_bytes += access.read.total_size() + access.write.total_size();
        }
      }
      check.partitions.push_back(std::move(result));
    }
  }
  if (check.records == 0) check.problems.push_back("no access was recorded in any configuration");
  return check;
}

}  // namespace unimem::testing
