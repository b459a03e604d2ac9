#include "models/hac/hac.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>

namespace fabricvp::hac {

namespace {
uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }
}  // namespace

void LinkStats::add(double x) {
  ++n;
  min = std::min(min, x);
  max = std::max(max, x);
  const double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

double LinkStats::std() const { return n ? std::sqrt(m2 / static_cast<double>(n)) : 0.0; }

Network::Network(const sc_core::sc_module_name& nm, const std::vector<tsp::Tsp*>& chips,
                 const std::vector<Cable>& cables, const std::vector<bool>& chip_failed)
    : core::Module(nm, "hac"),
      exchange(this, "exchange", "auto", "",
               "exchange HAC codes on every live link: on, off, or auto (on when some chip's oscillator is not "
               "nominal or initial is random)",
               {"auto", "on", "off"}),
      code_words(this, "code_words", 1, "words",
                 "PCS words (word_ps each) a HAC code occupies on the link; while the exchange runs, packets get "
                 "the rest of the lane bandwidth (the compiler sees the reduced rate)",
                 0, 64),
      exchange_cycles(this, "exchange_cycles", 256, "cycles", "local cycles between two HAC codes on a link (§3)", 16,
                      1u << 20),
      initial(this, "initial", "aligned", "",
              "HAC phase at cycle 0: aligned (0 on every chip, as after a long converged run) or random (drawn per "
              "chip; the exchange must align them)",
              {"aligned", "random"}),
      calibration_iterations(this, "calibration_iterations", 64, "round trips",
                             "latency characterization by reflection per cable before parent/child alignment starts", 1,
                             100000000),
      max_adjust(this, "max_adjust", 1, "cycles/epoch", "largest change of a child's epoch per epoch (§3.1)", 1, 125),
      filter_exchanges(this, "filter_exchanges", 4, "codes",
                       "alignment loop filter: a child adjusts by the mean error of this many parent codes", 1, 4096),
      root_chip(this, "root", "", "", "root of the HAC spanning tree (chip name; empty: the first healthy chip)"),
      turnaround_cycles(this, "turnaround_cycles", 1, "cycles",
                        "a reflected HAC code leaves this many cycles after it was sampled", 0, 1000),
      word_ps(this, "word_ps", 2560.0, "ps",
              "PCS word period: a control code is inserted at a word boundary (64 bits per lane at 25 Gb/s)", 1.0, 1e6),
      elastic_words(this, "elastic_words", 2, "words",
                    "receive elastic (clock-compensation) buffer: its fill wanders +-this many words around the "
                    "nominal fill included in rx_pipeline_ps",
                    0, 64),
      cc_probability(this, "cc_probability", 0.08, "",
                     "probability that a code waits behind a clock-compensation / alignment-marker block", 0.0, 1.0),
      cc_words(this, "cc_words", 2, "words", "length of a clock-compensation / alignment-marker block", 0, 1024),
      cdr_jitter_ps(this, "cdr_jitter_ps", 1100.0, "ps",
                    "rms random latency variation of the CDR and deserializer per code", 0.0, 1e6),
      training_skew_ps(this, "training_skew_ps", 800.0, "ps",
                       "static latency offset of each link direction, set at link training: uniform in +-this", 0.0,
                       1e6),
      slots(this, nullptr, "slots", "slots", "exchange slots processed (all chips)"),
      messages(this, nullptr, "messages", "codes", "HAC codes sent on links (including reflections)"),
      reflections(this, nullptr, "reflections", "codes", "HAC codes reflected for latency characterization"),
      notifications(this, nullptr, "notifications", "codes", "TRANSMIT notifications carried"),
      adjustments(this, nullptr, "adjustments", "epochs", "epochs a child lengthened or shortened"),
      adjustment_cycles(this, nullptr, "adjustment_cycles", "cycles", "sum of |adjustment| over all children"),
      link_share_pct(this, nullptr, "link_share_pct", "%",
                     "share of every live link direction's bandwidth the HAC codes take (0 while off)") {
  const double nominal_period_ps = chips.empty() ? 1111.1 : 1e6 / chips[0]->nominal_clock().mhz();
  m_cables = cables;
  m_units.resize(chips.size());
  m_ports = chips.empty() ? 0 : chips[0]->port_count();
  m_port_dir.assign(chips.size() * m_ports, -1);
  bool non_nominal = initial.get() == "random";
  for (size_t c = 0; c < chips.size(); ++c) {
    Unit& u = m_units[c];
    u.chip = chips[c];
    m_index.emplace(chips[c], static_cast<uint32_t>(c));
    u.alive = !chip_failed[c];
    const clock::Oscillator& o = chips[c]->clock();
    if (o.ppm() != 0.0 || o.jitter_ps() != 0.0) non_nominal = true;
    chips[c]->attach_hac(this);
  }
  m_on = exchange.get() == "on" || (exchange.get() == "auto" && non_nominal);
  // Initial HAC phases.
  for (size_t c = 0; c < chips.size(); ++c) {
    int64_t phase = 0;
    if (initial.get() == "random") {
      uint64_t s = chips[c]->seed_for("hac_phase");
      phase = static_cast<int64_t>(splitmix(s) % clock::kEpoch);
    }
    chips[c]->hac().reset(phase);
  }
  // Directions: 2w = a -> b, 2w + 1 = b -> a.
  m_stats.resize(cables.size());
  m_cal.resize(cables.size());
  for (size_t w = 0; w < cables.size(); ++w) {
    const Cable& k = cables[w];
    m_stats[w].link = k.link->name();
    for (int side = 0; side < 2; ++side) {
      Dir d{};
      d.from = side ? k.b_chip : k.a_chip;
      d.fport = side ? k.b_port : k.a_port;
      d.to = side ? k.a_chip : k.b_chip;
      d.tport = side ? k.a_port : k.b_port;
      d.cable = static_cast<uint32_t>(w);
      d.ch = side ? &k.link->b_to_a : &k.link->a_to_b;
      d.rng = seed_for(d.ch->name());
      d.static_ps = training_skew_ps * (2.0 * uniform(d) - 1.0);
      m_port_dir[d.from * m_ports + d.fport] = static_cast<int32_t>(m_dirs.size());
      if (!k.failed) m_units[d.from].out.push_back(static_cast<uint32_t>(m_dirs.size()));
      m_dirs.push_back(d);
    }
    const double lat = static_cast<double>(k.link->a_to_b.latency_ps() + k.link->b_to_a.latency_ps()) / 2;
    m_cal[w].nominal_rtt = 2 * lat / nominal_period_ps + turnaround_cycles;
    if (!k.failed) ++m_live_cables;
  }
  // The exchange takes link slots: code_words PCS words every exchange_cycles
  // on every live direction, as a share of the lane bandwidth.
  if (m_on) {
    const double share = code_words * word_ps / (exchange_cycles * nominal_period_ps);
    for (const Cable& k : m_cables)
      if (!k.failed) {
        k.link->a_to_b.reserve_control_share(share);
        k.link->b_to_a.reserve_control_share(share);
      }
    link_share_pct.set(100.0 * share);
  }
  build_tree();
  SC_METHOD(step);
  sensitive << m_wake;
  dont_initialize();
}

void Network::build_tree() {
  const uint32_t n = static_cast<uint32_t>(m_units.size());
  if (n == 0) return;
  m_root = n;
  if (!root_chip.get().empty()) {
    for (uint32_t c = 0; c < n; ++c)
      if (root_chip.get() == m_units[c].chip->name()) m_root = c;
    if (m_root == n)
      throw core::ConfigError(fmt::format("{}: {}.root: no chip named '{}'",
                                          root_chip.source() ? root_chip.source()->origin.str() : std::string("-p"),
                                          name(), root_chip.get()));
    if (!m_units[m_root].alive)
      throw core::ConfigError(fmt::format("{}.root: chip {} is on a failed node", name(), root_chip.get()));
  } else {
    for (uint32_t c = 0; c < n && m_root == n; ++c)
      if (m_units[c].alive) m_root = c;
    if (m_root == n) return;
  }
  // Breadth first over live cables, neighbours in cable order.
  std::vector<std::vector<uint32_t>> adj(n);
  for (uint32_t d = 0; d < m_dirs.size(); ++d)
    if (!m_cables[m_dirs[d].cable].failed) adj[m_dirs[d].from].push_back(d);
  std::deque<uint32_t> q{m_root};
  m_units[m_root].depth = 0;
  while (!q.empty()) {
    uint32_t c = q.front();
    q.pop_front();
    for (uint32_t d : adj[c]) {
      Unit& v = m_units[m_dirs[d].to];
      if (v.depth >= 0 || !v.alive) continue;
      v.depth = m_units[c].depth + 1;
      v.parent_dir = static_cast<int32_t>(d);
      m_units[c].child_dirs.push_back(d);
      m_height = std::max<uint32_t>(m_height, static_cast<uint32_t>(v.depth));
      q.push_back(m_dirs[d].to);
    }
  }
  for (uint32_t c = 0; c < n; ++c)
    if (m_units[c].alive && m_units[c].depth < 0)
      log(core::Level::warn, "{} is not reachable over live cables: its HAC is not aligned", m_units[c].chip->name());
}

int32_t Network::parent(uint32_t chip) const {
  const int32_t d = m_units.at(chip).parent_dir;
  return d < 0 ? -1 : static_cast<int32_t>(m_dirs[d].from);
}
int32_t Network::parent_port(uint32_t chip) const {
  const int32_t d = m_units.at(chip).parent_dir;
  return d < 0 ? -1 : static_cast<int32_t>(m_dirs[d].tport);
}
int32_t Network::parent_cable(uint32_t chip) const {
  const int32_t d = m_units.at(chip).parent_dir;
  return d < 0 ? -1 : static_cast<int32_t>(m_dirs[d].cable);
}
std::vector<std::pair<uint32_t, uint32_t>> Network::children(uint32_t chip) const {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (uint32_t d : m_units.at(chip).child_dirs) out.emplace_back(m_dirs[d].to, m_dirs[d].fport);
  return out;
}

double Network::latency_estimate(uint32_t cable) const {
  const LinkStats& s = m_stats.at(cable);
  if (s.n) return s.mean;
  return (m_cal[cable].nominal_rtt - turnaround_cycles) / 2;
}

double Network::uniform(Dir& d) { return static_cast<double>(splitmix(d.rng) >> 11) * 0x1.0p-53; }

double Network::normal(Dir& d) {
  if (d.has_spare) {
    d.has_spare = false;
    return d.spare_normal;
  }
  double u1 = uniform(d), u2 = uniform(d);
  if (u1 < 1e-300) u1 = 1e-300;
  const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * M_PI * u2;
  d.spare_normal = r * std::sin(a);
  d.has_spare = true;
  return r * std::cos(a);
}

uint64_t Network::arrival_ps(Dir& d, uint64_t send_ps) {
  // Fixed part: the link's pipelines and cable (including the nominal elastic
  // buffer fill); then the physical sources of variation, drawn per code.
  const double w = word_ps;
  double v = static_cast<double>(d.ch->latency_ps()) + d.static_ps;
  v += w * (uniform(d) - 0.5);  // TX: wait for the next PCS word boundary (phase unknown)
  const uint32_t e = elastic_words;
  if (e) v += w * (static_cast<double>(splitmix(d.rng) % (2 * e + 1)) - e);  // RX elastic buffer fill
  if (cc_probability > 0 && uniform(d) < cc_probability) v += w * cc_words;  // behind a CC / AM block
  if (cdr_jitter_ps > 0) v += cdr_jitter_ps * normal(d);                     // CDR / deserializer
  return send_ps + static_cast<uint64_t>(std::llround(std::max(v, 0.0)));
}

void Network::post(uint32_t dir, uint64_t send_ps, Kind kind, int64_t value) {
  Dir& d = m_dirs[dir];
  const uint64_t t = arrival_ps(d, send_ps);
  Unit& r = m_units[d.to];
  const uint64_t cycle = r.chip->clock().cycle_at_or_after(t);
  r.inbox.push(core::TimeKey{cycle, 0, m_seq++}, Msg{cycle, dir, kind, value});
  ++messages;
}

void Network::transmit(tsp::Tsp& chip, uint32_t port, uint64_t cycle) {
  const auto it = m_index.find(&chip);
  const int32_t dir = it != m_index.end() && port < m_ports ? m_port_dir[it->second * m_ports + port] : -1;
  if (dir < 0) throw std::logic_error(fmt::format("{}: TRANSMIT on c2c{} without a cable", chip.name(), port));
  Dir& d = m_dirs[dir];
  const uint64_t t = arrival_ps(d, chip.clock().ps(cycle));
  tsp::Tsp& peer = *m_units[d.to].chip;
  peer.notification(d.tport, peer.clock().cycle_at_or_after(t));
  ++notifications;
}

void Network::activity(tsp::Tsp&, int delta) {
  m_active += delta;
  if (delta > 0) ensure_running();
}

void Network::run_for(uint64_t n) {
  if (!m_on || m_units.empty()) return;
  const double period = m_units[m_root < m_units.size() ? m_root : 0].chip->clock().period_ps();
  m_until_ps = std::max(m_until_ps, now_ps() + static_cast<uint64_t>(std::ceil(n * exchange_cycles * period)));
  ensure_running();
}

bool Network::running() const { return m_active > 0 || now_ps() < m_until_ps; }

void Network::ensure_running() {
  if (!m_on || m_scheduled) return;
  m_scheduled = true;
  m_sched.clear();
  const uint64_t now = now_ps();
  for (uint32_t u = 0; u < m_units.size(); ++u) {
    Unit& unit = m_units[u];
    if (!unit.alive) continue;
    const uint64_t c = unit.chip->clock().cycle_at_or_after(now);
    const uint64_t per = exchange_cycles;
    unit.slot = std::max(unit.slot, (c + per - 1) / per * per);
    m_sched.push(unit.chip->clock().ps(unit.slot), u, u);
  }
  m_wake.notify(sc_core::SC_ZERO_TIME);
}

void Network::step() {
  const uint64_t now = now_ps();
  if (!running() || core::Context::get().halted()) {
    m_scheduled = false;
    return;  // asleep until a chip has work again
  }
  while (!m_sched.empty() && m_sched.top_key().t <= now) {
    const uint32_t u = m_sched.pop();
    do_slot(u);
    m_units[u].slot += exchange_cycles;
    m_sched.push(m_units[u].chip->clock().ps(m_units[u].slot), u, u);
  }
  if (!m_sched.empty()) next_trigger(sc_core::sc_time::from_value(m_sched.top_key().t - now));
}

void Network::do_slot(uint32_t ui) {
  Unit& u = m_units[ui];
  const uint64_t s = u.slot;
  ++slots;
  while (!u.inbox.empty() && u.inbox.top_key().t <= s) {
    const Msg m = u.inbox.pop();
    receive(ui, m, s);
  }
  const int64_t h = u.chip->hac().hac(s);
  const uint64_t t = u.chip->clock().ps(s);
  for (uint32_t d : u.out) {
    Kind kind = kHac;
    if ((d & 1) == 0) {  // this chip is the cable's A end: characterization requests first
      Cal& cal = m_cal[m_dirs[d].cable];
      if (cal.requests < calibration_iterations) {
        ++cal.requests;
        kind = kReflectReq;
      }
    }
    post(d, t, kind, h);
  }
}

void Network::receive(uint32_t ui, const Msg& m, uint64_t s) {
  Unit& u = m_units[ui];
  clock::HacCounter& hc = u.chip->hac();
  switch (m.kind) {
    case kReflectReq: {
      // Reflect the value unchanged, turnaround_cycles after it was sampled.
      ++reflections;
      post(m.dir ^ 1u, u.chip->clock().ps(m.cycle + turnaround_cycles), kReflectRet, m.value);
      break;
    }
    case kReflectRet: {
      const uint32_t w = m_dirs[m.dir].cable;
      int64_t rtt = hc.hac(m.cycle) - m.value;
      rtt = ((rtt % clock::kEpoch) + clock::kEpoch) % clock::kEpoch;
      // The counter only knows the round trip modulo the epoch; the multiple
      // comes from the cable's nominal latency (software knows the cable class).
      const double k = std::round((m_cal[w].nominal_rtt - static_cast<double>(rtt)) / clock::kEpoch);
      const double sample = (static_cast<double>(rtt) + k * clock::kEpoch - turnaround_cycles) / 2.0;
      LinkStats& st = m_stats[w];
      if (st.n < calibration_iterations) {
        st.add(sample);
        if (st.n == calibration_iterations && ++m_calibrated == m_live_cables) {
          m_aligning = true;
          log(core::Level::debug, "every cable characterized; parent/child alignment starts");
        }
      }
      break;
    }
    case kHac: {
      if (!m_aligning || static_cast<int32_t>(m.dir) != u.parent_dir) break;
      const double lat = latency_estimate(m_dirs[m.dir].cable);
      const double err = static_cast<double>(m.value) + lat - static_cast<double>(hc.hac(m.cycle));
      u.err_sum += clock::wrap_epoch(static_cast<int64_t>(std::llround(err)));
      if (++u.err_n < filter_exchanges) break;
      const double mean = static_cast<double>(u.err_sum) / static_cast<double>(u.err_n);
      u.err_sum = 0;
      u.err_n = 0;
      const int64_t lim = max_adjust;
      const int64_t e = std::clamp(static_cast<int64_t>(std::llround(mean)), -lim, lim);
      if (e != 0) {
        hc.adjust(e, s);
        ++adjustments;
        adjustment_cycles += static_cast<uint64_t>(e < 0 ? -e : e);
      }
      break;
    }
  }
}

double Network::offset_from_root(uint32_t chip) {
  const uint64_t t = now_ps();
  auto at = [t](tsp::Tsp& c) {
    const clock::Oscillator& o = c.clock();
    const uint64_t cyc = o.cycle_at_or_before(t);
    return static_cast<double>(c.hac().aligned(cyc)) + static_cast<double>(t - o.ps(cyc)) / o.period_ps();
  };
  double d = std::fmod(at(*m_units.at(chip).chip) - at(*m_units.at(m_root).chip), static_cast<double>(clock::kEpoch));
  if (d < -clock::kEpoch / 2) d += clock::kEpoch;
  if (d >= clock::kEpoch / 2) d -= clock::kEpoch;
  return d;
}

std::vector<std::vector<tsp::Instr>> Network::alignment_programs(uint64_t begin, uint32_t& epochs) const {
  const uint32_t n = static_cast<uint32_t>(m_units.size());
  std::vector<std::vector<tsp::Instr>> prog(n);
  epochs = 0;
  if (m_root >= n) return prog;
  // Epochs from the root's DESKEW boundary to each chip's release: a hop takes
  // floor((L + k) / 252) + 1 epochs, L the cable's largest characterized
  // latency (nominal + 16 before characterization), k the TRANSMIT's cycle
  // offset after the parent's boundary.
  std::vector<uint32_t> release(n, 0);
  std::vector<uint32_t> order{m_root};
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t c = order[i];
    uint32_t k = 0;
    for (uint32_t d : m_units[c].child_dirs) {
      const uint32_t w = m_dirs[d].cable;
      const double lmax = m_stats[w].n ? m_stats[w].max : latency_estimate(w) + 16;
      const uint32_t hop = static_cast<uint32_t>(std::floor((lmax + k) / clock::kEpoch)) + 1;
      release[m_dirs[d].to] = release[c] + hop;
      epochs = std::max(epochs, release[m_dirs[d].to]);
      order.push_back(m_dirs[d].to);
      ++k;
    }
  }
  auto instr = [](tsp::Op op, uint16_t port = 0, uint64_t imm = 0) {
    tsp::Instr in;
    in.op = op;
    in.port = port;
    in.imm = imm;
    return in;
  };
  for (uint32_t c : order) {
    std::vector<tsp::Instr>& p = prog[c];
    if (c == m_root) {
      p.push_back(instr(tsp::Op::WAIT, 0, begin + 4 * clock::kEpoch));  // the children are polling by then
      p.push_back(instr(tsp::Op::DESKEW));
    } else {
      p.push_back(instr(tsp::Op::WAIT, 0, begin));
      p.push_back(instr(tsp::Op::POLL, static_cast<uint16_t>(m_dirs[m_units[c].parent_dir].tport)));
    }
    for (uint32_t d : m_units[c].child_dirs)
      p.push_back(instr(tsp::Op::TRANSMIT, static_cast<uint16_t>(m_dirs[d].fport)));
    for (uint32_t e = release[c]; e < epochs; ++e) p.push_back(instr(tsp::Op::DESKEW));
    p.push_back(instr(tsp::Op::NOTIFY));
  }
  return prog;
}

}  // namespace fabricvp::hac
