#include "analysis/llvm/frontend.hpp"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <sstream>

#ifndef UNIMEM_CLANG_RESOURCE_DIR
#define UNIMEM_CLANG_RESOURCE_DIR "/usr/lib/llvm-15/lib/clang/15.0.6"
#endif

namespace unimem {

namespace {

std::vector<std::string> split_options(const std::string& options) {
  std::vector<std::string> tokens;
  std::string current;
  bool in_quotes = false;
  bool have = false;
  for (char c : options) {
    if (c == '"') {
      in_quotes = !in_quotes;
      have = true;
    } else if (!in_quotes && (c == ' ' || c == '\t' || c == '\n')) {
      if (have) tokens.push_back(current);
      current.clear();
      have = false;
    } else {
      current += c;
      have = true;
    }
  }
  if (have) tokens.push_back(current);
  return tokens;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::vector<std::string> opencl_options_to_cc1(const std::string& options) {
  // The options clBuildProgram accepts (OpenCL 3.0 section 5.8.6) that change what the source
  // means; optimisation hints pass through since -cc1 knows them too.
  static const char* const kPassThrough[] = {"-cl-opt-disable",
                                             "-cl-mad-enable",
                                             "-cl-fast-relaxed-math",
                                             "-cl-single-precision-constant",
                                             "-cl-denorms-are-zero",
                                             "-cl-no-signed-zeros",
                                             "-cl-unsafe-math-optimizations",
                                             "-cl-finite-math-only",
                                             "-cl-kernel-arg-info",
                                             "-cl-uniform-work-group-size",
                                             "-cl-strict-aliasing",
                                             "-cl-fp32-correctly-rounded-divide-sqrt",
                                             "-w",
                                             "-Werror"};
  std::vector<std::string> out;
  const std::vector<std::string> tokens = split_options(options);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t == "-D" || t == "-I") {
      if (i + 1 >= tokens.size()) {
        throw OpenCLCompileError("build option " + t + " needs an argument");
      }
      out.push_back(t + tokens[++i]);
    } else if (starts_with(t, "-D") || starts_with(t, "-I") || starts_with(t, "-cl-std=")) {
      out.push_back(t);
    } else if (t == "-g" || t == "-cl-no-subgroup-ifp" || t == "-create-library" ||
               t == "-enable-link-options") {
      // Valid OpenCL options that do not change which bytes a kernel touches.
      continue;
    } else {
      bool known = false;
      for (const char* p : kPassThrough) known = known || t == p;
      if (!known) throw OpenCLCompileError("unknown build option '" + t + "'");
      out.push_back(t);
    }
  }
  return out;
}

std::unique_ptr<llvm::Module> compile_opencl(llvm::LLVMContext& context, const std::string& source,
                                             const std::string& options,
                                             const std::string& file_name) {
  std::vector<std::string> args = {
      "-triple", "spir64-unknown-unknown", "-x", "cl", "-O0", "-disable-O0-optnone",
      "-finclude-default-header", "-fdeclare-opencl-builtins", "-cl-kernel-arg-info",
      // Lets a device library read differently by the analysis
      // than by the device compiler (include/unimem/team.h).
      "-D__UNIMEM_ANALYSIS__=1", "-resource-dir", UNIMEM_CLANG_RESOURCE_DIR};
  bool has_std = false;
  for (std::string& o : opencl_options_to_cc1(options)) {
    has_std = has_std || starts_with(o, "-cl-std=");
    args.push_back(std::move(o));
  }
  if (!has_std) args.emplace_back("-cl-std=CL1.2");
  args.push_back(file_name);
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& a : args) argv.push_back(a.c_str());

  std::string diagnostics;
  llvm::raw_string_ostream diag_stream(diagnostics);
  auto diag_options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  auto* printer = new clang::TextDiagnosticPrinter(diag_stream, diag_options.get());

  clang::CompilerInstance ci;
  ci.createDiagnostics(printer, /*ShouldOwnClient=*/true);
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  const bool parsed =
      clang::CompilerInvocation::CreateFromArgs(*invocation, argv, ci.getDiagnostics());
  if (!parsed || ci.getDiagnostics().hasErrorOccurred()) {
    diag_stream.flush();
    throw OpenCLCompileError("invalid build options '" + options + "': " + diagnostics);
  }
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      llvm::MemoryBuffer::getMemBufferCopy(source, file_name);
  invocation->getPreprocessorOpts().addRemappedFile(file_name, buffer.release());
  invocation->getFrontendOpts().DisableFree = false;
  ci.setInvocation(std::move(invocation));

  // "N errors generated." goes to the verbose stream (stderr by default): keep it with the rest.
  ci.setVerboseOutputStream(diag_stream);
  clang::EmitLLVMOnlyAction action(&context);
  const bool ok = ci.ExecuteAction(action);
  diag_stream.flush();
  if (!ok || ci.getDiagnostics().hasErrorOccurred()) {
    throw OpenCLCompileError("OpenCL C compilation of " + file_name + " failed:\n" + diagnostics);
  }
  std::unique_ptr<llvm::Module> module = action.takeModule();
  if (!module) throw OpenCLCompileError("OpenCL C compilation produced no module:\n" + diagnostics);
  return module;
}

}  // namespace unimem
