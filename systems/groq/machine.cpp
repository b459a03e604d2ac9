#include "systems/groq/machine.h"

namespace fabricvp::groq {

sched::Machine machine_of(const System& sys) {
  sched::Machine m;
  for (size_t i = 0; i < sys.chips.size(); ++i) {
    const tsp::Tsp* t = sys.chips[i];
    sched::ChipSpec c;
    c.name = t->name();
    c.clock = t->nominal_clock();  // the compiler cannot know the chips' real oscillators
    c.send_latency = t->send_latency;
    c.recv_latency = t->recv_latency;
    c.add_latency = t->add_latency;
    c.fly_latency = t->fly_latency;
    c.mxm_planes = t->mxm_planes;
    c.mxm_latency = t->mxm_latency;
    c.lw_rate = t->lw_vectors_per_cycle;
    c.lw_latency = t->lw_latency;
    c.sxm_units = t->sxm_units;
    c.sxm_rate = t->sxm_vectors_per_cycle;
    c.sxm_latency = t->sxm_latency;
    c.pcie = t->pcie().rate();
    c.pcie_latency_ps = t->pcie().latency_ps();
    c.queues = t->queues;
    c.alus = t->vxm_alus;
    c.tx_buffer = t->tx_buffer_vectors;
    c.rx_buffer = t->rx_buffer_vectors;
    c.imem = t->imem_instructions;
    c.node = sys.coord[i].rack * sys.nodes_in_rack() + sys.coord[i].node;
    c.failed = sys.chip_failed[i];
    c.ports.resize(t->port_count());
    m.chips.push_back(std::move(c));
  }
  for (const c2c::Cable& w : sys.cables) {
    m.chips[w.a_chip].ports[w.a_port] = sched::PortSpec{
        w.b_chip, w.b_port, sched::LinkSpec{w.link->a_to_b.rate(), w.link->a_to_b.latency_ps()}, w.failed};
    m.chips[w.b_chip].ports[w.b_port] = sched::PortSpec{
        w.a_chip, w.a_port, sched::LinkSpec{w.link->b_to_a.rate(), w.link->b_to_a.latency_ps()}, w.failed};
  }
  m.ranks = sys.ranks;
  m.coord = sys.rank_coord;
  m.racks = sys.logical_racks;
  m.nodes_per_rack = sys.logical_nodes_per_rack;
  m.tsps_per_node = sys.chips.empty() ? 1 : static_cast<uint32_t>(sys.tsps_per_node.get());
  return m;
}

}  // namespace fabricvp::groq
