// Sparse TSP SRAM: 220 MiB = 720,896 vectors of 320 B in 176 banks
// ([hemisphere, slice, bank] x 4096 offsets).
//
// A bank's 1.25 MiB of host address space is reserved (anonymous mmap) on the
// first write to it; the operating system backs only the 4-KiB pages that are
// actually written, zero-filled, so untouched memory costs nothing and needs no
// clearing. Reads of untouched banks return a shared zero vector. Fixed cost per
// chip: 176 bank pointers plus a 64-bit written-page mask per bank (2.8 KiB).
// The `pages` statistic counts written 64-vector (20-KiB) pages.
#pragma once

#include <array>
#include <cstdint>

#include "models/tsp/isa.h"

namespace fabricvp::tsp {

class Sram {
 public:
  static constexpr uint32_t kPageVectors = 64;
  static constexpr uint32_t kPageBytes = kPageVectors * kVectorBytes;
  static constexpr uint32_t kBankCount = kHemispheres * kSlices * kBanks;  // 176
  static constexpr uint64_t kBankBytes = static_cast<uint64_t>(kOffsets) * kVectorBytes;

  Sram() = default;
  ~Sram();
  Sram(const Sram&) = delete;
  Sram& operator=(const Sram&) = delete;

  /// Vector `v` for reading (a shared zero vector if its bank was never written). v < kVectors.
  const uint8_t* read(uint32_t v) const {
    const uint8_t* bank = m_banks[v / kOffsets];
    return bank ? bank + static_cast<uint64_t>(v % kOffsets) * kVectorBytes : zero();
  }
  /// Vector `v` for writing.
  uint8_t* write(uint32_t v) {
    uint32_t b = v / kOffsets, o = v % kOffsets;
    if (!m_banks[b]) map(b);
    m_written[b] |= 1ULL << (o / kPageVectors);
    return m_banks[b] + static_cast<uint64_t>(o) * kVectorBytes;
  }

  /// Byte-addressed access (host loads and checks). Throws std::out_of_range past 220 MiB.
  void read_bytes(uint64_t addr, uint8_t* out, uint64_t len) const;
  void write_bytes(uint64_t addr, const uint8_t* in, uint64_t len);

  /// Written 20-KiB pages.
  uint64_t pages() const;
  /// Host memory this SRAM holds: resident OS pages of its banks plus the fixed tables.
  uint64_t bytes_allocated() const;
  /// Give the memory back (contents read as zeros afterwards).
  void release();

 private:
  static const uint8_t* zero();
  void map(uint32_t bank);
  std::array<uint8_t*, kBankCount> m_banks{};
  std::array<uint64_t, kBankCount> m_written{};  // bit p: page p of the bank was written
};

}  // namespace fabricvp::tsp
