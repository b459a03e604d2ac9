#include "models/core/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "models/core/config.h"

namespace fabricvp::core {

namespace {
/// The leading number of `s` (digits and one '.'); false if there is none or it is malformed.
bool leading_number(const std::string& s, size_t& end, double& value) {
  end = 0;
  bool dot = false;
  while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || (s[end] == '.' && !dot))) {
    dot |= s[end] == '.';
    ++end;
  }
  if (end == 0 || (end == 1 && s[0] == '.')) return false;
  // An exponent (1e3ns, 2.5E6B): no unit starts with e or E.
  if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
    size_t k = end + 1;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
      while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
      end = k;
    }
  }
  char* stop = nullptr;
  const std::string num = s.substr(0, end);
  value = std::strtod(num.c_str(), &stop);
  return stop && *stop == '\0' && std::isfinite(value);
}
}  // namespace

uint64_t parse_bytes(const std::string& s, const std::string& what) {
  size_t i = 0;
  double v = 0;
  if (!leading_number(s, i, v))
    throw ConfigError(fmt::format("{} '{}': expected a size like 4096, 100KiB, 64MiB or 1GiB", what, s));
  const std::string unit = s.substr(i);
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KiB" || unit == "K")
    mult = 1024.0;
  else if (unit == "MiB" || unit == "M")
    mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "kB")
    mult = 1e3;
  else if (unit == "MB")
    mult = 1e6;
  else if (unit == "GB")
    mult = 1e9;
  else
    throw ConfigError(fmt::format("{} '{}': unknown unit '{}' (B, KiB, MiB, GiB, kB, MB, GB)", what, s, unit));
  const double bytes = v * mult;
  if (bytes != std::floor(bytes) || bytes <= 0)
    throw ConfigError(fmt::format("{} '{}' is not a positive whole number of bytes", what, s));
  // Read as a double: exact up to 2^53 (larger values were rounded; also catches an infinite value).
  if (!(bytes <= 9007199254740992.0))
    throw ConfigError(fmt::format("{} '{}' is more than 2^53 bytes (8 PiB)", what, s));
  return static_cast<uint64_t>(bytes);
}

uint64_t parse_time_ps(const std::string& s, const std::string& what) {
  size_t i = 0;
  double v = 0;
  if (!leading_number(s, i, v))
    throw ConfigError(fmt::format("{} '{}': expected a number with unit ps, ns, us or ms", what, s));
  const std::string unit = s.substr(i);
  if (v < 0) throw ConfigError(fmt::format("{} '{}': a time is >= 0", what, s));
  if (unit.empty() && v == 0) return 0;  // zero needs no unit
  double mult;
  if (unit == "ps")
    mult = 1;
  else if (unit == "ns")
    mult = 1e3;
  else if (unit == "us")
    mult = 1e6;
  else if (unit == "ms")
    mult = 1e9;
  else
    throw ConfigError(fmt::format("{} '{}': unit must be ps, ns, us or ms", what, s));
  if (!(v * mult < 1.8e19)) throw ConfigError(fmt::format("{} '{}': past 2^64 ps", what, s));
  return static_cast<uint64_t>(std::llround(v * mult));
}

std::string human_bytes(uint64_t b) {
  if (b >= (1ULL << 30) && b % (1ULL << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ULL << 20) && b % (1ULL << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ULL << 10) && b % (1ULL << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string human_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02.0f}s", static_cast<int>(s / 60), std::floor(std::fmod(s, 60)));
  return fmt::format("{}h{:02}m", static_cast<int>(s / 3600), static_cast<int>(std::fmod(s, 3600) / 60));
}

std::string approx_bytes(uint64_t b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", b) : fmt::format(v < 10 ? "{:.1f} {}" : "{:.0f} {}", v, unit[u]);
}

std::string human_time(uint64_t ps) {
  if (ps >= 1000000000ULL) return fmt::format("{:.3f} ms", ps / 1e9);
  if (ps >= 1000000ULL) return fmt::format("{:.3f} us", ps / 1e6);
  return fmt::format("{:.3f} ns", ps / 1e3);
}

}  // namespace fabricvp::core
