// The input-buffer model of a PsPIN-like switch (seed 004, section 5): how
// many packets its L2 packet buffer holds when P ports deliver packets at line
// rate, each message's packets go to its home cluster (hierarchical FCFS:
// message mod clusters, then the first free core of that cluster) and every
// packet takes a core for the same service time. The switch's own arrival
// order (hosts in step or staggered) and scheduling decide the queue; the
// model computes it without simulating the switch: per cluster, first come
// first served over its cores with a constant service time, from the ports'
// arrival instants. docs/flare.md derives the closed forms of the two cases
// of the paper's Fig. 5 and compares the model with the simulation.
#pragma once

#include <cstdint>
#include <string>

namespace fabricvp::pspin {

/// The message port `port` sends at step `step` when port p starts at message p x stagger (mod messages): the
/// order of the packet generator's --ports and of the model's arrivals.
inline uint32_t staggered_message(uint32_t step, uint32_t port, uint32_t stagger, uint32_t messages) {
  return static_cast<uint32_t>((step + uint64_t(port) * stagger) % messages);
}

struct InputBufferModel {
  // arrivals: `ports` ports, each receiving a packet every `gap_ps` (line rate), back to back
  uint32_t ports = 1;
  uint32_t messages = 1;
  uint32_t per_port = 1;  // packets of each message on each port (consecutive)
  uint32_t stagger = 0;   // port p starts at message p x stagger (mod messages)
  uint64_t gap_ps = 0;
  // the switch
  uint32_t clusters = 1, cores = 1;  // cores per cluster
  uint32_t hers_per_cluster = 20;    // tasks a cluster holds before its packets go elsewhere
  // The switch works in cycles of `period_ps`: a packet that arrives at the latest by cycle c is taken by its cluster
  // at c + place_cycles (L2 write), is ready for a core at c + ready_cycles (and the L1 copy) and holds its core, and
  // its L2 space, for service_cycles (dispatch + handler) from the cycle it starts.
  uint64_t period_ps = 1000;
  uint64_t place_cycles = 0, ready_cycles = 0, service_cycles = 0;

  struct Result {
    double mean_packets = 0;  // time average of the packets in the buffer, first arrival to last departure
    uint64_t peak_packets = 0;
    double mean_wait_ps = 0;  // for a free core, per packet
    double mean_edge_ps = 0;  // from a packet's arrival to the clock edge the switch takes it at, per packet
    uint64_t peak_cluster_tasks = 0;
    bool spills = false;  // a cluster would hold more than hers_per_cluster: the model does not apply
    uint64_t first_arrival_ps = 0, last_departure_ps = 0;
  };
  /// Throws std::invalid_argument on parameters that make no switch (zero ports, cores, ...).
  Result solve() const;
};

}  // namespace fabricvp::pspin
