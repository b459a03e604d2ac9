#include "systems/sweep_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"

namespace fs = std::filesystem;

namespace fabricvp::systems {

const char* const kUnset = "\n(unset)";

namespace {

// ---- the sweep file ------------------------------------------------------------

std::string scalar(const std::string& path, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar())
    throw core::ConfigError(fmt::format("{}: {} must be a single value", core::yaml_at(path, n), what));
  return n.Scalar();
}

double number(const std::string& path, const YAML::Node& n, const std::string& what) {
  const std::string s = scalar(path, n, what);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size() || !std::isfinite(v))
    throw core::ConfigError(fmt::format("{}: {}: '{}' is not a number", core::yaml_at(path, n), what, s));
  return v;
}

/// The shortest text that reads back as v (integers without a decimal point).
std::string format_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// Columns of `runs` that are not parameters or statistics.
const char* const kFixedColumns[] = {"id",          "sweep",   "point",       "seed",     "status",
                                     "exit_code",   "message", "version",     "platform", "wall_s",
                                     "config_hash", "out_dir", "finished_utc"};

/// `v` as written in sweep file `sweep` (absolute, or relative to the file's folder).
std::string beside(const std::string& sweep, const std::string& v) {
  return fs::path(v).is_absolute() ? v : (fs::absolute(sweep).parent_path() / v).lexically_normal().string();
}

/// The axis key whose values are platform files (one per point).
const char* const kPlatformKey = "--platform";

bool fixed_column(const std::string& k) {
  for (const char* c : kFixedColumns)
    if (k == c) return true;
  return false;
}

std::vector<std::string> axis_values(const std::string& path, const YAML::Node& a, const std::string& key) {
  const bool has_values = static_cast<bool>(a["values"]), has_range = static_cast<bool>(a["range"]);
  if (has_values == has_range)
    throw core::ConfigError(fmt::format("{}: axis '{}' needs either values or range", core::yaml_at(path, a), key));
  std::vector<std::string> out;
  if (has_values) {
    const YAML::Node v = a["values"];
    if (!v.IsSequence() || v.size() == 0)
      throw core::ConfigError(
          fmt::format("{}: axis '{}': values must be a non-empty list", core::yaml_at(path, v), key));
    for (const auto& x : v) out.push_back(x.IsNull() ? kUnset : scalar(path, x, "axis '" + key + "' value"));
    return out;
  }
  const YAML::Node r = a["range"];
  if (!r.IsMap())
    throw core::ConfigError(fmt::format("{}: axis '{}': range must be a map", core::yaml_at(path, r), key));
  core::yaml_no_unknown_keys(path, r, {"from", "to", "step", "factor"});
  if (!r["from"] || !r["to"] || static_cast<bool>(r["step"]) == static_cast<bool>(r["factor"]))
    throw core::ConfigError(
        fmt::format("{}: axis '{}': range needs from, to and one of step or factor", core::yaml_at(path, r), key));
  const double from = number(path, r["from"], "range.from"), to = number(path, r["to"], "range.to");
  const double tol = 1e-9 * std::max(std::fabs(from), std::fabs(to));
  if (r["step"]) {
    const double step = number(path, r["step"], "range.step");
    if (step <= 0 || to < from)
      throw core::ConfigError(
          fmt::format("{}: axis '{}': range needs step > 0 and to >= from", core::yaml_at(path, r), key));
    const double n = std::floor((to - from + tol) / step);
    if (n > 100000)
      throw core::ConfigError(fmt::format("{}: axis '{}': more than 100000 values", core::yaml_at(path, r), key));
    for (int64_t i = 0; i <= static_cast<int64_t>(n); ++i) out.push_back(format_number(from + step * i));
  } else {
    const double f = number(path, r["factor"], "range.factor");
    if (f <= 1 || from <= 0 || to < from)
      throw core::ConfigError(
          fmt::format("{}: axis '{}': range needs factor > 1 and 0 < from <= to", core::yaml_at(path, r), key));
    for (double x = from; x <= to + tol; x *= f) {
      out.push_back(format_number(x));
      if (out.size() > 100000)
        throw core::ConfigError(fmt::format("{}: axis '{}': more than 100000 values", core::yaml_at(path, r), key));
    }
  }
  return out;
}

/// An option the sweep sets itself (its output, seed, quiet and topology's --json), also in a joined form
/// (--seed=4, -oDIR): no axis or option of the file may set it.
bool set_by_sweep(const std::string& v) {
  for (const std::string opt : {"-o", "--out", "--seed", "-s", "-q", "--quiet", "--json"})
    if (v.compare(0, opt.size(), opt) == 0 && (v.size() == opt.size() || opt[1] != '-' || v[opt.size()] == '='))
      return true;
  return false;
}

void check_key(const std::string& path, const YAML::Node& n, const std::string& key, std::set<std::string>& seen) {
  if (key.empty()) throw core::ConfigError(fmt::format("{}: an axis key is empty", core::yaml_at(path, n)));
  if (key.find_first_of("|=\n") != std::string::npos)
    throw core::ConfigError(
        fmt::format("{}: axis key '{}' contains '|', '=' or a newline", core::yaml_at(path, n), key));
  if (fixed_column(key) || set_by_sweep(key))
    throw core::ConfigError(
        fmt::format("{}: axis key '{}' is set by the sweep itself (seeds: use the sweep's seeds or repetitions)",
                    core::yaml_at(path, n), key));
  if (!seen.insert(key).second)
    throw core::ConfigError(fmt::format("{}: axis key '{}' appears twice", core::yaml_at(path, n), key));
}

}  // namespace

SweepSpec load_sweep(const std::string& path) {
  return load_sweep_string(core::read_input_file(path, "sweep file", 1u << 20), path);
}

SweepSpec load_sweep_string(const std::string& text, const std::string& path) {
  std::error_code ec;
  const YAML::Node root = core::load_yaml_document(text, path, "a sweep file is one");
  if (!root.IsMap() || !root["sweep"])
    throw core::ConfigError(fmt::format("{}: a sweep file is a map with the key 'sweep'", path));
  core::yaml_no_unknown_keys(path, root, {"sweep"});
  const YAML::Node s = root["sweep"];
  if (!s.IsMap()) throw core::ConfigError(fmt::format("{}: sweep must be a map", core::yaml_at(path, s)));
  core::yaml_no_unknown_keys(
      path, s, {"name", "command", "platform", "options", "axes", "seeds", "repetitions", "record", "quick"});
  SweepSpec out;
  out.file = path;
  out.name = s["name"] ? scalar(path, s["name"], "name") : fs::path(path).stem().string();
  // The database and the points' folder are named after it, inside -o.
  if (out.name.empty() || out.name[0] == '.' ||
      out.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") !=
          std::string::npos)
    throw core::ConfigError(fmt::format(
        "{}: name '{}': letters, digits and _ . + - only, not starting with '.' (it names the database in -o)",
        s["name"] ? core::yaml_at(path, s["name"]) : path, out.name));
  if (s["command"]) {
    out.command = scalar(path, s["command"], "command");
    if (out.command != "run" && out.command != "topology")
      throw core::ConfigError(
          fmt::format("{}: command '{}': expected run or topology", core::yaml_at(path, s["command"]), out.command));
  }
  const bool topology = out.command == "topology";
  // `fabricvp topology` takes -p and --sources (and the sweep sets --json).
  auto topology_option = [&](const YAML::Node& n, const std::string& o) {
    if (!topology || o.size() < 2 || o[0] != '-' || std::isdigit(static_cast<unsigned char>(o[1])) || o[1] == '.')
      return;
    if (o != "-p" && o != "--param" && o != "--sources" && o != kPlatformKey)
      throw core::ConfigError(
          fmt::format("{}: '{}': a topology sweep takes -p, --sources and --platform only", core::yaml_at(path, n), o));
  };
  auto platform_file = [&](const YAML::Node& n, const std::string& plat) {
    const std::string f = beside(path, plat);
    if (!fs::is_regular_file(f, ec))
      throw core::ConfigError(fmt::format("{}: platform '{}' is not a file ({})", core::yaml_at(path, n), plat, f));
    return f;
  };
  if (s["platform"]) out.platform = platform_file(s["platform"], scalar(path, s["platform"], "platform"));
  if (s["options"]) {
    if (!s["options"].IsSequence())
      throw core::ConfigError(fmt::format("{}: options must be a list", core::yaml_at(path, s["options"])));
    for (const auto& o : s["options"]) {
      const std::string v = scalar(path, o, "an option");
      if (v.empty()) throw core::ConfigError(fmt::format("{}: an empty option", core::yaml_at(path, o)));
      if (set_by_sweep(v))
        throw core::ConfigError(fmt::format("{}: option '{}' is set by the sweep itself", core::yaml_at(path, o), v));
      topology_option(o, v);
      out.options.push_back(v);
    }
  }
  std::set<std::string> seen;
  if (s["axes"]) {
    if (!s["axes"].IsSequence())
      throw core::ConfigError(fmt::format("{}: axes must be a list", core::yaml_at(path, s["axes"])));
    for (const auto& a : s["axes"]) {
      if (!a.IsMap()) throw core::ConfigError(fmt::format("{}: an axis must be a map", core::yaml_at(path, a)));
      SweepAxis ax;
      if (a["zip"]) {
        core::yaml_no_unknown_keys(path, a, {"zip"});
        if (!a["zip"].IsSequence() || a["zip"].size() < 2)
          throw core::ConfigError(fmt::format("{}: zip lists two or more axes", core::yaml_at(path, a["zip"])));
        std::vector<std::vector<std::string>> cols;
        for (const auto& z : a["zip"]) {
          if (!z.IsMap() || !z["key"])
            throw core::ConfigError(fmt::format("{}: a zipped axis is a map with a key", core::yaml_at(path, z)));
          core::yaml_no_unknown_keys(path, z, {"key", "values", "range"});
          const std::string k = scalar(path, z["key"], "key");
          check_key(path, z["key"], k, seen);
          topology_option(z["key"], k);
          ax.keys.push_back(k);
          cols.push_back(axis_values(path, z, k));
          if (cols.back().size() != cols.front().size())
            throw core::ConfigError(fmt::format("{}: zipped axis '{}' has {} values, '{}' has {}",
                                                core::yaml_at(path, z), k, cols.back().size(), ax.keys.front(),
                                                cols.front().size()));
        }
        for (size_t i = 0; i < cols.front().size(); ++i) {
          ax.values.emplace_back();
          for (const auto& c : cols) ax.values.back().push_back(c[i]);
        }
      } else {
        if (!a["key"]) throw core::ConfigError(fmt::format("{}: an axis needs a key (or zip)", core::yaml_at(path, a)));
        core::yaml_no_unknown_keys(path, a, {"key", "values", "range"});
        const std::string k = scalar(path, a["key"], "key");
        check_key(path, a["key"], k, seen);
        topology_option(a["key"], k);
        ax.keys.push_back(k);
        for (std::string& v : axis_values(path, a, k)) ax.values.push_back({std::move(v)});
      }
      // A point is known by its parameters: two equal points would be one row.
      std::set<std::vector<std::string>> distinct;
      for (const auto& v : ax.values) {
        for (const std::string& x : v)
          if (x != kUnset && x.find_first_of("|\n") != std::string::npos)
            throw core::ConfigError(
                fmt::format("{}: axis value '{}' contains '|' or a newline", core::yaml_at(path, a), x));
          else if (x.empty())
            throw core::ConfigError(
                fmt::format("{}: an empty axis value (~ leaves the key unset at that point)", core::yaml_at(path, a)));
        if (!distinct.insert(v).second) {
          std::vector<std::string> shown;
          for (const std::string& x : v) shown.push_back(x == kUnset ? "~" : x);
          throw core::ConfigError(fmt::format("{}: axis {} has the value {} twice", core::yaml_at(path, a),
                                              fmt::join(ax.keys, "+"), fmt::join(shown, "+")));
        }
      }
      // A --platform axis: every value a platform file next to the sweep file
      // (unset: the sweep's platform).
      for (size_t k = 0; k < ax.keys.size(); ++k)
        if (ax.keys[k] == kPlatformKey)
          for (const auto& v : ax.values) {
            if (v[k] != kUnset) {
              platform_file(a, v[k]);
            } else if (out.platform.empty()) {
              throw core::ConfigError(fmt::format("{}: a point leaves --platform unset and the sweep has no platform",
                                                  core::yaml_at(path, a)));
            }
          }
      out.axes.push_back(std::move(ax));
    }
  }
  if (out.platform.empty() && !seen.count(kPlatformKey))
    throw core::ConfigError(fmt::format("{}: sweep has no platform (give platform, or an axis with key --platform)",
                                        core::yaml_at(path, s)));
  if (topology && (s["seeds"] || s["repetitions"]))
    throw core::ConfigError(fmt::format("{}: a topology sweep elaborates platforms: it has no seeds or repetitions",
                                        core::yaml_at(path, s["seeds"] ? s["seeds"] : s["repetitions"])));
  if (s["seeds"] && s["repetitions"])
    throw core::ConfigError(
        fmt::format("{}: give seeds or repetitions, not both", core::yaml_at(path, s["repetitions"])));
  if (s["seeds"]) {
    std::set<uint64_t> seed_set;
    if (!s["seeds"].IsSequence() || s["seeds"].size() == 0)
      throw core::ConfigError(fmt::format("{}: seeds must be a non-empty list", core::yaml_at(path, s["seeds"])));
    for (const auto& x : s["seeds"]) {
      const double v = number(path, x, "seed");
      if (v < 0 || v != std::floor(v) || v > 9e15)
        throw core::ConfigError(
            fmt::format("{}: seed '{}' is not a whole number >= 0", core::yaml_at(path, x), x.Scalar()));
      if (!seed_set.insert(static_cast<uint64_t>(v)).second)
        throw core::ConfigError(fmt::format("{}: seed {} appears twice", core::yaml_at(path, x), x.Scalar()));
      out.seeds.push_back(static_cast<uint64_t>(v));
    }
  } else if (s["repetitions"]) {
    const double n = number(path, s["repetitions"], "repetitions");
    if (n < 1 || n > 10000 || n != std::floor(n))
      throw core::ConfigError(
          fmt::format("{}: repetitions must be a whole number 1..10000", core::yaml_at(path, s["repetitions"])));
    for (uint64_t i = 1; i <= static_cast<uint64_t>(n); ++i) out.seeds.push_back(i);
  } else {
    out.seeds = {1};
  }
  if (!s["record"] || !s["record"].IsSequence() || s["record"].size() == 0)
    throw core::ConfigError(
        fmt::format("{}: record lists the statistics to keep (dotted paths into stats.json, e.g. "
                    "workload.busbw_GBps, or into topology.json for a topology sweep)",
                    core::yaml_at(path, s)));
  for (const auto& r : s["record"]) {
    const std::string k = scalar(path, r, "a statistic");
    if (fixed_column(k) || !seen.insert(k).second)
      throw core::ConfigError(
          fmt::format("{}: statistic '{}' is also a parameter or a fixed column", core::yaml_at(path, r), k));
    out.record.push_back(k);
  }
  if (s["quick"]) {
    const YAML::Node q = s["quick"];
    if (!q.IsMap())
      throw core::ConfigError(
          fmt::format("{}: quick maps axis keys to the values a quick run keeps", core::yaml_at(path, q)));
    for (const auto& kv : q) {
      const std::string k = scalar(path, kv.first, "a quick key");
      const SweepAxis* axis = nullptr;
      size_t col = 0;
      for (const SweepAxis& a : out.axes)
        for (size_t c = 0; c < a.keys.size(); ++c)
          if (a.keys[c] == k) axis = &a, col = c;
      if (!axis)
        throw core::ConfigError(fmt::format("{}: quick: '{}' is not an axis", core::yaml_at(path, kv.first), k));
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw core::ConfigError(
            fmt::format("{}: quick: '{}' needs a non-empty list", core::yaml_at(path, kv.second), k));
      std::vector<std::string> keep;
      for (const auto& v : kv.second) {
        const std::string x = v.IsNull() ? kUnset : scalar(path, v, "a quick value");
        if (std::none_of(axis->values.begin(), axis->values.end(),
                         [&](const std::vector<std::string>& t) { return t[col] == x; }))
          throw core::ConfigError(
              fmt::format("{}: quick: '{}' is not a value of axis '{}'", core::yaml_at(path, v), v.Scalar(), k));
        keep.push_back(x);
      }
      out.quick.emplace_back(k, std::move(keep));
    }
  }
  uint64_t n = out.seeds.size();
  for (const SweepAxis& a : out.axes) n *= a.values.size();
  if (n > 1000000) throw core::ConfigError(fmt::format("{}: {} points; at most 1,000,000", path, n));
  return out;
}

void restrict_to_quick(SweepSpec& s) {
  for (const auto& q : s.quick) {
    const std::vector<std::string>& keep = q.second;  // a plain name: lambdas cannot capture structured bindings
    for (SweepAxis& a : s.axes)
      for (size_t c = 0; c < a.keys.size(); ++c)
        if (a.keys[c] == q.first)
          a.values.erase(std::remove_if(a.values.begin(), a.values.end(),
                                        [&, col = c](const std::vector<std::string>& t) {
                                          return std::find(keep.begin(), keep.end(), t[col]) == keep.end();
                                        }),
                         a.values.end());
  }
}

std::vector<std::string> values_of(const SweepSpec& s, const std::string& key) {
  for (const SweepAxis& a : s.axes)
    for (size_t k = 0; k < a.keys.size(); ++k)
      if (a.keys[k] == key) {  // a key of its own axis, or one column of a zipped one
        std::vector<std::string> out;
        for (const auto& v : a.values) out.push_back(v[k]);
        return out;
      }
  throw std::out_of_range("sweep " + s.name + " has no axis " + key);
}

const std::string& param(const SweepPoint& p, const std::string& key) {
  for (const auto& kv : p.params)
    if (kv.first == key) return kv.second;
  throw std::out_of_range("sweep point " + p.key + " has no parameter " + key);
}

std::string param_or(const SweepPoint& p, const std::string& key, const std::string& otherwise) {
  for (const auto& kv : p.params)
    if (kv.first == key) return kv.second;
  return otherwise;
}

std::vector<SweepPoint> sweep_points(const SweepSpec& s) {
  std::vector<SweepPoint> out;
  std::vector<size_t> idx(s.axes.size(), 0);
  for (;;) {
    SweepPoint base;
    for (size_t a = 0; a < s.axes.size(); ++a)
      for (size_t k = 0; k < s.axes[a].keys.size(); ++k)
        if (s.axes[a].values[idx[a]][k] != kUnset)
          base.params.emplace_back(s.axes[a].keys[k], s.axes[a].values[idx[a]][k]);
    for (uint64_t seed : s.seeds) {
      SweepPoint p = base;
      p.seed = seed;
      p.index = out.size();
      p.key = s.name;
      for (const auto& [k, v] : p.params) p.key += "|" + k + "=" + v;
      p.key += fmt::format("|seed={}", seed);
      out.push_back(std::move(p));
    }
    size_t a = s.axes.size();
    while (a > 0) {
      --a;
      if (++idx[a] < s.axes[a].values.size()) break;
      idx[a] = 0;
      if (a == 0) return out;
    }
    if (s.axes.empty()) return out;
  }
}

std::vector<std::string> point_args(const SweepSpec& s, const SweepPoint& p, const std::string& out_dir) {
  // A value written as ./x or ../x is a file next to the sweep file (the
  // database keeps it as written).
  auto file = [&](const std::string& v) {
    if (v.rfind("./", 0) != 0 && v.rfind("../", 0) != 0) return v;
    return beside(s.file, v);
  };
  const bool topology = s.command == "topology";
  std::vector<std::string> a = {s.command, s.platform};
  for (const std::string& o : s.options) a.push_back(file(o));
  for (const auto& [k, v] : p.params) {
    if (k == kPlatformKey) {
      a[1] = beside(s.file, v);
    } else if (k.rfind("-", 0) == 0) {
      a.push_back(k);
      a.push_back(file(v));
    } else {
      a.push_back("-p");
      a.push_back(k + "=" + v);
    }
  }
  if (topology) {
    a.insert(a.end(), {"--json", (fs::path(out_dir) / "topology.json").string()});
  } else {
    a.insert(a.end(), {"--seed", std::to_string(p.seed), "-q", "-o", out_dir});
  }
  return a;
}

}  // namespace fabricvp::systems
