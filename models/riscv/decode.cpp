// RV32IMAFC decoder (The RISC-V Instruction Set Manual, Volume I, chapters
// 2, 7, 8, 11 and 16: base encodings, M, A, F and the compressed forms, which
// are expanded here into their 32-bit equivalents).
#include <fmt/format.h>

#include "models/riscv/isa.h"

namespace fabricvp::riscv {

namespace {

constexpr uint32_t bits(uint32_t v, int hi, int lo) { return (v >> lo) & ((1u << (hi - lo + 1)) - 1); }
constexpr int32_t sext(uint32_t v, int width) {
  const uint32_t m = 1u << (width - 1);
  return static_cast<int32_t>((v ^ m) - m);
}

Insn make(Op op, unsigned rd, unsigned rs1, unsigned rs2, int32_t imm, unsigned len = 4) {
  Insn in;
  in.op = op;
  in.rd = static_cast<uint8_t>(rd);
  in.rs1 = static_cast<uint8_t>(rs1);
  in.rs2 = static_cast<uint8_t>(rs2);
  in.imm = imm;
  in.len = static_cast<uint8_t>(len);
  return in;
}

Insn illegal(uint32_t raw, unsigned len) {
  Insn in = make(Op::Illegal, 0, 0, 0, static_cast<int32_t>(raw), len);
  return in;
}

bool valid_static_rm(unsigned rm) { return rm <= 4 || rm == 7; }

Insn decode_op_fp(uint32_t w) {
  const unsigned rd = bits(w, 11, 7), rs1 = bits(w, 19, 15), rs2 = bits(w, 24, 20);
  const unsigned f3 = bits(w, 14, 12), f7 = bits(w, 31, 25);
  auto rm_op = [&](Op op) {
    if (!valid_static_rm(f3)) return illegal(w, 4);
    Insn in = make(op, rd, rs1, rs2, 0);
    in.rm = static_cast<uint8_t>(f3);
    return in;
  };
  switch (f7) {
    case 0x00: return rm_op(Op::FaddS);
    case 0x04: return rm_op(Op::FsubS);
    case 0x08: return rm_op(Op::FmulS);
    case 0x0c: return rm_op(Op::FdivS);
    case 0x2c: return rs2 == 0 ? rm_op(Op::FsqrtS) : illegal(w, 4);
    case 0x10:
      if (f3 == 0) return make(Op::FsgnjS, rd, rs1, rs2, 0);
      if (f3 == 1) return make(Op::FsgnjnS, rd, rs1, rs2, 0);
      if (f3 == 2) return make(Op::FsgnjxS, rd, rs1, rs2, 0);
      return illegal(w, 4);
    case 0x14:
      if (f3 == 0) return make(Op::FminS, rd, rs1, rs2, 0);
      if (f3 == 1) return make(Op::FmaxS, rd, rs1, rs2, 0);
      return illegal(w, 4);
    case 0x60:
      if (rs2 == 0) return rm_op(Op::FcvtWS);
      if (rs2 == 1) return rm_op(Op::FcvtWuS);
      return illegal(w, 4);
    case 0x70:
      if (rs2 == 0 && f3 == 0) return make(Op::FmvXW, rd, rs1, 0, 0);
      if (rs2 == 0 && f3 == 1) return make(Op::FclassS, rd, rs1, 0, 0);
      return illegal(w, 4);
    case 0x50:
      if (f3 == 0) return make(Op::FleS, rd, rs1, rs2, 0);
      if (f3 == 1) return make(Op::FltS, rd, rs1, rs2, 0);
      if (f3 == 2) return make(Op::FeqS, rd, rs1, rs2, 0);
      return illegal(w, 4);
    case 0x68:
      if (rs2 == 0) return rm_op(Op::FcvtSW);
      if (rs2 == 1) return rm_op(Op::FcvtSWu);
      return illegal(w, 4);
    case 0x78:
      if (rs2 == 0 && f3 == 0) return make(Op::FmvWX, rd, rs1, 0, 0);
      return illegal(w, 4);
    default: return illegal(w, 4);
  }
}

}  // namespace

Insn decode32(uint32_t w) {
  const unsigned opcode = bits(w, 6, 0);
  const unsigned rd = bits(w, 11, 7), rs1 = bits(w, 19, 15), rs2 = bits(w, 24, 20);
  const unsigned f3 = bits(w, 14, 12), f7 = bits(w, 31, 25);
  const int32_t imm_i = sext(bits(w, 31, 20), 12);
  const int32_t imm_s = sext((bits(w, 31, 25) << 5) | bits(w, 11, 7), 12);
  const int32_t imm_b =
      sext((bits(w, 31, 31) << 12) | (bits(w, 7, 7) << 11) | (bits(w, 30, 25) << 5) | (bits(w, 11, 8) << 1), 13);
  const int32_t imm_u = static_cast<int32_t>(w & 0xfffff000u);
  const int32_t imm_j =
      sext((bits(w, 31, 31) << 20) | (bits(w, 19, 12) << 12) | (bits(w, 20, 20) << 11) | (bits(w, 30, 21) << 1), 21);

  switch (opcode) {
    case 0x37: return make(Op::Lui, rd, 0, 0, imm_u);
    case 0x17: return make(Op::Auipc, rd, 0, 0, imm_u);
    case 0x6f: return make(Op::Jal, rd, 0, 0, imm_j);
    case 0x67: return f3 == 0 ? make(Op::Jalr, rd, rs1, 0, imm_i) : illegal(w, 4);
    case 0x63: {
      static constexpr Op ops[8] = {Op::Beq, Op::Bne, Op::Illegal, Op::Illegal, Op::Blt, Op::Bge, Op::Bltu, Op::Bgeu};
      if (ops[f3] == Op::Illegal) return illegal(w, 4);
      return make(ops[f3], 0, rs1, rs2, imm_b);
    }
    case 0x03: {
      static constexpr Op ops[8] = {Op::Lb, Op::Lh, Op::Lw, Op::Illegal, Op::Lbu, Op::Lhu, Op::Illegal, Op::Illegal};
      if (ops[f3] == Op::Illegal) return illegal(w, 4);
      return make(ops[f3], rd, rs1, 0, imm_i);
    }
    case 0x23: {
      if (f3 > 2) return illegal(w, 4);
      static constexpr Op ops[3] = {Op::Sb, Op::Sh, Op::Sw};
      return make(ops[f3], 0, rs1, rs2, imm_s);
    }
    case 0x13:
      switch (f3) {
        case 0: return make(Op::Addi, rd, rs1, 0, imm_i);
        case 2: return make(Op::Slti, rd, rs1, 0, imm_i);
        case 3: return make(Op::Sltiu, rd, rs1, 0, imm_i);
        case 4: return make(Op::Xori, rd, rs1, 0, imm_i);
        case 6: return make(Op::Ori, rd, rs1, 0, imm_i);
        case 7: return make(Op::Andi, rd, rs1, 0, imm_i);
        case 1: return f7 == 0 ? make(Op::Slli, rd, rs1, 0, static_cast<int32_t>(rs2)) : illegal(w, 4);
        case 5:
          if (f7 == 0) return make(Op::Srli, rd, rs1, 0, static_cast<int32_t>(rs2));
          if (f7 == 0x20) return make(Op::Srai, rd, rs1, 0, static_cast<int32_t>(rs2));
          return illegal(w, 4);
      }
      return illegal(w, 4);
    case 0x33: {
      if (f7 == 0) {
        static constexpr Op ops[8] = {Op::Add, Op::Sll, Op::Slt, Op::Sltu, Op::Xor, Op::Srl, Op::Or, Op::And};
        return make(ops[f3], rd, rs1, rs2, 0);
      }
      if (f7 == 0x20) {
        if (f3 == 0) return make(Op::Sub, rd, rs1, rs2, 0);
        if (f3 == 5) return make(Op::Sra, rd, rs1, rs2, 0);
        return illegal(w, 4);
      }
      if (f7 == 1) {
        static constexpr Op ops[8] = {Op::Mul, Op::Mulh, Op::Mulhsu, Op::Mulhu, Op::Div, Op::Divu, Op::Rem, Op::Remu};
        return make(ops[f3], rd, rs1, rs2, 0);
      }
      return illegal(w, 4);
    }
    case 0x0f:
      if (f3 == 0) return make(Op::Fence, 0, 0, 0, 0);
      if (f3 == 1) return make(Op::FenceI, 0, 0, 0, 0);
      return illegal(w, 4);
    case 0x73: {
      if (f3 == 0) {
        if (rd != 0 || rs1 != 0) return illegal(w, 4);
        switch (bits(w, 31, 20)) {
          case 0x000: return make(Op::Ecall, 0, 0, 0, 0);
          case 0x001: return make(Op::Ebreak, 0, 0, 0, 0);
          case 0x302: return make(Op::Mret, 0, 0, 0, 0);
          case 0x105: return make(Op::Wfi, 0, 0, 0, 0);
        }
        return illegal(w, 4);
      }
      static constexpr Op ops[8] = {Op::Illegal, Op::Csrrw,  Op::Csrrs,  Op::Csrrc,
                                    Op::Illegal, Op::Csrrwi, Op::Csrrsi, Op::Csrrci};
      if (ops[f3] == Op::Illegal) return illegal(w, 4);
      Insn in = make(ops[f3], rd, rs1, 0, static_cast<int32_t>(bits(w, 31, 20)));
      return in;
    }
    case 0x2f: {
      if (f3 != 2) return illegal(w, 4);
      Op op;
      switch (bits(w, 31, 27)) {
        case 0x02:
          if (rs2 != 0) return illegal(w, 4);
          op = Op::LrW;
          break;
        case 0x03: op = Op::ScW; break;
        case 0x01: op = Op::AmoswapW; break;
        case 0x00: op = Op::AmoaddW; break;
        case 0x04: op = Op::AmoxorW; break;
        case 0x0c: op = Op::AmoandW; break;
        case 0x08: op = Op::AmoorW; break;
        case 0x10: op = Op::AmominW; break;
        case 0x14: op = Op::AmomaxW; break;
        case 0x18: op = Op::AmominuW; break;
        case 0x1c: op = Op::AmomaxuW; break;
        default: return illegal(w, 4);
      }
      Insn in = make(op, rd, rs1, rs2, 0);
      in.aq_rl = static_cast<uint8_t>(bits(w, 26, 25));
      return in;
    }
    case 0x07: return f3 == 2 ? make(Op::Flw, rd, rs1, 0, imm_i) : illegal(w, 4);
    case 0x27: return f3 == 2 ? make(Op::Fsw, 0, rs1, rs2, imm_s) : illegal(w, 4);
    case 0x43:
    case 0x47:
    case 0x4b:
    case 0x4f: {
      if (bits(w, 26, 25) != 0 || !valid_static_rm(f3)) return illegal(w, 4);
      const Op op = opcode == 0x43   ? Op::FmaddS
                    : opcode == 0x47 ? Op::FmsubS
                    : opcode == 0x4b ? Op::FnmsubS
                                     : Op::FnmaddS;
      Insn in = make(op, rd, rs1, rs2, 0);
      in.rs3 = static_cast<uint8_t>(bits(w, 31, 27));
      in.rm = static_cast<uint8_t>(f3);
      return in;
    }
    case 0x53: return decode_op_fp(w);
  }
  return illegal(w, 4);
}

Insn decode16(uint16_t h) {
  const uint32_t c = h;
  const unsigned quadrant = bits(c, 1, 0), f3 = bits(c, 15, 13);
  const unsigned rdp = bits(c, 4, 2) + 8, rs1p = bits(c, 9, 7) + 8;  // the x8..x15 fields
  const unsigned rd = bits(c, 11, 7), rs2 = bits(c, 6, 2);
  const int32_t imm6 = sext((bits(c, 12, 12) << 5) | bits(c, 6, 2), 6);
  // C.LW / C.SW / C.FLW / C.FSW offset: uimm[5:3] = c[12:10], uimm[2] = c[6], uimm[6] = c[5].
  const int32_t uimm_lw = static_cast<int32_t>((bits(c, 12, 10) << 3) | (bits(c, 6, 6) << 2) | (bits(c, 5, 5) << 6));
  // C.J / C.JAL offset[11|4|9:8|10|6|7|3:1|5] = c[12|11|10:9|8|7|6|5:3|2].
  const int32_t imm_j =
      sext((bits(c, 12, 12) << 11) | (bits(c, 11, 11) << 4) | (bits(c, 10, 9) << 8) | (bits(c, 8, 8) << 10) |
               (bits(c, 7, 7) << 6) | (bits(c, 6, 6) << 7) | (bits(c, 5, 3) << 1) | (bits(c, 2, 2) << 5),
           12);
  // C.BEQZ / C.BNEZ offset[8|4:3] = c[12:10], offset[7:6|2:1|5] = c[6:2].
  const int32_t imm_b = sext((bits(c, 12, 12) << 8) | (bits(c, 11, 10) << 3) | (bits(c, 6, 5) << 6) |
                                 (bits(c, 4, 3) << 1) | (bits(c, 2, 2) << 5),
                             9);
  if (c == 0) return illegal(c, 2);  // the all-zero parcel is defined illegal

  switch (quadrant) {
    case 0:
      switch (f3) {
        case 0: {
          // C.ADDI4SPN: nzuimm[5:4|9:6|2|3] = c[12:11|10:7|6|5].
          const int32_t nzuimm = static_cast<int32_t>((bits(c, 12, 11) << 4) | (bits(c, 10, 7) << 6) |
                                                      (bits(c, 6, 6) << 2) | (bits(c, 5, 5) << 3));
          if (nzuimm == 0) return illegal(c, 2);
          return make(Op::Addi, rdp, 2, 0, nzuimm, 2);
        }
        case 2: return make(Op::Lw, rdp, rs1p, 0, uimm_lw, 2);
        case 3: return make(Op::Flw, rdp, rs1p, 0, uimm_lw, 2);
        case 6: return make(Op::Sw, 0, rs1p, rdp, uimm_lw, 2);
        case 7: return make(Op::Fsw, 0, rs1p, rdp, uimm_lw, 2);
      }
      return illegal(c, 2);
    case 1:
      switch (f3) {
        case 0: return make(Op::Addi, rd, rd, 0, imm6, 2);
        case 1: return make(Op::Jal, 1, 0, 0, imm_j, 2);
        case 2: return make(Op::Addi, rd, 0, 0, imm6, 2);
        case 3:
          if (rd == 2) {
            // C.ADDI16SP: nzimm[9] = c[12], nzimm[4|6|8:7|5] = c[6|5|4:3|2].
            const int32_t nzimm = sext((bits(c, 12, 12) << 9) | (bits(c, 6, 6) << 4) | (bits(c, 5, 5) << 6) |
                                           (bits(c, 4, 3) << 7) | (bits(c, 2, 2) << 5),
                                       10);
            if (nzimm == 0) return illegal(c, 2);
            return make(Op::Addi, 2, 2, 0, nzimm, 2);
          }
          if (imm6 == 0) return illegal(c, 2);
          return make(Op::Lui, rd, 0, 0, static_cast<int32_t>(static_cast<uint32_t>(imm6) << 12), 2);
        case 4: {
          const unsigned sel = bits(c, 11, 10);
          if (sel == 0 || sel == 1) {
            if (bits(c, 12, 12)) return illegal(c, 2);  // shamt[5] = 1 is RV64 only
            return make(sel == 0 ? Op::Srli : Op::Srai, rs1p, rs1p, 0, static_cast<int32_t>(bits(c, 6, 2)), 2);
          }
          if (sel == 2) return make(Op::Andi, rs1p, rs1p, 0, imm6, 2);
          if (bits(c, 12, 12)) return illegal(c, 2);  // C.SUBW / C.ADDW are RV64 only
          static constexpr Op ops[4] = {Op::Sub, Op::Xor, Op::Or, Op::And};
          return make(ops[bits(c, 6, 5)], rs1p, rs1p, rdp, 0, 2);
        }
        case 5: return make(Op::Jal, 0, 0, 0, imm_j, 2);
        case 6: return make(Op::Beq, 0, rs1p, 0, imm_b, 2);
        case 7: return make(Op::Bne, 0, rs1p, 0, imm_b, 2);
      }
      return illegal(c, 2);
    case 2:
      switch (f3) {
        case 0:
          if (bits(c, 12, 12)) return illegal(c, 2);
          return make(Op::Slli, rd, rd, 0, static_cast<int32_t>(bits(c, 6, 2)), 2);
        case 2:
        case 3: {
          // C.LWSP / C.FLWSP: uimm[5] = c[12], uimm[4:2|7:6] = c[6:2].
          const int32_t uimm =
              static_cast<int32_t>((bits(c, 12, 12) << 5) | (bits(c, 6, 4) << 2) | (bits(c, 3, 2) << 6));
          if (f3 == 2 && rd == 0) return illegal(c, 2);
          return make(f3 == 2 ? Op::Lw : Op::Flw, rd, 2, 0, uimm, 2);
        }
        case 4:
          if (bits(c, 12, 12) == 0) {
            if (rs2 == 0) return rd == 0 ? illegal(c, 2) : make(Op::Jalr, 0, rd, 0, 0, 2);
            return make(Op::Add, rd, 0, rs2, 0, 2);
          }
          if (rd == 0 && rs2 == 0) return make(Op::Ebreak, 0, 0, 0, 0, 2);
          if (rs2 == 0) return make(Op::Jalr, 1, rd, 0, 0, 2);
          return make(Op::Add, rd, rd, rs2, 0, 2);
        case 6:
        case 7: {
          // C.SWSP / C.FSWSP: uimm[5:2|7:6] = c[12:7].
          const int32_t uimm = static_cast<int32_t>((bits(c, 12, 9) << 2) | (bits(c, 8, 7) << 6));
          return make(f3 == 6 ? Op::Sw : Op::Fsw, 0, 2, rs2, uimm, 2);
        }
      }
      return illegal(c, 2);
  }
  return illegal(c, 2);
}

Ext extension_of(Op op) {
  if (op >= Op::Mul && op <= Op::Remu) return Ext::M;
  if (op >= Op::LrW && op <= Op::AmomaxuW) return Ext::A;
  if (op >= Op::Flw && op <= Op::FmvWX) return Ext::F;
  return Ext::I;
}

const char* op_name(Op op) {
  static constexpr const char* names[] = {
      "?",        "illegal",  "lui",      "auipc",    "jal",       "jalr",      "beq",       "bne",       "blt",
      "bge",      "bltu",     "bgeu",     "lb",       "lh",        "lw",        "lbu",       "lhu",       "sb",
      "sh",       "sw",       "addi",     "slti",     "sltiu",     "xori",      "ori",       "andi",      "slli",
      "srli",     "srai",     "add",      "sub",      "sll",       "slt",       "sltu",      "xor",       "srl",
      "sra",      "or",       "and",      "fence",    "fence.i",   "ecall",     "ebreak",    "mret",      "wfi",
      "csrrw",    "csrrs",    "csrrc",    "csrrwi",   "csrrsi",    "csrrci",    "mul",       "mulh",      "mulhsu",
      "mulhu",    "div",      "divu",     "rem",      "remu",      "lr.w",      "sc.w",      "amoswap.w", "amoadd.w",
      "amoxor.w", "amoand.w", "amoor.w",  "amomin.w", "amomax.w",  "amominu.w", "amomaxu.w", "flw",       "fsw",
      "fmadd.s",  "fmsub.s",  "fnmsub.s", "fnmadd.s", "fadd.s",    "fsub.s",    "fmul.s",    "fdiv.s",    "fsqrt.s",
      "fsgnj.s",  "fsgnjn.s", "fsgnjx.s", "fmin.s",   "fmax.s",    "fcvt.w.s",  "fcvt.wu.s", "fmv.x.w",   "feq.s",
      "flt.s",    "fle.s",    "fclass.s", "fcvt.s.w", "fcvt.s.wu", "fmv.w.x"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Op::Count), "one name per Op");
  return names[static_cast<size_t>(op)];
}

std::string disassemble(const Insn& in, uint32_t pc) {
  static constexpr const char* abi[32] = {"zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
                                          "a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
                                          "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
  const char* n = op_name(in.op);
  const char* rd = abi[in.rd];
  const char* rs1 = abi[in.rs1];
  const char* rs2 = abi[in.rs2];
  switch (in.op) {
    case Op::Undecoded:
    case Op::Illegal: return fmt::format("illegal 0x{:08x}", static_cast<uint32_t>(in.imm));
    case Op::Lui:
    case Op::Auipc: return fmt::format("{} {}, 0x{:x}", n, rd, static_cast<uint32_t>(in.imm) >> 12);
    case Op::Jal: return fmt::format("jal {}, 0x{:x}", rd, pc + static_cast<uint32_t>(in.imm));
    case Op::Jalr: return fmt::format("jalr {}, {}({})", rd, in.imm, rs1);
    case Op::Beq:
    case Op::Bne:
    case Op::Blt:
    case Op::Bge:
    case Op::Bltu:
    case Op::Bgeu: return fmt::format("{} {}, {}, 0x{:x}", n, rs1, rs2, pc + static_cast<uint32_t>(in.imm));
    case Op::Lb:
    case Op::Lh:
    case Op::Lw:
    case Op::Lbu:
    case Op::Lhu: return fmt::format("{} {}, {}({})", n, rd, in.imm, rs1);
    case Op::Flw: return fmt::format("flw f{}, {}({})", in.rd, in.imm, rs1);
    case Op::Sb:
    case Op::Sh:
    case Op::Sw: return fmt::format("{} {}, {}({})", n, rs2, in.imm, rs1);
    case Op::Fsw: return fmt::format("fsw f{}, {}({})", in.rs2, in.imm, rs1);
    case Op::Addi:
    case Op::Slti:
    case Op::Sltiu:
    case Op::Xori:
    case Op::Ori:
    case Op::Andi:
    case Op::Slli:
    case Op::Srli:
    case Op::Srai: return fmt::format("{} {}, {}, {}", n, rd, rs1, in.imm);
    case Op::Fence:
    case Op::FenceI:
    case Op::Ecall:
    case Op::Ebreak:
    case Op::Mret:
    case Op::Wfi: return n;
    case Op::Csrrw:
    case Op::Csrrs:
    case Op::Csrrc: return fmt::format("{} {}, 0x{:x}, {}", n, rd, in.imm, rs1);
    case Op::Csrrwi:
    case Op::Csrrsi:
    case Op::Csrrci: return fmt::format("{} {}, 0x{:x}, {}", n, rd, in.imm, in.rs1);
    case Op::LrW: return fmt::format("lr.w {}, ({})", rd, rs1);
    default: break;
  }
  if (extension_of(in.op) == Ext::A) return fmt::format("{} {}, {}, ({})", n, rd, rs2, rs1);
  if (extension_of(in.op) == Ext::F) return fmt::format("{} r{}, r{}, r{}", n, in.rd, in.rs1, in.rs2);
  return fmt::format("{} {}, {}, {}", n, rd, rs1, rs2);
}

}  // namespace fabricvp::riscv
