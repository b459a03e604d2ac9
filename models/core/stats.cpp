#include "models/core/stats.h"

#include <systemc>

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

nlohmann::json stats_json() {
  nlohmann::json root = nlohmann::json::object();
  nlohmann::json schema = nlohmann::json::object();
  for (const StatBase* s : Context::get().stats().all()) {
    std::string full = s->name();
    nlohmann::json* node = &root;
    size_t start = 0;
    while (true) {
      size_t dot = full.find('.', start);
      if (dot == std::string::npos) break;
      node = &(*node)[full.substr(start, dot - start)];
      start = dot + 1;
    }
    (*node)[full.substr(start)] = s->value();
    if (s->owner()) {
      // Mark the owner's object with its kind.
      nlohmann::json* owner_node = &root;
      std::string oname = s->owner()->name();
      size_t p = 0;
      while (true) {
        size_t dot = oname.find('.', p);
        owner_node = &(*owner_node)[oname.substr(p, dot == std::string::npos ? std::string::npos : dot - p)];
        if (dot == std::string::npos) break;
        p = dot + 1;
      }
      (*owner_node)["kind"] = s->kind();
    }
    std::string key = s->kind() + "." + s->leaf();
    if (!schema.contains(key)) schema[key] = {{"unit", s->unit()}, {"description", s->description()}};
  }
  root["schema"] = std::move(schema);
  return root;
}

}  // namespace fabricvp::core
