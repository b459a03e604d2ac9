#include "models/optical/fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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
  uint64_t start = 0, end = 0;
  if (!cross(src, dst, m.bytes, m.ready_ps, start, end)) return;
  ++messages;
  bytes += m.bytes;
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

// ---- circuits

CircuitFabric::CircuitFabric(const sc_core::sc_module_name& nm, const char* kind, FabricShape shape)
    : Plane(nm, kind, std::move(shape)),
      circuits_installed(this, nullptr, "circuits", "circuits",
                         "circuits (OCS) or lightpaths (ring) in the installed configuration"),
      pairs_installed(this, nullptr, "pairs", "pairs", "ordered GPU pairs with at least one circuit"),
      configurations(this, nullptr, "configurations", "configurations", "configurations installed"),
      mean_pair_utilization(this, "mean_pair_utilization", "%",
                            "busy share of the run of a pair's circuits, mean over the pairs with circuits",
                            [this] {
                              uint64_t busy = 0, n = 0;
                              for (const auto& out : m_out)
                                for (const Pair& p : out) busy += p.busy_ps, ++n;
                              return n ? core::percent_of_run(busy) / static_cast<double>(n) : 0.0;
                            }),
      max_pair_utilization(this, "max_pair_utilization", "%", "busy share of the run of the busiest pair's circuits",
                           [this] {
                             uint64_t busy = 0;
                             for (const auto& out : m_out)
                               for (const Pair& p : out) busy = std::max(busy, p.busy_ps);
                             return core::percent_of_run(busy);
                           }),
      m_out(ports()) {}

CircuitFabric::~CircuitFabric() = default;

void CircuitFabric::for_each_channel(const std::function<void(uint64_t)>& f) const {
  for (const auto& out : m_out)
    for (const Pair& p : out) f(p.busy_ps);
}

const CircuitFabric::Pair* CircuitFabric::find(uint32_t src, uint32_t dst) const {
  for (const Pair& p : m_out[src])
    if (p.dst == dst) return &p;
  return nullptr;
}

CircuitFabric::Pair* CircuitFabric::find(uint32_t src, uint32_t dst) {
  return const_cast<Pair*>(static_cast<const CircuitFabric*>(this)->find(src, dst));
}

uint32_t CircuitFabric::circuits(uint32_t src, uint32_t dst) const {
  const Pair* p = find(src, dst);
  return p ? p->count : 0;
}

double CircuitFabric::pair_gbps(uint32_t src, uint32_t dst) const {
  const Pair* p = find(src, dst);
  return p ? static_cast<double>(p->rate.rate_kbps()) * 1e-6 : 0.0;
}

void CircuitFabric::set_circuits(const std::vector<PairCircuits>& pairs, double circuit_gbps) {
  for (auto& out : m_out) out.clear();
  uint64_t circuits = 0;
  for (const PairCircuits& pc : pairs) {
    if (pc.count == 0) continue;
    Pair p;
    p.dst = pc.dst;
    p.count = pc.count;
    p.rate = core::SerialRate(8, pc.count, circuit_gbps);  // units: bytes
    m_out[pc.src].push_back(p);
    circuits += pc.count;
  }
  uint64_t n = 0;
  for (const auto& out : m_out) n += out.size();
  circuits_installed.set(circuits);
  pairs_installed.set(n);
  ++configurations;
  m_configured = true;
}

bool CircuitFabric::cross(uint32_t src, uint32_t dst, uint64_t n, uint64_t ready, uint64_t& start, uint64_t& end) {
  Pair* p = find(src, dst);
  if (!p) {
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
               256u) {}

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
  std::vector<PairCircuits> pairs;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < n; ++j)
      if (uint32_t c = count[static_cast<size_t>(i) * n + j]) pairs.push_back({i, j, c});
  set_circuits(pairs, circuit_gbps());
  return bad;
}

// ---- SiP-Ring

RingFabric::RingFabric(const sc_core::sc_module_name& nm, FabricShape shape)
    : CircuitFabric(nm, "optical.ring", std::move(shape)),
      wavelength_Gbps(this, "wavelength_Gbps", 25.0, "Gbit/s",
                      "rate of one wavelength (seed 003 §3.1: 25); W = B / this per GPU", 1.0, 1000.0),
      reach(this, "reach", 16, "hops", "furthest peer of a lightpath (the power budget, seed 003 §4.4)", 1u, 4096u),
      degree(this, "degree", 16, "peers", "most peers a GPU sends to, and receives from (seed 003: D = 16)", 1u,
             4096u) {
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
  std::vector<PairCircuits> pairs;
  for (uint32_t g = 0; g < n; ++g)
    for (const auto& [peer, count] : peers_out[g]) pairs.push_back({g, peer, count});
  set_circuits(pairs, wavelength_Gbps.get());
  return bad;
}

}  // namespace fabricvp::optical
