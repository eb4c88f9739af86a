#pragma once

// The global-memory references of a kernel (loads, stores, atomics, memcpy / memset, vloadN /
// vstoreN, async copies, calls that take a buffer): each one recorded on the kernel arguments it
// may point into as access pieces, its byte offset from the argument in affine pieces under the
// DNF of its guards, classified after DSOM Table 2; or as an "other" access of the whole buffer.

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/access_class.hpp"
#include "analysis/llvm/kernel_scope.hpp"
#include "analysis/piecewise_affine.hpp"

namespace llvm {
class Argument;
class CallInst;
class Instruction;
class Type;
class Value;
}  // namespace llvm

namespace unimem {

class GuardConditions;
class ScevToAffine;

class MemoryReferences {
 public:
  MemoryReferences(KernelScope& scope, ScevToAffine& subscripts, GuardConditions& conditions)
      : scope_(scope), subscripts_(subscripts), conditions_(conditions) {}

  /// Records the global-memory accesses of inst, if any, in scope.info (arguments and stats).
  void visit(llvm::Instruction& inst);

 private:
  std::uint32_t size_of(llvm::Type* t) const;
  std::uint32_t pointee_size(const llvm::Value* ptr, std::uint32_t fallback) const;
  void visit_call(llvm::CallInst& call);
  void record_vector(llvm::Instruction& inst, llvm::Value* ptr, llvm::Value* offset,
                     std::uint32_t n, std::uint32_t elem, bool is_read, const std::string& what);
  void record(llvm::Instruction& inst, llvm::Value* ptr, std::uint32_t width, bool is_read,
              bool is_write, bool atomic, llvm::Value* extent, const std::string& what);
  /// The kernel arguments ptr may point into; an empty result means an unknown origin.
  std::vector<const llvm::Argument*> targets(llvm::Value* ptr);
  void record_unknown(llvm::Instruction& inst, llvm::Value* ptr, bool is_write, AccessClass cls,
                      const std::string& reason);
  void record_with_extra(llvm::Instruction& inst, llvm::Value* ptr, std::uint32_t width,
                         bool is_read, bool is_write, bool atomic, const PiecewiseAffine& extra,
                         const std::string& what);

  KernelScope& scope_;
  ScevToAffine& subscripts_;
  GuardConditions& conditions_;
};

}  // namespace unimem
