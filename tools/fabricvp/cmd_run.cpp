// fabricvp run <platform.yaml> [options]: simulate a platform through the run
// driver (runtime/driver.h), whatever its kind.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "models/core/config.h"
#include "models/core/units.h"
#include "runtime/driver.h"
#include "sw/training/astra.h"
#include "tools/fabricvp/commands.h"

namespace {

using namespace fabricvp;

struct CliRun {
  systems::RunOptions opt;
  std::string bytes = "64MiB", dtype = "fp32", window, ber, burst, astra_system;
};

int run_cli(CliRun& c) {
  systems::RunOptions& opt = c.opt;
  try {
    opt.bytes = core::parse_bytes(c.bytes);
    if (!core::parse_dtype(c.dtype, opt.dtype))
      throw core::ConfigError(fmt::format("--dtype '{}': expected fp32, bf16, fp16, int32 or int8 (matmul)", c.dtype));
    // Options that set parameters: before the -p overrides (which win), each named as the user gave it.
    auto setting = [&opt](const std::string& key, const std::string& value, const std::string& given) {
      opt.settings.push_back(core::ConfigEntry{key, value, core::Origin{given, 0, 0}});
    };
    if (!c.ber.empty()) setting("sys.phy.ber", c.ber, "--ber " + c.ber);
    if (!c.astra_system.empty()) {
      // ASTRA-sim's system file: its settings go before the -p overrides (which win).
      const training::astra::System s = training::astra::read_system(c.astra_system);
      for (const training::astra::Setting& o : s.overrides) setting(o.param, o.value, o.origin);
      for (const std::string& i : s.ignored)
        fmt::print(stderr, "{}: {} (not modeled by fabricvp, ignored)\n", c.astra_system, i);
    }
    if (!c.burst.empty()) {
      const auto colon = c.burst.find(':');
      setting("sys.phy.burst_rate", c.burst.substr(0, colon), "--burst " + c.burst);
      if (colon != std::string::npos)
        setting("sys.phy.burst_length_mean", c.burst.substr(colon + 1), "--burst " + c.burst);
    }
    if (!c.window.empty()) {
      auto colon = c.window.find(':');
      if (colon == std::string::npos) throw core::ConfigError("--trace-window expects from:to, e.g. 0:10us");
      opt.trace_from_ps = core::parse_time_ps(c.window.substr(0, colon), "--trace-window");
      opt.trace_to_ps = core::parse_time_ps(c.window.substr(colon + 1), "--trace-window");
      if (opt.trace_to_ps <= opt.trace_from_ps)
        throw core::ConfigError(fmt::format("--trace-window {}: the window ends before it starts", c.window));
      opt.trace = true;
    }
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return runtime::kInputError;
  }
  return runtime::run(opt);
}

const cli::Command run_cmd([](CLI::App& app) {
  auto c = std::make_shared<CliRun>();
  systems::RunOptions& opt = c->opt;
  auto* run = app.add_subcommand("run", "simulate a platform running collectives (checked) or given programs");
  run->add_option("platform", opt.platform, "platform file (YAML)")->required()->check(CLI::ExistingFile);
  run->add_option("--workload,-w", opt.workload,
                  "allreduce | allgather | reducescatter | broadcast | alltoall | p2p; (Groq TSPs) matmul | cholesky "
                  "(docs/compute.md); or (NPU fabrics) a training workload file: ASTRA-sim 1.0 text or YAML "
                  "(docs/workloads.md)");
  run->add_option("--bytes,-b", c->bytes, "collective size: 4096, 100KiB, 64MiB, 1GiB (nccl-tests convention)");
  run->add_option("--dtype,-t", c->dtype, "fp32 | bf16 | fp16 | int32 (collectives); fp16 | int8 (matmul)");
  run->add_option("--root,--src", opt.root, "broadcast root rank; p2p source rank");
  run->add_option("--peer,--dst", opt.peer, "p2p destination rank");
  run->add_option("--group", opt.group,
                  "the ranks that take part (NPU tori: all, or dimensions joined by '+': local, vertical+horizontal)");
  run->add_option("--collective,-c", opt.collectives,
                  "one of several collectives in flight at once (NPU tori), repeatable: "
                  "kind[,bytes=N][,dtype=T][,group=DIMS][,root=R][,at=TIME], e.g. allreduce,bytes=1MiB,group=local");
  run->add_option("--programs", opt.programs_dir,
                  "run hand-written programs <DIR>/<chip name>.s instead of a collective");
  run->add_option("--seed,-s", opt.seed, "random seed (inputs; every random stream derives from it)");
  run->add_option("--out,-o", opt.out_dir, "output directory (stats.json, config.yaml, programs/, trace.json)");
  run->add_option("--system", c->astra_system,
                  "NPU fabrics: an ASTRA-sim system file (1.0 text or 2.x JSON): scheduling, chunks, algorithms per "
                  "dimension (docs/workloads.md)")
      ->check(CLI::ExistingFile);
  run->add_flag("--trace", opt.trace, "write a Perfetto/Chrome trace to <out>/trace.json");
  run->add_option("--trace-window", c->window, "only trace [from:to], e.g. 0:10us");
  run->add_option("-p,--param", opt.overrides, "override a parameter: key=value (glob '*' allowed)");
  run->add_flag("--quiet,-q", opt.quiet, "no summary table");
  run->add_option("--max-replays", opt.max_replays,
                  "replay the program from the start after a machine check (uncorrectable FEC codeword) up to N "
                  "times; 0: fail at the first")
      ->check(CLI::Range(0, 100));
  run->add_option("--ber", c->ber, "bit-error rate on every link (sets sys.phy.ber)");
  run->add_option("--burst", c->burst,
                  "error bursts on every link: RATE[:MEAN_BITS] (sets sys.phy.burst_rate, burst_length_mean)");
  // options of some system kinds only (the driver refuses them elsewhere)
  struct KindOption {
    const char* name;
    const char* help;
    bool flag = false;  ///< takes no value (recorded as "1")
  };
  static const KindOption kind_opts[] = {
      {"handlers",
       "PsPIN switch, Flare: handler (aggregation kernel) file, C (compiled with the documented flags) or ELF"},
      {"operator",
       "Flare: the user operator (-p flare.op=user), a C file defining uint32_t flare_user_op(uint32_t, "
       "uint32_t) on the elements' words"},
      {"sparse",
       "Flare: sparse vectors (with --workload FILE: the all-reduces' gradients), this share of each host's "
       "elements nonzero (0 < D <= 1), reduced by the sparse kernel (-p flare.sparse_format=array|hash|twolevel)"},
      {"hh", "PsPIN switch: header handler symbol (default: the one symbol ending in _hh, if any)"},
      {"ph", "PsPIN switch: payload handler symbol (default: the one symbol ending in _ph)"},
      {"th", "PsPIN switch: completion handler symbol (default: the one symbol ending in _th, if any)"},
      {"messages", "PsPIN switch: messages (default 1)"},
      {"packets", "PsPIN switch: packets per message (default 32)"},
      {"packet-bytes", "PsPIN switch: bytes per packet, IPv4 + UDP headers included (default 1024)"},
      {"packet-gap-ns", "PsPIN switch: ns between packets offered (default 20)"},
      {"message-gap-ns", "PsPIN switch: extra ns between messages (default 40)"},
      {"fill", "PsPIN switch: payload zero | seq | random (default seq)"},
      {"pcap-in", "PsPIN switch: inject the packets of a pcap file (raw IPv4), --packets per message"},
      {"ports",
       "PsPIN switch: packet k of each message on port k mod N (N must divide --packets), every port receiving its "
       "packets back to back at line rate (Flare's hosts, one per port)"},
      {"stagger", "PsPIN switch, with --ports: port p starts at message p x S (mod --messages); 0: all in step"},
      {"define", "PsPIN switch: NAME[=VALUE][,...]: compile the handlers (a .c file) with -DNAME=VALUE"},
      {"shape", "Groq TSPs, --workload matmul: MxNxL of [M x N] x [N x L], e.g. 800x32576x8192"},
      {"split", "Groq TSPs, --workload matmul: weight splits col=C,row=R (default col=1,row=1) on C x R TSPs"},
      {"n", "Groq TSPs, --workload cholesky: A is n x n (symmetric positive definite, seeded)"},
      {"matrix",
       "Groq TSPs, --workload cholesky: A from a Matrix Market file (real or integer, coordinate or array, general "
       "or symmetric; it must be symmetric and positive definite), instead of --n"},
      {"tsps",
       "Groq TSPs, --workload cholesky: TSPs sharing A's 320-row blocks; --workload bert: pipeline stages (default: "
       "every TSP of the job, at most one per block or encoder)"},
      {"encoders", "Groq TSPs, --workload bert: encoders of the stack (default 24, BERT-Large)"},
      {"seq", "Groq TSPs, --workload bert: positions per inference (default 384, SQuAD)"},
      {"hidden", "Groq TSPs, --workload bert: features (default 1024)"},
      {"heads", "Groq TSPs, --workload bert: attention heads (default 16)"},
      {"ffn", "Groq TSPs, --workload bert: feed-forward width (default 4096)"},
      {"inferences",
       "Groq TSPs, --workload bert: inferences back to back through the pipeline, or runs with --launch (default 1)"},
      {"launch",
       "Groq TSPs, --workload bert: every inference invoked by the host runtime: input over PCIe (after "
       "-p sys.host.pcie_jitter_ns of invocation jitter), program launched, output back (seed 000 Fig 17)",
       true},
      {"widest-share",
       "Groq TSPs, --workload matmul with column splits only: simulate just the TSP with the widest share of B's "
       "columns (column splits never communicate, so it sets the cluster's time); throughput and utilization "
       "are the whole cluster's",
       true},
      {"iterations", "NPU fabrics, training workloads (--workload FILE): training iterations (default 1)"},
      {"timing-only",
       "NPU fabrics: collectives move no payload; Groq TSPs, --workload matmul or bert: LW, MXM and PCIe writes "
       "compute and move no data (same times; nothing to check)",
       true},
      {"data", "NPU fabrics, training workloads: every collective moves real bytes and is checked (same times)", true}};
  for (const KindOption& k : kind_opts) {
    const std::string key = k.name;
    if (k.flag) {
      run->add_flag_callback(
          std::string("--") + k.name, [c, key] { c->opt.kind_options[key] = "1"; }, k.help);
      continue;
    }
    run->add_option_function<std::string>(
        std::string("--") + k.name, [c, key](const std::string& v) { c->opt.kind_options[key] = v; }, k.help);
  }
  return cli::Handler{run, [c, run] {
                        // What was given, so that an option the workload does not use is refused, not ignored.
                        for (const char* o : {"workload", "bytes", "dtype", "src", "dst", "group", "collective",
                                              "programs", "max-replays"})
                          if (run->count(std::string("--") + o)) c->opt.given.insert(o);
                        return run_cli(*c);
                      }};
});

}  // namespace
