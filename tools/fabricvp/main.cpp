// fabricvp command line. Every subcommand lives in its own file of this
// folder and registers itself (tools/fabricvp/commands.h); main() sets them
// all up, parses, and runs the one given:
//   run        cmd_run.cpp        simulate a platform (the run driver, runtime/driver.h)
//   params     cmd_params.cpp     every parameter of a platform
//   topology   cmd_topology.cpp   describe an elaborated platform
//   experiment cmd_experiment.cpp studies made of many runs
//   asm, fec, hac, ace-equiv      tools of one subsystem
#include <CLI/CLI.hpp>

#include <systemc>

#include "fabricvp_version.h"
#include "models/core/kernel.h"
#include "tools/fabricvp/commands.h"

int sc_main(int argc, char** argv) {
  fabricvp::core::init_kernel();
  CLI::App app{"fabricvp: SystemC/TLM-2.0 virtual platform of ML interconnect hardware"};
  app.require_subcommand(1);
  app.set_version_flag("--version", FABRICVP_VERSION);
  std::vector<fabricvp::cli::Handler> handlers;
  for (const auto& setup : fabricvp::cli::setups()) handlers.push_back(setup(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const auto& h : handlers)
    if (*h.sub) return h.run();
  return 1;
}
