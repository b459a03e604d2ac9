// System kinds: each kind of platform fabricvp models (Groq TSP systems, NPU
// tori with the ACE, and the PsPIN switches and optical fabrics to come) is
// one folder under systems/ that elaborates its `sys` module tree from a
// platform file and runs its scenario, and registers itself here by name.
// The run driver (runtime/), `fabricvp params`, `topology` and `experiment`
// find a platform's kind through this registry and never test a kind's name.
//
// A platform file selects its kind with `sys.topology`: every kind lists the
// topology values it elaborates (a file without the key gets the default
// kind). docs/architecture.md ("Adding a system kind") walks through a new one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/dtype.h"
#include "models/core/timebase.h"

namespace fabricvp::systems {

/// What `fabricvp run` asks of a scenario (filled from the command line).
struct RunOptions {
  std::string platform;
  std::vector<std::string> overrides;  ///< -p key=value
  /// Settings read from another file (ASTRA-sim's --system file), set before
  /// the -p overrides (which win); each origin is what an error names.
  std::vector<core::ConfigEntry> settings;
  uint64_t seed = 1;
  std::string out_dir = "out";
  bool trace = false;
  uint64_t trace_from_ps = 0, trace_to_ps = core::kNever;
  bool quiet = false;

  // One collective ...
  std::string workload = "allreduce";
  uint64_t bytes = 0;
  core::Dtype dtype = core::Dtype::fp32;
  uint32_t root = 0;          ///< broadcast root; p2p source
  uint32_t peer = 1;          ///< p2p destination
  std::string group = "all";  ///< the ranks that take part (kinds with sub-groups)
  // ... or several at once (kinds with a collective service): "kind,key=value,..."
  std::vector<std::string> collectives;
  // ... or hand-written programs: <programs_dir>/<chip name>.s
  std::string programs_dir;
  /// Options only some kinds take (the option's name without dashes -> its
  /// text), e.g. the PsPIN switch's "handlers" or "packets". The driver
  /// refuses an option the platform's kind does not list (Kind::options).
  std::map<std::string, std::string> kind_options;
  /// The options of every kind that were given on the command line, by
  /// their first long name without dashes ("bytes", "src", "dst", "group",
  /// "workload", "collective", "programs", "max-replays"): a scenario
  /// refuses the ones its workload does not use (refuse), none is ignored.
  std::set<std::string> given;
  /// Throws core::ConfigError "--<option>: <why>" if `option` was given
  /// (an option of kind_options counts as given too).
  void refuse(const std::string& option, const std::string& why) const;
  /// `dtype` if collectives reduce it (core::kDtypes); else core::ConfigError naming --dtype.
  core::Dtype reduction_dtype() const;

  // Software replay (seed 000 §4.5): a machine check restarts the run from
  // the start in a fresh process, up to max_replays times.
  uint32_t max_replays = 3;
  struct MachineCheck {
    uint64_t time_ps;
    std::string link, chip;
  };
  uint32_t attempt = 0;               ///< set by the driver for each attempt
  std::vector<MachineCheck> history;  ///< machine checks of the earlier attempts
  int report_fd = -1;                 ///< where an attempt reports its machine check (driver)
};

/// What a scenario's check found (hardware errors are the driver's: core::Context).
struct Outcome {
  bool checked = false;     ///< a result was compared with a host reference
  bool verified = false;    ///< ... and every element matched
  bool timed = false;       ///< a completion time was predicted
  bool timing_ok = true;    ///< ... and the simulation met it exactly
  std::string timing_note;  ///< why not (for the error message)
};

/// Lines of the summary table: "  label        text".
class Summary {
 public:
  void line(const std::string& label, const std::string& text);
  /// A line without a label (continuation, table rows).
  void text(const std::string& text);
  const std::string& str() const { return m_out; }

 private:
  std::string m_out;
};

/// One run of one platform of a kind: it owns the elaborated `sys` tree.
class Scenario {
 public:
  virtual ~Scenario() = default;
  /// "8 TSPs, 28 links" (the summary's first line).
  virtual std::string headline() const = 0;
  /// The platform's description (sys.description), if any.
  virtual std::string description() const = 0;
  /// Links (cables) in the platform (run.links).
  virtual uint64_t links() const = 0;
  /// Compile or schedule the workload, load programs (after elaboration).
  virtual void prepare(const RunOptions& opt) = 0;
  /// Estimate, after prepare(), of the host memory the rest of the run will
  /// hold at its peak (simulated memories, data in flight, the check's
  /// reference), in bytes; with what dominates it ("64 NPU memories of 512
  /// MiB"). The driver refuses a run that would not fit before it allocates
  /// (docs/reliability.md). 0: small enough not to matter.
  virtual uint64_t host_bytes(std::string& what) const {
    (void)what;
    return 0;
  }
  /// Load the inputs and what the check needs.
  virtual void load() = 0;
  /// During the simulation: the share of the workload done, 0..1, for the
  /// progress line's ETA; negative when the kind cannot tell.
  virtual double fraction_done() const { return -1; }
  /// sc_start() returned: apply what is pending; find the completion.
  virtual void finish() = 0;
  /// Compare the results with the host reference (only when no hardware error was raised).
  virtual Outcome check() = 0;
  /// Register the kind's statistics (run.* extras, workload.*, ...).
  virtual void report(const Outcome& outcome) = 0;
  /// The kind's summary lines (workload, result, completion, ...), before the host line.
  virtual void summarize(const Outcome& outcome, Summary& out) = 0;
  /// The kind's tables (links, ...), after the host line.
  virtual void tables(Summary& out) { (void)out; }
  /// What the host line adds ("of which RTL 1.2 s").
  virtual std::string host_detail() const { return {}; }
  /// Files written besides stats.json and config.yaml ("programs/").
  virtual std::vector<std::string> outputs() const { return {}; }
  /// Register the replay statistics (workload.replays, ...): kinds whose
  /// hardware can raise machine checks.
  virtual bool replays() const { return false; }
  /// `fabricvp topology`: describe the elaborated platform on stdout and put
  /// the numbers in `json` (with their units under "schema", as stats.json
  /// has them). Returns an exit code.
  virtual int topology(const std::string& platform, uint32_t sources, nlohmann::json& json) = 0;
};

struct Kind {
  std::string name;                     ///< e.g. "groq"
  std::string description;              ///< one line for listings
  std::vector<std::string> topologies;  ///< values of sys.topology it elaborates
  bool default_kind = false;            ///< the kind of a platform without sys.topology
  /// Elaborate `sys` (and the kind's run-level parameters) from the loaded configuration.
  std::function<std::unique_ptr<Scenario>(const RunOptions& opt)> elaborate;
  std::vector<std::string> options;  ///< the RunOptions::kind_options it takes
};

/// Register a kind; called from a static object in the kind's folder:
///   static const bool registered = systems::register_kind(Kind{...});
bool register_kind(Kind kind);
/// Every registered kind, by name.
std::vector<const Kind*> kinds();
/// The kind of the loaded platform (by sys.topology). Throws core::ConfigError
/// naming file, line and key for a topology no kind elaborates.
const Kind& kind_for(const core::Config& config);

/// Names of all declared parameters (for "did you mean" suggestions).
std::vector<std::string> parameter_names();
/// kind.elaborate(opt); a core::ConfigError it throws also lists the keys
/// that set nothing and are close to a parameter declared so far: the check
/// that failed may be about the default a typo left (`portz: 8` leaves
/// `ports` at its default), and check_all_used() runs only after elaboration.
std::unique_ptr<Scenario> elaborate(const Kind& kind, const RunOptions& opt);

}  // namespace fabricvp::systems
