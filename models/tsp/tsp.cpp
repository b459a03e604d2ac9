#include "models/tsp/tsp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "models/tsp/vxm.h"

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
    if (m_ch.empty()) {
      m_ch.producer()->drain(m_take + m_ch.rate().ps(m_i));
      if (m_ch.empty()) {
        // The producer found a hardware error of its own while applying its
        // operations and stopped: the run is failing, leave the data path.
        if (core::Context::get().halted()) return true;
        throw std::logic_error("C2C channel " + m_ch.name() + " has no data for a checked RECV");
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

/// ADD (and COPY): vector i's operands are read at cycle c0 + i and the result is
/// written at cycle c0 + i + latency; results in the pipeline wait in a small ring.
class AddCursor final : public Cursor {
 public:
  AddCursor(Tsp& chip, Sram& sram, const core::Clock& clk, Dtype dt, uint32_t dst, uint32_t a, uint32_t b,
            uint32_t n, uint64_t c0, uint32_t latency, uint64_t seq, uint64_t& last_write)
      : m_chip(chip),
        m_sram(sram),
        m_clk(clk),
        m_dt(dt),
        m_dst(dst),
        m_a(a),
        m_b(b),
        m_n(n),
        m_c0(c0),
        m_lat(latency),
        m_ring(new uint8_t[std::min<uint64_t>(n, latency + 1) * kVectorBytes]),  // filled before read
        m_slots(std::min<uint64_t>(n, latency + 1)),
        m_last(last_write) {
    key = OpKey{clk.ps(c0), kRead, seq};
  }
  bool step() override {
    if (key.phase == kRead) {
      uint8_t* out = &m_ring[(m_r % m_slots) * kVectorBytes];
      if (m_dt == Dtype::none)
        std::memcpy(out, m_sram.read(m_a + m_r), kVectorBytes);  // COPY
      else
        vxm::add(m_dt, out, m_sram.read(m_a + m_r), m_sram.read(m_b + m_r));
      ++m_r;
    } else {
      m_chip.before_write(m_dst + m_w);
      std::memcpy(m_sram.write(m_dst + m_w), &m_ring[(m_w % m_slots) * kVectorBytes], kVectorBytes);
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

 private:
  Tsp& m_chip;
  Sram& m_sram;
  const core::Clock& m_clk;
  Dtype m_dt;
  uint32_t m_dst, m_a, m_b, m_n;
  uint64_t m_c0;
  uint32_t m_lat;
  std::unique_ptr<uint8_t[]> m_ring;
  uint64_t m_slots;
  uint32_t m_r = 0, m_w = 0;
  uint64_t& m_last;
};

sc_core::sc_time ps_time(uint64_t ps) { return sc_core::sc_time::from_value(ps); }
uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }

}  // namespace

Tsp::Tsp(const sc_core::sc_module_name& nm)
    : core::Module(nm, "tsp"),
      clock_mhz(this, "clock_mhz", 900.0, "MHz", "core clock (seed 000 §5.2: 900 MHz)", 1.0, 10000.0),
      send_latency(this, "send_latency", 205, "cycles",
                   "SEND issue to first packet at the serializer: SRAM read, stream transport to the C2C slice, "
                   "clock crossing",
                   1, 100000),
      recv_latency(this, "recv_latency", 205, "cycles",
                   "vector taken from the receive buffer to written in SRAM (readable)", 1, 100000),
      add_latency(this, "add_latency", 16, "cycles", "ADD: operand read to result written in SRAM", 1, 100000),
      notify_latency(this, "notify_latency", 4, "cycles", "NOTIFY issue to restart of the SYNC'ed queues", 1, 100000),
      queues(this, "queues", 32, "queues", "instruction queues (ICUs) with independent streams", 1, 4096),
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
      ctrl("ctrl"),
      m_clock(clock_mhz),
      instructions(this, nullptr, "instructions", "instructions", "instructions issued by all queues"),
      sends(this, nullptr, "sends", "instructions", "SEND instructions"),
      recvs(this, nullptr, "recvs", "instructions", "RECV instructions"),
      adds(this, nullptr, "adds", "instructions", "ADD instructions"),
      copies(this, nullptr, "copies", "instructions", "COPY instructions"),
      nops(this, nullptr, "nops", "instructions", "NOP instructions"),
      waits(this, nullptr, "waits", "instructions", "WAIT instructions"),
      syncs(this, nullptr, "syncs", "instructions", "SYNC instructions"),
      notifies(this, nullptr, "notifies", "instructions", "NOTIFY instructions"),
      vectors_sent(this, nullptr, "vectors_sent", "vectors", "vectors sent on all ports"),
      vectors_received(this, nullptr, "vectors_received", "vectors", "vectors requested by RECV on all ports"),
      vectors_added(this, nullptr, "vectors_added", "vectors", "vector additions by the VXM"),
      alu_busy_cycles(this, nullptr, "alu_busy_cycles", "cycles", "ALU-cycles spent on ADD (sum over ALUs)"),
      data_ops(this, nullptr, "data_ops", "operations", "per-vector SRAM operations applied by the timeline"),
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
  ctrl.register_transport_dbg(this, &Tsp::ctrl_dbg);

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

unsigned int Tsp::ctrl_dbg(tlm::tlm_generic_payload& gp) {
  bool ok = false;
  ctrl_dbg_access(gp, ok);
  gp.set_response_status(ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  return ok ? gp.get_data_length() : 0;
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
  throw core::ConfigError(fmt::format("{}: queue {} instruction {}{}: {} {}", name(), q, pc, where, op_name(in.op), msg));
}

void Tsp::load_queues() {
  m_queues.assign(m_imem.size(), Queue{});
  for (uint32_t q = 0; q < m_imem.size(); ++q) {
    const std::vector<uint8_t>& mem = m_imem[q];
    Queue& queue = m_queues[q];
    for (size_t off = 0; off + kInstrBytes <= mem.size(); off += kInstrBytes) {
      Instr in = Instr::decode(&mem[off]);
      size_t pc = off / kInstrBytes;
      if (in.op == Op::END) break;
      auto range = [&](uint32_t addr, const char* what) {
        if (static_cast<uint64_t>(addr) + in.count > kVectors)
          program_error(q, pc, in, fmt::format("{} {} + {} vectors is past the end of SRAM ({} vectors)", what,
                                               VecAddr::from_linear(addr).str(), in.count, kVectors));
      };
      switch (in.op) {
        case Op::NOP:
          if (in.imm == 0) program_error(q, pc, in, "needs at least 1 cycle");
          break;
        case Op::WAIT:
        case Op::SYNC:
        case Op::NOTIFY: break;
        case Op::SEND:
        case Op::RECV:
          if (in.port >= m_ports.size())
            program_error(q, pc, in, fmt::format("port {} does not exist (chip has {})", in.port, m_ports.size()));
          if (!m_ports[in.port]->connected()) program_error(q, pc, in, fmt::format("port {} has no link", in.port));
          if (in.count == 0) program_error(q, pc, in, "count must be at least 1");
          range(in.a, "address");
          break;
        case Op::ADD:
          if (dtype_bytes(in.dtype) == 0) program_error(q, pc, in, "has no valid data type");
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
        default: program_error(q, pc, in, fmt::format("unknown opcode {}", static_cast<int>(in.op)));
      }
      queue.prog.push_back(in);
    }
    queue.st = queue.prog.empty() ? QState::done : QState::run;
    // The decoded stream is what executes; the encoded image is not kept twice.
    std::vector<uint8_t>().swap(m_imem[q]);
    if (!queue.prog.empty() && core::Context::get().trace().enabled())
      core::Context::get().trace().thread(m_pid, q, fmt::format("queue {}", q));
  }
}

void Tsp::start() {
  load_queues();
  m_start.notify(sc_core::SC_ZERO_TIME);
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
  uint64_t next = std::min(now + drain_interval_ns * 1000, m_end_ps);
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
      fmt::format("machine check: vector {} of {} arrived in an uncorrectable FEC codeword (RECV into @{})",
                  ch.head(), ch.name(), addr),
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
  if (next == core::kNever) return;
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
    case Op::WAIT:
      ++waits;
      if (in.imm <= c) {
        fail(fmt::format("WAIT {} issued at cycle {}: the target cycle has already passed", in.imm, c));
        return;
      }
      next = in.imm;
      break;
    case Op::SYNC:
      ++syncs;
      queue.st = QState::sync;
      queue.sync_cycle = c;
      break;
    case Op::NOTIFY:
      ++notifies;
      m_notifies.push_back(Notify{c, c + notify_latency});
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
        fail(fmt::format("TX buffer overflow on c2c{}: SEND of {} vectors issued while the serializer is busy for "
                          "another {} ps ({} packets; tx_buffer_vectors = {})",
                          in.port, in.count, backlog, queued, tx_buffer_vectors.get()));
        return;
      }
      p.tx_vectors += in.count;
      vectors_sent += in.count;
      uint64_t lead = b.ready_ps - m_clock.ps(c);  // read-ahead of the serializer
      m_sending.push_back(std::make_unique<Sending>(Sending{b.channel, b.stream_index, in.a, in.count, 0}));
      m_timeline.add(std::make_unique<SendCursor>(m_sram, *b.channel, *m_sending.back(), b.start_ps - lead,
                                                  m_timeline.next_seq()));
      uint64_t end = b.start_ps + ser.ps(in.count);
      extend(end);
      if (tr.enabled())
        tr.span(m_pid, q, "SEND", "tsp", m_clock.ps(c), end - m_clock.ps(c),
                fmt::format(R"("port":{},"addr":"{}","vectors":{})", in.port, VecAddr::from_linear(in.a).str(),
                            in.count));
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
        tr.span(m_pid, q, "RECV", "tsp", take, end - take,
                fmt::format(R"("port":{},"addr":"{}","vectors":{})", in.port, VecAddr::from_linear(in.a).str(),
                            in.count));
      break;
    }
    case Op::ADD:
    case Op::COPY: {
      const bool copy = in.op == Op::COPY;
      ++(copy ? copies : adds);
      auto alu = std::find_if(m_alu_free.begin(), m_alu_free.end(), [c](uint64_t f) { return f <= c; });
      if (alu == m_alu_free.end()) {
        fail(fmt::format("{} issued while all {} vector ALUs are busy (next free at cycle {})", op_name(in.op),
                         m_alu_free.size(), *std::min_element(m_alu_free.begin(), m_alu_free.end())));
        return;
      }
      *alu = c + in.count;
      alu_busy_cycles += in.count;
      if (!copy) vectors_added += in.count;
      // COPY reads its source from `b` and runs the ALU pass-through (Dtype::none).
      m_timeline.add(std::make_unique<AddCursor>(*this, m_sram, m_clock, copy ? Dtype::none : in.dtype, in.a, in.b,
                                                 in.c, in.count, c, add_latency, m_timeline.next_seq(), m_last_write));
      uint64_t end = m_clock.ps(c + in.count - 1 + add_latency);
      extend(end);
      if (tr.enabled())
        tr.span(m_pid, q, op_name(in.op), "tsp", m_clock.ps(c), end - m_clock.ps(c),
                fmt::format(R"("dtype":"{}","dst":"{}","vectors":{})", dtype_name(in.dtype),
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

}  // namespace fabricvp::tsp
