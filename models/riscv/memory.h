// What a hart sees of the address space: regions of memory (host-backed, so
// the hart reads and writes them directly, as TLM's DMI does) and devices
// (memory-mapped registers, reached through a callback), each with its access
// latency and, for banked scratchpads, the banks that arbitrate the cores'
// accesses cycle by cycle.
//
// One AddressMap per view: the cores of one PsPIN cluster share a map (their
// own L1 is "local", the others' "remote"); the standalone runner has one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fabricvp::riscv {

class Hart;

/// Word-interleaved memory banks with per-cycle arbitration: an access to a
/// bank busy at the requested cycle waits for the first free one. Cores are
/// served in the order the simulation runs them, which is deterministic.
/// Each bank remembers its busy cycles over the kWindow cycles up to the
/// latest it has taken; older ones count as free.
class Banks {
 public:
  Banks(unsigned count, unsigned word_bytes);

  /// An access to byte `offset` (from the region's base) wanted at `cycle`,
  /// holding the bank for `hold` cycles (1 for a load or store, 2 for an AMO's
  /// read-modify-write). Returns the cycle at which the bank serves it.
  uint64_t access(uint32_t offset, uint64_t cycle, unsigned hold) {
    const uint32_t word = offset >> shift_;
    Bank& b = banks_[mask_ || count_ == 1 ? word & mask_ : word % count_];
    ++accesses_;
    if (cycle < b.next_free) return access_past(b, cycle, hold);
    // At or after every cycle the bank has taken: free, no search.
    for (unsigned k = 0; k < hold; ++k) set_busy(b, cycle + k);
    b.next_free = cycle + hold;
    return cycle;
  }

  unsigned count() const { return count_; }
  uint64_t accesses() const { return accesses_; }
  uint64_t conflicts() const { return conflicts_; }
  uint64_t stall_cycles() const { return stall_cycles_; }

 private:
  static constexpr unsigned kWindow = 256;  // cycles of history per bank
  // The busy bits are kept per aligned 64-cycle epoch in a ring of kEpochs
  // words, each tagged with its epoch: a word is cleared when a newer epoch
  // takes it, so nothing slides. kEpochs x 64 covers the window (which spans
  // at most 5 epochs) with no two of its epochs sharing a word.
  static constexpr unsigned kEpochs = 8;
  static_assert(kEpochs * 64 >= kWindow + 127, "the window's epochs must not share a word");
  struct Bank {
    uint64_t next_free = 0;  // every cycle from here on is free (the latest taken + 1)
    uint64_t epoch[kEpochs] = {};
    uint64_t busy[kEpochs] = {};
  };
  // The oldest cycle remembered: the window ends at the latest cycle taken.
  static uint64_t window_base(const Bank& b) { return b.next_free > kWindow ? b.next_free - kWindow : 0; }
  static bool is_busy(const Bank& b, uint64_t cycle) {
    if (cycle < window_base(b) || cycle >= b.next_free) return false;
    const uint64_t e = cycle >> 6, w = e % kEpochs;
    return b.epoch[w] == e && ((b.busy[w] >> (cycle & 63)) & 1);
  }
  // Marks `cycle` busy; next_free is raised by the caller afterwards.
  static void set_busy(Bank& b, uint64_t cycle) {
    const uint64_t e = cycle >> 6, w = e % kEpochs;
    if (b.epoch[w] != e) {  // an older epoch's word, out of the window by now
      b.epoch[w] = e;
      b.busy[w] = 0;
    }
    b.busy[w] |= uint64_t{1} << (cycle & 63);
  }
  uint64_t access_past(Bank& b, uint64_t cycle, unsigned hold);

  unsigned count_;
  unsigned mask_;  // count_ - 1 when count_ is a power of two (then no division), else 0
  unsigned shift_;
  std::vector<Bank> banks_;
  uint64_t accesses_ = 0;
  uint64_t conflicts_ = 0;
  uint64_t stall_cycles_ = 0;
};

/// A memory-mapped device. Offsets are from the region's base; size is 1, 2
/// or 4. Returning false makes the access a fault (load or store access
/// fault at the hart). A device may ask the hart to stop after the current
/// instruction (Hart::request_stop), e.g. when a handler ends.
struct Device {
  void* ctx = nullptr;
  bool (*read)(void* ctx, Hart& hart, uint32_t offset, unsigned size, uint32_t& value) = nullptr;
  bool (*write)(void* ctx, Hart& hart, uint32_t offset, unsigned size, uint32_t value) = nullptr;
};

enum Perm : uint8_t { kRead = 1, kWrite = 2, kExec = 4, kRWX = 7 };

struct Region {
  std::string name;
  uint32_t base = 0;
  uint32_t size = 0;        // bytes, a multiple of 4
  uint8_t* host = nullptr;  // backing store (memory), or null (device)
  Device device;
  uint8_t perms = kRWX;      // what any access may do, whatever the privilege
  uint16_t load_cycles = 0;  // cycles a load spends beyond the instruction's one
  uint16_t store_cycles = 0;
  Banks* banks = nullptr;  // banked memory: accesses arbitrate here
  uint32_t kind = 0;       // user tag (e.g. local L1, remote L1, L2, host), for statistics

  bool contains(uint32_t a) const { return a - base < size; }
  uint32_t last() const { return base + (size - 1); }
};

class AddressMap {
 public:
  /// Adds a region; regions must not overlap (a clear error names both).
  Region& add(Region r);
  /// Memory owned by the map (zero-filled, allocated lazily by the OS).
  Region& add_memory(const std::string& name, uint32_t base, uint32_t size, uint8_t perms = kRWX);
  /// A device inside a memory region (HTIF's tohost word in RAM): it takes
  /// precedence over the memory below it, and memory windows stop at it.
  Region& add_overlay(Region r);
  /// Narrows [lo, hi), an interval around `a` inside one region, so that it
  /// holds no overlay other than one containing `a`.
  void clip(uint32_t a, uint64_t& lo, uint64_t& hi) const;
  /// The region holding `addr` (an overlay first), or null.
  const Region* find(uint32_t addr) const;
  Region* find(uint32_t addr);
  const std::vector<std::unique_ptr<Region>>& regions() const { return regions_; }

  /// Copies bytes in or out through host-backed regions (program loading,
  /// result dumps); throws if a byte is not in memory.
  void write_bytes(uint32_t addr, const void* data, size_t n);
  void read_bytes(uint32_t addr, void* data, size_t n) const;

 private:
  struct Owned {
    void operator()(uint8_t* p) const;
  };
  std::vector<std::unique_ptr<Region>> regions_;  // sorted by base
  std::vector<std::unique_ptr<Region>> overlays_;
  std::vector<std::unique_ptr<uint8_t, Owned>> storage_;
};

}  // namespace fabricvp::riscv
