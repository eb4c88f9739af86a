#include "api/kernel_source_text.hpp"

#include <cctype>

namespace unimem::kernel_text {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool word_at(const std::string& s, std::size_t at, const std::string& word) {
  if (s.compare(at, word.size(), word) != 0) return false;
  if (at > 0 && is_ident(s[at - 1])) return false;
  const std::size_t end = at + word.size();
  return end >= s.size() || !is_ident(s[end]);
}

bool contains_word(const std::string& s, const std::string& word) {
  for (std::size_t at = s.find(word); at != std::string::npos; at = s.find(word, at + 1)) {
    if (word_at(s, at, word)) return true;
  }
  return false;
}

std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])) != 0) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])) != 0) --e;
  return s.substr(b, e - b);
}

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

std::optional<KernelHeader> next_kernel_header(const std::string& s, std::size_t at) {
  std::size_t k = std::string::npos;
  for (std::size_t i = at; i < s.size(); ++i) {
    if ((s[i] == '_' && word_at(s, i, "__kernel")) || (s[i] == 'k' && word_at(s, i, "kernel"))) {
      k = i;
      break;
    }
  }
  if (k == std::string::npos) return std::nullopt;
  std::size_t v = s.find("void", k);
  while (v != std::string::npos && !word_at(s, v, "void")) v = s.find("void", v + 1);
  if (v == std::string::npos) return std::nullopt;
  const std::size_t open = s.find('(', v);
  if (open == std::string::npos) return std::nullopt;
  return KernelHeader{k, open, trim(s.substr(v + 4, open - v - 4))};
}

std::optional<PointerParameter> pointer_parameter(const std::string& p) {
  std::size_t e = p.size();
  while (e > 0 && !is_ident(p[e - 1])) --e;
  std::size_t b = e;
  while (b > 0 && is_ident(p[b - 1])) --b;
  if (b == e || p.find('[') != std::string::npos) return std::nullopt;
  return PointerParameter{trim(p.substr(0, b)), p.substr(b, e - b)};
}

void append_offset_parameter(const PointerParameter& p, std::string& params,
                             std::string& prologue) {
  params += p.type + " " + p.name + "__um_base, ulong " + p.name + "__um_offset";
  prologue += " " + p.type + " " + p.name + " = (" + p.type + ")((__global const char*)" + p.name +
              "__um_base + " + p.name + "__um_offset);";
}

}  // namespace unimem::kernel_text
