// Platform elaboration: the `sys` module tree built from a platform file.
//
// The topology is generated from a few parameters, never enumerated by hand.
// Today: `sys.topology: groq_node` — one GroqNode of `tsps_per_node` TSPs
// (seed 000 §2.2: 8), every pair joined by one C2C link on local ports:
//   sys.node0.tsp<i>            TSP i
//   sys.node0.link<i>_<j>       link between TSP i and TSP j (i < j); side a = i
//   sys.host                    host interface: loads programs and data, reads results
// TSP i reaches TSP j on its local port (j < i ? j : j - 1), so port k of every
// chip leads to the k-th other chip in index order.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/c2c/link.h"
#include "models/core/module.h"
#include "models/tsp/tsp.h"

namespace fabricvp::platform {

/// Host side of every chip's control socket (program and data loading, result readback).
class Host : public core::Module {
 public:
  explicit Host(const sc_core::sc_module_name& nm);
  tlm_utils::multi_passthrough_initiator_socket<Host> mem;
  void write(size_t chip, uint64_t addr, const void* data, uint64_t len);
  void read(size_t chip, uint64_t addr, void* data, uint64_t len);

 private:
  void access(size_t chip, uint64_t addr, void* data, uint64_t len, bool write);
};

class Node : public core::Module {
 public:
  Node(const sc_core::sc_module_name& nm, uint32_t tsps);
  std::vector<std::unique_ptr<tsp::Tsp>> tsp;
  std::vector<std::unique_ptr<c2c::Link>> link;
};

/// One physical link between two chip ports (global chip indices).
struct Wire {
  uint32_t a_chip, a_port, b_chip, b_port;
  c2c::Link* link;
};

class System : public core::Module {
 public:
  explicit System(const sc_core::sc_module_name& nm = "sys");

  core::Param<std::string> description;
  core::Param<std::string> topology;
  core::Param<uint32_t> tsps_per_node;

  std::vector<std::unique_ptr<Node>> node;
  Host host;

  // Flat views in global chip order.
  std::vector<tsp::Tsp*> chips;
  std::vector<Wire> wires;
  std::vector<c2c::Link*> links;

  /// Port of chip a that has a direct link to chip b, or -1.
  int port_between(uint32_t a, uint32_t b) const;

 private:
  void connect(uint32_t a, uint32_t pa, uint32_t b, uint32_t pb, c2c::Link& l);
  std::vector<std::vector<int>> m_port;
};

/// Names of all declared parameters (for "did you mean" suggestions).
std::vector<std::string> parameter_names();

}  // namespace fabricvp::platform
