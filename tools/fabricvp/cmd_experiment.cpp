// fabricvp experiment <name>: a study of a seed paper made of many checked
// runs; every system kind registers its own (systems/experiment.h).
#include <memory>
#include <string>

#include "systems/experiment.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

const cli::Command experiment_cmd([](CLI::App& app) {
  auto o = std::make_shared<systems::ExperimentOptions>();
  std::string names;
  for (const systems::Experiment* e : systems::experiments()) names += (names.empty() ? "" : " | ") + e->name;
  auto* sub = app.add_subcommand("experiment", "run a study (seeds 000, 002) made of many checked simulations");
  sub->add_option("name", o->name, names)->required();
  sub->add_option("--jobs,-j", o->jobs, "simulations at a time")->check(CLI::Range(1u, 1024u));
  sub->add_option("--out,-o", o->out_dir, "output directory (<out>/<name>.json and one folder per run)");
  sub->add_flag("--quick", o->quick, "fewer and smaller points");
  return cli::Handler{sub, [o] { return systems::run_experiment(*o); }};
});

}  // namespace
