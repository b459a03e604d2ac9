#include "models/tsp/sram.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabricvp::tsp {

const uint8_t* Sram::zero() {
  static const uint8_t z[kVectorBytes] = {};
  return z;
}

void Sram::read_bytes(uint64_t addr, uint8_t* out, uint64_t len) const {
  if (addr > kSramBytes || len > kSramBytes - addr) throw std::out_of_range("SRAM read past 220 MiB");
  while (len) {
    uint32_t v = static_cast<uint32_t>(addr / kVectorBytes);
    uint32_t off = static_cast<uint32_t>(addr % kVectorBytes);
    uint64_t n = std::min<uint64_t>(len, kVectorBytes - off);
    std::memcpy(out, read(v) + off, n);
    out += n;
    addr += n;
    len -= n;
  }
}

void Sram::write_bytes(uint64_t addr, const uint8_t* in, uint64_t len) {
  if (addr > kSramBytes || len > kSramBytes - addr) throw std::out_of_range("SRAM write past 220 MiB");
  while (len) {
    uint32_t v = static_cast<uint32_t>(addr / kVectorBytes);
    uint32_t off = static_cast<uint32_t>(addr % kVectorBytes);
    uint64_t n = std::min<uint64_t>(len, kVectorBytes - off);
    std::memcpy(write(v) + off, in, n);
    in += n;
    addr += n;
    len -= n;
  }
}

uint64_t Sram::bytes_allocated() const {
  uint64_t tables = 0;
  for (const auto& t : m_banks)
    if (t) tables += sizeof(PageTable);
  return sizeof(*this) + tables + m_pages * kPageBytes;
}

}  // namespace fabricvp::tsp
