// An RV32IMAC(+F) hart: machine and user mode, Zicsr, traps, physical memory
// protection, a cycle model. Instructions are decoded once and cached per
// 4 KiB page of code (shared by the harts of one AddressMap); memory is read
// and written through cached windows of host memory, so the common path of a
// load or store is a bounds check and a memcpy: no allocation and no virtual
// call per instruction.
//
// The hart is not a SystemC module: the model that owns it (the standalone
// runner, a PsPIN cluster) decides when it runs, for how many cycles, and
// what a stop means.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/riscv/isa.h"
#include "models/riscv/memory.h"

namespace fabricvp::riscv {

enum class Priv : uint8_t { User = 0, Machine = 3 };

/// An address range user mode may access (see Hart::set_user_ranges).
struct UserRange {
  uint32_t lo = 0;
  uint64_t hi = 0;    // exclusive
  uint8_t perms = 0;  // Perm bits
};

/// Exception causes (mcause, privileged spec table 3.6).
enum Cause : uint32_t {
  kInsnMisaligned = 0,
  kInsnAccessFault = 1,
  kIllegalInsn = 2,
  kBreakpoint = 3,
  kLoadMisaligned = 4,
  kLoadAccessFault = 5,
  kStoreMisaligned = 6,
  kStoreAccessFault = 7,
  kEcallU = 8,
  kEcallM = 11,
};
const char* cause_name(uint32_t cause);

/// Cycles per instruction class (docs/riscv.md, "Cycle model"). A memory
/// access adds its region's load or store cycles and any bank stall.
struct CycleModel {
  uint16_t alu = 1;           // integer, LUI/AUIPC, CSR, fence, system
  uint16_t jump = 2;          // JAL, JALR
  uint16_t branch_taken = 3;  // a not-taken branch costs alu
  uint16_t mul = 1;           // MUL
  uint16_t mulh = 5;          // MULH, MULHSU, MULHU
  uint16_t div = 32;          // DIV, DIVU, REM, REMU
  uint16_t load = 1;
  uint16_t store = 1;
  uint16_t amo = 2;  // LR, SC and AMOs; the bank is held for 2 cycles
  uint16_t fpu = 1;  // F arithmetic except:
  uint16_t fdiv = 15;
  uint16_t fsqrt = 15;
  uint16_t fma = 2;
};

struct HartConfig {
  uint32_t hartid = 0;
  bool f = false;  // the F extension (rv32imafc); off: rv32imac
  CycleModel cycles;
};

enum class Stop : uint8_t {
  None,
  Limit,      // the cycle or instruction budget of run() is used up
  Requested,  // a device asked for it (request_stop)
  Trap,       // a trap with trap_exits() set
};

struct TrapInfo {
  uint32_t cause = 0;
  uint32_t epc = 0;
  uint32_t tval = 0;
  Priv priv = Priv::Machine;  // the privilege the trap came from
};

/// Decoded instructions per 4 KiB page, shared by the harts of one map. Pages
/// are never freed while the cache lives; invalidate() marks every slot
/// undecoded (FENCE.I), so harts may keep pointers into pages.
class DecodeCache {
 public:
  static constexpr uint32_t kPageBytes = 4096;
  struct Page {
    Insn slot[kPageBytes / 2];
  };
  Page& page(uint32_t page_base);
  void invalidate();

 private:
  std::unordered_map<uint32_t, std::unique_ptr<Page>> pages_;
};

class alignas(64) Hart {
 public:
  Hart(AddressMap& map, DecodeCache& cache, const HartConfig& cfg);

  /// Runs until `cycle() >= cycle_limit`, `instret() >= instret_limit`, a
  /// device asks to stop, or (with trap_exits) a trap.
  Stop run(uint64_t cycle_limit, uint64_t instret_limit = UINT64_MAX);

  // ---- architectural state
  uint32_t pc() const { return pc_; }
  void set_pc(uint32_t pc) { pc_ = pc; }
  uint32_t x(unsigned i) const { return x_[i]; }
  void set_x(unsigned i, uint32_t v) {
    if (i) x_[i] = v;
  }
  uint32_t f(unsigned i) const { return f_[i]; }
  void set_f(unsigned i, uint32_t v) { f_[i] = v; }
  Priv priv() const { return priv_; }
  void set_priv(Priv p);

  /// CSR read or write as the hart's software would see it in machine mode;
  /// false if the CSR does not exist. Used by tests and the models that
  /// configure a hart (PMP entries, mtvec).
  bool read_csr(uint16_t csr, uint32_t& value);
  bool write_csr(uint16_t csr, uint32_t value);

  // ---- time and counts
  uint64_t cycle() const { return cycle_; }
  void set_cycle(uint64_t c) { cycle_ = c; }
  void add_cycles(uint64_t c) { cycle_ += c; }
  uint64_t instret() const { return instret_; }
  uint64_t loads() const { return loads_; }
  uint64_t stores() const { return stores_; }
  uint64_t amos() const { return amos_; }

  // ---- control from the owning model and from devices
  void request_stop() { stop_ = Stop::Requested; }
  /// From a device callback: the device cannot serve the access yet (a
  /// command queue is full, a wait is not over). The instruction does not
  /// execute, run() returns Stop::Requested with the pc still at it, and the
  /// next run() executes it again. The device returns false.
  void request_retry() { retry_ = true; }
  /// Traps end run() with Stop::Trap (the state is left at the faulting
  /// instruction, last_trap() says why) instead of entering the trap handler.
  void set_trap_exits(bool on) { trap_exits_ = on; }
  const TrapInfo& last_trap() const { return trap_; }
  uint64_t traps() const { return traps_taken_; }

  /// Protection of user mode by a list of ranges instead of the PMP CSRs
  /// (a PsPIN switch grants a handler its packet, memories, scratchpads and
  /// code; with many clusters that is more ranges than 16 PMP entries hold).
  /// While set (non-null), user-mode accesses outside every range fault and
  /// the PMP CSRs are ignored; machine mode is unrestricted. The list must
  /// outlive its use; call again (or flush_windows) after changing it.
  void set_user_ranges(const std::vector<UserRange>* ranges) {
    user_ranges_ = ranges;
    flush_windows();
  }

  /// Forget cached memory windows (the map or the hart's PMP changed).
  void flush_windows();
  const HartConfig& config() const { return cfg_; }
  AddressMap& map() { return map_; }

 private:
  struct Window {
    uint32_t lo = 0;
    uint32_t span = 0;  // 0: empty window, every access takes the slow path
    uint8_t* host = nullptr;
    Banks* banks = nullptr;
    uint32_t bank_base = 0;
    uint16_t cycles = 0;
    bool readable = false;  // write windows: AMOs also need read permission
  };
  struct FetchWindow {
    uint32_t lo = 0;
    uint32_t span = 0;
    Insn* slots = nullptr;  // slot of address lo
    const uint8_t* host = nullptr;
    uint32_t host_lo = 0;  // address of host[0]
    uint32_t host_span = 0;
  };

  // memory
  template <typename T>
  bool load(uint32_t a, uint32_t& v);
  template <typename T>
  bool store(uint32_t a, uint32_t v);
  bool load_slow(uint32_t a, unsigned size, uint32_t& v);
  bool store_slow(uint32_t a, unsigned size, uint32_t v);
  bool access_slow(uint32_t a, unsigned size, uint32_t& v, bool is_store);
  bool access_window(const Window& w, uint32_t a, unsigned size, uint32_t& v, bool is_store, uint64_t& count);
  uint8_t* amo_slot(uint32_t a, bool is_lr);
  // An LR, SC or AMO at `a` through window w: the bank held 2 cycles, the region's cycles, the count.
  void amo_access(const Window& w, uint32_t a) {
    if (w.banks) cycle_ = w.banks->access(a - w.bank_base, cycle_, 2);
    cycle_ += w.cycles;
    ++amos_;
  }
  bool refill(Window& w, uint32_t a, uint8_t access, const Region*& region);
  bool pmp_window(uint32_t a, uint8_t access, Priv p, uint32_t& lo, uint64_t& hi) const;
  Priv data_priv() const;
  bool refill_fetch();
  bool decode_at(Insn& slot);

  bool spin(const Insn& amo, uint32_t pc, uint32_t addr, uint32_t v, uint64_t cycle_limit, uint64_t instret_limit);

  // traps and CSRs
  void trap(uint32_t cause, uint32_t tval);
  bool csr_access(uint16_t csr, uint32_t& value, uint32_t wdata, unsigned mode, bool write);
  uint32_t mstatus_read() const;

  // F extension
  bool fp_enabled() const { return cfg_.f && ((mstatus_ >> 13) & 3) != 0; }
  bool exec_fp(const Insn& in);
  void fp_dirty() { mstatus_ |= 3u << 13; }

  // What every instruction touches first, in the object's first lines (a
  // PsPIN cluster runs its harts a quantum of a few instructions each in
  // turn, so each run() starts with the hart out of the host's L1 cache).
  HartConfig cfg_;  // the cycle model
  uint32_t pc_ = 0;
  Stop stop_ = Stop::None;
  bool retry_ = false;
  bool trap_exits_ = false;
  Priv priv_ = Priv::Machine;
  uint64_t cycle_ = 0;
  uint64_t instret_ = 0;
  uint32_t mstatus_ = 0;  // MIE, MPIE, MPP, FS, MPRV (SD is derived)
  uint32_t frm_ = 0;
  FetchWindow fetch_;
  Window rd_, wr_;
  uint32_t fflags_ = 0;
  uint64_t loads_ = 0, stores_ = 0;
  uint32_t x_[32] = {};
  uint32_t f_[32] = {};
  uint64_t amos_ = 0;
  Window rd_prev_, wr_prev_;  ///< the windows rd_ and wr_ last replaced (a handler alternating two buffers)

  AddressMap& map_;
  DecodeCache& cache_;
  TrapInfo trap_;
  uint64_t traps_taken_ = 0;

  // the other CSRs
  uint32_t mtvec_ = 0, mscratch_ = 0, mepc_ = 0, mcause_ = 0, mtval_ = 0;
  uint32_t mie_ = 0, mcounteren_ = 0, mcountinhibit_ = 0;
  std::array<uint8_t, 16> pmpcfg_{};
  std::array<uint32_t, 16> pmpaddr_{};
  bool pmp_active_ = false;  // any entry enabled
  const std::vector<UserRange>* user_ranges_ = nullptr;

  // LR/SC reservation
  bool resv_valid_ = false;
  uint32_t resv_addr_ = 0;
  uint32_t resv_value_ = 0;
};

}  // namespace fabricvp::riscv
