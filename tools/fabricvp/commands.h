// Subcommands of the fabricvp executable: one file each in tools/fabricvp/.
//
// A file adds a command with a static Command object:
//
//   static fabricvp::cli::Command fec_cmd([](CLI::App& app) {
//     auto* sub = app.add_subcommand("fec", "...");
//     auto opts = std::make_shared<Options>();
//     sub->add_option(...);
//     return fabricvp::cli::Handler{sub, [opts] { return run_fec(*opts); }};
//   });
//
// main() sets every registered command up before parsing and runs the handler
// of the one that was given. Commands are listed in registration order, which
// is link order: alphabetical by file name.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace fabricvp::cli {

struct Handler {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

using Setup = std::function<Handler(CLI::App&)>;

inline std::vector<Setup>& setups() {
  static std::vector<Setup> all;
  return all;
}

struct Command {
  explicit Command(Setup s) { setups().push_back(std::move(s)); }
};

}  // namespace fabricvp::cli
