#include "api/kernel_rewrite.hpp"

#include <cctype>
#include <cstddef>

#include <unimem/errors.hpp>
#include "api/kernel_source_text.hpp"

namespace unimem {

namespace {

using kernel_text::contains_word;
using kernel_text::split_parameters;
using kernel_text::trim;

[[noreturn]] void unreadable(const std::string& kernel, const std::string& why) {
  std::string m = "cannot rewrite kernel '";
  m += kernel;
  m += "' to take buffer + offset: ";
  m += why;
  throw PreconditionError(m);
}

}  // namespace

RewrittenSource rewrite_for_offsets(const std::string& source) {
  RewrittenSource out;
  std::string s = source;
  std::size_t at = 0;
  while (at < s.size()) {
    const auto header = kernel_text::next_kernel_header(s, at);
    if (!header) break;
    const std::size_t open = header->open;
    const std::string& name = header->name;
    int depth = 0;
    std::size_t close = open;
    for (; close < s.size(); ++close) {
      if (s[close] == '(') ++depth;
      if (s[close] == ')' && --depth == 0) break;
    }
    const std::size_t brace = s.find('{', close);
    if (close >= s.size() || brace == std::string::npos) unreadable(name, "unbalanced parameters");
    if (trim(s.substr(close + 1, brace - close - 1)).find(';') != std::string::npos) {
      at = close + 1;  // a declaration, not a definition
      continue;
    }
    std::vector<bool> rewritten;
    std::string params;
    std::string prologue;
    for (const std::string& p : split_parameters(s.substr(open + 1, close - open - 1))) {
      const bool global =
          (contains_word(p, "__global") || contains_word(p, "global")) && p.find('*') != p.npos;
      if (!params.empty()) params += ", ";
      rewritten.push_back(global);
      if (!global) {
        params += p;
        continue;
      }
      const auto pointer = kernel_text::pointer_parameter(p);
      if (!pointer) unreadable(name, "parameter '" + p + "'");
      kernel_text::append_offset_parameter(*pointer, params, prologue);
    }
    out.global_pointers[name] = rewritten;
    const std::string head = s.substr(0, open + 1) + params + s.substr(close, brace + 1 - close);
    s = head + prologue + s.substr(brace + 1);
    at = head.size() + prologue.size();
  }
  out.source = std::move(s);
  return out;
}

}  // namespace unimem
