// Typed, defaulted, documented parameters.
//
// A parameter is declared as a member of the object it configures:
//   core::Param<uint32_t> send_latency{this, "send_latency", 205, "cycles", "SEND issue to serializer"};
// Its configuration key is the owner's hierarchical name plus the leaf
// ("sys.node0.tsp3.send_latency"). The value is looked up in the configuration
// when the parameter is constructed; a value of the wrong type or out of range
// is a ConfigError that names the file, line and key.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/named.h"

namespace fabricvp::core {

class ParamBase : public Named {
 public:
  ParamBase(const sc_core::sc_object* owner, const char* prefix, const char* leaf, const char* unit, const char* desc);
  virtual ~ParamBase();
  ParamBase(const ParamBase&) = delete;
  ParamBase& operator=(const ParamBase&) = delete;

  /// Entry that set the value, or nullptr when the default is in effect.
  const ConfigEntry* source() const { return m_source; }
  virtual std::string value_str() const = 0;
  virtual std::string default_str() const = 0;
  virtual const char* type_name() const = 0;

 protected:
  /// Find the configuration entry for this parameter (marks it used).
  const ConfigEntry* lookup();
  [[noreturn]] void fail(const ConfigEntry& e, const std::string& why) const;

 private:
  const ConfigEntry* m_source = nullptr;
  size_t m_slot;
};

namespace detail {
bool parse_value(const std::string& text, bool& out);
bool parse_value(const std::string& text, int64_t& out);
bool parse_value(const std::string& text, uint64_t& out);
bool parse_value(const std::string& text, uint32_t& out);
bool parse_value(const std::string& text, int& out);
bool parse_value(const std::string& text, double& out);
bool parse_value(const std::string& text, std::string& out);
std::string to_text(bool v);
std::string to_text(int64_t v);
std::string to_text(uint64_t v);
std::string to_text(uint32_t v);
std::string to_text(int v);
std::string to_text(double v);
std::string to_text(const std::string& v);
template <typename T>
const char* type_name();
}  // namespace detail

template <typename T>
class Param : public ParamBase {
 public:
  /// Parameter of a module (key = module name + "." + leaf).
  Param(const sc_core::sc_object* owner, const char* leaf, T def, const char* unit, const char* desc)
      : ParamBase(owner, nullptr, leaf, unit, desc), m_value(def), m_default(def) {
    init();
  }
  /// Parameter of a non-module group such as "sched" (key = prefix + "." + leaf).
  Param(const char* prefix, const char* leaf, T def, const char* unit, const char* desc)
      : ParamBase(nullptr, prefix, leaf, unit, desc), m_value(def), m_default(def) {
    init();
  }
  /// Numeric parameter with an inclusive range.
  Param(const sc_core::sc_object* owner, const char* leaf, T def, const char* unit, const char* desc, T lo, T hi)
      : ParamBase(owner, nullptr, leaf, unit, desc), m_value(def), m_default(def) {
    init();
    check_range(lo, hi);
  }
  Param(const char* prefix, const char* leaf, T def, const char* unit, const char* desc, T lo, T hi)
      : ParamBase(nullptr, prefix, leaf, unit, desc), m_value(def), m_default(def) {
    init();
    check_range(lo, hi);
  }
  /// String parameter restricted to a set of choices.
  Param(const sc_core::sc_object* owner, const char* leaf, T def, const char* unit, const char* desc,
        std::initializer_list<const char*> choices)
      : ParamBase(owner, nullptr, leaf, unit, desc), m_value(def), m_default(def) {
    init();
    check_choices(choices);
  }
  Param(const char* prefix, const char* leaf, T def, const char* unit, const char* desc,
        std::initializer_list<const char*> choices)
      : ParamBase(nullptr, prefix, leaf, unit, desc), m_value(def), m_default(def) {
    init();
    check_choices(choices);
  }

  const T& get() const { return m_value; }
  operator const T&() const { return m_value; }
  std::string value_str() const override { return detail::to_text(m_value); }
  std::string default_str() const override { return detail::to_text(m_default); }
  const char* type_name() const override { return detail::type_name<T>(); }

 private:
  void init() {
    if (const ConfigEntry* e = lookup()) {
      if (!detail::parse_value(e->value, m_value))
        fail(*e, std::string("expected ") + detail::type_name<T>() + ", got '" + e->value + "'");
    }
  }
  void check_range(T lo, T hi) {
    if (m_value < lo || m_value > hi) {
      std::string why = "value " + detail::to_text(m_value) + " out of range [" + detail::to_text(lo) + ", " +
                        detail::to_text(hi) + "]";
      if (source()) fail(*source(), why);
      throw ConfigError(name() + ": default " + why);
    }
  }
  void check_choices(std::initializer_list<const char*> choices) {
    std::string list;
    for (const char* c : choices) {
      if (detail::to_text(m_value) == c) return;
      list += list.empty() ? c : std::string(", ") + c;
    }
    if (source()) fail(*source(), "value '" + detail::to_text(m_value) + "' is not one of: " + list);
    throw ConfigError(name() + ": default is not one of: " + list);
  }

  T m_value;
  T m_default;
};

/// All parameters alive in the process, in declaration order.
std::vector<const ParamBase*> all_params();

}  // namespace fabricvp::core
