// Sparse TSP SRAM: 220 MiB = 720,896 vectors of 320 B, allocated in pages of
// 64 vectors (20 KiB) on first write. Reads of untouched memory return zeros
// without allocating. Fixed cost per chip: one table of 176 bank pointers
// (1.4 KiB); each touched bank adds a 64-entry page table (512 B); each touched
// page 20 KiB. See docs/architecture.md for the memory budget at scale.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "models/tsp/isa.h"

namespace fabricvp::tsp {

class Sram {
 public:
  static constexpr uint32_t kPageVectors = 64;
  static constexpr uint32_t kPageBytes = kPageVectors * kVectorBytes;
  static constexpr uint32_t kBankCount = kHemispheres * kSlices * kBanks;  // 176
  static constexpr uint32_t kPagesPerBank = kOffsets / kPageVectors;       // 64

  /// Vector `v` for reading (a shared zero vector if never written). v < kVectors.
  const uint8_t* read(uint32_t v) const {
    const PageTable* t = m_banks[v / kOffsets].get();
    if (!t) return zero();
    const uint8_t* page = (*t)[(v % kOffsets) / kPageVectors].get();
    return page ? page + (v % kPageVectors) * kVectorBytes : zero();
  }
  /// Vector `v` for writing (allocates its page on first use).
  uint8_t* write(uint32_t v) {
    std::unique_ptr<PageTable>& t = m_banks[v / kOffsets];
    if (!t) t = std::make_unique<PageTable>();
    PagePtr& page = (*t)[(v % kOffsets) / kPageVectors];
    if (!page) {
      // calloc: fresh memory from the OS is already zero, so no extra clearing pass.
      page.reset(static_cast<uint8_t*>(std::calloc(1, kPageBytes)));
      if (!page) throw std::bad_alloc();
      ++m_pages;
    }
    return page.get() + (v % kPageVectors) * kVectorBytes;
  }

  /// Byte-addressed access (host loads and checks). Throws std::out_of_range past 220 MiB.
  void read_bytes(uint64_t addr, uint8_t* out, uint64_t len) const;
  void write_bytes(uint64_t addr, const uint8_t* in, uint64_t len);

  uint64_t pages() const { return m_pages; }
  uint64_t bytes_allocated() const;

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  using PagePtr = std::unique_ptr<uint8_t, Free>;
  using PageTable = std::array<PagePtr, kPagesPerBank>;
  static const uint8_t* zero();
  std::array<std::unique_ptr<PageTable>, kBankCount> m_banks;
  uint64_t m_pages = 0;
};

}  // namespace fabricvp::tsp
