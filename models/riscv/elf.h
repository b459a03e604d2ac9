// Loading RV32 ELF executables (libelf): their loadable segments, entry
// point and symbol table. Handlers are found by symbol name, as PsPIN's
// driver does; the standalone runner finds `tohost` and `fromhost` there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabricvp::riscv {

struct ElfSegment {
  uint32_t addr = 0;  // physical (load) address
  uint32_t memsz = 0;
  uint32_t flags = 0;          // PF_R / PF_W / PF_X
  std::vector<uint8_t> bytes;  // the file's bytes (filesz); the rest up to memsz is zero
};

struct ElfImage {
  std::string path;
  uint32_t entry = 0;
  uint32_t e_flags = 0;  // EF_RISCV_RVC, float ABI
  std::vector<ElfSegment> segments;
  std::map<std::string, uint32_t> symbols;  // defined function and object symbols

  std::optional<uint32_t> symbol(const std::string& name) const;
  /// Whether `addr` lies in a segment the ELF maps executable (PF_X): code, not data.
  bool executable(uint32_t addr) const;
};

/// Reads an ELF file; throws std::runtime_error naming the file and what is
/// wrong (not ELF, not 32-bit little-endian RISC-V, not an executable, a
/// segment past the 32-bit space, ...).
ElfImage read_elf(const std::string& path);

}  // namespace fabricvp::riscv
