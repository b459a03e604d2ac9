// A bare-metal RV32 machine for `fabricvp riscv`: one hart in machine mode
// starting at the ELF's entry point, memory wherever the ELF's segments are
// (and always 64 MiB at 0x80000000), and the host-target interface (HTIF)
// that ISA test suites and QEMU's spike machine use:
//
//   tohost  (64-bit word at the ELF symbol `tohost`), acted on when its upper
//           half is written:
//             device 0, command 0, payload odd p:  exit, code p >> 1 (0 = pass)
//             device 1, command 1:                 write the byte (payload & 0xff) to the console
//   fromhost (symbol `fromhost`): the console's acknowledgement.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "models/riscv/elf.h"
#include "models/riscv/hart.h"
#include "models/riscv/memory.h"

namespace fabricvp::riscv {

struct BareMetalResult {
  enum class End { Exit, Trap, Limit } end = End::Limit;
  uint32_t exit_code = 0;  // End::Exit: the HTIF exit code (0 = pass)
  TrapInfo trap;           // End::Trap: the trap that had no usable handler
  uint64_t instructions = 0;
  uint64_t cycles = 0;
};

class BareMetal {
 public:
  static constexpr uint32_t kRamBase = 0x80000000u;
  static constexpr uint32_t kRamBytes = 64u << 20;

  BareMetal(const ElfImage& image, const HartConfig& cfg);
  ~BareMetal();

  /// Console bytes written through HTIF go here (default: stdout).
  void set_console(std::function<void(char)> out) { console_ = std::move(out); }
  BareMetalResult run(uint64_t max_instructions);

  Hart& hart() { return *hart_; }
  AddressMap& map() { return map_; }
  std::optional<uint32_t> tohost() const { return tohost_; }

 private:
  static bool htif_read(void* ctx, Hart& hart, uint32_t offset, unsigned size, uint32_t& value);
  static bool htif_write(void* ctx, Hart& hart, uint32_t offset, unsigned size, uint32_t value);

  struct HtifWord {
    BareMetal* self;
    bool is_tohost;
  };
  void htif_command(Hart& hart);

  HtifWord to_word_{this, true}, from_word_{this, false};
  AddressMap map_;
  DecodeCache cache_;
  std::unique_ptr<Hart> hart_;
  std::function<void(char)> console_;
  std::optional<uint32_t> tohost_, fromhost_;
  uint64_t tohost_value_ = 0;
  uint64_t fromhost_value_ = 0;
  bool exited_ = false;
  uint32_t exit_code_ = 0;
};

}  // namespace fabricvp::riscv
