// fabricvp ace-equiv: the ACE datapath RTL against its cycle-accurate C++ model
// (tb/ace/equiv.h). Exit code 0 pass, 3 mismatch, 2 the RTL stopped.
#include <memory>

#include "tb/ace/equiv.h"
#include "tools/fabricvp/commands.h"

namespace {

fabricvp::cli::Command ace_equiv_cmd([](CLI::App& app) {
  auto* sub = app.add_subcommand(
      "ace-equiv", "run the ACE datapath RTL (verilated) and its C++ model on one seeded stream and compare them");
  auto opts = std::make_shared<fabricvp::tb::EquivOptions>();
  sub->add_option("--transactions,-n", opts->transactions,
                  "random chunks (a fill and a read-back of the buffer come on top)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 32));
  sub->add_option("--seed,-s", opts->seed, "random seed (chunks, gaps, back-pressure)")->capture_default_str();
  sub->add_option("--vcd", opts->vcd, "write a VCD of the RTL to this file");
  sub->add_option("--fail-vcd", opts->fail_vcd, "on a mismatch, re-run the seed traced into this file (empty: don't)")
      ->capture_default_str();
  sub->add_flag("--saturate", opts->saturate,
                "no valid gaps and no back-pressure: a chunk every cycle but for hazards");
  sub->add_flag("--quiet,-q", opts->quiet, "print only mismatches and the verdict");
  return fabricvp::cli::Handler{sub, [opts] { return fabricvp::tb::run_ace_equiv(*opts); }};
});

}  // namespace
