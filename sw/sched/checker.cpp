#include "sw/sched/checker.h"

#include <fmt/format.h>

#include <algorithm>

namespace fabricvp::sched {

namespace {

struct Burst {
  uint64_t cycle;  // issue cycle on its chip
  uint32_t count;
};

struct MxmOp {  // an LW or MXM on its chip
  uint64_t cycle;
  tsp::Instr in;
};

}  // namespace

CheckReport check_schedule(const Machine& m, const std::vector<sw::Program>& programs) {
  CheckReport rep;
  const size_t chips = m.chips.size();
  // [chip][port] -> bursts issued there, by kind
  std::vector<std::vector<std::vector<Burst>>> sends(chips), recvs(chips);
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> alu(chips);    // [chip] -> [first, end) cycles
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> sxm(chips);    // [chip] -> TRANSPOSE [first, end) cycles
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> hostw(chips);  // [chip] -> HOSTW serialization, cycles
  std::vector<std::vector<MxmOp>> mxm(chips);                            // [chip] -> LW and MXM
  auto bad = [&](const std::string& where, uint64_t cycle, const std::string& what) {
    if (rep.violations.size() < 1000) rep.violations.push_back(Violation{where, cycle, what});
  };

  // 1. Issue cycles of every instruction (one cycle each; NOP n; WAIT c).
  for (size_t c = 0; c < chips && c < programs.size(); ++c) {
    const ChipSpec& chip = m.chips[c];
    sends[c].resize(chip.ports.size());
    recvs[c].resize(chip.ports.size());
    for (size_t q = 0; q < programs[c].queues.size(); ++q) {
      uint64_t cyc = 0;
      for (const tsp::Instr& in : programs[c].queues[q]) {
        const std::string where = fmt::format("{}.queue{}", chip.name, q);
        // SYNC/NOTIFY and the HAC-timed instructions (DESKEW, POLL, RUNTIME_DESKEW):
        // what follows depends on other queues or on the HAC, not on this stream.
        if (in.op == tsp::Op::SYNC || in.op == tsp::Op::NOTIFY || in.op == tsp::Op::DESKEW || in.op == tsp::Op::POLL ||
            in.op == tsp::Op::RUNTIME_DESKEW) {
          rep.skipped_sync = true;
          break;
        }
        switch (in.op) {
          case tsp::Op::WAIT:
            if (in.imm <= cyc) bad(where, cyc, fmt::format("WAIT {} is not later than its own issue cycle", in.imm));
            cyc = std::max(cyc, in.imm);
            continue;
          case tsp::Op::NOP: cyc += in.imm; continue;
          case tsp::Op::SEND:
          case tsp::Op::RECV: {
            if (in.port >= chip.ports.size() || chip.ports[in.port].peer == kNoChip) {
              bad(where, cyc, fmt::format("{} on port {}, which has no cable", tsp::op_name(in.op), in.port));
              break;
            }
            if (chip.ports[in.port].failed)
              bad(where, cyc, fmt::format("{} on port {}, whose cable is dead", tsp::op_name(in.op), in.port));
            (in.op == tsp::Op::SEND ? sends : recvs)[c][in.port].push_back(Burst{cyc, in.count});
            ++(in.op == tsp::Op::SEND ? rep.sends : rep.recvs);
            break;
          }
          case tsp::Op::ADD:
          case tsp::Op::COPY:
          case tsp::Op::MUL:
          case tsp::Op::SUB:
          case tsp::Op::MAX:
          case tsp::Op::RSQRT:
          case tsp::Op::EXP:
          case tsp::Op::SPLAT:
          case tsp::Op::NARROW:
          case tsp::Op::WIDEN:
            alu[c].emplace_back(cyc, cyc + in.count);  // a fly-by: one ALU per instruction
            ++rep.alu_ops;
            if (tsp::fly_out(in)) continue;  // the next instruction issues with it (docs/isa.md "Fly-by")
            break;
          case tsp::Op::TRANSPOSE:  // an SXM unit for ceil(n / rate) cycles (docs/isa.md "TRANSPOSE")
            sxm[c].emplace_back(cyc, cyc + (in.count + std::max(1u, chip.sxm_rate) - 1) / std::max(1u, chip.sxm_rate));
            ++rep.sxm_ops;
            break;
          case tsp::Op::LW:
          case tsp::Op::MXM: mxm[c].push_back(MxmOp{cyc, in}); break;
          case tsp::Op::HOSTW:  // the chip-to-host PCIe direction while it serializes the write
            hostw[c].emplace_back(cyc, chip.clock.cycle_at_or_after(chip.clock.ps(cyc) + chip.pcie.ps(in.count)));
            ++rep.hostw_ops;
            break;
          case tsp::Op::TRANSMIT:  // a link control code: no data slot, one issue cycle
            if (in.port >= chip.ports.size() || chip.ports[in.port].peer == kNoChip)
              bad(where, cyc, fmt::format("TRANSMIT on port {}, which has no cable", in.port));
            else if (chip.ports[in.port].failed)
              bad(where, cyc, fmt::format("TRANSMIT on port {}, whose cable is dead", in.port));
            break;
          default: break;
        }
        ++cyc;
      }
    }
  }

  // 2. Cables: bursts leave back to back at the earliest; the transmit buffer
  //    bounds how early a SEND may come. Each vector's arrival time.
  //    arrivals[chip][port] = arrival time of every vector of the stream, in order.
  std::vector<std::vector<std::vector<uint64_t>>> arrivals(chips);
  for (size_t c = 0; c < chips; ++c) arrivals[c].resize(m.chips[c].ports.size());
  for (size_t c = 0; c < chips; ++c) {
    const ChipSpec& chip = m.chips[c];
    for (size_t p = 0; p < sends[c].size(); ++p) {
      auto& list = sends[c][p];
      if (list.empty()) continue;
      std::sort(list.begin(), list.end(), [](const Burst& a, const Burst& b) { return a.cycle < b.cycle; });
      const PortSpec& ps = chip.ports[p];
      uint64_t free = 0;
      for (const Burst& b : list) {
        uint64_t ready = chip.clock.ps(b.cycle + chip.send_latency);
        uint64_t start = std::max(ready, free);
        if (start - ready > ps.out.rate.ps(chip.tx_buffer))
          bad(fmt::format("{}.c2c{}", chip.name, p), b.cycle,
              fmt::format("SEND of {} vectors while the cable is busy for {} ps more than its {}-packet transmit "
                          "buffer covers (two vectors in one slot)",
                          b.count, start - ready - ps.out.rate.ps(chip.tx_buffer), chip.tx_buffer));
        for (uint32_t i = 0; i < b.count; ++i)
          arrivals[ps.peer][ps.peer_port].push_back(start + ps.out.rate.ps(i + 1) + ps.out.latency_ps);
        free = start + ps.out.rate.ps(b.count);
      }
    }
  }

  // 3. Receive buffers: vector k of a port's stream is taken by the k-th RECV
  //    slot; it must have arrived, and at no arrival may the buffer hold more
  //    than rx_buffer vectors.
  for (size_t c = 0; c < chips; ++c) {
    const ChipSpec& chip = m.chips[c];
    for (size_t p = 0; p < chip.ports.size(); ++p) {
      const std::vector<uint64_t>& arr = arrivals[c][p];
      auto list = p < recvs[c].size() ? recvs[c][p] : std::vector<Burst>{};
      std::sort(list.begin(), list.end(), [](const Burst& a, const Burst& b) { return a.cycle < b.cycle; });
      const std::string where = fmt::format("{}.c2c{}", chip.name, p);
      if (list.empty() && arr.empty()) continue;
      const PortSpec& ps = chip.ports[p];
      const core::SerialRate* rate = nullptr;
      if (ps.peer != kNoChip) rate = &m.chips[ps.peer].ports[ps.peer_port].out.rate;
      std::vector<uint64_t> take;
      uint64_t busy_until = 0;
      bool any = false;
      for (const Burst& b : list) {
        uint64_t t0 = chip.clock.ps(b.cycle);
        if (any && t0 <= busy_until)
          bad(where, b.cycle, "RECV while the previous RECV on this port is still taking vectors");
        for (uint32_t i = 0; i < b.count; ++i) take.push_back(t0 + (rate ? rate->ps(i) : 0));
        busy_until = take.back();
        any = true;
      }
      for (size_t k = 0; k < take.size(); ++k) {
        if (k >= arr.size()) {
          bad(where, chip.clock.cycle_at_or_after(take[k]),
              fmt::format("RECV takes vector {} of the stream, which is never sent", k));
          break;
        }
        if (take[k] < arr[k]) {
          bad(where, chip.clock.cycle_at_or_after(take[k]),
              fmt::format("RECV takes vector {} before it arrives (at cycle {})", k,
                          chip.clock.cycle_at_or_after(arr[k])));
          break;
        }
      }
      if (arr.size() > take.size())
        bad(where, chip.clock.cycle_at_or_before(arr[take.size()]),
            fmt::format("{} vector(s) arrive that no RECV takes", arr.size() - take.size()));
      // Occupancy at each arrival: arrived so far minus taken strictly before.
      size_t taken = 0;
      for (size_t k = 0; k < arr.size(); ++k) {
        while (taken < take.size() && take[taken] < arr[k]) ++taken;
        if (k + 1 - std::min(taken, k + 1) > chip.rx_buffer) {
          bad(where, chip.clock.cycle_at_or_before(arr[k]),
              fmt::format("receive buffer overflow: vector {} arrives with {} waiting (rx_buffer_vectors = {})", k,
                          k - taken, chip.rx_buffer));
          break;
        }
      }
    }
  }

  // 4. ALUs and SXM units: never more concurrent ALU bursts (ADD, COPY, the
  //    VXM operations) than the chip has ALUs, nor TRANSPOSEs than SXM units.
  auto occupancy = [&](const std::vector<std::pair<uint64_t, uint64_t>>& iv, uint32_t units, const std::string& where,
                       const char* what, const char* unit) {
    std::vector<std::pair<uint64_t, int>> ev;
    for (const auto& [s, e] : iv) {
      ev.emplace_back(s, +1);
      ev.emplace_back(e, -1);
    }
    std::sort(ev.begin(), ev.end());  // ends (-1) sort before starts at the same cycle
    int live = 0;
    for (const auto& [t, d] : ev) {
      live += d;
      if (live > static_cast<int>(units)) {
        bad(where, t, fmt::format("{} {} at once; the chip has {} {}", live, what, units, unit));
        break;
      }
    }
  };
  for (size_t c = 0; c < chips; ++c) {
    const ChipSpec& chip = m.chips[c];
    if (!alu[c].empty()) occupancy(alu[c], chip.alus, chip.name, "ALU bursts", "ALUs");
    if (!sxm[c].empty()) occupancy(sxm[c], chip.sxm_units, chip.name + ".sxm", "TRANSPOSEs", "SXM units");
    if (!hostw[c].empty()) occupancy(hostw[c], 1, chip.name + ".pcie", "HOSTWs", "PCIe link to the host");
  }

  // 5. Matrix units (docs/isa.md "LW and MXM"): planes of fp16 unit u are 2u
  //    and 2u + 1, of int8 unit u just u. A plane streams one MXM at a time;
  //    LW loads one tile at a time and never into a buffer an MXM still
  //    reads; an MXM uses weights of its type and unit, once installed.
  for (size_t c = 0; c < chips; ++c) {
    auto& ops = mxm[c];
    if (ops.empty()) continue;
    const ChipSpec& chip = m.chips[c];
    std::stable_sort(ops.begin(), ops.end(), [](const MxmOp& a, const MxmOp& b) { return a.cycle < b.cycle; });
    struct Plane {
      uint64_t busy = 0, load = 0;
      uint64_t ready[2] = {0, 0}, read[2] = {0, 0};
      core::Dtype dt[2] = {core::Dtype::none, core::Dtype::none};
      uint32_t unit[2] = {0, 0};
    };
    std::vector<Plane> planes(chip.mxm_planes);
    for (const MxmOp& op : ops) {
      const tsp::Instr& in = op.in;
      const uint32_t n = in.dtype == core::Dtype::fp16 ? 2 : 1, first = in.port * n, b = in.c & 1;
      const std::string where = fmt::format("{}.m{}", chip.name, in.port);
      if (tsp::mxm_k(in.dtype) == 0 || first + n > planes.size() || in.c > 1) {
        bad(where, op.cycle, fmt::format("{} names no matrix unit of this chip", tsp::op_name(in.op)));
        continue;
      }
      ++rep.mxm_ops;
      std::string fault;  // the first rule the operation breaks (one report for both planes of an fp16 unit)
      for (uint32_t p = first; p < first + n && fault.empty(); ++p) {
        const Plane& pl = planes[p];
        if (in.op == tsp::Op::LW) {
          if (pl.load > op.cycle)
            fault = "LW while the previous LW is still loading the plane";
          else if (pl.read[b] > op.cycle)
            fault = fmt::format("LW into w{} while an MXM reads it until cycle {}", b, pl.read[b]);
        } else if (pl.busy > op.cycle) {
          fault = "MXM while the unit is still streaming";
        } else if (pl.dt[b] != in.dtype || pl.unit[b] != in.port) {
          fault = fmt::format("MXM on w{}, which holds no weights of this type and unit", b);
        } else if (pl.ready[b] > op.cycle) {
          fault = fmt::format("MXM before its weights are installed (cycle {})", pl.ready[b]);
        }
      }
      if (!fault.empty()) bad(where, op.cycle, fault);
      for (uint32_t p = first; p < first + n; ++p) {
        Plane& pl = planes[p];
        if (in.op == tsp::Op::LW) {
          pl.load = op.cycle + (in.count + chip.lw_rate - 1) / std::max(1u, chip.lw_rate);
          pl.ready[b] = pl.load + chip.lw_latency;
          pl.dt[b] = in.dtype;
          pl.unit[b] = in.port;
        } else {
          pl.busy = std::max(pl.busy, op.cycle + in.count);
          pl.read[b] = std::max(pl.read[b], op.cycle + in.count);
        }
      }
    }
  }
  return rep;
}

}  // namespace fabricvp::sched
