#include "analysis/llvm/ir_text.hpp"

#include <llvm/ADT/StringRef.h>
#include <llvm/IR/Value.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <cstddef>

namespace unimem {

std::string builtin_name(llvm::StringRef mangled) {
  if (!mangled.startswith("_Z")) return mangled.str();
  std::size_t i = 2;
  std::size_t len = 0;
  while (i < mangled.size() && std::isdigit(static_cast<unsigned char>(mangled[i]))) {
    len = len * 10 + static_cast<std::size_t>(mangled[i] - '0');
    ++i;
  }
  if (len == 0 || i + len > mangled.size()) return mangled.str();
  return mangled.substr(i, len).str();
}

std::string value_text(const llvm::Value* v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  v->print(os);
  os.flush();
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? s : s.substr(first);
}

}  // namespace unimem
