#include "sw/runtime/experiments.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fabricvp_version.h"
#include "models/core/config.h"

extern char** environ;

namespace fs = std::filesystem;

namespace fabricvp::runtime {

namespace {

const std::string kPlatforms = FABRICVP_SOURCE_DIR "/platforms";

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the fabricvp executable (/proc/self/exe)");
  return p.string();
}

/// One child invocation of fabricvp and where its outputs go.
struct Job {
  std::vector<std::string> args;  // after the executable
  fs::path dir;
  nlohmann::json result;  // its stats.json (run) or --json output (topology)
};

/// Run jobs `jobs` at a time; each writes into its own directory.
void run_all(std::vector<Job>& work, uint32_t jobs) {
  const std::string exe = self_exe();
  struct Running {
    pid_t pid;
    size_t index;
  };
  std::vector<Running> running;
  size_t next = 0, done = 0;
  auto start = [&](size_t i) {
    Job& j = work[i];
    fs::create_directories(j.dir);
    std::vector<std::string> argv_s{exe};
    argv_s.insert(argv_s.end(), j.args.begin(), j.args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    std::string log = (j.dir / "log.txt").string();
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    if (posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ) != 0)
      throw std::runtime_error("cannot start " + exe);
    posix_spawn_file_actions_destroy(&fa);
    running.push_back(Running{pid, i});
  };
  while (done < work.size()) {
    while (next < work.size() && running.size() < std::max<uint32_t>(1, jobs)) start(next++);
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    auto it = std::find_if(running.begin(), running.end(), [pid](const Running& r) { return r.pid == pid; });
    if (it == running.end()) continue;
    Job& j = work[it->index];
    running.erase(it);
    ++done;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::ifstream lf(j.dir / "log.txt");
      std::string text((std::istreambuf_iterator<char>(lf)), {});
      throw core::ConfigError(fmt::format("experiment point failed (exit {}): fabricvp {}\n{}",
                                          WIFEXITED(status) ? WEXITSTATUS(status) : -1, fmt::join(j.args, " "), text));
    }
    fs::path json = fs::exists(j.dir / "stats.json") ? j.dir / "stats.json" : j.dir / "topology.json";
    std::ifstream f(json);
    j.result = nlohmann::json::parse(f);
  }
}

Job run_job(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> a{"run"};
  a.insert(a.end(), args.begin(), args.end());
  a.insert(a.end(), {"-q", "-o", dir.string()});
  return Job{a, dir, {}};
}

std::string size_name(uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{}MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{}KiB", b >> 10);
  return fmt::format("{}B", b);
}

void save(const ExperimentOptions& opt, const nlohmann::json& j) {
  fs::path file = fs::path(opt.out_dir) / (opt.name + ".json");
  std::ofstream(file) << j.dump(1) << "\n";
  fmt::print("\nwrote {}\n", file.string());
}

int nonminimal(const ExperimentOptions& opt) {
  std::vector<uint64_t> sizes = {320, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144};
  if (!opt.quick)
    for (uint64_t s : {1u << 20, 4u << 20, 16u << 20, 64u << 20}) sizes.push_back(s);
  const std::vector<uint32_t> detours = {0, 1, 2, 4, 6};
  std::vector<Job> jobs;
  for (uint64_t b : sizes)
    for (uint32_t d : detours)
      jobs.push_back(
          run_job(fs::path(opt.out_dir) / "nonminimal" / fmt::format("{}_{}", b, d),
                  {kPlatforms + "/groq-node.yaml", "--workload", "p2p", "--src", "0", "--dst", "1", "--bytes",
                   std::to_string(b), "-p", "sched.routing=auto", "-p", fmt::format("sched.paths={}", d + 1)}));
  run_all(jobs, opt.jobs);
  nlohmann::json out = {{"experiment", "nonminimal"},
                        {"platform", "groq-node.yaml"},
                        {"transfer", "p2p rank 0 -> rank 1 (direct cable), fp32"},
                        {"sizes_bytes", sizes},
                        {"detours", detours}};
  fmt::print("Latency of one tensor from TSP 0 to TSP 1 of a GroqNode (us), minimal route and up to k detours\n");
  fmt::print("{:>10} {:>12}", "bytes", "minimal");
  for (size_t k = 1; k < detours.size(); ++k) fmt::print(" {:>11}", fmt::format("+{} nonmin", detours[k]));
  fmt::print("   routes used\n");
  std::vector<std::vector<double>> lat(detours.size());
  std::vector<std::vector<uint64_t>> used(detours.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    fmt::print("{:>10}", size_name(sizes[i]));
    std::string routes;
    for (size_t k = 0; k < detours.size(); ++k) {
      const nlohmann::json& w = jobs[i * detours.size() + k].result["workload"];
      if (!w["verified"].get<bool>() || w["simulated_ps"] != w["predicted_ps"])
        throw core::ConfigError("nonminimal: a point was not verified or missed its prediction");
      lat[k].push_back(w["simulated_ps"].get<double>() / 1e6);
      used[k].push_back(w["paths"].get<uint64_t>());
      fmt::print(k ? " {:>11.3f}" : " {:>12.3f}", lat[k].back());
      routes += fmt::format("{}{}", k ? "/" : "", used[k].back());
    }
    fmt::print("   {}\n", routes);
  }
  // Crossover: the smallest size at which some detour configuration is faster.
  uint64_t crossover = 0;
  for (size_t i = 0; i < sizes.size() && !crossover; ++i)
    for (size_t k = 1; k < detours.size(); ++k)
      if (lat[k][i] < lat[0][i]) crossover = sizes[i];
  for (size_t k = 0; k < detours.size(); ++k) {
    std::string key = k ? fmt::format("nonminimal_{}", detours[k]) : "minimal";
    out["latency_us"][key] = lat[k];
    out["routes_used"][key] = used[k];
  }
  out["crossover_bytes"] = crossover;
  double best = lat[0].back();
  for (size_t k = 1; k < detours.size(); ++k) best = std::min(best, lat[k].back());
  fmt::print(
      "\nnon-minimal routes first pay off at {} (seed 000 Fig 10: no benefit below ~8 kB); at {} the best "
      "is {:.1f}x faster than minimal\n",
      crossover ? size_name(crossover) : "never", size_name(sizes.back()), lat[0].back() / best);
  save(opt, out);
  return 0;
}

int hop_latency(const ExperimentOptions& opt) {
  const std::string plat = kPlatforms + "/groq-dragonfly-264.yaml";
  // Rank 255 is 3 cables from rank 0 with the default cabling (checked below).
  std::vector<Job> jobs;
  jobs.push_back(run_job(
      fs::path(opt.out_dir) / "hop-latency" / "p2p",
      {plat, "--workload", "p2p", "--src", "0", "--dst", "255", "--bytes", "320", "-p", "sched.routing=minimal"}));
  jobs.push_back(run_job(fs::path(opt.out_dir) / "hop-latency" / "one_hop",
                         {kPlatforms + "/groq-node.yaml", "--workload", "p2p", "--src", "0", "--dst", "1", "--bytes",
                          "320", "-p", "sched.routing=minimal"}));
  jobs.push_back(run_job(fs::path(opt.out_dir) / "hop-latency" / "allreduce",
                         {plat, "--workload", "allreduce", "--bytes", "320"}));
  run_all(jobs, opt.jobs);
  const nlohmann::json& p2p = jobs[0].result["workload"];
  const nlohmann::json& one = jobs[1].result["workload"];
  const nlohmann::json& ar = jobs[2].result["workload"];
  for (const nlohmann::json* w : {&p2p, &one, &ar})
    if (!(*w)["verified"].get<bool>() || (*w)["simulated_ps"] != (*w)["predicted_ps"])
      throw core::ConfigError("hop-latency: a point was not verified or missed its prediction");
  const uint64_t hops = p2p["max_hops"].get<uint64_t>();
  const double total_ns = p2p["simulated_ps"].get<double>() / 1e3;
  const double per_hop = total_ns / static_cast<double>(hops);
  const double one_hop = one["simulated_ps"].get<double>() / 1e3;
  const double ar_ns = ar["simulated_ps"].get<double>() / 1e3;
  fmt::print("One 320-byte vector across the 256-TSP Dragonfly (groq-dragonfly-264, 1 spare node)\n");
  fmt::print("  longest minimal route       {} cables (local, global, local)\n", hops);
  fmt::print("  SEND issue -> in SRAM        {:.1f} ns = {:.1f} ns per hop (seed 000 §5.6: 722 ns per hop, 2,166 ns)\n",
             total_ns, per_hop);
  fmt::print("  one hop inside a node        {:.1f} ns\n", one_hop);
  fmt::print(
      "  one-vector all-reduce        {:.1f} ns over all 256 TSPs (reduce-scatter + all-gather: the network\n"
      "                               part is 2 x (1 + 3) hops, plus 7 + 31 dependent vector ADDs)\n",
      ar_ns);
  nlohmann::json out = {{"experiment", "hop-latency"},
                        {"platform", "groq-dragonfly-264.yaml"},
                        {"hops", hops},
                        {"per_hop_ns", per_hop},
                        {"total_ns", total_ns},
                        {"one_hop_in_node_ns", one_hop},
                        {"paper_per_hop_ns", 722},
                        {"paper_total_ns", 2166},
                        {"allreduce_one_vector_ns", ar_ns}};
  save(opt, out);
  return 0;
}

int allreduce_sweep(const ExperimentOptions& opt) {
  std::vector<uint64_t> sizes = {320, 1024, 4096, 16384, 65536, 262144, 1u << 20};
  if (!opt.quick)
    for (uint64_t s : {4u << 20, 16u << 20, 64u << 20}) sizes.push_back(s);
  std::vector<Job> jobs;
  for (uint64_t b : sizes)
    jobs.push_back(run_job(fs::path(opt.out_dir) / "allreduce-sweep" / std::to_string(b),
                           {kPlatforms + "/groq-node.yaml", "--workload", "allreduce", "--bytes", std::to_string(b)}));
  run_all(jobs, opt.jobs);
  fmt::print("Realized 8-way all-reduce on a GroqNode (fp32)\n{:>10} {:>14} {:>12} {:>12} {:>10}\n", "bytes",
             "completion us", "algbw GB/s", "busbw GB/s", "% of peak");
  nlohmann::json out = {{"experiment", "allreduce-sweep"}, {"platform", "groq-node.yaml"}, {"sizes_bytes", sizes}};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const nlohmann::json& w = jobs[i].result["workload"];
    if (!w["verified"].get<bool>() || w["simulated_ps"] != w["predicted_ps"])
      throw core::ConfigError("allreduce-sweep: a point was not verified or missed its prediction");
    fmt::print("{:>10} {:>14.3f} {:>12.2f} {:>12.2f} {:>9.1f}%\n", size_name(sizes[i]),
               w["simulated_ps"].get<double>() / 1e6, w["algbw_GBps"].get<double>(), w["busbw_GBps"].get<double>(),
               w["busbw_pct_of_peak"].get<double>());
    out["completion_us"].push_back(w["simulated_ps"].get<double>() / 1e6);
    out["algbw_GBps"].push_back(w["algbw_GBps"]);
    out["busbw_GBps"].push_back(w["busbw_GBps"]);
    out["busbw_pct_of_peak"].push_back(w["busbw_pct_of_peak"]);
  }
  save(opt, out);
  return 0;
}

int bandwidth_profile(const ExperimentOptions& opt) {
  struct Point {
    std::string file;
    std::vector<std::string> overrides;
  };
  std::vector<Point> points = {{"groq-node.yaml", {}}};
  for (uint32_t n : {2u, 4u, 8u, 16u, 33u})
    points.push_back({"groq-dragonfly-264.yaml", {fmt::format("sys.nodes_per_rack={}", n), "sys.spares=none"}});
  std::vector<uint32_t> racks = {4, 8, 16, 32};
  if (!opt.quick) racks.insert(racks.end(), {64, 145});
  for (uint32_t r : racks) points.push_back({"groq-dragonfly-10440.yaml", {fmt::format("sys.racks={}", r)}});
  std::vector<Job> jobs;
  for (size_t i = 0; i < points.size(); ++i) {
    fs::path dir = fs::path(opt.out_dir) / "bandwidth-profile" / std::to_string(i);
    std::vector<std::string> a{"topology", kPlatforms + "/" + points[i].file, "--sources", "1",
                               "--json",   (dir / "topology.json").string()};
    for (const auto& o : points[i].overrides) a.insert(a.end(), {"-p", o});
    jobs.push_back(Job{a, dir, {}});
  }
  run_all(jobs, std::min<uint32_t>(opt.jobs, 1));  // the largest elaborations are memory-heavy: one at a time
  fmt::print(
      "Global (bisection) bandwidth per TSP vs system size, from the generated cabling\n{:>8} {:>10} {:>18} "
      "{:>16}\n",
      "TSPs", "cables", "bisection cables", "GB/s per TSP");
  nlohmann::json out = {{"experiment", "bandwidth-profile"},
                        {"definition",
                         "live cables across the packaging-aligned bisection (half the racks, nodes or TSPs) x one "
                         "direction's payload rate / TSPs on one side"}};
  for (const Job& j : jobs) {
    const nlohmann::json& t = j.result;
    fmt::print("{:>8} {:>10} {:>18} {:>16.2f}\n", t["chips"].get<uint64_t>(), t["cables"].get<uint64_t>(),
               t["bisection_cables"].get<uint64_t>(), t["bisection_GBps_per_tsp"].get<double>());
    out["tsps"].push_back(t["chips"]);
    out["bisection_GBps_per_tsp"].push_back(t["bisection_GBps_per_tsp"]);
  }
  fmt::print(
      "\nThe cliffs sit at the packaging boundaries of seed 000 Fig 2: one node (every TSP wired to every\n"
      "other), up to 33 nodes (every node pair one global cable), and racks (half the global ports leave\n"
      "the rack, one cable per rack pair).\n");
  save(opt, out);
  return 0;
}

// ACE (seed 002): 64-NPU 4x4x4 torus all-reduce with the ACE (tlm) and with
// NPU cores reducing through memory (none), per size: completion time,
// NPU-memory bytes per network byte and link utilization.
int ace_study(const ExperimentOptions& opt) {
  std::vector<uint64_t> sizes = {1u << 20, 4u << 20};
  if (!opt.quick) sizes = {1u << 20, 2u << 20, 4u << 20, 8u << 20, 16u << 20, 32u << 20, 64u << 20};
  const std::vector<std::string> models = {"none", "tlm"};
  std::vector<Job> jobs;
  for (uint64_t b : sizes)
    for (const std::string& m : models)
      jobs.push_back(
          run_job(fs::path(opt.out_dir) / "ace" / fmt::format("{}_{}", size_name(b), m),
                  {kPlatforms + "/ace-torus-4x4x4.yaml", "--bytes", std::to_string(b), "-p", "ace.model=" + m}));
  run_all(jobs, opt.jobs);
  fmt::print(
      "All-reduce on the 64-NPU 4x4x4 torus (enhanced 4-phase algorithm, fp32): NPU cores through memory "
      "(none) vs ACE (tlm)\n{:>8} {:>6} {:>14} {:>12} {:>12} {:>10} {:>12}\n",
      "size", "engine", "completion us", "algbw GB/s", "mem B/net B", "link util", "mem GB/s/NPU");
  nlohmann::json out = {{"experiment", "ace"},
                        {"platform", "ace-torus-4x4x4.yaml"},
                        {"definition",
                         "memory_bytes_per_network_byte = NPU-memory bytes moved for communication / payload bytes "
                         "sent on links; link_utilization = busy share of the completion time, mean over the link "
                         "directions in use"}};
  for (size_t i = 0; i < jobs.size(); i += 2) {
    nlohmann::json point = {{"bytes", sizes[i / 2]}};
    for (size_t k = 0; k < 2; ++k) {
      const nlohmann::json& w = jobs[i + k].result["workload"];
      if (!w["verified"].get<bool>()) throw std::runtime_error("unverified run in the ace experiment");
      fmt::print("{:>8} {:>6} {:>14.3f} {:>12.2f} {:>12.3f} {:>9.1f}% {:>12.1f}\n", size_name(sizes[i / 2]), models[k],
                 w["simulated_ps"].get<uint64_t>() / 1e6, w["algbw_GBps"].get<double>(),
                 w["memory_bytes_per_network_byte"].get<double>(), w["link_utilization"].get<double>(),
                 w["memory_GBps_per_npu"].get<double>());
      point[models[k]] = {{"simulated_ps", w["simulated_ps"]},
                          {"algbw_GBps", w["algbw_GBps"]},
                          {"memory_bytes_per_network_byte", w["memory_bytes_per_network_byte"]},
                          {"link_utilization_pct", w["link_utilization"]},
                          {"memory_GBps_per_npu", w["memory_GBps_per_npu"]},
                          {"network_GBps_per_npu", w["network_GBps_per_npu"]}};
    }
    const double mem_ratio = point["none"]["memory_bytes_per_network_byte"].get<double>() /
                             point["tlm"]["memory_bytes_per_network_byte"].get<double>();
    const double util_ratio =
        point["tlm"]["link_utilization_pct"].get<double>() / point["none"]["link_utilization_pct"].get<double>();
    const double speedup = point["none"]["simulated_ps"].get<double>() / point["tlm"]["simulated_ps"].get<double>();
    point["memory_ratio_none_over_ace"] = mem_ratio;
    point["utilization_ratio_ace_over_none"] = util_ratio;
    point["speedup_ace"] = speedup;
    fmt::print(
        "{:>8} {:>6} memory per network byte {:.2f}x less with ACE, link utilization {:.2f}x, completion "
        "{:.2f}x faster\n",
        "", "", mem_ratio, util_ratio, speedup);
    out["points"].push_back(point);
  }
  fmt::print(
      "\nSeed 002 (ACE) claims 3.5x less memory bandwidth for the same network bandwidth and 1.44x network\n"
      "utilization in training (compute sharing the memory); docs/ace.md compares.\n");
  save(opt, out);
  return 0;
}

}  // namespace

std::vector<std::string> experiment_names() {
  return {"nonminimal", "hop-latency", "allreduce-sweep", "bandwidth-profile", "ace"};
}

int run_experiment(const ExperimentOptions& opt) {
  try {
    fs::create_directories(opt.out_dir);
    if (opt.name == "nonminimal") return nonminimal(opt);
    if (opt.name == "hop-latency") return hop_latency(opt);
    if (opt.name == "allreduce-sweep") return allreduce_sweep(opt);
    if (opt.name == "bandwidth-profile") return bandwidth_profile(opt);
    if (opt.name == "ace") return ace_study(opt);
    throw core::ConfigError(fmt::format("unknown experiment '{}' ({})", opt.name, fmt::join(experiment_names(), ", ")));
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fabricvp: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace fabricvp::runtime
