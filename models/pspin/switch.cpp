#include "models/pspin/switch.h"

#include <fmt/format.h>

#include "models/core/context.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace fabricvp::pspin {

namespace {

constexpr uint32_t kGranule = 64;                              // L2 and L1 packet buffers allocate in 64-byte units
constexpr uint32_t kTrampoline = kProgBase + kProgBytes - 16;  // handler return: read the doorbell
constexpr uint32_t kHpuWindow = 0x1b204000u;                   // DMA, HPU registers, console
constexpr uint32_t kHpuWindowBytes = 0x4000u;

uint32_t round_up(uint32_t v, uint32_t g) { return (v + g - 1) / g * g; }

}  // namespace

Ranges::Ranges(uint32_t size) : m_size(size) { m_free[0] = size; }

std::optional<uint32_t> Ranges::alloc(uint32_t n) {
  for (auto it = m_free.begin(); it != m_free.end(); ++it) {
    if (it->second >= n) {
      const uint32_t at = it->first;
      const uint32_t rest = it->second - n;
      m_free.erase(it);
      if (rest) m_free[at + n] = rest;
      m_used += n;
      return at;
    }
  }
  return std::nullopt;
}

void Ranges::free(uint32_t at, uint32_t n) {
  m_used -= n;
  auto next = m_free.lower_bound(at);
  if (next != m_free.end() && at + n == next->first) {
    n += next->second;
    next = m_free.erase(next);
  }
  if (next != m_free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == at) {
      prev->second += n;
      return;
    }
  }
  m_free[at] = n;
}

struct Task {
  enum Kind { HH = 0, PH = 1, TH = 2 } kind = PH;
  uint32_t msg = 0;
  size_t packet = 0;  // index in m_packets
  uint32_t l2_addr = 0, l2_alloc = 0, bytes = 0;
  int cluster = -1;
  uint32_t l1_addr = 0, l1_bytes = 0, l1_alloc = 0;
  bool sends_feedback = false;
  uint64_t arrived_ps = 0;  // the packet's last bit arrived
  uint32_t handler = 0;
};

struct Switch::Message {
  uint32_t id = 0;
  bool hh_done = true;
  std::vector<Task*> held;  // payload tasks waiting for the header handler
  uint32_t ph_open = 0;     // payload tasks created and not complete
  bool eom_seen = false;
  size_t eom_packet = 0;
  bool th_started = false;
  uint32_t seen = 0;
  uint64_t first_ps = 0, last_ps = 0;  // its first packet in L2, its last feedback
};

Core::Core(const sc_core::sc_module_name& nm, uint32_t cluster, uint32_t index)
    : core::Module(nm, "pspin.core"),
      handlers(this, nullptr, "handlers", "", "handler invocations run on this core"),
      instructions(this, nullptr, "instructions", "", "instructions retired in handlers"),
      busy_cycles(this, nullptr, "busy_cycles", "cycles", "cycles spent in handlers"),
      stall_cycles(this, nullptr, "stall_cycles", "cycles", "cycles blocked on commands, DMA or a full command queue"),
      commands(this, nullptr, "commands", "", "commands issued (packets, host writes, DMA)"),
      faults(this, nullptr, "faults", "", "handlers ended by a fault or the watchdog"),
      m_cluster(cluster),
      m_index(index) {}

Port::Port(const sc_core::sc_module_name& nm)
    : core::Module(nm, "pspin.port"),
      packets_in(this, nullptr, "packets_in", "", "packets received on this port and placed in L2"),
      bytes_in(this, nullptr, "bytes_in", "B", "bytes of those packets"),
      packets_dropped(this, nullptr, "packets_dropped", "", "packets of this port dropped: L2 buffer full"),
      pause_ps(this, nullptr, "pause_ps", "ps", "time this port waited for L2 space") {}

Cluster::Cluster(const sc_core::sc_module_name& nm, uint32_t index)
    : core::Module(nm, "pspin.cluster"),
      tasks(this, nullptr, "tasks", "", "handler executions assigned to this cluster"),
      l1_peak_bytes(this, nullptr, "l1_peak_bytes", "B", "peak occupancy of the L1 packet buffer"),
      bank_conflicts(this, nullptr, "bank_conflicts", "", "L1 accesses that waited for a busy bank"),
      bank_stall_cycles(this, nullptr, "bank_stall_cycles", "cycles", "cycles lost to L1 bank conflicts"),
      m_index(index),
      m_occ_name(fmt::format("cluster{}.tasks", index)),
      m_l1_name(fmt::format("cluster{}.l1_packet_buffer_bytes", index)) {}

Switch::Switch(const sc_core::sc_module_name& nm)
    : core::Module(nm, "pspin.switch"),
      clusters(this, "clusters", 4, "", "clusters of cores", 1u, kMaxClusters),
      cores_per_cluster(this, "cores_per_cluster", 8, "", "cores (HPUs) per cluster", 1u, kMaxCores),
      clock_MHz(this, "clock_MHz", 1000.0, "MHz", "core and cluster clock", 1.0, 10000.0),
      l1_KiB(this, "l1_KiB", 1024, "KiB", "L1 scratchpad memory (TCDM) per cluster", 256u, 4096u),
      l1_banks(this, "l1_banks", 0, "", "L1 banks per cluster, word-interleaved (0: 8 per core)", 0u, 1024u),
      l1_packet_buffer_KiB(this, "l1_packet_buffer_KiB", 64, "KiB", "L1 packet buffer per cluster", 4u, 1024u),
      l2_packet_buffer_KiB(this, "l2_packet_buffer_KiB", 4096, "KiB", "L2 packet buffer", 4u, 65536u),
      remote_l1_cycles(this, "remote_l1_cycles", 15, "cycles", "extra cycles of an access to another cluster's L1", 0u,
                       1000u),
      l2_cycles(this, "l2_cycles", 20, "cycles", "extra cycles of an L2 access (packet buffer, handler memory)", 0u,
                1000u),
      prog_cycles(this, "prog_cycles", 0, "cycles", "extra cycles of a data access to program memory", 0u, 1000u),
      ports(this, "ports", 1, "", "ingress ports (and egress ports)", 1u, 64u),
      port_Gbps(this, "port_Gbps", 400.0, "Gbit/s", "line rate of each port", 0.001, 100000.0),
      l2_full(this, "l2_full", std::string("pause"), "", "a packet that finds the L2 buffer full: drop | pause",
              {"drop", "pause"}),
      hers_per_cluster(this, "hers_per_cluster", 20, "",
                       "tasks a cluster holds (running + buffered); beyond, the least occupied cluster", 1u, 1024u),
      copy_bytes(this, "copy_bytes", 0, "B", "bytes of each packet copied into L1 (0: the whole packet)", 0u, 65536u),
      axi_bytes_per_cycle(this, "axi_bytes_per_cycle", 64, "B", "width of the wide interconnect and DMA", 1u, 1024u),
      dispatch_cycles(this, "dispatch_cycles", 8, "cycles", "from a task in L1 to its handler's first instruction", 0u,
                      10000u),
      quantum_cycles(this, "quantum_cycles", 64, "cycles", "cores of a cluster run this far ahead of each other", 1u,
                     100000u),
      watchdog_cycles(this, "watchdog_cycles", 1000000, "cycles", "a handler running longer is stopped (a fault)",
                      uint64_t{100}, uint64_t{1} << 40),
      host_latency_ns(this, "host_latency_ns", 500.0, "ns", "PCIe write latency to host memory", 0.0, 1e6),
      host_GBps(this, "host_GBps", 32.0, "GB/s", "PCIe bandwidth (Gen4 x16)", 0.001, 10000.0),
      egress_Gbps(this, "egress_Gbps", 0.0, "Gbit/s", "egress rate (0: port_Gbps)", 0.0, 100000.0),
      isa(this, "isa", std::string("rv32imac"), "", "core ISA: rv32imac | rv32imafc", {"rv32imac", "rv32imafc"}),
      handler_mem_KiB(this, "handler_mem_KiB", 512, "KiB", "handler memory of the execution context (L2)", 4u, 1024u),
      scratchpad_KiB(this, "scratchpad_KiB", 400, "KiB", "per-cluster scratchpad of the execution context", 1u, 4096u),
      host_mem_addr(this, "host_mem_addr", 0xdeadbeefdeadbeefull, "", "host memory of the execution context"),
      host_mem_MiB(this, "host_mem_MiB", 512, "MiB", "size of the host memory region", uint64_t{1}, uint64_t{1} << 20),
      packets_in(this, nullptr, "packets_in", "", "packets received and placed in L2"),
      bytes_in(this, nullptr, "bytes_in", "B", "bytes of the packets received"),
      packets_dropped(this, nullptr, "packets_dropped", "", "packets dropped: L2 packet buffer full (l2_full=drop)"),
      pause_ps(this, nullptr, "pause_ps", "ps", "time ports were paused because the L2 buffer was full"),
      feedbacks(this, nullptr, "feedbacks", "", "packet feedbacks (packets fully processed)"),
      packets_out(this, nullptr, "packets_out", "", "packets sent by handlers"),
      bytes_out(this, nullptr, "bytes_out", "B", "bytes of the packets sent"),
      host_writes(this, nullptr, "host_writes", "", "writes to host memory (direct and DMA)"),
      host_write_bytes(this, nullptr, "host_write_bytes", "B", "bytes written to host memory"),
      l2_peak_bytes(this, nullptr, "l2_peak_bytes", "B", "peak occupancy of the L2 packet buffer"),
      l2_peak_packets(this, nullptr, "l2_peak_packets", "packets",
                      "most packets in the L2 packet buffer at once (the input buffer: arrived, not yet fed back)"),
      handler_faults(this, nullptr, "handler_faults", "", "handlers ended by a fault"),
      watchdog_kills(this, nullptr, "watchdog_kills", "", "handlers stopped by the watchdog"),
      tasks_total(this, nullptr, "tasks", "", "handler executions (header, payload and completion)"),
      l1_waits(this, nullptr, "l1_waits", "", "times a task waited for space in its cluster's L1 packet buffer"),
      l2_mean_bytes(this, nullptr, "l2_mean_bytes", "B",
                    "time average of the L2 packet buffer's occupancy, first arrival to last feedback"),
      l2_mean_packets(this, nullptr, "l2_mean_packets", "packets",
                      "time average of the packets in the L2 packet buffer, first arrival to last feedback"),
      lat_min_ps(this, nullptr, "latency_min_ps", "ps", "packet latency, arrival to feedback: minimum"),
      lat_max_ps(this, nullptr, "latency_max_ps", "ps", "packet latency, arrival to feedback: maximum"),
      lat_sum_ps(this, nullptr, "latency_sum_ps", "ps", "packet latency, arrival to feedback: sum over packets"),
      m_q("actions") {
  m_nclusters = clusters.get();
  m_ncores = cores_per_cluster.get();
  m_period_ps = static_cast<uint64_t>(std::llround(1e6 / clock_MHz.get()));
  m_f = isa.get() == "rv32imafc";
  const uint32_t l1_bytes = l1_KiB.get() * 1024u;
  if (scratchpad_offset() + scratchpad_KiB.get() * 1024u > l1_bytes)
    throw std::invalid_argument(fmt::format(
        "{}: the L1 layout does not fit: packet buffer ({} KiB at 0x{:x}) + scratchpad ({} KiB) > l1_KiB {}", name(),
        l1_packet_buffer_KiB.get(), kL1PacketOffset, scratchpad_KiB.get(), l1_KiB.get()));
  if (kL1Base + uint64_t{m_nclusters} * kL1Stride > 0x1b000000u)
    throw std::invalid_argument(fmt::format("{}: {} clusters do not fit below 0x1b000000", name(), m_nclusters));
  if (uint64_t{l2_packet_buffer_KiB.get()} * 1024 > kProgBase - kL2PacketBase)
    throw std::invalid_argument(fmt::format("{}: l2_packet_buffer_KiB {} passes program memory at 0x{:08x}", name(),
                                            l2_packet_buffer_KiB.get(), kProgBase));
  const uint32_t runtime_slot = kL1RuntimeBytes / m_ncores;
  if (runtime_slot < 512)
    throw std::invalid_argument(
        fmt::format("{}: {} cores per cluster leave {} B of stack each (512 needed)", name(), m_ncores, runtime_slot));

  auto alloc = [](uint32_t n) { return std::make_unique<uint8_t[]>(n); };  // value-initialized: zeros
  for (uint32_t c = 0; c < m_nclusters; ++c) m_l1.push_back(alloc(l1_bytes));
  m_l2pkt = alloc(l2_packet_buffer_KiB.get() * 1024u);
  m_l2hnd = alloc(kHandlerMemBytes);
  m_prog = alloc(kProgBytes);
  m_l2_alloc = std::make_unique<Ranges>(l2_packet_buffer_KiB.get() * 1024u);
  for (uint32_t c = 0; c < m_nclusters; ++c)
    m_l1_alloc.push_back(std::make_unique<Ranges>(l1_packet_buffer_KiB.get() * 1024u));
  m_egress_free_ps.assign(ports.get(), 0);
  for (uint32_t p = 0; p < ports.get(); ++p)
    m_ports.push_back(std::make_unique<Port>(fmt::format("port{}", p).c_str()));

  const uint32_t banks = l1_banks.get() ? l1_banks.get() : 8 * m_ncores;
  for (uint32_t c = 0; c < m_nclusters; ++c) {
    auto* cl = new Cluster(fmt::format("cluster{}", c).c_str(), c);
    m_clusters.push_back(cl);
    cl->m_banks = std::make_unique<riscv::Banks>(banks, 4);
    riscv::AddressMap& map = cl->m_map;
    for (uint32_t o = 0; o < m_nclusters; ++o) {
      riscv::Region r;
      r.name = fmt::format("l1.cluster{}", o);
      r.base = kL1Base + o * kL1Stride;
      r.size = l1_bytes;
      r.host = m_l1[o].get();
      r.perms = riscv::kRead | riscv::kWrite;
      if (o == c) {
        r.banks = cl->m_banks.get();
      } else {
        r.load_cycles = static_cast<uint16_t>(remote_l1_cycles.get());
        r.store_cycles = static_cast<uint16_t>(remote_l1_cycles.get());
      }
      map.add(std::move(r));
    }
    {
      // The cluster's own L1 again at 0x1b000000 (PsPIN's local alias), same banks.
      riscv::Region r;
      r.name = "l1.local";
      r.base = kL1LocalAlias;
      r.size = std::min(l1_bytes, kTerminate - kL1LocalAlias);
      r.host = m_l1[c].get();
      r.perms = riscv::kRead | riscv::kWrite;
      r.banks = cl->m_banks.get();
      map.add(std::move(r));
    }
    auto mem = [&](const char* n, uint32_t base, uint32_t size, uint8_t* host, uint8_t perms, uint32_t lat) {
      riscv::Region r;
      r.name = n;
      r.base = base;
      r.size = size;
      r.host = host;
      r.perms = perms;
      r.load_cycles = static_cast<uint16_t>(lat);
      r.store_cycles = static_cast<uint16_t>(lat);
      map.add(std::move(r));
    };
    mem("l2.handler", kHandlerMemBase, kHandlerMemBytes, m_l2hnd.get(), riscv::kRead | riscv::kWrite, l2_cycles.get());
    mem("l2.packets", kL2PacketBase, l2_packet_buffer_KiB.get() * 1024u, m_l2pkt.get(), riscv::kRead | riscv::kWrite,
        l2_cycles.get());
    mem("prog", kProgBase, kProgBytes, m_prog.get(), riscv::kRead | riscv::kExec, prog_cycles.get());
    auto dev = [&](const char* n, uint32_t base, uint32_t size, riscv::Device d) {
      riscv::Region r;
      r.name = n;
      r.base = base;
      r.size = size;
      r.device = d;
      r.perms = riscv::kRead | riscv::kWrite;
      map.add(std::move(r));
    };
    dev("terminate", kTerminate, 4, riscv::Device{this, nullptr, &Switch::terminate_write});
    // cluster DMA (+0x400), HPU driver (+0x1000) and console (+0x2000) registers
    dev("registers", kHpuWindow, kHpuWindowBytes, riscv::Device{this, &Switch::regs_read, &Switch::regs_write});

    riscv::HartConfig hc;
    hc.f = m_f;
    for (uint32_t k = 0; k < m_ncores; ++k) {
      auto* core = new Core(fmt::format("cluster{}_core{}", c, k).c_str(), c, k);
      hc.hartid = c * 32 + k;
      core->m_hart = std::make_unique<riscv::Hart>(map, m_decode, hc);
      core->m_hart->set_trap_exits(true);
      // With the F extension the handlers find the FPU on (mstatus.FS = Initial): there is no runtime to turn it on.
      if (m_f) core->m_hart->write_csr(0x300, 1u << 13);
      cl->m_cores.push_back(core);
    }
  }
  // The return trampoline: lui t0, 0x1b205 ; lw zero, 0x50(t0) ; j .
  const uint32_t tramp[3] = {0x1b2052b7u, 0x0502a003u, 0x0000006fu};
  std::memcpy(m_prog.get() + (kTrampoline - kProgBase), tramp, sizeof tramp);
}

Switch::~Switch() {
  for (auto* c : m_clusters) {
    for (auto* k : c->m_cores) delete k;
    c->m_cores.clear();
  }
  while (!m_clusters.empty()) {
    delete m_clusters.back();
    m_clusters.pop_back();
  }
}

// ---- program and packets

void Switch::load(const riscv::ElfImage& image, const Handlers& h) {
  for (const auto& s : image.segments) {
    const uint64_t end = uint64_t{s.addr} + s.memsz;
    uint8_t* host = nullptr;
    if (s.addr >= kProgBase && end <= kTrampoline) {
      host = m_prog.get() + (s.addr - kProgBase);
    } else if (s.addr >= kHandlerMemBase && end <= uint64_t{kHandlerMemBase} + kHandlerMemBytes) {
      host = m_l2hnd.get() + (s.addr - kHandlerMemBase);
    } else {
      throw std::runtime_error(fmt::format(
          "{}: segment at 0x{:08x} ({} bytes) is neither in program memory [0x{:08x}, 0x{:08x}) nor in L2 handler "
          "memory [0x{:08x}, 0x{:08x}): link handlers with sw/handlers/rt/handler.ld",
          image.path, s.addr, s.memsz, kProgBase, kTrampoline, kHandlerMemBase, kHandlerMemBase + kHandlerMemBytes));
    }
    std::memcpy(host, s.bytes.data(), s.bytes.size());
  }
  m_handlers = h;
  const auto gp = image.symbol("__global_pointer$");
  for (auto* c : m_clusters)
    for (auto* k : c->m_cores) k->m_hart->set_x(3, gp ? *gp : 0);
  m_decode.invalidate();
  m_loaded = true;
}

void Switch::write_handler_memory(uint32_t addr, const void* data, uint32_t bytes) {
  if (addr < kHandlerMemBase || uint64_t{addr} + bytes > uint64_t{kHandlerMemBase} + kHandlerMemBytes)
    throw std::invalid_argument(fmt::format("{}: {} bytes at 0x{:08x} are not in handler memory (0x{:08x}, {} KiB)",
                                            name(), bytes, addr, kHandlerMemBase, kHandlerMemBytes / 1024));
  std::memcpy(m_l2hnd.get() + (addr - kHandlerMemBase), data, bytes);
}

void Switch::offer(std::vector<Packet> packets) {
  for (size_t i = 0; i < packets.size(); ++i)
    if (packets[i].port >= ports.get())
      throw std::invalid_argument(
          fmt::format("packet {} on port {}: the switch has {} ports", i, packets[i].port, ports.get()));
  m_ingress.assign(ports.get(), Ingress{});
  for (Packet& p : packets) {
    m_ingress[p.port].queue.push_back(m_packets.size());
    m_packets.push_back(std::move(p));
  }
  // Each port receives its packets one after the other at line rate.
  for (uint32_t p = 0; p < ports.get(); ++p) {
    m_ingress[p].busy = true;
    m_q.at(0, [this, p] { port_next(p); });
  }
  m_feedbacks_expected = m_packets.size();
}

void Switch::inject(Packet p) {
  if (p.port >= ports.get())
    throw std::invalid_argument(fmt::format("a packet on port {}: the switch has {} ports", p.port, ports.get()));
  if (m_ingress.empty()) m_ingress.assign(ports.get(), Ingress{});
  Ingress& in = m_ingress[p.port];
  in.queue.push_back(m_packets.size());
  const uint32_t port = p.port;
  m_packets.push_back(std::move(p));
  ++m_feedbacks_expected;
  m_release_packets = true;
  if (!in.busy) {
    in.busy = true;
    port_next(port);
  }
}

void Switch::port_next(uint32_t p) {
  Ingress& in = m_ingress[p];
  if (in.queue.empty()) {
    in.busy = false;
    return;
  }
  const size_t i = in.queue.front();
  in.queue.pop_front();
  const Packet& pk = m_packets[i];
  const uint64_t start = std::max(core::ActionQueue::now(), pk.offered_ps);
  const uint64_t ser = static_cast<uint64_t>(std::ceil(pk.bytes.size() * 8.0 / port_Gbps.get() * 1000.0));
  m_q.at(start + ser, [this, i, p] {
    m_first_arrival_ps = std::min(m_first_arrival_ps, core::ActionQueue::now());
    admit(i, p, core::ActionQueue::now());
  });
}

void Switch::admit(size_t i, uint32_t p, uint64_t since) {
  // Into L2, or wait for space (pause); then the port takes its next packet.
  const Packet& pk = m_packets[i];
  const uint32_t need = round_up(static_cast<uint32_t>(pk.bytes.size()), kGranule);
  l2_advance();
  auto at = m_l2_alloc->alloc(need);
  if (!at) {
    if (l2_full.get() == "drop") {
      ++packets_dropped;
      ++m_ports[p]->packets_dropped;
      log(core::Level::warn, "packet {} of message {} dropped: L2 packet buffer full", pk.index, pk.msg);
      port_next(p);
      return;
    }
    m_l2_wait.push_back(i);
    m_l2_retry.push_back([this, i, p, since] { admit(i, p, since); });
    return;
  }
  pause_ps += core::ActionQueue::now() - since;
  m_ports[p]->pause_ps += core::ActionQueue::now() - since;
  ++m_l2_packets;
  l2_peak_bytes.note_max(m_l2_alloc->used());
  l2_peak_packets.note_max(m_l2_packets);
  trace_counter("l2_packet_buffer_bytes", core::ActionQueue::now(), m_l2_alloc->used());
  ++packets_in;
  ++m_ports[p]->packets_in;
  bytes_in += pk.bytes.size();
  m_ports[p]->bytes_in += pk.bytes.size();
  std::memcpy(m_l2pkt.get() + *at, pk.bytes.data(), pk.bytes.size());
  const uint64_t write_ps = cycle_ps(ps_cycle(core::ActionQueue::now()) +
                                     (pk.bytes.size() + axi_bytes_per_cycle.get() - 1) / axi_bytes_per_cycle.get());
  const uint32_t l2_addr = kL2PacketBase + *at;
  const uint64_t arrived = core::ActionQueue::now();
  m_q.at(write_ps, [this, i, l2_addr, need, arrived] { packet_in_l2(i, l2_addr, need, arrived); });
  port_next(p);
}

void Switch::retry_l2() {
  auto waiting = std::move(m_l2_retry);
  m_l2_retry.clear();
  m_l2_wait.clear();
  for (auto& fn : waiting) fn();
}

void Switch::packet_in_l2(size_t i, uint32_t l2_addr, uint32_t alloc, uint64_t arrived) {
  const Packet& pk = m_packets[i];
  auto& mp = m_messages[pk.msg];
  if (!mp) {
    mp = std::make_unique<Message>();
    mp->id = pk.msg;
  }
  Message& m = *mp;
  auto task = [&](Task::Kind kind, uint32_t handler) {
    m_tasks.push_back(std::make_unique<Task>());
    Task* t = m_tasks.back().get();
    t->kind = kind;
    t->msg = pk.msg;
    t->packet = i;
    t->l2_addr = l2_addr;
    t->l2_alloc = alloc;
    t->bytes = static_cast<uint32_t>(pk.bytes.size());
    t->arrived_ps = arrived;
    t->handler = handler;
    return t;
  };
  const bool first = m.seen++ == 0;
  if (first) m.first_ps = arrived;
  if (first && m_handlers.hh) {
    m.hh_done = false;
    Task* h = task(Task::HH, m_handlers.hh);
    dispatch(h);
  }
  Task* p = task(Task::PH, m_handlers.ph);
  p->sends_feedback = !(pk.eom && m_handlers.th);
  ++m.ph_open;
  if (pk.eom) {
    m.eom_seen = true;
    m.eom_packet = i;
    m_eom_l2[pk.msg] = {l2_addr, alloc};
    m_eom_arrived[pk.msg] = arrived;
  }
  if (!m.hh_done)
    m.held.push_back(p);
  else
    dispatch(p);
}

void Switch::dispatch(Task* t) {
  if (t->handler == 0) {
    // no handler: nothing runs, the packet's feedback still goes out
    task_done(t, core::ActionQueue::now());
    return;
  }
  if (!place(t)) m_unplaced.push_back(t);
}

bool Switch::place(Task* t) {
  const uint32_t max_occ = hers_per_cluster.get();
  Cluster* home = m_clusters[t->msg % m_nclusters];
  Cluster* c = home;
  if (home->m_occupancy >= max_occ) {
    c = nullptr;
    for (Cluster* o : m_clusters)
      if (!c || o->m_occupancy < c->m_occupancy) c = o;
    if (c->m_occupancy >= max_occ) return false;
  }
  ++c->m_occupancy;
  trace_counter(c->m_occ_name.c_str(), core::ActionQueue::now(), c->m_occupancy);
  ++c->tasks;
  t->cluster = static_cast<int>(c->m_index);
  to_l1(*c, t);
  return true;
}

void Switch::to_l1(Cluster& c, Task* t) {
  const uint32_t want = copy_bytes.get() ? std::min(copy_bytes.get(), t->bytes) : t->bytes;
  const uint32_t alloc = round_up(std::max(want, 4u), kGranule);
  auto at = m_l1_alloc[c.m_index]->alloc(alloc);
  if (!at) {
    c.m_l1_wait.push_back(t);
    ++l1_waits;
    return;
  }
  c.l1_peak_bytes.note_max(m_l1_alloc[c.m_index]->used());
  trace_counter(c.m_l1_name.c_str(), core::ActionQueue::now(), m_l1_alloc[c.m_index]->used());
  t->l1_addr = kL1Base + c.m_index * kL1Stride + kL1PacketOffset + *at;
  t->l1_bytes = want;
  t->l1_alloc = alloc;
  const uint64_t cycles = l2_cycles.get() + (want + axi_bytes_per_cycle.get() - 1) / axi_bytes_per_cycle.get();
  const uint64_t done = cycle_ps(ps_cycle(core::ActionQueue::now()) + cycles);
  m_q.at(done, [this, &c, t] {
    std::memcpy(m_l1[c.m_index].get() + (t->l1_addr - kL1Base - c.m_index * kL1Stride),
                m_l2pkt.get() + (t->l2_addr - kL2PacketBase), t->l1_bytes);
    c.m_ready.push_back(t);
    wake(c);
  });
}

Core* Switch::start_next(Cluster& c, uint64_t now_cycle, uint64_t before) {
  // An idle core's hart may have run ahead of now (its last handler ended later in the quantum): it is free
  // from max(now, its cycle). The next ready task goes to the earliest, the lowest index among equals.
  if (c.m_ready.empty()) return nullptr;
  Core* best = nullptr;
  uint64_t best_at = before;
  for (Core* k : c.m_cores)
    if (k->m_state == Core::State::Idle) {
      const uint64_t at = std::max(now_cycle, k->m_hart->cycle());
      if (at < best_at) {
        best = k;
        best_at = at;
      }
    }
  if (!best) return nullptr;
  Task* t = c.m_ready.front();
  c.m_ready.pop_front();
  start(*best, t, best_at);
  return best;
}

void Switch::wake(Cluster& c) {
  const uint64_t now_cycle = ps_cycle(core::ActionQueue::now());
  while (start_next(c, now_cycle, UINT64_MAX)) {
  }
  post_quantum(c, core::ActionQueue::now());
}

void Switch::post_quantum(Cluster& c, uint64_t t_ps) {
  if (c.m_quantum_posted && c.m_quantum_at <= t_ps) return;
  c.m_quantum_posted = true;
  c.m_quantum_at = t_ps;
  m_q.post(t_ps, *this, kQuantum, c.m_index);
}

void Switch::act(uint32_t what, uint64_t arg) {
  (void)what;  // kQuantum
  Cluster& c = *m_clusters[arg];
  if (!c.m_quantum_posted || c.m_quantum_at != m_q.time()) return;  // superseded by an earlier one
  c.m_quantum_posted = false;
  run_cluster(c);
}

// ---- running handlers

void Switch::start(Core& k, Task* t, uint64_t cycle) {
  riscv::Hart& h = *k.m_hart;
  k.m_task = t;
  fill_task_words(k, *t);
  k.m_state = Core::State::Running;
  k.m_done = false;
  k.m_cmd_busy = 0;
  k.m_inflight = 0;
  h.set_cycle(cycle + dispatch_cycles.get());
  k.m_start_cycle = h.cycle();
  k.m_start_instret = h.instret();
  ++k.handlers;
  ++tasks_total;

  const uint32_t slot = kL1RuntimeBytes / m_ncores;
  const uint32_t l1c = kL1Base + k.m_cluster * kL1Stride;
  const uint32_t slot_base = l1c + kL1RuntimeOffset + k.m_index * slot;
  // handler_args_t at the bottom of the core's runtime slot, the stack above it
  const uint32_t args[4] = {task_base(), k.m_cluster * m_ncores + k.m_index, k.m_cluster, k.m_index};
  std::memcpy(m_l1[k.m_cluster].get() + (slot_base - l1c), args, sizeof args);
  for (unsigned r = 1; r < 32; ++r)
    if (r != 3) h.set_x(r, 0);
  h.set_x(10, slot_base);                      // a0: handler_args_t*
  h.set_x(2, slot_base + slot - 16);           // sp
  h.set_x(1, kTrampoline);                     // ra: back to the doorbell read
  h.set_x(4, (k.m_cluster << 5) | k.m_index);  // tp: PsPIN's user_core_id / user_cluster_id
  h.set_pc(t->handler);

  // What the handler may touch in user mode (PsPIN programs the same into the PMP).
  auto& rg = k.m_ranges;
  rg.clear();
  auto add = [&](uint64_t lo, uint64_t n, uint8_t perms) {
    rg.push_back(riscv::UserRange{static_cast<uint32_t>(lo), lo + n, perms});
  };
  const uint8_t rw = riscv::kRead | riscv::kWrite;
  add(t->l1_addr, t->l1_alloc, rw);
  add(t->l2_addr, t->l2_alloc, rw);
  add(kHandlerDataBase, handler_mem_KiB.get() * 1024u, rw);
  for (uint32_t c = 0; c < m_nclusters; ++c)
    add(kL1Base + c * kL1Stride + scratchpad_offset(), scratchpad_KiB.get() * 1024u, rw);
  add(kL1LocalAlias + scratchpad_offset(), scratchpad_KiB.get() * 1024u, rw);  // the own scratchpad, aliased
  add(kProgBase, kProgBytes, riscv::kRead | riscv::kExec);
  add(kHpuWindow, kHpuWindowBytes, rw);
  add(kTerminate, 4, riscv::kWrite);
  add(slot_base, slot, rw);
  h.set_user_ranges(&k.m_ranges);
  h.set_priv(riscv::Priv::User);
}

void Switch::run_core(Core& k, uint64_t until) {
  riscv::Hart& h = *k.m_hart;
  while (k.m_state == Core::State::Running) {
    const uint64_t deadline = k.m_start_cycle + watchdog_cycles.get();
    const riscv::Stop stop = h.run(std::min(until, deadline));
    if (stop == riscv::Stop::Limit) {
      if (h.cycle() < deadline) return;  // the quantum is over for this core
      ++watchdog_kills;
      fault(k, "watchdog", 0);
      continue;
    }
    handle_stop(k, stop);
  }
}

void Switch::run_cluster(Cluster& c) {
  const uint64_t now_cycle = ps_cycle(core::ActionQueue::now());
  const uint64_t until = now_cycle + quantum_cycles.get();
  for (Core* k : c.m_cores) {
    if (k->m_state != Core::State::Running) continue;
    if (k->m_hart->cycle() < now_cycle) k->m_hart->set_cycle(now_cycle);
    run_core(*k, until);
  }
  // The ready tasks go to the cores that are free first (FCFS), those free within this quantum running in it.
  while (Core* k = start_next(c, now_cycle, until)) run_core(*k, until);
  bool busy = false;
  for (Core* k : c.m_cores) busy = busy || k->m_state == Core::State::Running;
  c.bank_conflicts.set(c.m_banks->conflicts());
  c.bank_stall_cycles.set(c.m_banks->stall_cycles());
  if (busy) post_quantum(c, cycle_ps(until));
}

void Switch::handle_stop(Core& k, riscv::Stop stop) {
  riscv::Hart& h = *k.m_hart;
  if (stop == riscv::Stop::Trap) {
    const riscv::TrapInfo& tr = h.last_trap();
    if (tr.cause == riscv::kEcallU && h.x(17) == 1) {
      // PSPIN_ECALL_CYCLES: the cycle counter in a0
      h.set_x(10, static_cast<uint32_t>(h.cycle()));
      h.set_pc(tr.epc + 4);
      return;
    }
    fault(k, riscv::cause_name(tr.cause), tr.tval);
    return;
  }
  if (stop == riscv::Stop::Requested) {
    if (k.m_done) {
      end_handler(k);
      return;
    }
    // a device asked the core to wait (command queue full, command or DMA wait)
    k.m_state = Core::State::Blocked;
    k.m_block_cycle = h.cycle();
  }
}

void Switch::fault(Core& k, const std::string& what, uint32_t addr) {
  riscv::Hart& h = *k.m_hart;
  Task* t = k.m_task;
  Fault f;
  f.time_ps = cycle_ps(h.cycle());
  f.core = k.name();
  f.handler = t->kind == Task::HH ? m_handlers.hh_name : t->kind == Task::PH ? m_handlers.ph_name : m_handlers.th_name;
  f.pc = h.pc();
  f.addr = addr;
  f.cause = h.last_trap().cause;
  f.what = what;
  log(core::Level::warn, "handler {} on {} faulted: {} at pc 0x{:08x}, address 0x{:08x} (message {}, packet {})",
      f.handler, f.core, what, f.pc, addr, t->msg, m_packets[t->packet].index);
  m_faults.push_back(f);
  ++handler_faults;
  ++k.faults;
  end_handler(k);
}

void Switch::end_handler(Core& k) {
  riscv::Hart& h = *k.m_hart;
  Task* t = k.m_task;
  const uint64_t cycles = h.cycle() - k.m_start_cycle;
  const uint64_t insns = h.instret() - k.m_start_instret;
  if (t->msg < m_hstats_below) {
    HandlerStats& s = m_hstats[t->kind];
    ++s.runs;
    s.instructions += insns;
    s.cycles += cycles;
    s.min_cycles = std::min(s.min_cycles, cycles);
    s.max_cycles = std::max(s.max_cycles, cycles);
    s.min_instructions = std::min(s.min_instructions, insns);
    s.max_instructions = std::max(s.max_instructions, insns);
  }
  k.instructions += insns;
  k.busy_cycles += cycles;
  auto& tr = core::Context::get().trace();
  if (tr.in_window(cycle_ps(k.m_start_cycle), cycle_ps(h.cycle()))) {
    trace_ids();
    const std::string& hname = t->kind == Task::HH   ? m_handlers.hh_name
                               : t->kind == Task::PH ? m_handlers.ph_name
                                                     : m_handlers.th_name;
    tr.span(m_trace_cluster_pid[k.m_cluster], k.m_index, hname.c_str(), "handler", cycle_ps(k.m_start_cycle),
            cycle_ps(cycles),
            fmt::format("\"message\": {}, \"packet\": {}, \"instructions\": {}", t->msg, m_packets[t->packet].index,
                        insns));
  }
  h.set_priv(riscv::Priv::Machine);
  h.set_user_ranges(nullptr);
  if (k.m_inflight > 0) {
    k.m_state = Core::State::Draining;  // feedback waits for the handler's commands
    return;
  }
  finish_core(k, cycle_ps(h.cycle()));
}

void Switch::finish_core(Core& k, uint64_t t_ps) {
  Task* t = k.m_task;
  k.m_task = nullptr;
  k.m_state = Core::State::Idle;
  Cluster& c = *m_clusters[k.m_cluster];
  m_l1_alloc[c.m_index]->free(t->l1_addr - (kL1Base + c.m_index * kL1Stride + kL1PacketOffset), t->l1_alloc);
  --c.m_occupancy;
  trace_counter(c.m_l1_name.c_str(), t_ps, m_l1_alloc[c.m_index]->used());
  trace_counter(c.m_occ_name.c_str(), t_ps, c.m_occupancy);
  const uint64_t at = std::max(t_ps, core::ActionQueue::now());
  m_q.at(at, [this, t, &c] {
    task_done(t, core::ActionQueue::now());
    // L1 space and a cluster slot were freed: waiting tasks move on
    while (!c.m_l1_wait.empty()) {
      Task* w = c.m_l1_wait.front();
      const size_t before = c.m_l1_wait.size();
      c.m_l1_wait.pop_front();
      to_l1(c, w);
      if (c.m_l1_wait.size() == before) break;  // still no room
    }
    while (!m_unplaced.empty() && place(m_unplaced.front())) m_unplaced.pop_front();
    wake(c);
  });
}

void Switch::task_done(Task* t, uint64_t t_ps) {
  Message& m = *m_messages[t->msg];
  if (t->kind == Task::HH) {
    m.hh_done = true;
    auto held = std::move(m.held);
    m.held.clear();
    for (Task* p : held) dispatch(p);
    return;
  }
  if (t->sends_feedback) feedback(t, t_ps);
  if (t->kind == Task::PH) {
    --m.ph_open;
    if (m.eom_seen && m.ph_open == 0 && m_handlers.th && !m.th_started) {
      m.th_started = true;
      m_tasks.push_back(std::make_unique<Task>());
      Task* th = m_tasks.back().get();
      const Packet& eom = m_packets[m.eom_packet];
      th->kind = Task::TH;
      th->msg = t->msg;
      th->packet = m.eom_packet;
      // the EOM packet is still in L2 (its feedback waits for this handler)
      th->l2_addr = m_eom_l2[t->msg].first;
      th->l2_alloc = m_eom_l2[t->msg].second;
      th->bytes = static_cast<uint32_t>(eom.bytes.size());
      th->arrived_ps = m_eom_arrived[t->msg];
      th->handler = m_handlers.th;
      th->sends_feedback = true;
      dispatch(th);
    }
  }
}

void Switch::feedback(Task* t, uint64_t t_ps) {
  ++feedbacks;
  Message& msg = *m_messages[t->msg];
  msg.last_ps = std::max(msg.last_ps, t_ps);
  m_last_feedback_ps = std::max(m_last_feedback_ps, t_ps);
  m_feedback_times.push_back(t_ps);
  const uint64_t lat = t_ps - t->arrived_ps;
  if (feedbacks.get() == 1 || lat < lat_min_ps.get()) lat_min_ps.set(lat);
  lat_max_ps.note_max(lat);
  lat_sum_ps += lat;
  l2_advance();
  m_l2_alloc->free(t->l2_addr - kL2PacketBase, t->l2_alloc);
  --m_l2_packets;
  const double span = double(m_last_feedback_ps - std::min(m_first_arrival_ps, m_last_feedback_ps));
  if (span > 0) {
    l2_mean_bytes.set(m_l2_byte_ps / span);
    l2_mean_packets.set(m_l2_packet_ps / span);
  }
  if (m_release_packets) std::vector<uint8_t>().swap(m_packets[t->packet].bytes);  // injected: its copy is done with
  trace_counter("l2_packet_buffer_bytes", t_ps, m_l2_alloc->used());
  if (!m_l2_retry.empty()) retry_l2();
}

void Switch::l2_advance() {
  // The occupancy integrated up to now, before it changes: admissions and feedbacks happen in events, in time
  // order.
  const uint64_t now = core::ActionQueue::now();
  const double dt = double(now - m_l2_since_ps);
  m_l2_byte_ps += double(m_l2_alloc->used()) * dt;
  m_l2_packet_ps += double(m_l2_packets) * dt;
  m_l2_since_ps = now;
}

void Switch::trace_counter(const char* counter, uint64_t t_ps, double v) {
  auto& tr = core::Context::get().trace();
  if (!tr.in_window(t_ps, t_ps)) return;
  trace_ids();
  tr.counter(m_trace_pid, counter, t_ps, v);
}

void Switch::trace_ids() {
  if (!m_trace_cluster_pid.empty()) return;
  auto& tr = core::Context::get().trace();
  m_trace_pid = tr.process(name());
  for (Cluster* c : m_clusters) {
    m_trace_cluster_pid.push_back(tr.process(c->name()));
    for (Core* k : c->m_cores) tr.thread(m_trace_cluster_pid.back(), k->m_index, k->name());
  }
}

std::vector<std::pair<uint64_t, uint64_t>> Switch::message_spans(uint32_t below) const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  out.reserve(m_messages.size());
  for (const auto& [id, m] : m_messages)
    if (id < below) out.emplace_back(m->first_ps, std::max(m->first_ps, m->last_ps));
  return out;
}

bool Switch::all_done() const { return feedbacks.get() + packets_dropped.get() == m_packets.size(); }

std::vector<uint8_t> Switch::l1_image(uint32_t c) const {
  return std::vector<uint8_t>(m_l1[c].get(), m_l1[c].get() + l1_KiB.get() * 1024u);
}

// ---- devices

Core& Switch::core_of(riscv::Hart& h) {
  const uint32_t id = h.config().hartid;
  return *m_clusters[id / 32]->m_cores[id % 32];
}

std::vector<uint8_t> Switch::read_bytes(Core& k, uint32_t addr, uint32_t len, bool& ok) {
  std::vector<uint8_t> out(len);
  ok = true;
  try {
    m_clusters[k.m_cluster]->m_map.read_bytes(addr, out.data(), len);
  } catch (const std::exception&) {
    ok = false;
  }
  return out;
}

bool Switch::regs_read(void* ctx, riscv::Hart& h, uint32_t off, unsigned size, uint32_t& v) {
  auto* sw = static_cast<Switch*>(ctx);
  Core& k = sw->core_of(h);
  const uint32_t a = kHpuWindow + off;
  if (a >= sw->task_base() && a < sw->task_base() + sw->task_bytes())
    return sw->task_read(k, a - sw->task_base(), size, v);
  if (a >= kDmaRegs && a < kDmaRegs + 0x100) return size == 4 && sw->dma_read(k, h, a - kDmaRegs, v);
  if (a >= kHpuRegs && a < kHpuRegs + 0x100) return sw->hpu_read(k, h, a - kHpuRegs, size, v);
  return false;
}

bool Switch::regs_write(void* ctx, riscv::Hart& h, uint32_t off, unsigned size, uint32_t v) {
  auto* sw = static_cast<Switch*>(ctx);
  Core& k = sw->core_of(h);
  const uint32_t a = kHpuWindow + off;
  if (a >= sw->task_base() && a < sw->task_base() + sw->task_bytes()) return true;  // the descriptor ignores writes
  if (a >= kDmaRegs && a < kDmaRegs + 0x100) return size == 4 && sw->dma_write(k, h, a - kDmaRegs, v);
  if (a >= kHpuRegs && a < kHpuRegs + 0x100) return size == 4 && sw->hpu_write(k, h, a - kHpuRegs, v);
  if (a == kConsole) return sw->console_write(k, h, v);
  return false;
}

// The task descriptor (task_t, packed): assembled from the running task, any bytes of it readable.
bool Switch::task_read(Core& k, uint32_t rel, unsigned size, uint32_t& v) {
  if (!k.m_task) return false;
  const std::vector<uint32_t>& words = k.m_task_words;
  uint32_t value = 0;
  for (unsigned b = 0; b < size; ++b) {
    const uint32_t byte_at = rel + b;
    const uint32_t w = byte_at / 4 < words.size() ? words[byte_at / 4] : 0;
    value |= ((w >> (8 * (byte_at % 4))) & 0xff) << (8 * b);
  }
  v = value;
  return true;
}

bool Switch::hpu_read(Core& k, riscv::Hart& h, uint32_t off, unsigned size, uint32_t& v) {
  Switch* sw = this;
  Task* t = k.m_task;
  if (!t) return false;
  if (size != 4) return false;
  switch (off) {
    case 0x50:  // doorbell: the handler is done
      k.m_done = true;
      h.request_stop();
      v = 0;
      return true;
    case 0x80: {  // CMD_ISSUE
      if (k.m_inflight >= 4) {
        h.request_retry();
        return false;
      }
      v = sw->issue_command(k);
      return true;
    }
    case 0x88: v = (k.m_cmd_busy >> (k.m_test_handle & 3)) & 1 ? 0 : 1; return true;
    case 0x8c: v = k.m_info; return true;
  }
  if (off >= 0x90 && off <= 0xa8) {
    v = k.m_words[(off - 0x90) / 4];
    return true;
  }
  return false;
}

bool Switch::hpu_write(Core& k, riscv::Hart& h, uint32_t off, uint32_t v) {
  switch (off) {
    case 0x54:  // HWSCHED_ERROR: a runtime reporting a trap; handlers do not write it
      return true;
    case 0x84:  // CMD_WAIT
      if ((k.m_cmd_busy >> (v & 3)) & 1) {
        h.request_retry();
        return false;
      }
      return true;
    case 0x88: k.m_test_handle = v; return true;
    case 0x8c: k.m_info = v; return true;
  }
  if (off >= 0x90 && off <= 0xa8) {
    k.m_words[(off - 0x90) / 4] = v;
    return true;
  }
  return false;
}

uint32_t Switch::task_base() const { return m_nclusters <= 4 ? kTaskRegs : kTaskRegsWide; }

uint32_t Switch::task_bytes() const { return 0x48 - 0x20 + 8 * m_nclusters; }

// The task descriptor's words, built once when the task starts (a handler
// reads task_t bytewise: it is packed), into the core's reused buffer.
void Switch::fill_task_words(Core& k, const Task& t) const {
  std::vector<uint32_t>& w = k.m_task_words;
  w.clear();
  w.push_back(kHandlerDataBase);
  w.push_back(handler_mem_KiB.get() * 1024u);
  w.push_back(t.l1_addr);
  w.push_back(t.l1_bytes);
  for (uint32_t c = 0; c < m_nclusters; ++c) w.push_back(kL1Base + c * kL1Stride + scratchpad_offset());
  for (uint32_t c = 0; c < m_nclusters; ++c) w.push_back(scratchpad_KiB.get() * 1024u);
  w.push_back(static_cast<uint32_t>(host_mem_addr.get() >> 32));
  w.push_back(static_cast<uint32_t>(host_mem_addr.get()));
  w.push_back(static_cast<uint32_t>(std::min<uint64_t>(host_mem_MiB.get() << 20, UINT32_MAX)));
  w.push_back(t.l2_addr);
  w.push_back(t.msg % m_nclusters);
  w.push_back(t.msg);
}

uint32_t Switch::issue_command(Core& k) {
  riscv::Hart& h = *k.m_hart;
  uint32_t handle = 0;
  while ((k.m_cmd_busy >> handle) & 1) ++handle;
  k.m_cmd_busy |= 1u << handle;
  ++k.m_inflight;
  ++k.commands;
  const uint64_t t0 = cycle_ps(h.cycle());
  const uint32_t type = (k.m_info >> 1) & 3;
  const uint32_t* w = k.m_words;
  uint64_t done = t0;
  if (type == 1) {  // NIC send: nid, fid, source address low/high, length
    bool ok;
    std::vector<uint8_t> data = read_bytes(k, w[2], w[4], ok);
    if (!ok) {
      log(core::Level::warn, "{}: packet send from 0x{:08x} ({} B) reads outside memory: not sent", k.name(), w[2],
          w[4]);
    } else {
      // One read of the packet, then each port it leaves on serializes it: port nid mod ports, every port
      // for FABRICVP_NID_ALL, ports 0 .. n-1 for FABRICVP_NID_FIRST(n) (the command unit's multicasts). The
      // command is done when the last has left.
      const double rate = egress_Gbps.get() > 0 ? egress_Gbps.get() : port_Gbps.get();
      const uint64_t read =
          cycle_ps(h.cycle() + l2_cycles.get() + (w[4] + axi_bytes_per_cycle.get() - 1) / axi_bytes_per_cycle.get());
      const uint64_t ser = static_cast<uint64_t>(std::ceil(w[4] * 8.0 / rate * 1000.0));
      const bool all = w[0] == kNidAll, some = (w[0] >> 16) == 0xfffe;
      const uint32_t first = all || some ? 0 : w[0] % ports.get();
      const uint32_t count = all ? ports.get() : some ? std::min(w[0] & 0xffff, ports.get()) : 1;
      if (count == 0)
        log(core::Level::warn, "{}: packet send to nid 0x{:08x} (FABRICVP_NID_FIRST(0)) names no port: not sent",
            k.name(), w[0]);
      for (uint32_t port = first; port < first + count; ++port) {
        const uint32_t last = first + count - 1;
        const uint64_t start = std::max(read, m_egress_free_ps[port]);
        m_egress_free_ps[port] = start + ser;
        done = std::max(done, start + ser);
        EgressPacket e;
        e.time_ps = start + ser;
        e.port = port;
        e.nid = w[0];
        e.fid = w[1];
        e.bytes = port == last ? std::move(data) : data;
        ++packets_out;
        bytes_out += w[4];
        if (m_egress_sink)
          m_egress_sink(std::move(e));
        else
          m_egress.push_back(std::move(e));
      }
    }
  } else if (type == 2) {  // host direct: address low/high, (size << 1) | dir, data low/high
    const uint32_t bytes = std::min<uint32_t>((w[2] >> 1) & 0x1ff, 8);
    const uint64_t addr = w[0] | (uint64_t{w[1]} << 32);
    const uint64_t data = w[3] | (uint64_t{w[4]} << 32);
    const uint64_t start = std::max(t0, m_host_free_ps);
    done = start + static_cast<uint64_t>(std::llround(host_latency_ns.get() * 1000.0));
    m_host_free_ps = start + static_cast<uint64_t>(std::ceil(bytes / host_GBps.get() * 1000.0));
    HostWrite hw;
    hw.time_ps = done;
    hw.addr = addr;
    hw.data.resize(bytes);
    std::memcpy(hw.data.data(), &data, bytes);
    hw.source = k.name();
    m_host_writes.push_back(std::move(hw));
    ++host_writes;
    host_write_bytes += bytes;
  } else {  // host memory copy: host address low/high, NIC address, length, direction (1: to host)
    const uint64_t addr = w[0] | (uint64_t{w[1]} << 32);
    const uint32_t len = w[3];
    const uint64_t start = std::max(t0, m_host_free_ps);
    const uint64_t ser = static_cast<uint64_t>(std::ceil(len / host_GBps.get() * 1000.0));
    m_host_free_ps = start + ser;
    done = start + ser + static_cast<uint64_t>(std::llround(host_latency_ns.get() * 1000.0));
    if (w[4] == 1) {
      bool ok;
      std::vector<uint8_t> data = read_bytes(k, w[2], len, ok);
      if (ok) {
        HostWrite hw;
        hw.time_ps = done;
        hw.addr = addr;
        hw.data = std::move(data);
        hw.source = k.name();
        m_host_writes.push_back(std::move(hw));
        ++host_writes;
        host_write_bytes += len;
      } else {
        log(core::Level::warn, "{}: DMA to host from 0x{:08x} ({} B) reads outside memory", k.name(), w[2], len);
      }
    } else {
      // from host: host memory reads back what was written to it, zero elsewhere
      std::vector<uint8_t> data(len, 0);
      for (const HostWrite& hw : m_host_writes)
        for (size_t b = 0; b < hw.data.size(); ++b)
          if (hw.addr + b >= addr && hw.addr + b < addr + len) data[hw.addr + b - addr] = hw.data[b];
      const uint32_t dst = w[2];
      Core* kp = &k;
      m_q.at(done, [this, kp, dst, data] {
        try {
          m_clusters[kp->m_cluster]->m_map.write_bytes(dst, data.data(), data.size());
        } catch (const std::exception&) {
          log(core::Level::warn, "{}: DMA from host to 0x{:08x} writes outside memory", kp->name(), dst);
        }
      });
    }
  }
  Core* kp = &k;
  m_q.at(std::max(done, core::ActionQueue::now()),
         [this, kp, handle] { command_done(*kp, handle, core::ActionQueue::now()); });
  return handle;
}

void Switch::command_done(Core& k, uint32_t handle, uint64_t t_ps) {
  k.m_cmd_busy &= ~(1u << handle);
  --k.m_inflight;
  resume(k, t_ps);
}

void Switch::resume(Core& k, uint64_t t_ps) {
  if (k.m_state == Core::State::Blocked) {
    riscv::Hart& h = *k.m_hart;
    const uint64_t c = std::max(h.cycle(), ps_cycle(t_ps));
    k.stall_cycles += c - k.m_block_cycle;
    h.set_cycle(c);
    k.m_state = Core::State::Running;
    post_quantum(*m_clusters[k.m_cluster], cycle_ps(c) > t_ps ? cycle_ps(c) : t_ps);
  } else if (k.m_state == Core::State::Draining && k.m_inflight == 0 && k.m_dma_busy == 0) {
    finish_core(k, t_ps);
  }
}

bool Switch::dma_read(Core& k, riscv::Hart& h, uint32_t off, uint32_t& v) {
  Switch* sw = this;
  switch (off) {
    case 0x0c: {  // issue
      const uint32_t id = ++k.m_dma_next;
      bool ok;
      std::vector<uint8_t> data = sw->read_bytes(k, k.m_dma_src, k.m_dma_len, ok);
      if (!ok) return false;  // a load access fault at the issue
      const uint64_t cycles =
          sw->l2_cycles.get() + (k.m_dma_len + sw->axi_bytes_per_cycle.get() - 1) / sw->axi_bytes_per_cycle.get();
      const uint64_t done = sw->cycle_ps(h.cycle() + cycles);
      ++k.m_dma_busy;
      k.m_dma_pending.push_back(id);
      Core* kp = &k;
      const uint32_t dst = k.m_dma_dst;
      sw->m_q.at(std::max(done, core::ActionQueue::now()), [sw, kp, id, dst, data] {
        try {
          sw->m_clusters[kp->m_cluster]->m_map.write_bytes(dst, data.data(), data.size());
        } catch (const std::exception&) {
          sw->log(core::Level::warn, "{}: DMA to 0x{:08x} writes outside memory", kp->name(), dst);
        }
        auto& p = kp->m_dma_pending;
        p.erase(std::remove(p.begin(), p.end(), id), p.end());
        --kp->m_dma_busy;
        sw->resume(*kp, core::ActionQueue::now());
      });
      v = id;
      return true;
    }
    case 0x14: {
      const auto& p = k.m_dma_pending;
      v = std::find(p.begin(), p.end(), k.m_dma_test) == p.end() ? 1 : 0;
      return true;
    }
  }
  return false;
}

bool Switch::dma_write(Core& k, riscv::Hart& h, uint32_t off, uint32_t v) {
  switch (off) {
    case 0x00: k.m_dma_src = v; return true;
    case 0x04: k.m_dma_dst = v; return true;
    case 0x08: k.m_dma_len = v; return true;
    case 0x10: {
      const auto& p = k.m_dma_pending;
      if (std::find(p.begin(), p.end(), v) != p.end()) {
        h.request_retry();
        return false;
      }
      return true;
    }
    case 0x14: k.m_dma_test = v; return true;
  }
  return false;
}

bool Switch::console_write(Core& k, riscv::Hart& h, uint32_t v) {
  Switch* sw = this;
  const char ch = static_cast<char>(v & 0xff);
  if (ch == '\n') {
    sw->m_console.push_back(fmt::format("[{} ps {}] {}", sw->cycle_ps(h.cycle()), k.name(), k.m_line));
    sw->log(core::Level::info, "{}: {}", k.name(), k.m_line);
    k.m_line.clear();
  } else {
    k.m_line.push_back(ch);
  }
  return true;
}

bool Switch::terminate_write(void* ctx, riscv::Hart& h, uint32_t, unsigned, uint32_t) {
  auto* sw = static_cast<Switch*>(ctx);
  sw->log(core::Level::info, "{} wrote TERMINATE at {} ps", sw->core_of(h).name(), sw->cycle_ps(h.cycle()));
  sw->m_terminated = true;
  return true;
}

}  // namespace fabricvp::pspin
