// Program (<unimem/program.hpp>): the public face of ProgramCore; every member forwards.

#include <unimem/program.hpp>

#include "api/program_core.hpp"

namespace unimem {

Program::Program(Runtime& runtime, std::string source, std::string options)
    : core_(std::make_unique<ProgramCore>(runtime, std::move(source), std::move(options))) {}

Program::~Program() = default;

Event Program::launch(const std::string& kernel, const NDRange& range, std::span<const Arg> args,
                      const LaunchOptions& options) {
  return core_->launch(kernel, range, args, options);
}

bool Program::analyzed() const { return core_->analyzed(); }

const std::string& Program::analysis_error() const { return core_->analysis_error(); }

const ProgramBuildReport& Program::build_report() const { return core_->build_report(); }

void Program::set_log(std::function<void(const std::string&)> log) {
  core_->set_log(std::move(log));
}

}  // namespace unimem
