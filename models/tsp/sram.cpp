#include "models/tsp/sram.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

namespace fabricvp::tsp {

const uint8_t* Sram::zero() {
  static const uint8_t z[kVectorBytes] = {};
  return z;
}

Sram::~Sram() { release(); }

void Sram::release() {
  for (uint8_t*& b : m_banks)
    if (b) {
      munmap(b, kBankBytes);
      b = nullptr;
    }
}

void Sram::map(uint32_t bank) {
  void* p = mmap(nullptr, kBankBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  m_banks[bank] = static_cast<uint8_t*>(p);
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

uint64_t Sram::pages() const {
  uint64_t n = 0;
  for (uint64_t m : m_written) n += static_cast<uint64_t>(__builtin_popcountll(m));
  return n;
}

uint64_t Sram::bytes_allocated() const {
  // Resident OS pages of the mapped banks (what the host really holds).
  static const long page = sysconf(_SC_PAGESIZE);
  const size_t n = (kBankBytes + page - 1) / page;
  std::vector<unsigned char> in(n);
  uint64_t resident = 0;
  for (uint8_t* b : m_banks) {
    if (!b || mincore(b, kBankBytes, in.data()) != 0) continue;
    for (unsigned char v : in) resident += (v & 1) ? page : 0;
  }
  return sizeof(*this) + resident;
}

}  // namespace fabricvp::tsp
