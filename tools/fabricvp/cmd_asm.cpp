// fabricvp asm <program.s> [-o normalized.s]: check a TSP program (errors as
// file:line) and print a summary (sw/asm).
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <string>

#include "models/core/config.h"
#include "models/core/output_file.h"
#include "sw/asm/program.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

struct Options {
  std::string file, out;
};

int assemble(const Options& o) {
  try {
    sw::Program p = sw::assemble_file(o.file);
    std::string text = sw::disassemble(p);
    if (!o.out.empty()) {
      core::write_file(o.out, text, "program");
    }
    size_t used = 0;
    for (const auto& q : p.queues) used += !q.empty();
    fmt::print("{}: {} instructions in {} queue(s){}\n", o.file, p.instructions(), used,
               p.target.empty() ? "" : fmt::format(", for {}", p.target));
    return 0;
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

const cli::Command asm_cmd([](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("asm", "assemble a TSP program, report errors with file:line, print a summary");
  sub->add_option("program", o->file, "assembly file")->required();
  sub->add_option("-o,--output", o->out, "write the normalized program text here");
  return cli::Handler{sub, [o] { return assemble(*o); }};
});

}  // namespace
