#include "sw/runtime/torus_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <systemc>

#include "fabricvp_version.h"
#include "models/core/context.h"
#include "models/core/dtype.h"
#include "platforms/system.h"
#include "platforms/torus.h"
#include "sw/collectives/torus.h"
#include "sw/runtime/report.h"

namespace fs = std::filesystem;

namespace fabricvp::runtime {

namespace {

struct TorusRunStats : RunManifest {
  core::Value<uint64_t> npus{nullptr, "run", "npus", "NPUs", "NPUs in the platform"};
  core::Value<double> rtl_eval_s{nullptr, "run", "rtl_eval_s", "s", "host time spent evaluating the RTL datapaths"};
};

struct TorusWorkloadStats {
  core::Value<std::string> kind{nullptr, "workload", "kind", "", "collective"};
  core::Value<uint64_t> bytes{nullptr, "workload", "bytes", "bytes", "all-reduce buffer per NPU"};
  core::Value<std::string> dtype{nullptr, "workload", "dtype", "", "element type"};
  core::Value<std::string> engine{nullptr, "workload", "engine", "", "ace.model: tlm, rtl or none (NPU cores)"};
  core::Value<std::string> algorithm{nullptr, "workload", "algorithm", "", "enhanced (4 phases) or baseline (3)"};
  core::Value<std::string> phases{nullptr, "workload", "phases", "", "the algorithm's phases in order"};
  core::Value<uint64_t> chunks{nullptr, "workload", "chunks", "chunks", "chunks the buffer is split into"};
  core::Value<uint64_t> chunk_bytes{nullptr, "workload", "chunk_bytes", "bytes", "chunk size"};
  core::Value<bool> verified{nullptr, "workload", "verified", "", "every NPU's result bit-exact"};
  core::Value<uint64_t> mismatched{nullptr, "workload", "mismatched_elements", "elements",
                                   "elements that differ from the reference, over all NPUs"};
  core::Value<uint64_t> simulated_ps{nullptr, "workload", "simulated_ps", "ps",
                                     "completion: the last NPU's last result byte in its memory"};
  core::Value<double> algbw{nullptr, "workload", "algbw_GBps", "GB/s", "bytes / completion"};
  core::Value<double> busbw{nullptr, "workload", "busbw_GBps", "GB/s", "algbw x bus_factor"};
  core::Value<double> bus_factor{nullptr, "workload", "bus_factor", "", "2(n-1)/n"};
  core::Value<uint64_t> ranks{nullptr, "workload", "ranks", "NPUs", "NPUs in the all-reduce"};
  core::Value<uint64_t> network_bytes{nullptr, "workload", "network_bytes", "bytes",
                                      "payload bytes all NPUs sent on links"};
  core::Value<uint64_t> memory_bytes{nullptr, "workload", "npu_memory_bytes", "bytes",
                                     "NPU-memory bytes moved for communication, all NPUs"};
  core::Value<double> mem_per_net{nullptr, "workload", "memory_bytes_per_network_byte", "bytes/byte",
                                  "npu_memory_bytes / network_bytes"};
  core::Value<double> link_util{nullptr, "workload", "link_utilization", "%",
                                "busy share of the completion time, mean over the link directions in use"};
  core::Value<double> link_util_local{nullptr, "workload", "link_utilization_local", "%",
                                      "the same, local (intra-package) link directions"};
  core::Value<double> link_util_inter{nullptr, "workload", "link_utilization_inter", "%",
                                      "the same, vertical and horizontal (inter-package) link directions"};
  core::Value<double> net_GBps{nullptr, "workload", "network_GBps_per_npu", "GB/s",
                               "payload bytes one NPU sent per second of completion time (mean)"};
  core::Value<double> mem_GBps{nullptr, "workload", "memory_GBps_per_npu", "GB/s",
                               "communication memory bytes per NPU per second of completion time (mean)"};
};

}  // namespace

int run_torus(const RunOptions& opt) {
  const auto wall0 = WallClock::now();
  core::Context& ctx = core::Context::get();
  if (opt.workload != "allreduce")
    throw core::ConfigError(fmt::format("--workload '{}': torus platforms run allreduce only", opt.workload));
  if (!opt.programs_dir.empty()) throw core::ConfigError("--programs: torus platforms have no TSP programs");
  const core::Dtype dt = opt.dtype;
  const uint32_t es = core::dtype_bytes(dt);
  if (opt.bytes == 0 || opt.bytes % es != 0)
    throw core::ConfigError(fmt::format("--bytes {}: an all-reduce of {} needs a positive multiple of {} bytes",
                                        opt.bytes, core::dtype_name(dt), es));
  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  if (ec) throw core::ConfigError(fmt::format("{}: cannot create output directory: {}", opt.out_dir, ec.message()));
  if (opt.trace) ctx.trace().open((fs::path(opt.out_dir) / "trace.json").string(), opt.trace_from_ps, opt.trace_to_ps);

  // ---- elaborate ----
  platform::TorusSystem sys("sys");
  ctx.config().check_all_used(platform::parameter_names());
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  const uint64_t config_hash = write_effective_config((fs::path(opt.out_dir) / "config.yaml").string(), opt);
  const uint32_t n = sys.shape.npus();
  const std::string engine = sys.choices.ace_model.get();

  const uint64_t elems = opt.bytes / es;
  collectives::PlanOptions popt;
  popt.algorithm = sys.choices.algorithm.get();
  popt.chunk_bytes = uint64_t(sys.choices.chunk_kib.get()) * 1024;
  popt.align = sys.choices.align_elems.get();
  const collectives::Communicator comm(sys.shape,
                                       {collectives::kLocal, collectives::kVertical, collectives::kHorizontal}, 0);
  std::vector<std::shared_ptr<const npu::CollectivePlan>> plans;
  for (uint32_t i = 0; i < n; ++i)
    plans.push_back(collectives::make_plan(comm, npu::CollectiveKind::allreduce, dt, elems, 0, popt, i));
  const npu::CollectivePlan& plan0 = *plans[0];
  const uint64_t chunk_elems = plan0.chunk_capacity();
  const double setup_wall = since(wall0);

  // ---- data: seeded inputs in every NPU's memory ----
  const auto load0 = WallClock::now();
  const core::Dtype tdt = dt;
  auto seed_of = [&](uint32_t i) { return sys.npus[i]->seed_for("workload_input"); };
  for (uint32_t i = 0; i < n; ++i)
    core::random_elements(tdt, seed_of(i), sys.npus[i]->memory.at(0, opt.bytes), opt.bytes, 0, n);
  std::vector<npu::CollectiveHandle> handles;
  for (uint32_t i = 0; i < n; ++i)
    handles.push_back(sys.npus[i]->submit(npu::CollectiveRequest{plans[i], 0, comm.id()}));
  const double load_wall = since(load0);

  // ---- simulate ----
  const auto sim0 = WallClock::now();
  sc_core::sc_start();
  const double sim_wall = since(sim0);
  const uint64_t sim_end = sc_core::sc_time_stamp().value();
  const bool hw_ok = ctx.hw_errors().empty();
  uint64_t completion = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (hw_ok && !handles[i]->done)
      throw std::logic_error(fmt::format("{}: the simulation ended with collectives unfinished (a deadlock): {}",
                                         sys.npus[i]->name(), sys.npus[i]->progress()));
    completion = std::max(completion, handles[i]->completion_ps);
  }
  const uint64_t end = hw_ok ? completion : sim_end;
  core::set_stats_end(end);
  for (ace::Ace* a : sys.aces) a->set_end(end);

  // ---- check: the reference adds in the algorithm's order, chunk by chunk ----
  const auto check0 = WallClock::now();
  uint64_t mismatched = 0;
  std::vector<bool> npu_ok(n, true);
  struct Bad {
    uint32_t npu;
    uint64_t byte;
    double expected, got;
  };
  std::vector<Bad> first;
  if (hw_ok) {
    std::vector<std::vector<uint8_t>> x(n);
    for (uint32_t i = 0; i < n; ++i) {
      x[i].resize(opt.bytes);
      core::random_elements(tdt, seed_of(i), x[i].data(), opt.bytes, 0, n);
    }
    collectives::run_reference(plans, x);
    std::vector<uint8_t> got(opt.bytes);
    for (uint32_t i = 0; i < n; ++i) {
      sys.npus[i]->memory.read(0, got.data(), opt.bytes);
      if (std::memcmp(got.data(), x[i].data(), opt.bytes) == 0) continue;
      for (uint64_t k = 0; k < elems; ++k)
        if (std::memcmp(got.data() + k * es, x[i].data() + k * es, es) != 0) {
          ++mismatched;
          npu_ok[i] = false;
          if (first.size() < 5)
            first.push_back(Bad{i, k * es, core::element_value(tdt, x[i].data() + k * es),
                                core::element_value(tdt, got.data() + k * es)});
        }
    }
  }
  const double check_wall = since(check0);
  const uint32_t ranks_ok = static_cast<uint32_t>(std::count(npu_ok.begin(), npu_ok.end(), true));
  const bool verified = hw_ok && mismatched == 0;
  const std::string status = !hw_ok ? "hardware_error" : verified ? "ok" : "mismatch";

  // ---- statistics ----
  uint64_t net = 0, mem = 0;
  for (const auto& np : sys.npus) mem += np->memory.comm_bytes();
  for (const auto& l : sys.links) net += l->a_to_b.payload_bytes.get() + l->b_to_a.payload_bytes.get();
  double util_sum[3] = {0, 0, 0};
  uint32_t util_n[3] = {0, 0, 0};
  for (size_t k = 0; k < sys.links.size(); ++k) {
    const npu::FabricLink& l = *sys.links[k];
    for (const npu::LinkChannel* ch : {&l.a_to_b, &l.b_to_a}) {
      if (ch->transfer_count() == 0 && ch->out.size() == 0) continue;  // a direction no ring uses
      util_sum[sys.link_dim[k]] += ch->utilization_pct();
      ++util_n[sys.link_dim[k]];
    }
  }
  auto mean = [&](std::initializer_list<uint32_t> dims) {
    double s = 0;
    uint32_t c = 0;
    for (uint32_t d : dims) {
      s += util_sum[d];
      c += util_n[d];
    }
    return c ? s / c : 0.0;
  };
  double rtl_s = 0;
  for (ace::Ace* a : sys.aces) rtl_s += a->datapath_host_seconds();

  TorusRunStats rs;
  rs.status.set(status);
  rs.hardware_errors.set(ctx.hw_errors().size());
  rs.npus.set(n);
  rs.links.set(sys.links.size());
  rs.rtl_eval_s.set(rtl_s);
  rs.set(opt, config_hash, sim_end, wall0, setup_wall, load_wall, sim_wall, check_wall);

  const double algbw = completion ? static_cast<double>(opt.bytes) / (completion * 1e-12) / 1e9 : 0.0;
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  const std::string phases = plan0.describe();
  TorusWorkloadStats ws;
  ws.kind.set("allreduce");
  ws.bytes.set(opt.bytes);
  ws.dtype.set(core::dtype_name(dt));
  ws.engine.set(engine);
  ws.algorithm.set(sys.choices.algorithm.get());
  ws.phases.set(phases);
  ws.chunks.set(plan0.chunks());
  ws.chunk_bytes.set(chunk_elems * es);
  ws.verified.set(verified);
  ws.mismatched.set(mismatched);
  ws.simulated_ps.set(completion);
  ws.algbw.set(algbw);
  ws.busbw.set(algbw * bus_factor);
  ws.bus_factor.set(bus_factor);
  ws.ranks.set(n);
  ws.network_bytes.set(net);
  ws.memory_bytes.set(mem);
  ws.mem_per_net.set(net ? static_cast<double>(mem) / static_cast<double>(net) : 0.0);
  ws.link_util.set(mean({0, 1, 2}));
  ws.link_util_local.set(mean({0}));
  ws.link_util_inter.set(mean({1, 2}));
  ws.net_GBps.set(completion ? static_cast<double>(net) / n / (completion * 1e-12) / 1e9 : 0.0);
  ws.mem_GBps.set(completion ? static_cast<double>(mem) / n / (completion * 1e-12) / 1e9 : 0.0);
  {
    std::ofstream f(fs::path(opt.out_dir) / "stats.json");
    core::write_stats_json(f);
  }
  ctx.trace().close();

  // ---- summary ----
  if (!opt.quiet) {
    const auto& s = sys.shape;
    fmt::print("\nfabricvp {}  {}  ({} NPUs, {}x{}x{} torus, {} links)  seed {}\n", FABRICVP_VERSION, opt.platform, n,
               s.size[0], s.size[1], s.size[2], sys.links.size(), opt.seed);
    if (!sys.description.get().empty()) fmt::print("  {}\n", sys.description.get());
    fmt::print("  workload     allreduce {} {} ({} bytes), {} algorithm ({}), {} chunks of {}\n",
               human_bytes(opt.bytes), core::dtype_name(dt), opt.bytes, sys.choices.algorithm.get(), phases,
               plan0.chunks(), human_bytes(chunk_elems * es));
    if (engine == "none")
      fmt::print(
          "  engine       ace.model=none: NPU cores reduce through memory ({} of {} SMs, {:.0f}% of {:.0f} GB/s "
          "memory for communication)\n",
          sys.npus[0]->compute.comm_sms.get(), sys.npus[0]->compute.sms.get(),
          100.0 * sys.npus[0]->memory.comm_share.get(), sys.npus[0]->memory.GBps.get());
    else {
      const ace::Ace& a = *sys.aces[0];
      fmt::print(
          "  engine       ace.model={}: ACE with {} KiB SRAM ({} chunk slots), {} FSMs, {} x {}-lane datapaths at "
          "{:.0f} MHz ({} {} slices)\n",
          engine, a.sram_kib.get(), a.slots.get(), a.fsms.get(), a.alu_units.get(), a.alu_lanes.get(),
          a.clock_mhz.get(), a.slices(), engine == "rtl" ? "verilated RTL" : "C++ datapath");
    }
    if (!hw_ok)
      fmt::print("  result       FAILED: {} hardware error(s); first: {}: {}\n", ctx.hw_errors().size(),
                 ctx.hw_errors()[0].where, ctx.hw_errors()[0].message);
    else if (verified)
      fmt::print("  result       verified: {}/{} NPUs bit-exact against the host reference\n", ranks_ok, n);
    else {
      fmt::print("  result       MISMATCH: {} element(s) differ on {} NPU(s)\n", mismatched, n - ranks_ok);
      for (const Bad& b : first)
        fmt::print("               {} byte {}: expected {} got {}\n", sys.npus[b.npu]->name(), b.byte, b.expected,
                   b.got);
    }
    fmt::print("  completion   simulated {} ({} ps)\n", human_time(completion), completion);
    fmt::print("  bandwidth    algbw {:.2f} GB/s, busbw {:.2f} GB/s (bus factor {:.4f})\n", algbw, algbw * bus_factor,
               bus_factor);
    fmt::print(
        "  memory       {:.3f} NPU-memory bytes per network byte ({} memory, {} network bytes; {:.1f} GB/s "
        "memory and {:.1f} GB/s network per NPU)\n",
        ws.mem_per_net.get(), mem, net, ws.mem_GBps.get(), ws.net_GBps.get());
    if (!sys.aces.empty()) {
      double sram_peak = 0, sram_mean = 0, fsm = 0, alu = 0, port = 0;
      for (ace::Ace* a : sys.aces) {
        sram_peak = std::max<double>(sram_peak, static_cast<double>(a->peak_sram_bytes.get()));
        sram_mean += a->mean_sram_bytes.value().get<double>();
        fsm += a->fsm_mean_utilization.value().get<double>();
        alu += a->alu_utilization.value().get<double>();
        port += a->sram_port_utilization.value().get<double>();
      }
      const double k = static_cast<double>(sys.aces.size());
      fmt::print(
          "  ace          SRAM peak {} KiB, mean {:.1f} KiB; SRAM port {:.1f}% busy; FSM utilization {:.1f}%; "
          "ALU utilization {:.1f}% (means over NPUs)\n",
          static_cast<uint64_t>(sram_peak) / 1024, sram_mean / k / 1024, port / k, fsm / k, alu / k);
    }
    fmt::print("\n  {:<12} {:>6} {:>12} {:>10} {:>10} {:>10}   (busy share of {} simulated)\n", "links", "dirs",
               "payload GB/s", "mean", "min", "max", human_time(end));
    for (uint32_t d = 0; d < 3; ++d) {
      double lo = 100, hi = 0;
      double rate = 0;
      for (size_t k = 0; k < sys.links.size(); ++k) {
        if (sys.link_dim[k] != d) continue;
        rate = sys.links[k]->payload_GBps();
        for (const npu::LinkChannel* ch : {&sys.links[k]->a_to_b, &sys.links[k]->b_to_a}) {
          if (ch->transfer_count() == 0 && ch->out.size() == 0) continue;
          const double u = ch->utilization_pct();
          lo = std::min(lo, u);
          hi = std::max(hi, u);
        }
      }
      if (util_n[d] == 0) continue;
      fmt::print("  {:<12} {:>6} {:>12.2f} {:>9.1f}% {:>9.1f}% {:>9.1f}%\n", collectives::dim_name(d), util_n[d], rate,
                 util_sum[d] / util_n[d], lo, hi);
    }
    fmt::print("  {:<12} {:>6} {:>12} {:>9.1f}%\n", "all", util_n[0] + util_n[1] + util_n[2], "", mean({0, 1, 2}));
    fmt::print(
        "\n  host         wall {:.2f} s (setup {:.2f}, load {:.2f}, simulate {:.2f}{}, check {:.2f}), peak RSS "
        "{:.0f} MiB\n",
        rs.wall_s.get(), setup_wall, load_wall, sim_wall,
        engine == "rtl" ? fmt::format(" of which RTL {:.2f}", rtl_s) : "", check_wall, rs.peak_rss_mib.get());
    fmt::print("\n  outputs      {}/stats.json  {}/config.yaml{}\n", opt.out_dir, opt.out_dir,
               opt.trace ? fmt::format("  {}/trace.json", opt.out_dir) : "");
  }
  if (!hw_ok) return kHardwareError;
  if (!verified) return kMismatch;
  return kOk;
}

}  // namespace fabricvp::runtime
