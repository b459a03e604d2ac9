#include "models/c2c/link.h"

#include <algorithm>
#include <cstring>

namespace fabricvp::c2c {

namespace {
#define FABRICVP_DIR_NAMES(d)                                                                                 \
  Channel::Names {                                                                                            \
    d, d "_out",                                                                                              \
        {{d ".bursts", "bursts", "bursts of back-to-back packets"},                                           \
         {d ".packets", "packets", "packets (one 320-B vector each) serialized"},                             \
         {d ".payload_bytes", "bytes", "vector payload bytes carried"},                                       \
         {d ".busy_ps", "ps", "time the serializer was busy"},                                                \
         {d ".utilization_pct", "%", "busy_ps / simulated time"}},                                            \
        d ".wire_bytes", d ".peak_in_flight", d ".fec_codewords", d ".fec_corrected_codewords",               \
        d ".fec_corrected_symbols", d ".fec_uncorrectable_codewords", d ".fec_miscorrected_codewords",        \
        d ".fec_flagged_vectors", d ".silent_corrupted_vectors", d ".bit_errors", d ".fec_symbol_errors_hist" \
  }
const Channel::Names kAtoB = FABRICVP_DIR_NAMES("a_to_b");
const Channel::Names kBtoA = FABRICVP_DIR_NAMES("b_to_a");
#undef FABRICVP_DIR_NAMES

std::string attempt_suffix(bool marginal) {
  // A transient fault is different on every replay; a marginal link's is not.
  return marginal ? std::string() : "/attempt" + std::to_string(core::Context::get().attempt());
}
}  // namespace

Channel::Channel(Link& link, const Names& n, uint32_t trace_tid, const Phy* phy)
    : core::SerialChannel(
          &link, n.serial,
          core::SerialRate(static_cast<uint64_t>(link.packet_bytes.get()) * 8, link.lanes, link.lane_gbps),
          link.tx_pipeline_ps + link.propagation_ps + link.fec_latency_ps() + link.rx_pipeline_ps),
      m_link(link),
      m_dir(n.dir),
      m_tid(trace_tid),
      m_out(n.out),
      wire_bytes(&link, nullptr, n.wire_bytes, "bytes", "bytes on the wire including framing"),
      peak_in_flight(&link, nullptr, n.peak_in_flight, "vectors",
                     "most vectors read at the source and not yet written at the destination"),
      codewords(&link, nullptr, n.codewords, "codewords", "FEC codewords carrying this direction's packets"),
      corrected_codewords(&link, nullptr, n.corrected_codewords, "codewords",
                          "codewords with errors that the decoder corrected"),
      corrected_symbols(&link, nullptr, n.corrected_symbols, "symbols", "10-bit symbols the decoder corrected"),
      uncorrectable_codewords(&link, nullptr, n.uncorrectable_codewords, "codewords",
                              "codewords the decoder declared uncorrectable (their vectors are flagged)"),
      miscorrected_codewords(&link, nullptr, n.miscorrected_codewords, "codewords",
                             "codewords decoded into a wrong codeword: silent corruption, invisible to hardware"),
      flagged_vectors(&link, nullptr, n.flagged_vectors, "vectors",
                      "vectors carried by uncorrectable codewords (a RECV of one raises a machine check)"),
      corrupted_vectors(&link, nullptr, n.corrupted_vectors, "vectors",
                        "vectors delivered with wrong bits and no flag (known only to the model)"),
      bit_errors(&link, nullptr, n.bit_errors, "bits", "bit errors injected into this direction's codewords"),
      symbol_error_hist(&link, n.hist, "codewords",
                        "codewords by injected symbol errors: index e = e symbols wrong, the last entry more than t",
                        [this] {
                          nlohmann::json a = nlohmann::json::array();
                          if (!m_kbits) return a;
                          std::array<uint64_t, 32> h{};
                          if (m_fec) h = m_fec->hist;
                          uint64_t with = 0;
                          for (size_t e = 1; e < h.size(); ++e) with += h[e];
                          a.push_back(codewords.get() - with);
                          uint64_t more = 0;
                          for (size_t e = 1; e < h.size(); ++e) {
                            if (e <= m_t)
                              a.push_back(h[e]);
                            else
                              more += h[e];
                          }
                          a.push_back(more);
                          return a;
                        }) {
  m_out.bind(m_bw);
  FecCode code;
  if (link.fec_code(code)) {
    m_kbits = static_cast<uint32_t>(fec_sizes(code).k) * kFecSymbolBits;
    m_t = static_cast<uint32_t>(fec_sizes(code).t);
    const double ber = link.ber + (phy ? phy->ber.get() : 0.0);
    const double burst_rate = link.burst_rate + (phy ? phy->burst_rate.get() : 0.0);
    const double mean = link.burst_rate > 0 || !phy ? link.burst_length_mean.get() : phy->burst_length_mean.get();
    if (ber > 0 || burst_rate > 0)
      m_fec = std::make_unique<Errors>(
          FecLane::Setup{code, link.lanes, link.packet_bytes, ber, burst_rate, mean,
                         link.seed_for(std::string(n.dir) + "/phy" + attempt_suffix(link.marginal))});
  }
}

Channel::~Channel() = default;

void Channel::close_frame() {
  if (!m_fec || m_fec->frames.empty() || !m_fec->frames.back().open) return;
  m_fec->frames.back().open = false;
  if (m_tail > 0) decode_through(m_tail - 1);
}

void Channel::reserve_control_share(double share) {
  if (!(share >= 0.0 && share < 1.0)) throw std::invalid_argument(name() + ": control share must be in [0, 1)");
  if (free_ps() != 0 || m_next_index != 0) throw std::logic_error(name() + ": control share set after traffic");
  m_control_share = share;
  set_rate(core::SerialRate(static_cast<uint64_t>(m_link.packet_bytes.get()) * 8, m_link.lanes,
                            m_link.lane_gbps * (1.0 - share)));
}

void Channel::decode_through(uint64_t k) {
  const uint64_t pbits = static_cast<uint64_t>(m_link.packet_bytes) * 8;
  const size_t pbytes = m_link.packet_bytes, hbytes = pbytes - kVectorBytes;
  Errors& x = *m_fec;
  while (!x.frames.empty()) {
    Frame& f = x.frames.front();
    if (k < f.first) break;
    const uint64_t p = std::min(k, f.first + f.count - 1) - f.first;  // packets of f read so far: [0, p]
    while (f.next < f.codewords) {
      const uint64_t j = f.next;
      const uint64_t first = j * m_kbits / pbits;
      const uint64_t last = std::min<uint64_t>(f.count - 1, ((j + 1) * m_kbits - 1) / pbits);
      if (last > p) break;
      if (f.open && j + 1 == f.codewords) break;  // the next burst may still complete it
      if (x.lane.next_codeword_has_errors()) {
        // Wire images (header: stream index, big-endian; then the vector) of the packets it carries.
        const size_t np = static_cast<size_t>(last - first + 1);
        x.wirebuf.assign(np * pbytes, 0);
        x.wire.clear();
        for (size_t q = 0; q < np; ++q) {
          uint8_t* img = x.wirebuf.data() + q * pbytes;
          const uint64_t idx = f.first + first + q;
          for (size_t b = 0; b < hbytes && b < 8; ++b) img[b] = static_cast<uint8_t>(idx >> (8 * (7 - b)));
          std::memcpy(img + hbytes, m_ring[idx & m_mask], kVectorBytes);
          x.wire.push_back(img);
        }
        const FecLane::Outcome o = x.lane.decode(x.wire, j * m_kbits - first * pbits, x.received);
        bit_errors += o.bit_errors;
        ++x.hist[std::min<size_t>(o.symbol_errors, x.hist.size() - 1)];
        switch (o.kind) {
          case FecLane::Outcome::clean: break;
          case FecLane::Outcome::corrected:
            ++corrected_codewords;
            corrected_symbols += o.corrected_symbols;
            break;
          case FecLane::Outcome::uncorrectable:
            ++uncorrectable_codewords;
            for (uint64_t q = first; q <= last; ++q)
              if (x.flagged.empty() || x.flagged.back() < f.first + q) {
                x.flagged.push_back(f.first + q);
                ++flagged_vectors;
              }
            break;
          case FecLane::Outcome::miscorrected:
            ++miscorrected_codewords;
            for (size_t q = 0; q < np; ++q) {
              const uint8_t* got = x.received.data() + q * pbytes;
              if (std::memcmp(got, x.wire[q], pbytes) == 0) continue;
              const uint64_t idx = f.first + first + q;
              ++corrupted_vectors;
              keep(idx);
              std::memcpy(m_kept[idx].data(), got + hbytes, kVectorBytes);
            }
            break;
        }
      }
      ++f.next;
      m_decoded = f.first + (f.next == f.codewords ? f.count : f.next * m_kbits / pbits);
    }
    if (f.next < f.codewords) break;
    x.frames.pop_front();
  }
}

std::string Channel::name() const { return std::string(m_link.name()) + "." + m_dir; }

void Channel::bind_out(RxSocket& rx) { m_out.bind(rx); }

uint64_t Channel::push(const uint8_t* vector) {
  if (m_ring.empty()) m_ring.resize(8);  // most links of a large machine never carry data
  if (m_tail - m_head == m_ring.size()) {
    // Grow (only while a receiver lags behind its transmitter in host time).
    std::vector<const uint8_t*> bigger(m_ring.size() * 2);
    for (uint64_t i = m_head; i != m_tail; ++i) bigger[i & (bigger.size() - 1)] = m_ring[i & m_mask];
    m_ring.swap(bigger);
    m_mask = m_ring.size() - 1;
  }
  m_mask = m_ring.size() - 1;
  m_ring[m_tail & m_mask] = vector;
  peak_in_flight.note_max(m_tail + 1 - m_head);
  if (m_fec) decode_through(m_tail);
  return m_tail++;
}

void Channel::keep(uint64_t k) {
  if (k < m_head || k >= m_tail) return;
  auto [it, fresh] = m_kept.try_emplace(k);
  if (!fresh) return;  // already private
  std::memcpy(it->second.data(), m_ring[k & m_mask], kVectorBytes);
  m_ring[k & m_mask] = it->second.data();
}

void Channel::b_transport(Burst& b, sc_core::sc_time& delay) {
  const bool back_to_back = m_next_index > 0 && b.ready_ps <= free_ps();
  b.start_ps = serialize(b.ready_ps, b.count, static_cast<uint64_t>(b.count) * kVectorBytes, b.count);
  b.stream_index = m_next_index;
  b.channel = this;
  const uint64_t dur = rate().ps(b.count);
  m_next_index += b.count;
  wire_bytes += static_cast<uint64_t>(b.count) * m_link.packet_bytes;
  if (m_kbits) {
    // Back-to-back bursts are one bit stream: the first packets of this one
    // complete the last codeword of the previous one. After a gap, the last
    // codeword was completed with idle bits and this burst starts a new one.
    const uint64_t bits = static_cast<uint64_t>(b.count) * m_link.packet_bytes * 8;
    const uint64_t room = back_to_back && m_fill ? m_kbits - m_fill : 0;
    const uint64_t cw = bits <= room ? 0 : (bits - room + m_kbits - 1) / m_kbits;
    m_fill = static_cast<uint32_t>(bits <= room ? m_fill + bits : (bits - room - 1) % m_kbits + 1);
    codewords += cw;
    if (m_fec) {
      auto& frames = m_fec->frames;
      if (back_to_back && !frames.empty() && frames.back().open &&
          frames.back().first + frames.back().count == b.stream_index) {
        frames.back().count += b.count;
        frames.back().codewords += cw;
      } else {
        if (!frames.empty() && frames.back().open) {
          frames.back().open = false;
          if (m_tail > 0) decode_through(m_tail - 1);
        }
        frames.push_back(Frame{b.stream_index, b.count, cw, 0, true});
      }
    }
  }
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_link.trace_pid(), m_tid, "burst", "c2c", b.start_ps, dur,
            fmt::format(R"("vectors":{},"stream_index":{})", b.count, b.stream_index));
  m_out->b_transport(b, delay);
}

tlm::tlm_sync_enum Channel::nb_transport_fw(Burst&, tlm::tlm_phase&, sc_core::sc_time&) {
  SC_REPORT_FATAL(name().c_str(), "C2C links support blocking transport only");
  return tlm::TLM_COMPLETED;
}

bool Channel::get_direct_mem_ptr(Burst&, tlm::tlm_dmi&) { return false; }

unsigned int Channel::transport_dbg(Burst&) { return 0; }

tlm::tlm_sync_enum Channel::Bw::nb_transport_bw(Burst&, tlm::tlm_phase&, sc_core::sc_time&) {
  SC_REPORT_FATAL("c2c", "C2C links support blocking transport only");
  return tlm::TLM_COMPLETED;
}

bool Link::fec_code(FecCode& code) const { return fec.get() != "none" && parse_fec_code(fec.get(), code); }

uint64_t Link::fec_latency_ps() const {
  FecCode code;
  if (!fec_code(code)) return 0;
  // One codeword's message (k x 10 bits) accumulates at the packet-stream rate.
  const core::SerialRate msg(static_cast<uint64_t>(fec_sizes(code).k) * kFecSymbolBits, lanes, lane_gbps);
  return msg.ps(1) + fec_decoder_ps;
}

double Link::line_gbps() const {
  FecCode code;
  if (!fec_code(code)) return lane_gbps;
  return lane_gbps * fec_sizes(code).n / fec_sizes(code).k;
}

Link::Link(const sc_core::sc_module_name& nm, const std::string& a_name, const std::string& b_name, const Phy* phy)
    : core::Module(nm, "c2c.link"),
      lanes(this, "lanes", 4, "lanes", "SerDes lanes per direction", 1, 64),
      lane_gbps(this, "lane_gbps", 25.0, "Gb/s", "signalling rate per lane (seed 000: 25, up to 30)", 0.001, 1000.0),
      packet_bytes(this, "packet_bytes", 328, "bytes",
                   "bytes on the wire per 320-B vector (seed 000 Fig 11: 328, 97.5% efficiency)", kVectorBytes, 4096),
      tx_pipeline_ps(this, "tx_pipeline_ps", 60000, "ps",
                     "transmit pipeline: framing, PCS/FEC encode, gearbox, SerDes TX", 0, 1000000000),
      propagation_ps(this, "propagation_ps", 4000, "ps", "cable propagation (0.75 m at ~5 ns/m)", 0, 1000000000),
      rx_pipeline_ps(this, "rx_pipeline_ps", 104600, "ps",
                     "receive pipeline besides FEC: CDR/deserializer, deframing, crossing into the core clock", 0,
                     1000000000),
      fec(this, "fec", "kp4", "", "RS-FEC code: kp4 = RS(544,514) t=15, kr4 = RS(528,514) t=7, none",
          {"kp4", "kr4", "none"}),
      fec_decoder_ps(this, "fec_decoder_ps", 20000, "ps",
                     "FEC decoder pipeline after the codeword is complete (syndromes, BM, Chien, Forney)", 0,
                     1000000000),
      ber(this, "ber", 0.0, "1/bit", "independent bit-error rate of this link (added to sys.phy.ber)", 0.0, 0.5),
      burst_rate(this, "burst_rate", 0.0, "1/bit", "error bursts starting per bit (added to sys.phy.burst_rate)", 0.0,
                 0.5),
      burst_length_mean(this, "burst_length_mean", 8.0, "bits",
                        "mean error-burst length on one lane when this link sets burst_rate", 1.0, 1000.0),
      marginal(this, "marginal", false, "",
               "persistent fault: the same errors recur on every replay (a transient fault does not)"),
      a_tx("a_tx"),
      b_tx("b_tx"),
      a_to_b(*this, kAtoB, 1, phy),
      b_to_a(*this, kBtoA, 2, phy),
      m_a(a_name),
      m_b(b_name) {
  a_tx.bind(a_to_b);
  b_tx.bind(b_to_a);
  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    m_pid = tr.process(name());
    tr.thread(m_pid, 1, m_a + " -> " + m_b);
    tr.thread(m_pid, 2, m_b + " -> " + m_a);
  }
}

}  // namespace fabricvp::c2c
