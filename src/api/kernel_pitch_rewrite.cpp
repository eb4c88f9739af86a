#include "api/kernel_pitch_rewrite.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>

#include <unimem/errors.hpp>
#include "api/kernel_source_text.hpp"

namespace unimem {

namespace {

using kernel_text::is_ident;
using kernel_text::split_parameters;
using kernel_text::trim;
using kernel_text::word_at;

// The source with the insides of comments, string and character literals blanked (newlines
// kept), so that searches on it see only code; positions are the source's.
std::string code_only(const std::string& s) {
  std::string m = s;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "//") == 0) {
      for (; i < s.size() && s[i] != '\n'; ++i) m[i] = ' ';
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t end = s.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i) {
        if (s[i] != '\n') m[i] = ' ';
      }
    } else if (s[i] == '"' || s[i] == '\'') {
      const char quote = s[i];
      ++i;
      for (; i < s.size() && s[i] != quote && s[i] != '\n'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) m[i++] = ' ';
        m[i] = ' ';
      }
      ++i;
    } else {
      ++i;
    }
  }
  return m;
}

std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    if (!is_ident(s[i])) {
      ++i;
      continue;
    }
    std::size_t e = i;
    while (e < s.size() && is_ident(s[e])) ++e;
    out.push_back(s.substr(i, e - i));
    i = e;
  }
  return out;
}

// The element size of a pointer parameter's type ("global const float*"), 0 when it is not a
// plain scalar or vector type (a struct or typedef: its size is unknown here).
std::uint32_t element_size_of(const std::string& type) {
  static const std::set<std::string> qualifiers = {"global",   "__global", "const",     "__const",
                                                   "volatile", "restrict", "__restrict"};
  std::vector<std::string> base;
  for (const std::string& w : words_of(type)) {
    if (!qualifiers.contains(w)) base.push_back(w);
  }
  std::string name;
  if (base.size() == 2 && base[0] == "unsigned") {
    name = "u" + base[1];
  } else if (base.size() == 1) {
    name = base[0];
  } else {
    return 0;
  }
  static const std::map<std::string, std::uint32_t> scalars = {
      {"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2}, {"half", 2},   {"int", 4},
      {"uint", 4}, {"float", 4}, {"long", 8},  {"ulong", 8},  {"double", 8}, {"size_t", 0}};
  for (const auto& [scalar, size] : scalars) {
    if (name == scalar) return size;
    if (size == 0 || !name.starts_with(scalar)) continue;
    const std::string lanes = name.substr(scalar.size());
    if (lanes == "2") return 2 * size;
    if (lanes == "3" || lanes == "4") return 4 * size;  // 3-vectors take the room of 4
    if (lanes == "8") return 8 * size;
    if (lanes == "16") return 16 * size;
  }
  return 0;
}

// Whether `name` appears in a preprocessor line of the source (a macro could hide a use).
bool in_preprocessor_line(const std::string& code, const std::string& name) {
  bool continued = false;
  std::size_t line = 0;
  while (line < code.size()) {
    std::size_t end = code.find('\n', line);
    if (end == std::string::npos) end = code.size();
    const std::string text = code.substr(line, end - line);
    const std::string t = trim(text);
    const bool directive = continued || t.starts_with("#");
    if (directive) {
      for (std::size_t at = text.find(name); at != std::string::npos;
           at = text.find(name, at + 1)) {
        if (word_at(text, at, name)) return true;
      }
    }
    continued = directive && !t.empty() && t.back() == '\\';
    line = end + 1;
  }
  return false;
}

std::size_t skip_space_forward(const std::string& s, std::size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
  return i;
}

// The position of the last non-space character before i, or npos.
std::size_t skip_space_back(const std::string& s, std::size_t i) {
  while (i > 0) {
    --i;
    if (std::isspace(static_cast<unsigned char>(s[i])) == 0) return i;
  }
  return std::string::npos;
}

// The bracket closing the one at `open` (code: comments and literals blanked), or npos.
std::size_t matching(const std::string& code, std::size_t open, std::size_t end) {
  int depth = 0;
  for (std::size_t i = open; i < end; ++i) {
    const char c = code[i];
    if (c == '[' || c == '(' || c == '{') ++depth;
    if (c == ']' || c == ')' || c == '}') {
      if (--depth == 0) return i;
    }
  }
  return std::string::npos;
}

// Whether every use of `name` in code[begin, end) is `name[...]`: not declared again (a word
// before it other than return/case/else/sizeof), not after & (its address), . or -> (a member of
// that name), and followed by a subscript.
bool only_subscripted(const std::string& code, std::size_t begin, std::size_t end,
                      const std::string& name) {
  bool used = false;
  for (std::size_t at = code.find(name, begin); at != std::string::npos && at < end;
       at = code.find(name, at + 1)) {
    if (!word_at(code, at, name)) continue;
    used = true;
    const std::size_t next = skip_space_forward(code, at + name.size());
    if (next >= end || code[next] != '[') return false;
    const std::size_t prev = skip_space_back(code, at);
    if (prev == std::string::npos) continue;
    const char p = code[prev];
    if (p == '.' || p == '>') return false;
    if (p == '&' && (prev == 0 || code[prev - 1] != '&')) return false;
    if (is_ident(p)) {
      std::size_t b = prev + 1;
      while (b > 0 && is_ident(code[b - 1])) --b;
      const std::string word = code.substr(b, prev + 1 - b);
      if (word != "return" && word != "case" && word != "else" && word != "sizeof") return false;
    }
  }
  return used;
}

[[noreturn]] void unreadable(const std::string& kernel, const std::string& why) {
  std::string m = "cannot rewrite kernel '";
  m += kernel;
  m += "' for packed boxes: ";
  m += why;
  throw PreconditionError(m);
}

std::string pack_macro(const std::string& kernel, std::size_t index) {
  return "UNIMEM_PACK_" + kernel + "_" + std::to_string(index);
}

// code[begin, end) of `source` with every subscript `name[e]` of a packed name (by name: its
// macro) turned into `name[MACRO(e')]`, e' rewritten the same way (nested subscripts).
std::string rewrite_subscripts(const std::string& source, const std::string& code,
                               std::size_t begin, std::size_t end,
                               const std::map<std::string, std::string>& macros) {
  std::string out;
  std::size_t i = begin;
  while (i < end) {
    if (is_ident(code[i]) && (i == 0 || !is_ident(code[i - 1]))) {
      std::size_t e = i;
      while (e < end && is_ident(code[e])) ++e;
      const auto it = macros.find(code.substr(i, e - i));
      if (it != macros.end()) {
        const std::size_t open = skip_space_forward(code, e);
        const std::size_t close = matching(code, open, end);
        if (open >= end || code[open] != '[' || close == std::string::npos) {
          throw PreconditionError("unbalanced subscript of '" + it->first + "'");
        }
        out += source.substr(i, open - i);
        out += "[" + it->second + "(";
        out += rewrite_subscripts(source, code, open + 1, close, macros);
        out += ")]";
        i = close + 1;
        continue;
      }
      out += source.substr(i, e - i);
      i = e;
      continue;
    }
    out += source[i];
    ++i;
  }
  return out;
}

}  // namespace

std::string pitch_macros(const std::string& kernel, std::size_t index, std::uint64_t pitch_elements,
                         std::uint64_t width_elements) {
  const std::string suffix = kernel + "_" + std::to_string(index);
  return "#define UNIMEM_PITCH_" + suffix + " " + std::to_string(pitch_elements) +
         "UL\n#define UNIMEM_WIDTH_" + suffix + " " + std::to_string(width_elements) + "UL\n";
}

PitchedSource rewrite_for_pitches(const std::string& source) {
  PitchedSource out;
  const std::string code = code_only(source);
  std::string result =
      "ulong unimem_pack_index(ulong i, ulong pitch, ulong width, ulong row0, ulong col0) {\n"
      "  return (i / pitch - row0) * width + i % pitch - col0;\n"
      "}\n";
  std::size_t copied = 0;  // source[0, copied) is in result
  std::size_t at = 0;
  while (at < code.size()) {
    const auto header = kernel_text::next_kernel_header(code, at);
    if (!header) break;
    const std::size_t open = header->open;
    const std::string& name = header->name;
    const std::size_t close = matching(code, open, code.size());
    if (close == std::string::npos) unreadable(name, "unbalanced parameters");
    const std::size_t brace = code.find('{', close);
    const std::size_t semi = code.find(';', close);
    if (semi != std::string::npos && (brace == std::string::npos || semi < brace)) {
      at = close + 1;  // a declaration, not a definition
      continue;
    }
    if (brace == std::string::npos) unreadable(name, "no body");
    const std::size_t body_end = matching(code, brace, code.size());
    if (body_end == std::string::npos) unreadable(name, "unbalanced body");
    std::vector<PitchedParameter> parameters;
    std::string params;
    std::string prologue;
    std::string macros;
    std::map<std::string, std::string> packed;  // parameter name -> its subscript macro
    const std::vector<std::string> list = split_parameters(code.substr(open + 1, close - open - 1));
    for (std::size_t index = 0; index < list.size(); ++index) {
      const std::string& p = list[index];
      PitchedParameter param;
      const std::vector<std::string> words = words_of(p);
      param.global_pointer =
          std::any_of(words.begin(), words.end(),
                      [](const std::string& w) { return w == "global" || w == "__global"; }) &&
          p.find('*') != std::string::npos;
      if (!params.empty()) params += ", ";
      if (!param.global_pointer) {
        params += p;
        parameters.push_back(param);
        continue;
      }
      const auto pointer = kernel_text::pointer_parameter(p);
      if (!pointer) unreadable(name, "parameter '" + p + "'");
      kernel_text::append_offset_parameter(*pointer, params, prologue);
      const std::string& pname = pointer->name;
      const std::string& type = pointer->type;
      const std::uint32_t size = std::count(type.begin(), type.end(), '*') == 1
                                     ? element_size_of(type.substr(0, type.find('*')))
                                     : 0;
      if (size != 0 && only_subscripted(code, brace + 1, body_end, pname) &&
          !in_preprocessor_line(code, pname)) {
        param.element_size = size;
        params += ", ulong " + pname + "__um_row0, ulong " + pname + "__um_col0";
        const std::string macro = pack_macro(name, index);
        const std::string suffix = name + "_" + std::to_string(index);
        macros += "#ifdef UNIMEM_PITCH_" + suffix + "\n#define " + macro +
                  "(x) unimem_pack_index((ulong)(x), UNIMEM_PITCH_" + suffix + ", UNIMEM_WIDTH_" +
                  suffix + ", " + pname + "__um_row0, " + pname + "__um_col0)\n#else\n#define " +
                  macro + "(x) (x)\n#endif\n";
        packed.emplace(pname, macro);
      }
      parameters.push_back(param);
    }
    out.parameters[name] = std::move(parameters);
    // The macros go on their own lines before the line the kernel starts on.
    std::size_t line = header->keyword;
    while (line > copied && source[line - 1] != '\n') --line;
    result += source.substr(copied, line - copied);
    if (!macros.empty()) result += (line > 0 && source[line - 1] != '\n' ? "\n" : "") + macros;
    result += source.substr(line, open + 1 - line);
    result += params;
    result += source.substr(close, brace + 1 - close);
    result += prologue;
    try {
      result += rewrite_subscripts(source, code, brace + 1, body_end, packed);
    } catch (const PreconditionError& e) {
      unreadable(name, e.what());
    }
    copied = body_end;
    at = body_end;
  }
  result += source.substr(copied);
  out.source = std::move(result);
  return out;
}

}  // namespace unimem
