// RV32 instructions as the hart executes them: decoded once into an Insn
// (operation, register numbers, immediate, length), then cached by address.
//
// RV32I, M, A, C and F (with the F forms of C) are decoded; whether an
// extension is enabled is the hart's business (an instruction of a disabled
// extension raises an illegal-instruction trap there).
#pragma once

#include <cstdint>
#include <string>

namespace fabricvp::riscv {

enum class Op : uint8_t {
  Undecoded = 0,  // a cache slot not filled yet
  Illegal,        // imm holds the raw instruction bits (mtval)
  // RV32I
  Lui,
  Auipc,
  Jal,
  Jalr,
  Beq,
  Bne,
  Blt,
  Bge,
  Bltu,
  Bgeu,
  Lb,
  Lh,
  Lw,
  Lbu,
  Lhu,
  Sb,
  Sh,
  Sw,
  Addi,
  Slti,
  Sltiu,
  Xori,
  Ori,
  Andi,
  Slli,
  Srli,
  Srai,
  Add,
  Sub,
  Sll,
  Slt,
  Sltu,
  Xor,
  Srl,
  Sra,
  Or,
  And,
  Fence,
  FenceI,
  Ecall,
  Ebreak,
  Mret,
  Wfi,
  Csrrw,
  Csrrs,
  Csrrc,
  Csrrwi,
  Csrrsi,
  Csrrci,
  // M
  Mul,
  Mulh,
  Mulhsu,
  Mulhu,
  Div,
  Divu,
  Rem,
  Remu,
  // A
  LrW,
  ScW,
  AmoswapW,
  AmoaddW,
  AmoxorW,
  AmoandW,
  AmoorW,
  AmominW,
  AmomaxW,
  AmominuW,
  AmomaxuW,
  // F
  Flw,
  Fsw,
  FmaddS,
  FmsubS,
  FnmsubS,
  FnmaddS,
  FaddS,
  FsubS,
  FmulS,
  FdivS,
  FsqrtS,
  FsgnjS,
  FsgnjnS,
  FsgnjxS,
  FminS,
  FmaxS,
  FcvtWS,
  FcvtWuS,
  FmvXW,
  FeqS,
  FltS,
  FleS,
  FclassS,
  FcvtSW,
  FcvtSWu,
  FmvWX,
  Count
};

/// The extension an operation belongs to (I includes Zicsr and Zifencei).
enum class Ext : uint8_t { I, M, A, F };

Ext extension_of(Op op);
const char* op_name(Op op);

/// One decoded instruction. For CSR operations imm is the CSR number and rs1
/// the register (or, for the *i forms, the 5-bit immediate); for F operations
/// with a rounding mode, rm holds it; rs3 is the fused multiply-add's third
/// source. len is 2 (compressed) or 4.
struct Insn {
  Op op = Op::Undecoded;
  uint8_t rd = 0;
  uint8_t rs1 = 0;
  uint8_t rs2 = 0;
  uint8_t rs3 = 0;
  uint8_t rm = 0;
  uint8_t len = 4;
  uint8_t aq_rl = 0;
  int32_t imm = 0;
};
static_assert(sizeof(Insn) == 12, "Insn is part of the decode cache; keep it small");

/// Whether a conditional branch (Beq to Bgeu) with operands a and b is taken.
inline bool branch_taken(Op op, uint32_t a, uint32_t b) {
  switch (op) {
    case Op::Beq: return a == b;
    case Op::Bne: return a != b;
    case Op::Blt: return static_cast<int32_t>(a) < static_cast<int32_t>(b);
    case Op::Bge: return static_cast<int32_t>(a) >= static_cast<int32_t>(b);
    case Op::Bltu: return a < b;
    default: return a >= b;  // Bgeu
  }
}

/// Decodes a 32-bit instruction (bits[1:0] == 3).
Insn decode32(uint32_t bits);
/// Decodes a 16-bit compressed instruction (bits[1:0] != 3).
Insn decode16(uint16_t bits);
/// The instruction length given its low 16 bits: 2 or 4.
inline unsigned insn_length(uint16_t low) { return (low & 3) == 3 ? 4 : 2; }

/// A one-line disassembly, for traces and fault reports ("addi a0, a0, 4").
std::string disassemble(const Insn& in, uint32_t pc);

}  // namespace fabricvp::riscv
