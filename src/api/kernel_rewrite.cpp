#include "api/kernel_rewrite.hpp"

#include <cctype>
#include <cstddef>

#include <unimem/errors.hpp>

namespace unimem {

namespace {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Whether source[at, at + word.size()) is `word` as a whole token.
bool word_at(const std::string& s, std::size_t at, const std::string& word) {
  if (s.compare(at, word.size(), word) != 0) return false;
  if (at > 0 && is_ident(s[at - 1])) return false;
  const std::size_t end = at + word.size();
  return end >= s.size() || !is_ident(s[end]);
}

std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) --e;
  return s.substr(b, e - b);
}

bool contains_word(const std::string& s, const std::string& word) {
  for (std::size_t at = s.find(word); at != std::string::npos; at = s.find(word, at + 1)) {
    if (word_at(s, at, word)) return true;
  }
  return false;
}

// Splits a parameter list at its top-level commas.
std::vector<std::string> split_parameters(const std::string& list) {
  std::vector<std::string> out;
  int depth = 0;
  std::string current;
  for (const char c : list) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!trim(current).empty()) out.push_back(trim(current));
  return out;
}

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
    std::size_t k = std::string::npos;
    for (std::size_t i = at; i < s.size(); ++i) {
      if ((s[i] == '_' && word_at(s, i, "__kernel")) || (s[i] == 'k' && word_at(s, i, "kernel"))) {
        k = i;
        break;
      }
    }
    if (k == std::string::npos) break;
    std::size_t v = s.find("void", k);
    while (v != std::string::npos && !word_at(s, v, "void")) v = s.find("void", v + 1);
    if (v == std::string::npos) break;
    const std::size_t open = s.find('(', v);
    if (open == std::string::npos) break;
    const std::string name = trim(s.substr(v + 4, open - v - 4));
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
      std::size_t e = p.size();
      while (e > 0 && !is_ident(p[e - 1])) --e;
      std::size_t b = e;
      while (b > 0 && is_ident(p[b - 1])) --b;
      if (b == e || p.find('[') != std::string::npos) unreadable(name, "parameter '" + p + "'");
      const std::string param = p.substr(b, e - b);
      const std::string type = trim(p.substr(0, b));
      params += type + " " + param + "__um_base, ulong " + param + "__um_offset";
      prologue += " " + type + " " + param + " = (" + type + ")((__global const char*)" + param +
                  "__um_base + " + param + "__um_offset);";
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
