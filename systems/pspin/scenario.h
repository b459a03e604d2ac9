// System kind "pspin": one PsPIN-like switch (models/pspin) fed by a packet
// generator or a pcap file, running the handlers of an ELF or C file. The
// run is checked as PsPIN's driver checks it (every packet fed back) and
// more: no handler fault, nothing dropped; its outputs are what a handler
// developer inspects (host writes, egress packets, each cluster's L1).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/core/module.h"
#include "models/core/stats.h"
#include "models/pspin/switch.h"
#include "models/riscv/elf.h"
#include "systems/kind.h"
#include "systems/pspin/packets.h"

namespace fabricvp::pspin {

/// The platform: sys.switch0 (its parameters: docs/pspin.md).
class System : public core::Module {
 public:
  explicit System(const sc_core::sc_module_name& nm);
  core::Param<std::string> topology;
  Switch switch0;
};

/// A path as a program's argument: "./" before one that starts with '-' or '@' (else read as an option, or
/// as a file of options).
std::string path_arg(const std::string& path);
/// Compiles a handler C file with the documented flags (docs/pspin.md) into
/// `out_elf` (systems/spawn.h: no shell in between); throws core::ConfigError
/// with the compiler's messages. `extra`: more C files to compile with it;
/// `defines`: more -D flags.
void compile_handlers(const std::string& c_file, const std::string& out_elf, uint32_t clusters, bool f,
                      const std::vector<std::string>& extra = {}, const std::vector<std::string>& defines = {});
/// The handlers of `file`: an ELF, or a C file compiled into `out_dir`;
/// checks they were built for the switch's clusters. core::ConfigError if not.
riscv::ElfImage handler_image(const std::string& file, const std::string& out_dir, const Switch& sw,
                              const std::vector<std::string>& extra = {}, const std::vector<std::string>& defines = {});
/// The handler `given` (a symbol of img), or, if empty, the one symbol ending
/// in `suffix`; 0 if none and not required. `option` names the command-line
/// option in errors; `name` gets the symbol's name.
uint32_t find_handler(const riscv::ElfImage& img, const std::string& given, const char* option, const char* suffix,
                      bool required, std::string& name);

struct RunStats {
  core::Value<double> throughput_Gbps{nullptr, "workload", "throughput_Gbps", "Gbit/s",
                                      "bytes of the packets fed back / (last feedback - first arrival)"};
  core::Value<double> latency_avg_ns{nullptr, "workload", "latency_avg_ns", "ns",
                                     "packet latency, arrival to feedback: mean"};
  core::Value<uint64_t> packets{nullptr, "workload", "packets", "", "packets offered"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps", "last feedback"};
  core::Value<std::string> handlers{nullptr, "workload", "handlers", "", "handler file"};
  core::Value<bool> verified{nullptr, "workload", "verified", "", "every packet fed back, no fault, no drop"};
  core::Value<double> ph_cycles_mean{nullptr, "workload", "ph_cycles_mean", "cycles",
                                     "service time of the payload handler, mean over its runs (tau)"};
  core::Value<double> ph_instructions_mean{nullptr, "workload", "ph_instructions_mean", "",
                                           "instructions of the payload handler, mean over its runs"};
  core::Value<double> service_Mpps{
      nullptr, "workload", "service_Mpps", "Mpackets/s",
      "packets the cores can serve: cores x clock / (tau + dispatch_cycles), payload handlers only"};
  core::Value<double> steady_Mpps{nullptr, "workload", "steady_Mpps", "Mpackets/s",
                                  "feedback rate between the 10th and the 90th percentile feedback"};
  // the input-buffer model (--ports, payload handlers only; models/pspin/input_buffer.h)
  core::Value<bool> model_applies{nullptr, "workload", "model_applies", "",
                                  "the input-buffer model's assumptions hold for the run (--ports; the summary says "
                                  "why not)"};
  core::Value<double> model_l2_mean_packets{
      nullptr, "workload", "model_l2_mean_packets", "packets",
      "the input-buffer model's time average of the packets in L2 (tau: the measured ph_cycles_mean)"};
  core::Value<uint64_t> model_l2_peak_packets{nullptr, "workload", "model_l2_peak_packets", "packets",
                                              "the input-buffer model's most packets in L2 at once"};
  core::Value<double> model_wait_ns{nullptr, "workload", "model_wait_ns", "ns",
                                    "the input-buffer model's mean wait of a packet for a free core"};
  core::Value<double> wait_ns{nullptr, "workload", "wait_ns", "ns",
                              "mean wait of a packet for a free core: mean latency minus the latency without waiting "
                              "(arrival to the next clock edge, to ready, dispatch, tau)"};
};

class Scenario : public systems::Scenario {
 public:
  Scenario();
  std::string headline() const override;
  std::string description() const override;
  uint64_t links() const override { return 0; }
  void prepare(const systems::RunOptions& opt) override;
  void load() override;
  void finish() override;
  systems::Outcome check() override;
  void report(const systems::Outcome& outcome) override;
  void summarize(const systems::Outcome& outcome, systems::Summary& out) override;
  void tables(systems::Summary& out) override;
  std::vector<std::string> outputs() const override { return m_outputs; }
  int topology(const std::string& platform, uint32_t sources, nlohmann::json& json) override;

  Switch& sw() { return m_sys->switch0; }

 private:
  std::unique_ptr<System> m_sys;
  std::string m_out_dir, m_handler_file;
  riscv::ElfImage m_image;
  Handlers m_handlers;
  std::vector<Packet> m_packets;
  GeneratorOptions m_gen;
  std::string m_model_note;  // with --ports: why the input-buffer model does not apply (empty: it does)
  std::vector<std::string> m_outputs;
  RunStats m_stats;
};

}  // namespace fabricvp::pspin
