// Compiled with -fno-rtti (Debian's libclang-cpp is built without RTTI). LLVM is built without
// exceptions, so nothing here throws while Clang code is on the stack: problems are collected and
// thrown after the tool has returned.
#include "analysis/support/kernel_instrumenter.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/FileManager.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/PreprocessorOutputOptions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Frontend/Utils.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Rewrite/Core/Rewriter.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <sstream>
#include <utility>

#ifndef UNIMEM_GROUND_TRUTH_CLANG_RESOURCE_DIR
#error \
    "UNIMEM_GROUND_TRUTH_CLANG_RESOURCE_DIR must name Clang's resource directory (clang -print-resource-dir)"
#endif

namespace unimem::testing {
namespace {

constexpr unsigned kRead = 1;
constexpr unsigned kWrite = 2;
constexpr unsigned kConstantSpace = 4;

// The macro evaluates p once: __typeof__ and sizeof do not evaluate their operand, so an access
// nested inside p (a[b[i]]) is logged exactly once as well.
constexpr std::string_view kPrelude = R"(/* unimem ground-truth instrumentation */
#define __UNIMEM_P(K, p) ((__typeof__(p))__unimem_rec(__unimem_log, (ulong)(p), (ulong)sizeof(*(p)), (ulong)(K)))
ulong __unimem_rec(__global ulong* log, ulong addr, ulong size, ulong kind);
ulong __unimem_rec(__global ulong* log, ulong addr, ulong size, ulong kind) {
  uint slot = atomic_inc((volatile __global uint*)log);
  if ((ulong)slot < log[1]) {
    __global ulong* r = log + 64 + 2 * (ulong)slot;
    r[0] = addr;
    r[1] = (ulong)get_group_id(0) | ((ulong)get_group_id(1) << 16) |
           ((ulong)get_group_id(2) << 32) | (size << 48) | (kind << 61);
  }
  return addr;
}
)";

bool is_recorded_space(clang::QualType type) {
  const clang::LangAS space = type.getAddressSpace();
  return space == clang::LangAS::opencl_global || space == clang::LangAS::opencl_constant;
}

bool is_option_with_value(const std::string& option, const char* flag) { return option == flag; }

bool is_preprocessor_option(const std::string& option) {
  return option.rfind("-D", 0) == 0 || option.rfind("-U", 0) == 0 || option.rfind("-I", 0) == 0;
}

/// Runs one Clang frontend action over `code` held in memory; returns Clang's diagnostics text and
/// whether it succeeded.
std::pair<bool, std::string> run_clang_action(std::unique_ptr<clang::FrontendAction> action,
                                              const std::string& code, std::string_view file_name,
                                              std::vector<std::string> arguments) {
  std::vector<std::string> command_line = {
      "clang-tool", "-fsyntax-only", "-x",
      "cl",         "-resource-dir", UNIMEM_GROUND_TRUTH_CLANG_RESOURCE_DIR};
  command_line.insert(command_line.end(), arguments.begin(), arguments.end());
  command_line.emplace_back(file_name);

  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  auto overlay =
      llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(memory);
  memory->addFile(file_name, 0, llvm::MemoryBuffer::getMemBufferCopy(code));
  auto files = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions(), overlay);

  std::string diagnostics;
  llvm::raw_string_ostream diagnostics_stream(diagnostics);
  auto diagnostic_options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  diagnostic_options->ShowCarets = false;
  clang::TextDiagnosticPrinter printer(diagnostics_stream, diagnostic_options.get());
  clang::tooling::ToolInvocation invocation(std::move(command_line), std::move(action),
                                            files.get());
  invocation.setDiagnosticConsumer(&printer);
  invocation.setDiagnosticOptions(diagnostic_options.get());
  const bool ok = invocation.run() && printer.getNumErrors() == 0;
  diagnostics_stream.flush();
  return {ok, diagnostics};
}

// Clang prints "N errors generated." to stderr after an action unless carets are off; the
// diagnostics themselves are collected and reported in the exception instead.
bool quiet_invocation(clang::CompilerInstance& compiler) {
  compiler.getDiagnosticOpts().ShowCarets = false;
  return true;
}

class PreprocessToString : public clang::PreprocessorFrontendAction {
 public:
  explicit PreprocessToString(std::string& out) : out_(out) {}

 protected:
  bool BeginInvocation(clang::CompilerInstance& compiler) override {
    return quiet_invocation(compiler);
  }
  void ExecuteAction() override {
    clang::CompilerInstance& compiler = getCompilerInstance();
    clang::PreprocessorOutputOptions options = compiler.getPreprocessorOutputOpts();
    options.ShowCPP = 1;
    options.ShowLineMarkers = 0;
    options.ShowComments = 0;
    options.ShowMacroComments = 0;
    options.ShowMacros = 0;
    llvm::raw_string_ostream stream(out_);
    clang::DoPrintPreprocessedInput(compiler.getPreprocessor(), &stream, options);
    stream.flush();
  }

 private:
  std::string& out_;
};

struct Site {
  const clang::Expr* expr = nullptr;
  unsigned kind = 0;
  bool pointer = false;  ///< expr is a pointer argument of an atomic builtin, not an lvalue
};

class AccessCollector : public clang::RecursiveASTVisitor<AccessCollector> {
 public:
  AccessCollector(clang::ASTContext& context, std::vector<std::string>& errors)
      : context_(context), sources_(context.getSourceManager()), errors_(errors) {}

  bool shouldVisitImplicitCode() const { return false; }

  bool TraverseDecl(clang::Decl* decl) {
    // Only the user's code: the OpenCL builtin header is parsed too but never rewritten.
    if (decl != nullptr && !llvm::isa<clang::TranslationUnitDecl>(decl) &&
        !sources_.isInMainFile(sources_.getExpansionLoc(decl->getLocation()))) {
      return true;
    }
    return RecursiveASTVisitor::TraverseDecl(decl);
  }

  bool VisitImplicitCastExpr(clang::ImplicitCastExpr* cast) {
    if (cast->getCastKind() == clang::CK_LValueToRValue) mark(cast->getSubExpr(), kRead);
    return true;
  }

  bool VisitBinaryOperator(clang::BinaryOperator* op) {
    if (op->isAssignmentOp())
      mark(op->getLHS(), op->isCompoundAssignmentOp() ? kRead | kWrite : kWrite);
    return true;
  }

  bool VisitUnaryOperator(clang::UnaryOperator* op) {
    if (op->isIncrementDecrementOp()) mark(op->getSubExpr(), kRead | kWrite);
    return true;
  }

  bool VisitCallExpr(clang::CallExpr* call) {
    const clang::FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr) {
      error(call->getBeginLoc(), "indirect call");
      return true;
    }
    if (is_user_function(callee)) {
      calls_.push_back(call);
      return true;
    }
    const std::string name = callee->getNameAsString();
    const bool atomic = name.rfind("atomic_", 0) == 0 || name.rfind("atom_", 0) == 0;
    for (unsigned i = 0; i < call->getNumArgs(); ++i) {
      const clang::Expr* arg = call->getArg(i);
      const clang::QualType type = arg->getType();
      if (!type->isPointerType() || !is_recorded_space(type->getPointeeType())) continue;
      if (atomic && i == 0) {
        unsigned kind = kRead | kWrite;
        if (type->getPointeeType().getAddressSpace() == clang::LangAS::opencl_constant) {
          kind |= kConstantSpace;
        }
        sites_.push_back(Site{arg, kind, true});
      } else {
        error(call->getBeginLoc(), "builtin '" + name +
                                       "' receives a global or constant pointer; its accesses "
                                       "cannot be recorded");
      }
    }
    return true;
  }

  bool VisitFunctionDecl(clang::FunctionDecl* function) {
    if (function->isImplicit() || !is_user_function(function)) return true;
    functions_.push_back(function);
    if (function->hasAttr<clang::OpenCLKernelAttr>() && function->doesThisDeclarationHaveABody()) {
      kernels_.push_back(function);
    }
    return true;
  }

  const std::vector<Site>& sites() const { return sites_; }
  const std::vector<const clang::CallExpr*>& calls() const { return calls_; }
  const std::vector<const clang::FunctionDecl*>& functions() const { return functions_; }
  const std::vector<const clang::FunctionDecl*>& kernels() const { return kernels_; }

 private:
  // A function of the kernel source: defined (builtins never are) in the main file. Builtins that
  // Clang declares on use (-fdeclare-opencl-builtins) carry the caller's location, hence the check
  // on the definition rather than on the declaration.
  bool is_user_function(const clang::FunctionDecl* function) const {
    const clang::FunctionDecl* definition = function->getDefinition();
    return definition != nullptr && !definition->isImplicit() &&
           sources_.isInMainFile(sources_.getExpansionLoc(definition->getLocation()));
  }

  void mark(const clang::Expr* lvalue, unsigned kind) {
    const clang::Expr* bare = lvalue->IgnoreParens();
    if (const auto* component = llvm::dyn_cast<clang::ExtVectorElementExpr>(bare)) {
      if (is_recorded_space(component->getBase()->getType()) ||
          is_recorded_space(component->getType())) {
        error(lvalue->getBeginLoc(),
              "component access of a global vector lvalue; load or store the whole vector");
      }
      return;
    }
    if (!is_recorded_space(lvalue->getType())) return;
    if (lvalue->getType().getAddressSpace() == clang::LangAS::opencl_constant) {
      kind |= kConstantSpace;
    }
    auto [it, inserted] = index_.try_emplace(lvalue, sites_.size());
    if (inserted) {
      sites_.push_back(Site{lvalue, kind, false});
    } else {
      sites_[it->second].kind |= kind;
    }
  }

  void error(clang::SourceLocation location, const std::string& message) {
    const clang::PresumedLoc presumed = sources_.getPresumedLoc(location);
    std::ostringstream text;
    if (presumed.isValid()) text << "line " << presumed.getLine() << ": ";
    text << message;
    errors_.push_back(text.str());
  }

  [[maybe_unused]] clang::ASTContext& context_;
  clang::SourceManager& sources_;
  std::vector<std::string>& errors_;
  std::vector<Site> sites_;
  llvm::DenseMap<const clang::Expr*, std::size_t> index_;
  std::vector<const clang::CallExpr*> calls_;
  std::vector<const clang::FunctionDecl*> functions_;
  std::vector<const clang::FunctionDecl*> kernels_;
};

KernelParam describe_param(const clang::ParmVarDecl& param, clang::ASTContext& context) {
  KernelParam out;
  out.name = param.getNameAsString();
  const clang::QualType type = param.getType();
  out.type_name = type.getAsString();
  auto scalar_kind = [](clang::QualType t) {
    if (t->isSignedIntegerType()) return ScalarKind::signed_integer;
    if (t->isUnsignedIntegerType()) return ScalarKind::unsigned_integer;
    if (t->isRealFloatingType()) return ScalarKind::floating;
    return ScalarKind::other;
  };
  auto describe_components = [&](clang::QualType value) {
    clang::QualType component = value;
    if (const auto* vector = value->getAs<clang::VectorType>())
      component = vector->getElementType();
    out.scalar_kind = scalar_kind(component);
    if (out.scalar_kind != ScalarKind::other) {
      out.component_size =
          static_cast<std::uint64_t>(context.getTypeSizeInChars(component).getQuantity());
    }
  };
  if (type->isPointerType()) {
    const clang::QualType pointee = type->getPointeeType();
    switch (pointee.getAddressSpace()) {
      case clang::LangAS::opencl_global:
        out.kind = ParamKind::global_buffer;
        break;
      case clang::LangAS::opencl_constant:
        out.kind = ParamKind::constant_buffer;
        break;
      case clang::LangAS::opencl_local:
        out.kind = ParamKind::local_buffer;
        break;
      default:
        out.kind = ParamKind::scalar;
        break;
    }
    if (pointee->isVoidType()) {
      out.element_size = 1;
    } else {
      out.element_size =
          static_cast<std::uint64_t>(context.getTypeSizeInChars(pointee).getQuantity());
      describe_components(pointee);
    }
  } else {
    out.kind = ParamKind::scalar;
    out.element_size = static_cast<std::uint64_t>(context.getTypeSizeInChars(type).getQuantity());
    describe_components(type);
  }
  return out;
}

struct RewriteResult {
  std::string text;
  std::vector<KernelSignature> kernels;
  std::size_t access_sites = 0;
  std::vector<std::string> errors;
};

class RewriteConsumer : public clang::ASTConsumer {
 public:
  explicit RewriteConsumer(RewriteResult& result) : result_(result) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (context.getDiagnostics().hasErrorOccurred()) return;
    clang::SourceManager& sources = context.getSourceManager();
    AccessCollector collector(context, result_.errors);
    collector.TraverseDecl(context.getTranslationUnitDecl());
    if (!result_.errors.empty()) return;

    clang::Rewriter rewriter(sources, context.getLangOpts());
    const clang::FileID main_file = sources.getMainFileID();
    auto in_file = [&](clang::SourceLocation location) {
      return location.isValid() && location.isFileID() && sources.isInMainFile(location);
    };

    // Inner accesses first (the visitor records outer ones first): a prefix inserted later goes in
    // front of earlier text at the same place, a suffix after it, so nesting stays balanced.
    const auto& sites = collector.sites();
    for (auto it = sites.rbegin(); it != sites.rend(); ++it) {
      const clang::SourceLocation begin = it->expr->getBeginLoc();
      const clang::SourceLocation end = it->expr->getEndLoc();
      if (!in_file(begin) || !in_file(end)) {
        result_.errors.push_back("an access outside the main file cannot be rewritten");
        return;
      }
      const std::string kind = std::to_string(it->kind);
      if (it->pointer) {
        rewriter.InsertTextBefore(begin, "__UNIMEM_P(" + kind + ", ");
        rewriter.InsertTextAfterToken(end, ")");
      } else {
        rewriter.InsertTextBefore(begin, "(*__UNIMEM_P(" + kind + ", &(");
        rewriter.InsertTextAfterToken(end, ")))");
      }
    }
    result_.access_sites = sites.size();

    for (const clang::CallExpr* call : collector.calls()) {
      rewriter.InsertTextAfter(call->getRParenLoc(),
                               call->getNumArgs() > 0 ? ", __unimem_log" : "__unimem_log");
    }

    const std::string log_param = "__global ulong* __unimem_log";
    for (const clang::FunctionDecl* function : collector.functions()) {
      const clang::FunctionTypeLoc type_loc = function->getFunctionTypeLoc();
      if (!type_loc) {
        result_.errors.push_back("function '" + function->getNameAsString() +
                                 "' has no prototype to extend");
        return;
      }
      if (function->getNumParams() > 0) {
        rewriter.InsertTextBefore(type_loc.getRParenLoc(), ", " + log_param);
      } else {
        const unsigned open = sources.getFileOffset(type_loc.getLParenLoc());
        const unsigned close = sources.getFileOffset(type_loc.getRParenLoc());
        rewriter.ReplaceText(type_loc.getLParenLoc().getLocWithOffset(1), close - open - 1,
                             log_param);
      }
    }

    for (const clang::FunctionDecl* kernel : collector.kernels()) {
      KernelSignature signature;
      signature.name = kernel->getNameAsString();
      std::string prologue;
      for (unsigned i = 0; i < kernel->getNumParams(); ++i) {
        KernelParam param = describe_param(*kernel->getParamDecl(i), context);
        if (param.kind == ParamKind::global_buffer || param.kind == ParamKind::constant_buffer) {
          prologue += " __unimem_log[" + std::to_string(AccessLogLayout::kBaseWord + i) +
                      "] = (ulong)(" + param.name + ");";
        }
        signature.params.push_back(std::move(param));
      }
      if (signature.params.size() > AccessLogLayout::kMaxParams) {
        result_.errors.push_back("kernel '" + signature.name + "' has too many parameters");
        return;
      }
      const auto* body = llvm::dyn_cast<clang::CompoundStmt>(kernel->getBody());
      if (body == nullptr) {
        result_.errors.push_back("kernel '" + signature.name + "' has no compound body");
        return;
      }
      rewriter.InsertTextAfterToken(body->getLBracLoc(), prologue);
      result_.kernels.push_back(std::move(signature));
    }

    rewriter.InsertTextBefore(sources.getLocForStartOfFile(main_file), std::string(kPrelude));
    const clang::RewriteBuffer* buffer = rewriter.getRewriteBufferFor(main_file);
    result_.text = buffer != nullptr ? std::string(buffer->begin(), buffer->end())
                                     : std::string(sources.getBufferData(main_file));
  }

 private:
  RewriteResult& result_;
};

class RewriteAction : public clang::ASTFrontendAction {
 public:
  explicit RewriteAction(RewriteResult& result) : result_(result) {}

 protected:
  bool BeginInvocation(clang::CompilerInstance& compiler) override {
    return quiet_invocation(compiler);
  }
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef) override {
    return std::make_unique<RewriteConsumer>(result_);
  }

 private:
  RewriteResult& result_;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

}  // namespace

const KernelParam* KernelSignature::find_param(std::string_view param_name) const {
  for (const KernelParam& param : params) {
    if (param.name == param_name) return &param;
  }
  return nullptr;
}

const KernelSignature& InstrumentedSource::kernel(std::string_view name) const {
  for (const KernelSignature& signature : kernels) {
    if (signature.name == name) return signature;
  }
  throw InstrumentationError("no kernel named '" + std::string(name) + "' in the source");
}

std::vector<std::string> options_after_preprocessing(
    const std::vector<std::string>& build_options) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < build_options.size(); ++i) {
    const std::string& option = build_options[i];
    if (is_option_with_value(option, "-D") || is_option_with_value(option, "-U") ||
        is_option_with_value(option, "-I")) {
      ++i;  // the value is the next entry
      continue;
    }
    if (is_preprocessor_option(option)) continue;
    kept.push_back(option);
  }
  return kept;
}

InstrumentedSource instrument_kernel_source(std::string_view source,
                                            const std::vector<std::string>& build_options,
                                            std::string_view file_name) {
  // -cl-no-stdinc: the OpenCL header stays out of the preprocessed text (POCL adds its own).
  std::vector<std::string> preprocessor_arguments = {"-cl-std=CL1.2", "-cl-no-stdinc"};
  for (std::size_t i = 0; i < build_options.size(); ++i) {
    const std::string& option = build_options[i];
    if (option == "-D" || option == "-U" || option == "-I") {
      if (i + 1 == build_options.size()) {
        throw InstrumentationError("build option '" + option + "' lacks its value");
      }
      preprocessor_arguments.push_back(option + build_options[++i]);
    } else if (is_preprocessor_option(option)) {
      preprocessor_arguments.push_back(option);
    }
  }

  InstrumentedSource out;
  auto [preprocessed_ok, preprocess_diagnostics] =
      run_clang_action(std::make_unique<PreprocessToString>(out.original_preprocessed),
                       std::string(source), file_name, preprocessor_arguments);
  if (!preprocessed_ok) {
    throw InstrumentationError("preprocessing " + std::string(file_name) + " failed:\n" +
                               preprocess_diagnostics);
  }

  RewriteResult result;
  auto [parsed_ok, parse_diagnostics] =
      run_clang_action(std::make_unique<RewriteAction>(result), out.original_preprocessed,
                       file_name, {"-cl-std=CL1.2", "-Wno-everything"});
  if (!parsed_ok) {
    throw InstrumentationError("parsing " + std::string(file_name) + " failed:\n" +
                               parse_diagnostics);
  }
  if (!result.errors.empty()) {
    throw InstrumentationError("cannot instrument " + std::string(file_name) + ":\n" +
                               joined(result.errors));
  }
  out.instrumented = std::move(result.text);
  out.kernels = std::move(result.kernels);
  out.access_sites = result.access_sites;
  return out;
}

}  // namespace unimem::testing
