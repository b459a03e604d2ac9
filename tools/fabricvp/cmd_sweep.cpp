// fabricvp sweep <sweep.yaml>: every point of a design-space sweep as its own
// run, N at a time, into one SQLite file (runtime/sweep.h, docs/sweeps.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/sweep.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

const cli::Command sweep_cmd([](CLI::App& app) {
  auto o = std::make_shared<runtime::SweepOptions>();
  auto* sub = app.add_subcommand("sweep", "run every point of a sweep file, results in SQLite (docs/sweeps.md)");
  auto words = std::make_shared<std::vector<std::string>>();
  sub->add_option("file", *words, "sweep file (YAML); `fabricvp sweep collect <file>` records what Slurm finished")
      ->required()
      ->expected(1, 2);
  sub->add_option("--jobs,-j", o->jobs, "simulations at a time")->check(CLI::Range(1u, 1024u));
  sub->add_option("--db", o->db, "results database (default: <out>/<sweep name>.sqlite)");
  sub->add_option("--out,-o", o->out, "output directory (<out>/<sweep name>/points/<index> per point)");
  sub->add_flag("--retry-failed", o->retry_failed, "run again the points recorded as failed");
  sub->add_flag("--quiet,-q", o->quiet, "no progress line and no per-failure messages");
  sub->add_flag("--quick", o->quick, "only the values the sweep file's quick: map names (a smoke run)");
  sub->add_flag("--slurm", o->slurm, "submit the points as one Slurm job array (sbatch) instead of running them here");
  sub->add_option("--partition", o->partition, "Slurm partition");
  sub->add_option("--time", o->time, "Slurm time limit per point (e.g. 00:30:00)");
  sub->add_option("--mem", o->mem, "Slurm memory per point (e.g. 4G)");
  return cli::Handler{
      sub, [o, words] {
        if (words->size() == 2 && (*words)[0] == "collect") {
          o->collect = true;
          o->file = (*words)[1];
        } else if (words->size() == 1) {
          o->file = (*words)[0];
        } else {
          std::fprintf(stderr, "fabricvp: error: sweep takes a sweep file, or collect and a sweep file\n");
          return 1;
        }
        if (o->collect && o->slurm) {
          std::fprintf(stderr, "fabricvp: error: sweep collect reads results; --slurm submits\n");
          return 1;
        }
        for (const auto& [name, v] : {std::pair<const char*, const std::string*>{"--partition", &o->partition},
                                      {"--time", &o->time},
                                      {"--mem", &o->mem}}) {
          if (!v->empty() && !o->slurm) {
            std::fprintf(stderr, "fabricvp: error: %s is a Slurm setting: it applies when --slurm submits%s\n", name,
                         o->collect ? ", not to sweep collect" : "");
            return 1;
          }
          // One word of the job script's #SBATCH header.
          if (v->find_first_of(" \t\r\n'\"\\$`;") != std::string::npos) {
            std::fprintf(stderr, "fabricvp: error: %s '%s': one word, no spaces or shell characters\n", name,
                         v->c_str());
            return 1;
          }
        }
        return runtime::run_sweep(*o);
      }};
});

}  // namespace
