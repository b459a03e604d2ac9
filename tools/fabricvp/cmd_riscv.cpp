// `fabricvp riscv <program.elf> [--isa rv32imac|rv32imafc] [--max-instructions N]`:
// runs a bare-metal RV32 program on the instruction-set simulator alone
// (docs/riscv.md), from its entry point in machine mode, with the HTIF
// convention of ISA test suites: tohost = 1 passes (exit 0), an odd value v
// fails with test number v >> 1 (exit 3). Console bytes written through HTIF
// go to stdout; the run summary (instructions, cycles, MIPS) to stderr.
//
// Exit codes: 0 pass; 1 bad input (file, option, unsupported HTIF request);
// 2 the program did not finish: a trap it has no handler for, or the
// instruction limit; 3 the program reported a failure.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/riscv/bare_metal.h"
#include "models/riscv/elf.h"
#include "tools/fabricvp/commands.h"

using namespace fabricvp;

namespace {

struct RiscvOptions {
  std::string program;
  std::string isa = "rv32imac";
  uint64_t max_instructions = 10'000'000'000ull;
  bool quiet = false;
};

int run_riscv(const RiscvOptions& o) {
  riscv::HartConfig cfg;
  if (o.isa == "rv32imafc") {
    cfg.f = true;
  } else if (o.isa != "rv32imac") {
    fmt::print(stderr, "fabricvp: error: --isa {}: expected rv32imac or rv32imafc\n", o.isa);
    return 1;
  }
  try {
    const riscv::ElfImage img = riscv::read_elf(o.program);
    if (!img.symbol("tohost"))
      fmt::print(stderr, "warning: {}: no `tohost` symbol: the program cannot report pass or fail\n", o.program);
    riscv::BareMetal machine(img, cfg);
    const auto t0 = std::chrono::steady_clock::now();
    const riscv::BareMetalResult r = machine.run(o.max_instructions);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fflush(stdout);
    if (!o.quiet) {
      fmt::print(stderr, "{}: {} instructions, {} cycles (CPI {:.3f}), {:.1f} MIPS ({:.3f} s)\n", o.program,
                 r.instructions, r.cycles, r.instructions ? double(r.cycles) / double(r.instructions) : 0.0,
                 secs > 0 ? double(r.instructions) / secs / 1e6 : 0.0, secs);
    }
    switch (r.end) {
      case riscv::BareMetalResult::End::Exit:
        if (r.exit_code == 0) {
          if (!o.quiet) fmt::print(stderr, "PASS\n");
          return 0;
        }
        fmt::print(stderr, "FAIL: test {}\n", r.exit_code);
        return 3;
      case riscv::BareMetalResult::End::Trap: {
        uint32_t mtvec = 0;
        machine.hart().read_csr(0x305, mtvec);
        fmt::print(
            stderr,
            "error: {} at pc 0x{:08x} (mtval 0x{:08x}), and the trap handler at mtvec 0x{:08x} cannot be fetched\n",
            riscv::cause_name(r.trap.cause), r.trap.epc, r.trap.tval, mtvec);
        return 2;
      }
      case riscv::BareMetalResult::End::Limit:
        fmt::print(stderr,
                   "fabricvp: error: {} instructions executed without an HTIF exit (--max-instructions); pc 0x{:08x}\n",
                   r.instructions, machine.hart().pc());
        return 2;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
  return 1;
}

fabricvp::cli::Command riscv_cmd([](CLI::App& app) {
  auto o = std::make_shared<RiscvOptions>();
  auto* sub = app.add_subcommand("riscv", "run a bare-metal RV32 ELF on the instruction-set simulator (HTIF tohost)");
  sub->add_option("program", o->program, "RV32 ELF executable")->required();
  sub->add_option("--isa", o->isa, "rv32imac (default) or rv32imafc");
  sub->add_option("--max-instructions", o->max_instructions,
                  "the watchdog: stop after this many instructions (default 1e10, at most 1e13)")
      ->check(CLI::Range(uint64_t(1), uint64_t(10'000'000'000'000)));
  sub->add_flag("-q,--quiet", o->quiet, "print nothing but errors and failures");
  return fabricvp::cli::Handler{sub, [o] { return run_riscv(*o); }};
});

}  // namespace
