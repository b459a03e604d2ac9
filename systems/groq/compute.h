// Compiled compute workloads on a Groq system (docs/compute.md): each kind —
// matmul (sw/sched/matmul.h), cholesky (sw/sched/cholesky.h) — compiles,
// loads its inputs, checks its results against a host reference, and reports
// its statistics and summary behind one interface, found by its --workload
// name. GroqScenario runs them like a compiled collective: static check,
// simulation, completion == prediction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sw/asm/program.h"
#include "sw/sched/machine.h"
#include "systems/groq/programs.h"
#include "systems/groq/system.h"
#include "systems/kind.h"

namespace fabricvp::groq {

class ComputeWorkload {
 public:
  /// What a workload sees of its run.
  struct Env {
    System& sys;
    const sched::Machine& machine;
    const CompilerParams& params;
  };
  /// A kind option of `fabricvp run` (RunOptions::kind_options) and what it
  /// describes, for refusing it on the other workloads.
  struct Option {
    const char* name;
    const char* what;
  };

  explicit ComputeWorkload(const Env& env) : m_env(env) {}
  virtual ~ComputeWorkload() = default;

  /// Compile for the machine (core::ConfigError for a bad request).
  virtual void prepare(const systems::RunOptions& opt) = 0;
  /// The compiled programs, per physical chip (taken by the scenario).
  virtual std::vector<sw::Program>& programs() = 0;
  virtual uint64_t predicted_ps() const = 0;
  /// Timed without data (Tsp::set_timing_only): nothing to load or check.
  virtual bool timing_only() const { return false; }
  /// Launched by the host runtime (Host::invoke, from load()) instead of started when loaded.
  virtual bool launched() const { return false; }
  /// The SRAM vector ranges [first, end) the host's load writes per chip;
  /// returns the host bytes the check needs on top.
  virtual uint64_t host_memory(std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& written) const = 0;
  virtual void load(uint64_t seed) = 0;
  /// Compare with the host reference (after the run, before the SRAM is released).
  virtual systems::Outcome check(uint64_t completion_ps) = 0;
  /// workload.* statistics.
  virtual void report(const systems::Outcome& out, uint64_t completion_ps) = 0;
  /// The summary's lines before (head) and after the run's.
  virtual void summarize(const systems::Outcome& out, uint64_t completion_ps, systems::Summary& s, bool head) = 0;

 protected:
  /// A run of this workload's programs: checked or not, verified when
  /// `elements` were compared and none differs, timed against predicted_ps().
  systems::Outcome outcome(bool checked, uint64_t mismatched, uint64_t elements, uint64_t completion_ps) const;
  /// "simulated T (N ps), predicted P (equal | DIFFERS by D ps)".
  std::string completion_text(const systems::Outcome& out, uint64_t completion_ps) const;
  /// --tsps if given (1 .. the job's TSPs), else `dflt`.
  uint32_t tsps_option(const systems::RunOptions& opt, uint32_t dflt) const;
  /// fp16 FLOP/s of `tsps` TSPs like physical chip `chip` (2 per multiply-accumulate of its MXM units).
  double fp16_peak_flops(uint32_t chip, size_t tsps) const;

  Env m_env;
};

/// The compute workload named `workload`, or nullptr if it names none.
std::unique_ptr<ComputeWorkload> make_compute(const std::string& workload, const ComputeWorkload::Env& env);
/// Every compute workload's kind options with the workload taking them.
std::vector<std::pair<std::string, ComputeWorkload::Option>> compute_options();

}  // namespace fabricvp::groq
