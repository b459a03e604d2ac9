#include "systems/pspin/scenario.h"
#include "models/core/output_file.h"
#include "models/pspin/input_buffer.h"
#include "systems/spawn.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "models/core/context.h"

namespace fabricvp::pspin {

namespace fs = std::filesystem;

System::System(const sc_core::sc_module_name& nm)
    : core::Module(nm, "pspin.system"),
      topology(this, "topology", "pspin", "", "one PsPIN switch fed by a packet generator", {"pspin"}),
      switch0("switch0") {}

namespace {

uint32_t to_u32(const std::map<std::string, std::string>& o, const char* key, uint32_t def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  const std::string& s = it->second;
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    throw core::ConfigError(fmt::format("--{} '{}': expected a whole number", key, s));
  if (s.size() > 9) throw core::ConfigError(fmt::format("--{} {}: too large", key, s));
  return static_cast<uint32_t>(std::stoul(s));
}

/// A time in ns: a decimal number from 0 to 1e9 (one second; "inf", hex and white space refused).
double to_ns(const std::map<std::string, std::string>& o, const char* key, double def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  const std::string& t = it->second;
  size_t used = 0;
  double v = 0;
  try {
    if (!t.empty() && !std::isspace(static_cast<unsigned char>(t[0])) && t.find_first_of("xX") == std::string::npos)
      v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != t.size() || !(v >= 0) || !(v <= 1e9))
    throw core::ConfigError(fmt::format("--{} '{}': expected a number of ns from 0 to 1e9", key, t));
  return v;
}

// --define NAME[=VALUE][,NAME[=VALUE]...]: -D flags for the handlers' compiler. Names are C identifiers and
// values plain tokens (letters, digits, _ . + -): they go into a command line.
std::vector<std::string> define_flags(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  if (list.empty()) throw core::ConfigError("--define: expected NAME or NAME=VALUE[,...]");
  while (at < list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string d = list.substr(at, comma - at);
    const size_t eq = std::min(d.find('='), d.size());
    const std::string name = d.substr(0, eq), value = eq < d.size() ? d.substr(eq + 1) : "";
    const bool ok_name =
        !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
        name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    if (!ok_name ||
        value.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") !=
            std::string::npos ||
        (eq < d.size() && value.empty()))
      throw core::ConfigError(fmt::format(
          "--define '{}': expected NAME or NAME=VALUE (a C identifier; letters, digits, _ . + - in the value)", d));
    if (name == "NB_CLUSTERS")
      throw core::ConfigError("--define NB_CLUSTERS: set by the switch (its clusters), not here");
    out.push_back("-D" + d);
    at = comma + 1;
  }
  if (!list.empty() && list.back() == ',')
    throw core::ConfigError(fmt::format("--define '{}': an empty item after the last comma", list));
  return out;
}

std::string get(const std::map<std::string, std::string>& o, const char* key, const std::string& def = "") {
  auto it = o.find(key);
  return it == o.end() ? def : it->second;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

/// The handler `name` (or, unnamed, the one symbol ending in `suffix`).
uint32_t find_handler(const riscv::ElfImage& img, const std::string& given, const char* option, const char* suffix,
                      bool required, std::string& name) {
  if (!given.empty()) {
    auto a = img.symbol(given);
    if (!a) {
      std::string found;
      for (const auto& [n, v] : img.symbols)
        if ((ends_with(n, "_hh") || ends_with(n, "_ph") || ends_with(n, "_th")) && img.executable(v)) found += " " + n;
      throw core::ConfigError(fmt::format("--{} {}: no such symbol in {} (handlers there:{})", option, given, img.path,
                                          found.empty() ? " none" : found));
    }
    if (!img.executable(*a))
      throw core::ConfigError(
          fmt::format("--{} {}: the symbol is at 0x{:08x}, outside the code of {} (data, not a handler)", option, given,
                      *a, img.path));
    name = given;
    return *a;
  }
  std::vector<std::string> cands;  // code symbols only: a data object may end in the suffix too
  for (const auto& [n, v] : img.symbols)
    if (ends_with(n, suffix) && img.executable(v)) cands.push_back(n);
  if (cands.size() == 1) {
    name = cands[0];
    return *img.symbol(cands[0]);
  }
  if (cands.empty() && !required) return 0;
  throw core::ConfigError(
      fmt::format("{}: {} symbols end in '{}'{}: name the handler with --{}", img.path, cands.size(), suffix,
                  cands.empty() ? "" : " (" + fmt::format("{}", fmt::join(cands, ", ")) + ")", option));
}

std::string path_arg(const std::string& path) {
  return !path.empty() && (path[0] == '-' || path[0] == '@') ? "./" + path : path;
}

void compile_handlers(const std::string& c_file, const std::string& out_elf, uint32_t clusters, bool f,
                      const std::vector<std::string>& extra, const std::vector<std::string>& defines) {
  const std::string hdir = FABRICVP_HANDLER_DIR;
  std::vector<std::string> argv = {FABRICVP_RISCV_CC,
                                   f ? "-march=rv32imafc" : "-march=rv32imac",
                                   f ? "-mabi=ilp32f" : "-mabi=ilp32",
                                   "-O3",
                                   "-g",
                                   "-static",
                                   "-nostdlib",
                                   "-nostartfiles",
                                   "-ffreestanding",
                                   "-fno-builtin-printf",
                                   fmt::format("-DNB_CLUSTERS={}", clusters)};
  argv.insert(argv.end(), defines.begin(), defines.end());
  argv.insert(argv.end(), {"-I", hdir + "/include", "-isystem", "/usr/lib/picolibc/riscv64-unknown-elf/include", "-T",
                           hdir + "/rt/handler.ld", path_arg(c_file)});
  for (const std::string& e : extra) argv.push_back(path_arg(e));
  argv.insert(argv.end(), {hdir + "/rt/printf.c", hdir + "/rt/string.c", "-lgcc", "-o", path_arg(out_elf)});
  int status = 0;
  const std::string out = systems::run_capture(argv, status);
  if (status == systems::kCannotStart) throw core::ConfigError(fmt::format("{}: {}", c_file, out));
  if (status != 0)
    throw core::ConfigError(fmt::format("{}{}: the handler does not compile for the switch's cores:\n{}", c_file,
                                        extra.empty() ? "" : fmt::format(" with {}", fmt::join(extra, ", ")), out));
}

riscv::ElfImage handler_image(const std::string& file, const std::string& out_dir, const Switch& sw,
                              const std::vector<std::string>& extra, const std::vector<std::string>& defines) {
  std::string elf = file;
  if (fs::path(file).extension() == ".c") {
    fs::create_directories(out_dir);
    elf = (fs::path(out_dir) / (fs::path(file).stem().string() + ".elf")).string();
    compile_handlers(file, elf, sw.nclusters(), sw.isa.get() == "rv32imafc", extra, defines);
  } else if (!extra.empty()) {
    throw core::ConfigError(fmt::format("{}: an ELF file takes no more sources ({})", file, extra.front()));
  }
  riscv::ElfImage image;
  try {
    image = riscv::read_elf(elf);
  } catch (const std::exception& e) {
    throw core::ConfigError(e.what());
  }
  if (elf != file) image.path = fmt::format("{} (compiled to {})", file, elf);  // what errors about it name
  if (auto at = image.symbol("fabricvp_nb_clusters")) {
    for (const auto& seg : image.segments) {
      if (*at >= seg.addr && uint64_t{*at} + 4 <= uint64_t{seg.addr} + seg.bytes.size()) {
        uint32_t n;
        std::memcpy(&n, &seg.bytes[*at - seg.addr], 4);
        if (n != sw.nclusters())
          throw core::ConfigError(fmt::format(
              "{}: handlers compiled for NB_CLUSTERS={} (task_t holds one scratchpad per cluster), the switch has {} "
              "clusters: recompile with -DNB_CLUSTERS={} or give the .c file",
              elf, n, sw.nclusters(), sw.nclusters()));
      }
    }
  }
  return image;
}

Scenario::Scenario() : m_sys(std::make_unique<System>("sys")) {}

std::string Scenario::headline() const {
  const Switch& s = m_sys->switch0;
  return fmt::format("PsPIN switch: {} clusters x {} cores at {:.0f} MHz, {} port(s) at {:.0f} Gbit/s", s.nclusters(),
                     s.ncores(), s.clock_MHz.get(), s.ports.get(), s.port_Gbps.get());
}

std::string Scenario::description() const {
  return fmt::format("{} packets through {} (hh {}, ph {}, th {})", m_packets.size(), m_handler_file,
                     m_handlers.hh_name.empty() ? "-" : m_handlers.hh_name,
                     m_handlers.ph_name.empty() ? "-" : m_handlers.ph_name,
                     m_handlers.th_name.empty() ? "-" : m_handlers.th_name);
}

void Scenario::prepare(const systems::RunOptions& opt) {
  const auto& o = opt.kind_options;
  m_out_dir = opt.out_dir;
  for (const char* option : {"workload", "bytes", "dtype", "src", "dst", "group", "collective", "programs"})
    opt.refuse(option,
               "a PsPIN switch runs packet handlers on generated or captured packets (--handlers, --packets, "
               "--pcap-in; docs/pspin.md)");
  if (o.count("pcap-in"))
    for (const char* option : {"messages", "packet-bytes", "fill"})
      opt.refuse(option, "the packets come from --pcap-in (their sizes, payloads and count are the capture's)");
  m_handler_file = get(o, "handlers");
  if (m_handler_file.empty())
    throw core::ConfigError("--handlers FILE.c|FILE.elf: a PsPIN switch runs packet handlers; give them");
  if (!fs::exists(m_handler_file)) throw core::ConfigError(fmt::format("--handlers {}: no such file", m_handler_file));
  if (o.count("define") && fs::path(m_handler_file).extension() != ".c")
    throw core::ConfigError(fmt::format("--define: {} is not compiled here (a .c file is)", m_handler_file));
  m_image = handler_image(m_handler_file, m_out_dir, sw(), {},
                          o.count("define") ? define_flags(get(o, "define")) : std::vector<std::string>{});
  m_handlers.hh = find_handler(m_image, get(o, "hh"), "hh", "_hh", false, m_handlers.hh_name);
  m_handlers.ph = find_handler(m_image, get(o, "ph"), "ph", "_ph", true, m_handlers.ph_name);
  m_handlers.th = find_handler(m_image, get(o, "th"), "th", "_th", false, m_handlers.th_name);

  GeneratorOptions g;
  g.messages = to_u32(o, "messages", 1);
  g.packets = to_u32(o, "packets", 32);
  g.packet_bytes = to_u32(o, "packet-bytes", 1024);
  g.packet_gap_ns = to_ns(o, "packet-gap-ns", 20);
  g.message_gap_ns = to_ns(o, "message-gap-ns", 40);
  g.fill = get(o, "fill", "seq");
  g.ports = to_u32(o, "ports", 0);
  if (o.count("ports") && g.ports == 0) throw core::ConfigError("--ports 0: expected at least one port");
  g.stagger = to_u32(o, "stagger", 0);
  if (g.ports) {
    for (const char* gap : {"packet-gap-ns", "message-gap-ns", "pcap-in"})
      if (o.count(gap))
        throw core::ConfigError(
            fmt::format("--{} with --ports: the ports receive their packets back to back at line rate", gap));
    if (g.ports > sw().ports.get())
      throw core::ConfigError(fmt::format("--ports {}: {} has {} port(s) (-p {}.ports={})", g.ports, sw().name(),
                                          sw().ports.get(), sw().name(), g.ports));
  }
  g.seed = opt.seed;
  const std::string pcap = get(o, "pcap-in");
  m_packets = pcap.empty() ? generate(g) : read_pcap(pcap, g.packets, g.packet_gap_ns, g.message_gap_ns);
  // A packet that can never have room in the packet buffers would wait there for ever.
  const Switch& s = sw();
  for (const Packet& k : m_packets) {
    const uint64_t size = k.bytes.size(), l1 = s.copy_bytes.get() ? std::min<uint64_t>(s.copy_bytes.get(), size) : size;
    const std::string what = pcap.empty()
                                 ? fmt::format("--packet-bytes {}", size)
                                 : fmt::format("{}: packet {} of message {} ({} bytes)", pcap, k.index, k.msg, size);
    if (size > uint64_t{s.l2_packet_buffer_KiB.get()} * 1024)
      throw core::ConfigError(fmt::format("{}: larger than the L2 packet buffer ({} KiB, {}.l2_packet_buffer_KiB)",
                                          what, s.l2_packet_buffer_KiB.get(), s.name()));
    if (l1 > uint64_t{s.l1_packet_buffer_KiB.get()} * 1024)
      throw core::ConfigError(
          fmt::format("{}: larger than a cluster's L1 packet buffer ({} KiB, {}.l1_packet_buffer_KiB)", what,
                      s.l1_packet_buffer_KiB.get(), s.name()));
  }
  m_gen = g;
  m_stats.packets.set(m_packets.size());
  m_stats.handlers.set(m_handler_file);
}

void Scenario::load() {
  try {
    sw().load(m_image, m_handlers);
  } catch (const std::exception& e) {
    throw core::ConfigError(e.what());
  }
  sw().offer(m_packets);
}

void Scenario::finish() {
  // Faults are reported (the switch kept running); the run ends with them as errors.
  for (const Fault& f : sw().fault_log()) {
    core::HardwareError e;
    e.where = f.core;
    e.time_ps = f.time_ps;
    e.message = fmt::format("handler {} faulted: {} at pc 0x{:08x}, address 0x{:08x}", f.handler, f.what, f.pc, f.addr);
    core::Context::get().hw_error(e);
  }
  if (!sw().all_done()) {
    core::HardwareError e;
    e.where = sw().name();
    e.time_ps = sc_core::sc_time_stamp().value();
    e.message = fmt::format("{} of {} packets were never fed back",
                            m_packets.size() - sw().feedbacks.get() - sw().packets_dropped.get(), m_packets.size());
    core::Context::get().hw_error(e);
  }
  // outputs
  fs::create_directories(fs::path(m_out_dir) / "l1");
  nlohmann::json hw = nlohmann::json::array();
  for (const HostWrite& w : sw().host_write_log()) {
    std::string hex;
    for (uint8_t b : w.data) hex += fmt::format("{:02x}", b);
    hw.push_back({{"time_ps", w.time_ps},
                  {"addr", fmt::format("0x{:016x}", w.addr)},
                  {"bytes", w.data.size()},
                  {"data", hex},
                  {"source", w.source}});
  }
  const std::string hw_path = (fs::path(m_out_dir) / "host_writes.json").string();
  core::write_file(hw_path, hw.dump(1) + "\n", "host writes");
  const std::string pcap_path = (fs::path(m_out_dir) / "egress.pcap").string();
  write_pcap(pcap_path, sw().egress());
  m_outputs = {"host_writes.json", "egress.pcap"};
  for (uint32_t c = 0; c < sw().nclusters(); ++c) {
    const std::string p = (fs::path(m_out_dir) / "l1" / fmt::format("cluster{}.bin", c)).string();
    const auto img = sw().l1_image(c);
    core::write_file(p, std::string_view(reinterpret_cast<const char*>(img.data()), img.size()), "L1 image", true);
    if (c == 0) m_outputs.push_back("l1/cluster<c>.bin");
  }
  if (!sw().console().empty()) {
    const std::string cp = (fs::path(m_out_dir) / "console.log").string();
    core::OutputFile out(cp, "console log");
    for (const auto& l : sw().console()) out << l << "\n";
    out.close();
    m_outputs.push_back("console.log");
  }
}

systems::Outcome Scenario::check() {
  systems::Outcome out;
  out.checked = true;
  out.verified = sw().all_done() && sw().packets_dropped.get() == 0 && sw().fault_log().empty();
  m_stats.verified.set(out.verified);
  return out;
}

void Scenario::report(const systems::Outcome&) {
  Switch& s = sw();
  const uint64_t fb = s.feedbacks.get();
  uint64_t bytes = 0;
  for (const auto& p : m_packets) bytes += p.bytes.size();
  const uint64_t span = s.last_feedback_ps() > s.first_arrival_ps() ? s.last_feedback_ps() - s.first_arrival_ps() : 0;
  m_stats.throughput_Gbps.set(span ? bytes * 8.0 / (span / 1000.0) : 0.0);
  m_stats.latency_avg_ns.set(fb ? s.lat_sum_ps.get() / 1000.0 / fb : 0.0);
  m_stats.simulated_ps.set(s.last_feedback_ps());
  const HandlerStats& ph = s.handler_stats(1);
  if (ph.runs) {
    const double tau = double(ph.cycles) / double(ph.runs);
    m_stats.ph_cycles_mean.set(tau);
    m_stats.ph_instructions_mean.set(double(ph.instructions) / double(ph.runs));
    m_stats.service_Mpps.set(double(s.nclusters()) * s.ncores() * s.clock_MHz.get() / (tau + s.dispatch_cycles.get()));
  }
  // The steady feedback rate: between the 10th and the 90th percentile
  // feedback (the pipeline's filling and draining left out).
  const auto& ft = s.feedback_times();
  if (ft.size() >= 10) {
    std::vector<uint64_t> sorted(ft);
    std::sort(sorted.begin(), sorted.end());
    const size_t a = sorted.size() / 10, b = sorted.size() * 9 / 10;
    if (sorted[b] > sorted[a]) m_stats.steady_Mpps.set(double(b - a) / ((sorted[b] - sorted[a]) / 1e6));
  }
  // The input-buffer model next to the run: ports at line rate, payload handlers of the measured tau.
  // It assumes payload handlers only, every packet into L2 and L1 at once and no fault.
  if (m_gen.ports) {
    if (!ph.runs)
      m_model_note = "no payload handler ran";
    else if (m_handlers.hh || m_handlers.th)
      m_model_note = "header and completion handlers";
    else if (s.pause_ps.get() || s.packets_dropped.get())
      m_model_note = "the L2 buffer filled";
    else if (s.l1_waits.get())
      m_model_note = "tasks waited for L1 space";
    else if (!s.fault_log().empty())
      m_model_note = "handler faults";
  }
  if (m_gen.ports && ph.runs && m_model_note.empty()) {
    InputBufferModel m;
    m.ports = m_gen.ports;
    m.messages = m_gen.messages;
    m.per_port = m_gen.packets / m_gen.ports;
    m.stagger = m_gen.stagger;
    m.gap_ps = static_cast<uint64_t>(std::ceil(m_gen.packet_bytes * 8.0 / s.port_Gbps.get() * 1000.0));
    m.clusters = s.nclusters();
    m.cores = s.ncores();
    m.hers_per_cluster = s.hers_per_cluster.get();
    const uint32_t axi = s.axi_bytes_per_cycle.get();
    const uint32_t copy = s.copy_bytes.get() ? std::min(s.copy_bytes.get(), m_gen.packet_bytes) : m_gen.packet_bytes;
    const uint64_t write = (m_gen.packet_bytes + axi - 1) / axi;
    m.period_ps = s.period_ps();
    m.place_cycles = write;
    m.ready_cycles = write + s.l2_cycles.get() + (copy + axi - 1) / axi;
    const double tau = m_stats.ph_cycles_mean.get();
    m.service_cycles = static_cast<uint64_t>(std::llround(tau)) + s.dispatch_cycles.get();
    const InputBufferModel::Result r = m.solve();
    if (r.spills) {
      m_model_note = fmt::format("a cluster would hold more than hers_per_cluster {}", s.hers_per_cluster.get());
    } else {
      // the latency without waiting: from the arrival to the next clock edge, then ready_cycles and service_cycles
      if (fb)
        m_stats.wait_ns.set(m_stats.latency_avg_ns.get() -
                            (r.mean_edge_ps + double((m.ready_cycles + m.service_cycles) * m.period_ps)) / 1000.0);
      m_stats.model_applies.set(true);
      m_stats.model_l2_mean_packets.set(r.mean_packets);
      m_stats.model_l2_peak_packets.set(r.peak_packets);
      m_stats.model_wait_ns.set(r.mean_wait_ps / 1000.0);
    }
  }
  core::set_stats_end(s.last_feedback_ps());
}

void Scenario::summarize(const systems::Outcome& outcome, systems::Summary& out) {
  Switch& s = sw();
  const uint64_t fb = s.feedbacks.get();
  out.line("feedbacks", fmt::format("{} of {} packets{}{}", fb, m_packets.size(),
                                    s.packets_dropped.get() ? fmt::format(", {} dropped", s.packets_dropped.get()) : "",
                                    outcome.verified ? "" : "  (NOT all fed back cleanly)"));
  out.line("throughput",
           fmt::format("{:.1f} Gbit/s ({} B offered in {:.1f} ns, first arrival to last feedback)",
                       m_stats.throughput_Gbps.get(), s.bytes_in.get(),
                       (s.last_feedback_ps() - std::min(s.first_arrival_ps(), s.last_feedback_ps())) / 1000.0));
  out.line("latency",
           fmt::format("min {:.1f} / avg {:.1f} / max {:.1f} ns (arrival to feedback)", s.lat_min_ps.get() / 1000.0,
                       m_stats.latency_avg_ns.get(), s.lat_max_ps.get() / 1000.0));
  out.line("commands", fmt::format("{} packets sent, {} host writes ({} B)", s.packets_out.get(), s.host_writes.get(),
                                   s.host_write_bytes.get()));
  if (m_stats.service_Mpps.get() > 0 && m_stats.steady_Mpps.get() > 0)
    out.line("service",
             fmt::format("payload handler tau {:.1f} cycles: the cores serve {:.2f} Mpackets/s; "
                         "steady feedback rate {:.2f} Mpackets/s",
                         m_stats.ph_cycles_mean.get(), m_stats.service_Mpps.get(), m_stats.steady_Mpps.get()));
  out.line("faults",
           fmt::format("{} handler faults, {} watchdog stops", s.handler_faults.get(), s.watchdog_kills.get()));
  if (m_gen.ports) {
    const HandlerStats& ph = s.handler_stats(1);
    std::string model = m_model_note.empty()
                            ? fmt::format("  (model: {:.1f}, {}, {:.1f} ns{})", m_stats.model_l2_mean_packets.get(),
                                          m_stats.model_l2_peak_packets.get(), m_stats.model_wait_ns.get(),
                                          ph.min_cycles == ph.max_cycles
                                              ? std::string()
                                              : fmt::format("; tau varies from {} to {} cycles, it takes the mean",
                                                            ph.min_cycles, ph.max_cycles))
                            : "  (the input-buffer model does not apply: " + m_model_note + ")";
    out.line("input buffer",
             fmt::format(
                 "L2 holds {:.1f} packets on average, {} at most{}{}", s.l2_mean_packets.get(), s.l2_peak_packets.get(),
                 m_model_note.empty() ? fmt::format("; a packet waits {:.1f} ns for a core", m_stats.wait_ns.get())
                                      : std::string(),
                 model));
  }
}

void Scenario::tables(systems::Summary& out) {
  std::string t = fmt::format("  {:<4} {:<22} {:>6} {:>28} {:>28}\n", "", "handler", "runs",
                              "instructions min/mean/max", "cycles min/mean/max");
  const char* kinds[3] = {"hh", "ph", "th"};
  const std::string* names[3] = {&m_handlers.hh_name, &m_handlers.ph_name, &m_handlers.th_name};
  for (int k = 0; k < 3; ++k) {
    const HandlerStats& h = sw().handler_stats(k);
    if (h.runs == 0) continue;
    t += fmt::format(
        "  {:<4} {:<22} {:>6} {:>28} {:>28}\n", kinds[k], *names[k], h.runs,
        fmt::format("{}/{:.1f}/{}", h.min_instructions, double(h.instructions) / h.runs, h.max_instructions),
        fmt::format("{}/{:.1f}/{}", h.min_cycles, double(h.cycles) / h.runs, h.max_cycles));
  }
  out.text(t);
}

int Scenario::topology(const std::string& platform, uint32_t, nlohmann::json& json) {
  fmt::print("{}: {}\n", platform, headline());
  const Switch& s = m_sys->switch0;
  json = {{"platform", platform},
          {"clusters", s.nclusters()},
          {"cores_per_cluster", s.ncores()},
          {"cores", s.nclusters() * s.ncores()},
          {"clock_MHz", s.clock_MHz.get()},
          {"ports", s.ports.get()},
          {"port_Gbps", s.port_Gbps.get()}};
  json["schema"] = {{"clusters", {{"unit", "clusters"}, {"description", "core clusters of the switch"}}},
                    {"cores_per_cluster", {{"unit", "cores"}, {"description", "RISC-V cores per cluster"}}},
                    {"cores", {{"unit", "cores"}, {"description", "RISC-V cores of the switch"}}},
                    {"clock_MHz", {{"unit", "MHz"}, {"description", "core clock"}}},
                    {"ports", {{"unit", "ports"}, {"description", "switch ports"}}},
                    {"port_Gbps", {{"unit", "Gbit/s"}, {"description", "line rate per port"}}}};
  return 0;
}

namespace {
const bool kind_registered = systems::register_kind(systems::Kind{
    "pspin",
    "a PsPIN-like switch: RISC-V core clusters running C packet handlers (seed 004)",
    {"pspin"},
    false,
    [](const systems::RunOptions&) -> std::unique_ptr<systems::Scenario> { return std::make_unique<Scenario>(); },
    {"handlers", "hh", "ph", "th", "messages", "packets", "packet-bytes", "packet-gap-ns", "message-gap-ns", "fill",
     "pcap-in", "ports", "stagger", "define"}});
}  // namespace

}  // namespace fabricvp::pspin
