// The RISC-V instruction-set simulator: the ISA test suite through
// `fabricvp riscv`, differential runs against QEMU (qemu-system-riscv32,
// spike machine, same ELF) on compiled and randomly generated programs, and
// unit tests of the decoder, the banks and the command line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "models/riscv/bare_metal.h"
#include "models/riscv/fpu.h"
#include "models/riscv/hart.h"
#include "models/riscv/isa.h"
#include "models/riscv/memory.h"

using namespace fabricvp;
using fabricvp::test::TempDir;

namespace {

struct Proc {
  int code = -1;
  std::string out;  // stdout only
  std::string err;
};

/// Runs a shell command; stdout and stderr captured separately.
Proc run_cmd(const std::string& cmd) {
  const std::string errfile =
      (std::filesystem::temp_directory_path() / ("fabricvp-riscv-err-" + std::to_string(::getpid()))).string();
  FILE* p = popen((cmd + " 2>" + errfile).c_str(), "r");
  Proc r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(errfile);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::filesystem::remove(errfile);
  return r;
}

std::string elf(const std::string& name) { return std::string(FABRICVP_RISCV_OUT) + "/" + name + ".elf"; }

Proc fabricvp_riscv(const std::string& file, const std::string& isa = "rv32imac") {
  return run_cmd(std::string(FABRICVP_BIN) + " riscv --isa " + isa + " '" + file + "'");
}

Proc qemu(const std::string& file) {
  return run_cmd("timeout 60 qemu-system-riscv32 -machine spike -nographic -monitor none -bios none -kernel '" + file +
                 "'");
}

/// The HTIF words every test program needs (8 bytes each: QEMU checks).
const char* const kHtifWords = R"(
  .section .tohost, "aw", @progbits
  .align 6
  .globl tohost
  .type tohost, @object
  .size tohost, 8
tohost: .dword 0
  .align 6
  .globl fromhost
  .type fromhost, @object
  .size fromhost, 8
fromhost: .dword 0
)";

/// Assembles and links `source` (RV32IMAC, sw/riscv/rt/link.ld) into dir/name.elf.
std::string assemble(const TempDir& dir, const std::string& name, const std::string& source) {
  const std::string src = dir.file(name + ".S", source);
  const std::string out = dir / (name + ".elf");
  const Proc cc = run_cmd(std::string(FABRICVP_RISCV_CC) +
                          " -march=rv32imac -Wa,-march=rv32imac_zicsr_zifencei -mabi=ilp32 -static -nostdlib "
                          "-nostartfiles -T " FABRICVP_SOURCE_DIR "/sw/riscv/rt/link.ld '" +
                          src + "' -o '" + out + "'");
  EXPECT_EQ(cc.code, 0) << name << ": " << cc.err;
  return out;
}

// ---- the ISA suite (sw/riscv/isa), on fabricvp and, to check the tests themselves, on QEMU

struct Suite {
  const char* name;
  const char* isa;
};
constexpr Suite kSuites[] = {{"rv32ui", "rv32imac"}, {"rv32um", "rv32imac"}, {"rv32ua", "rv32imac"},
                             {"rv32uc", "rv32imac"}, {"rv32mi", "rv32imac"}, {"rv32uf", "rv32imafc"}};

class RiscvIsa : public ::testing::TestWithParam<Suite> {};

TEST_P(RiscvIsa, PassesOnFabricvp) {
  const Proc r = fabricvp_riscv(elf(GetParam().name), GetParam().isa);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("PASS"), std::string::npos) << r.err;
}

TEST_P(RiscvIsa, PassesOnQemu) {
  const Proc r = qemu(elf(GetParam().name));
  EXPECT_EQ(r.code, 0) << "QEMU fails the test itself (test number = exit code): " << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(Suites, RiscvIsa, ::testing::ValuesIn(kSuites),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(RiscvCli, FloatSuiteNeedsTheFExtension) {
  // Without F, the first F instruction (csrs of FS is legal, fcsr is not) traps to the
  // test's handler as an unexpected illegal instruction: a reported failure.
  const Proc r = fabricvp_riscv(elf("rv32uf"), "rv32imac");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("FAIL: test"), std::string::npos) << r.err;
}

// ---- compiled programs: same console output as QEMU

TEST(RiscvDiff, CompiledProgramsPrintWhatQemuPrints) {
  for (const char* p : {"checksum", "floats"}) {
    const Proc a = fabricvp_riscv(elf(p));
    const Proc b = qemu(elf(p));
    EXPECT_EQ(a.code, 0) << p << ": " << a.err;
    EXPECT_EQ(b.code, 0) << p;
    EXPECT_FALSE(a.out.empty()) << p;
    EXPECT_EQ(a.out, b.out) << p;
  }
}

TEST(RiscvDiff, HardwareFloatsPrintWhatSoftFloatPrints) {
  const Proc soft = fabricvp_riscv(elf("floats"));
  const Proc hard = fabricvp_riscv(elf("floats_f"), "rv32imafc");
  const Proc q = qemu(elf("floats_f"));
  EXPECT_EQ(hard.code, 0) << hard.err;
  EXPECT_EQ(soft.out, hard.out);
  EXPECT_EQ(hard.out, q.out);
}

// ---- randomly generated programs

/// A random straight-line program with forward branches: every register
/// initialized, then `count` instructions drawn from RV32IMAC (the assembler
/// compresses what it can) and A, with loads, stores and AMOs inside a
/// 256-byte buffer addressed through x31. At the end the program prints x1..x30
/// and the buffer through HTIF, so the console output is the final
/// architectural state.
std::string random_program(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  auto reg = [&] { return "x" + std::to_string(1 + pick(29)); };  // x1..x29 (x30 temp, x31 base)
  auto any = [&] { return "x" + std::to_string(pick(30)); };      // sources may be x0
  std::ostringstream s;
  s << "  .section .text.init\n  .globl _start\n_start:\n";
  s << "  la x31, buf\n";
  for (int r = 1; r <= 30; ++r) s << "  li x" << r << ", " << static_cast<int32_t>(rng()) << "\n";
  static const char* rr[] = {"add", "sub", "sll",  "slt",    "sltu",  "xor", "srl",  "sra", "or",
                             "and", "mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"};
  static const char* ri[] = {"addi", "slti", "sltiu", "xori", "ori", "andi"};
  static const char* sh[] = {"slli", "srli", "srai"};
  static const char* ld[] = {"lb", "lbu", "lh", "lhu", "lw"};
  static const char* st[] = {"sb", "sh", "sw"};
  static const char* amo[] = {"amoswap.w", "amoadd.w", "amoxor.w",  "amoand.w", "amoor.w",
                              "amomin.w",  "amomax.w", "amominu.w", "amomaxu.w"};
  int label = 0;
  std::vector<std::pair<int, int>> pending;  // (label, instructions until it is placed)
  for (int i = 0; i < count; ++i) {
    for (auto& [l, left] : pending) {
      if (left-- == 0) s << "L" << l << ":\n";
    }
    const int kind = pick(100);
    if (kind < 35) {
      s << "  " << rr[pick(18)] << " " << reg() << ", " << any() << ", " << any() << "\n";
    } else if (kind < 50) {
      s << "  " << ri[pick(6)] << " " << reg() << ", " << any() << ", " << (pick(4096) - 2048) << "\n";
    } else if (kind < 57) {
      s << "  " << sh[pick(3)] << " " << reg() << ", " << any() << ", " << pick(32) << "\n";
    } else if (kind < 60) {
      s << "  " << (pick(2) ? "lui " : "auipc ") << reg() << ", " << pick(1 << 20) << "\n";
    } else if (kind < 70) {
      const int w = pick(5);
      const int size = (w < 2) ? 1 : (w < 4) ? 2 : 4;
      s << "  " << ld[w] << " " << reg() << ", " << (pick(256 / size) * size) << "(x31)\n";
    } else if (kind < 80) {
      const int w = pick(3);
      const int size = 1 << w;
      s << "  " << st[w] << " " << any() << ", " << (pick(256 / size) * size) << "(x31)\n";
    } else if (kind < 86) {
      s << "  addi x30, x31, " << pick(64) * 4 << "\n";
      s << "  " << amo[pick(9)] << " " << reg() << ", " << any() << ", (x30)\n";
    } else if (kind < 89) {
      s << "  addi x30, x31, " << pick(64) * 4 << "\n";
      const std::string d = reg();
      s << "  lr.w " << d << ", (x30)\n";
      s << "  sc.w " << reg() << ", " << any() << ", (x30)\n";
    } else if (kind < 97) {
      static const char* br[] = {"beq", "bne", "blt", "bge", "bltu", "bgeu"};
      s << "  " << br[pick(6)] << " " << any() << ", " << any() << ", L" << label << "\n";
      pending.emplace_back(label++, 1 + pick(4));
    } else {
      s << "  jal " << reg() << ", L" << label << "\n";
      pending.emplace_back(label++, 1 + pick(3));
    }
  }
  for (auto& [l, left] : pending)
    if (left >= 0) s << "L" << l << ":\n";
  // Save x1..x30 after the buffer, then print them and the buffer in hex.
  for (int r = 1; r <= 30; ++r) s << "  sw x" << r << ", " << 256 + 4 * r << "(x31)\n";
  s << R"(
  li s0, 0            # word index
  li s1, 95           # 64 buffer words + 31 register slots
  la s2, buf
print_word:
  slli t0, s0, 2
  add t0, t0, s2
  lw t1, 0(t0)
  li t2, 28
print_digit:
  srl t3, t1, t2
  andi t3, t3, 15
  la t4, hexdigits
  add t4, t4, t3
  lbu a0, 0(t4)
  call putc
  addi t2, t2, -4
  bgez t2, print_digit
  li a0, 10
  call putc
  addi s0, s0, 1
  blt s0, s1, print_word
  la t0, tohost
  li t1, 1
  sw t1, 0(t0)
  sw zero, 4(t0)
1: j 1b
putc:
  la t5, tohost
  sw a0, 0(t5)
  li t6, 0x01010000
  sw t6, 4(t5)
  ret
  .section .rodata
hexdigits: .ascii "0123456789abcdef"
  .data
  .align 4
buf:
)";
  for (int k = 0; k < 64; ++k) s << "  .word " << static_cast<int32_t>(rng()) << "\n";
  s << "  .fill 31, 4, 0\n";
  s << kHtifWords;
  return s.str();
}

TEST(RiscvDiff, RandomProgramsEndInTheStateQemuReaches) {
  TempDir dir;
  const uint32_t base_seed = 20261125;
  const int programs = 40;
  for (int k = 0; k < programs; ++k) {
    const uint32_t seed = base_seed + static_cast<uint32_t>(k);
    const std::string out = assemble(dir, "r" + std::to_string(k), random_program(seed, 300));
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
    const Proc a = fabricvp_riscv(out);
    const Proc b = qemu(out);
    ASSERT_EQ(a.code, 0) << "seed " << seed << ": " << a.err;
    ASSERT_EQ(b.code, 0) << "seed " << seed;
    ASSERT_EQ(a.out.size(), 95u * 9) << "seed " << seed;
    ASSERT_EQ(a.out, b.out) << "seed " << seed << " (program " << out << ")";
  }
}

// ---- command line

TEST(RiscvCli, ReportsFailureNumberAndExitCode3) {
  TempDir dir;
  const std::string out = assemble(dir, "f", std::string(R"(
  .section .text.init
  .globl _start
_start:
  la t0, tohost
  li t1, (42 << 1) | 1
  sw t1, 0(t0)
  sw zero, 4(t0)
1: j 1b
)") + kHtifWords);
  const Proc r = fabricvp_riscv(out);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("FAIL: test 42"), std::string::npos) << r.err;
}

TEST(RiscvCli, InstructionLimitAndUnfetchableTrapHandlerEndTheRun) {
  TempDir dir;
  auto build = [&](const std::string& name, const std::string& body) {
    return assemble(dir, name, "  .section .text.init\n  .globl _start\n_start:\n" + body + "\n" + kHtifWords);
  };
  const std::string loop = build("loop", "1: j 1b");
  Proc r = run_cmd(std::string(FABRICVP_BIN) + " riscv --max-instructions 1000 '" + loop + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("1000 instructions executed without an HTIF exit"), std::string::npos) << r.err;

  const std::string trap = build("trap", "  li t0, 0x40000000\n  csrw mtvec, t0\n  ecall");
  r = fabricvp_riscv(trap);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("instruction access fault"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mtvec 0x40000000"), std::string::npos) << r.err;
}

TEST(RiscvCli, BadFilesAreClearErrors) {
  TempDir dir;
  const std::string txt = dir.file("not.elf", "hello");
  Proc r = fabricvp_riscv(txt);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("fabricvp: error: " + txt + ": not an ELF file"), std::string::npos) << r.err;
  r = fabricvp_riscv(dir / "missing.elf");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing.elf: cannot open"), std::string::npos) << r.err;
  r = fabricvp_riscv(FABRICVP_BIN);  // an x86-64 ELF
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a 32-bit ELF file"), std::string::npos) << r.err;
  r = run_cmd(std::string(FABRICVP_BIN) + " riscv --isa rv64gc '" + elf("rv32ui") + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--isa rv64gc"), std::string::npos) << r.err;
  // Section headers past the end of the file: refused (the symbols were silently none).
  std::ifstream in(elf("rv32ui"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 0x34u);
  const uint32_t past = static_cast<uint32_t>(bytes.size()) + 4096;
  std::memcpy(&bytes[0x20], &past, 4);  // e_shoff of an ELF32 header
  r = fabricvp_riscv(dir.file("shoff.elf", bytes));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("shoff.elf: bad section"), std::string::npos) << r.err;
}

// ---- units

TEST(RiscvDecode, CompressedFormsExpandToTheir32BitEquivalents) {
  using riscv::decode16;
  using riscv::decode32;
  using riscv::Op;
  auto same = [](riscv::Insn a, riscv::Insn b) {
    return a.op == b.op && a.rd == b.rd && a.rs1 == b.rs1 && a.rs2 == b.rs2 && a.imm == b.imm;
  };
  // c.addi a0, -6 = 0x1569; addi a0, a0, -6 = 0xffa50513
  EXPECT_TRUE(same(decode16(0x1569), decode32(0xffa50513)));
  // c.lw a5, 12(s0) = 0x445c; lw a5, 12(s0) = 0x00c42783
  EXPECT_TRUE(same(decode16(0x445c), decode32(0x00c42783)));
  // c.j +0 ... c.jr ra (ret) = 0x8082; jalr x0, 0(ra) = 0x00008067
  EXPECT_TRUE(same(decode16(0x8082), decode32(0x00008067)));
  // c.mv a0, a1 = 0x852e; add a0, x0, a1 = 0x00b00533
  EXPECT_TRUE(same(decode16(0x852e), decode32(0x00b00533)));
  EXPECT_EQ(decode16(0x0000).op, Op::Illegal);  // the defined-illegal all-zero parcel
  EXPECT_EQ(decode32(0xffffffff).op, Op::Illegal);
  EXPECT_EQ(decode32(0x02000033).op, Op::Mul);
  EXPECT_EQ(riscv::disassemble(decode32(0xffa50513), 0), "addi a0, a0, -6");
}

TEST(RiscvBanks, ConflictsWaitForTheBankAndAreCounted) {
  riscv::Banks banks(4, 4);
  EXPECT_EQ(banks.access(0, 10, 1), 10u);   // bank 0 at cycle 10
  EXPECT_EQ(banks.access(16, 10, 1), 11u);  // bank 0 again (word 4): waits one cycle
  EXPECT_EQ(banks.access(4, 10, 1), 10u);   // bank 1: free
  EXPECT_EQ(banks.access(0, 10, 2), 12u);   // an AMO holds bank 0 for cycles 12 and 13
  EXPECT_EQ(banks.access(32, 12, 1), 14u);
  EXPECT_EQ(banks.conflicts(), 3u);
  EXPECT_EQ(banks.stall_cycles(), 1u + 2u + 2u);
  // far in the future the old history is gone
  EXPECT_EQ(banks.access(0, 100000, 1), 100000u);
}

// The banks against a plain reference: per bank the set of busy cycles,
// cycles more than 255 before the latest taken forgotten (free). Accesses
// come out of order, as cores running in turns make them: each core runs a
// few hundred cycles ahead of the others.
TEST(RiscvBanks, OutOfOrderAccessesMatchAPlainReference) {
  constexpr unsigned kBanks = 4, kWindow = 256;
  riscv::Banks banks(kBanks, 4);
  std::vector<std::set<uint64_t>> busy(kBanks);
  std::vector<uint64_t> next_free(kBanks, 0);
  uint64_t conflicts = 0, stalls = 0;
  std::mt19937_64 rng(7);
  uint64_t now = 0;
  for (int i = 0; i < 200000; ++i) {
    if (rng() % 64 == 0) now += rng() % 300;  // the next core's turn, or a jump ahead
    const uint64_t cycle = now + rng() % 700;
    const uint32_t offset = static_cast<uint32_t>(rng() % 64) * 4;
    const unsigned hold = rng() % 4 == 0 ? 2 : 1;
    const unsigned b = (offset / 4) % kBanks;
    auto& s = busy[b];
    const uint64_t base = next_free[b] > kWindow ? next_free[b] - kWindow : 0;
    auto is_busy = [&](uint64_t c) { return c >= base && s.count(c) > 0; };
    uint64_t t = cycle;
    while (t < next_free[b] && (is_busy(t) || (hold == 2 && is_busy(t + 1)))) ++t;
    for (unsigned k = 0; k < hold; ++k) s.insert(t + k);
    next_free[b] = std::max(next_free[b], t + hold);
    const uint64_t keep = next_free[b] > kWindow ? next_free[b] - kWindow : 0;
    s.erase(s.begin(), s.lower_bound(keep));
    if (t != cycle) {
      ++conflicts;
      stalls += t - cycle;
    }
    ASSERT_EQ(banks.access(offset, cycle, hold), t) << "access " << i << " at cycle " << cycle;
  }
  EXPECT_EQ(banks.conflicts(), conflicts);
  EXPECT_EQ(banks.stall_cycles(), stalls);
  EXPECT_GT(conflicts, 2000u);  // the accesses do contend
}

namespace {

// A hart spinning on a held lock in a banked memory whose lock bank another
// core has used ahead of it: run in quanta as a PsPIN cluster runs it.
struct SpinRig {
  explicit SpinRig(const std::vector<uint32_t>& prog) : banks(4, 4), mem(0x2000) {
    riscv::Region r;
    r.name = "l1";
    r.base = 0;
    r.size = static_cast<uint32_t>(mem.size());
    r.host = mem.data();
    r.store_cycles = 1;
    r.banks = &banks;
    map.add(r);
    map.write_bytes(0x1000, prog.data(), prog.size() * 4);
    const uint32_t locked = 1;
    map.write_bytes(0x100, &locked, 4);
    hart = std::make_unique<riscv::Hart>(map, cache, riscv::HartConfig{});
    hart->set_pc(0x1000);
    hart->set_x(15, 0x100);  // a5: the lock
    hart->set_x(11, 1);      // a1
    hart->set_trap_exits(true);
    hart->set_cycle(100);
  }
  /// One instruction by the plain interpreter: with its slots undecoded the
  /// AMO cannot see the branch after it, so no spin is taken.
  riscv::Stop step(uint64_t cycle_limit) {
    cache.invalidate();
    return hart->run(cycle_limit, hart->instret() + 1);
  }
  riscv::Banks banks;
  std::vector<uint8_t> mem;
  riscv::AddressMap map;
  riscv::DecodeCache cache;
  std::unique_ptr<riscv::Hart> hart;
};

}  // namespace

// The spin's rounds, run without decoding, are the interpreter's rounds: the
// same cycles, instructions, AMOs and bank conflicts as a hart stepped one
// instruction at a time, whatever the quantum and whoever used the bank.
TEST(RiscvHart, SpinningOnALockIsTheSameStepByStep) {
  {
    // by hand, an idle bank: the first AMO 2 + 1 (the region's store cycles) cycles, then 10 rounds of the
    // branch back (3) and the AMO (3); the instruction budget ends it after that AMO
    SpinRig rig({0x40b7a62f, 0x0000fe75});
    EXPECT_EQ(rig.hart->run(UINT64_MAX, 21), riscv::Stop::Limit);
    EXPECT_EQ(rig.hart->cycle(), 100u + 3u + 10u * 6u);
    EXPECT_EQ(rig.hart->amos(), 11u);
    EXPECT_EQ(rig.hart->pc(), 0x1004u);
  }
  // amoor.w a2, a1, (a5) ; c.bnez a2, -4  /  bne a2, zero, -4  /  amoswap.w a2, a1, (a5) ; beq a2, a1, -4
  const std::vector<std::vector<uint32_t>> progs = {
      {0x40b7a62f, 0x0000fe75}, {0x40b7a62f, 0xfe061ee3}, {0x08b7a62f, 0xfeb60ee3}};
  for (size_t p = 0; p < progs.size(); ++p) {
    for (uint64_t quantum : {1u, 7u, 64u, 1000u}) {
      SpinRig bulk(progs[p]), step(progs[p]);
      std::mt19937_64 rng(quantum);
      uint64_t until = 100;
      for (int q = 0; q < 40; ++q) {
        // another core ran ahead on the lock's bank (and on the next one)
        for (int i = 0; i < 6; ++i) {
          const uint32_t o = rng() % 3 ? 0x100 : 0x104;
          const uint64_t c = until + rng() % (quantum + 20);
          ASSERT_EQ(bulk.banks.access(o, c, 2), step.banks.access(o, c, 2));
        }
        until += quantum;
        EXPECT_EQ(bulk.hart->run(until), riscv::Stop::Limit);
        while (step.hart->cycle() < until) ASSERT_EQ(step.step(until), riscv::Stop::Limit);
        ASSERT_EQ(bulk.hart->cycle(), step.hart->cycle()) << "program " << p << " quantum " << quantum << " turn " << q;
        ASSERT_EQ(bulk.hart->instret(), step.hart->instret());
        ASSERT_EQ(bulk.hart->pc(), step.hart->pc());
        ASSERT_EQ(bulk.hart->amos(), step.hart->amos());
        ASSERT_EQ(bulk.banks.conflicts(), step.banks.conflicts());
        ASSERT_EQ(bulk.banks.stall_cycles(), step.banks.stall_cycles());
      }
      EXPECT_GT(bulk.hart->amos(), quantum >= 64 ? 100u : 1u);
      EXPECT_GT(bulk.banks.conflicts(), 10u);
      // an instruction budget ends the spin where the interpreter would
      const uint64_t budget = bulk.hart->instret() + 33;
      EXPECT_EQ(bulk.hart->run(UINT64_MAX, budget), riscv::Stop::Limit);
      while (step.hart->instret() < budget) step.step(UINT64_MAX);
      EXPECT_EQ(bulk.hart->cycle(), step.hart->cycle());
      EXPECT_EQ(bulk.hart->pc(), step.hart->pc());
      // the lock freed: the next AMO takes it and the program goes on
      const uint32_t free_word = 0;
      bulk.map.write_bytes(0x100, &free_word, 4);
      EXPECT_EQ(bulk.hart->run(bulk.hart->cycle() + 20), riscv::Stop::Trap);  // the illegal parcel after the loop
      EXPECT_EQ(bulk.hart->last_trap().epc, progs[p][1] == 0x0000fe75 ? 0x1006u : 0x1008u);
    }
  }
}

TEST(RiscvHart, RunsFromMemoryWithTheCycleModel) {
  riscv::AddressMap map;
  map.add_memory("ram", 0x1000, 0x1000);
  // addi a0, zero, 5 ; addi a0, a0, -1 ; bnez a0, -4 ; ebreak
  const uint32_t prog[] = {0x00500513, 0xfff50513, 0xfe051ee3, 0x00100073};
  map.write_bytes(0x1000, prog, sizeof prog);
  riscv::DecodeCache cache;
  riscv::Hart hart(map, cache, riscv::HartConfig{});
  hart.set_pc(0x1000);
  hart.set_trap_exits(true);
  EXPECT_EQ(hart.run(UINT64_MAX), riscv::Stop::Trap);
  EXPECT_EQ(hart.last_trap().cause, riscv::kBreakpoint);
  EXPECT_EQ(hart.last_trap().epc, 0x100cu);
  EXPECT_EQ(hart.instret(), 1u + 5u * 2u);
  // 1 + 5 addi (1 each) + 4 taken branches (3 each) + 1 not taken (1) + the trap (1)
  EXPECT_EQ(hart.cycle(), 1u + 5u + 4u * 3u + 1u + 1u);
}

}  // namespace

namespace {

TEST(RiscvHart, MisalignedAmoAndLrTrapMisalignedAccessesWork) {
  riscv::AddressMap map;
  map.add_memory("ram", 0x0, 0x2000);
  // addi a1, zero, 0x102 ; lw a2, 0(a1) (misaligned: carried out) ; amoadd.w a0, a2, (a1) (traps)
  const uint32_t prog[] = {0x10200593, 0x0005a603, 0x00c5a52f};
  map.write_bytes(0x1000, prog, sizeof prog);
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  map.write_bytes(0x100, data, sizeof data);
  riscv::DecodeCache cache;
  riscv::Hart hart(map, cache, riscv::HartConfig{});
  hart.set_pc(0x1000);
  hart.set_trap_exits(true);
  EXPECT_EQ(hart.run(UINT64_MAX), riscv::Stop::Trap);
  EXPECT_EQ(hart.x(12), 0x06050403u);
  EXPECT_EQ(hart.last_trap().cause, riscv::kStoreMisaligned);
  EXPECT_EQ(hart.last_trap().tval, 0x102u);
  EXPECT_EQ(hart.last_trap().epc, 0x1008u);
}

}  // namespace

// ---- the F extension's round-to-nearest fast path

/// fadd.s / fsub.s / fmul.s at round-to-nearest-even skip the host's
/// floating-point environment when the result can neither be tiny nor
/// overflow; every result and flag must be what the host's path gives.
TEST(RiscvFpu, FastPathEqualsTheHostPath) {
  std::mt19937 rng(7);
  auto bits = [&](uint32_t sign, uint32_t exp, uint32_t man) { return sign << 31 | exp << 23 | (man & 0x7fffffu); };
  // exponent fields where the fast path's conditions change: zero and
  // subnormal, around the smallest normal, around 28 apart, near overflow
  const uint32_t edges[] = {0, 1, 2, 3, 24, 25, 26, 27, 28, 29, 30, 31, 100, 126, 127, 128, 200, 253, 254, 255};
  std::vector<uint32_t> special;
  for (uint32_t e : edges)
    for (uint32_t m : {0u, 1u, 0x400000u, 0x7fffffu, 0x000001u | 0x400000u})
      for (uint32_t sg : {0u, 1u}) special.push_back(bits(sg, e, m));
  uint64_t cases = 0;
  auto check = [&](uint32_t a, uint32_t b) {
    for (int mul = 0; mul < 2; ++mul) {
      uint32_t f_fast = 0, f_host = 0;
      const uint32_t r_fast = mul ? riscv::fpu::mul_s(a, b, 0, f_fast) : riscv::fpu::add_s(a, b, 0, f_fast);
      const uint32_t r_host =
          mul ? riscv::fpu::mul_s(a, b, 0, f_host, false) : riscv::fpu::add_s(a, b, 0, f_host, false);
      ++cases;
      ASSERT_EQ(r_fast, r_host) << std::hex << (mul ? "mul " : "add ") << a << " " << b;
      ASSERT_EQ(f_fast, f_host) << std::hex << (mul ? "mul " : "add ") << a << " " << b;
    }
  };
  for (uint32_t a : special)
    for (uint32_t b : special) check(a, b);
  for (int i = 0; i < 400000; ++i) {
    const uint32_t a = rng();
    uint32_t b;
    switch (i % 4) {
      case 0: b = rng(); break;                                                         // anything
      case 1: b = bits(rng() & 1, (a >> 23 & 0xff) + (rng() % 61) - 30, rng()); break;  // close exponents
      case 2: b = a ^ 0x80000000u ^ (rng() & 0xf); break;                               // cancellation
      default: b = bits(rng() & 1, rng() % 8, rng()); break;                            // tiny operands
    }
    check(a, b);
    // a result at the smallest normal or the largest finite: products of
    // operands whose exponents sum to either end
    const uint32_t ea = 1 + rng() % 253;
    check(bits(rng() & 1, ea, rng()), bits(rng() & 1, (127 + 1 - ea + 256) % 256, rng()));
    check(bits(rng() & 1, ea, rng()), bits(rng() & 1, (127 + 254 - ea + 256) % 256, rng()));
  }
  // ordinary values, exact and inexact
  uint32_t fl = 0;
  EXPECT_EQ(riscv::fpu::add_s(0x3f800000u, 0x40000000u, 0, fl), 0x40400000u);  // 1 + 2 = 3
  EXPECT_EQ(fl, 0u);
  EXPECT_EQ(riscv::fpu::mul_s(0x3f800001u, 0x3f800001u, 0, fl), 0x3f800002u);  // (1 + u)^2 rounds to 1 + 2u
  EXPECT_EQ(fl, 1u);                                                           // inexact
  EXPECT_GT(cases, 2'000'000u);
}
