#include "models/ace/ace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabricvp::ace {

namespace {
uint64_t now_ps() { return core::ActionQueue::now(); }
}  // namespace

Ace::Ace(const sc_core::sc_module_name& nm, uint32_t npu, const std::string& model_name, DatapathFactory make,
         core::ActionQueue& actions)
    : core::Module(nm, "ace"),
      sram_kib(this, "sram_kib", 4096, "KiB", "SRAM for chunks, partitioned per phase plus a terminal partition", 1u,
               1u << 22),
      alu_lanes(this, "alu_lanes", 64, "lanes",
                "32-bit lanes of one reduction datapath (fp32/int32: one element per lane, bf16/fp16: one per lane "
                "in the low half); a multiple of the RTL's ACE_LANES",
                1u, 1u << 16),
      alu_units(this, "alu_units", 4, "datapaths",
                "reduction datapaths working in parallel (a chunk uses the one of its SRAM slot)", 1u, 1024u),
      clock_mhz(this, "clock_mhz", 1000.0, "MHz", "clock of the ACE datapath and SRAM", 1.0, 100000.0),
      fsms(this, "fsms", 64, "FSMs", "programmable FSMs, assigned round-robin to the collective's phases", 1u, 4096u),
      sram_bytes_per_cycle(this, "sram_bytes_per_cycle", 1024, "bytes/cycle",
                           "SRAM port bandwidth shared by DMA, sends, received stores and the reductions' partial "
                           "reads and sum writes (1024 at 1 GHz: 1 TB/s, 16 banks of 64 B)",
                           1u, 1u << 20),
      cmd("cmd"),
      irq("irq"),
      dma("dma"),
      afi_tx("afi_tx"),
      afi_rx("afi_rx"),
      m_npu_id(npu),
      m_afi_in(*this),
      m_actions(actions),
      m_clock(clock_mhz.get()),
      m_sram_rate(8, 1, static_cast<double>(sram_bytes_per_cycle.get()) * 8.0 * clock_mhz.get() / 1000.0),
      model(this, nullptr, "model", "", "datapath implementation: tlm (C++ model) or rtl (verilated)"),
      sram_bytes(this, nullptr, "sram_bytes", "bytes", "SRAM size"),
      slot_bytes(this, nullptr, "slot_bytes", "bytes", "SRAM bytes one chunk occupies"),
      slots(this, nullptr, "slots", "chunks", "chunks the SRAM holds at once (all partitions)"),
      datapath_slices(this, nullptr, "datapath_slices", "slices",
                      "DatapathModel slices of the RTL's width side by side"),
      commands(this, nullptr, "commands", "commands", "collective commands received from the NPU"),
      interrupts(this, nullptr, "interrupts", "interrupts", "completion interrupts raised"),
      chunks_loaded(this, nullptr, "chunks_loaded", "chunks", "chunks the DMA brought into the SRAM"),
      chunks_stored(this, nullptr, "chunks_stored", "chunks", "chunks the DMA wrote back to NPU memory"),
      load_bytes(this, nullptr, "load_bytes", "bytes", "NPU-memory bytes read by the load DMA"),
      store_bytes(this, nullptr, "store_bytes", "bytes", "NPU-memory bytes written by the store DMA"),
      beats(this, nullptr, "beats", "beats",
            "datapath beats accepted (alu_lanes lanes each, one per cycle and datapath)"),
      add_beats(this, nullptr, "add_beats", "beats", "add beats: received elements + staged local partial"),
      store_beats(this, nullptr, "store_beats", "beats", "store beats: a local partial staged for an add"),
      dp_stall_cycles(this, nullptr, "dp_stall_cycles", "cycles",
                      "cycles a batch of beats waited inside the datapath (row hazards, pipeline full)"),
      sram_read_bytes(this, nullptr, "sram_read_bytes", "bytes", "SRAM bytes read (sends, staging, write-back)"),
      sram_write_bytes(this, nullptr, "sram_write_bytes", "bytes", "SRAM bytes written (loads, sums, all-gather)"),
      peak_sram_bytes(this, nullptr, "peak_sram_bytes", "bytes", "most SRAM bytes held by chunks at once"),
      mean_sram_bytes(this, "mean_sram_bytes", "bytes", "time-averaged SRAM bytes held by chunks",
                      [this] { return m_end ? static_cast<double>(m_occ_area) / static_cast<double>(m_end) : 0.0; }),
      sram_occupancy(this, "sram_occupancy", "[ps, bytes]",
                     "SRAM bytes held by chunks over time: the value after each change (at most 200 points, evenly "
                     "picked)",
                     [this] {
                       nlohmann::json a = nlohmann::json::array();
                       const size_t n = m_occ_series.size(), k = std::min<size_t>(n, 200);
                       for (size_t i = 0; i < k; ++i) {
                         const auto& p = m_occ_series[k == n ? i : i * (n - 1) / (k - 1)];
                         a.push_back({p.first, p.second});
                       }
                       return a;
                     }),
      fsm_utilization(this, "fsm_utilization", "%",
                      "busy share of the simulated time, per FSM (phase = index % phases)",
                      [this] {
                        nlohmann::json a = nlohmann::json::array();
                        for (uint64_t b : m_fsm_busy_ps) a.push_back(core::percent_of_run(b));
                        return a;
                      }),
      fsm_mean_utilization(this, "fsm_mean_utilization", "%", "busy share of the simulated time, mean over FSMs",
                           [this] {
                             if (!m_end || m_fsm_busy_ps.empty()) return 0.0;
                             double s = 0;
                             for (uint64_t b : m_fsm_busy_ps) s += static_cast<double>(b);
                             return 100.0 * s / static_cast<double>(m_end) / m_fsm_busy_ps.size();
                           }),
      alu_utilization(this, "alu_utilization", "%",
                      "datapath cycles with a beat accepted / (cycles simulated x alu_units)",
                      [this] {
                        const uint64_t cycles = m_end ? m_clock.cycle_at_or_after(m_end) * alu_units.get() : 0;
                        return cycles ? 100.0 * static_cast<double>(beats.get()) / static_cast<double>(cycles) : 0.0;
                      }),
      sram_port_busy_ps(this, nullptr, "sram_port_busy_ps", "ps", "time the SRAM port was busy"),
      sram_port_utilization(this, "sram_port_utilization", "%", "sram_port_busy_ps / simulated time",
                            [this] { return core::percent_of_run(sram_port_busy_ps.get()); }) {
  const Geometry& built = rtl_geometry();
  const uint32_t L = alu_lanes.get();
  if (L % built.lanes != 0)
    throw core::ConfigError(fmt::format("{}.alu_lanes: {} is not a multiple of the datapath slice width {} (ACE_LANES)",
                                        name(), L, built.lanes));
  const uint64_t bytes = uint64_t(sram_kib.get()) * 1024;
  const uint32_t B = alu_units.get();
  m_sram.assign(bytes, 0);
  m_geo = built;  // the datapaths' own buffers are their staging rings
  const uint32_t S = L / built.lanes;
  m_dp.resize(B);
  for (uint32_t u = 0; u < B; ++u)
    for (uint32_t s = 0; s < S; ++s) {
      m_dp[u].push_back(make(fmt::format("dp{}_{}", u, s)));
      if (m_dp[u].back()->geometry() != m_geo)
        throw std::logic_error(fmt::format("{}: a datapath slice of another geometry than the RTL's", name()));
      m_dp[u].back()->configure(0, 0, m_geo.depth);  // one partition: the whole staging ring
    }
  m_stage_row.assign(B, 0);
  m_unit_horizon.assign(B, 0);
  m_beat.data.assign(m_geo.lanes, 0);
  model.set(model_name);
  sram_bytes.set(bytes);
  datapath_slices.set(uint64_t(S) * B);
  cmd.register_b_transport(this, &Ace::command);
  irq.bind(m_gp_bw);
  dma.bind(m_gp_bw);
  afi_tx.bind(m_afi_bw);
  afi_rx.bind(m_afi_in);
  // The endpoint's collective statistics (messages, bytes, reductions, input
  // buffers) are the NPU's, whichever engine serves it: registered under the
  // ACE's parent.
  const sc_core::sc_object* endpoint = get_parent_object() ? get_parent_object() : this;
  m_engine = std::make_unique<npu::CollectiveEngine>(
      endpoint, name(), m_npu_id, m_actions, *this,
      [this](npu::Message& m) {
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        afi_tx->b_transport(m, delay);
      },
      [this](const npu::Collective& c) { completed(c); });
}

Ace::~Ace() {
  m_engine.reset();
  while (!m_dp.empty()) {
    while (!m_dp.back().empty()) m_dp.back().pop_back();
    m_dp.pop_back();
  }
}

double Ace::datapath_host_seconds() const {
  double s = 0;
  for (const auto& u : m_dp)
    for (const auto& d : u) s += d->host_seconds();
  return s;
}

void Ace::AfiIn::b_transport(npu::Message& m, sc_core::sc_time&) { m_ace.m_engine->deliver(m); }

void Ace::command(tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
  if (gp.get_command() != tlm::TLM_WRITE_COMMAND || gp.get_address() != 0 ||
      gp.get_data_length() != sizeof(npu::CollectiveCommand)) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  const auto& cmd_block = *reinterpret_cast<const npu::CollectiveCommand*>(gp.get_data_ptr());
  if (!cmd_block.collective || !cmd_block.collective->request.plan) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  const npu::CollectivePlan& plan = cmd_block.collective->plan();
  const uint32_t L = alu_lanes.get();
  if (plan.align() % L != 0)
    throw core::ConfigError(
        fmt::format("{}: segments are split on multiples of {} elements (collective.align_elems), "
                    "which must be a multiple of alu_lanes {}",
                    name(), plan.align(), L));
  if (fsms.get() < plan.phases())
    throw core::ConfigError(
        fmt::format("{}.fsms: {} FSMs for {} phases (each phase needs one)", name(), fsms.get(), plan.phases()));
  const uint64_t need = plan.chunk_capacity() * plan.esize();
  const uint64_t fit = need ? m_sram.size() / need : 0;
  if (need && fit < plan.phases() + 1)
    throw core::ConfigError(fmt::format(
        "{}: the SRAM ({} KiB) holds {} chunk(s) of {} bytes; it needs one per phase partition plus the terminal "
        "partition ({}): lower collective.chunk_kib or raise sram_kib",
        name(), sram_kib.get(), fit, need, plan.phases() + 1));
  ++commands;
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  if (m_waiting_commands.empty() && fits(plan)) {
    if (m_engine->in_flight() == 0) configure(plan);
    m_engine->submit(cmd_block.collective);
  } else {
    m_waiting_commands.push_back(cmd_block.collective);
  }
}

bool Ace::fits(const npu::CollectivePlan& plan) const {
  if (m_engine->in_flight() == 0) return true;  // idle: it will be set up for it
  return plan.phases() <= m_phases && plan.chunk_capacity() * plan.esize() <= m_slot_bytes;
}

void Ace::configure(const npu::CollectivePlan& plan) {
  const uint32_t P = plan.phases();
  m_phases = P;
  m_slot_bytes = std::max<uint64_t>(1, plan.chunk_capacity() * plan.esize());
  m_slots = static_cast<uint32_t>(m_sram.size() / m_slot_bytes);
  m_part_size.assign(P + 1, m_slots / (P + 1));
  for (uint32_t i = 0; i < m_slots % (P + 1); ++i) ++m_part_size[i];
  m_part_used.assign(P + 1, 0);
  m_free_slots.clear();
  for (uint32_t s = 0; s < m_slots; ++s) m_free_slots.push_back(s);
  if (!m_configured) {
    m_fsm_is_busy.assign(fsms.get(), false);
    m_fsm_since.assign(fsms.get(), 0);
    m_fsm_busy_ps.assign(fsms.get(), 0);
  }
  m_fsm_phase.resize(fsms.get());
  for (uint32_t f = 0; f < fsms.get(); ++f) m_fsm_phase[f] = f % P;
  slot_bytes.set(m_slot_bytes);
  slots.set(m_slots);
  m_configured = true;
}

void Ace::admit(uint32_t coll, const npu::Collective& c) {
  if (m_colls.size() <= coll) m_colls.resize(coll + 1);
  Coll& k = m_colls[coll];
  const npu::CollectivePlan& plan = c.plan();
  k.dt = plan.dtype();
  k.es = plan.esize();
  k.address = c.request.address;
  k.timing_only = c.request.timing_only;
  k.last_phase = plan.phases() - 1;
  k.slot_of.assign(plan.chunks(), -1);
  k.fsm_of.assign(plan.chunks(), -1);
}

void Ace::completed(const npu::Collective& c) {
  ++interrupts;
  npu::CollectiveCompletion cpl{c.id.key(), c.tag};
  const std::string refused = npu::write_block(irq, &cpl, sizeof cpl);
  if (!refused.empty())
    throw std::logic_error(fmt::format("{}: the NPU refused the completion interrupt ({})", name(), refused));
  // Commands that waited for an idle ACE: reconfigure for the first, then take every one that fits.
  if (m_engine->in_flight() == 0 && !m_waiting_commands.empty()) {
    configure(m_waiting_commands.front()->plan());
    while (!m_waiting_commands.empty() && fits(m_waiting_commands.front()->plan())) {
      auto next = m_waiting_commands.front();
      m_waiting_commands.pop_front();
      m_engine->submit(next);
    }
  }
}

void Ace::occupancy(int64_t delta_bytes) {
  const uint64_t now = now_ps();
  m_occ_area += static_cast<unsigned __int128>(m_used_bytes) * (now - m_occ_since);
  m_occ_since = now;
  m_used_bytes += delta_bytes;
  const uint64_t b = static_cast<uint64_t>(m_used_bytes);
  peak_sram_bytes.note_max(b);
  if (!m_occ_series.empty() && m_occ_series.back().first == now)
    m_occ_series.back().second = b;
  else
    m_occ_series.emplace_back(now, b);
}

void Ace::fsm_busy(uint32_t f, bool busy) {
  const uint64_t now = now_ps();
  if (busy) {
    m_fsm_since[f] = now;
  } else {
    m_fsm_busy_ps[f] += now - m_fsm_since[f];
    auto& tr = core::Context::get().trace();
    if (tr.enabled() && tr.in_window(m_fsm_since[f], now)) {
      if (!m_trace_pid) {
        m_trace_pid = tr.process(name());
        for (uint32_t k = 0; k < m_fsm_phase.size(); ++k)
          tr.thread(m_trace_pid, k + 1, fmt::format("fsm{} (phase {})", k, m_fsm_phase[k]));
      }
      tr.span(m_trace_pid, f + 1, "chunk", "ace", m_fsm_since[f], now - m_fsm_since[f],
              fmt::format(R"("phase":{})", m_fsm_phase[f]));
    }
  }
  m_fsm_is_busy[f] = busy;
}

void Ace::set_end(uint64_t ps) {
  if (!m_configured) return;
  for (uint32_t f = 0; f < m_fsm_is_busy.size(); ++f)
    if (m_fsm_is_busy[f]) {
      m_fsm_busy_ps[f] += ps - m_fsm_since[f];
      m_fsm_since[f] = ps;
    }
  m_occ_area += static_cast<unsigned __int128>(m_used_bytes) * (ps - m_occ_since);
  m_occ_since = ps;
  m_end = ps;
}

bool Ace::try_enter(npu::ChunkRef c, uint32_t phase) {
  if (m_part_used[phase] >= m_part_size[phase]) return false;
  if (phase == 0 && m_free_slots.empty()) return false;
  uint32_t f = 0;
  while (f < m_fsm_phase.size() && (m_fsm_phase[f] != phase || m_fsm_is_busy[f])) ++f;
  if (f == m_fsm_phase.size()) return false;
  fsm_busy(f, true);
  m_colls[c.coll].fsm_of[c.chunk] = static_cast<int32_t>(f);
  ++m_part_used[phase];
  if (phase > 0) --m_part_used[phase - 1];
  return true;
}

void Ace::leave(npu::ChunkRef c, uint32_t) {
  int32_t& f = m_colls[c.coll].fsm_of[c.chunk];
  if (f < 0) throw std::logic_error(fmt::format("{}: chunk {} leaves a phase without an FSM", name(), c.chunk));
  fsm_busy(static_cast<uint32_t>(f), false);
  f = -1;
}

uint8_t* Ace::slot_at(npu::ChunkRef c, uint64_t elem) {
  const Coll& k = m_colls[c.coll];
  uint8_t* slot = m_sram.data() + uint64_t(k.slot_of[c.chunk]) * m_slot_bytes;
  uint64_t base = 0;
  for (const auto& r : m_engine->chunk_plan(c).span().ranges) {
    if (elem >= r.first && elem < r.second) return slot + (base + elem - r.first) * k.es;
    base += r.second - r.first;
  }
  throw std::logic_error(fmt::format("{}: element {} is not in chunk {}", name(), elem, c.chunk));
}

void Ace::sram_read(npu::ChunkRef c, const npu::Span& span, uint8_t* out) {
  const uint32_t es = m_colls[c.coll].es;
  for (const auto& r : span.ranges) {
    const uint64_t len = (r.second - r.first) * es;
    std::memcpy(out, slot_at(c, r.first), len);
    out += len;
    sram_read_bytes += len;
  }
}

void Ace::sram_write(npu::ChunkRef c, const npu::Span& span, const uint8_t* in) {
  const uint32_t es = m_colls[c.coll].es;
  for (const auto& r : span.ranges) {
    const uint64_t len = (r.second - r.first) * es;
    std::memcpy(slot_at(c, r.first), in, len);
    in += len;
    sram_write_bytes += len;
  }
}

uint64_t Ace::dma_transfer(uint32_t coll, const npu::Span& span, uint8_t* buf, bool write, npu::Client client,
                           uint64_t after) {
  const Coll& k = m_colls[coll];
  npu::DmaRequest req;
  req.client = client;
  req.no_data = buf == nullptr;  // timing only
  uint64_t total = 0;
  for (const auto& r : span.ranges) {
    req.ranges.emplace_back(k.address + r.first * k.es, (r.second - r.first) * k.es);
    total += (r.second - r.first) * k.es;
  }
  tlm::tlm_generic_payload gp;
  gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp.set_address(req.ranges.empty() ? 0 : req.ranges.front().first);
  gp.set_data_ptr(buf);
  gp.set_data_length(static_cast<unsigned int>(total));
  gp.set_streaming_width(static_cast<unsigned int>(total));
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp.set_extension(&req);
  sc_core::sc_time delay = sc_core::sc_time::from_value(after);
  dma->b_transport(gp, delay);
  gp.clear_extension(&req);
  if (!gp.is_response_ok())
    throw std::logic_error(fmt::format("{}: DMA {} of {} bytes failed ({})", name(), write ? "write" : "read", total,
                                       gp.get_response_string()));
  return now_ps() + delay.value();
}

uint64_t Ace::reduce(npu::ChunkRef c, const npu::Span& span, const uint8_t* in, uint8_t* out) {
  const uint64_t now = now_ps();
  if (core::Context::get().halted()) return now;
  const Coll& k = m_colls[c.coll];
  const uint32_t slot = static_cast<uint32_t>(k.slot_of[c.chunk]);
  const uint32_t unit = slot % static_cast<uint32_t>(m_dp.size());
  auto& dp = m_dp[unit];
  const uint32_t L = alu_lanes.get(), g = m_geo.lanes, S = static_cast<uint32_t>(dp.size());
  const uint32_t es = k.es;
  const uint64_t n = span.elems();
  // The local partial, in span order (read from the SRAM as the beats are
  // staged), and the sums written back over it: in place in the SRAM slot
  // where the span is one range, else through a copy (m_local).
  uint8_t* local = span.ranges.size() == 1 ? slot_at(c, span.ranges[0].first) : nullptr;
  if (local) {
    sram_read_bytes += n * es;
  } else {
    m_local.resize(n * es);
    sram_read(c, span, m_local.data());
    local = m_local.data();
  }
  const uint64_t c_now = std::max(m_clock.cycle_at_or_after(now), m_unit_horizon[unit]);
  for (auto& d : dp)
    if (d->cycle() < c_now && !d->advance(c_now - d->cycle()))
      throw std::logic_error(fmt::format("{}: the datapath produced output while idle", name()));
  const uint64_t nbeats = (n + L - 1) / L;
  if (nbeats == 0) return now;
  // Where the slices' model has the burst's closed form (the C++ model): the
  // burst in one call per slice and the sums in one pass, giving the same
  // sums, cycles and model state as the beats.
  Burst burst;
  burst.dtype = k.dt;
  burst.row0 = m_stage_row[unit];
  burst.rows = nbeats;
  burst.local = local;
  burst.es = es;
  burst.n = n;
  burst.stride = L;
  BurstCycles cycles;
  if (dp[0]->reduce_burst(burst, cycles)) {
    for (uint32_t s = 1; s < S; ++s) {
      burst.lane0 = s * g;
      BurstCycles other;
      if (!dp[s]->reduce_burst(burst, other))
        throw std::logic_error(fmt::format("{}: datapath {} slice {} ran no burst where slice 0 did", name(), unit, s));
      if (other.first_accept != cycles.first_accept || other.last_retire != cycles.last_retire)
        throw std::logic_error(fmt::format("{}: datapath {} slices 0 and {} disagree on timing", name(), unit, s));
    }
    core::add(k.dt, local, in, local, n * es);  // the add beats' sums
    m_stage_row[unit] = static_cast<uint32_t>((burst.row0 + nbeats) % m_geo.depth);
    m_tag += static_cast<uint32_t>(2 * nbeats);
  } else {
    run_beats(unit, k.dt, es, n, local, in, cycles);
    if (core::Context::get().halted()) return now;  // the RTL failed: reported as a hardware error
  }
  if (local == m_local.data())
    sram_write(c, span, local);
  else
    sram_write_bytes += n * es;  // summed in place
  if (out) std::memcpy(out, local, n * es);
  m_unit_horizon[unit] = cycles.last_retire + 1;
  return count_burst(c_now, cycles.first_accept, cycles.last_accept, cycles.last_retire, nbeats);
}

void Ace::run_beats(uint32_t unit, core::Dtype dt, uint32_t es, uint64_t n, uint8_t* local, const uint8_t* in,
                    BurstCycles& cycles) {
  auto& dp = m_dp[unit];
  const uint32_t L = alu_lanes.get(), g = m_geo.lanes, S = static_cast<uint32_t>(dp.size());
  auto lane_value = [&](const uint8_t* src, uint64_t e) {
    uint32_t v = 0;
    if (es == 4) {
      std::memcpy(&v, src + e * es, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, src + e * es, 2);
      v = h;
    }
    return v;
  };
  const uint64_t nbeats = (n + L - 1) / L;
  const uint32_t tag_mask = m_geo.tag_bits >= 32 ? 0xffffffffu : (1u << m_geo.tag_bits) - 1;
  for (uint64_t b = 0; b < nbeats; ++b) {
    const uint64_t e0 = b * L;
    const uint32_t cnt = static_cast<uint32_t>(std::min<uint64_t>(L, n - e0));
    const uint32_t row = m_stage_row[unit];
    m_stage_row[unit] = (row + 1) % m_geo.depth;
    for (uint32_t pass = 0; pass < 2; ++pass) {  // store the local partial, then add the received elements
      for (uint32_t s = 0; s < S; ++s) {
        m_beat.op = pass == 0 ? Op::store : Op::add;
        m_beat.dtype = dt;
        m_beat.part = 0;
        m_beat.row = row;
        m_beat.wb = pass == 0;
        m_beat.send = pass == 1;
        m_beat.tag = m_tag & tag_mask;
        m_beat.gap = 0;
        for (uint32_t i = 0; i < g; ++i) {
          const uint32_t lane = s * g + i;
          m_beat.data[i] = lane < cnt ? lane_value(pass == 0 ? local : in, e0 + lane) : 0;
        }
        dp[s]->submit(m_beat);
      }
      ++m_tag;
    }
  }
  const uint64_t nsub = 2 * nbeats;
  m_cpl.resize(nsub);
  for (uint32_t s = 0; s < S; ++s) {
    for (uint64_t b = 0; b < nsub; ++b) {
      Completion cp;
      if (!dp[s]->next(cp)) {
        if (core::Context::get().halted()) return;  // the RTL failed: reported as a hardware error
        throw std::logic_error(fmt::format("{}: datapath {} slice {} returned no completion", name(), unit, s));
      }
      if (cp.err) throw std::logic_error(fmt::format("{}: datapath {} slice {} flagged an error", name(), unit, s));
      if (s == 0) {
        m_cpl[b].accept_cycle = cp.accept_cycle;
        m_cpl[b].retire_cycle = cp.retire_cycle;
      } else if (cp.accept_cycle != m_cpl[b].accept_cycle || cp.retire_cycle != m_cpl[b].retire_cycle) {
        throw std::logic_error(fmt::format("{}: datapath {} slices 0 and {} disagree on timing", name(), unit, s));
      }
      if (b % 2 == 1) {  // the sum of beat b / 2: back over the local partial (span order)
        const uint64_t e0 = (b / 2) * L;
        for (uint32_t i = 0; i < g; ++i) {
          const uint64_t e = e0 + s * g + i;
          if (e >= n || s * g + i >= L) break;
          uint8_t* p = local + e * es;
          if (es == 4) {
            std::memcpy(p, &cp.data[i], 4);
          } else {
            const uint16_t h = static_cast<uint16_t>(cp.data[i]);
            std::memcpy(p, &h, 2);
          }
        }
      }
    }
  }
  cycles = BurstCycles{m_cpl.front().accept_cycle, m_cpl[nsub - 1].accept_cycle, m_cpl[nsub - 1].retire_cycle};
}

uint64_t Ace::count_burst(uint64_t c_now, uint64_t first_accept, uint64_t last_accept, uint64_t last_retire,
                          uint64_t rows) {
  const uint64_t nsub = 2 * rows;
  beats += nsub;
  add_beats += rows;
  store_beats += rows;
  dp_stall_cycles += (first_accept - c_now) + (last_accept - first_accept + 1 - nsub);
  return m_clock.ps(last_retire + 1);
}

uint64_t Ace::reduce_timing(npu::ChunkRef c, uint64_t elems) {
  const uint64_t now = now_ps();
  const Coll& k = m_colls[c.coll];
  const uint32_t unit = static_cast<uint32_t>(k.slot_of[c.chunk]) % static_cast<uint32_t>(m_dp.size());
  const uint64_t rows = (elems + alu_lanes.get() - 1) / alu_lanes.get();
  sram_read_bytes += elems * k.es;  // the local partial, staged
  if (rows == 0) return now;
  m_stage_row[unit] = static_cast<uint32_t>((m_stage_row[unit] + rows) % m_geo.depth);
  // As reduce(): stalls count from when the unit is free; the data path's
  // models hold their own cycle, a timing-only burst moves the unit's horizon past it.
  const uint64_t c_now = std::max(m_clock.cycle_at_or_after(now), m_unit_horizon[unit]);
  uint64_t start = c_now;
  for (const auto& d : m_dp[unit]) start = std::max(start, d->cycle());
  const BurstCycles b = reduce_burst_cycles(start, rows);
  m_unit_horizon[unit] = b.last_retire + 1;
  return count_burst(c_now, b.first_accept, b.last_accept, b.last_retire, rows);
}

uint64_t Ace::sram_port(uint64_t now, uint64_t bytes) {
  const uint64_t start = std::max(now, m_sram_free);
  const uint64_t dur = m_sram_rate.ps(bytes);
  m_sram_free = start + dur;
  sram_port_busy_ps += dur;
  return m_sram_free;
}

void Ace::load(npu::ChunkRef c) {
  Coll& k = m_colls[c.coll];
  k.slot_of[c.chunk] = static_cast<int32_t>(m_free_slots.front());
  m_free_slots.erase(m_free_slots.begin());
  occupancy(static_cast<int64_t>(m_slot_bytes));
  const npu::Span& span = m_engine->chunk_plan(c).input();
  const uint64_t bytes = span.elems() * k.es;
  std::shared_ptr<std::vector<uint8_t>> buf;
  if (!k.timing_only) buf = std::make_shared<std::vector<uint8_t>>(bytes);
  uint64_t done = now_ps();
  if (bytes) {
    const uint64_t read = dma_transfer(c.coll, span, buf ? buf->data() : nullptr, false, npu::Client::ace_load_read, 0);
    done = sram_port(read, bytes);
    load_bytes += bytes;
  }
  m_actions.at(done, [this, c, buf, bytes] {
    if (buf)
      sram_write(c, m_engine->chunk_plan(c).input(), buf->data());
    else
      sram_write_bytes += bytes;
    ++chunks_loaded;
    m_engine->loaded(c);
  });
}

void Ace::send_local(npu::ChunkRef c, uint32_t msg, const npu::Span& span, uint64_t elems) {
  const Coll& k = m_colls[c.coll];
  npu::Message& m = m_engine->message(msg);
  m.bytes = elems * k.es;
  if (k.timing_only) {
    sram_read_bytes += m.bytes;
  } else {
    m.data.resize(m.bytes);
    sram_read(c, span, m.data.data());
  }
  m_engine->send(msg, sram_port(now_ps(), m.bytes));
}

void Ace::receive(npu::TaskRef t, uint32_t in_id, const npu::Step& step, uint32_t fwd_id, uint64_t) {
  const npu::ChunkRef c{t.coll, t.chunk};
  const Coll& k = m_colls[c.coll];
  const npu::Message& in = m_engine->message(in_id);
  npu::Message* fwd = fwd_id == npu::MessagePool::kNone ? nullptr : &m_engine->message(fwd_id);
  const uint32_t es = k.es;
  const uint64_t local = step.elems * es;
  const uint64_t own = fwd && step.forward_local ? local : 0;
  const uint64_t pass = fwd ? step.passthrough * es : 0;
  if (fwd) {
    fwd->bytes = own + pass;
    if (!k.timing_only) fwd->data.resize(own + pass);
  }
  uint64_t r = now_ps();
  if (step.reduce) {
    // The datapath reads the local partial and writes the sum through the SRAM port.
    const uint64_t port = sram_port(r, 2 * local);
    const uint64_t sums = k.timing_only ? reduce_timing(c, step.elems)
                                        : reduce(c, step.local, in.data.data(), own ? fwd->data.data() : nullptr);
    if (k.timing_only) sram_write_bytes += local;  // the sums
    r = std::max(sums, port);
    m_engine->reduced(local);
  } else {
    if (k.timing_only) {
      sram_write_bytes += local;
    } else {
      sram_write(c, step.local, in.data.data());
      if (own) std::memcpy(fwd->data.data(), in.data.data(), local);
    }
    r = sram_port(r, in.bytes);
  }
  if (pass && !k.timing_only) std::memcpy(fwd->data.data() + own, in.data.data() + local, pass);
  if (fwd) m_engine->send(fwd_id, r);
  m_engine->step_done(t, r);  // the FSM takes the ring's next message when this one's result is in place
}

void Ace::finish(npu::ChunkRef c) {
  m_terminal_wait.push_back(c);
  try_terminal();
}

void Ace::try_terminal() {
  const uint32_t T = static_cast<uint32_t>(m_part_size.size()) - 1;
  while (!m_terminal_wait.empty() && m_part_used[T] < m_part_size[T]) {
    const npu::ChunkRef c = m_terminal_wait.front();
    m_terminal_wait.pop_front();
    Coll& k = m_colls[c.coll];
    --m_part_used[k.last_phase];
    ++m_part_used[T];
    const npu::Span& span = m_engine->chunk_plan(c).output();
    const uint64_t bytes = span.elems() * k.es;
    uint64_t w = now_ps();
    if (bytes) {
      std::vector<uint8_t> buf;
      if (k.timing_only) {
        sram_read_bytes += bytes;
      } else {
        buf.resize(bytes);
        sram_read(c, span, buf.data());
      }
      const uint64_t issue = sram_port(now_ps(), bytes);
      w = dma_transfer(c.coll, span, buf.empty() ? nullptr : buf.data(), true, npu::Client::ace_store_write,
                       issue - now_ps());
      store_bytes += bytes;
    }
    m_actions.at(w, [this, c] {
      int32_t& slot = m_colls[c.coll].slot_of[c.chunk];
      const uint32_t s = static_cast<uint32_t>(slot);
      m_free_slots.insert(std::upper_bound(m_free_slots.begin(), m_free_slots.end(), s), s);
      slot = -1;
      occupancy(-static_cast<int64_t>(m_slot_bytes));
      --m_part_used[m_part_used.size() - 1];
      ++chunks_stored;
      m_engine->chunk_done(c);
      try_terminal();
    });
  }
}

}  // namespace fabricvp::ace
