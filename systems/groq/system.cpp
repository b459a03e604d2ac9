#include "systems/groq/system.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace fabricvp::groq {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" \t[]"), e = item.find_last_not_of(" \t[]");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

// The writer is a method, not a thread: it runs on the kernel's stack (no
// coroutine), and wakes only when the next write is due.
Host::Host(const sc_core::sc_module_name& nm)
    : core::Module(nm, "host"),
      mem("mem"),
      pcie_in("pcie_in"),
      pcie_jitter_ns(this, "pcie_jitter_ns", 0.0, "ns",
                     "invoked runs: mean of the exponential invocation delay before each host-initiated PCIe transfer "
                     "(input) and before the host notices an output",
                     0.0, 1e9),
      launch_ns(this, "launch_ns", 0.0, "ns", "invoked runs: from the inputs landing to the program's launch", 0.0,
                1e9) {
  pcie_in.register_b_transport(this, &Host::pcie_b);
  SC_METHOD(writer);
  sensitive << m_go;
  dont_initialize();
  SC_METHOD(runtime);
  sensitive << m_rt;
  dont_initialize();
}

void Host::invoke(Invocation inv) {
  if (inv.runs == 0 || !inv.out_chip || inv.chips.empty()) throw std::logic_error("host: an invocation needs runs");
  m_inv = std::move(inv);
  m_runs.clear();
  m_inv.out_chip->set_host_write_hook([this](const tsp::Tsp::HostWriteDone& w) {
    if (m_phase != Phase::launch || w.host_vec != m_inv.out_vec) return;
    m_runs.back().output = w.done_ps;
    m_phase = Phase::noticed;
    const uint64_t at = w.done_ps + invocation_delay(2 * (m_runs.size() - 1) + 1);  // stream 2r + 1: run r's output
    m_rt.notify(sc_core::sc_time::from_value(at - sc_core::sc_time_stamp().value()));
  });
  m_phase = Phase::begin;
  m_rt.notify(sc_core::SC_ZERO_TIME);
}

// Exponential with mean pcie_jitter_ns, a function of (seed, stream): runs
// are reproducible. Stream 2r: run r's inputs; 2r + 1: noticing its output.
uint64_t Host::invocation_delay(uint64_t stream) const {
  if (pcie_jitter_ns <= 0) return 0;
  const uint64_t h = core::splitmix64(core::Context::get().seed() * 0x9e3779b97f4a7c15ULL + 0x9c1e + stream);
  const double u = (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (0, 1)
  return static_cast<uint64_t>(std::llround(-std::log(u) * pcie_jitter_ns * 1000.0));
}

void Host::runtime() {
  const uint64_t now = sc_core::sc_time_stamp().value();
  switch (m_phase) {
    case Phase::begin: {  // run r: its inputs after an invocation delay
      RunTimes t;
      t.begin = now;
      const uint32_t r = static_cast<uint32_t>(m_runs.size());
      const uint64_t ready = now + invocation_delay(2 * r);
      uint64_t landed = ready;
      for (TimedWrite& w : m_inv.inputs(r)) {
        if (m_rt_buf.size() < w.len) m_rt_buf.resize(w.len);
        if (w.fill) w.fill(m_rt_buf.data());
        landed = std::max(landed, dma(w.chip, w.addr, m_rt_buf.data(), w.len, ready));
      }
      t.inputs = landed;
      m_runs.push_back(t);
      m_phase = Phase::inputs;
      const uint64_t at = landed + static_cast<uint64_t>(std::llround(launch_ns * 1000.0));
      next_trigger(sc_core::sc_time::from_value(at - now));
      return;
    }
    case Phase::inputs:  // they are in: every chip starts at its next epoch boundary, program time 0 there
      for (tsp::Tsp* c : m_inv.chips) c->start(true);
      m_runs.back().launch = m_inv.out_chip->program_start_ps();
      m_phase = Phase::launch;
      return;  // the output chip's HOSTW hook moves on to `noticed`
    case Phase::noticed: {
      m_runs.back().noticed = now;
      m_inv.out_chip->drain(now);  // its output, in host memory at or before now, has been delivered
      m_inv.done(static_cast<uint32_t>(m_runs.size() - 1));
      if (m_runs.size() == m_inv.runs) {
        m_phase = Phase::idle;
        std::vector<uint8_t>().swap(m_rt_buf);
        return;
      }
      m_phase = Phase::begin;
      m_rt.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    case Phase::launch:
    case Phase::idle: return;
  }
}

void Host::schedule(std::vector<TimedWrite> writes) { schedule(std::move(writes), 1, 0, {}); }

void Host::schedule(std::vector<TimedWrite> writes, uint64_t rounds, uint64_t period_ps, RoundFill fill) {
  if (rounds == 0) throw std::logic_error("host schedule of zero rounds");
  m_rounds = rounds;
  m_round = 0;
  m_period_ps = period_ps;
  m_round_fill = std::move(fill);
  m_writes = std::move(writes);
  // Issue time: ready, but never before the chip's previous write (its order on the link).
  m_order.clear();
  m_next = 0;
  std::map<uint32_t, uint64_t> last;
  for (size_t i = 0; i < m_writes.size(); ++i) {
    uint64_t& prev = last[m_writes[i].chip];
    prev = std::max(prev, m_writes[i].ready_ps);
    m_order.emplace_back(prev, i);
  }
  std::stable_sort(m_order.begin(), m_order.end());  // by issue time, then given order
  m_go.notify(sc_core::SC_ZERO_TIME);
}

void Host::writer() {
  const uint64_t now = sc_core::sc_time_stamp().value();
  for (;;) {
    if (m_next == m_order.size() && m_round + 1 < m_rounds) {
      ++m_round;
      m_next = 0;
    }
    const uint64_t shift = m_round * m_period_ps;
    if (m_next == m_order.size() || m_order[m_next].first + shift > now) break;
    const size_t i = m_order[m_next].second;
    TimedWrite& w = m_writes[i];
    if (m_buf.size() < w.len) m_buf.resize(w.len);
    if (m_round_fill)
      m_round_fill(i, m_round, m_buf.data());
    else if (w.fill)
      w.fill(m_buf.data());
    // Ready in the past only when the chip's previous write is still sending: same start.
    dma(w.chip, w.addr, m_buf.data(), w.len, std::max<uint64_t>(w.ready_ps + shift, now));
    if (m_rounds == 1) w.fill = nullptr;
    ++m_next;
  }
  if (m_next < m_order.size()) {
    next_trigger(sc_core::sc_time::from_value(m_order[m_next].first + m_round * m_period_ps - now));
  } else {
    std::vector<TimedWrite>().swap(m_writes);
    m_round_fill = nullptr;
    std::vector<uint8_t>().swap(m_buf);
    std::vector<std::pair<uint64_t, size_t>>().swap(m_order);
  }
}

void Host::access(size_t chip, uint64_t addr, void* data, uint64_t len, bool write) {
  tlm::tlm_generic_payload gp;
  gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(addr);
  gp.set_data_ptr(static_cast<unsigned char*>(data));
  gp.set_data_length(static_cast<unsigned int>(len));
  gp.set_streaming_width(static_cast<unsigned int>(len));
  gp.set_byte_enable_ptr(nullptr);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  unsigned int n = mem[static_cast<int>(chip)]->transport_dbg(gp);
  if (n != len || gp.get_response_status() != tlm::TLM_OK_RESPONSE)
    throw std::runtime_error(
        fmt::format("host {} of {} bytes at 0x{:x} on chip {} failed", write ? "write" : "read", len, addr, chip));
}

void Host::write(size_t chip, uint64_t addr, const void* data, uint64_t len) {
  // Debug transport moves at most 4 GiB per call; chunk large transfers.
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (len) {
    uint64_t n = std::min<uint64_t>(len, 1u << 24);
    access(chip, addr, const_cast<uint8_t*>(p), n, true);
    p += n;
    addr += n;
    len -= n;
  }
}

uint64_t Host::dma(size_t chip, uint64_t addr, const void* data, uint64_t len, uint64_t ready_ps) {
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(addr);
  gp.set_data_ptr(static_cast<unsigned char*>(const_cast<void*>(data)));
  gp.set_data_length(static_cast<unsigned int>(len));
  gp.set_streaming_width(static_cast<unsigned int>(len));
  gp.set_byte_enable_ptr(nullptr);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  const uint64_t now = sc_core::sc_time_stamp().value();
  if (ready_ps < now)
    throw std::logic_error(fmt::format("host DMA to chip {} ready at {} ps, in the past ({} ps)", chip, ready_ps, now));
  sc_core::sc_time delay = sc_core::sc_time::from_value(ready_ps - now);
  mem[static_cast<int>(chip)]->b_transport(gp, delay);
  if (gp.get_response_status() != tlm::TLM_OK_RESPONSE)
    throw std::runtime_error(
        fmt::format("host DMA of {} bytes at 0x{:x} on chip {} failed: {}", len, addr, chip, gp.get_response_string()));
  return now + delay.value();
}

void Host::pcie_b(int chip, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  (void)delay;  // host memory takes the write when it lands
  const uint64_t addr = gp.get_address(), len = gp.get_data_length();
  if (gp.get_command() != tlm::TLM_WRITE_COMMAND || addr % tsp::kVectorBytes || len % tsp::kVectorBytes ||
      !gp.get_data_ptr()) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if (m_from.size() <= static_cast<size_t>(chip)) m_from.resize(chip + 1);
  const uint8_t* d = gp.get_data_ptr();
  for (uint64_t v = 0; v < len / tsp::kVectorBytes; ++v)
    std::copy(d + v * tsp::kVectorBytes, d + (v + 1) * tsp::kVectorBytes,
              m_from[chip][addr / tsp::kVectorBytes + v].begin());
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

bool Host::received(size_t chip, uint64_t addr, void* data, uint64_t len) const {
  uint8_t* out = static_cast<uint8_t*>(data);
  std::fill(out, out + len, 0);
  if (addr % tsp::kVectorBytes || len % tsp::kVectorBytes) return false;
  if (chip >= m_from.size()) return len == 0;
  bool all = true;
  for (uint64_t v = 0; v < len / tsp::kVectorBytes; ++v) {
    const auto it = m_from[chip].find(addr / tsp::kVectorBytes + v);
    if (it == m_from[chip].end()) {
      all = false;
      continue;
    }
    std::copy(it->second.begin(), it->second.end(), out + v * tsp::kVectorBytes);
  }
  return all;
}

uint64_t Host::received_vectors() const {
  uint64_t n = 0;
  for (const auto& m : m_from) n += m.size();
  return n;
}

void Host::read(size_t chip, uint64_t addr, void* data, uint64_t len) {
  uint8_t* p = static_cast<uint8_t*>(data);
  while (len) {
    uint64_t n = std::min<uint64_t>(len, 1u << 24);
    access(chip, addr, p, n, false);
    p += n;
    addr += n;
    len -= n;
  }
}

Node::Node(const sc_core::sc_module_name& nm, Wiring& w) : core::Module(nm, "node") {
  const uint32_t tsps = w.tsps;
  for (uint32_t i = 0; i < tsps; ++i) tsp.push_back(std::make_unique<tsp::Tsp>(fmt::format("tsp{}", i).c_str()));
  auto add = [&](const std::string& lname, uint32_t a, uint32_t pa, uint32_t b, uint32_t pb) {
    link.push_back(std::make_unique<c2c::Link>(lname.c_str(), tsp[a]->name(), tsp[b]->name(), w.phy));
    w.pending.push_back(Wiring::Pending{Coord{0, 0, a}, pa, Coord{0, 0, b}, pb, link.back().get()});
  };
  if (w.node_wiring == "full") {
    for (uint32_t i = 0; i < tsps; ++i)
      for (uint32_t j = i + 1; j < tsps; ++j) add(fmt::format("link{}_{}", i, j), i, j - 1, j, i);
  } else {  // ring: port k of TSP i goes to the next TSP, port ring_links + k to the previous one
    for (uint32_t i = 0; i < tsps; ++i) {
      uint32_t j = (i + 1) % tsps;
      if (tsps == 2 && i == 1) break;  // a ring of two is one bundle
      for (uint32_t k = 0; k < w.ring_links; ++k)
        add(fmt::format("link{}_{}_{}", std::min(i, j), std::max(i, j), k), i, k, j, w.ring_links + k);
    }
  }
}

Node::~Node() {
  core::destroy_newest_first(link);
  core::destroy_newest_first(tsp);
}

Rack::~Rack() {
  core::destroy_newest_first(link);
  core::destroy_newest_first(node);
}

System::~System() {
  core::destroy_newest_first(link);
  core::destroy_newest_first(rack);
  core::destroy_newest_first(node);
}

Rack::Rack(const sc_core::sc_module_name& nm, uint32_t nodes, Wiring& w) : core::Module(nm, "rack") {
  for (uint32_t n = 0; n < nodes; ++n) node.push_back(std::make_unique<Node>(fmt::format("node{}", n).c_str(), w));
  // Half of every node's global ports join the nodes of the rack, evenly.
  uint32_t half = w.tsps * w.global_ports / 2;
  if (nodes < 2) return;
  uint32_t per_pair = half / (nodes - 1);
  if (per_pair == 0)
    throw core::ConfigError(
        fmt::format("{}: {} nodes per rack need at least {} intra-rack global ports per node, "
                    "there are {}",
                    name(), nodes, nodes - 1, half));
  for (uint32_t a = 0; a < nodes; ++a)
    for (uint32_t b = a + 1; b < nodes; ++b)
      for (uint32_t k = 0; k < per_pair; ++k) {
        auto [ta, pa] = w.global_port((b - 1) * per_pair + k);  // b is a's (b-1)-th peer
        auto [tb, pb] = w.global_port(a * per_pair + k);        // a is b's a-th peer
        link.push_back(std::make_unique<c2c::Link>(fmt::format("rlink{}_{}_{}", a, b, k).c_str(),
                                                   node[a]->tsp[ta]->name(), node[b]->tsp[tb]->name(), w.phy));
        w.pending.push_back(Wiring::Pending{Coord{0, a, ta}, pa, Coord{0, b, tb}, pb, link.back().get()});
      }
}

System::System(const sc_core::sc_module_name& nm)
    : core::Module(nm, "system"),
      description(this, "description", "", "", "free text shown in the run summary"),
      topology(this, "topology", "groq_node", "", "groq_node (one node) or dragonfly", {"groq_node", "dragonfly"}),
      tsps_per_node(this, "tsps_per_node", 8, "TSPs", "TSPs in a node (seed 000 §2.2: 8)", 2, 8),
      node_wiring(this, "node_wiring", "full", "",
                  "full: every pair of a node's TSPs one cable (Fig 6a); ring: radix-n ring (Fig 6b)",
                  {"full", "ring"}),
      ring_links(this, "ring_links", 3, "cables", "cables per neighbour pair in a ring node (Fig 6b: 3)", 1, 32),
      failed_nodes(this, "failed_nodes", "", "",
                   "comma-separated node paths below sys marked dead, e.g. node5 or rack3.node2"),
      failed_links(this, "failed_links", "", "",
                   "comma-separated cable paths below sys marked dead, e.g. glink0_5_0 or node2.link1_3"),
      phy("phy"),
      host("host") {
  if (topology.get() == "dragonfly") {
    racks = std::make_unique<core::Param<uint32_t>>(this, "racks", 1, "racks",
                                                    "racks (seed 000: 1 rack of 33 nodes = 264 TSPs, or 145 racks of 9 "
                                                    "nodes = 10,440 TSPs)",
                                                    1, 4096);
    nodes_per_rack = std::make_unique<core::Param<uint32_t>>(
        this, "nodes_per_rack", 33, "nodes", "nodes per rack (with one rack: nodes in the system)", 1, 4096);
    spares = std::make_unique<core::Param<std::string>>(
        this, "spares", "none", "", "hot-spare nodes kept out of the job: none, per_rack or per_system (seed 000 §4.5)",
        std::initializer_list<const char*>{"none", "per_rack", "per_system"});
    m_racks = *racks;
    m_nodes = *nodes_per_rack;
  }
  m_tsps = tsps_per_node;
  auto& cfg = core::Context::get().config();
  if (topology.get() != "dragonfly") {
    const std::string why =
        fmt::format("only a Dragonfly has racks and global cables ({}.topology is {})", name(), topology.get());
    for (const char* k : {"racks", "nodes_per_rack", "spares", "rack", "glink", "xlink"})
      cfg.note_absent(fmt::format("{}.{}", name(), k), why);
  } else if (m_racks == 1) {
    cfg.note_absent(
        fmt::format("{}.xlink", name()),
        fmt::format("one rack ({}.racks is 1) has no inter-rack cables: its global cables are glink*", name()));
  } else {
    cfg.note_absent(fmt::format("{}.glink", name()),
                    fmt::format("with {} racks the global cables are rack*.rlink* and xlink*", m_racks));
  }

  // The generators wire the TSP's 7 local and 4 global ports (checked below).
  Wiring w;
  w.tsps = m_tsps;
  w.node_wiring = node_wiring;
  w.ring_links = ring_links;
  w.phy = &phy;
  std::vector<Wiring::Pending>& pending = w.pending;

  // Nodes record their cables with node 0 and racks with rack 0; place them.
  if (m_racks == 1) {
    for (uint32_t n = 0; n < m_nodes; ++n) {
      size_t before = pending.size();
      node.push_back(std::make_unique<Node>(fmt::format("node{}", n).c_str(), w));
      for (size_t i = before; i < pending.size(); ++i) pending[i].a.node = pending[i].b.node = n;
    }
  } else {
    for (uint32_t r = 0; r < m_racks; ++r) {
      size_t before = pending.size();
      rack.push_back(std::make_unique<Rack>(fmt::format("rack{}", r).c_str(), m_nodes, w));
      size_t k = before;
      for (uint32_t n = 0; n < m_nodes; ++n)
        for (size_t l = 0; l < rack.back()->node[n]->link.size(); ++l, ++k) pending[k].a.node = pending[k].b.node = n;
      for (size_t i = before; i < pending.size(); ++i) pending[i].a.rack = pending[i].b.rack = r;
    }
  }
  for (uint32_t r = 0; r < m_racks; ++r)
    for (uint32_t n = 0; n < m_nodes; ++n)
      for (uint32_t t = 0; t < m_tsps; ++t) {
        tsp::Tsp& c = chip_at(r, n, t);
        chips.push_back(&c);
        coord.push_back(Coord{r, n, t});
      }
  for (tsp::Tsp* c : chips)
    if (c->local_ports != chips[0]->local_ports || c->global_ports != chips[0]->global_ports)
      throw core::ConfigError(
          fmt::format("{}: every chip must have the same port counts; {} has {} local + {} global, "
                      "{} has {} + {}",
                      name(), c->name(), c->local_ports.get(), c->global_ports.get(), chips[0]->name(),
                      chips[0]->local_ports.get(), chips[0]->global_ports.get()));
  if (chips[0]->local_ports != w.local_ports || chips[0]->global_ports != w.global_ports) {
    throw core::ConfigError(
        fmt::format("{}: the node and Dragonfly generators assume 7 local and 4 global ports per "
                    "TSP (seed 000); {} has {} + {}",
                    name(), chips[0]->name(), chips[0]->local_ports.get(), chips[0]->global_ports.get()));
  }
  uint32_t need_local = node_wiring.get() == "full" ? m_tsps - 1 : 2 * ring_links;
  if (need_local > 7)
    throw core::ConfigError(fmt::format("{}: {} wiring of {} TSPs needs {} local ports per chip, a TSP has 7", name(),
                                        node_wiring.get(), m_tsps, need_local));
  if (topology.get() == "dragonfly") wire_global(w);

  chip_failed.assign(chips.size(), false);
  for (const Wiring::Pending& p : pending) {
    uint32_t a = chip_index(p.a.rack, p.a.node, p.a.tsp), b = chip_index(p.b.rack, p.b.node, p.b.tsp);
    tsp::Port& A = chips[a]->port(p.pa);
    tsp::Port& B = chips[b]->port(p.pb);
    A.tx.bind(p.link->a_tx);
    B.tx.bind(p.link->b_tx);
    p.link->a_to_b.bind_out(B.rx);
    p.link->b_to_a.bind_out(A.rx);
    A.attach(p.link->a_to_b, p.link->b_to_a, chips[b]->name());
    B.attach(p.link->b_to_a, p.link->a_to_b, chips[a]->name());
    cables.push_back(c2c::Cable{a, p.pa, b, p.pb, p.link, false});
    links.push_back(p.link);
  }
  for (auto* t : chips) host.mem.bind(t->ctrl);
  for (auto* t : chips) t->host_out.bind(host.pcie_in);
  apply_failures_and_spares();
  hac = std::make_unique<hac::Network>("hac", chips, cables, chip_failed);
}

tsp::Tsp& System::chip_at(uint32_t r, uint32_t n, uint32_t t) {
  return m_racks == 1 ? *node[n]->tsp[t] : *rack[r]->node[n]->tsp[t];
}

std::string System::node_path(uint32_t r, uint32_t n) const {
  return m_racks == 1 ? fmt::format("node{}", n) : fmt::format("rack{}.node{}", r, n);
}

void System::wire_global(Wiring& w) {
  const uint32_t gports = w.tsps * w.global_ports;
  auto add = [&](const std::string& lname, Coord a, uint32_t ga, Coord b, uint32_t gb) {
    auto [ta, pa] = w.global_port(ga);
    auto [tb, pb] = w.global_port(gb);
    a.tsp = ta;
    b.tsp = tb;
    link.push_back(std::make_unique<c2c::Link>(lname.c_str(), chip_at(a.rack, a.node, ta).name(),
                                               chip_at(b.rack, b.node, tb).name(), w.phy));
    w.pending.push_back(Wiring::Pending{a, pa, b, pb, link.back().get()});
  };
  if (m_racks == 1) {
    if (m_nodes < 2) return;
    uint32_t per_pair = gports / (m_nodes - 1);
    if (per_pair == 0)
      throw core::ConfigError(fmt::format("{}: {} nodes need at least {} global ports per node, there are {}", name(),
                                          m_nodes, m_nodes - 1, gports));
    for (uint32_t a = 0; a < m_nodes; ++a)
      for (uint32_t b = a + 1; b < m_nodes; ++b)
        for (uint32_t k = 0; k < per_pair; ++k)
          add(fmt::format("glink{}_{}_{}", a, b, k), Coord{0, a, 0}, (b - 1) * per_pair + k, Coord{0, b, 0},
              a * per_pair + k);
    return;
  }
  // Between racks: the other half of the ports; port q of a rack (q < nodes * half)
  // is on node q % nodes, global port half + q / nodes.
  uint32_t half = gports / 2;
  uint32_t per_pair = m_nodes * half / (m_racks - 1);
  if (per_pair == 0)
    throw core::ConfigError(fmt::format("{}: {} racks need at least {} inter-rack ports per rack, there are {}", name(),
                                        m_racks, m_racks - 1, m_nodes * half));
  auto port_of = [&](uint32_t q) { return std::pair<uint32_t, uint32_t>{q % m_nodes, half + q / m_nodes}; };
  for (uint32_t a = 0; a < m_racks; ++a)
    for (uint32_t b = a + 1; b < m_racks; ++b)
      for (uint32_t k = 0; k < per_pair; ++k) {
        auto [na, ga] = port_of((b - 1) * per_pair + k);
        auto [nb, gb] = port_of(a * per_pair + k);
        add(fmt::format("xlink{}_{}_{}", a, b, k), Coord{a, na, 0}, ga, Coord{b, nb, 0}, gb);
      }
}

void System::apply_failures_and_spares() {
  const uint32_t total_nodes = m_racks * m_nodes;
  std::vector<bool> node_failed(total_nodes, false);
  std::map<std::string, uint32_t> by_path;
  for (uint32_t r = 0; r < m_racks; ++r)
    for (uint32_t n = 0; n < m_nodes; ++n) by_path[node_path(r, n)] = r * m_nodes + n;
  auto where = [](const core::ParamBase& p) { return p.source() ? p.source()->origin.str() + ": " : std::string(); };
  for (const std::string& item : split_list(failed_nodes)) {
    std::string key = item.rfind("sys.", 0) == 0 ? item.substr(4) : item;
    auto it = by_path.find(key);
    if (it == by_path.end())
      throw core::ConfigError(fmt::format("{}sys.failed_nodes: no node named '{}' (nodes are {} .. {})",
                                          where(failed_nodes), item, node_path(0, 0),
                                          node_path(m_racks - 1, m_nodes - 1)));
    node_failed[it->second] = true;
  }
  std::map<std::string, size_t> wire_by_path;
  for (size_t w = 0; w < cables.size(); ++w) wire_by_path[std::string(cables[w].link->name()).substr(4)] = w;
  for (const std::string& item : split_list(failed_links)) {
    std::string key = item.rfind("sys.", 0) == 0 ? item.substr(4) : item;
    auto it = wire_by_path.find(key);
    if (it == wire_by_path.end())
      throw core::ConfigError(fmt::format("{}sys.failed_links: no cable named '{}'", where(failed_links), item));
    cables[it->second].failed = true;
  }
  for (size_t c = 0; c < chips.size(); ++c) chip_failed[c] = node_failed[c / m_tsps];
  for (c2c::Cable& w : cables)
    if (chip_failed[w.a_chip] || chip_failed[w.b_chip]) w.failed = true;

  // Spares and the logical machine.
  std::string policy = spares ? spares->get() : "none";
  std::vector<bool> is_spare(total_nodes, false);
  if (policy == "per_system") is_spare[total_nodes - 1] = true;
  if (policy == "per_rack")
    for (uint32_t r = 0; r < m_racks; ++r) is_spare[r * m_nodes + m_nodes - 1] = true;
  std::vector<uint32_t> logical;  // physical node of each logical node slot
  std::vector<uint32_t> slot_rack;
  std::vector<bool> spare_taken(total_nodes, false);
  for (uint32_t g = 0; g < total_nodes; ++g) {
    if (is_spare[g]) continue;
    uint32_t phys = g;
    if (node_failed[g]) {
      // Take a healthy unused spare: the rack's own (per_rack) or the system's.
      phys = total_nodes;
      for (uint32_t s = 0; s < total_nodes; ++s) {
        bool same_scope = policy == "per_system" || s / m_nodes == g / m_nodes;
        if (is_spare[s] && !spare_taken[s] && same_scope && !node_failed[s]) {
          phys = s;
          spare_taken[s] = true;
          break;
        }
      }
      if (phys == total_nodes)
        throw core::ConfigError(
            fmt::format("{}sys.failed_nodes: node {} failed and no healthy spare is left "
                        "(spares: {})",
                        where(failed_nodes), node_path(g / m_nodes, g % m_nodes), policy));
      log(core::Level::info, "failed node {} replaced by spare {}", node_path(g / m_nodes, g % m_nodes),
          node_path(phys / m_nodes, phys % m_nodes));
    }
    logical.push_back(phys);
    slot_rack.push_back(g / m_nodes);
  }
  // Logical coordinates: racks keep their slots; a job with unequal racks is flattened to one rack.
  std::vector<uint32_t> per_rack(m_racks, 0);
  for (uint32_t r : slot_rack) ++per_rack[r];
  bool equal = std::all_of(per_rack.begin(), per_rack.end(), [&](uint32_t c) { return c == per_rack[0]; });
  logical_racks = equal ? m_racks : 1;
  logical_nodes_per_rack = equal ? per_rack[0] : static_cast<uint32_t>(logical.size());
  ranks.clear();
  rank_coord.clear();
  for (uint32_t s = 0; s < logical.size(); ++s)
    for (uint32_t t = 0; t < m_tsps; ++t) {
      ranks.push_back(logical[s] * m_tsps + t);
      rank_coord.push_back(equal ? Coord{s / per_rack[0], s % per_rack[0], t} : Coord{0, s, t});
    }
}

}  // namespace fabricvp::groq
