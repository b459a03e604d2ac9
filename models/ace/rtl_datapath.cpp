// The verilated headers come first: included after <systemc>, verilated.h
// takes the SystemC branch of its time functions (sc_time_stamp), which the
// runtime library (built without SystemC, --cc) does not use.
#include "Vace_datapath.h"
#include "verilated.h"
#include "verilated_vcd_c.h"

#include "models/ace/rtl_datapath.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#ifndef FABRICVP_ACE_LANES
#error "FABRICVP_ACE_LANES must come from the ace_rtl target (rtl/CMakeLists.txt)"
#endif

namespace fabricvp::ace {

namespace {

constexpr int kResetCycles = 2;

template <typename P, typename V>
void set(P& port, V value) {
  port = static_cast<P>(value);
}

// Wide ports (more than 64 bits) are word arrays; narrower ones are integers.
template <std::size_t N>
void put_words(VlWide<N>& port, const uint32_t* w) {
  static_assert(N == FABRICVP_ACE_LANES, "in_data width differs from ACE_LANES");
  std::memcpy(port.data(), w, 4 * N);
}
[[maybe_unused]] void put_words(QData& port, const uint32_t* w) { port = w[0] | (QData(w[1]) << 32); }
[[maybe_unused]] void put_words(IData& port, const uint32_t* w) { port = w[0]; }

template <std::size_t N>
void get_words(const VlWide<N>& port, uint32_t* w) {
  std::memcpy(w, port.data(), 4 * N);
}
[[maybe_unused]] void get_words(const QData& port, uint32_t* w) {
  w[0] = static_cast<uint32_t>(port);
  w[1] = static_cast<uint32_t>(port >> 32);
}
[[maybe_unused]] void get_words(const IData& port, uint32_t* w) { w[0] = port; }

}  // namespace

RtlDatapath::RtlDatapath(const sc_core::sc_module_name& nm, const std::string& vcd_path, uint64_t vcd_from)
    : core::Module(nm, "ace.rtl_datapath"), m_ctx(std::make_unique<VerilatedContext>()), m_vcd_from(vcd_from) {
  std::string path = vcd_path.empty() ? vcd.get() : vcd_path;
  m_half_ps = static_cast<uint64_t>(1e6 / clock_mhz.get() / 2.0 + 0.5);
  if (m_half_ps == 0) m_half_ps = 1;
  m_ctx->randReset(0);  // state the reset does not set (SRAM, data registers) starts at zero, like the C++ model
  if (!path.empty()) m_ctx->traceEverOn(true);
  m_top = std::make_unique<Vace_datapath>(m_ctx.get(), "ace_datapath");
  if (!path.empty()) {
    m_vcd = std::make_unique<VerilatedVcdC>();
    m_top->trace(m_vcd.get(), 99);
    m_vcd->open(path.c_str());
    if (!m_vcd->isOpen()) throw std::runtime_error(fmt::format("{}: cannot write VCD '{}'", name(), path));
    log(core::Level::info, "VCD of the RTL datapath: {}", path);
  }
  Vace_datapath& t = *m_top;
  t.clk = 0;
  t.rst_n = 0;
  t.cfg_we = 0;
  t.in_valid = 0;
  t.out_ready = 0;
  for (int i = 0; i < kResetCycles; ++i) {
    t.clk = 0;
    t.eval();
    dump_vcd();
    t.clk = 1;
    t.eval();
    dump_vcd();
  }
  t.rst_n = 1;
}

RtlDatapath::~RtlDatapath() {
  if (m_top) m_top->final();
  if (m_vcd) m_vcd->close();
}

bool RtlDatapath::idle() const { return m_top->idle != 0; }

void RtlDatapath::dump_vcd() {
  if (m_vcd && m_now >= m_vcd_from) m_vcd->dump(m_vcd_time);
  m_vcd_time += m_half_ps;
}

void RtlDatapath::fail(const std::string& why) {
  if (m_failed) return;
  m_failed = true;
  m_failure = why;
  uint64_t ps = m_now * 2 * m_half_ps;
  hw_error("", ps, static_cast<int64_t>(m_now), why);
}

void RtlDatapath::drive(const Chunk& c) {
  Vace_datapath& t = *m_top;
  set(t.in_op, static_cast<uint32_t>(c.op));
  set(t.in_dtype, rtl_dtype_code(c.dtype));
  set(t.in_part, c.part);
  set(t.in_row, c.row);
  set(t.in_wb, c.wb);
  set(t.in_send, c.send);
  set(t.in_tag, c.tag);
  put_words(t.in_data, c.data.data());
}

void RtlDatapath::step() {
  Vace_datapath& t = *m_top;
  bool offer = false;
  if (!m_queue.empty()) {
    const Queued& q = m_queue.front();
    offer = std::max(m_offer_base + q.chunk.gap, q.horizon) <= m_now;
    if (offer && !m_driving) {
      drive(q.chunk);
      m_driving = true;
    }
  }
  t.in_valid = offer;
  t.out_ready = m_ready ? m_ready(m_now) : true;
  t.clk = 0;
  t.eval();
  dump_vcd();

  const bool accepted = offer && t.in_ready;
  if (offer && !t.in_ready) ++in_stall_cycles;
  if (t.out_valid && !t.out_ready) ++out_stall_cycles;
  if (t.cpl_valid) {
    if (m_flight.empty()) {
      fail("RTL completed a chunk that was never accepted");
      return;
    }
    if (t.out_valid && (t.out_tag != t.cpl_tag || t.out_err != t.cpl_err)) {
      fail("RTL out_tag/out_err differ from cpl_tag/cpl_err");
      return;
    }
    Completion& c = m_done.push();
    c.tag = t.cpl_tag;
    c.err = t.cpl_err;
    c.sent = t.out_valid && t.out_ready;
    c.data.clear();
    if (c.sent) {
      c.data.resize(geometry().lanes);
      get_words(t.out_data, c.data.data());
      ++results_sent;
    }
    c.accept_cycle = m_flight.front();
    c.retire_cycle = m_now;
    m_flight.pop_front();
  }

  t.clk = 1;
  t.eval();
  dump_vcd();

  if (accepted) {
    m_queue.pop();
    m_driving = false;
    m_flight.push_back(m_now);
    m_offer_base = m_now + 1;
    ++chunks;
  }
  if (m_ctx->gotFinish()) fail(fmt::format("the RTL called $finish in cycle {}", m_now));
  ++m_now;
  ++cycles;
}

void RtlDatapath::configure(uint32_t part, uint32_t base, uint32_t size) {
  check_configure(geometry(), part, base, size, pending());
  if (m_raw || m_failed) throw std::logic_error(std::string(name()) + ": the model is stopped");
  Vace_datapath& t = *m_top;
  t.cfg_we = 1;
  set(t.cfg_part, part);
  set(t.cfg_base, base);
  set(t.cfg_size, size);
  step();
  t.cfg_we = 0;
}

void RtlDatapath::submit(const Chunk& c) {
  check_chunk(geometry(), c);
  if (m_raw) throw std::logic_error(std::string(name()) + ": raw_cycle() was used; transactions are off");
  Queued& q = m_queue.push();
  q.chunk = c;
  q.horizon = m_now;
}

bool RtlDatapath::next(Completion& out) {
  if (m_raw) throw std::logic_error(std::string(name()) + ": raw_cycle() was used; transactions are off");
  if (m_done.empty()) {
    if (m_failed || pending() == 0) return false;
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t start = m_now;
    while (m_done.empty() && !m_failed) {
      if (m_now - start >= watchdog_cycles.get()) {
        fail(
            fmt::format("watchdog: no completion for {} cycles ({} chunks pending)", watchdog_cycles.get(), pending()));
        break;
      }
      step();
    }
    m_eval_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (m_done.empty()) return false;
  }
  std::swap(out, m_done.front());
  m_done.pop();
  return true;
}

bool RtlDatapath::advance(uint64_t n) {
  if (pending() != 0) throw std::logic_error(std::string(name()) + ": advance() with chunks pending");
  if (m_raw || m_failed) return false;
  bool quiet = true;
  for (uint64_t i = 0; i < n && !m_failed; ++i) {
    step();
    if (!m_done.empty() || m_top->out_valid || !m_top->idle) quiet = false;
    m_done.clear();
  }
  return quiet && !m_failed;
}

bool RtlDatapath::raw_cycle(bool in_valid, const Chunk& c, bool out_ready) {
  check_chunk(geometry(), c);
  // A second $finish makes the verilated runtime exit the process: never step a stopped model.
  if (m_failed) throw std::logic_error(std::string(name()) + ": the model is stopped (" + m_failure + ")");
  m_raw = true;
  Vace_datapath& t = *m_top;
  drive(c);
  t.in_valid = in_valid;
  t.out_ready = out_ready;
  t.clk = 0;
  t.eval();
  dump_vcd();
  const bool accepted = in_valid && t.in_ready;
  t.clk = 1;
  t.eval();
  dump_vcd();
  if (m_ctx->gotFinish()) fail(fmt::format("the RTL called $finish in cycle {}", m_now));
  ++m_now;
  ++cycles;
  return accepted;
}

}  // namespace fabricvp::ace
