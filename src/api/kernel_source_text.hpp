#pragma once

// Small text helpers shared by the two kernel rewrites (kernel_rewrite.*: buffer + byte offset;
// kernel_pitch_rewrite.*: subscripts into packed rows). They read OpenCL C as text, token by
// token, without a parser.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace unimem::kernel_text {

/// A character of an identifier (letter, digit, underscore).
[[nodiscard]] bool is_ident(char c);
/// Whether s[at, at + word.size()) is `word` as a whole token.
[[nodiscard]] bool word_at(const std::string& s, std::size_t at, const std::string& word);
/// Whether `word` occurs in s as a whole token.
[[nodiscard]] bool contains_word(const std::string& s, const std::string& word);
/// s without leading and trailing white space.
[[nodiscard]] std::string trim(const std::string& s);
/// A parameter list split at its top-level commas, each part trimmed.
[[nodiscard]] std::vector<std::string> split_parameters(const std::string& list);

/// Where the next kernel's header at or after `at` in s is: its `kernel` / `__kernel` keyword,
/// the `(` of its parameter list and its name (the text between `void` and `(`, trimmed);
/// nullopt when there is none.
struct KernelHeader {
  std::size_t keyword = 0;
  std::size_t open = 0;
  std::string name;
};
[[nodiscard]] std::optional<KernelHeader> next_kernel_header(const std::string& s, std::size_t at);

/// A pointer parameter ("global const float* a"): its type ("global const float*") and name.
struct PointerParameter {
  std::string type;
  std::string name;
};
/// The type and name of pointer parameter p; nullopt when no name can be read (none, or an array
/// declarator).
[[nodiscard]] std::optional<PointerParameter> pointer_parameter(const std::string& p);
/// Appends p rewritten to a buffer and a byte offset ("T* a__um_base, ulong a__um_offset") to
/// params, and the declaration of `a` as base + offset bytes to prologue (the start of the body).
void append_offset_parameter(const PointerParameter& p, std::string& params, std::string& prologue);

}  // namespace unimem::kernel_text
