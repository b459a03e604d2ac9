// ASTRA-sim's network and system configuration files, read into fabricvp's
// terms (docs/workloads.md, "ASTRA-sim's inputs"). SystemC-free.
//
// Network (the analytical backend's files):
//   2.x YAML  topology: [Ring, FullyConnected, Switch, ..], npus_count: [..],
//             bandwidth: [GB/s, ..], latency: [ns, ..]. ASTRA-sim converts the
//             bandwidth with 2^30 bytes per GB: fabricvp's GBps (1e9 bytes) is
//             bandwidth x 1.073741824. One link per neighbour (Ring, both ways),
//             per peer (FullyConnected), per NPU (Switch).
//   1.0 JSON  "topologies-per-dim", "units-count", "links-count", "link-bandwidth"
//             (GB/s = bytes/ns), "link-latency" (ns). links-count is per NPU in
//             the dimension: a Ring's are split over its two directions
//             (links = links-count / 2), a FullyConnected's over its n - 1 peers.
//             The backend's other keys (topology-name, dimensions-count,
//             dimension-type, nic-/router-/hbm-latency, hbm-bandwidth,
//             hbm-scale) are listed back as ignored; any other key, and a key
//             given twice (also in the system files), is an error.
// System (1.0 `key: value` text or 2.x JSON): scheduling-policy,
//   endpoint-delay, local-reduction-delay, active-chunks-per-dimension,
//   preferred-dataset-splits, all-reduce/reduce-scatter/all-gather/all-to-all-
//   implementation, collective-optimization, local-mem-bw; keys that change
//   nothing fabricvp models are listed back as ignored (never silently), keys
//   and values it cannot honour are errors.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fabricvp::training::astra {

struct NetworkDim {
  std::string type;  ///< "Ring", "FullyConnected", "Switch"
  uint32_t npus = 0, links = 1;
  double GBps = 0;  ///< fabricvp's unit: 1e9 bytes/s per link direction
  double latency_ns = 0;
};

struct Network {
  std::string file;
  std::string format;  ///< "ASTRA-sim 2.x YAML" or "ASTRA-sim 1.0 JSON"
  std::vector<NetworkDim> dims;
  /// 1.0 JSON: "nic-latency: [..] (not modeled)" — keys of ASTRA-sim's analytical backend read and left out.
  std::vector<std::string> ignored;
};

/// Read a network file (.yml/.yaml: 2.x, .json: 1.0). Throws core::ConfigError.
Network read_network(const std::string& path);
/// The same from the file's text (`path`'s extension picks the format; fuzz target).
Network read_network_string(const std::string& text, const std::string& path);

/// One fabricvp parameter a system file sets.
struct Setting {
  std::string param;   ///< "collective.chunks"
  std::string value;   ///< "16"
  std::string origin;  ///< where: "sys.txt:4: preferred-dataset-splits" (what an error about the value names)
};

/// A fabricvp platform file (topology ndim) for `n`, with the collective
/// settings `overrides` (from read_system) written in.
std::string platform_yaml(const Network& n, const std::vector<Setting>& overrides = {});

struct System {
  std::string file;
  std::vector<Setting> overrides;
  /// "boost-mode: 1 (not modeled)" — what was read and changes nothing here.
  std::vector<std::string> ignored;
};

/// Read a system file (.json: 2.x, anything else: 1.0 text). Throws core::ConfigError.
System read_system(const std::string& path);
System read_system_string(const std::string& text, const std::string& path);

}  // namespace fabricvp::training::astra
