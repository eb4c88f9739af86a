#include "platform/separate_compilation.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace unimem::platform {

namespace fs = std::filesystem;

namespace {

// Build options split at white space; "-D NAME" / "-I dir" written apart become one token.
std::vector<std::string> option_tokens(const std::string& options) {
  std::vector<std::string> tokens;
  std::istringstream in(options);
  for (std::string t; in >> t;) {
    if ((t == "-D" || t == "-U" || t == "-I") && in >> std::ws && !in.eof()) {
      std::string value;
      in >> value;
      t += value;
    }
    tokens.push_back(t);
  }
  return tokens;
}

// `#include "name"` or `#include <name>` naming a file of `dir`: the line with its absolute path.
std::string absolute_includes(const std::string& source, const fs::path& dir) {
  std::string out;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    std::size_t at = line.find_first_not_of(" \t");
    if (at != std::string::npos && line[at] == '#') {
      std::size_t word = line.find_first_not_of(" \t", at + 1);
      if (word != std::string::npos && line.compare(word, 7, "include") == 0) {
        const std::size_t open = line.find_first_of("<\"", word + 7);
        const std::size_t close =
            open == std::string::npos ? open : line.find(line[open] == '<' ? '>' : '"', open + 1);
        if (close != std::string::npos) {
          const fs::path file = dir / line.substr(open + 1, close - open - 1);
          std::error_code error;
          if (fs::is_regular_file(file, error)) {
            line = line.substr(0, open) + "\"" + file.string() + "\"" + line.substr(close + 1);
          }
        }
      }
    }
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

HeaderDirectory::HeaderDirectory(const std::vector<std::pair<std::string, std::string>>& headers) {
  static std::atomic<unsigned> count{0};
  path_ = fs::temp_directory_path() /
          ("unimem-headers-" + std::to_string(::getpid()) + "-" + std::to_string(count++));
  fs::remove_all(path_);
  fs::create_directories(path_);
  for (const auto& [name, text] : headers) {
    const fs::path relative(name);
    bool climbs = false;
    for (const fs::path& part : relative) climbs = climbs || part == "..";
    if (name.empty() || relative.is_absolute() || climbs) {
      fs::remove_all(path_);
      std::string message = "input header name '";
      message += name;
      message += "' must be a relative path that stays below its directory";
      throw std::invalid_argument(message);
    }
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
  }
}

HeaderDirectory::~HeaderDirectory() {
  std::error_code error;
  fs::remove_all(path_, error);
}

CompiledUnit compile_unit(const std::string& source, const std::string& options,
                          std::shared_ptr<const HeaderDirectory> headers) {
  CompiledUnit unit;
  std::string before, after;
  for (const std::string& t : option_tokens(options)) {
    if (t.rfind("-D", 0) == 0 && t.size() > 2) {
      const std::string definition = t.substr(2);
      const std::size_t eq = definition.find('=');
      const std::string name = definition.substr(0, eq);
      before += "#define " + name + " " +
                (eq == std::string::npos ? "1" : definition.substr(eq + 1)) + "\n";
      after += "#undef " + name + "\n";
    } else if (t.rfind("-U", 0) == 0 && t.size() > 2) {
      before += "#undef " + t.substr(2) + "\n";
    } else {
      unit.options += (unit.options.empty() ? "" : " ") + t;
    }
  }
  // Macros the unit's own text defines end with it (those of shared headers stay: their include
  // guards keep a later unit from defining them again).
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string hash, word, name;
    if (!(in >> hash)) continue;
    if (hash == "#") {
      in >> word;
    } else if (hash.rfind('#', 0) == 0) {
      word = hash.substr(1);
    }
    if (word != "define" || !(in >> name)) continue;
    name = name.substr(0, name.find('('));
    after += "#undef " + name + "\n";
  }
  std::string body = source;
  if (headers) {
    body = absolute_includes(source, headers->path());
    unit.options += (unit.options.empty() ? "-I" : " -I") + headers->path().string();
  }
  unit.text = before + "#line 1\n" + body + "\n" + after;
  unit.headers = std::move(headers);
  return unit;
}

cl_int vendor_compile(const std::vector<cl_device_id>& devices, const std::string& text,
                      const std::string& options, std::string& log) {
  std::vector<std::pair<cl_platform_id, std::vector<cl_device_id>>> by_platform;
  for (cl_device_id d : devices) {
    cl_platform_id platform = nullptr;
    clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
    auto it = std::find_if(by_platform.begin(), by_platform.end(),
                           [&](const auto& p) { return p.first == platform; });
    if (it == by_platform.end()) {
      by_platform.emplace_back(platform, std::vector<cl_device_id>{});
      it = std::prev(by_platform.end());
    }
    if (std::find(it->second.begin(), it->second.end(), d) == it->second.end()) {
      it->second.push_back(d);
    }
  }
  for (const auto& [platform, list] : by_platform) {
    cl_int status = CL_SUCCESS;
    const auto n = static_cast<cl_uint>(list.size());
    cl_context context = clCreateContext(nullptr, n, list.data(), nullptr, nullptr, &status);
    if (context == nullptr) return status;
    const char* strings[] = {text.c_str()};
    cl_program program = clCreateProgramWithSource(context, 1, strings, nullptr, &status);
    if (program != nullptr) {
      status = clCompileProgram(program, n, list.data(), options.c_str(), 0, nullptr, nullptr,
                                nullptr, nullptr);
      for (cl_device_id d : list) {
        std::size_t size = 0;
        clGetProgramBuildInfo(program, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
        std::string mine(size, '\0');
        clGetProgramBuildInfo(program, d, CL_PROGRAM_BUILD_LOG, size, mine.data(), nullptr);
        mine.resize(std::strlen(mine.c_str()));
        if (!mine.empty() && log.find(mine) == std::string::npos) log += mine;
      }
      clReleaseProgram(program);
    }
    clReleaseContext(context);
    if (status != CL_SUCCESS) return status;
  }
  return CL_SUCCESS;
}

std::string link_options(const std::string& options,
                         const std::vector<const CompiledUnit*>& units) {
  std::vector<std::string> tokens = option_tokens(options);
  std::string out = options;
  for (const CompiledUnit* unit : units) {
    for (const std::string& t : option_tokens(unit->options)) {
      if (std::find(tokens.begin(), tokens.end(), t) != tokens.end()) continue;
      tokens.push_back(t);
      out += (out.empty() ? "" : " ") + t;
    }
  }
  return out;
}

}  // namespace unimem::platform
