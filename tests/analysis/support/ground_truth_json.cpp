// Compiled with -fno-rtti: it uses llvm::json from libLLVM-15, which is built without RTTI.
#include "analysis/support/ground_truth_json.hpp"

#include <llvm/Support/Error.h>
#include <llvm/Support/JSON.h>

#include <stdexcept>

namespace unimem::testing {
namespace {

[[noreturn]] void malformed(const std::string& what) {
  throw std::runtime_error("analysis JSON: " + what);
}

IntervalSet parse_intervals(const llvm::json::Object& object, llvm::StringRef key,
                            const std::string& where) {
  const llvm::json::Array* list = object.getArray(key);
  if (list == nullptr) malformed(where + ": missing array '" + key.str() + "'");
  std::vector<Interval> intervals;
  for (const llvm::json::Value& item : *list) {
    const llvm::json::Array* pair = item.getAsArray();
    if (pair == nullptr || pair->size() != 2) {
      malformed(where + ": '" + key.str() + "' entries must be [begin, end]");
    }
    const auto begin = (*pair)[0].getAsInteger();
    const auto end = (*pair)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end < *begin) {
      malformed(where + ": '" + key.str() + "' holds an invalid interval");
    }
    intervals.emplace_back(static_cast<std::uint64_t>(*begin), static_cast<std::uint64_t>(*end));
  }
  return IntervalSet::from_unsorted(std::move(intervals));
}

bool parse_bool(const llvm::json::Object& object, llvm::StringRef key, const std::string& where) {
  const auto value = object.getBoolean(key);
  if (!value) malformed(where + ": missing boolean '" + key.str() + "'");
  return *value;
}

}  // namespace

const AnalysisArg* AnalysisReport::find_arg(std::string_view name) const {
  for (const AnalysisArg& arg : args) {
    if (arg.name == name) return &arg;
  }
  return nullptr;
}

AnalysisReport parse_analysis_json(std::string_view text) {
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(llvm::StringRef(text.data(), text.size()));
  if (!parsed) malformed("not valid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object* root = parsed->getAsObject();
  if (root == nullptr) malformed("the top level is not an object");
  AnalysisReport report;
  const auto kernel = root->getString("kernel");
  if (!kernel) malformed("missing string 'kernel'");
  report.kernel = kernel->str();
  report.splittable = parse_bool(*root, "splittable", "kernel " + report.kernel);
  const llvm::json::Array* args = root->getArray("args");
  if (args == nullptr) malformed("missing array 'args'");
  for (const llvm::json::Value& item : *args) {
    const llvm::json::Object* object = item.getAsObject();
    if (object == nullptr) malformed("an 'args' entry is not an object");
    AnalysisArg arg;
    const auto index = object->getInteger("index");
    const auto name = object->getString("name");
    if (!index || !name) malformed("an 'args' entry lacks 'index' or 'name'");
    arg.index = static_cast<std::uint64_t>(*index);
    arg.name = name->str();
    const std::string where = "argument '" + arg.name + "'";
    arg.read = parse_intervals(*object, "read", where);
    arg.write = parse_intervals(*object, "write", where);
    arg.read_exact = parse_bool(*object, "read_exact", where);
    arg.write_exact = parse_bool(*object, "write_exact", where);
    arg.write_conditional = parse_bool(*object, "write_conditional", where);
    report.args.push_back(std::move(arg));
  }
  return report;
}

std::string intervals_json(const IntervalSet& set) {
  std::string out = "[";
  for (const Interval& interval : set) {
    if (out.size() > 1) out += ",";
    out += "[" + std::to_string(interval.begin) + "," + std::to_string(interval.end) + "]";
  }
  return out + "]";
}

std::string ground_truth_json(const KernelSignature& signature,
                              const std::vector<ParamAccess>& accesses) {
  std::string out = "{\"kernel\": \"" + signature.name + "\", \"args\": [";
  bool first = true;
  for (std::size_t i = 0; i < signature.params.size(); ++i) {
    const KernelParam& param = signature.params[i];
    if (param.kind != ParamKind::global_buffer && param.kind != ParamKind::constant_buffer) {
      continue;
    }
    if (!first) out += ", ";
    first = false;
    out += "{\"index\": " + std::to_string(i) + ", \"name\": \"" + param.name +
           "\", \"read\": " + intervals_json(accesses.at(i).read) +
           ", \"write\": " + intervals_json(accesses.at(i).write) +
           ", \"read_exact\": true, \"write_exact\": true, \"write_conditional\": false}";
  }
  return out + "]}";
}

}  // namespace unimem::testing
