#include "models/core/param.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <systemc>

#include "models/core/context.h"

namespace fabricvp::core {

ParamBase::ParamBase(const sc_core::sc_object* owner, const char* prefix, const char* leaf, const char* unit,
                     const char* desc)
    : Named(owner, prefix, leaf, unit, desc), m_slot(Context::get().params().add(this)) {}

ParamBase::~ParamBase() {
  Context& ctx = Context::get();
  if (ctx.noting_unwound_params() && std::uncaught_exceptions()) {
    try {
      ctx.note_unwound_param(name());
    } catch (...) {  // a hint only: never an exception out of a destructor
    }
  }
  ctx.params().remove(m_slot);
}

const ConfigEntry* ParamBase::lookup() {
  m_source = Context::get().config().resolve(name());
  return m_source;
}

void ParamBase::fail(const ConfigEntry& e, const std::string& why) const {
  throw ConfigError(fmt::format("{}: key '{}' (parameter {}): {}", e.origin.str(), e.key, name(), why));
}

std::vector<const ParamBase*> all_params() { return Context::get().params().all(); }

namespace detail {

namespace {
std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
/// Digits after an optional sign: base 16 after "0x", else base 10 ("010" is ten, never octal eight).
int int_base(const std::string& t) {
  const size_t at = t[0] == '-' || t[0] == '+' ? 1 : 0;
  return t.compare(at, 2, "0x") == 0 || t.compare(at, 2, "0X") == 0 ? 16 : 10;
}
bool parse_int(const std::string& text, long long& out) {
  std::string t = trim(text);
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoll(t.c_str(), &end, int_base(t));
  return errno == 0 && end && *end == '\0';
}
bool parse_uint(const std::string& text, unsigned long long& out) {
  std::string t = trim(text);
  if (t.empty() || t[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoull(t.c_str(), &end, int_base(t));
  return errno == 0 && end && *end == '\0';
}
}  // namespace

bool parse_value(const std::string& text, bool& out) {
  std::string t = trim(text);
  if (t == "true") return out = true, true;
  if (t == "false") return out = false, true;
  return false;
}
bool parse_value(const std::string& text, int64_t& out) {
  long long v;
  if (!parse_int(text, v)) return false;
  out = v;
  return true;
}
bool parse_value(const std::string& text, uint64_t& out) {
  unsigned long long v;
  if (!parse_uint(text, v)) return false;
  out = v;
  return true;
}
bool parse_value(const std::string& text, uint32_t& out) {
  unsigned long long v;
  if (!parse_uint(text, v) || v > 0xffffffffULL) return false;
  out = static_cast<uint32_t>(v);
  return true;
}
bool parse_value(const std::string& text, int& out) {
  long long v;
  if (!parse_int(text, v) || v < -2147483648LL || v > 2147483647LL) return false;
  out = static_cast<int>(v);
  return true;
}
bool parse_value(const std::string& text, double& out) {
  std::string t = trim(text);
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return errno == 0 && end && *end == '\0' && std::isfinite(out);
}
bool parse_value(const std::string& text, std::string& out) {
  out = text;
  return true;
}

std::string to_text(bool v) { return v ? "true" : "false"; }
std::string to_text(int64_t v) { return std::to_string(v); }
std::string to_text(uint64_t v) { return std::to_string(v); }
std::string to_text(uint32_t v) { return std::to_string(v); }
std::string to_text(int v) { return std::to_string(v); }
std::string to_text(double v) { return fmt::format("{}", v); }
std::string to_text(const std::string& v) { return v; }

template <>
const char* type_name<bool>() {
  return "bool";
}
template <>
const char* type_name<int64_t>() {
  return "integer";
}
template <>
const char* type_name<uint64_t>() {
  return "unsigned integer";
}
template <>
const char* type_name<uint32_t>() {
  return "unsigned 32-bit integer";
}
template <>
const char* type_name<int>() {
  return "32-bit integer";
}
template <>
const char* type_name<double>() {
  return "number";
}
template <>
const char* type_name<std::string>() {
  return "string";
}

}  // namespace detail
}  // namespace fabricvp::core
