#include <unimem/access_descriptor.hpp>

#include <algorithm>

namespace unimem {

const char* to_string(AccessMode mode) {
  switch (mode) {
    case AccessMode::read:
      return "read";
    case AccessMode::write:
      return "write";
    case AccessMode::read_write:
      return "read-write";
    case AccessMode::may_write:
      return "may-write";
  }
  return "?";
}

namespace {
std::string var_name(const IndexVar& v) {
  return (v.kind == IndexVar::Kind::global_id ? "g" : "i") + std::to_string(v.index);
}
}  // namespace

std::string AffinePiece::to_string() const {
  std::string s = std::to_string(element_size) + "*(" + std::to_string(constant);
  for (const SubscriptTerm& t : terms) {
    s += (t.coefficient < 0 ? " - " : " + ") +
         std::to_string(t.coefficient < 0 ? -t.coefficient : t.coefficient) + "*" + var_name(t.var);
  }
  s += ")";
  for (const VarBound& b : bounds) {
    s += ", " + var_name(b.var) + " in [" + std::to_string(b.lower) + ", " +
         std::to_string(b.upper) + "]";
  }
  return s;
}

AffinePiece row_major_piece(std::uint64_t element_size, std::vector<std::int64_t> pitches,
                            std::int64_t constant, std::vector<VarBound> bounds) {
  AffinePiece p;
  p.element_size = element_size;
  p.constant = constant;
  for (std::uint32_t d = 0; d < pitches.size(); ++d) {
    if (pitches[d] != 0) p.terms.push_back({IndexVar::global_id(d), pitches[d]});
  }
  p.bounds = std::move(bounds);
  return p;
}

KernelAccess override_accesses(const KernelAccess& base, const KernelAccess& overrides) {
  KernelAccess out;
  for (const AccessDescriptor& d : base) {
    const bool overridden = std::any_of(overrides.begin(), overrides.end(),
                                        [&](const AccessDescriptor& o) { return o.arg == d.arg; });
    if (!overridden) out.push_back(d);
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

}  // namespace unimem
