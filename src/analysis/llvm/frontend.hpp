#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace unimem {

/// OpenCL C that does not compile, or build options the compiler does not accept. what() holds the
/// compiler's diagnostics.
class OpenCLCompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Splits clBuildProgram-style options ("-D N=4 -DM -I dir -cl-std=CL2.0 -cl-mad-enable") into
/// Clang -cc1 arguments. Throws OpenCLCompileError naming an option it does not know.
[[nodiscard]] std::vector<std::string> opencl_options_to_cc1(const std::string& options);

/// Compiles OpenCL C source in memory with Clang 15 for the spir64 target at -O0 (no optnone, so
/// our own passes can run), with the default OpenCL header. Throws OpenCLCompileError carrying the
/// diagnostics on any error.
[[nodiscard]] std::unique_ptr<llvm::Module> compile_opencl(
    llvm::LLVMContext& context, const std::string& source, const std::string& options,
    const std::string& file_name = "kernel.cl");

}  // namespace unimem
