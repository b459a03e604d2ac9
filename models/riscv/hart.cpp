#include "models/riscv/hart.h"

#include <algorithm>
#include <cstring>

#include "models/riscv/fpu.h"

namespace fabricvp::riscv {

namespace {

// CSR numbers (privileged spec, table 2.2-2.5).
enum : uint16_t {
  kFflags = 0x001,
  kFrm = 0x002,
  kFcsr = 0x003,
  kCycle = 0xC00,
  kTime = 0xC01,
  kInstret = 0xC02,
  kCycleH = 0xC80,
  kTimeH = 0xC81,
  kInstretH = 0xC82,
  kMvendorid = 0xF11,
  kMarchid = 0xF12,
  kMimpid = 0xF13,
  kMhartid = 0xF14,
  kMconfigptr = 0xF15,
  kMstatus = 0x300,
  kMisa = 0x301,
  kMie = 0x304,
  kMtvec = 0x305,
  kMcounteren = 0x306,
  kMstatush = 0x310,
  kMcountinhibit = 0x320,
  kMscratch = 0x340,
  kMepc = 0x341,
  kMcause = 0x342,
  kMtval = 0x343,
  kMip = 0x344,
  kPmpcfg0 = 0x3A0,
  kPmpaddr0 = 0x3B0,
  kMcycle = 0xB00,
  kMinstret = 0xB02,
  kMcycleH = 0xB80,
  kMinstretH = 0xB82,
};

constexpr uint32_t kMstatusMIE = 1u << 3;
constexpr uint32_t kMstatusMPIE = 1u << 7;
constexpr uint32_t kMstatusMPP = 3u << 11;
constexpr uint32_t kMstatusFS = 3u << 13;
constexpr uint32_t kMstatusMPRV = 1u << 17;

}  // namespace

const char* cause_name(uint32_t cause) {
  switch (cause) {
    case kInsnMisaligned: return "instruction address misaligned";
    case kInsnAccessFault: return "instruction access fault";
    case kIllegalInsn: return "illegal instruction";
    case kBreakpoint: return "breakpoint";
    case kLoadMisaligned: return "load address misaligned";
    case kLoadAccessFault: return "load access fault";
    case kStoreMisaligned: return "store/AMO address misaligned";
    case kStoreAccessFault: return "store/AMO access fault";
    case kEcallU: return "environment call from U-mode";
    case kEcallM: return "environment call from M-mode";
  }
  return "unknown cause";
}

DecodeCache::Page& DecodeCache::page(uint32_t page_base) {
  auto& p = pages_[page_base];
  if (!p) p = std::make_unique<Page>();
  return *p;
}

void DecodeCache::invalidate() {
  for (auto& [base, p] : pages_) std::fill(std::begin(p->slot), std::end(p->slot), Insn{});
}

Hart::Hart(AddressMap& map, DecodeCache& cache, const HartConfig& cfg) : cfg_(cfg), map_(map), cache_(cache) {}

void Hart::set_priv(Priv p) {
  priv_ = p;
  flush_windows();
}

void Hart::flush_windows() {
  rd_ = rd_prev_ = Window{};
  wr_ = wr_prev_ = Window{};
  fetch_ = FetchWindow{};
}

Priv Hart::data_priv() const {
  if (priv_ == Priv::Machine && (mstatus_ & kMstatusMPRV))
    return ((mstatus_ & kMstatusMPP) >> 11) == 3 ? Priv::Machine : Priv::User;
  return priv_;
}

// ---- physical memory protection (privileged spec 3.7)

bool Hart::pmp_window(uint32_t a, uint8_t access, Priv p, uint32_t& lo, uint64_t& hi) const {
  uint64_t wlo = 0;
  hi = uint64_t{1} << 32;
  if (user_ranges_) {
    if (p == Priv::Machine) {
      lo = 0;
      return true;
    }
    bool allowed = false;
    for (const UserRange& r : *user_ranges_) {
      if (a >= r.lo && a < r.hi) {
        if (!allowed && (r.perms & access)) {
          allowed = true;
          wlo = std::max<uint64_t>(wlo, r.lo);
          hi = std::min(hi, r.hi);
        }
      } else if (r.hi <= a) {
        wlo = std::max<uint64_t>(wlo, r.hi);
      } else {
        hi = std::min<uint64_t>(hi, r.lo);
      }
    }
    lo = static_cast<uint32_t>(wlo);
    return allowed;
  }
  if (!pmp_active_) {
    lo = 0;
    return p == Priv::Machine;
  }
  for (unsigned i = 0; i < 16; ++i) {
    const uint8_t cfg = pmpcfg_[i];
    const unsigned mode = (cfg >> 3) & 3;
    if (mode == 0) continue;
    uint64_t elo, ehi;
    if (mode == 1) {  // TOR
      elo = i == 0 ? 0 : uint64_t{pmpaddr_[i - 1]} << 2;
      ehi = uint64_t{pmpaddr_[i]} << 2;
    } else if (mode == 2) {  // NA4
      elo = uint64_t{pmpaddr_[i]} << 2;
      ehi = elo + 4;
    } else {  // NAPOT: the trailing ones of pmpaddr give the size
      const uint32_t v = pmpaddr_[i];
      unsigned ones = 0;
      while (ones < 32 && ((v >> ones) & 1)) ++ones;
      const uint64_t size = uint64_t{8} << ones;
      elo = (uint64_t{v} << 2) & ~(size - 1);
      ehi = elo + size;
    }
    if (elo >= ehi) continue;
    if (a >= elo && a < ehi) {
      wlo = std::max(wlo, elo);
      hi = std::min(hi, ehi);
      lo = static_cast<uint32_t>(std::min<uint64_t>(wlo, UINT32_MAX));
      const bool locked = cfg & 0x80;
      return (p == Priv::Machine && !locked) || (cfg & access);
    }
    if (ehi <= a)
      wlo = std::max(wlo, ehi);
    else
      hi = std::min(hi, elo);
  }
  lo = static_cast<uint32_t>(wlo);
  return p == Priv::Machine;
}

bool Hart::refill(Window& w, uint32_t a, uint8_t access, const Region*& r) {
  r = map_.find(a);
  if (!r || !(r->perms & access)) return false;
  uint32_t lo;
  uint64_t hi;
  if (!pmp_window(a, access, data_priv(), lo, hi)) return false;
  if (!r->host) return true;  // a device: accessed through its callback, no window
  uint64_t wlo = std::max<uint64_t>(lo, r->base);
  uint64_t whi = std::min<uint64_t>(hi, uint64_t{r->base} + r->size);
  map_.clip(a, wlo, whi);
  w.lo = static_cast<uint32_t>(wlo);
  w.span = static_cast<uint32_t>(whi - wlo);
  w.host = r->host + (w.lo - r->base);
  w.banks = r->banks;
  w.bank_base = r->base;
  w.cycles = access == kRead ? r->load_cycles : r->store_cycles;
  w.readable = false;
  if (access == kWrite && (r->perms & kRead)) {
    uint32_t rlo;
    uint64_t rhi;
    w.readable = pmp_window(a, kRead, data_priv(), rlo, rhi) && rlo <= w.lo && rhi >= whi;
  }
  return true;
}

bool Hart::load_slow(uint32_t a, unsigned size, uint32_t& v) { return access_slow(a, size, v, false); }

bool Hart::store_slow(uint32_t a, unsigned size, uint32_t v) { return access_slow(a, size, v, true); }

// A load or store the cached windows do not cover: misaligned (done byte by
// byte, as RI5CY does in two accesses and QEMU does, one cycle more), to a
// device, to memory outside the windows (which it then refills), or a fault.
bool Hart::access_slow(uint32_t a, unsigned size, uint32_t& v, bool is_store) {
  uint64_t& count = is_store ? stores_ : loads_;
  if (a & (size - 1)) {
    uint32_t out = 0;
    for (unsigned i = 0; i < size; ++i) {
      uint32_t byte = (v >> (8 * i)) & 0xff;
      if (!access_slow(a + i, 1, byte, is_store)) return false;
      out |= byte << (8 * i);
    }
    count -= size - 1;
    cycle_ += 1;
    if (!is_store) v = out;
    return true;
  }
  const uint32_t fault = is_store ? kStoreAccessFault : kLoadAccessFault;
  const Region* r = nullptr;
  Window w;
  if (!refill(w, a, is_store ? kWrite : kRead, r)) {
    trap(fault, a);
    return false;
  }
  if (!r->host) {
    const bool ok = is_store ? r->device.write && r->device.write(r->device.ctx, *this, a - r->base, size, v)
                             : r->device.read && r->device.read(r->device.ctx, *this, a - r->base, size, v);
    if (!ok) {
      if (retry_) {
        retry_ = false;
        stop_ = Stop::Requested;
        return false;
      }
      trap(fault, a);
      return false;
    }
    cycle_ += is_store ? r->store_cycles : r->load_cycles;
    ++count;
    return true;
  }
  // The window replaced stays as the second one (a handler alternating
  // between two buffers); whatever invalidates windows empties both.
  Window& cached = is_store ? wr_ : rd_;
  (is_store ? wr_prev_ : rd_prev_) = cached;
  cached = w;
  return access_window(cached, a, size, v, is_store, count);
}

bool Hart::access_window(const Window& w, uint32_t a, unsigned size, uint32_t& v, bool is_store, uint64_t& count) {
  uint8_t* p = w.host + (a - w.lo);
  if (is_store) {
    std::memcpy(p, &v, size);
  } else {
    v = 0;
    std::memcpy(&v, p, size);
  }
  if (w.banks) cycle_ = w.banks->access(a - w.bank_base, cycle_, 1);
  cycle_ += w.cycles;
  ++count;
  return true;
}

template <typename T>
inline bool Hart::load(uint32_t a, uint32_t& v) {
  const Window* w = a - rd_.lo < rd_.span ? &rd_ : a - rd_prev_.lo < rd_prev_.span ? &rd_prev_ : nullptr;
  if (w && (a & (sizeof(T) - 1)) == 0) {
    T t;
    std::memcpy(&t, w->host + (a - w->lo), sizeof(T));
    v = static_cast<uint32_t>(static_cast<std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>>(t));
    if (w->banks) cycle_ = w->banks->access(a - w->bank_base, cycle_, 1);
    cycle_ += w->cycles;
    ++loads_;
    return true;
  }
  uint32_t raw;
  if (!load_slow(a, sizeof(T), raw)) return false;
  v = static_cast<uint32_t>(
      static_cast<std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>>(static_cast<T>(raw)));
  return true;
}

template <typename T>
inline bool Hart::store(uint32_t a, uint32_t v) {
  Window* w = a - wr_.lo < wr_.span ? &wr_ : a - wr_prev_.lo < wr_prev_.span ? &wr_prev_ : nullptr;
  if (w && (a & (sizeof(T) - 1)) == 0) {
    const T t = static_cast<T>(v);
    std::memcpy(w->host + (a - w->lo), &t, sizeof(T));
    if (w->banks) cycle_ = w->banks->access(a - w->bank_base, cycle_, 1);
    cycle_ += w->cycles;
    ++stores_;
    return true;
  }
  return store_slow(a, sizeof(T), v);
}

uint8_t* Hart::amo_slot(uint32_t a, bool is_lr) {
  if (a & 3) {
    // LR: load address misaligned; SC and AMOs: store/AMO address misaligned.
    trap(is_lr ? kLoadMisaligned : kStoreMisaligned, a);
    return nullptr;
  }
  if (is_lr) {
    if (a - rd_.lo >= rd_.span) {
      const Region* r = nullptr;
      Window w;
      if (!refill(w, a, kRead, r) || !r->host) {
        trap(kLoadAccessFault, a);
        return nullptr;
      }
      rd_ = w;
    }
    amo_access(rd_, a);
    return rd_.host + (a - rd_.lo);
  }
  if (a - wr_.lo >= wr_.span || !wr_.readable) {
    const Region* r = nullptr;
    Window w;
    if (!refill(w, a, kWrite, r) || !r->host || !w.readable) {
      trap(kStoreAccessFault, a);
      return nullptr;
    }
    wr_ = w;
  }
  amo_access(wr_, a);
  return wr_.host + (a - wr_.lo);
}

// ---- instruction fetch

bool Hart::refill_fetch() {
  if (pc_ & 1) {
    trap(kInsnMisaligned, pc_);
    return false;
  }
  const Region* r = map_.find(pc_);
  uint32_t lo;
  uint64_t hi;
  if (!r || !r->host || !(r->perms & kExec) || !pmp_window(pc_, kExec, priv_, lo, hi)) {
    trap(kInsnAccessFault, pc_);
    return false;
  }
  const uint32_t page_base = pc_ & ~(DecodeCache::kPageBytes - 1);
  uint64_t wlo = std::max<uint64_t>({lo, r->base, page_base});
  uint64_t whi = std::min<uint64_t>({hi, uint64_t{r->base} + r->size, uint64_t{page_base} + DecodeCache::kPageBytes});
  map_.clip(pc_, wlo, whi);
  DecodeCache::Page& pg = cache_.page(page_base);
  fetch_.lo = static_cast<uint32_t>(wlo);
  fetch_.span = static_cast<uint32_t>(whi - wlo);
  fetch_.slots = &pg.slot[(fetch_.lo - page_base) / 2];
  fetch_.host = r->host;
  fetch_.host_lo = r->base;
  fetch_.host_span = r->size;
  return true;
}

bool Hart::decode_at(Insn& slot) {
  uint16_t low;
  std::memcpy(&low, fetch_.host + (pc_ - fetch_.host_lo), 2);
  if (insn_length(low) == 2) {
    slot = decode16(low);
    return true;
  }
  const uint32_t hi_addr = pc_ + 2;
  uint16_t high;
  if (hi_addr - fetch_.lo < fetch_.span) {
    std::memcpy(&high, fetch_.host + (hi_addr - fetch_.host_lo), 2);
  } else {
    // The instruction straddles the window: its upper half needs its own check.
    const Region* r = map_.find(hi_addr);
    uint32_t lo;
    uint64_t hi;
    if (!r || !r->host || !(r->perms & kExec) || !pmp_window(hi_addr, kExec, priv_, lo, hi)) {
      trap(kInsnAccessFault, hi_addr);
      return false;
    }
    std::memcpy(&high, r->host + (hi_addr - r->base), 2);
    // Not cached: the next fetch of this address checks the upper half again.
    const Insn in = decode32(low | (uint32_t{high} << 16));
    slot = in;
    return true;
  }
  slot = decode32(low | (uint32_t{high} << 16));
  return true;
}

// ---- traps

void Hart::trap(uint32_t cause, uint32_t tval) {
  ++traps_taken_;
  cycle_ += cfg_.cycles.alu;
  trap_ = TrapInfo{cause, pc_, tval, priv_};
  resv_valid_ = false;
  const bool handler_unreachable = cause == kInsnAccessFault && pc_ == (mtvec_ & ~3u);
  if (trap_exits_ || handler_unreachable) {
    stop_ = Stop::Trap;
    return;
  }
  mepc_ = pc_;
  mcause_ = cause;
  mtval_ = tval;
  uint32_t s = mstatus_;
  s = (s & ~kMstatusMPIE) | ((s & kMstatusMIE) ? kMstatusMPIE : 0);
  s &= ~kMstatusMIE;
  s = (s & ~kMstatusMPP) | (static_cast<uint32_t>(priv_) << 11);
  mstatus_ = s;
  set_priv(Priv::Machine);
  pc_ = mtvec_ & ~3u;
}

// ---- CSRs

uint32_t Hart::mstatus_read() const {
  uint32_t s = mstatus_;
  if (((s & kMstatusFS) >> 13) == 3) s |= 1u << 31;  // SD
  return s;
}

bool Hart::read_csr(uint16_t csr, uint32_t& value) {
  const Priv saved = priv_;
  priv_ = Priv::Machine;
  const bool ok = csr_access(csr, value, 0, 2, false);
  priv_ = saved;
  return ok;
}

bool Hart::write_csr(uint16_t csr, uint32_t value) {
  const Priv saved = priv_;
  priv_ = Priv::Machine;
  uint32_t old;
  const bool ok = csr_access(csr, old, value, 1, true);
  priv_ = saved;
  if (ok) flush_windows();
  return ok;
}

// mode: 1 write, 2 set, 3 clear. Returns false for an illegal access.
bool Hart::csr_access(uint16_t csr, uint32_t& value, uint32_t wdata, unsigned mode, bool write) {
  const unsigned min_priv = (csr >> 8) & 3;
  if (static_cast<unsigned>(priv_) < min_priv) return false;
  if (write && ((csr >> 10) & 3) == 3) return false;  // read-only CSR

  auto update = [&](uint32_t old) { return mode == 1 ? wdata : mode == 2 ? (old | wdata) : (old & ~wdata); };
  const uint64_t mcycle = cycle_;
  const uint64_t minstret = instret_;

  // user counters: readable in U-mode when mcounteren allows
  auto counter_ok = [&](unsigned bit) { return priv_ == Priv::Machine || ((mcounteren_ >> bit) & 1); };

  if (csr >= kPmpcfg0 && csr <= kPmpcfg0 + 3) {
    const unsigned base = (csr - kPmpcfg0) * 4;
    uint32_t old = 0;
    for (unsigned k = 0; k < 4; ++k) old |= uint32_t{pmpcfg_[base + k]} << (8 * k);
    value = old;
    if (write) {
      const uint32_t nv = update(old);
      for (unsigned k = 0; k < 4; ++k) {
        if (pmpcfg_[base + k] & 0x80) continue;  // locked
        uint8_t c = static_cast<uint8_t>(nv >> (8 * k)) & 0x9f;
        if ((c & 3) == 2) c &= ~2;  // W without R is reserved: keep it off
        pmpcfg_[base + k] = c;
      }
      pmp_active_ = std::any_of(pmpcfg_.begin(), pmpcfg_.end(), [](uint8_t c) { return ((c >> 3) & 3) != 0; });
      flush_windows();
    }
    return true;
  }
  if (csr >= kPmpaddr0 && csr <= kPmpaddr0 + 15) {
    const unsigned i = csr - kPmpaddr0;
    value = pmpaddr_[i];
    if (write) {
      const bool locked =
          (pmpcfg_[i] & 0x80) || (i + 1 < 16 && (pmpcfg_[i + 1] & 0x80) && ((pmpcfg_[i + 1] >> 3) & 3) == 1);
      if (!locked) pmpaddr_[i] = update(pmpaddr_[i]);
      flush_windows();
    }
    return true;
  }
  // hardware performance counters and their events: present, always zero
  if ((csr >= 0xB03 && csr <= 0xB1F) || (csr >= 0xB83 && csr <= 0xB9F) || (csr >= 0x323 && csr <= 0x33F)) {
    value = 0;
    return true;
  }
  if ((csr >= 0xC03 && csr <= 0xC1F) || (csr >= 0xC83 && csr <= 0xC9F)) {
    if (!counter_ok(csr & 31)) return false;
    value = 0;
    return true;
  }

  switch (csr) {
    case kFflags:
    case kFrm:
    case kFcsr: {
      if (!fp_enabled()) return false;
      const uint32_t old = csr == kFflags ? fflags_ : csr == kFrm ? frm_ : (frm_ << 5) | fflags_;
      value = old;
      if (write) {
        const uint32_t nv = update(old);
        if (csr == kFflags) fflags_ = nv & 0x1f;
        if (csr == kFrm) frm_ = nv & 7;
        if (csr == kFcsr) {
          fflags_ = nv & 0x1f;
          frm_ = (nv >> 5) & 7;
        }
        fp_dirty();
      }
      return true;
    }
    case kCycle:
    case kTime:
      if (!counter_ok(csr == kCycle ? 0 : 1)) return false;
      value = static_cast<uint32_t>(mcycle);
      return true;
    case kCycleH:
    case kTimeH:
      if (!counter_ok(csr == kCycleH ? 0 : 1)) return false;
      value = static_cast<uint32_t>(mcycle >> 32);
      return true;
    case kInstret:
      if (!counter_ok(2)) return false;
      value = static_cast<uint32_t>(minstret);
      return true;
    case kInstretH:
      if (!counter_ok(2)) return false;
      value = static_cast<uint32_t>(minstret >> 32);
      return true;
    case kMvendorid:
    case kMarchid:
    case kMimpid:
    case kMconfigptr: value = 0; return true;
    case kMhartid: value = cfg_.hartid; return true;
    case kMstatus: {
      value = mstatus_read();
      if (write) {
        uint32_t mask = kMstatusMIE | kMstatusMPIE | kMstatusMPP | kMstatusMPRV;
        if (cfg_.f) mask |= kMstatusFS;
        uint32_t nv = (mstatus_ & ~mask) | (update(value) & mask);
        const uint32_t mpp = (nv & kMstatusMPP) >> 11;
        if (mpp != 0 && mpp != 3) nv &= ~kMstatusMPP;  // WARL: only U and M exist
        mstatus_ = nv;
        flush_windows();
      }
      return true;
    }
    case kMstatush: value = 0; return true;
    case kMisa: {
      // MXL = 1 (RV32), extensions A C (F) I M U
      value = (1u << 30) | (1u << 0) | (1u << 2) | (1u << 8) | (1u << 12) | (1u << 20) | (cfg_.f ? (1u << 5) : 0);
      return true;  // writes ignored (WARL, fixed)
    }
    case kMie:
      value = mie_;
      if (write) mie_ = update(mie_) & 0x888;
      return true;
    case kMip: value = 0; return true;
    case kMtvec:
      value = mtvec_;
      if (write) {
        uint32_t nv = update(mtvec_);
        if ((nv & 3) > 1) nv &= ~3u;  // modes 2 and 3 are reserved
        mtvec_ = nv;
      }
      return true;
    case kMcounteren:
      value = mcounteren_;
      if (write) mcounteren_ = update(mcounteren_) & 7;
      return true;
    case kMcountinhibit:
      value = mcountinhibit_;
      if (write) mcountinhibit_ = update(mcountinhibit_) & 5;
      return true;
    case kMscratch:
      value = mscratch_;
      if (write) mscratch_ = update(mscratch_);
      return true;
    case kMepc:
      value = mepc_;
      if (write) mepc_ = update(mepc_) & ~1u;
      return true;
    case kMcause:
      value = mcause_;
      if (write) mcause_ = update(mcause_);
      return true;
    case kMtval:
      value = mtval_;
      if (write) mtval_ = update(mtval_);
      return true;
    case kMcycle:
      value = static_cast<uint32_t>(mcycle);
      if (write) cycle_ = (mcycle & ~uint64_t{0xffffffff}) | update(value);
      return true;
    case kMcycleH:
      value = static_cast<uint32_t>(mcycle >> 32);
      if (write) cycle_ = (mcycle & 0xffffffff) | (uint64_t{update(value)} << 32);
      return true;
    case kMinstret:
      value = static_cast<uint32_t>(minstret);
      if (write) instret_ = (minstret & ~uint64_t{0xffffffff}) | update(value);
      return true;
    case kMinstretH:
      value = static_cast<uint32_t>(minstret >> 32);
      if (write) instret_ = (minstret & 0xffffffff) | (uint64_t{update(value)} << 32);
      return true;
  }
  return false;
}

// ---- the interpreter

// The AMO at `pc` (to address `addr`, done once: its result v is in its rd
// and left memory unchanged) followed by a conditional branch on v back to
// it: a core spinning on a lock. Nothing but this hart runs during run(), so
// each further round reads the same value, takes the branch and arbitrates
// for the same bank. The rounds are run here without decoding, each with the
// bank access, cycles and counts of the two instructions, up to the
// run's limit (returns true, the state as the interpreter would leave it);
// false when the next instruction is not such a branch.
bool Hart::spin(const Insn& amo, uint32_t pc, uint32_t addr, uint32_t v, uint64_t cycle_limit, uint64_t instret_limit) {
  const uint32_t boff = pc + amo.len - fetch_.lo;
  if (boff >= fetch_.span) return false;
  const Insn& br = fetch_.slots[boff >> 1];
  if (br.op < Op::Beq || br.op > Op::Bgeu || pc + amo.len + static_cast<uint32_t>(br.imm) != pc) return false;
  if (!branch_taken(br.op, br.rs1 == amo.rd ? v : x_[br.rs1], br.rs2 == amo.rd ? v : x_[br.rs2])) return false;
  const CycleModel& cm = cfg_.cycles;
  for (;;) {
    ++instret_;  // the AMO ends
    cycle_ += cm.amo;
    if (cycle_ >= cycle_limit || instret_ >= instret_limit) {
      pc_ = pc + amo.len;
      return true;
    }
    ++instret_;  // the branch back
    cycle_ += cm.branch_taken;
    if (cycle_ >= cycle_limit || instret_ >= instret_limit) {
      pc_ = pc;
      return true;
    }
    amo_access(wr_, addr);  // the AMO again (its window, as amo_slot left it)
  }
}

Stop Hart::run(uint64_t cycle_limit, uint64_t instret_limit) {
  stop_ = Stop::None;
  const CycleModel& cm = cfg_.cycles;
  while (stop_ == Stop::None) {
    if (cycle_ >= cycle_limit || instret_ >= instret_limit) return Stop::Limit;
    uint32_t off = pc_ - fetch_.lo;
    if (off >= fetch_.span) {
      if (!refill_fetch()) continue;  // trapped (or stopped)
      off = pc_ - fetch_.lo;
    }
    Insn* slot = fetch_.slots + (off >> 1);
    if (slot->op == Op::Undecoded) {
      Insn tmp;
      if (!decode_at(tmp)) continue;
      const bool straddles = tmp.len == 4 && (pc_ + 2) - fetch_.lo >= fetch_.span;
      if (straddles) {
        // execute from a copy, keep the slot undecoded
        static thread_local Insn scratch;
        scratch = tmp;
        slot = &scratch;
      } else {
        *slot = tmp;
      }
    }
    const Insn& in = *slot;
    uint32_t* const x = x_;
    const uint32_t pc = pc_;
    uint32_t next = pc + in.len;
    const uint32_t a = x[in.rs1];
    const uint32_t b = x[in.rs2];
    const uint32_t imm = static_cast<uint32_t>(in.imm);
    unsigned cost = cm.alu;
    uint32_t v;

    switch (in.op) {
      case Op::Undecoded:
      case Op::Illegal:
      case Op::Count: trap(kIllegalInsn, imm); continue;
      case Op::Lui: x[in.rd] = imm; break;
      case Op::Auipc: x[in.rd] = pc + imm; break;
      case Op::Jal:
        x[in.rd] = next;
        next = pc + imm;
        cost = cm.jump;
        break;
      case Op::Jalr:
        next = (a + imm) & ~1u;
        x[in.rd] = pc + in.len;
        cost = cm.jump;
        break;
      case Op::Beq:
        if (branch_taken(Op::Beq, a, b)) next = pc + imm, cost = cm.branch_taken;
        break;
      case Op::Bne:
        if (branch_taken(Op::Bne, a, b)) next = pc + imm, cost = cm.branch_taken;
        break;
      case Op::Blt:
        if (branch_taken(Op::Blt, a, b)) next = pc + imm, cost = cm.branch_taken;
        break;
      case Op::Bge:
        if (branch_taken(Op::Bge, a, b)) next = pc + imm, cost = cm.branch_taken;
        break;
      case Op::Bltu:
        if (branch_taken(Op::Bltu, a, b)) next = pc + imm, cost = cm.branch_taken;
        break;
      case Op::Bgeu:
        if (branch_taken(Op::Bgeu, a, b)) next = pc + imm, cost = cm.branch_taken;
        break;
      case Op::Lb:
        if (!load<int8_t>(a + imm, v)) continue;
        x[in.rd] = v;
        cost = cm.load;
        break;
      case Op::Lh:
        if (!load<int16_t>(a + imm, v)) continue;
        x[in.rd] = v;
        cost = cm.load;
        break;
      case Op::Lw:
        if (!load<uint32_t>(a + imm, v)) continue;
        x[in.rd] = v;
        cost = cm.load;
        break;
      case Op::Lbu:
        if (!load<uint8_t>(a + imm, v)) continue;
        x[in.rd] = v;
        cost = cm.load;
        break;
      case Op::Lhu:
        if (!load<uint16_t>(a + imm, v)) continue;
        x[in.rd] = v;
        cost = cm.load;
        break;
      case Op::Sb:
        if (!store<uint8_t>(a + imm, b)) continue;
        cost = cm.store;
        break;
      case Op::Sh:
        if (!store<uint16_t>(a + imm, b)) continue;
        cost = cm.store;
        break;
      case Op::Sw:
        if (!store<uint32_t>(a + imm, b)) continue;
        cost = cm.store;
        break;
      case Op::Addi: x[in.rd] = a + imm; break;
      case Op::Slti: x[in.rd] = static_cast<int32_t>(a) < static_cast<int32_t>(imm); break;
      case Op::Sltiu: x[in.rd] = a < imm; break;
      case Op::Xori: x[in.rd] = a ^ imm; break;
      case Op::Ori: x[in.rd] = a | imm; break;
      case Op::Andi: x[in.rd] = a & imm; break;
      case Op::Slli: x[in.rd] = a << (imm & 31); break;
      case Op::Srli: x[in.rd] = a >> (imm & 31); break;
      case Op::Srai: x[in.rd] = static_cast<uint32_t>(static_cast<int32_t>(a) >> (imm & 31)); break;
      case Op::Add: x[in.rd] = a + b; break;
      case Op::Sub: x[in.rd] = a - b; break;
      case Op::Sll: x[in.rd] = a << (b & 31); break;
      case Op::Slt: x[in.rd] = static_cast<int32_t>(a) < static_cast<int32_t>(b); break;
      case Op::Sltu: x[in.rd] = a < b; break;
      case Op::Xor: x[in.rd] = a ^ b; break;
      case Op::Srl: x[in.rd] = a >> (b & 31); break;
      case Op::Sra: x[in.rd] = static_cast<uint32_t>(static_cast<int32_t>(a) >> (b & 31)); break;
      case Op::Or: x[in.rd] = a | b; break;
      case Op::And: x[in.rd] = a & b; break;
      case Op::Fence:
      case Op::Wfi:  // no interrupts are modelled: WFI is a NOP, as the spec allows
        break;
      case Op::FenceI: cache_.invalidate(); break;
      case Op::Ecall: trap(priv_ == Priv::User ? kEcallU : kEcallM, 0); continue;
      case Op::Ebreak: trap(kBreakpoint, pc); continue;
      case Op::Mret: {
        if (priv_ != Priv::Machine) {
          trap(kIllegalInsn, imm);
          continue;
        }
        const uint32_t mpp = (mstatus_ & kMstatusMPP) >> 11;
        uint32_t s = mstatus_;
        s = (s & ~kMstatusMIE) | ((s & kMstatusMPIE) ? kMstatusMIE : 0);
        s |= kMstatusMPIE;
        s &= ~kMstatusMPP;  // MPP <- U (the least privileged mode)
        if (mpp != 3) s &= ~kMstatusMPRV;
        mstatus_ = s;
        next = mepc_;
        set_priv(mpp == 3 ? Priv::Machine : Priv::User);
        break;
      }
      case Op::Csrrw:
      case Op::Csrrs:
      case Op::Csrrc:
      case Op::Csrrwi:
      case Op::Csrrsi:
      case Op::Csrrci: {
        const bool is_imm = in.op >= Op::Csrrwi;
        const unsigned mode = is_imm ? static_cast<unsigned>(in.op) - static_cast<unsigned>(Op::Csrrwi) + 1
                                     : static_cast<unsigned>(in.op) - static_cast<unsigned>(Op::Csrrw) + 1;
        const uint32_t wdata = is_imm ? in.rs1 : a;
        const bool write = mode == 1 || in.rs1 != 0;
        uint32_t old = 0;
        // Raw instruction bits for mtval are not kept for CSR forms; report the CSR number.
        if (!csr_access(static_cast<uint16_t>(imm), old, wdata, mode, write)) {
          trap(kIllegalInsn, 0);
          continue;
        }
        x[in.rd] = old;
        break;
      }
      case Op::Mul:
        x[in.rd] = a * b;
        cost = cm.mul;
        break;
      case Op::Mulh:
        x[in.rd] = static_cast<uint32_t>(
            (static_cast<int64_t>(static_cast<int32_t>(a)) * static_cast<int64_t>(static_cast<int32_t>(b))) >> 32);
        cost = cm.mulh;
        break;
      case Op::Mulhsu:
        x[in.rd] = static_cast<uint32_t>(
            (static_cast<int64_t>(static_cast<int32_t>(a)) * static_cast<int64_t>(uint64_t{b})) >> 32);
        cost = cm.mulh;
        break;
      case Op::Mulhu:
        x[in.rd] = static_cast<uint32_t>((uint64_t{a} * uint64_t{b}) >> 32);
        cost = cm.mulh;
        break;
      case Op::Div: {
        const int32_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
        x[in.rd] = sb == 0 ? UINT32_MAX : (sa == INT32_MIN && sb == -1) ? a : static_cast<uint32_t>(sa / sb);
        cost = cm.div;
        break;
      }
      case Op::Divu:
        x[in.rd] = b == 0 ? UINT32_MAX : a / b;
        cost = cm.div;
        break;
      case Op::Rem: {
        const int32_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
        x[in.rd] = sb == 0 ? a : (sa == INT32_MIN && sb == -1) ? 0 : static_cast<uint32_t>(sa % sb);
        cost = cm.div;
        break;
      }
      case Op::Remu:
        x[in.rd] = b == 0 ? a : a % b;
        cost = cm.div;
        break;
      case Op::LrW: {
        uint8_t* p = amo_slot(a, true);
        if (!p) continue;
        std::memcpy(&v, p, 4);
        resv_valid_ = true;
        resv_addr_ = a;
        resv_value_ = v;
        x[in.rd] = v;
        cost = cm.amo;
        break;
      }
      case Op::ScW: {
        uint8_t* p = amo_slot(a, false);
        if (!p) continue;
        std::memcpy(&v, p, 4);
        const bool ok = resv_valid_ && resv_addr_ == a && v == resv_value_;
        if (ok) std::memcpy(p, &b, 4);
        resv_valid_ = false;
        x[in.rd] = ok ? 0 : 1;
        cost = cm.amo;
        break;
      }
      case Op::AmoswapW:
      case Op::AmoaddW:
      case Op::AmoxorW:
      case Op::AmoandW:
      case Op::AmoorW:
      case Op::AmominW:
      case Op::AmomaxW:
      case Op::AmominuW:
      case Op::AmomaxuW: {
        uint8_t* p = amo_slot(a, false);
        if (!p) continue;
        std::memcpy(&v, p, 4);
        uint32_t nv;
        switch (in.op) {
          case Op::AmoswapW: nv = b; break;
          case Op::AmoaddW: nv = v + b; break;
          case Op::AmoxorW: nv = v ^ b; break;
          case Op::AmoandW: nv = v & b; break;
          case Op::AmoorW: nv = v | b; break;
          case Op::AmominW: nv = static_cast<int32_t>(v) < static_cast<int32_t>(b) ? v : b; break;
          case Op::AmomaxW: nv = static_cast<int32_t>(v) > static_cast<int32_t>(b) ? v : b; break;
          case Op::AmominuW: nv = v < b ? v : b; break;
          default: nv = v > b ? v : b; break;
        }
        std::memcpy(p, &nv, 4);
        x[in.rd] = v;
        cost = cm.amo;
        // A lock's spin (an AMO that leaves memory as it was, then a branch on its result back to it):
        // nothing else runs during run(), so every further round reads and writes the same word.
        if (nv == v && in.rd != 0 && in.rd != in.rs1 && in.rd != in.rs2 &&
            spin(in, pc, a, v, cycle_limit, instret_limit))
          return Stop::Limit;
        break;
      }
      case Op::Flw:
        if (!fp_enabled()) {
          trap(kIllegalInsn, 0);
          continue;
        }
        if (!load<uint32_t>(a + imm, v)) continue;
        f_[in.rd] = v;
        fp_dirty();
        cost = cm.load;
        break;
      case Op::Fsw:
        if (!fp_enabled()) {
          trap(kIllegalInsn, 0);
          continue;
        }
        if (!store<uint32_t>(a + imm, f_[in.rs2])) continue;
        cost = cm.store;
        break;
      case Op::FaddS:
      case Op::FsubS:
      case Op::FmulS: {
        // Round-to-nearest-even results inline (fpu.h rne_fast, the path exec_fp takes first for them too);
        // the other rounding modes, NaNs, infinities and tiny results through exec_fp.
        const unsigned rm = in.rm == 7 ? frm_ : in.rm;
        uint32_t r, fl;
        if (rm == 0 && fp_enabled() &&
            fpu::rne_fast(f_[in.rs1], in.op == Op::FsubS ? f_[in.rs2] ^ 0x80000000u : f_[in.rs2], in.op == Op::FmulS, r,
                          fl)) {
          f_[in.rd] = r;
          fflags_ |= fl;
          fp_dirty();
        } else if (!fp_enabled() || !exec_fp(in)) {
          trap(kIllegalInsn, 0);
          continue;
        }
        cost = cm.fpu;
        break;
      }
      default:
        // the remaining F operations
        if (!fp_enabled() || !exec_fp(in)) {
          trap(kIllegalInsn, 0);
          continue;
        }
        cost = in.op == Op::FdivS                              ? cm.fdiv
               : in.op == Op::FsqrtS                           ? cm.fsqrt
               : (in.op >= Op::FmaddS && in.op <= Op::FnmaddS) ? cm.fma
                                                               : cm.fpu;
        break;
    }
    x[0] = 0;
    pc_ = next;
    ++instret_;
    cycle_ += cost;
  }
  return stop_;
}

}  // namespace fabricvp::riscv
