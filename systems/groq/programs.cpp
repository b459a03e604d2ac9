#include "systems/groq/programs.h"
#include "models/core/output_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "models/core/module.h"

namespace fs = std::filesystem;

namespace fabricvp::groq {

CompilerParams::CompilerParams()
    : chunk_vectors(
          "sched", "chunk_vectors", 64, "vectors",
          "reduction granularity of the collective scheduler (raised to fit imem); matmul: the runs a partial "
          "product crosses between nodes in, each on its own route",
          1, 1u << 20),
      staging_chunks("sched", "staging_chunks", 4, "chunks",
                     "receive ring per source in the reduction (doubled while the reduction lags)", 1, 1u << 20),
      min_piece_vectors("sched", "min_piece_vectors", 8, "vectors",
                        "all-reduce: a level whose data gives each member fewer vectors than this hands it to fewer "
                        "members in larger pieces (0: always split evenly)",
                        0, 1u << 20),
      routing("sched", "routing", "auto", "",
              "p2p and alltoall routes: minimal, spread (equal shares over sched.paths routes) or auto (as many "
              "routes as shorten the transfer, decided from tensor size and route latencies)",
              {"minimal", "spread", "auto"}),
      paths("sched", "paths", 7, "routes", "most routes one tensor is spread over (minimal + detours)", 1, 64),
      matmul_inputs("sched", "matmul_inputs", "sram", "",
                    "matmul: A and B in SRAM before the run (sram), or streamed from the host over each chip's PCIe "
                    "link as the MXMs need them (host)",
                    {"sram", "host"}),
      matmul_order("sched", "matmul_order", "row", "",
                   "matmul from the host: row order (K tile by K tile, each slice of A sent once) or col order "
                   "(column tile by column tile, A sent again for each; seed 000 §5.2)",
                   {"row", "col"}),
      matmul_outputs("sched", "matmul_outputs", "sram", "",
                     "matmul: C left in SRAM (sram), or written back to the host over each chip's PCIe link (HOSTW) "
                     "as each part of it is final (host); the completion is then C in host memory",
                     {"sram", "host"}),
      matmul_block_rows("sched", "matmul_block_rows", 0, "rows",
                        "matmul with host inputs and outputs: rows of A per block, C computed and written back "
                        "block by block, B streamed again for each (0: all rows if C fits the SRAM, else the most "
                        "that do)",
                        0, uint64_t{1} << 40),
      save_programs_max_chips("run", "save_programs_max_chips", 1024, "chips",
                              "write <out>/programs/*.s and load them from that text for platforms up to this size "
                              "(larger ones load the binary directly)",
                              0, 1u << 30) {
  core::default_log_level();
}

std::vector<sw::Program> make_programs(const std::string& out_dir, const std::string& programs_dir, const System& sys,
                                       std::vector<sw::Program>* compiled, bool text) {
  const uint32_t n = static_cast<uint32_t>(sys.chips.size());
  std::vector<sw::Program> programs(n);
  if (compiled && !text) return std::move(*compiled);
  if (compiled) {
    fs::path dir = fs::path(out_dir) / "programs";
    std::error_code ec;
    fs::create_directories(dir, ec);
    for (uint32_t c = 0; c < n; ++c) {
      const std::string source = sw::disassemble((*compiled)[c]);
      fs::path file = dir / (std::string(sys.chips[c]->name()) + ".s");
      core::write_file(file.string(), source, "program");
      programs[c] = sw::assemble(source, file.string());
    }
    return programs;
  }
  bool any = false;
  for (uint32_t c = 0; c < n; ++c) {
    fs::path file = fs::path(programs_dir) / (std::string(sys.chips[c]->name()) + ".s");
    if (!fs::exists(file)) continue;
    programs[c] = sw::assemble_file(file.string());
    if (!programs[c].target.empty() && programs[c].target != sys.chips[c]->name())
      throw core::ConfigError(fmt::format("{}: program is for '{}' but was loaded on '{}'", file.string(),
                                          programs[c].target, sys.chips[c]->name()));
    any = true;
  }
  if (!any)
    throw core::ConfigError(
        fmt::format("{}: no program files (expected <chip name>.s, e.g. {}.s)", programs_dir, sys.chips[0]->name()));
  return programs;
}

/// Write every queue's image into its chip's instruction memory through the host
/// socket and start the chips that have a program. Returns the instruction count.
size_t load_programs(System& sys, std::vector<sw::Program> programs, bool start) {
  size_t instructions = 0;
  for (uint32_t c = 0; c < programs.size(); ++c) {
    sw::Program& p = programs[c];
    const tsp::Tsp& chip = *sys.chips[c];
    if (p.queues.size() > chip.queues)
      throw core::ConfigError(fmt::format("{}: program uses queue {} but the chip has {} queues", chip.name(),
                                          p.queues.size() - 1, chip.queues.get()));
    for (uint32_t q = 0; q < p.queues.size(); ++q) {
      if (p.queues[q].size() + 1 > chip.imem_instructions)
        throw core::ConfigError(fmt::format("{}: queue {} has {} instructions; imem_instructions is {}", chip.name(), q,
                                            p.queues[q].size(), chip.imem_instructions.get()));
      std::vector<uint8_t> image = sw::encode_queue(p.queues[q]);
      sys.host.write(c, tsp::kImemBase + q * tsp::kImemStride, image.data(), image.size());
    }
    instructions += p.instructions();
    if (!p.queues.empty()) start ? sys.chips[c]->start() : sys.chips[c]->load();  // load: errors before the run
    sw::Program().queues.swap(p.queues);                                          // the chip has it now
  }
  return instructions;
}

}  // namespace fabricvp::groq
