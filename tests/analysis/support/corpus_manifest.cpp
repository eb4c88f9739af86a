// Compiled with -fno-rtti: it uses llvm::json from libLLVM-15, which is built without RTTI.
#include "analysis/support/corpus_manifest.hpp"

#include <llvm/Support/Error.h>
#include <llvm/Support/JSON.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace unimem::testing {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::runtime_error("corpus manifest: " + where + ": " + what);
}

std::vector<std::size_t> sizes(const llvm::json::Object& object, llvm::StringRef key,
                               const std::string& where) {
  std::vector<std::size_t> out;
  const llvm::json::Array* list = object.getArray(key);
  if (list == nullptr) return out;
  for (const llvm::json::Value& item : *list) {
    const auto value = item.getAsInteger();
    if (!value || *value < 0) bad(where, "'" + key.str() + "' must hold non-negative integers");
    out.push_back(static_cast<std::size_t>(*value));
  }
  return out;
}

std::string number_text(const llvm::json::Value& value, const std::string& where) {
  if (const auto integer = value.getAsInteger()) return std::to_string(*integer);
  if (const auto number = value.getAsNumber()) {
    std::ostringstream text;
    text.precision(17);
    text << *number;
    return text.str();
  }
  if (const auto text = value.getAsString()) return text->str();
  bad(where, "scalar values must be numbers");
}

// Merges the maps of `object` (args, buffers, local, fill) into `inputs`.
void read_inputs(const llvm::json::Object& object, KernelInputs& inputs, const std::string& where) {
  if (const llvm::json::Object* args = object.getObject("args")) {
    for (const auto& [name, value] : *args) {
      inputs.scalars[name.str()] = number_text(value, where + " arg " + name.str());
    }
  }
  if (const llvm::json::Object* buffers = object.getObject("buffers")) {
    for (const auto& [name, value] : *buffers) {
      const auto bytes = value.getAsInteger();
      if (!bytes || *bytes <= 0) bad(where, "buffer '" + name.str() + "' needs a positive size");
      inputs.buffer_bytes[name.str()] = static_cast<std::uint64_t>(*bytes);
    }
  }
  if (const llvm::json::Object* local = object.getObject("local_memory")) {
    for (const auto& [name, value] : *local) {
      const auto bytes = value.getAsInteger();
      if (!bytes || *bytes <= 0) bad(where, "local '" + name.str() + "' needs a positive size");
      inputs.local_bytes[name.str()] = static_cast<std::uint64_t>(*bytes);
    }
  }
  if (const llvm::json::Object* fills = object.getObject("fill")) {
    for (const auto& [name, value] : *fills) {
      const llvm::json::Object* spec = value.getAsObject();
      if (spec == nullptr) bad(where, "fill of '" + name.str() + "' must be an object");
      FillSpec fill;
      const auto kind = spec->getString("kind");
      const std::string kind_name = kind ? kind->str() : "random";
      if (kind_name == "random") {
        fill.kind = FillSpec::Kind::random;
      } else if (kind_name == "iota") {
        fill.kind = FillSpec::Kind::iota;
      } else if (kind_name == "permutation") {
        fill.kind = FillSpec::Kind::permutation;
      } else if (kind_name == "constant") {
        fill.kind = FillSpec::Kind::constant;
      } else {
        bad(where, "fill kind '" + kind_name + "' of '" + name.str() + "' is unknown");
      }
      const auto lo = spec->getNumber("lo");
      const auto hi = spec->getNumber("hi");
      if (const auto step = spec->getNumber("step")) fill.step = *step;
      if (lo) fill.lo = *lo;
      if (hi) fill.hi = *hi;
      fill.has_range = lo.has_value() || hi.has_value();
      inputs.fills[name.str()] = fill;
    }
  }
  if (const auto seed = object.getInteger("seed")) inputs.seed = static_cast<std::uint64_t>(*seed);
}

GroupBox read_partition(const llvm::json::Value& value, const LaunchConfig& launch,
                        const std::string& where) {
  const llvm::json::Array* ranges = value.getAsArray();
  if (ranges == nullptr || ranges->size() > launch.global.size()) {
    bad(where, "a partition is a list of [begin, end] group ranges, one per dimension");
  }
  GroupBox box = GroupBox::all(launch);
  const auto groups = launch.group_count();
  for (std::size_t d = 0; d < ranges->size(); ++d) {
    const llvm::json::Array* range = (*ranges)[d].getAsArray();
    if (range == nullptr || range->size() != 2) bad(where, "a group range is [begin, end]");
    const auto begin = (*range)[0].getAsInteger();
    const auto end = (*range)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end <= *begin ||
        static_cast<std::uint64_t>(*end) > groups[d]) {
      bad(where, "group range [" + std::to_string(begin.value_or(-1)) + ", " +
                     std::to_string(end.value_or(-1)) + ") is empty or outside the " +
                     std::to_string(groups[d]) + " groups of dimension " + std::to_string(d));
    }
    box.begin[d] = static_cast<std::uint64_t>(*begin);
    box.end[d] = static_cast<std::uint64_t>(*end);
  }
  return box;
}

}  // namespace

std::string Corpus::read_source(const CorpusKernel& kernel) const {
  std::ifstream in(directory / kernel.file, std::ios::binary);
  if (!in) throw std::runtime_error("corpus: cannot read " + (directory / kernel.file).string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Corpus load_corpus(const std::filesystem::path& manifest) {
  std::ifstream in(manifest, std::ios::binary);
  if (!in) throw std::runtime_error("corpus manifest: cannot read " + manifest.string());
  std::ostringstream text;
  text << in.rdbuf();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text.str());
  if (!parsed) bad(manifest.string(), "invalid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object* root = parsed->getAsObject();
  const llvm::json::Array* kernels = root != nullptr ? root->getArray("kernels") : nullptr;
  if (kernels == nullptr) bad(manifest.string(), "expected {\"kernels\": [...]}");

  Corpus corpus;
  corpus.directory = manifest.parent_path();
  std::set<std::string> ids;
  for (const llvm::json::Value& item : *kernels) {
    const llvm::json::Object* object = item.getAsObject();
    if (object == nullptr) bad(manifest.string(), "every kernel entry must be an object");
    CorpusKernel kernel;
    const auto file = object->getString("file");
    const auto name = object->getString("kernel");
    if (!file || !name) bad(manifest.string(), "a kernel entry lacks 'file' or 'kernel'");
    kernel.file = file->str();
    kernel.kernel = name->str();
    kernel.id = object->getString("id").value_or(*name).str();
    kernel.kernel_class = object->getString("class").value_or("other").str();
    kernel.known_issue = object->getString("known_issue").value_or("").str();
    if (const llvm::json::Value* exact = object->get("exact")) {
      const auto flag = exact->getAsBoolean();
      if (!flag) bad("kernel " + kernel.id, "'exact' must be true or false");
      kernel.exact = *flag;
    }
    const std::string where = "kernel " + kernel.id;
    if (!ids.insert(kernel.id).second) bad(where, "duplicate id");
    if (const llvm::json::Array* options = object->getArray("options")) {
      for (const llvm::json::Value& option : *options) {
        const auto text_option = option.getAsString();
        if (!text_option) bad(where, "options must be strings");
        kernel.options.push_back(text_option->str());
      }
    }
    if (const llvm::json::Array* dependent = object->getArray("data_dependent")) {
      for (const llvm::json::Value& buffer : *dependent) {
        const auto buffer_name = buffer.getAsString();
        if (!buffer_name) bad(where, "data_dependent must list buffer names");
        kernel.data_dependent.insert(buffer_name->str());
      }
    }
    if (const llvm::json::Array* conditional = object->getArray("conditional_writes")) {
      for (const llvm::json::Value& buffer : *conditional) {
        const auto buffer_name = buffer.getAsString();
        if (!buffer_name) bad(where, "conditional_writes must list buffer names");
        kernel.conditional_writes.insert(buffer_name->str());
      }
    }
    KernelInputs defaults;
    read_inputs(*object, defaults, where);
    const llvm::json::Array* configs = object->getArray("configs");
    if (configs == nullptr || configs->empty()) bad(where, "needs at least one entry in 'configs'");
    for (std::size_t c = 0; c < configs->size(); ++c) {
      const llvm::json::Object* config_object = (*configs)[c].getAsObject();
      const std::string config_where = where + " config " + std::to_string(c);
      if (config_object == nullptr) bad(config_where, "must be an object");
      CorpusConfig config;
      config.launch.global = sizes(*config_object, "global", config_where);
      config.launch.local = sizes(*config_object, "local", config_where);
      config.launch.offset = sizes(*config_object, "offset", config_where);
      const std::size_t dims = config.launch.global.size();
      if (dims < 1 || dims > 3 || config.launch.local.size() != dims ||
          (!config.launch.offset.empty() && config.launch.offset.size() != dims)) {
        bad(config_where, "global, local (and offset) need the same 1 to 3 entries");
      }
      for (std::size_t d = 0; d < dims; ++d) {
        if (config.launch.local[d] == 0 || config.launch.global[d] % config.launch.local[d] != 0) {
          bad(config_where, "global must be a positive multiple of local in every dimension");
        }
      }
      config.inputs = defaults;
      read_inputs(*config_object, config.inputs, config_where);
      if (const llvm::json::Array* partitions = config_object->getArray("partitions")) {
        for (const llvm::json::Value& partition : *partitions) {
          config.partitions.push_back(read_partition(partition, config.launch, config_where));
        }
      }
      kernel.configs.push_back(std::move(config));
    }
    corpus.kernels.push_back(std::move(kernel));
  }
  return corpus;
}

}  // namespace unimem::testing
