#include "models/core/stats.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <systemc>
#include <vector>

#include "models/core/context.h"

namespace fabricvp::core {

StatBase::StatBase(const sc_core::sc_object* owner, const char* prefix, const char* leaf, const char* unit,
                   const char* desc)
    : Named(owner, prefix, leaf, unit, desc), m_slot(Context::get().stats().add(this)) {}

StatBase::~StatBase() { Context::get().stats().remove(m_slot); }

std::string StatBase::kind() const {
  if (!owner()) return prefix() ? prefix() : "";
  return owner()->kind();  // Module overrides sc_object::kind()
}

uint64_t stats_end_ps() {
  const auto& end = Context::get().stats_end();
  return end ? *end : sc_core::sc_time_stamp().value();
}

void set_stats_end(uint64_t ps) { Context::get().set_stats_end(ps); }

double percent_of_run(uint64_t busy_ps) {
  const uint64_t end = stats_end_ps();
  return end ? 100.0 * static_cast<double>(busy_ps) / static_cast<double>(end) : 0.0;
}

void write_stats_json(std::ostream& out) {
  // Stream the nested object instead of building it: 10^6 statistics would
  // cost far more memory as a JSON tree than as this sorted list. '.' sorts
  // below every character of a name, so sorting full names sorts the tree.
  struct Entry {
    std::string path;
    std::string value;  // JSON text
  };
  std::vector<Entry> entries;
  std::map<std::string, std::pair<std::string, std::string>> schema;
  std::set<const sc_core::sc_object*> owners;
  for (const StatBase* s : Context::get().stats().all()) {
    entries.push_back(Entry{s->name(), s->value().dump()});
    if (s->owner() && owners.insert(s->owner()).second)
      entries.push_back(Entry{std::string(s->owner()->name()) + ".kind", nlohmann::json(s->kind()).dump()});
    schema.emplace(s->kind() + "." + s->leaf(), std::make_pair(s->unit(), s->description()));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });

  auto split = [](const std::string& p) {
    std::vector<std::string> seg;
    size_t start = 0;
    for (size_t dot; (dot = p.find('.', start)) != std::string::npos; start = dot + 1)
      seg.push_back(p.substr(start, dot - start));
    seg.push_back(p.substr(start));
    return seg;
  };
  auto indent = [&](size_t depth) { out << std::string(depth, ' '); };
  auto key = [&](const std::string& k) { out << nlohmann::json(k).dump() << ": "; };
  std::vector<std::string> open;     // object path currently open below the root
  std::vector<bool> first_in{true};  // per open depth: nothing written yet
  out << "{\n";
  for (const Entry& e : entries) {
    std::vector<std::string> seg = split(e.path);
    size_t common = 0;
    while (common < open.size() && common + 1 < seg.size() && open[common] == seg[common]) ++common;
    while (open.size() > common) {  // close objects we leave
      open.pop_back();
      first_in.pop_back();
      out << "\n";
      indent(open.size() + 1);
      out << "}";
    }
    while (open.size() + 1 < seg.size()) {  // open the new ones
      out << (first_in.back() ? "" : ",\n");
      first_in.back() = false;
      indent(open.size() + 1);
      key(seg[open.size()]);
      out << "{\n";
      open.push_back(seg[open.size()]);
      first_in.push_back(true);
    }
    out << (first_in.back() ? "" : ",\n");
    first_in.back() = false;
    indent(open.size() + 1);
    key(seg.back());
    out << e.value;
  }
  while (!open.empty()) {
    open.pop_back();
    first_in.pop_back();
    out << "\n";
    indent(open.size() + 1);
    out << "}";
  }
  out << (entries.empty() ? "" : ",\n") << " \"schema\": {";
  bool first = true;
  for (const auto& [k, ud] : schema) {
    out << (first ? "\n" : ",\n") << "  " << nlohmann::json(k).dump()
        << ": {\"unit\": " << nlohmann::json(ud.first).dump()
        << ", \"description\": " << nlohmann::json(ud.second).dump() << "}";
    first = false;
  }
  out << "\n }\n}\n";
}

}  // namespace fabricvp::core
