// The software side of a Groq run: the compiler's run-level parameters
// (sched.*), compiled or hand-written programs, and loading them into the
// chips' instruction memories through the host's control sockets.
#pragma once

#include <string>
#include <vector>

#include "models/core/param.h"
#include "sw/asm/program.h"
#include "sw/sched/collectives.h"
#include "systems/groq/system.h"

namespace fabricvp::groq {

/// Compiler parameters (not part of any module): `-p sched.*` and config.yaml list them.
struct CompilerParams {
  CompilerParams();
  core::Param<uint32_t> chunk_vectors;
  core::Param<uint32_t> staging_chunks;
  core::Param<uint32_t> min_piece_vectors;
  core::Param<std::string> routing;
  core::Param<uint32_t> paths;
  core::Param<std::string> matmul_inputs;
  core::Param<std::string> matmul_order;
  core::Param<std::string> matmul_outputs;
  core::Param<uint64_t> matmul_block_rows;
  core::Param<uint32_t> save_programs_max_chips;
};

/// The compiled programs (written to <out_dir>/programs/ and loaded back from
/// that text when `text`; very large platforms load the binary directly), or,
/// without compiled ones, hand-written ones: <programs_dir>/<chip>.s.
std::vector<sw::Program> make_programs(const std::string& out_dir, const std::string& programs_dir, const System& sys,
                                       std::vector<sw::Program>* compiled, bool text);

/// Write every queue's image into its chip's instruction memory through the
/// host socket and start the chips that have a program (unless !start: the
/// host runtime launches them, Host::invoke). Returns the instruction count.
size_t load_programs(System& sys, std::vector<sw::Program> programs, bool start = true);

}  // namespace fabricvp::groq
