// Independent static check of compiled programs (docs/collectives.md).
//
// Reads only the per-chip instruction streams and the machine's timing, and
// re-derives from docs/isa.md when every burst occupies every cable and when
// every vector arrives and is taken. It shares nothing with the scheduler's
// bookkeeping, so it catches scheduler bugs before a simulation does:
//   - a SEND issued while its cable is still busy beyond the transmit buffer
//     (two vectors in one slot), or on a dead or missing cable;
//   - a RECV that takes a vector before it arrives (underflow), a receive
//     buffer that would hold more than rx_buffer_vectors (overflow), two RECVs
//     on one port at once, vectors nobody receives;
//   - more ADD/COPY bursts at once than the chip has ALUs, more TRANSPOSEs at
//     once than it has SXM units; WAITs into the past;
//   - an MXM on a busy unit or before its weights are installed, an LW into
//     weights an MXM still reads.
// SYNC/NOTIFY streams are not analysed (their timing depends on other queues),
// nor what follows a DESKEW, POLL or RUNTIME_DESKEW (timed by the HAC); a
// TRANSMIT is checked for its cable and otherwise takes one issue cycle. A
// LOOP's repetitions are not expanded: the first iteration is checked (the
// chip refuses a period that would make iterations of a queue overlap, and
// its hazard checks see every iteration).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sw/asm/program.h"
#include "sw/sched/machine.h"

namespace fabricvp::sched {

struct Violation {
  std::string where;  ///< chip (and port or queue)
  uint64_t cycle;     ///< core cycle of the chip
  std::string what;
};

struct CheckReport {
  std::vector<Violation> violations;
  uint64_t sends = 0, recvs = 0, alu_ops = 0, mxm_ops = 0, sxm_ops = 0, hostw_ops = 0;
  bool skipped_sync = false;  ///< some queue uses SYNC/NOTIFY and was not analysed
};

/// `programs` is per physical chip (empty programs are fine).
CheckReport check_schedule(const Machine& m, const std::vector<sw::Program>& programs);

}  // namespace fabricvp::sched
