#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace fabricvp::core {

std::string Origin::str() const {
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

bool glob_match(std::string_view p, std::string_view s) {
  // Iterative wildcard match where '*' never crosses a '.'.
  size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star_p = pi++;
      star_s = si;
    } else if (pi < p.size() && p[pi] == s[si]) {
      ++pi;
      ++si;
    } else if (star_p != std::string_view::npos && s[star_s] != '.') {
      pi = star_p + 1;
      si = ++star_s;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {

Origin origin_of(const std::string& file, const YAML::Mark& m) {
  return Origin{file, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
}

void flatten(Config& cfg, const YAML::Node& node, const std::string& prefix, const std::string& file,
             std::map<std::string, int>& seen) {
  for (const auto& kv : node) {
    // Copies: a map iterator yields a temporary pair, references into it would dangle.
    const YAML::Node k = kv.first;
    const YAML::Node v = kv.second;
    Origin where = origin_of(file, k.Mark());
    if (!k.IsScalar() || k.Scalar().empty())
      throw ConfigError(fmt::format("{}: keys must be non-empty scalars", where.str()));
    const std::string& seg = k.Scalar();
    if (seg.find('.') != std::string::npos && !prefix.empty())
      throw ConfigError(fmt::format("{}: key '{}' contains '.'; nest it as a map instead", where.str(), seg));
    std::string key = prefix.empty() ? seg : prefix + "." + seg;
    if (v.IsMap()) {
      flatten(cfg, v, key, file, seen);
      continue;
    }
    auto [pos, fresh] = seen.emplace(key, where.line);
    if (!fresh)
      throw ConfigError(fmt::format("{}: duplicate key '{}' (first set on line {})", where.str(), key, pos->second));
    if (v.IsNull()) throw ConfigError(fmt::format("{}: key '{}' has no value", where.str(), key));
    std::string value;
    if (v.IsScalar()) {
      value = v.Scalar();
    } else if (v.IsSequence()) {
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].IsScalar())
          throw ConfigError(fmt::format("{}: key '{}': list items must be scalars", where.str(), key));
        if (i) value += ",";
        value += v[i].Scalar();
      }
    }
    cfg.set(key, value, where);
  }
}

}  // namespace

void Config::load_string(const std::string& text, const std::string& name) {
  const YAML::Node root = load_yaml_document(text, name, "a platform file is one");
  m_files.push_back(name);
  if (root.IsNull()) return;
  if (!root.IsMap()) throw ConfigError(fmt::format("{}: top level must be a map of keys", name));
  std::map<std::string, int> seen;
  flatten(*this, root, "", name, seen);
}

void Config::load_file(const std::string& path) { load_string(read_input_file(path, "platform file"), path); }

void Config::add_override(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError(fmt::format("-p {}: expected key=value", assignment));
  set(assignment.substr(0, eq), assignment.substr(eq + 1), Origin{"-p " + assignment, 0, 0});
}

void Config::set(const std::string& key, const std::string& value, const Origin& origin) {
  size_t idx = m_entries.size();
  m_entries.push_back(ConfigEntry{key, value, origin, 0});
  if (key.find('*') == std::string::npos)
    m_exact[key].push_back(idx);
  else
    m_patterns.push_back(idx);
}

const ConfigEntry* Config::find(const std::string& name) const {
  long best = -1;
  if (auto it = m_exact.find(name); it != m_exact.end()) best = static_cast<long>(it->second.back());
  for (auto it = m_patterns.rbegin(); it != m_patterns.rend(); ++it) {
    if (static_cast<long>(*it) <= best) break;
    if (glob_match(m_entries[*it].key, name)) {
      best = static_cast<long>(*it);
      break;
    }
  }
  if (best < 0) return nullptr;
  return &m_entries[static_cast<size_t>(best)];
}

const ConfigEntry* Config::resolve(const std::string& name) const {
  const ConfigEntry* best = nullptr;
  if (auto it = m_exact.find(name); it != m_exact.end()) {
    for (size_t i : it->second) ++m_entries[i].uses;
    best = &m_entries[it->second.back()];
  }
  for (size_t i : m_patterns) {
    if (!glob_match(m_entries[i].key, name)) continue;
    ++m_entries[i].uses;
    if (!best || &m_entries[i] > best) best = &m_entries[i];
  }
  return best;
}

void Config::note_absent(const std::string& prefix, const std::string& reason) {
  m_absent.emplace_back(prefix, reason);
}

namespace {

std::pair<std::string, std::string> split_key(const std::string& k) {
  const size_t dot = k.rfind('.');
  if (dot == std::string::npos) return {"", k};
  return {k.substr(0, dot), k.substr(dot + 1)};
}

/// The parameter of `known` that `key` most likely means: first one of the same object(s) with a similar
/// name, then (unless `same_object`) any similar full name; empty if none is close.
std::string suggestion(const std::string& key, const std::vector<std::string>& known, bool same_object) {
  auto [prefix, leaf] = split_key(key);
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& k : known) {
    auto [kprefix, kleaf] = split_key(k);
    if (!glob_match(prefix, kprefix)) continue;
    const size_t d = edit_distance(leaf, kleaf);
    if (d < best_d) {
      best_d = d;
      best = prefix.empty() ? kleaf : prefix + "." + kleaf;
    }
  }
  size_t limit = std::max<size_t>(2, leaf.size() / 3);
  if (best_d > limit && !same_object) {
    best_d = std::string::npos;
    for (const auto& k : known) {
      const size_t d = edit_distance(key, k);
      if (d < best_d) {
        best_d = d;
        best = k;
      }
    }
    limit = std::max<size_t>(2, key.size() / 4);
  }
  return best_d <= limit ? best : std::string();
}

}  // namespace

void Config::check_all_used(const std::vector<std::string>& known) const {
  for (const auto& e : m_entries) {
    if (e.uses) continue;
    for (const auto& [absent, reason] : m_absent)
      if (e.key.compare(0, absent.size(), absent) == 0)
        throw ConfigError(fmt::format("{}: key '{}' matches no parameter: {}", e.origin.str(), e.key, reason));
    const std::string best = suggestion(e.key, known, false);
    const std::string hint = best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
    throw ConfigError(fmt::format("{}: unknown key '{}': it matches no parameter{}", e.origin.str(), e.key, hint));
  }
}

std::string Config::likely_typos(const std::vector<std::string>& known) const {
  std::string out;
  for (const auto& e : m_entries) {
    if (e.uses) continue;
    const std::string best = suggestion(e.key, known, true);
    if (!best.empty())
      out += fmt::format("\n  {}: key '{}' has set no parameter (did you mean '{}'?)", e.origin.str(), e.key, best);
  }
  return out;
}

}  // namespace fabricvp::core
