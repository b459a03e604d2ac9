// The TSP assembler: any text is assembled or refused with file:line; what
// assembles disassembles to text that assembles to the same binary program
// (source line numbers aside).
#include "fuzz.h"
#include "sw/asm/program.h"

using namespace fabricvp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sw::Program p;
  try {
    p = sw::assemble(fuzz::text(data, size), "fuzz.s");
  } catch (const core::ConfigError&) {
    return 0;
  }
  const std::string dis = sw::disassemble(p);
  sw::Program q;
  try {
    q = sw::assemble(dis, "disassembly.s");
  } catch (const core::ConfigError& e) {
    std::fprintf(stderr, "%s\n--- disassembly:\n%s\n", e.what(), dis.c_str());
    fuzz::require(false, "the disassembly of an assembled program assembles");
  }
  fuzz::require(p.target == q.target, "the .tsp target survives disassembly");
  // The binary carries each instruction's source line, which disassembly moves: compare without it.
  auto unlined = [](std::vector<tsp::Instr> q) {
    for (tsp::Instr& in : q) in.line = 0;
    return sw::encode_queue(q);
  };
  // A declared queue without instructions is written as nothing: it reads back as absent (both run END only).
  const std::vector<tsp::Instr> none;
  for (size_t i = 0; i < std::max(p.queues.size(), q.queues.size()); ++i)
    fuzz::require(
        unlined(i < p.queues.size() ? p.queues[i] : none) == unlined(i < q.queues.size() ? q.queues[i] : none),
        "every queue's binary survives disassembly");
  return 0;
}
