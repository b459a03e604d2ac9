#include "tb/ace/equiv.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <vector>

#include "models/ace/datapath.h"
#include "models/ace/rtl_datapath.h"
#include "tb/ace/stimulus.h"

namespace fabricvp::tb {

using ace::Chunk;
using ace::Completion;

namespace {

constexpr uint64_t kQuietCycles = 16;       // drain check: cycles the idle RTL must stay silent
constexpr uint64_t kLookaheadStretch = 64;  // chunks between changes of the submission lookahead
constexpr uint64_t kTraceBefore = 2000;     // cycles traced before the first mismatch

class Bench {
 public:
  Bench(const EquivOptions& opt, std::ostream* log)
      : m_opt(opt),
        m_rtl("ace_equiv_dut", opt.vcd, opt.vcd_from),
        m_geo(m_rtl.geometry()),
        m_model(m_geo),
        m_stim(opt.seed, m_geo, opt.saturate),
        m_sb(log) {
    auto ready = [this](uint64_t c) { return m_stim.ready(c); };
    m_model.set_out_ready(ready);
    m_rtl.set_out_ready(ready);
  }

  EquivResult run() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    // Both models start from the same buffer contents: store every row.
    configure(0, 0, m_geo.depth);
    for (uint32_t addr = 0; addr < m_geo.depth && running(); ++addr) {
      m_stim.fill(addr, next_tag(), m_chunk);
      feed(m_chunk);
    }
    drain();
    const std::vector<Partition> parts = m_stim.partitions();
    for (uint32_t p = 0; p < parts.size() && running(); ++p) configure(p, parts[p].base, parts[p].size);
    for (uint64_t i = 0; i < m_opt.transactions && running(); ++i) {
      m_stim.random(m_model, parts, next_tag(), m_chunk);
      feed(m_chunk);
    }
    drain();
    // Read the whole buffer back out.
    configure(0, 0, m_geo.depth);
    for (uint32_t addr = 0; addr < m_geo.depth && running(); ++addr) {
      Chunk& c = m_chunk;
      c.op = ace::Op::forward;
      c.dtype = core::Dtype::fp32;
      c.part = 0;
      c.row = addr;
      c.wb = false;
      c.send = true;
      c.tag = next_tag();
      c.gap = 0;
      c.data.assign(m_geo.lanes, 0);
      feed(c);
    }
    drain();

    EquivResult r;
    if (running()) {
      bool quiet = m_rtl.advance(kQuietCycles);
      m_model.advance(kQuietCycles);
      r.drained = quiet && m_rtl.idle() && m_rtl.pending() == 0 && m_model.pending() == 0 && m_sb.outstanding() == 0 &&
                  m_rtl.cycle() == m_model.cycle();
      if (!r.drained)
        m_sb.missing(
            fmt::format("drain check failed: RTL {} pending, idle {}, silent {}, cycle {}; model {} pending, "
                        "cycle {}",
                        m_rtl.pending(), m_rtl.idle(), quiet, m_rtl.cycle(), m_model.pending(), m_model.cycle()));
    }
    r.transactions = m_fed;
    r.compared = m_sb.compared();
    r.mismatches = m_sb.mismatches();
    r.first_mismatch = m_sb.first_mismatch();
    r.first_description = m_sb.first_description();
    r.first_mismatch_cycle = m_sb.first_cycle();
    r.rtl_failed = m_rtl.failed();
    r.cycles = m_rtl.cycle();
    r.in_stall_cycles = m_rtl.in_stalls();
    r.out_stall_cycles = m_rtl.out_stalls();
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rtl_s = m_rtl.eval_seconds();
    r.cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    r.vcd = m_opt.vcd;
    r.coverage = m_sb.coverage();
    return r;
  }

  const ace::Geometry& geometry() const { return m_geo; }

 private:
  bool running() const { return !m_stop && !m_rtl.failed(); }
  uint32_t next_tag() { return static_cast<uint32_t>(m_fed & ((uint64_t(1) << m_geo.tag_bits) - 1)); }

  void configure(uint32_t p, uint32_t base, uint32_t size) {
    if (!running()) return;
    m_model.configure(p, base, size);
    m_rtl.configure(p, base, size);
  }

  void feed(const Chunk& c) {
    if (m_fed % kLookaheadStretch == 0) m_lookahead = m_stim.lookahead();
    uint32_t addr = 0;
    m_sb.submitted(c, m_model.map(c.part, c.row, addr) ? m_model.row(addr) : nullptr, m_geo.lanes);
    m_model.submit(c);
    m_rtl.submit(c);
    ++m_fed;
    while (running() && m_model.pending() > m_lookahead) collect();
  }

  void drain() {
    while (running() && (m_model.pending() > 0 || m_rtl.pending() > 0)) collect();
  }

  void collect() {
    Completion& e = m_expected;
    Completion& a = m_actual;
    const bool have_e = m_model.next(e);
    const bool have_a = m_rtl.next(a);
    if (!have_e || !have_a) {
      m_sb.missing(
          !have_a ? fmt::format("the RTL gave no completion ({})", m_rtl.failed() ? m_rtl.failure() : "nothing pending")
                  : "the RTL gave a completion the model does not have");
      m_stop = true;
      return;
    }
    corrupt(e);
    m_sb.compare(e, a);
    if (m_opt.stop_after && m_sb.compared() >= m_opt.stop_after) m_stop = true;
  }

  // Fault injection: a deliberately wrong expectation.
  void corrupt(Completion& e) {
    if (m_opt.corrupt_at < 0 || m_corrupted || m_sb.compared() < static_cast<uint64_t>(m_opt.corrupt_at)) return;
    switch (m_opt.corrupt) {
      case EquivOptions::Corrupt::data:
        if (e.data.empty()) return;  // wait for a completion with a result
        e.data[0] ^= 1u;
        break;
      case EquivOptions::Corrupt::retire_cycle: e.retire_cycle += 1; break;
      case EquivOptions::Corrupt::accept_cycle: e.accept_cycle += 1; break;
      case EquivOptions::Corrupt::tag: e.tag ^= 1u; break;
    }
    m_corrupted = true;
  }

  const EquivOptions& m_opt;
  ace::RtlDatapath m_rtl;
  ace::Geometry m_geo;
  ace::Datapath m_model;
  Stimulus m_stim;
  Scoreboard m_sb;
  Chunk m_chunk;                    // reused for every chunk generated
  Completion m_expected, m_actual;  // reused for every completion compared
  uint64_t m_fed = 0;
  uint32_t m_lookahead = 8;
  bool m_stop = false;
  bool m_corrupted = false;
};

}  // namespace

EquivResult ace_equiv(const EquivOptions& opt, std::ostream* log) {
  Bench bench(opt, log);
  EquivResult r = bench.run();
  if (log && !opt.quiet) {
    const ace::Geometry& g = bench.geometry();
    const double mcps = r.wall_s > 0 ? r.cycles / r.wall_s / 1e6 : 0;
    fmt::print(*log, "ace-equiv: seed {}, {} random chunks (+{} fill and read-back){}\n", opt.seed, opt.transactions,
               2 * g.depth, opt.saturate ? ", saturated (no gaps, no back-pressure)" : "");
    fmt::print(*log,
               "  RTL          ace_datapath LANES={} DEPTH={} PARTS={} TW={} (verilated --cc), latency {} cycles "
               "(ALU {})\n",
               g.lanes, g.depth, g.partitions, g.tag_bits, ace::kLatency, ace::kAluLatency);
    fmt::print(*log,
               "  compared     {} completions of {} chunks: {} mismatches (result bits, tag, err, accept and "
               "retire cycles)\n",
               r.compared, r.transactions, r.mismatches);
    fmt::print(*log, "  cycles       {} RTL cycles; offered-but-stalled {}, results held by back-pressure {}\n",
               r.cycles, r.in_stall_cycles, r.out_stall_cycles);
    const Coverage& v = r.coverage;
    fmt::print(*log,
               "  coverage     {} float sums: {} NaN, {} infinite ({} by overflow), {} zero by cancellation, {} -0, "
               "{} subnormal; {} int32 wraps; {} err chunks\n",
               v.fp_lanes, v.nan, v.inf, v.overflow, v.cancel, v.neg_zero, v.subnormal, v.int_wraps, v.err_chunks);
    fmt::print(*log, "  drain        {}\n",
               r.drained ? "ok: nothing pending, RTL idle and silent, both models at the same cycle" : "FAILED");
    fmt::print(*log,
               "  speed        {:.3f} s wall = {:.2f} M RTL cycles/s, {:.2f} M chunks/s (stimulus, C++ model, RTL and "
               "scoreboard together; RTL evaluation alone {:.3f} s)\n",
               r.wall_s, mcps, r.wall_s > 0 ? r.transactions / r.wall_s / 1e6 : 0, r.rtl_s);
    fmt::print(*log, "               {:.3f} s CPU = {:.2f} M RTL cycles per CPU second\n", r.cpu_s,
               r.cpu_s > 0 ? r.cycles / r.cpu_s / 1e6 : 0);
    if (!r.vcd.empty()) fmt::print(*log, "  vcd          {}\n", r.vcd);
    fmt::print(*log, "  result       {}\n", r.passed() ? "PASS" : "FAIL");
  }
  return r;
}

int run_ace_equiv(const EquivOptions& opt) {
  EquivResult r = ace_equiv(opt, &std::cout);
  if (r.passed()) {
    if (opt.quiet)
      fmt::print("ace-equiv: PASS (seed {}, {} completions compared, {} cycles)\n", opt.seed, r.compared, r.cycles);
    return 0;
  }
  fmt::print("ace-equiv: FAILED with seed {}: {} mismatches{}{}\n", opt.seed, r.mismatches,
             r.rtl_failed ? ", the RTL stopped" : "", r.drained ? "" : ", drain check not passed");
  fmt::print("  re-run: fabricvp ace-equiv --transactions {} --seed {}{}\n", opt.transactions, opt.seed,
             opt.saturate ? " --saturate" : "");
  if (opt.vcd.empty() && !opt.fail_vcd.empty()) {
    EquivOptions traced = opt;
    traced.vcd = opt.fail_vcd;
    traced.quiet = true;
    // The VCD covers a window: from 2,000 cycles before the first mismatching
    // chunk was accepted to 64 completions after it.
    if (r.first_mismatch >= 0) {
      traced.stop_after = static_cast<uint64_t>(r.first_mismatch) + 64;
      traced.vcd_from = r.first_mismatch_cycle > kTraceBefore ? r.first_mismatch_cycle - kTraceBefore : 0;
    }
    ace_equiv(traced, nullptr);
    fmt::print("  VCD of the failing run (cycles {} to completion {}): {}\n", traced.vcd_from,
               traced.stop_after ? fmt::format("{}", traced.stop_after) : "the end", traced.vcd);
  }
  std::cout.flush();
  return r.rtl_failed ? 2 : 3;
}

}  // namespace fabricvp::tb
