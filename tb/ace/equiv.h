// Equivalence bench of the ACE datapath: one seeded chunk stream, two
// consumers (the C++ model ace::Datapath and the verilated RTL through
// ace::RtlDatapath, which drives the pins with the stream's valid gaps and the
// seeded out_ready back-pressure), a scoreboard comparing every completion
// bit for bit and cycle for cycle, a drain check at the end and a watchdog.
//
// A run: partition 0 spans the buffer and every row is stored (so both models
// start from the same contents); a random partition table; `transactions`
// random chunks; partition 0 spans the buffer again and every row is forwarded
// out (the final buffer contents are compared); then the drain check: nothing
// pending on either side, the RTL idle and silent for 16 more cycles, both at
// the same cycle.
//
// On a mismatch the seed is printed and, unless the run already traced, the
// same seed is re-run with a VCD of the RTL up to a little after the first
// mismatch.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "tb/ace/scoreboard.h"

namespace fabricvp::tb {

struct EquivOptions {
  uint64_t transactions = 10000;  ///< random chunks (fill and final sweep come on top)
  uint64_t seed = 1;
  std::string vcd;                              ///< trace the RTL into this file (empty: no trace)
  uint64_t vcd_from = 0;                        ///< trace from this cycle on
  std::string fail_vcd = "ace_equiv_fail.vcd";  ///< on a mismatch, re-run traced into this file (empty: don't)
  bool quiet = false;                           ///< print only mismatches and the verdict
  bool saturate = false;  ///< no valid gaps, no back-pressure: a chunk every cycle but for hazards

  /// Fault injection, to show that the scoreboard fails: make the expectation of
  /// completion `corrupt_at` (0-based; the first one sent at or after it for
  /// `data`) wrong. -1: none.
  int64_t corrupt_at = -1;
  enum class Corrupt { data, retire_cycle, accept_cycle, tag } corrupt = Corrupt::data;

  /// Stop after this many completions (no drain check); 0: run to the end.
  uint64_t stop_after = 0;
};

struct EquivResult {
  uint64_t transactions = 0;  ///< chunks given to both models
  uint64_t compared = 0;      ///< completions compared
  uint64_t mismatches = 0;
  int64_t first_mismatch = -1;        ///< completion index
  uint64_t first_mismatch_cycle = 0;  ///< its accept cycle
  std::string first_description;
  bool rtl_failed = false;  ///< $finish, watchdog or broken handshake in the RTL wrapper
  bool drained = false;     ///< drain check passed
  uint64_t cycles = 0;      ///< RTL cycles after reset
  uint64_t in_stall_cycles = 0, out_stall_cycles = 0;
  double wall_s = 0;  ///< whole bench: stimulus, both models, scoreboard
  double rtl_s = 0;   ///< of which evaluating the RTL
  double cpu_s = 0;   ///< process CPU time of the bench (wall time counts other processes too)
  std::string vcd;    ///< VCD written, if any
  Coverage coverage;
  bool passed() const { return mismatches == 0 && !rtl_failed && drained; }
};

/// One run; mismatches and (unless quiet) a summary go to `log` (may be null).
EquivResult ace_equiv(const EquivOptions& opt, std::ostream* log);

/// The `fabricvp ace-equiv` command: run, print the summary to stdout; on a
/// mismatch print the seed and re-run it traced. Exit code 0 pass, 3 mismatch
/// or failed drain check, 2 the RTL stopped ($finish, watchdog).
int run_ace_equiv(const EquivOptions& opt);

}  // namespace fabricvp::tb
