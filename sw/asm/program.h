// TSP programs as data: the text assembly format and its binary form.
//
// Text format (one instruction per line, ';' or '#' starts a comment):
//   .tsp sys.node0.tsp3          optional: the chip this program is for
//   .queue 5                     following instructions go to queue 5
//   WAIT 1234                    next instruction of this queue issues at cycle 1234
//   NOP 10                       idle 10 cycles
//   SEND p2, [0,1,0,100], 64     port, address, vectors
//   RECV p2, @70000, 64          address as [hemisphere,slice,bank,offset] or @linear
//   ADD.fp32 [0,0,0,0], @100, @200, 64   dst, a, b, vectors (fp32|bf16|fp16|int32)
//   COPY @300, @100, 64          dst, src, vectors
//   SYNC / NOTIFY
//   DESKEW                       wait for the next HAC epoch boundary
//   TRANSMIT p3                  notify the chip on port 3 (link control code)
//   POLL p0                      polling synchronization loop on port 0
//   RUNTIME_DESKEW 300           stall 300 +- drift cycles, resynchronize
//   RDHAC @100                   HAC, SAC, HAC - SAC, cycle counters -> SRAM
//   LOOP 99, 5000, HOST 8        (last of its queue) run the queue 99 more times, one every 5000
//                                cycles: WAITs +5000 cycles, HOSTW host vectors +8 per iteration
//   .rept 100 ... .endr          repeat the lines in between (not nested)
// Mnemonics are case-insensitive. docs/isa.md describes semantics and timing.
#pragma once

#include <string>
#include <vector>

#include "models/tsp/isa.h"

namespace fabricvp::sw {

struct Program {
  std::string target;                           ///< chip name from ".tsp", may be empty
  std::vector<std::vector<tsp::Instr>> queues;  ///< per queue, without the END terminator

  size_t instructions() const;
  /// Append to queue q (grows the queue list).
  void emit(uint32_t q, const tsp::Instr& in);
};

/// Parse assembly text. Throws core::ConfigError("file:line: ...") on any error.
Program assemble(const std::string& text, const std::string& file);
Program assemble_file(const std::string& path);
/// Text that assemble() turns back into the same program (line numbers aside).
std::string disassemble(const Program& p);
std::string format_instr(const tsp::Instr& in);

/// Binary image of one queue: 32-byte instructions followed by END.
std::vector<uint8_t> encode_queue(const std::vector<tsp::Instr>& q);

}  // namespace fabricvp::sw
