#include "models/tsp/tsp.h"

#include "models/tsp/vxm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

namespace fabricvp::tsp {

namespace {

/// SEND: vector i is read from SRAM at base + ser(i) and enters the link (as
/// a reference; the chip's write guard keeps the value if it changes in flight).
class SendCursor final : public Cursor {
 public:
  SendCursor(const Sram& sram, c2c::Channel& ch, Tsp::Sending& out, uint64_t base, uint64_t seq)
      : m_sram(sram), m_ch(ch), m_out(out), m_base(base) {
    key = OpKey{base, kRead, seq};
  }
  bool step() override {
    m_ch.push(m_sram.read(m_out.addr + m_out.read));
    if (++m_out.read == m_out.n) return false;
    key.t = m_base + m_ch.rate().ps(m_out.read);
    return true;
  }

 private:
  const Sram& m_sram;
  c2c::Channel& m_ch;
  Tsp::Sending& m_out;
  uint64_t m_base;
};

/// RECV: vector i is taken from the receive buffer at take + ser(i) and
/// written to SRAM at write + ser(i).
class RecvCursor final : public Cursor {
 public:
  RecvCursor(Tsp& chip, Sram& sram, c2c::Channel& ch, uint32_t addr, uint32_t n, uint64_t take, uint64_t write,
             uint64_t seq, uint64_t& last_write)
      : m_chip(chip), m_sram(sram), m_ch(ch), m_addr(addr), m_n(n), m_take(take), m_write(write), m_last(last_write) {
    key = OpKey{write, kWrite, seq};
  }
  bool step() override {
    if (m_ch.empty() || !m_ch.head_decoded()) {
      // Apply the source's operations up to this take: the vector, and the
      // rest of its FEC codeword, have been read there by then.
      m_ch.producer()->drain(m_take + m_ch.rate().ps(m_i));
      if (!m_ch.empty() && !m_ch.head_decoded()) m_ch.close_frame();
      if (m_ch.empty() || !m_ch.head_decoded()) {
        // The producer found a hardware error of its own while applying its
        // operations and stopped: the run is failing, leave the data path.
        if (core::Context::get().halted()) return true;
        throw std::logic_error("C2C channel " + m_ch.name() + " has no decoded data for a checked RECV");
      }
    }
    if (m_ch.head_flagged()) {  // the PHY lost this vector (uncorrectable FEC codeword)
      m_chip.machine_check(m_ch, m_addr + m_i, key.t);
      return true;
    }
    m_chip.before_write(m_addr + m_i);
    std::memcpy(m_sram.write(m_addr + m_i), m_ch.front(), kVectorBytes);
    m_ch.pop();
    m_last = key.t;
    if (++m_i == m_n) return false;
    key.t = m_write + m_ch.rate().ps(m_i);
    return true;
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  c2c::Channel& m_ch;
  uint32_t m_addr, m_n, m_i = 0;
  uint64_t m_take, m_write;
  uint64_t& m_last;
};

/// The pipeline of a vector unit (VXM ALU, MXM): step i reads its operands at
/// cycle c0 + i and writes its result `latency` cycles later; results in
/// flight wait in a ring of `slot_bytes` each. Derived supplies
/// read(i, slot) and write(i, slot) (called without a virtual call).
template <typename Derived>
class Pipelined : public Cursor {
 public:
  bool step() final {
    if (key.order == kRead) {
      self().read(m_r, slot(m_r));
      ++m_r;
    } else {
      self().write(m_w, slot(m_w));
      m_last = key.t;
      ++m_w;
    }
    if (m_w == m_n) return false;
    OpKey wk{m_clk.ps(m_c0 + m_w + m_lat), kWrite, key.seq};
    if (m_r < m_n) {
      OpKey rk{m_clk.ps(m_c0 + m_r), kRead, key.seq};
      key = rk < wk ? rk : wk;
    } else {
      key = wk;
    }
    return true;
  }

 protected:
  Pipelined(const clock::Oscillator& clk, uint32_t n, uint64_t c0, uint32_t latency, uint32_t slot_bytes, uint64_t seq,
            uint64_t& last_write)
      : m_clk(clk),
        m_n(n),
        m_c0(c0),
        m_lat(latency),
        m_slots(std::min<uint64_t>(n, latency + 1)),
        m_words(slot_bytes / 4),
        m_ring(new uint32_t[m_slots * m_words]),  // filled before read
        m_last(last_write) {
    key = OpKey{clk.ps(c0), kRead, seq};
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  uint8_t* slot(uint32_t i) { return reinterpret_cast<uint8_t*>(&m_ring[(i % m_slots) * m_words]); }
  const clock::Oscillator& m_clk;
  uint32_t m_n;
  uint64_t m_c0;
  uint32_t m_lat;
  uint64_t m_slots, m_words;
  std::unique_ptr<uint32_t[]> m_ring;  // words: slot sizes are whole words, and MXM results are words
  uint32_t m_r = 0, m_w = 0;
  uint64_t& m_last;
};

/// ADD (and COPY): vector i's operands are read at cycle c0 + i and the result is
/// written at cycle c0 + i + latency.
class AddCursor final : public Pipelined<AddCursor> {
 public:
  AddCursor(Tsp& chip, Sram& sram, const clock::Oscillator& clk, core::Dtype dt, uint32_t dst, uint32_t a, uint32_t b,
            uint32_t n, uint64_t c0, uint32_t latency, uint64_t seq, uint64_t& last_write)
      : Pipelined(clk, n, c0, latency, kVectorBytes, seq, last_write),
        m_chip(chip),
        m_sram(sram),
        m_dt(dt),
        m_dst(dst),
        m_a(a),
        m_b(b) {}
  void read(uint32_t i, uint8_t* out) const {
    if (m_dt == core::Dtype::none)
      std::memcpy(out, m_sram.read(m_a + i), kVectorBytes);  // COPY
    else
      core::add(m_dt, out, m_sram.read(m_a + i), m_sram.read(m_b + i), kVectorBytes);
  }
  void write(uint32_t i, const uint8_t* in) {
    m_chip.before_write(m_dst + i);
    std::memcpy(m_sram.write(m_dst + i), in, kVectorBytes);
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  core::Dtype m_dt;
  uint32_t m_dst, m_a, m_b;
};

/// LW: weight vector i is read from SRAM at cycle c0 + i / rate into the tile.
class LwCursor final : public Cursor {
 public:
  LwCursor(const Sram& sram, const clock::Oscillator& clk, WeightTile& tile, core::Dtype dt, uint32_t addr, uint32_t n,
           uint64_t c0, uint32_t rate, uint64_t seq)
      : m_sram(sram), m_clk(clk), m_tile(tile), m_dt(dt), m_addr(addr), m_n(n), m_c0(c0), m_rate(rate) {
    key = OpKey{clk.ps(c0), kRead, seq};
  }
  bool step() override {
    if (m_i == 0) m_tile.begin(m_dt, m_n);
    m_tile.load(m_i, m_sram.read(m_addr + m_i));
    if (++m_i == m_n) return false;
    key.t = m_clk.ps(m_c0 + m_i / m_rate);
    return true;
  }

 private:
  const Sram& m_sram;
  const clock::Oscillator& m_clk;
  WeightTile& m_tile;
  core::Dtype m_dt;
  uint32_t m_addr, m_n, m_i = 0;
  uint64_t m_c0;
  uint32_t m_rate;
};

/// MXM: sub-operation i reads its input vector (src + i * stride) at cycle
/// c0 + i and multiplies it by the tile; its 4 result vectors are written
/// (with ACC: added to the destination, read then) at cycle c0 + i + latency.
class MxmCursor final : public Pipelined<MxmCursor> {
 public:
  MxmCursor(Tsp& chip, Sram& sram, const clock::Oscillator& clk, const WeightTile& tile, uint32_t dst, uint32_t src,
            uint32_t stride, uint32_t n, bool acc, uint64_t c0, uint32_t latency, uint64_t seq, uint64_t& last_write)
      : Pipelined(clk, n, c0, latency, kMxmColumns * 4, seq, last_write),
        m_chip(chip),
        m_sram(sram),
        m_tile(tile),
        m_int(tile.dtype() == core::Dtype::int8),
        m_dst(dst),
        m_src(src),
        m_stride(stride),
        m_acc(acc) {}
  void read(uint32_t i, uint8_t* out) const {
    m_tile.multiply(m_sram.read(static_cast<uint32_t>(m_src + uint64_t(i) * m_stride)),
                    reinterpret_cast<uint32_t*>(out));
  }
  void write(uint32_t i, const uint8_t* in) {
    const uint32_t* r = reinterpret_cast<const uint32_t*>(in);
    for (uint32_t q = 0; q < kResultVectors; ++q) {
      const uint32_t v = m_dst + kResultVectors * i + q;
      m_chip.before_write(v);
      uint8_t* out = m_sram.write(v);
      const uint32_t* part = r + q * (kVectorBytes / 4);
      if (!m_acc) {
        std::memcpy(out, part, kVectorBytes);
        continue;
      }
      for (uint32_t e = 0; e < kVectorBytes / 4; ++e) {
        uint32_t d;
        std::memcpy(&d, out + 4 * e, 4);
        d = m_int ? d + part[e] : core::ieee::add_fp32(d, part[e]);
        std::memcpy(out + 4 * e, &d, 4);
      }
    }
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  const WeightTile& m_tile;
  bool m_int;
  uint32_t m_dst, m_src, m_stride;
  bool m_acc;
};

/// One step of a fly-by-capable VXM instruction (MUL, SUB, MAX: a op b;
/// RSQRT, EXP, SPLAT: of a) on one vector; out may not alias a or b.
void vxm_apply(const Instr& in, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  switch (in.op) {
    case Op::MUL:
    case Op::SUB: (in.op == Op::MUL ? core::mul : core::sub)(in.dtype, out, a, b, kVectorBytes); break;
    case Op::MAX:
      for (uint32_t e = 0; e < kVectorBytes / 4; ++e) {
        uint32_t x, y;
        std::memcpy(&x, a + 4 * e, 4);
        std::memcpy(&y, b + 4 * e, 4);
        x = max_fp32(x, y);
        std::memcpy(out + 4 * e, &x, 4);
      }
      break;
    case Op::RSQRT:
    case Op::EXP: {
      const bool rs = in.op == Op::RSQRT;
      for (uint32_t e = 0; e < kVectorBytes / 4; ++e) {
        uint32_t w;
        std::memcpy(&w, a + 4 * e, 4);
        w = rs ? rsqrt_fp32(w) : exp_fp32(w);
        std::memcpy(out + 4 * e, &w, 4);
      }
      break;
    }
    case Op::SPLAT: {
      const uint32_t es = core::dtype_bytes(in.dtype);
      const uint8_t* lane = a + in.imm * es;
      for (uint32_t e = 0; e < kVectorBytes / es; ++e) std::memcpy(out + e * es, lane, es);
      break;
    }
    default: break;
  }
}

/// A fly-by (docs/isa.md "Fly-by"): stages[0] reads its operand from SRAM,
/// each later stage takes the previous stage's result, every stage's second
/// operand (MUL, SUB, MAX) is read from SRAM; step i reads at cycle c0 + i and
/// the last stage's result is written at c0 + i + latency. Two buffers on the
/// cursor carry a vector between stages: nothing is allocated per step.
class FlyCursor final : public Pipelined<FlyCursor> {
 public:
  FlyCursor(Tsp& chip, Sram& sram, const clock::Oscillator& clk, std::vector<Instr> stages, uint64_t c0,
            uint32_t latency, uint64_t seq, uint64_t& last_write)
      : Pipelined(clk, stages.front().count, c0, latency, kVectorBytes, seq, last_write),
        m_chip(chip),
        m_sram(sram),
        m_stages(std::move(stages)) {}
  void read(uint32_t i, uint8_t* out) {
    const uint8_t* a = m_sram.read(m_stages.front().b + i);
    for (size_t k = 0; k < m_stages.size(); ++k) {
      const Instr& in = m_stages[k];
      uint8_t* to = k + 1 == m_stages.size() ? out : m_buf[k % 2];
      vxm_apply(in, a, vxm_two_operands(in.op) ? m_sram.read(in.c + vxm_b_index(in, i)) : nullptr, to);
      a = to;
    }
  }
  void write(uint32_t i, const uint8_t* in) {
    const uint32_t v = m_stages.back().a + i;
    m_chip.before_write(v);
    std::memcpy(m_sram.write(v), in, kVectorBytes);
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  std::vector<Instr> m_stages;
  uint8_t m_buf[2][kVectorBytes];
};

/// MUL, SUB, RSQRT, SPLAT, NARROW, WIDEN: step i reads its operands at
/// cycle c0 + i and writes its result (two vectors for WIDEN) at c0 + i + latency.
class VxmCursor final : public Pipelined<VxmCursor> {
 public:
  VxmCursor(Tsp& chip, Sram& sram, const clock::Oscillator& clk, const Instr& in, uint64_t c0, uint32_t latency,
            uint64_t seq, uint64_t& last_write)
      : Pipelined(clk, in.count, c0, latency, (in.op == Op::WIDEN ? 2 : 1) * kVectorBytes, seq, last_write),
        m_chip(chip),
        m_sram(sram),
        m_in(in),
        m_out(in.op == Op::WIDEN ? 2 : 1) {}
  void read(uint32_t i, uint8_t* out) const {
    switch (m_in.op) {
      case Op::MUL:
      case Op::SUB:
      case Op::MAX: vxm_apply(m_in, m_sram.read(m_in.b + i), m_sram.read(m_in.c + vxm_b_index(m_in, i)), out); break;
      case Op::RSQRT:
      case Op::EXP:
      case Op::SPLAT: vxm_apply(m_in, m_sram.read(m_in.b + i), nullptr, out); break;
      case Op::NARROW: narrow(m_in.dtype, m_sram.read(m_in.b + 2 * i), m_sram.read(m_in.b + 2 * i + 1), out); break;
      case Op::WIDEN: widen(m_in.dtype, m_sram.read(m_in.b + i), out, out + kVectorBytes); break;
      default: break;
    }
  }
  void write(uint32_t i, const uint8_t* in) {
    for (uint32_t k = 0; k < m_out; ++k) {
      const uint32_t v = m_in.a + m_out * i + k;
      m_chip.before_write(v);
      std::memcpy(m_sram.write(v), in + k * kVectorBytes, kVectorBytes);
    }
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  Instr m_in;
  uint32_t m_out;
};

/// TRANSPOSE (the SXM): source vector k (b + k * stride) is read at cycle
/// c0 + k / rate and its element `lane` becomes element k of one result
/// vector (elements n and up are zero), written at cycle
/// c0 + (n - 1) / rate + latency. The result is built in place: nothing is
/// allocated per step.
class TransposeCursor final : public Cursor {
 public:
  TransposeCursor(Tsp& chip, Sram& sram, const clock::Oscillator& clk, const Instr& in, uint64_t c0, uint32_t rate,
                  uint32_t latency, uint64_t seq, uint64_t& last_write)
      : m_chip(chip),
        m_sram(sram),
        m_clk(clk),
        m_dst(in.a),
        m_src(in.b),
        m_stride(in.c),
        m_n(in.count),
        m_es(core::dtype_bytes(in.dtype)),
        m_lane(static_cast<uint32_t>(in.imm)),
        m_c0(c0),
        m_rate(rate),
        m_lat(latency),
        m_last(last_write) {
    std::memset(m_out, 0, sizeof m_out);
    key = OpKey{clk.ps(c0), kRead, seq};
  }
  bool step() override {
    if (key.order == kRead) {
      const uint8_t* v = m_sram.read(static_cast<uint32_t>(m_src + uint64_t(m_k) * m_stride));
      std::memcpy(m_out + m_k * m_es, v + m_lane * m_es, m_es);
      if (++m_k < m_n)
        key.t = m_clk.ps(m_c0 + m_k / m_rate);
      else
        key = OpKey{m_clk.ps(m_c0 + (m_n - 1) / m_rate + m_lat), kWrite, key.seq};
      return true;
    }
    m_chip.before_write(m_dst);
    std::memcpy(m_sram.write(m_dst), m_out, kVectorBytes);
    m_last = key.t;
    return false;
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  const clock::Oscillator& m_clk;
  uint32_t m_dst, m_src, m_stride, m_n, m_es, m_lane, m_k = 0;
  uint64_t m_c0;
  uint32_t m_rate, m_lat;
  uint64_t& m_last;
  uint8_t m_out[kVectorBytes];
};

/// Timing only: an operation's last SRAM write at time t, without its data.
class LastWriteCursor final : public Cursor {
 public:
  LastWriteCursor(uint64_t t, uint64_t seq, uint64_t& last_write) : m_last(last_write) { key = OpKey{t, kWrite, seq}; }
  bool step() override {
    m_last = key.t;
    return false;
  }

 private:
  uint64_t& m_last;
};

/// HOSTW: vector i is read from SRAM as the link serializes it (start +
/// ser(i)); the whole write reaches the host when its last vector lands
/// (start + ser(n) + latency).
class HostWriteCursor final : public Cursor {
 public:
  HostWriteCursor(Tsp& chip, const Sram& sram, const core::SerialChannel& link, uint32_t src, uint32_t n,
                  uint64_t host_vec, uint64_t start, uint64_t seq, uint64_t& last_write)
      : m_chip(chip),
        m_sram(sram),
        m_link(link),
        m_src(src),
        m_n(n),
        m_host(host_vec),
        m_start(start),
        m_data(uint64_t(n) * kVectorBytes),
        m_last(last_write) {
    key = OpKey{start, kRead, seq};
  }
  bool step() override {
    if (m_i < m_n) {  // read vector m_i
      std::memcpy(&m_data[uint64_t(m_i) * kVectorBytes], m_sram.read(m_src + m_i), kVectorBytes);
      if (++m_i < m_n) {
        key.t = m_start + m_link.rate().ps(m_i);
      } else {
        key = OpKey{m_start + m_link.rate().ps(m_n) + m_link.latency_ps(), kWrite, key.seq};
      }
      return true;
    }
    m_chip.deliver_to_host(m_host, m_data.data(), m_data.size(), key.t);
    m_last = key.t;
    return false;
  }

 private:
  Tsp& m_chip;
  const Sram& m_sram;
  const core::SerialChannel& m_link;
  uint32_t m_src, m_n, m_i = 0;
  uint64_t m_host, m_start;
  std::vector<uint8_t> m_data;
  uint64_t& m_last;
};

/// Host DMA over PCIe: vector i written to SRAM at start + ser(i + 1) + latency.
class DmaCursor final : public Cursor {
 public:
  DmaCursor(Tsp& chip, Sram& sram, const core::SerialChannel& link, uint32_t addr, std::vector<uint8_t> data,
            uint64_t start, uint64_t seq, uint64_t& last_write)
      : m_chip(chip),
        m_sram(sram),
        m_link(link),
        m_addr(addr),
        m_n(static_cast<uint32_t>(data.size() / kVectorBytes)),
        m_data(std::move(data)),
        m_start(start),
        m_last(last_write) {
    key = OpKey{at(0), kWrite, seq};
  }
  bool step() override {
    m_chip.before_write(m_addr + m_i);
    std::memcpy(m_sram.write(m_addr + m_i), &m_data[uint64_t(m_i) * kVectorBytes], kVectorBytes);
    m_last = key.t;
    if (++m_i == m_n) return false;
    key.t = at(m_i);
    return true;
  }

 private:
  uint64_t at(uint32_t i) const { return m_start + m_link.rate().ps(i + 1) + m_link.latency_ps(); }
  Tsp& m_chip;
  Sram& m_sram;
  const core::SerialChannel& m_link;
  uint32_t m_addr, m_n, m_i = 0;
  std::vector<uint8_t> m_data;
  uint64_t m_start;
  uint64_t& m_last;
};

/// RDHAC: one vector of counter values written to SRAM at a known time.
class WordsCursor final : public Cursor {
 public:
  WordsCursor(Tsp& chip, Sram& sram, uint32_t addr, const int32_t* words, uint32_t n, uint64_t t, uint64_t seq,
              uint64_t& last_write)
      : m_chip(chip), m_sram(sram), m_addr(addr), m_last(last_write) {
    std::memset(m_data, 0, sizeof m_data);
    std::memcpy(m_data, words, n * sizeof(int32_t));
    key = OpKey{t, kWrite, seq};
  }
  bool step() override {
    m_chip.before_write(m_addr);
    std::memcpy(m_sram.write(m_addr), m_data, kVectorBytes);
    m_last = key.t;
    return false;
  }

 private:
  Tsp& m_chip;
  Sram& m_sram;
  uint32_t m_addr;
  uint8_t m_data[kVectorBytes];
  uint64_t& m_last;
};

sc_core::sc_time ps_time(uint64_t ps) { return sc_core::sc_time::from_value(ps); }
uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }

}  // namespace

Tsp::Tsp(const sc_core::sc_module_name& nm)
    : core::Module(nm, "tsp"),
      clock_mhz(this, "clock_mhz", 900.0, "MHz", "nominal core clock (seed 000 §5.2: 900 MHz)", 1.0, 10000.0),
      clock_ppm(this, "clock_ppm", 0.0, "ppm",
                "fixed frequency offset of this chip's oscillator from clock_mhz (added to the drawn offset)", -10000.0,
                10000.0),
      clock_ppm_spread(this, "clock_ppm_spread", 0.0, "ppm",
                       "random frequency offset drawn per chip from the run seed: half-width (uniform) or sigma "
                       "(normal, truncated at 3 sigma); docs/clocks.md",
                       0.0, 10000.0),
      clock_ppm_distribution(this, "clock_ppm_distribution", "uniform", "",
                             "distribution of the drawn offset: uniform in +-spread or normal with sigma = spread",
                             {"uniform", "normal"}),
      clock_jitter_ps(this, "clock_jitter_ps", 0.0, "ps",
                      "rms time interval error of each clock edge (bounded at 3.46 rms; never reorders edges)", 0.0,
                      1000.0),
      poll_timeout_epochs(this, "poll_timeout_epochs", 100000, "epochs",
                          "POLL: hardware error if no notification arrives within this many HAC epochs (the "
                          "hardware loop would spin forever)",
                          1, 1u << 30),
      send_latency(this, "send_latency", 205, "cycles",
                   "SEND issue to first packet at the serializer: SRAM read, stream transport to the C2C slice, "
                   "clock crossing",
                   1, 100000),
      recv_latency(this, "recv_latency", 205, "cycles",
                   "vector taken from the receive buffer to written in SRAM (readable)", 1, 100000),
      add_latency(this, "add_latency", 16, "cycles", "ADD: operand read to result written in SRAM", 1, 100000),
      fly_latency(this, "fly_latency", 4, "cycles",
                  "VXM fly-by: what each chained instruction adds to add_latency (one ALU's result to the next ALU)", 1,
                  100000),
      mxm_planes(this, "mxm_planes", 4, "planes",
                 "MXM planes: one int8 sub-operation per plane per cycle, fp16 units are pairs of planes", 2, 64),
      mxm_latency(this, "mxm_latency", 64, "cycles",
                  "MXM: input vector read to its 4 result vectors written in SRAM (docs/isa.md)", 1, 100000),
      lw_vectors_per_cycle(this, "lw_vectors_per_cycle", 16, "vectors",
                           "LW: weight vectors streamed into a plane per cycle", 1, 320),
      lw_latency(this, "lw_latency", 24, "cycles", "LW: last weight vector read to the weights usable by an MXM", 0,
                 100000),
      sxm_units(this, "sxm_units", 2, "units", "SXM transpose units, one per hemisphere", 1, 64),
      sxm_vectors_per_cycle(this, "sxm_vectors_per_cycle", 16, "vectors",
                            "TRANSPOSE: source vectors read per cycle (the 16 stream inputs of a superlane group)", 1,
                            320),
      sxm_latency(this, "sxm_latency", 16, "cycles",
                  "TRANSPOSE: last source vector read to the result vector written in SRAM", 1, 100000),
      notify_latency(this, "notify_latency", 4, "cycles", "NOTIFY issue to restart of the SYNC'ed queues", 1, 100000),
      queues(this, "queues", 40, "queues", "instruction queues (ICUs) with independent streams", 1, 4096),
      vxm_alus(this, "vxm_alus", 4, "ALUs", "vector ALUs that can run ADD bursts concurrently", 1, 64),
      rx_buffer_vectors(this, "rx_buffer_vectors", 16, "vectors", "receive buffer per C2C port", 1, 1 << 20),
      tx_buffer_vectors(this, "tx_buffer_vectors", 16, "vectors",
                        "transmit buffer per C2C port: a SEND may start at most this many packets before the "
                        "serializer is free",
                        0, 1 << 20),
      local_ports(this, "local_ports", 7, "ports", "C2C ports for links inside a node", 0, 64),
      global_ports(this, "global_ports", 4, "ports", "C2C ports for links between nodes", 0, 64),
      imem_instructions(this, "imem_instructions", 65536, "instructions", "instruction memory per queue", 1,
                        static_cast<uint32_t>(kImemStride / kInstrBytes)),
      drain_interval_ns(this, "drain_interval_ns", 2000, "ns",
                        "host-side: how often a busy chip applies its pending data operations (bounds host memory; "
                        "never changes results or timing)",
                        1, 1000000000),
      pcie_gts(this, "pcie_gts", 16.0, "GT/s", "PCIe host link: transfer rate per lane (Gen4: 16)", 2.5, 64.0),
      pcie_lanes(this, "pcie_lanes", 16, "lanes", "PCIe host link: lanes (x16)", 1, 32),
      pcie_max_payload(this, "pcie_max_payload", 256, "bytes",
                       "PCIe: largest TLP payload (a vector is ceil(320 / it) TLPs)", 64, 4096),
      pcie_tlp_overhead(this, "pcie_tlp_overhead", 24, "bytes",
                        "PCIe: per TLP, framing (4), sequence number and LCRC (6), 4-DW header (16), less 2 for the "
                        "Gen3+ framing token's share (docs/isa.md)",
                        0, 256),
      pcie_latency_ns(this, "pcie_latency_ns", 1000, "ns",
                      "PCIe: end of a packet's serialization to its vector readable in SRAM (root complex, link, "
                      "the chip's host interface)",
                      0, 1000000),
      ctrl("ctrl"),
      host_out("host_out"),
      m_nominal(clock_mhz),
      m_clock(make_oscillator(*this)),
      instructions(this, nullptr, "instructions", "instructions", "instructions issued by all queues"),
      sends(this, nullptr, "sends", "instructions", "SEND instructions"),
      recvs(this, nullptr, "recvs", "instructions", "RECV instructions"),
      adds(this, nullptr, "adds", "instructions", "ADD instructions"),
      copies(this, nullptr, "copies", "instructions", "COPY instructions"),
      nops(this, nullptr, "nops", "instructions", "NOP instructions"),
      waits(this, nullptr, "waits", "instructions", "WAIT instructions"),
      loops(this, nullptr, "loops", "instructions", "LOOP instructions (one per iteration of a looped queue)"),
      syncs(this, nullptr, "syncs", "instructions", "SYNC instructions"),
      notifies(this, nullptr, "notifies", "instructions", "NOTIFY instructions"),
      deskews(this, nullptr, "deskews", "instructions", "DESKEW instructions"),
      transmits(this, nullptr, "transmits", "instructions", "TRANSMIT instructions"),
      runtime_deskews(this, nullptr, "runtime_deskews", "instructions", "RUNTIME_DESKEW instructions"),
      polls(this, nullptr, "polls", "epochs", "epoch boundaries at which a POLL tested its port"),
      rdhacs(this, nullptr, "rdhacs", "instructions", "RDHAC instructions"),
      deskew_stall_cycles(this, nullptr, "deskew_stall_cycles", "cycles",
                          "cycles queues waited in DESKEW, POLL and RUNTIME_DESKEW"),
      vectors_sent(this, nullptr, "vectors_sent", "vectors", "vectors sent on all ports"),
      vectors_received(this, nullptr, "vectors_received", "vectors", "vectors requested by RECV on all ports"),
      vectors_added(this, nullptr, "vectors_added", "vectors", "vector additions by the VXM"),
      alu_busy_cycles(this, nullptr, "alu_busy_cycles", "cycles", "ALU-cycles spent on ADD (sum over ALUs)"),
      data_ops(this, nullptr, "data_ops", "operations", "per-vector SRAM operations applied by the timeline"),
      vxm_ops(this, nullptr, "vxm_ops", "instructions",
              "MUL, SUB, MAX, RSQRT, EXP, SPLAT, NARROW and WIDEN instructions"),
      vxm_chained(this, nullptr, "vxm_chained", "instructions",
                  "VXM instructions that took their operand from the previous one in a fly-by (docs/isa.md)"),
      weight_loads(this, nullptr, "weight_loads", "instructions", "LW instructions (weight tiles loaded)"),
      weight_vectors(this, nullptr, "weight_vectors", "vectors", "weight vectors loaded by LW"),
      mxm_ops(this, nullptr, "mxm_ops", "instructions", "MXM instructions"),
      mxm_subops(this, nullptr, "mxm_subops", "sub-operations", "[1 x K] x [K x 320] sub-operations"),
      mxm_plane_cycles(this, nullptr, "mxm_plane_cycles", "cycles",
                       "plane-cycles spent streaming MXM sub-operations (sum over planes)"),
      sxm_ops(this, nullptr, "sxm_ops", "instructions", "TRANSPOSE instructions (SXM)"),
      sxm_vectors(this, nullptr, "sxm_vectors", "vectors", "source vectors read by TRANSPOSE"),
      sram_pages(this, nullptr, "sram_pages", "pages", "20-KiB SRAM pages written (sparse storage)"),
      sram_bytes(this, nullptr, "sram_host_bytes", "bytes", "host memory used by this chip's SRAM model"),
      last_write(this, "last_write_ps", "ps", "time of the last SRAM write by RECV or ADD",
                 [this] { return m_last_write; }) {
  uint32_t nports = local_ports + global_ports;
  m_ports.reserve(nports);
  for (uint32_t p = 0; p < nports; ++p)
    m_ports.push_back(std::make_unique<Port>(fmt::format("c2c{}", p).c_str(), *this, p));
  m_imem.resize(queues);
  m_alu_free.assign(vxm_alus, 0);
  m_sxm_free.assign(sxm_units, 0);
  m_planes.resize(mxm_planes);
  m_tiles.resize(2 * mxm_planes);
  ctrl.register_transport_dbg(this, &Tsp::ctrl_dbg);
  ctrl.register_b_transport(this, &Tsp::ctrl_b);
  {
    // 128b/130b encoding from Gen3 on (8b/10b below); one packet = one vector's TLPs.
    const double gts = pcie_gts, lane_gbps = gts >= 8.0 ? gts * 128.0 / 130.0 : gts * 0.8;
    static const core::SerialChannel::Names names{
        {"pcie_transfers", "transfers", "host DMA writes over PCIe"},
        {"pcie_vectors", "vectors", "vectors the host wrote over PCIe"},
        {"pcie_payload_bytes", "bytes", "bytes the host wrote over PCIe"},
        {"pcie_busy_ps", "ps", "time the PCIe link serialized host writes"},
        {"pcie_utilization", "%", "busy share of the host-to-chip PCIe direction"}};
    const core::SerialRate rate(uint64_t(pcie_vector_bytes()) * 8, pcie_lanes, lane_gbps);  // both directions
    m_pcie = std::make_unique<core::SerialChannel>(this, names, rate, pcie_latency_ns * 1000);
    static const core::SerialChannel::Names out_names{
        {"pcie_out_transfers", "transfers", "HOSTW writes to the host over PCIe"},
        {"pcie_out_vectors", "vectors", "vectors written to the host over PCIe"},
        {"pcie_out_payload_bytes", "bytes", "bytes written to the host over PCIe"},
        {"pcie_out_busy_ps", "ps", "time the PCIe link serialized chip-to-host writes"},
        {"pcie_out_utilization", "%", "busy share of the chip-to-host PCIe direction"}};
    m_pcie_out = std::make_unique<core::SerialChannel>(this, out_names, rate, pcie_latency_ns * 1000);
  }

  SC_METHOD(sequencer);
  sensitive << m_start;
  dont_initialize();
  SC_METHOD(ticker);
  sensitive << m_kick;
  dont_initialize();

  auto& tr = core::Context::get().trace();
  if (tr.enabled()) {
    m_pid = tr.process(name());
    for (uint32_t p = 0; p < nports; ++p) tr.thread(m_pid, 100 + p, fmt::format("c2c{} rx", p));
  }
}

Tsp::~Tsp() { core::destroy_newest_first(m_ports); }

clock::Oscillator Tsp::make_oscillator(const Tsp& t) {
  double ppm = t.clock_ppm;
  const double spread = t.clock_ppm_spread;
  if (spread > 0) {
    std::mt19937_64 rng(t.seed_for("oscillator"));
    if (t.clock_ppm_distribution.get() == "normal") {
      std::normal_distribution<double> n(0.0, spread);
      double x;
      do x = n(rng);
      while (std::fabs(x) > 3 * spread);
      ppm += x;
    } else {
      ppm += std::uniform_real_distribution<double>(-spread, spread)(rng);
    }
  }
  try {
    return clock::Oscillator(t.clock_mhz, ppm, t.clock_jitter_ps, t.seed_for("jitter"));
  } catch (const std::invalid_argument& e) {
    throw core::ConfigError(fmt::format("{}: {}", t.name(), e.what()));
  }
}

void Tsp::log_sync(Op op, uint32_t q, uint32_t port, uint64_t issue, uint64_t cycle, int64_t value) {
  if (m_sync_log.size() < 4096) m_sync_log.push_back(SyncEvent{op, q, port, issue, cycle, value});
}

void Tsp::notification(uint32_t port, uint64_t cycle) {
  // Kept in sample-cycle order; notifications are rare (initial alignment).
  auto it = m_notified.end();
  while (it != m_notified.begin() && (it - 1)->second > cycle) --it;
  m_notified.insert(it, {port, cycle});
}

unsigned int Tsp::ctrl_dbg(tlm::tlm_generic_payload& gp) {
  bool ok = false;
  ctrl_dbg_access(gp, ok);
  gp.set_response_status(ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  return ok ? gp.get_data_length() : 0;
}

uint32_t Tsp::pcie_vector_bytes() const {
  const uint32_t tlps = (kVectorBytes + pcie_max_payload - 1) / pcie_max_payload;
  return kVectorBytes + tlps * pcie_tlp_overhead;
}

uint64_t Tsp::InFlight::lands(const Tsp& t, uint64_t v) const {
  if (dma) return start + t.m_pcie->rate().ps(v - dst + 1) + t.m_pcie->latency_ps();
  return t.m_clock.ps(c0 + (v - dst) / per + lat);
}

void Tsp::ctrl_b(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const uint64_t addr = gp.get_address(), len = gp.get_data_length();
  if (gp.get_command() != tlm::TLM_WRITE_COMMAND || gp.get_byte_enable_ptr() || !gp.get_data_ptr() ||
      gp.get_streaming_width() < gp.get_data_length()) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  if (addr % kVectorBytes || len == 0 || len % kVectorBytes || addr >= kSramBytes || len > kSramBytes - addr) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);  // whole vectors of SRAM only
    return;
  }
  const uint64_t n = len / kVectorBytes, tlps = (kVectorBytes + pcie_max_payload - 1) / pcie_max_payload;
  const uint64_t ready = now_ps() + delay.value();
  const uint64_t start = m_pcie->serialize(ready, n, len, n * tlps);
  const uint32_t v0 = static_cast<uint32_t>(addr / kVectorBytes);
  in_flight(InFlight{v0, static_cast<uint32_t>(n), 0, 0, start, true, 1, "host"});
  const uint8_t* d = gp.get_data_ptr();
  const uint64_t last = start + m_pcie->rate().ps(n) + m_pcie->latency_ps();
  if (m_timing_only)
    m_timeline.add(std::make_unique<LastWriteCursor>(last, m_timeline.next_seq(), m_last_write));
  else
    m_timeline.add(std::make_unique<DmaCursor>(*this, m_sram, *m_pcie, v0, std::vector<uint8_t>(d, d + len), start,
                                               m_timeline.next_seq(), m_last_write));
  extend(last);
  delay = ps_time(last - now_ps());
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

void Tsp::ctrl_dbg_access(tlm::tlm_generic_payload& gp, bool& ok) {
  uint64_t addr = gp.get_address();
  uint64_t len = gp.get_data_length();
  uint8_t* data = gp.get_data_ptr();
  bool write = gp.is_write();
  if (addr < kSramBytes) {
    if (len > kSramBytes - addr) return;
    if (write)
      m_sram.write_bytes(addr, data, len);
    else
      m_sram.read_bytes(addr, data, len);
    ok = true;
    return;
  }
  if (addr < kImemBase) return;
  uint64_t q = (addr - kImemBase) / kImemStride;
  uint64_t off = (addr - kImemBase) % kImemStride;
  uint64_t limit = static_cast<uint64_t>(imem_instructions) * kInstrBytes;
  if (q >= m_imem.size() || off > limit || len > limit - off) return;
  std::vector<uint8_t>& mem = m_imem[q];
  if (write) {
    if (mem.size() < off + len) mem.resize(off + len, 0);
    std::memcpy(mem.data() + off, data, len);
  } else {
    for (uint64_t i = 0; i < len; ++i) data[i] = off + i < mem.size() ? mem[off + i] : 0;
  }
  ok = true;
}

void Tsp::program_error(uint32_t q, size_t pc, const Instr& in, const std::string& msg) const {
  std::string where = in.line ? fmt::format(" (source line {})", in.line) : std::string();
  throw core::ConfigError(
      fmt::format("{}: queue {} instruction {}{}: {} {}", name(), q, pc, where, op_name(in.op), msg));
}

void Tsp::load_queues() {
  m_queues.assign(m_imem.size(), Queue{});
  for (uint32_t q = 0; q < m_imem.size(); ++q) {
    const std::vector<uint8_t>& mem = m_imem[q];
    Queue& queue = m_queues[q];
    uint32_t chain = 0;  // instructions of the fly-by so far
    for (size_t off = 0; off + kInstrBytes <= mem.size(); off += kInstrBytes) {
      Instr in = Instr::decode(&mem[off]);
      size_t pc = off / kInstrBytes;
      if (in.op == Op::END) break;
      if (!queue.prog.empty() && queue.prog.back().op == Op::LOOP)
        program_error(q, pc - 1, queue.prog.back(),
                      in.op == Op::LOOP
                          ? fmt::format("is followed by another LOOP (instruction {}): a queue has at most one LOOP, "
                                        "its last instruction",
                                        pc)
                          : fmt::format("must be the last instruction of its queue, but instruction {} ({}) follows it",
                                        pc, op_name(in.op)));
      auto range = [&](uint32_t addr, const char* what) {
        if (static_cast<uint64_t>(addr) + in.count > kVectors)
          program_error(q, pc, in,
                        fmt::format("{} {} + {} vectors is past the end of SRAM ({} vectors)", what,
                                    VecAddr::from_linear(addr).str(), in.count, kVectors));
      };
      switch (in.op) {
        case Op::NOP:
          if (in.imm == 0) program_error(q, pc, in, "needs at least 1 cycle");
          break;
        case Op::WAIT:
        case Op::SYNC:
        case Op::NOTIFY:
        case Op::DESKEW:
        case Op::RUNTIME_DESKEW: break;
        case Op::TRANSMIT:
        case Op::POLL:
          if (in.port >= m_ports.size())
            program_error(q, pc, in, fmt::format("port {} does not exist (chip has {})", in.port, m_ports.size()));
          if (!m_ports[in.port]->connected()) program_error(q, pc, in, fmt::format("port {} has no link", in.port));
          if (!m_hac_link) program_error(q, pc, in, "needs the HAC network (sys.hac), which this chip is not part of");
          break;
        case Op::RDHAC:
          if (static_cast<uint64_t>(in.a) >= kVectors) program_error(q, pc, in, "address is past the end of SRAM");
          break;
        case Op::SEND:
        case Op::RECV:
          if (in.port >= m_ports.size())
            program_error(q, pc, in, fmt::format("port {} does not exist (chip has {})", in.port, m_ports.size()));
          if (!m_ports[in.port]->connected()) program_error(q, pc, in, fmt::format("port {} has no link", in.port));
          if (in.count == 0) program_error(q, pc, in, "count must be at least 1");
          range(in.a, "address");
          break;
        case Op::LW:
        case Op::MXM: {
          if (tsp::mxm_k(in.dtype) == 0) program_error(q, pc, in, "takes fp16 or int8 (the MXM's input types)");
          uint32_t first = 0, planes = 0;
          if (!unit_planes(in.dtype, in.port, first, planes))
            program_error(q, pc, in,
                          fmt::format("MXM unit {} does not exist: the chip has {} {} units", in.port,
                                      in.dtype == core::Dtype::fp16 ? mxm_planes / 2 : mxm_planes.get(),
                                      core::dtype_name(in.dtype)));
          if (in.c > 1) program_error(q, pc, in, fmt::format("weight buffer {} does not exist (w0, w1)", in.c));
          if (in.count == 0) program_error(q, pc, in, "count must be at least 1");
          if (in.op == Op::LW) {
            if (in.count > kTileVectors)
              program_error(q, pc, in, fmt::format("loads at most {} vectors (one tile)", kTileVectors));
            range(in.a, "tile");
          } else {
            if (in.imm & 0xfffffffeULL)
              program_error(q, pc, in, "immediate bits 1-31 must be 0 (bit 0: ACC, bits 32-63: input stride)");
            if (mxm_stride(in) == 1)
              range(in.b, "inputs");
            else if (mxm_input(in, in.count - 1) >= kVectors)
              program_error(q, pc, in,
                            fmt::format("inputs {} + {} vectors {} apart run past the end of SRAM ({} vectors)",
                                        VecAddr::from_linear(in.b).str(), in.count, mxm_stride(in), kVectors));
            if (static_cast<uint64_t>(in.a) + uint64_t(in.count) * kResultVectors > kVectors)
              program_error(q, pc, in,
                            fmt::format("results {} + {} vectors run past the end of SRAM",
                                        VecAddr::from_linear(in.a).str(), uint64_t(in.count) * kResultVectors));
          }
          break;
        }
        case Op::ADD:
          if (!core::is_reduction_dtype(in.dtype))
            program_error(q, pc, in, "has no valid data type (fp32, bf16, fp16, int32)");
          if (in.count == 0) program_error(q, pc, in, "count must be at least 1");
          range(in.a, "destination");
          range(in.b, "source");
          range(in.c, "source");
          break;
        case Op::COPY:
          if (in.count == 0) program_error(q, pc, in, "count must be at least 1");
          range(in.a, "destination");
          range(in.b, "source");
          break;
        case Op::MUL:
        case Op::SUB:
        case Op::MAX:
        case Op::RSQRT:
        case Op::EXP:
        case Op::SPLAT:
        case Op::NARROW:
        case Op::WIDEN: {
          const bool half = in.dtype == core::Dtype::fp16 || in.dtype == core::Dtype::bf16;
          if (!core::is_reduction_dtype(in.dtype) ||
              ((in.op == Op::RSQRT || in.op == Op::EXP || in.op == Op::MAX) && in.dtype != core::Dtype::fp32) ||
              ((in.op == Op::NARROW || in.op == Op::WIDEN) && !half))
            program_error(q, pc, in, "has no valid data type for this operation");
          if (in.count == 0) program_error(q, pc, in, "count must be at least 1");
          if (in.op == Op::SPLAT && in.imm >= kVectorBytes / core::dtype_bytes(in.dtype))
            program_error(q, pc, in, fmt::format("lane {} does not exist", in.imm));
          const bool two = vxm_two_operands(in.op);
          if (two && vxm_bcast(in) && vxm_spread(in))
            program_error(q, pc, in,
                          fmt::format("has both BCAST {} and SPREAD {} (the immediate's low and high words): at "
                                      "most one may be set",
                                      vxm_bcast(in), vxm_spread(in)));
          const uint64_t reads = in.op == Op::NARROW ? 2ULL * in.count : in.count;
          const uint64_t writes = in.op == Op::WIDEN ? 2ULL * in.count : in.count;
          if (in.a + writes > kVectors || in.b + reads > kVectors ||
              (two && in.c + uint64_t(vxm_b_vectors(in)) > kVectors))
            program_error(q, pc, in, "runs past the end of SRAM");
          break;
        }
        case Op::HOSTW:
          if (in.count == 0) program_error(q, pc, in, "writes no vectors");
          if (in.a + uint64_t(in.count) > kVectors) program_error(q, pc, in, "runs past the end of SRAM");
          if (in.imm > (uint64_t(1) << 40)) program_error(q, pc, in, "host address past 2^40 vectors");
          break;
        case Op::LOOP:
          if (in.count == 0) program_error(q, pc, in, "repeats 0 iterations: n must be at least 1");
          if (in.imm == 0) program_error(q, pc, in, "period must be at least 1 cycle");
          if (in.imm > kMaxLoopSpan / in.count)
            program_error(q, pc, in,
                          fmt::format("{} iterations of {} cycles span more than 2^40 cycles", in.count, in.imm));
          if (in.a > kMaxLoopSpan / in.count)
            program_error(
                q, pc, in,
                fmt::format("{} iterations with host-vector stride {} move host vectors past 2^40", in.count, in.a));
          break;
        case Op::TRANSPOSE: {
          const uint32_t es = core::dtype_bytes(in.dtype);
          if (es == 0) program_error(q, pc, in, "has no valid data type (one with an element size)");
          const uint32_t lanes = kVectorBytes / es;
          if (in.count == 0 || in.count > lanes)
            program_error(q, pc, in,
                          fmt::format("of {} vectors: n must be in [1, {}] (the lanes of a {} vector)", in.count, lanes,
                                      core::dtype_name(in.dtype)));
          if (in.imm >= lanes) program_error(q, pc, in, fmt::format("lane {} does not exist", in.imm));
          if (in.c == 0) program_error(q, pc, in, "stride must be at least 1");
          if (in.a >= kVectors || in.b + uint64_t(in.count - 1) * in.c >= kVectors)
            program_error(q, pc, in, "runs past the end of SRAM");
          break;
        }
        default: program_error(q, pc, in, fmt::format("unknown opcode {}", static_cast<int>(in.op)));
      }
      const std::string fly = fly_error(queue.prog.empty() ? nullptr : &queue.prog.back(), in);
      if (!fly.empty()) program_error(q, pc, in, fly);
      chain = fly_in(in) ? chain + 1 : 1;
      if (chain > vxm_alus)
        program_error(q, pc, in,
                      fmt::format("makes a fly-by of {} instructions; it needs one vector ALU each and the chip has "
                                  "{} (vxm_alus)",
                                  chain, vxm_alus.get()));
      queue.prog.push_back(in);
    }
    if (const std::string e = fly_end_error(queue.prog.empty() ? nullptr : &queue.prog.back()); !e.empty())
      program_error(q, queue.prog.size() - 1, queue.prog.back(), e);
    queue.st = queue.prog.empty() ? QState::done : QState::run;
    // The decoded stream is what executes; the encoded image is not kept twice.
    std::vector<uint8_t>().swap(m_imem[q]);
    if (!queue.prog.empty() && core::Context::get().trace().enabled())
      core::Context::get().trace().thread(m_pid, q, fmt::format("queue {}", q));
  }
}

void Tsp::load() {
  const bool fresh =
      std::any_of(m_imem.begin(), m_imem.end(), [](const std::vector<uint8_t>& m) { return !m.empty(); });
  if (fresh || m_queues.empty()) load_queues();
}

void Tsp::start(bool at_epoch) {
  if (m_active) throw std::logic_error(fmt::format("{}: started again while its program is still running", name()));
  load();
  for (Queue& q : m_queues) {  // from its first instruction (again, for the host runtime's next run)
    q.pc = 0;
    q.sync_cycle = q.polls = 0;
    q.iter = 0;  // LOOP: iteration 0, no offsets
    q.wait_offset = q.host_offset = 0;
    q.st = q.prog.empty() ? QState::done : QState::run;
  }
  m_notifies.clear();  // nothing of a previous run releases this one
  m_notified.clear();
  // Queues start at the chip's current cycle (cycle 0 when started at time 0);
  // a launch by the host runtime starts at the next epoch boundary, and
  // program time with it (WAITs count from the launch).
  uint64_t now_cycle = m_clock.cycle_at_or_after(now_ps());
  if (at_epoch && now_cycle > 0) now_cycle = m_hac.next_boundary(now_cycle - 1);
  for (Queue& q : m_queues) q.next = now_cycle;
  if (at_epoch) m_shift = static_cast<int64_t>(now_cycle);
  m_program_start_ps = m_clock.ps(now_cycle);
  m_start.notify(ps_time(m_clock.ps(now_cycle) - now_ps()));
  const bool any = std::any_of(m_queues.begin(), m_queues.end(), [](const Queue& q) { return q.st != QState::done; });
  if (any && !m_active) {
    m_active = true;
    if (m_hac_link) m_hac_link->activity(*this, +1);
  }
}

void Tsp::extend(uint64_t end_ps) {
  m_end_ps = std::max(m_end_ps, end_ps);
  if (!m_ticking) {
    m_ticking = true;
    m_kick.notify(sc_core::SC_ZERO_TIME);
  }
}

void Tsp::ticker() {
  uint64_t now = now_ps();
  drain(now);
  if (m_timeline.empty() || core::Context::get().halted()) {
    m_ticking = false;
    return;  // sleep until the next burst kicks us
  }
  uint64_t next = now + drain_interval_ns * 1000;
  // Timing only: LW, MXM and host writes hold no data, so sleep until the
  // next operation (they land milliseconds apart in a long run); consumers
  // still pull what they read (drain), so nothing is applied too late.
  if (m_timing_only) next = std::max(next, m_timeline.next_time());
  next = std::min(next, m_end_ps);
  if (next <= now) next = now + 1;
  next_trigger(ps_time(next - now));
}

void Tsp::drain(uint64_t horizon) {
  if (core::Context::get().halted()) return;
  if (m_draining) {
    // A consumer pulled us while we are applying an operation at m_timeline.current():
    // everything before that time is done, and a pull never needs more.
    if (horizon >= m_timeline.current())
      throw std::logic_error(fmt::format("{}: re-entrant drain to {} ps beyond the operation in progress at {} ps",
                                         name(), horizon, m_timeline.current()));
    return;
  }
  if (horizon < m_drained_to) return;
  m_draining = true;
  for (auto& p : m_ports) p->sweep(horizon);
  uint64_t before = m_timeline.ops();
  m_timeline.run(horizon, core::Context::get().halted());
  data_ops += m_timeline.ops() - before;
  m_drained_to = horizon;
  m_draining = false;
}

void Tsp::guard(uint32_t v) {
  // Outstanding SEND bursts: vectors read into a link but not yet taken by the
  // receiver are references to this SRAM; keep their value if `v` is one.
  for (size_t i = 0; i < m_sending.size();) {
    Sending& s = *m_sending[i];
    const uint64_t head = s.channel->head();
    if (head >= s.first + s.n) {  // fully delivered: forget it
      m_sending[i] = std::move(m_sending.back());
      m_sending.pop_back();
      continue;
    }
    const uint64_t taken = head > s.first ? head - s.first : 0;
    if (v >= s.addr + taken && v < s.addr + s.read) s.channel->keep(s.first + (v - s.addr));
    ++i;
  }
}

void Tsp::finish() {
  drain(core::kNever);
  sram_pages.set(m_sram.pages());
  sram_bytes.set(m_sram.bytes_allocated());
  for (Queue& q : m_queues)
    if (q.st == QState::done) std::vector<Instr>().swap(q.prog);  // finished streams are not needed any more
  if (core::Context::get().halted()) return;
  for (auto& p : m_ports) {
    p->finish();
    if (core::Context::get().halted()) return;
  }
  for (uint32_t q = 0; q < m_queues.size(); ++q) {
    const Queue& queue = m_queues[q];
    if (queue.st == QState::sync)
      error(fmt::format("queue{}", q), queue.sync_cycle,
            "queue parked in SYNC and no NOTIFY followed; the program never finished");
  }
}

void Tsp::machine_check(const c2c::Channel& ch, uint32_t addr, uint64_t t_ps) {
  const uint64_t cycle = m_clock.cycle_at_or_after(t_ps);
  core::Context::get().hw_error(core::HardwareError{
      std::string(name()),
      fmt::format("machine check: vector {} of {} arrived in an uncorrectable FEC codeword (RECV into @{})", ch.head(),
                  ch.name(), addr),
      t_ps, static_cast<int64_t>(cycle), true, ch.name()});
}

void Tsp::error(const std::string& where, uint64_t cycle, const std::string& msg) {
  hw_error(where, m_clock.ps(cycle), static_cast<int64_t>(cycle), msg);
}

void Tsp::sequencer() {
  uint64_t now = now_ps();
  uint64_t cycle = m_clock.cycle_at_or_after(now);
  drain(now);
  // NOTIFY deliveries due now restart every queue that parked at or before the NOTIFY.
  while (!m_notifies.empty() && m_notifies.front().deliver <= cycle) {
    Notify n = m_notifies.front();
    m_notifies.pop_front();
    for (auto& q : m_queues)
      if (q.st == QState::sync && q.sync_cycle <= n.issued) {
        q.st = q.pc == q.prog.size() ? QState::done : QState::run;
        q.next = n.deliver;
      }
  }
  for (uint32_t q = 0; q < m_queues.size(); ++q) {
    Queue& queue = m_queues[q];
    if (queue.st == QState::run && queue.next == cycle) issue(q, queue, cycle);
    if (core::Context::get().halted()) return;
  }
  uint64_t next = core::kNever;
  for (const auto& q : m_queues)
    if (q.st == QState::run) next = std::min(next, q.next);
  if (!m_notifies.empty()) next = std::min(next, m_notifies.front().deliver);
  if (next == core::kNever) {
    if (m_active) {  // nothing scheduled any more: the HAC exchange need not run for this chip
      m_active = false;
      if (m_hac_link) m_hac_link->activity(*this, -1);
    }
    return;
  }
  if (next > m_clock.cycle_at_or_before(core::kEndOfTime_ps)) {
    uint32_t q = 0;
    while (q + 1 < m_queues.size() && !(m_queues[q].st == QState::run && m_queues[q].next == next)) ++q;
    error(fmt::format("queue{}", q), cycle,
          fmt::format("the program runs past the end of simulated time: its next instruction issues at cycle "
                      "{}, after 2^62 ps (53 days)",
                      next));
    return;
  }
  next_trigger(ps_time(m_clock.ps(next) - now));
}

void Tsp::issue(uint32_t q, Queue& queue, uint64_t c) {
  const Instr& in = queue.prog[queue.pc];
  ++instructions;
  uint64_t next = c + 1;
  auto& tr = core::Context::get().trace();
  auto fail = [&](const std::string& msg) { error(fmt::format("queue{}", q), c, msg); };
  switch (in.op) {
    case Op::NOP:
      ++nops;
      next = c + in.imm;
      break;
    case Op::WAIT: {
      ++waits;
      // Program cycles are local cycles minus the RUNTIME_DESKEW shift (0 unless RUNTIME_DESKEW ran); in LOOP
      // iteration k the target is k * P program cycles later.
      const int64_t target = static_cast<int64_t>(in.imm + queue.wait_offset) + m_shift;
      if (target <= static_cast<int64_t>(c)) {
        const std::string iter =
            queue.iter ? fmt::format(" (program cycle {} in LOOP iteration {})", in.imm + queue.wait_offset, queue.iter)
                       : std::string();
        fail(m_shift
                 ? fmt::format("WAIT {}{} issued at program cycle {} (local cycle {}): the target cycle has "
                               "already passed",
                               in.imm, iter, static_cast<int64_t>(c) - m_shift, c)
                 : fmt::format("WAIT {}{} issued at cycle {}: the target cycle has already passed", in.imm, iter, c));
        return;
      }
      next = static_cast<uint64_t>(target);
      break;
    }
    case Op::LOOP: {
      ++loops;
      if (queue.iter == in.count) break;  // the last iteration: falls through, the queue ends (as at END)
      // Iteration k + 1 starts at program cycle (k + 1) * P, as if the queue had started there; it must not
      // have passed (WAIT's rule).
      const uint64_t start = queue.wait_offset + in.imm;
      const int64_t target = static_cast<int64_t>(start) + m_shift;
      if (target <= static_cast<int64_t>(c)) {
        fail(m_shift
                 ? fmt::format("LOOP {}, {}: iteration {} would start at program cycle {} (local cycle {}), but "
                               "the queue reached the LOOP at program cycle {} (local cycle {}): the period is "
                               "too short",
                               in.count, in.imm, queue.iter + 1, start, target, static_cast<int64_t>(c) - m_shift, c)
                 : fmt::format("LOOP {}, {}: iteration {} would start at program cycle {}, but the queue reached "
                               "the LOOP at cycle {}: the period is too short",
                               in.count, in.imm, queue.iter + 1, start, c));
        return;
      }
      ++queue.iter;
      queue.wait_offset = start;
      queue.host_offset += in.a;
      queue.pc = 0;  // the stream is not copied: the queue goes back to its first instruction
      queue.next = static_cast<uint64_t>(target);
      m_end_cycle = std::max(m_end_cycle, queue.next);
      return;
    }
    case Op::DESKEW:
      ++deskews;
      next = m_hac.next_boundary(c);
      deskew_stall_cycles += next - c;
      log_sync(Op::DESKEW, q, 0, c, next, 0);
      break;
    case Op::TRANSMIT:
      ++transmits;
      m_hac_link->transmit(*this, in.port, c);
      log_sync(Op::TRANSMIT, q, in.port, c, c, 0);
      break;
    case Op::POLL: {
      // The polling synchronization loop (seed 000 §3.2): first issue waits for
      // the next epoch boundary; at each boundary the port is tested.
      if (queue.polls == 0) {
        queue.polls = 1;
        queue.sync_cycle = c;
        queue.next = m_hac.next_boundary(c);
        m_end_cycle = std::max(m_end_cycle, queue.next);
        return;
      }
      ++polls;
      auto arrived = std::find_if(m_notified.begin(), m_notified.end(),
                                  [&](const std::pair<uint32_t, uint64_t>& n) { return n.first == in.port; });
      if (arrived != m_notified.end() && arrived->second < c) {
        m_notified.erase(arrived);
        deskew_stall_cycles += c - queue.sync_cycle;
        log_sync(Op::POLL, q, in.port, queue.sync_cycle, c, static_cast<int64_t>(queue.polls));
        queue.polls = 0;
        next = c;  // the next instruction issues at this boundary
        break;
      }
      if (queue.polls >= poll_timeout_epochs) {
        fail(fmt::format("POLL on c2c{} issued at cycle {}: no notification after {} epochs (poll_timeout_epochs)",
                         in.port, queue.sync_cycle, queue.polls));
        return;
      }
      ++queue.polls;
      queue.next = m_hac.next_boundary(c);
      m_end_cycle = std::max(m_end_cycle, queue.next);
      return;
    }
    case Op::RUNTIME_DESKEW: {
      ++runtime_deskews;
      const int64_t drift = m_hac.drift(c);  // SAC - HAC: positive when local time ran ahead
      const int64_t stall = static_cast<int64_t>(in.imm) + drift;
      if (stall < 1) {
        fail(
            fmt::format("RUNTIME_DESKEW {}: the drift since the last resynchronization is {} cycles, more than the "
                        "target stall",
                        in.imm, drift));
        return;
      }
      m_hac.resync(c);
      m_shift += drift;
      next = c + static_cast<uint64_t>(stall);
      deskew_stall_cycles += static_cast<uint64_t>(stall);
      log_sync(Op::RUNTIME_DESKEW, q, 0, c, next, drift);
      break;
    }
    case Op::RDHAC: {
      ++rdhacs;
      const int64_t h = m_hac.hac(c), s = m_hac.sac(c);
      const int32_t words[6] = {static_cast<int32_t>(h),
                                static_cast<int32_t>(s),
                                static_cast<int32_t>(clock::wrap_epoch(h - s)),
                                static_cast<int32_t>(c & 0x7fffffff),
                                static_cast<int32_t>((static_cast<int64_t>(c) - m_shift) & 0x7fffffff),
                                static_cast<int32_t>(m_shift)};
      const uint64_t t = m_clock.ps(c + 1);
      m_timeline.add(
          std::make_unique<WordsCursor>(*this, m_sram, in.a, words, 6, t, m_timeline.next_seq(), m_last_write));
      extend(t);
      break;
    }
    case Op::SYNC:
      ++syncs;
      queue.st = QState::sync;
      queue.sync_cycle = c;
      break;
    case Op::NOTIFY:
      ++notifies;
      m_notifies.push_back(Notify{c, c + notify_latency});
      if (m_hac_link) log_sync(Op::NOTIFY, q, 0, c, c, 0);
      break;
    case Op::SEND: {
      ++sends;
      Port& p = *m_ports[in.port];
      c2c::Burst b;
      b.count = in.count;
      b.ready_ps = m_clock.ps(c + send_latency);
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      p.tx->b_transport(b, delay);
      const core::SerialRate& ser = b.channel->rate();
      uint64_t backlog = b.start_ps - b.ready_ps;
      uint64_t queued = backlog ? (backlog + ser.ps(1) - 1) / ser.ps(1) : 0;
      p.tx_peak_backlog.note_max(queued);
      if (backlog > ser.ps(tx_buffer_vectors)) {
        fail(
            fmt::format("TX buffer overflow on c2c{}: SEND of {} vectors issued while the serializer is busy for "
                        "another {} ps ({} packets; tx_buffer_vectors = {})",
                        in.port, in.count, backlog, queued, tx_buffer_vectors.get()));
        return;
      }
      uint64_t lead = b.ready_ps - m_clock.ps(c);  // read-ahead of the serializer
      if (!results_landed(
              q, c, "SEND", in.a, in.count, [&](uint32_t i) { return b.start_ps - lead + ser.ps(i); }, false,
              link_pace(ser.ps(1))))
        return;
      p.tx_vectors += in.count;
      vectors_sent += in.count;
      m_sending.push_back(std::make_unique<Sending>(Sending{b.channel, b.stream_index, in.a, in.count, 0}));
      m_timeline.add(std::make_unique<SendCursor>(m_sram, *b.channel, *m_sending.back(), b.start_ps - lead,
                                                  m_timeline.next_seq()));
      uint64_t end = b.start_ps + ser.ps(in.count);
      extend(end);
      if (tr.enabled())
        tr.span(
            m_pid, q, "SEND", "tsp", m_clock.ps(c), end - m_clock.ps(c),
            fmt::format(R"("port":{},"addr":"{}","vectors":{})", in.port, VecAddr::from_linear(in.a).str(), in.count));
      break;
    }
    case Op::RECV: {
      ++recvs;
      Port& p = *m_ports[in.port];
      uint64_t take = m_clock.ps(c);
      if (p.rx_busy(take)) {
        fail(fmt::format("RECV on c2c{} issued while the previous RECV is still taking vectors (until cycle {})",
                         in.port, m_clock.cycle_at_or_after(p.rx_busy_until())));
        return;
      }
      p.add_consume(take, in.count, c);
      vectors_received += in.count;
      const core::SerialRate& ser = p.in()->rate();
      uint64_t write = m_clock.ps(c + recv_latency);
      m_timeline.add(std::make_unique<RecvCursor>(*this, m_sram, *p.in(), in.a, in.count, take, write,
                                                  m_timeline.next_seq(), m_last_write));
      uint64_t end = write + ser.ps(in.count - 1);
      extend(end);
      if (tr.enabled())
        tr.span(
            m_pid, q, "RECV", "tsp", take, end - take,
            fmt::format(R"("port":{},"addr":"{}","vectors":{})", in.port, VecAddr::from_linear(in.a).str(), in.count));
      break;
    }
    case Op::LW: issue_lw(q, in, c); break;
    case Op::HOSTW: issue_hostw(q, in, c, in.imm + queue.host_offset); break;
    case Op::MXM: issue_mxm(q, in, c); break;
    case Op::TRANSPOSE: issue_transpose(q, in, c); break;
    case Op::ADD:
    case Op::COPY:
    case Op::MUL:
    case Op::SUB:
    case Op::MAX:
    case Op::RSQRT:
    case Op::EXP:
    case Op::SPLAT:
    case Op::NARROW:
    case Op::WIDEN: {
      if (fly_out(in)) {
        if (!issue_flyby(q, queue, c)) return;
        break;
      }
      // One vector ALU for cycles [c, c + count): step i reads at c + i (NARROW
      // two vectors), its result lands add_latency cycles later.
      const bool add = in.op == Op::ADD || in.op == Op::COPY;
      const bool two = in.op == Op::ADD || vxm_two_operands(in.op);  // operand c
      const uint32_t per = in.op == Op::NARROW ? 2 : 1;
      if (!results_landed(
              q, c, op_name(in.op), in.b, per * in.count,
              [this, c, per](uint32_t i) { return m_clock.ps(c + i / per); }, true, per == 1 ? Pace::one : Pace::many))
        return;
      // MUL, SUB with BCAST or SPREAD read the second operand's vectors out of
      // order or more than once: each read is checked at its own cycle.
      if (two) {
        auto read_ps = [this, c](uint32_t i) { return m_clock.ps(c + i); };
        auto b_vec = [&in](uint32_t i) { return in.c + vxm_b_index(in, i); };
        if (add || in.imm == 0 ? !results_landed(q, c, op_name(in.op), in.c, in.count, read_ps)
                               : !each_landed(q, c, op_name(in.op), in.count, b_vec, read_ps, in.c,
                                              uint64_t(in.c) + vxm_b_vectors(in)))
          return;
      }
      if (add) ++(in.op == Op::COPY ? copies : adds);
      auto alu = std::find_if(m_alu_free.begin(), m_alu_free.end(), [c](uint64_t f) { return f <= c; });
      if (alu == m_alu_free.end()) {
        fail(fmt::format("{} issued while all {} vector ALUs are busy (next free at cycle {})", op_name(in.op),
                         m_alu_free.size(), *std::min_element(m_alu_free.begin(), m_alu_free.end())));
        return;
      }
      *alu = c + in.count;
      alu_busy_cycles += in.count;
      in_flight(InFlight{in.a, in.count, c, add_latency, 0, false, in.op == Op::WIDEN ? 2u : 1u, op_name(in.op)});
      if (in.op == Op::ADD) vectors_added += in.count;
      if (!add) ++vxm_ops;
      if (m_timing_only) {  // nothing is checked: the result's last write only
        m_timeline.add(std::make_unique<LastWriteCursor>(m_clock.ps(c + in.count - 1 + add_latency),
                                                         m_timeline.next_seq(), m_last_write));
      } else if (add) {  // COPY reads its source from `b` and runs the ALU pass-through (Dtype::none).
        m_timeline.add(std::make_unique<AddCursor>(*this, m_sram, m_clock,
                                                   in.op == Op::COPY ? core::Dtype::none : in.dtype, in.a, in.b, in.c,
                                                   in.count, c, add_latency, m_timeline.next_seq(), m_last_write));
      } else {
        m_timeline.add(std::make_unique<VxmCursor>(*this, m_sram, m_clock, in, c, add_latency, m_timeline.next_seq(),
                                                   m_last_write));
      }
      const uint64_t end = m_clock.ps(c + in.count - 1 + add_latency);
      extend(end);
      if (tr.enabled())
        tr.span(m_pid, q, op_name(in.op), "tsp", m_clock.ps(c), end - m_clock.ps(c),
                fmt::format(R"("dtype":"{}","dst":"{}","vectors":{})", core::dtype_name(in.dtype),
                            VecAddr::from_linear(in.a).str(), in.count));
      break;
    }
    case Op::END: break;
  }
  ++queue.pc;
  if (queue.st == QState::run) queue.next = next;
  if (queue.pc == queue.prog.size() && queue.st == QState::run) queue.st = QState::done;
  m_end_cycle = std::max(m_end_cycle, next);
}

bool Tsp::unit_planes(core::Dtype dt, uint32_t u, uint32_t& first, uint32_t& count) const {
  count = dt == core::Dtype::fp16 ? 2 : 1;
  first = u * count;
  return mxm_k(dt) != 0 && first + count <= mxm_planes;
}

template <typename ReadPs>
bool Tsp::results_landed(uint32_t q, uint64_t c, const char* what, uint32_t addr, uint32_t n, ReadPs read_ps,
                         bool fast_reader, Pace pace) {
  if (m_inflight.empty()) return true;
  const uint64_t now = m_clock.ps(c);
  for (size_t k = 0; k < m_inflight.size();) {
    const InFlight& f = m_inflight[k];
    if (f.last_ps < now) {  // every vector has landed: forget it
      m_inflight[k] = m_inflight.back();
      m_inflight.pop_back();
      continue;
    }
    const uint64_t lo = std::max<uint64_t>(addr, f.dst);
    const uint64_t hi = std::min<uint64_t>(uint64_t(addr) + n, f.dst + f.vectors());
    // Read times grow with the vector: a host write not started by the last
    // read in the overlap concerns none of them (a buffer being refilled).
    if (lo >= hi || (f.dma && read_ps(static_cast<uint32_t>(hi - 1 - addr)) < f.start)) {
      ++k;
      continue;
    }
    // A host write lands a vector every PCIe packet time, far slower than a
    // fast reader (LW, MXM, the VXM: at least one vector per cycle) reads them:
    // read - lands falls along the overlap, so its last vector is the one to
    // check (O(1), not O(vectors)). A SEND or HOSTW reading a host write
    // checks every vector.
    // A unit's results land f.per vectors a cycle. A reader of at most one
    // vector a cycle (or a link slower than two clock periods a vector)
    // falls no further behind them along the overlap (read - lands never
    // decreases): its first vector is the worst. A reader of at least one a
    // cycle behind a writer of one a cycle never gains on it: the last is.
    // If that one has landed, all have (O(1) instead of O(vectors)).
    if (!f.dma && hi - lo > 1) {
      const bool rises = pace == Pace::slow || pace == Pace::one;
      const bool falls = f.per == 1 && (pace == Pace::one || pace == Pace::many);
      if (rises || falls) {
        const uint64_t worst = rises ? lo : hi - 1;
        if (read_ps(static_cast<uint32_t>(worst - addr)) >= f.lands(*this, worst)) {
          ++k;
          continue;
        }
      }
    }
    const bool last_only = fast_reader && f.dma && m_pcie->rate().ps(1) >= 2 * (m_clock.ps(c + 1) - m_clock.ps(c));
    const uint64_t v0 = last_only ? hi - 1 : lo;
    for (uint64_t v = v0; v < hi; ++v) {
      const uint64_t lands = f.lands(*this, v);
      const uint64_t read = read_ps(static_cast<uint32_t>(v - addr));
      // A host write counts from when the link starts sending it: a read
      // before that reads the previous contents (a buffer being reused).
      if (read >= lands || (f.dma && read < f.start)) continue;
      const std::string at = VecAddr::from_linear(static_cast<uint32_t>(v)).str();
      const uint64_t rc = m_clock.cycle_at_or_after(read), lc = m_clock.cycle_at_or_after(lands);
      error(fmt::format("queue{}", q), c,
            f.dma ? fmt::format("{} reads {} at cycle {}, before the host's write over PCIe lands there (cycle {}): "
                                "the vector is still on the PCIe link",
                                what, at, rc, lc)
                  : fmt::format("{} reads {} at cycle {}, before the {} issued at cycle {} writes its result there "
                                "(cycle {}): the result is still on its stream",
                                what, at, rc, f.who, f.c0, lc));
      return false;
    }
    ++k;
  }
  return true;
}

void Tsp::in_flight(InFlight f) {
  f.last_ps = f.lands(*this, f.dst + f.vectors() - 1);
  // Forget what has landed (readers forget it too, but a long run of reads
  // of other vectors would not).
  const uint64_t now = now_ps();
  for (size_t k = 0; k < m_inflight.size();)
    if (m_inflight[k].last_ps < now) {
      m_inflight[k] = m_inflight.back();
      m_inflight.pop_back();
    } else {
      ++k;
    }
  m_inflight.push_back(f);
}

Tsp::Pace Tsp::link_pace(uint64_t vector_ps) const {
  // A clock step stays under two mean periods whatever the jitter (the oscillator keeps it below half a period).
  return double(vector_ps) >= 2.0 * std::ceil(m_clock.period_ps()) ? Pace::slow : Pace::any;
}

template <typename Vec, typename ReadPs>
bool Tsp::each_landed(uint32_t q, uint64_t c, const char* what, uint32_t n, Vec vec, ReadPs read_ps, uint64_t lo,
                      uint64_t hi) {
  uint64_t until = 0;  // every vector in flight to [lo, hi) has landed by then: later reads are fine
  for (const InFlight& f : m_inflight)
    if (f.dst < hi && lo < f.dst + f.vectors()) until = std::max(until, f.last_ps);
  for (uint32_t i = 0; i < n && read_ps(i) < until; ++i)
    if (!results_landed(q, c, what, vec(i), 1, [&read_ps, i](uint32_t) { return read_ps(i); })) return false;
  return true;
}

void Tsp::issue_lw(uint32_t q, const Instr& in, uint64_t c) {
  auto fail = [&](const std::string& msg) { error(fmt::format("queue{}", q), c, msg); };
  const uint32_t rate = lw_vectors_per_cycle;
  if (!results_landed(
          q, c, "LW", in.a, in.count, [&](uint32_t i) { return m_clock.ps(c + i / rate); }, true,
          rate == 1 ? Pace::one : Pace::many))
    return;
  uint32_t first = 0, n = 0;
  unit_planes(in.dtype, in.port, first, n);
  const uint64_t load_end = c + (in.count + rate - 1) / rate;
  for (uint32_t p = first; p < first + n; ++p) {
    const MxmPlane& pl = m_planes[p];
    if (pl.load_until > c) {
      fail(fmt::format("LW m{}.w{} while plane {} is still loading weights (until cycle {})", in.port, in.c, p,
                       pl.load_until));
      return;
    }
    if (pl.buf[in.c].read_until > c) {
      fail(fmt::format("LW m{}.w{} overwrites weights an MXM reads until cycle {}", in.port, in.c,
                       pl.buf[in.c].read_until));
      return;
    }
  }
  for (uint32_t p = first; p < first + n; ++p) {
    MxmPlane& pl = m_planes[p];
    pl.load_until = load_end;
    pl.buf[in.c] = MxmPlane::Buffer{in.dtype, in.port, load_end + lw_latency, 0};
  }
  ++weight_loads;
  weight_vectors += in.count;
  if (!m_timing_only)
    m_timeline.add(std::make_unique<LwCursor>(m_sram, m_clock, m_tiles[2 * first + in.c], in.dtype, in.a, in.count, c,
                                              rate, m_timeline.next_seq()));
  extend(m_clock.ps(load_end));
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_pid, q, "LW", "tsp", m_clock.ps(c), m_clock.ps(load_end + lw_latency) - m_clock.ps(c),
            fmt::format(R"("dtype":"{}","unit":{},"buffer":{},"vectors":{})", core::dtype_name(in.dtype), in.port, in.c,
                        in.count));
}

void Tsp::issue_hostw(uint32_t q, const Instr& in, uint64_t c, uint64_t host_vec) {
  auto fail = [&](const std::string& msg) { error(fmt::format("queue{}", q), c, msg); };
  const uint64_t now = m_clock.ps(c);
  if (host_out.size() == 0) {
    fail("HOSTW on a chip whose PCIe link has no host");
    return;
  }
  if (m_pcie_out->free_ps() > now) {
    fail(fmt::format("HOSTW issued while the PCIe link to the host is still sending (until cycle {})",
                     m_clock.cycle_at_or_after(m_pcie_out->free_ps())));
    return;
  }
  const core::SerialRate& rate = m_pcie_out->rate();
  if (!results_landed(
          q, c, "HOSTW", in.a, in.count, [&](uint32_t i) { return now + rate.ps(i); }, false, link_pace(rate.ps(1))))
    return;
  const uint64_t tlps = (kVectorBytes + pcie_max_payload - 1) / pcie_max_payload;
  const uint64_t start = m_pcie_out->serialize(now, in.count, uint64_t(in.count) * kVectorBytes, in.count * tlps);
  const uint64_t last = start + rate.ps(in.count) + m_pcie_out->latency_ps();
  m_host_writes.push_back(HostWriteDone{host_vec, in.count, last});
  if (m_host_write_hook) m_host_write_hook(m_host_writes.back());
  if (m_timing_only)
    m_timeline.add(std::make_unique<LastWriteCursor>(last, m_timeline.next_seq(), m_last_write));
  else
    m_timeline.add(std::make_unique<HostWriteCursor>(*this, m_sram, *m_pcie_out, in.a, in.count, host_vec, start,
                                                     m_timeline.next_seq(), m_last_write));
  extend(last);
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_pid, q, "HOSTW", "tsp", now, last - now,
            fmt::format(R"("src":"{}","vectors":{},"host_vector":{})", VecAddr::from_linear(in.a).str(), in.count,
                        host_vec));
}

void Tsp::deliver_to_host(uint64_t host_vec, const uint8_t* data, uint64_t len, uint64_t t_ps) {
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(host_vec * kVectorBytes);
  gp.set_data_ptr(const_cast<uint8_t*>(data));
  gp.set_data_length(static_cast<unsigned int>(len));
  gp.set_streaming_width(static_cast<unsigned int>(len));
  gp.set_byte_enable_ptr(nullptr);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = ps_time(t_ps > now_ps() ? t_ps - now_ps() : 0);
  host_out->b_transport(gp, delay);
  if (gp.is_response_error())
    throw std::runtime_error(fmt::format("{}: the host refused a HOSTW of {} bytes at host vector {}: {}", name(), len,
                                         host_vec, gp.get_response_string()));
}

void Tsp::issue_mxm(uint32_t q, const Instr& in, uint64_t c) {
  auto fail = [&](const std::string& msg) { error(fmt::format("queue{}", q), c, msg); };
  // Sub-operation i reads input b + i * stride at cycle c + i: a contiguous
  // range is checked in one pass, strided inputs each on their own (the
  // vectors between them are not read).
  const uint32_t stride = mxm_stride(in);
  auto read_ps = [&](uint32_t i) { return m_clock.ps(c + i); };
  if (stride == 1 ? !results_landed(q, c, "MXM", in.b, in.count, read_ps)
                  : !each_landed(
                        q, c, "MXM", in.count, [&in](uint32_t i) { return static_cast<uint32_t>(mxm_input(in, i)); },
                        read_ps, in.b, mxm_input(in, in.count - 1) + 1))
    return;
  if (mxm_acc(in) &&
      !results_landed(
          q, c, "MXM (ACC)", in.a, in.count * kResultVectors,
          [&](uint32_t i) { return m_clock.ps(c + i / kResultVectors + mxm_latency); }, true, Pace::many))
    return;
  uint32_t first = 0, n = 0;
  unit_planes(in.dtype, in.port, first, n);
  for (uint32_t p = first; p < first + n; ++p) {
    const MxmPlane& pl = m_planes[p];
    const MxmPlane::Buffer& b = pl.buf[in.c];
    if (pl.busy_until > c) {
      fail(fmt::format("MXM m{} issued while plane {} is still streaming (until cycle {})", in.port, p, pl.busy_until));
      return;
    }
    if (b.dt != in.dtype || b.unit != in.port) {
      fail(fmt::format("MXM.{} m{}.w{}: the buffer holds no {} weights of this unit (LW.{} m{}.w{} first)",
                       core::dtype_name(in.dtype), in.port, in.c, core::dtype_name(in.dtype),
                       core::dtype_name(in.dtype), in.port, in.c));
      return;
    }
    if (b.ready > c) {
      fail(fmt::format("MXM m{}.w{} issued before its weights are installed (cycle {})", in.port, in.c, b.ready));
      return;
    }
  }
  for (uint32_t p = first; p < first + n; ++p) {
    m_planes[p].busy_until = c + in.count;
    m_planes[p].buf[in.c].read_until = c + in.count;
  }
  ++mxm_ops;
  mxm_subops += in.count;
  mxm_plane_cycles += uint64_t(in.count) * n;
  in_flight(InFlight{in.a, in.count, c, mxm_latency, 0, false, kResultVectors, "MXM"});
  const uint64_t end = m_clock.ps(c + in.count - 1 + mxm_latency);
  if (m_timing_only)
    m_timeline.add(std::make_unique<LastWriteCursor>(end, m_timeline.next_seq(), m_last_write));
  else
    m_timeline.add(std::make_unique<MxmCursor>(*this, m_sram, m_clock, m_tiles[2 * first + in.c], in.a, in.b, stride,
                                               in.count, mxm_acc(in), c, mxm_latency, m_timeline.next_seq(),
                                               m_last_write));
  extend(end);
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_pid, q, "MXM", "tsp", m_clock.ps(c), end - m_clock.ps(c),
            fmt::format(R"("dtype":"{}","unit":{},"buffer":{},"dst":"{}","src":"{}","stride":{},"subops":{},"acc":{})",
                        core::dtype_name(in.dtype), in.port, in.c, VecAddr::from_linear(in.a).str(),
                        VecAddr::from_linear(in.b).str(), stride, in.count, mxm_acc(in) ? "true" : "false"));
}

bool Tsp::issue_flyby(uint32_t q, Queue& queue, uint64_t c) {
  size_t last = queue.pc;
  while (fly_out(queue.prog[last])) ++last;  // load_queues checked that a FLY-in follows every FLY-out
  std::vector<Instr> stages(queue.prog.begin() + static_cast<std::ptrdiff_t>(queue.pc),
                            queue.prog.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  const uint32_t k = static_cast<uint32_t>(stages.size()), n = stages.front().count;
  // Every SRAM operand is read at c + i: the first instruction's, and each
  // MUL, SUB or MAX's second (BCAST / SPREAD: each read on its own).
  auto read_ps = [this, c](uint32_t i) { return m_clock.ps(c + i); };
  if (!results_landed(q, c, op_name(stages.front().op), stages.front().b, n, read_ps)) return false;
  for (const Instr& in : stages) {
    if (!vxm_two_operands(in.op)) continue;
    auto b_vec = [&in](uint32_t i) { return in.c + vxm_b_index(in, i); };
    if (in.imm == 0 ? !results_landed(q, c, op_name(in.op), in.c, n, read_ps)
                    : !each_landed(q, c, op_name(in.op), n, b_vec, read_ps, in.c, uint64_t(in.c) + vxm_b_vectors(in)))
      return false;
  }
  // One ALU per instruction for cycles [c, c + n).
  uint32_t found = 0;
  for (uint64_t f : m_alu_free) found += f <= c;
  if (found < k) {
    error(fmt::format("queue{}", q), c,
          fmt::format("a fly-by of {} instructions issued while {} of the {} vector ALUs are free (next free at "
                      "cycle {})",
                      k, found, m_alu_free.size(), *std::min_element(m_alu_free.begin(), m_alu_free.end())));
    return false;
  }
  queue.pc = last;        // issue() steps past the last instruction of the fly-by
  instructions += k - 1;  // issue() counted the first
  uint32_t taken = 0;
  for (uint64_t& f : m_alu_free)
    if (f <= c && taken < k) f = c + n, ++taken;
  alu_busy_cycles += uint64_t(k) * n;
  vxm_ops += k;
  vxm_chained += k - 1;
  const uint32_t lat = add_latency + (k - 1) * fly_latency;
  const uint64_t end = m_clock.ps(c + n - 1 + lat);
  const Instr tail = stages.back();
  in_flight(InFlight{tail.a, n, c, lat, 0, false, 1, "fly-by"});
  if (m_timing_only)
    m_timeline.add(std::make_unique<LastWriteCursor>(end, m_timeline.next_seq(), m_last_write));
  else
    m_timeline.add(std::make_unique<FlyCursor>(*this, m_sram, m_clock, std::move(stages), c, lat, m_timeline.next_seq(),
                                               m_last_write));
  extend(end);
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_pid, q, "FLY", "tsp", m_clock.ps(c), end - m_clock.ps(c),
            fmt::format(R"("instructions":{},"dtype":"{}","dst":"{}","vectors":{})", k, core::dtype_name(tail.dtype),
                        VecAddr::from_linear(tail.a).str(), n));
  return true;
}

void Tsp::issue_transpose(uint32_t q, const Instr& in, uint64_t c) {
  const uint32_t rate = sxm_vectors_per_cycle, n = in.count;
  // Source vector k is read at cycle c + k / rate; the sources are strided, so
  // each is checked against the results still on their streams on its own.
  if (!each_landed(
          q, c, "TRANSPOSE", n, [&in](uint32_t k) { return static_cast<uint32_t>(in.b + uint64_t(k) * in.c); },
          [this, c, rate](uint32_t k) { return m_clock.ps(c + k / rate); }, in.b, in.b + uint64_t(n - 1) * in.c + 1))
    return;
  auto unit = std::find_if(m_sxm_free.begin(), m_sxm_free.end(), [c](uint64_t f) { return f <= c; });
  if (unit == m_sxm_free.end()) {
    error(fmt::format("queue{}", q), c,
          fmt::format("TRANSPOSE issued while all {} SXM transpose units are busy (next free at cycle {})",
                      m_sxm_free.size(), *std::min_element(m_sxm_free.begin(), m_sxm_free.end())));
    return;
  }
  *unit = c + (n + rate - 1) / rate;
  ++sxm_ops;
  sxm_vectors += n;
  const uint64_t end = m_clock.ps(c + (n - 1) / rate + sxm_latency);
  in_flight(InFlight{in.a, 1, c, (n - 1) / rate + sxm_latency, 0, false, 1, "TRANSPOSE"});
  if (m_timing_only)
    m_timeline.add(std::make_unique<LastWriteCursor>(end, m_timeline.next_seq(), m_last_write));
  else
    m_timeline.add(std::make_unique<TransposeCursor>(*this, m_sram, m_clock, in, c, rate, sxm_latency,
                                                     m_timeline.next_seq(), m_last_write));
  extend(end);
  auto& tr = core::Context::get().trace();
  if (tr.enabled())
    tr.span(m_pid, q, "TRANSPOSE", "tsp", m_clock.ps(c), end - m_clock.ps(c),
            fmt::format(R"("dtype":"{}","unit":{},"dst":"{}","src":"{}","vectors":{},"lane":{},"stride":{})",
                        core::dtype_name(in.dtype), unit - m_sxm_free.begin(), VecAddr::from_linear(in.a).str(),
                        VecAddr::from_linear(in.b).str(), n, in.imm, in.c));
}

}  // namespace fabricvp::tsp
