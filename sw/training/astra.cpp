#include "sw/training/astra.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"

namespace fabricvp::training::astra {

namespace {

constexpr double kGiB = 1073741824.0;

std::string ext_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(dot);
}

bool known_type(const std::string& t) { return t == "Ring" || t == "FullyConnected" || t == "Switch"; }

double number(const std::string& where, const std::string& key, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end || errno == ERANGE || !std::isfinite(v) || v < 0)
    throw core::ConfigError(fmt::format("{}: {}: '{}' is not a non-negative number", where, key, text));
  return v;
}

uint64_t whole(const std::string& where, const std::string& key, const std::string& text) {
  const double v = number(where, key, text);
  if (v != std::floor(v) || v > 1e15)
    throw core::ConfigError(fmt::format("{}: {}: '{}' is not a whole number", where, key, text));
  return static_cast<uint64_t>(v);
}

/// A count of NPUs or links: whole, at least `least`, and held by 32 bits
/// (the platform's own limits are checked when it loads).
uint32_t count(const std::string& where, const std::string& key, double v, uint32_t least) {
  if (v != std::floor(v) || v < least || v > 4294967295.0)
    throw core::ConfigError(fmt::format("{}: {} {} is not a whole number from {} to 4294967295", where, key, v, least));
  return static_cast<uint32_t>(v);
}

Network read_yaml(const std::string& text, const std::string& path) {
  const YAML::Node root = core::load_yaml_document(text, path, "a network file is one");
  Network n;
  n.file = path;
  n.format = "ASTRA-sim 2.x YAML";
  if (!root.IsMap()) throw core::ConfigError(fmt::format("{}: a network file is a map of lists", path));
  core::yaml_no_unknown_keys(path, root, {"topology", "npus_count", "bandwidth", "latency"});
  auto list = [&](const char* key) {
    const YAML::Node v = root[key];
    if (!v || !v.IsSequence() || v.size() == 0)
      throw core::ConfigError(fmt::format("{}: '{}' must be a non-empty list", path, key));
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : v) out.emplace_back(fmt::format("{}:{}", path, e.Mark().line + 1), e.Scalar());
    return out;
  };
  const auto topo = list("topology"), npus = list("npus_count"), bw = list("bandwidth"), lat = list("latency");
  if (npus.size() != topo.size() || bw.size() != topo.size() || lat.size() != topo.size())
    throw core::ConfigError(
        fmt::format("{}: topology, npus_count, bandwidth and latency must have one entry per "
                    "dimension (they have {}, {}, {}, {})",
                    path, topo.size(), npus.size(), bw.size(), lat.size()));
  for (size_t d = 0; d < topo.size(); ++d) {
    NetworkDim nd;
    nd.type = topo[d].second;
    if (!known_type(nd.type))
      throw core::ConfigError(
          fmt::format("{}: topology '{}' (Ring, FullyConnected, Switch)", topo[d].first, topo[d].second));
    nd.npus = count(npus[d].first, "npus_count", number(npus[d].first, "npus_count", npus[d].second), 2);
    nd.GBps = number(bw[d].first, "bandwidth", bw[d].second) * kGiB / 1e9;
    nd.latency_ns = number(lat[d].first, "latency", lat[d].second);
    if (nd.GBps <= 0) throw core::ConfigError(fmt::format("{}: bandwidth must be positive", bw[d].first));
    n.dims.push_back(nd);
  }
  return n;
}

/// "path:line:column" of the byte at offset `at` of `text` (1-based line and column).
std::string at_byte(const std::string& text, const std::string& path, size_t at) {
  at = std::min(at, text.size());
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  const size_t bol = at ? text.rfind('\n', at - 1) : std::string::npos;
  return fmt::format("{}:{}:{}", path, line, at - (bol == std::string::npos ? 0 : bol + 1) + 1);
}

/// Where key `key` of a JSON object is in `text`: its `nth` (1-based) "key" followed by ':' (a file's keys are
/// each given once, or this is about the repeat), as "path:line:column"; `path` if not found.
std::string json_key_where(const std::string& text, const std::string& path, const std::string& key, size_t nth = 1) {
  const std::string quoted = '"' + key + '"';
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    const size_t next = text.find_first_not_of(" \t\r\n", at + quoted.size());
    if (next != std::string::npos && text[next] == ':' && --nth == 0) return at_byte(text, path, at);
  }
  return path;
}

/// A JSON input file; every failure is a ConfigError naming the file (a
/// number too large for a double is nlohmann's out_of_range, not a parse_error).
nlohmann::json parse_json(const std::string& text, const std::string& path) {
  // nlohmann keeps the last of a key given twice: refused instead (one key set per open object).
  std::vector<std::unordered_set<std::string>> keys;
  std::unordered_map<std::string, size_t> seen;  // key -> times read so far, in text order (its position)
  auto once = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) {
      keys.emplace_back();
    } else if (ev == E::object_end) {
      keys.pop_back();
    } else if (ev == E::key) {
      std::string k = parsed.get<std::string>();
      const size_t nth = ++seen[k];
      if (!keys.back().insert(k).second)
        throw core::ConfigError(fmt::format("{}: \"{}\" is given twice", json_key_where(text, path, k, nth), k));
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, once);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's text says "parse error at line L, column C: ..." (its own count): the reason only.
    const std::string what = e.what();
    const size_t at = what.find("column ");
    const size_t colon = at == std::string::npos ? std::string::npos : what.find(": ", at);
    throw core::ConfigError(fmt::format("{}: not JSON: {}", at_byte(text, path, e.byte ? e.byte - 1 : 0),
                                        colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const nlohmann::json::exception& e) {
    throw core::ConfigError(fmt::format("{}: {}", path, e.what()));
  }
}

Network read_json(const std::string& text, const std::string& path) {
  const nlohmann::json j = parse_json(text, path);
  Network n;
  n.file = path;
  n.format = "ASTRA-sim 1.0 JSON";
  if (!j.is_object()) throw core::ConfigError(fmt::format("{}: not a JSON object", path));
  static const std::vector<std::string> kUsed = {"topologies-per-dim", "units-count",  "links-count",
                                                 "link-bandwidth",     "link-latency", "dimensions-count"};
  static const std::vector<std::string> kLeftOut = {"topology-name",  "dimension-type",  "nic-latency",
                                                    "router-latency", "hbm-latency",     "hbm-bandwidth",
                                                    "hbm-scale",      "use-fast-version"};
  for (const auto& item : j.items()) {
    const std::string& k = item.key();
    auto in = [&](const auto& list) { return std::find(list.begin(), list.end(), k) != list.end(); };
    if (in(kLeftOut))
      n.ignored.push_back(fmt::format("{}: {}", k, item.value().dump()));
    else if (!in(kUsed))
      throw core::ConfigError(fmt::format("{}: unknown key \"{}\" ({}; not modeled: {})", json_key_where(text, path, k),
                                          k, fmt::join(kUsed, ", "), fmt::join(kLeftOut, ", ")));
  }
  auto list = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_array() || j[key].empty())
      throw core::ConfigError(fmt::format("{}: \"{}\" must be a non-empty list", json_key_where(text, path, key), key));
    return j[key];
  };
  const auto topo = list("topologies-per-dim"), units = list("units-count"), links = list("links-count"),
             bw = list("link-bandwidth"), lat = list("link-latency");
  const size_t D = topo.size();
  if (j.contains("dimensions-count") && j["dimensions-count"] != nlohmann::json(D))
    throw core::ConfigError(fmt::format("{}: \"dimensions-count\" {} but \"topologies-per-dim\" lists {}",
                                        json_key_where(text, path, "dimensions-count"), j["dimensions-count"].dump(),
                                        D));
  if (units.size() != D || links.size() != D || bw.size() != D || lat.size() != D)
    throw core::ConfigError(fmt::format(
        "{}: topologies-per-dim, units-count, links-count, link-bandwidth and link-latency must have one entry per "
        "dimension",
        path));
  auto num = [&](const nlohmann::json& v, const char* key, size_t d) {
    if (!v.is_number() || v.get<double>() < 0)
      throw core::ConfigError(fmt::format("{}: \"{}\"[{}]: {} is not a non-negative number",
                                          json_key_where(text, path, key), key, d, v.dump()));
    return v.get<double>();
  };
  for (size_t d = 0; d < D; ++d) {
    NetworkDim nd;
    if (!topo[d].is_string() || !known_type(topo[d].get<std::string>()))
      throw core::ConfigError(fmt::format("{}: \"topologies-per-dim\"[{}]: {} (Ring, FullyConnected, Switch)",
                                          json_key_where(text, path, "topologies-per-dim"), d, topo[d].dump()));
    nd.type = topo[d].get<std::string>();
    const std::string where = fmt::format("{}: dimension {}", path, d);
    nd.npus = count(where, "units-count", num(units[d], "units-count", d), 2);
    uint32_t per = count(where, "links-count", num(links[d], "links-count", d), 1);
    if (nd.type == "Ring") {
      if (per % 2)
        throw core::ConfigError(fmt::format(
            "{}: dimension {}: a Ring's links-count {} is odd (ASTRA-sim 1.0 uses them in pairs, one per direction)",
            path, d, per));
      per /= 2;
    } else if (nd.type == "FullyConnected") {
      if (per % (nd.npus - 1))
        throw core::ConfigError(fmt::format("{}: dimension {}: links-count {} is not a multiple of the {} peers", path,
                                            d, per, nd.npus - 1));
      per /= nd.npus - 1;
    }
    nd.links = per;
    nd.GBps = num(bw[d], "link-bandwidth", d);  // 1.0: GB/s = bytes/ns
    nd.latency_ns = num(lat[d], "link-latency", d);
    if (nd.GBps <= 0) throw core::ConfigError(fmt::format("{}: \"link-bandwidth\"[{}] must be positive", path, d));
    n.dims.push_back(nd);
  }
  return n;
}

/// One ASTRA-sim algorithm name -> fabricvp's.
std::string algorithm(const std::string& where, const std::string& key, const std::string& name) {
  if (name == "ring" || name == "direct" || name == "halvingDoubling" || name == "doubleBinaryTree") return name;
  if (name == "oneRing" || name == "oneDirect" || name == "oneHalvingDoubling")
    throw core::ConfigError(fmt::format(
        "{}: {}: '{}' runs one algorithm over all dimensions flattened, which fabricvp does not model (use ring, "
        "direct, halvingDoubling or doubleBinaryTree per dimension)",
        where, key, name));
  if (name.rfind("direct", 0) == 0 || name.rfind("oneDirect", 0) == 0)
    throw core::ConfigError(
        fmt::format("{}: {}: '{}': a direct algorithm with a window of messages in flight is not modeled (use direct)",
                    where, key, name));
  throw core::ConfigError(fmt::format(
      "{}: {}: unknown algorithm '{}' (ring, direct, halvingDoubling, doubleBinaryTree)", where, key, name));
}

void apply(System& s, const std::string& where, const std::string& key, const std::vector<std::string>& values) {
  auto one = [&]() -> const std::string& {
    if (values.size() != 1) throw core::ConfigError(fmt::format("{}: {}: expected one value", where, key));
    return values[0];
  };
  auto set = [&](const char* param, const std::string& v) {
    s.overrides.push_back(Setting{param, v, fmt::format("{}: {}", where, key)});
  };
  if (key == "scheduling-policy") {
    const std::string& v = one();
    if (v != "LIFO" && v != "FIFO")
      throw core::ConfigError(
          fmt::format("{}: scheduling-policy '{}' (LIFO or FIFO; EXPLICIT is not modeled)", where, v));
    set("sys.npu*.scheduling", v == "LIFO" ? "lifo" : "fifo");
  } else if (key == "endpoint-delay") {
    set("sys.npu*.endpoint_delay_ns", std::to_string(whole(where, key, one())));
  } else if (key == "local-reduction-delay") {
    set("sys.npu*.reduction_delay_ns", std::to_string(whole(where, key, one())));
  } else if (key == "active-chunks-per-dimension") {
    set("sys.npu*.active_chunks_per_dim", std::to_string(whole(where, key, one())));
  } else if (key == "preferred-dataset-splits") {
    set("collective.chunks", std::to_string(whole(where, key, one())));
  } else if (key == "local-mem-bw") {
    set("sys.npu*.memory.GBps", fmt::format("{}", number(where, key, one())));
  } else if (key == "collective-optimization") {
    const std::string& v = one();
    if (v != "baseline" && v != "localBWAware")
      throw core::ConfigError(fmt::format("{}: collective-optimization '{}' (baseline or localBWAware)", where, v));
    set("collective.algorithm", v == "baseline" ? "baseline" : "enhanced");
  } else if (key == "all-reduce-implementation" || key == "reduce-scatter-implementation" ||
             key == "all-gather-implementation" || key == "all-to-all-implementation") {
    std::string list;
    for (const std::string& v : values) list += (list.empty() ? "" : ",") + algorithm(where, key, v);
    const char* param = key == "all-reduce-implementation"       ? "collective.allreduce_implementation"
                        : key == "reduce-scatter-implementation" ? "collective.reducescatter_implementation"
                        : key == "all-gather-implementation"     ? "collective.allgather_implementation"
                                                                 : "collective.alltoall_implementation";
    set(param, list);
  } else if (key == "intra-dimension-scheduling") {
    if (one() != "FIFO")
      throw core::ConfigError(
          fmt::format("{}: intra-dimension-scheduling '{}': fabricvp schedules chunks FIFO within "
                      "a dimension",
                      where, one()));
  } else if (key == "inter-dimension-scheduling") {
    if (one() != "baseline" && one() != "ascending")
      throw core::ConfigError(fmt::format(
          "{}: inter-dimension-scheduling '{}': fabricvp takes the dimensions in order (baseline)", where, one()));
  } else if (key == "boost-mode" || key == "L" || key == "o" || key == "g" || key == "G" || key == "model-shared-bus" ||
             key == "seprate-log" || key == "gap-denominator" || key == "peak-perf" || key == "roofline-enabled" ||
             key == "trace-enabled" || key == "replay-only") {
    std::string v;
    for (const std::string& x : values) v += (v.empty() ? "" : ",") + x;
    s.ignored.push_back(fmt::format("{}: {}", key, v));
  } else {
    throw core::ConfigError(fmt::format("{}: unknown system key '{}'", where, key));
  }
}

}  // namespace

Network read_network(const std::string& path) {
  const std::string e = ext_of(path);
  if (e != ".yml" && e != ".yaml" && e != ".json")
    throw core::ConfigError(fmt::format("{}: a network file is .yml/.yaml (ASTRA-sim 2.x) or .json (1.0)", path));
  return read_network_string(core::read_input_file(path, "network file"), path);
}

Network read_network_string(const std::string& text, const std::string& path) {
  const std::string e = ext_of(path);
  if (e == ".yml" || e == ".yaml") return read_yaml(text, path);
  if (e == ".json") return read_json(text, path);
  throw core::ConfigError(fmt::format("{}: a network file is .yml/.yaml (ASTRA-sim 2.x) or .json (1.0)", path));
}

std::string platform_yaml(const Network& n, const std::vector<Setting>& overrides) {
  uint64_t total = 1;
  std::string shape;
  for (const NetworkDim& d : n.dims) {
    total *= d.npus;
    if (total > 4294967295u)
      throw core::ConfigError(
          fmt::format("{}: more than 4294967295 NPUs in all ({} dimensions)", n.file, n.dims.size()));
    shape += fmt::format("{}{}({})", shape.empty() ? "" : " x ", d.type, d.npus);
  }
  std::string y = fmt::format(
      "# Converted by `fabricvp convert astra` from {} ({}).\n"
      "# Bandwidths are fabricvp's GB/s (1e9 bytes/s){}; latencies in ns.\n"
      "sys:\n"
      "  description: \"{} NPUs, {} (from {})\"\n"
      "  topology: ndim\n"
      "  dims: {}\n",
      n.file, n.format,
      n.format.find("2.x") != std::string::npos ? ": ASTRA-sim 2.x's GB/s are 2^30 bytes/s, x 1.073741824" : "", total,
      shape, n.file, n.dims.size());
  for (size_t d = 0; d < n.dims.size(); ++d) {
    const NetworkDim& nd = n.dims[d];
    if (nd.latency_ns != std::floor(nd.latency_ns))
      throw core::ConfigError(fmt::format("{}: dimension {}: latency {} ns is not a whole number of nanoseconds",
                                          n.file, d, nd.latency_ns));
    y += fmt::format("  dim{}: {{type: {}, npus: {}, links: {}, GBps: {}, latency_ns: {}}}\n", d, nd.type, nd.npus,
                     nd.links, nd.GBps, nd.latency_ns);
  }
  std::string mem, npu, coll;
  for (const Setting& o : overrides) {
    const std::string& k = o.param;
    const std::string& v = o.value;
    if (k == "sys.npu*.memory.GBps")
      mem = fmt::format("    memory:\n      GBps: {}\n", v);
    else if (k.rfind("sys.npu*.", 0) == 0)
      npu += fmt::format("    {}: {}\n", k.substr(9), v);
    else if (k.rfind("collective.", 0) == 0)
      coll += fmt::format("  {}: {}\n", k.substr(11), v);
    else
      throw std::logic_error("platform_yaml: unexpected key " + k);
  }
  if (!npu.empty() || !mem.empty()) y += "  npu*:\n" + npu + mem;
  y += "ace:\n  model: none\n";
  if (!coll.empty()) y += "collective:\n" + coll;
  return y;
}

System read_system(const std::string& path) {
  return read_system_string(core::read_input_file(path, "system file"), path);
}

System read_system_string(const std::string& text, const std::string& path) {
  System s;
  s.file = path;
  if (ext_of(path) == ".json") {
    const nlohmann::json j = parse_json(text, path);
    if (!j.is_object()) throw core::ConfigError(fmt::format("{}: a system file is a JSON object", path));
    for (const auto& item : j.items()) {
      const std::string& k = item.key();  // a plain name: lambdas cannot capture structured bindings
      const nlohmann::json& v = item.value();
      std::vector<std::string> vals;
      auto value_text = [&](const nlohmann::json& x) {
        if (x.is_string()) return x.get<std::string>();
        if (x.is_number() || x.is_boolean()) return x.dump();
        throw core::ConfigError(
            fmt::format("{}: \"{}\": {} is not a string or number", json_key_where(text, path, k), k, x.dump()));
      };
      if (v.is_array())
        for (const auto& x : v) vals.push_back(value_text(x));
      else
        vals.push_back(value_text(v));
      apply(s, json_key_where(text, path, k), k, vals);
    }
    return s;
  }
  std::istringstream f(text);
  std::string line;
  uint32_t n = 0;
  std::map<std::string, uint32_t> seen;  // key -> its line
  while (std::getline(f, line)) {
    ++n;
    std::istringstream ss(line);
    std::string key, value;
    if (!(ss >> key)) continue;
    const std::string where = fmt::format("{}:{}", path, n);
    if (key.back() != ':') throw core::ConfigError(fmt::format("{}: expected 'key: value', got '{}'", where, line));
    key.pop_back();
    if (const auto [it, fresh] = seen.emplace(key, n); !fresh)
      throw core::ConfigError(fmt::format("{}: {} is given again (line {} gave it first)", where, key, it->second));
    if (!(ss >> value)) throw core::ConfigError(fmt::format("{}: {}: no value", where, key));
    std::string extra;
    if (ss >> extra) throw core::ConfigError(fmt::format("{}: {}: '{}' after the value", where, key, extra));
    std::vector<std::string> vals;
    if (key.find("-implementation") != std::string::npos) {
      std::string item;
      std::istringstream vs(value);
      while (std::getline(vs, item, '_')) vals.push_back(item);
    } else {
      vals.push_back(value);
    }
    apply(s, where, key, vals);
  }
  return s;
}

}  // namespace fabricvp::training::astra
