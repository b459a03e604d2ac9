#include "models/optical/fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "models/core/config.h"
#include "models/core/context.h"

namespace fabricvp::optical {

class Plane::Rx final : public npu::AfiBlockingTarget {
 public:
  Rx(Plane& f, uint32_t port) : m_f(f), m_port(port) {}
  void b_transport(npu::Message& m, sc_core::sc_time& delay) override {
    m_f.carry(m_port, m, sc_core::sc_time_stamp().value() + delay.value());
  }

 private:
  Plane& m_f;
  uint32_t m_port;
};

Plane::Plane(const sc_core::sc_module_name& nm, const char* kind, FabricShape shape)
    : core::Module(nm, kind),
      messages(this, nullptr, "messages", "messages", "messages carried"),
      bytes(this, nullptr, "bytes", "bytes", "payload bytes carried"),
      m_shape(std::move(shape)) {
  for (uint32_t p = 0; p < ports(); ++p) {
    m_tx.push_back(std::make_unique<npu::AfiInitiator>(fmt::format("tx{}", p).c_str()));
    m_rx.push_back(std::make_unique<npu::AfiTarget>(fmt::format("rx{}", p).c_str()));
    m_rx_if.push_back(std::make_unique<Rx>(*this, p));
    m_tx.back()->bind(m_bw);
    m_rx.back()->bind(*m_rx_if.back());
  }
  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    m_pid = tr.process(name());
    for (uint32_t p = 0; p < ports(); ++p) tr.thread(m_pid, p + 1, fmt::format("from npu{}", m_shape.npus[p]));
  }
}

Plane::~Plane() = default;

void Plane::carry(uint32_t src, npu::Message& m, uint64_t now) {
  if (m.ready_ps < now) m.ready_ps = now;
  const uint32_t dst = m_shape.port_of(m.dst);
  if (hold(src, dst, m)) return;
  uint64_t start = 0, end = 0;
  if (!cross(src, dst, m.bytes, m.ready_ps, start, end)) return;
  deliver(src, dst, m, start, end);
}

void Plane::deliver(uint32_t src, uint32_t dst, npu::Message& m, uint64_t start, uint64_t end) {
  ++messages;
  bytes += m.bytes;
  PairTraffic& pt = m_pairs[uint64_t(src) * ports() + dst];
  pt.src = src, pt.dst = dst;
  ++pt.messages;
  pt.bytes += m.bytes;
  m.start_ps = start;
  m.arrival_ps = end + m_shape.latency_ps;
  m.port = m_shape.afi_port;
  auto& tr = core::Context::get().trace();
  if (m_pid && tr.in_window(start, end))
    tr.span(m_pid, src + 1, "message", "plane", start, end - start,
            fmt::format(R"("to":"npu{}","bytes":{})", m_shape.npus[dst], m.bytes));
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  (*m_tx[dst])->b_transport(m, d);
}

std::vector<Plane::PairTraffic> Plane::pair_traffic() const {
  std::vector<PairTraffic> out;
  out.reserve(m_pairs.size());
  for (const auto& [key, t] : m_pairs) out.push_back(t);
  std::sort(out.begin(), out.end(),
            [](const PairTraffic& a, const PairTraffic& b) { return a.src != b.src ? a.src < b.src : a.dst < b.dst; });
  return out;
}

// ---- circuits

CircuitFabric::CircuitFabric(const sc_core::sc_module_name& nm, const char* kind, FabricShape shape)
    : Plane(nm, kind, std::move(shape)),
      schedule(this, "schedule", "one_shot", "",
               "one_shot: the circuits planned for the whole run, set before it starts; dynamic: re-planned "
               "periodically from the traffic the plane sees (seed 003 §3.3, §4.4)",
               {"one_shot", "dynamic"}),
      estimate(this, "estimate", "past", "",
               "schedule dynamic: the traffic a re-plan serves: past, what was offered since the last re-plan "
               "and is queued (seed 003 §3.3); schedule, what is queued and what the job's execution graph will "
               "offer before the next re-plan (op-graph and Chakra workloads)",
               {"past", "schedule"}),
      circuits_installed(this, nullptr, "circuits", "circuits",
                         "circuits (OCS) or lightpaths (ring) in the configuration installed last"),
      pairs_installed(this, nullptr, "pairs", "pairs", "ordered GPU pairs with a circuit in the last configuration"),
      configurations(this, nullptr, "configurations", "configurations", "configurations installed"),
      held_ps(this, nullptr, "held_ps", "ps",
              "dynamic: summed time messages waited for a circuit (a pair without one, or dark)"),
      mean_pair_utilization(this, "mean_pair_utilization", "%",
                            "busy share of the run of a pair's circuits, mean over the pairs that had circuits",
                            [this] {
                              uint64_t busy = 0, n = 0;
                              for_each_channel([&](uint64_t b) { busy += b, ++n; });
                              return n ? core::percent_of_run(busy) / static_cast<double>(n) : 0.0;
                            }),
      max_pair_utilization(this, "max_pair_utilization", "%", "busy share of the run of the busiest pair's circuits",
                           [this] {
                             uint64_t busy = 0;
                             for_each_channel([&](uint64_t b) { busy = std::max(busy, b); });
                             return core::percent_of_run(busy);
                           }),
      m_out(ports()) {
  if (dynamic() && !this->shape().actions)
    throw std::logic_error(fmt::format("{}: a dynamic plane needs the fabric's action queue", name()));
}

CircuitFabric::~CircuitFabric() = default;

void CircuitFabric::for_each_channel(const std::function<void(uint64_t)>& f) const {
  for (const auto& out : m_out)
    for (const Pair& p : out)
      if (p.count || p.busy_ps) f(p.busy_ps);
}

const CircuitFabric::Pair* CircuitFabric::find(uint32_t src, uint32_t dst) const {
  for (const Pair& p : m_out[src])
    if (p.dst == dst) return &p;
  return nullptr;
}

CircuitFabric::Pair* CircuitFabric::find(uint32_t src, uint32_t dst) {
  return const_cast<Pair*>(static_cast<const CircuitFabric*>(this)->find(src, dst));
}

CircuitFabric::Pair& CircuitFabric::pair_for(uint32_t src, uint32_t dst) {
  if (Pair* p = find(src, dst)) return *p;
  Pair p;
  p.dst = dst;
  m_out[src].push_back(p);
  m_index.emplace_back(src, static_cast<uint32_t>(m_out[src].size() - 1));
  m_out[src].back().gen = static_cast<uint64_t>(m_index.size() - 1) << 32;  // the pair's index for actions
  return m_out[src].back();
}

uint32_t CircuitFabric::circuits(uint32_t src, uint32_t dst) const {
  const Pair* p = find(src, dst);
  return p ? p->count : 0;
}

double CircuitFabric::pair_gbps(uint32_t src, uint32_t dst) const {
  const Pair* p = find(src, dst);
  return p && p->count ? p->count * m_circuit_gbps : 0.0;
}

void CircuitFabric::set_epochs(uint64_t period_ps, uint64_t dark_ps) {
  m_period = period_ps;
  m_dark = dark_ps;
}

void CircuitFabric::set_circuits(const std::vector<PairCircuits>& pairs, double circuit_gbps) {
  const bool running = m_configured && dynamic();
  const uint64_t now = core::ActionQueue::now();
  m_circuit_gbps = circuit_gbps;
  std::vector<std::vector<const PairCircuits*>> by_src(ports());
  uint64_t circuits = 0;
  for (const PairCircuits& pc : pairs) {
    if (pc.count == 0) continue;
    pair_for(pc.src, pc.dst);
    by_src[pc.src].push_back(&pc);
    circuits += pc.count;
  }
  bool darkened = false;
  for (uint32_t src = 0; src < ports(); ++src)
    for (Pair& p : m_out[src]) {
      uint32_t count = 0, keep = 0;
      for (const PairCircuits* pc : by_src[src])  // (a source has few pairs: scanned)
        if (pc->dst == p.dst) count = pc->count, keep = std::min(pc->kept, pc->count);
      const uint32_t lit = running && m_dark ? std::min(keep, p.count) : count;
      if (count == p.count && lit == p.lit) continue;
      p.count = count;
      darkened |= lit != count;
      relight(p, lit, now, running);
    }
  uint64_t n = 0;
  for (const auto& out : m_out)
    for (const Pair& p : out) n += p.count > 0;
  circuits_installed.set(circuits);
  pairs_installed.set(n);
  ++configurations;
  m_configured = true;
  if (running && darkened) shape().actions->post(now + m_dark, *this, kLit);
}

void CircuitFabric::relight(Pair& p, uint32_t lit, uint64_t now, bool running) {
  if (running) retime(p, now);  // progress at the old rate
  p.lit = lit;
  if (p.lit) p.rate = core::SerialRate(8, p.lit, m_circuit_gbps);
  if (!running) return;
  ++p.gen;
  if (p.queue_head < p.queue.size() && p.lit)
    shape().actions->post(std::max(now, p.seg_start) + p.rate.ps(p.left), *this, kHead, p.gen);
}

// Serialization progress of the head message up to `now` at the pair's current rate.
void CircuitFabric::retime(Pair& p, uint64_t now) {
  if (p.queue_head == p.queue.size() || now <= p.seg_start) return;
  if (p.lit) {
    const uint64_t dt = now - p.seg_start;
    // bytes done in dt: rate in kbit/s -> bytes = dt[ps] * kbps / 8e9
    const uint64_t done =
        static_cast<uint64_t>(static_cast<unsigned __int128>(dt) * p.rate.rate_kbps() / 8000000000ULL);
    p.left -= std::min(p.left, done);
    p.busy_ps += dt;
  } else {
    held_ps += now - p.seg_start;
  }
  p.seg_start = now;
}

void CircuitFabric::start_head(Pair& p, uint64_t now) {
  if (p.queue_head == p.queue.size()) {
    p.queue.clear();
    p.queue_head = 0;
    return;
  }
  const npu::Message& m = m_held[p.queue[p.queue_head]];
  p.seg_start = std::max(now, m.ready_ps);
  p.first_start = p.seg_start;
  p.left = m.bytes;
  ++p.gen;
  if (p.lit) shape().actions->post(p.seg_start + p.rate.ps(p.left), *this, kHead, p.gen);
}

bool CircuitFabric::hold(uint32_t src, uint32_t dst, npu::Message& m) {
  if (!dynamic()) return false;
  Pair& p = pair_for(src, dst);
  const uint64_t now = core::ActionQueue::now(), n = m.bytes;
  p.queue.push_back(m_held.adopt(m));
  p.offered += n;
  p.queued_bytes += n;
  m_last_traffic = now;
  if (p.queue.size() - p.queue_head == 1) start_head(p, now);
  if (!m_epoch_pending && m_period) {
    m_epoch_pending = true;
    shape().actions->post(now + m_period, *this, kEpoch);
  }
  return true;
}

bool CircuitFabric::cross(uint32_t src, uint32_t dst, uint64_t n, uint64_t ready, uint64_t& start, uint64_t& end) {
  Pair* p = find(src, dst);
  if (!p || !p->count) {
    hw_error("", ready, -1,
             fmt::format("a {}-byte message from npu{} to npu{}: the installed configuration has no circuit between "
                         "them (the control plane's configuration does not serve this traffic)",
                         n, shape().npus[src], shape().npus[dst]));
    return false;
  }
  start = std::max(ready, p->free_ps);
  const uint64_t ser = p->rate.ps(n);
  end = start + ser;
  p->free_ps = end;
  p->busy_ps += ser;
  p->bytes += n;
  return true;
}

void CircuitFabric::act(uint32_t what, uint64_t arg) {
  const uint64_t now = core::ActionQueue::now();
  if (what == kEpoch) return epoch(now);
  if (what == kLit) {  // the dark time is over: every pair at its installed circuits
    for (uint32_t src = 0; src < ports(); ++src)
      for (Pair& p : m_out[src]) {
        if (p.lit != p.count) relight(p, p.count, now, true);
      }
    return;
  }
  // kHead: the head message of a pair is serialized (unless re-timed since)
  const auto [src, pos] = m_index[arg >> 32];
  Pair& p = m_out[src][pos];
  if (arg != p.gen) return;
  const uint32_t id = p.queue[p.queue_head++];
  npu::Message& m = m_held[id];
  p.busy_ps += now - std::min(now, p.seg_start);
  p.bytes += m.bytes;
  p.queued_bytes -= m.bytes;
  deliver(src, p.dst, m, p.first_start, now);
  m_held.give(id);
  start_head(p, now);
}

void CircuitFabric::epoch(uint64_t now) {
  m_epoch_pending = false;
  std::vector<Demand> demand;
  bool carried = false;
  for (uint32_t src = 0; src < ports(); ++src)
    for (Pair& p : m_out[src]) {
      carried |= p.offered + p.queued_bytes > 0;
      const uint64_t b = (plans_ahead() ? 0 : p.offered) + p.queued_bytes;
      if (b) demand.push_back({src, p.dst, static_cast<double>(b)});
      p.offered = 0;
    }
  if (!m_planner) throw std::logic_error(fmt::format("{}: a dynamic plane without a planner", name()));
  if (!plans_ahead() && demand.empty()) return;  // idle: the next message starts the epochs again
  if (!m_planner(*this, demand) && !carried) return;
  m_epoch_pending = true;
  shape().actions->post(now + m_dark + m_period, *this, kEpoch);
}

// ---- electrical

ElectricalFabric::ElectricalFabric(const sc_core::sc_module_name& nm, FabricShape shape, bool cluster)
    : Plane(nm, cluster ? "optical.cluster" : "optical.flat", std::move(shape)),
      mean_port_utilization(this, "mean_port_utilization", "%",
                            "busy share of the run of the GPUs' ports into the switch, mean over the GPUs",
                            [this] {
                              uint64_t busy = 0;
                              for (const Port& p : m_up) busy += p.busy_ps;
                              return m_up.empty() ? 0.0 : core::percent_of_run(busy) / m_up.size();
                            }),
      max_nic_utilization(this, "max_nic_utilization", "%",
                          "busy share of the run of the busiest server NIC direction (cluster)",
                          [this] {
                            uint64_t busy = 0;
                            for (const auto* v : {&m_nic_out, &m_nic_in})
                              for (const Port& p : *v) busy = std::max(busy, p.busy_ps);
                            return core::percent_of_run(busy);
                          }),
      nic_bytes(this, nullptr, "nic_bytes", "bytes", "payload bytes that left a server through its NIC (cluster)") {
  const uint32_t n = ports();
  const core::SerialRate gpu(8, 1, this->shape().gbps);
  m_up.assign(n, Port{gpu});
  m_down.assign(n, Port{gpu});
  m_per_server = n;
  if (cluster) {
    gpus_per_server.emplace(this, "gpus_per_server", 8, "GPUs",
                            "GPUs per server, on the server's switch (seed 003 §4.1: 8)", 1u, 4096u);
    server_Gbps.emplace(this, "server_Gbps", 400.0, "Gbit/s",
                        "each direction of a server's NIC into the fabric joining the servers (seed 003: 200 or 400)",
                        0.001, 1e6);
    m_per_server = gpus_per_server->get();
    if (n % m_per_server != 0)
      throw core::ConfigError(
          fmt::format("{}.gpus_per_server: {} does not divide the plane's {} GPUs", name(), m_per_server, n));
    const core::SerialRate nic(8, 1, server_Gbps->get());
    m_nic_out.assign(n / m_per_server, Port{nic});
    m_nic_in.assign(n / m_per_server, Port{nic});
  }
}

void ElectricalFabric::for_each_channel(const std::function<void(uint64_t)>& f) const {
  for (const Port& p : m_up) f(p.busy_ps);
  for (const Port& p : m_nic_out) f(p.busy_ps);
}

bool ElectricalFabric::cross(uint32_t src, uint32_t dst, uint64_t n, uint64_t ready, uint64_t& start, uint64_t& end) {
  Port* chain[4];
  uint32_t k = 0;
  chain[k++] = &m_up[src];
  const uint32_t a = src / m_per_server, b = dst / m_per_server;
  if (a != b) {
    chain[k++] = &m_nic_out[a];
    chain[k++] = &m_nic_in[b];
    nic_bytes += n;
  }
  chain[k++] = &m_down[dst];
  uint64_t s = ready, e = 0;
  for (uint32_t i = 0; i < k; ++i) {
    Port& p = *chain[i];
    s = std::max(s, p.free_ps);
    const uint64_t ser = p.rate.ps(n);
    e = std::max(s + ser, e);
    p.busy_ps += ser;
    p.free_ps = e;
    if (i == 0) start = s;
  }
  end = e;
  return true;
}

// ---- SiP-OCS

OcsFabric::OcsFabric(const sc_core::sc_module_name& nm, FabricShape shape)
    : CircuitFabric(nm, "optical.ocs", std::move(shape)),
      switches(this, "switches", 16, "switches",
               "optical circuit switches Q, each with a port for every GPU: the degree D (seed 003 §3.1: 16)", 1u,
               256u),
      reconfig_delay_us(this, "reconfig_delay_us", 10000.0, "us",
                        "schedule dynamic: a changed circuit carries nothing for this long (seed 003 §4.4: 10 ms "
                        "for today's OCSs)",
                        0.0, 1e9),
      history(this, "history", 5.0, "delays",
              "schedule dynamic: circuits are kept for history x reconfig_delay_us between reconfigurations, "
              "each planned from the traffic since the previous one (seed 003 §4.4: 5)",
              0.01, 1e6) {
  const uint64_t d = static_cast<uint64_t>(std::llround(reconfig_delay_us.get() * 1e6));
  set_epochs(std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(history.get() * d))), d);
}

std::vector<std::string> OcsFabric::install(const OcsConfig& config) {
  std::vector<std::string> bad;
  const uint32_t n = ports();
  if (config.gpus != n) bad.push_back(fmt::format("a configuration for {} GPUs; the fabric has {}", config.gpus, n));
  if (config.switches() != switches.get())
    bad.push_back(
        fmt::format("{} switch configurations; the fabric has {} switches", config.switches(), switches.get()));
  if (!bad.empty()) return bad;
  std::vector<uint32_t> count(static_cast<size_t>(n) * n, 0);  // n <= a few thousand
  std::vector<int32_t> rx_used(n);
  for (uint32_t k = 0; k < config.switches(); ++k) {
    const auto& out = config.out[k];
    if (out.size() != n) {
      bad.push_back(fmt::format("switch {}: {} ports configured of {}", k, out.size(), n));
      continue;
    }
    std::fill(rx_used.begin(), rx_used.end(), -1);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t j = out[i];
      if (j == OcsConfig::kNone) continue;
      if (j >= n) {
        bad.push_back(fmt::format("switch {}: GPU {} to GPU {}, beyond the {} ports", k, i, j, n));
      } else if (j == i) {
        bad.push_back(fmt::format("switch {}: GPU {} to itself", k, i));
      } else if (rx_used[j] >= 0) {
        bad.push_back(fmt::format("switch {}: GPU {}'s receiver is on two circuits (from GPU {} and GPU {})", k, j,
                                  rx_used[j], i));
      } else {
        rx_used[j] = static_cast<int32_t>(i);
        ++count[static_cast<size_t>(i) * n + j];
      }
    }
  }
  if (!bad.empty()) return bad;
  // circuits on a switch that keeps them carry on through a reconfiguration
  std::vector<uint32_t> kept(count.size(), 0);
  if (m_config.switches() == config.switches())
    for (uint32_t k = 0; k < config.switches(); ++k)
      for (uint32_t i = 0; i < n; ++i)
        if (config.out[k][i] != OcsConfig::kNone && m_config.out[k][i] == config.out[k][i])
          ++kept[static_cast<size_t>(i) * n + config.out[k][i]];
  std::vector<PairCircuits> pairs;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < n; ++j)
      if (uint32_t c = count[static_cast<size_t>(i) * n + j])
        pairs.push_back({i, j, c, kept[static_cast<size_t>(i) * n + j]});
  m_config = config;
  set_circuits(pairs, circuit_gbps());
  return bad;
}

// ---- SiP-Ring

RingFabric::RingFabric(const sc_core::sc_module_name& nm, FabricShape shape)
    : CircuitFabric(nm, "optical.ring", std::move(shape)),
      wavelength_Gbps(this, "wavelength_Gbps", 25.0, "Gbit/s",
                      "rate of one wavelength (seed 003 §3.1: 25); W = B / this per GPU", 1.0, 1000.0),
      reach(this, "reach", 16, "hops", "furthest peer of a lightpath (the power budget, seed 003 §4.4)", 1u, 4096u),
      degree(this, "degree", 16, "peers", "most peers a GPU sends to, and receives from (seed 003: D = 16)", 1u, 4096u),
      replan_us(this, "replan_us", 100.0, "us",
                "schedule dynamic: wavelengths re-planned this long after the last retuning ended, from the traffic "
                "since the previous plan (seed 003 A.1: 100)",
                0.001, 1e9),
      retune_us(this, "retune_us", 25.0, "us",
                "schedule dynamic: a retuned micro-ring's wavelength carries nothing for this long (seed 003 "
                "§4.4: 25)",
                0.0, 1e9) {
  set_epochs(static_cast<uint64_t>(std::llround(replan_us.get() * 1e6)),
             static_cast<uint64_t>(std::llround(retune_us.get() * 1e6)));
  const double w = this->shape().gbps / wavelength_Gbps.get();
  if (std::abs(w - std::round(w)) > 1e-9 * w || std::round(w) < 1)
    throw core::ConfigError(fmt::format("{}: B = {} Gbit/s per GPU is not a whole number of {}-Gbit/s wavelengths",
                                        name(), this->shape().gbps, wavelength_Gbps.get()));
  m_wavelengths = static_cast<uint32_t>(std::round(w));
}

RingSpec RingFabric::spec() const { return RingSpec{ports(), m_wavelengths, reach.get(), degree.get()}; }

std::vector<std::string> RingFabric::install(const std::vector<Lightpath>& paths) {
  std::vector<std::string> bad;
  const uint32_t n = ports(), w = m_wavelengths;
  constexpr uint32_t kFree = UINT32_MAX;
  // occupant[(fiber * n + segment) * w + wavelength]: the lightpath on it; a segment is named by the GPU it leaves
  std::vector<uint32_t> occupant(2 * static_cast<size_t>(n) * w, kFree);
  std::vector<uint32_t> tx(static_cast<size_t>(n) * w, kFree), rx(static_cast<size_t>(n) * w, kFree);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> peers_out(n), peers_in(n);  // (peer, lightpaths)
  auto what = [&](uint32_t i) { return describe(paths[i], i); };
  for (uint32_t i = 0; i < paths.size(); ++i) {
    const Lightpath& l = paths[i];
    if (l.src >= n || l.dst >= n || l.src == l.dst || l.wavelength >= w) {
      bad.push_back(fmt::format("{}: not a lightpath of a ring of {} GPUs and {} wavelengths", what(i), n, w));
      continue;
    }
    const uint32_t hops = ring_hops(n, l.src, l.dst, l.clockwise);
    if (hops > reach.get()) bad.push_back(fmt::format("{}: {} hops, the reach is {}", what(i), hops, reach.get()));
    for (uint32_t h = 0, g = l.src; h < hops; ++h, g = l.clockwise ? (g + 1) % n : (g + n - 1) % n) {
      uint32_t& o = occupant[((l.clockwise ? 0 : size_t(n)) + g) * w + l.wavelength];
      if (o != kFree)
        bad.push_back(fmt::format("{}: GPU {}'s outgoing segment is lit by lightpath {} already", what(i), g, o));
      else
        o = i;
    }
    uint32_t& t = tx[size_t(l.src) * w + l.wavelength];
    if (t != kFree)
      bad.push_back(fmt::format("{}: GPU {} transmits this wavelength for lightpath {}", what(i), l.src, t));
    t = i;
    uint32_t& r = rx[size_t(l.dst) * w + l.wavelength];
    if (r != kFree)
      bad.push_back(fmt::format("{}: GPU {} receives this wavelength for lightpath {}", what(i), l.dst, r));
    r = i;
    auto add = [](std::vector<std::pair<uint32_t, uint32_t>>& v, uint32_t x) {
      for (auto& e : v)
        if (e.first == x) return void(++e.second);
      v.emplace_back(x, 1);
    };
    add(peers_out[l.src], l.dst);
    add(peers_in[l.dst], l.src);
  }
  for (uint32_t g = 0; g < n; ++g) {
    if (peers_out[g].size() > degree.get())
      bad.push_back(
          fmt::format("GPU {} has lightpaths to {} peers, the degree is {}", g, peers_out[g].size(), degree.get()));
    if (peers_in[g].size() > degree.get())
      bad.push_back(
          fmt::format("GPU {} has lightpaths from {} peers, the degree is {}", g, peers_in[g].size(), degree.get()));
  }
  if (!bad.empty()) return bad;
  // lightpaths of the previous plan that stay carry on through the retuning
  std::set<std::tuple<uint32_t, uint32_t, bool, uint32_t>> before;
  for (const Lightpath& l : m_paths) before.emplace(l.src, l.dst, l.clockwise, l.wavelength);
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> kept;
  for (const Lightpath& l : paths)
    if (before.count({l.src, l.dst, l.clockwise, l.wavelength})) ++kept[{l.src, l.dst}];
  std::vector<PairCircuits> pairs;
  for (uint32_t g = 0; g < n; ++g)
    for (const auto& [peer, count] : peers_out[g]) {
      auto it = kept.find({g, peer});
      pairs.push_back({g, peer, count, it == kept.end() ? 0 : it->second});
    }
  m_paths = paths;
  set_circuits(pairs, wavelength_Gbps.get());
  return bad;
}

}  // namespace fabricvp::optical
