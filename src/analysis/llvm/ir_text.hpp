#pragma once

// Text of LLVM IR entities for the extraction's messages and builtin lookups.

#include <string>

namespace llvm {
class StringRef;
class Value;
}  // namespace llvm

namespace unimem {

/// The identifier inside an Itanium-mangled builtin name: "_Z13get_global_idj" -> "get_global_id".
[[nodiscard]] std::string builtin_name(llvm::StringRef mangled);

/// v as LLVM prints it, without leading blanks ("%5 = load i32, ...").
[[nodiscard]] std::string value_text(const llvm::Value* v);

}  // namespace unimem
