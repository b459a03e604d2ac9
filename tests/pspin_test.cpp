// The PsPIN-like switch from the command line: the project's handler kernels
// (sw/handlers/kernels) with a host-side check of their exact results, a
// handler that faults, one that never returns, one that prints, the NULL
// command handle of PsPIN's examples, and an overflowing L2 packet buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "models/pspin/input_buffer.h"

using fabricvp::test::sh;
using fabricvp::test::TempDir;

namespace {

const std::string kPlatform = std::string(FABRICVP_PLATFORMS) + "/pspin-switch.yaml";
const std::string kKernels = std::string(FABRICVP_SOURCE_DIR) + "/sw/handlers/kernels/";

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int32_t word(const std::vector<uint8_t>& b, size_t at) {
  int32_t v;
  std::memcpy(&v, &b[at], 4);
  return v;
}

// The generator's payload word w of packet k of message m (--fill seq).
uint32_t seq_word(uint32_t m, uint32_t k, uint32_t w, uint32_t packets, uint32_t words) {
  return (m * packets + k) * words + w;
}

constexpr size_t kScratchpad = 0x4400 + 64 * 1024;  // L1 offset of the scratchpad (64 KiB packet buffer)

TEST(Pspin, HandlerPathsReachTheCompilerAsTheyAre) {
  // A quote or a semicolon in a path is part of the name: the compiler runs without a shell.
  namespace fs = std::filesystem;
  TempDir dir;
  const fs::path odd = dir.path / "h'; touch INJECTED; '";
  fs::create_directories(odd);
  fs::copy_file(kKernels + "reduce.c", odd / "r.c");
  const fs::path out = odd / "o'x";
  const auto r =
      sh("run " + kPlatform + " --handlers \"" + (odd / "r.c").string() + "\" -q -o \"" + out.string() + "\"");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "r.elf"));
  EXPECT_FALSE(fs::exists("INJECTED"));
  EXPECT_FALSE(fs::exists(dir.path / "INJECTED"));
  // A leading '@' (gcc: a file of options) or '-' (an option) is still a file name.
  const fs::path plain = dir.path / "plain";
  fs::create_directories(plain);
  fs::copy_file(kKernels + "reduce.c", plain / "@r.c");
  fs::copy_file(kKernels + "reduce.c", plain / "-r.c");
  std::ofstream(plain / "r.c") << "-E\n";  // what gcc would read as options for @r.c
  for (const char* name : {"@r.c", "-r.c"}) {
    const auto q = sh("run " + kPlatform + " --handlers=" + name + " -q -o out", plain.string());
    EXPECT_EQ(q.code, 0) << name << ": " << q.out;
  }
}

TEST(Pspin, ReduceSumsEveryPacketIntoTheHomeScratchpad) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels + "reduce.c --messages 2 -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const uint32_t words = (1024 - 28) / 4;
  for (uint32_t m = 0; m < 2; ++m) {
    const auto l1 = file_bytes(dir / ("o/l1/cluster" + std::to_string(m) + ".bin"));
    ASSERT_EQ(l1.size(), 1024u * 1024u);
    for (uint32_t w = 0; w < words; ++w) {
      uint32_t want = 0;
      for (uint32_t k = 0; k < 32; ++k) want += seq_word(m, k, w, 32, words);
      ASSERT_EQ(static_cast<uint32_t>(word(l1, kScratchpad + 4 * w)), want) << "message " << m << " word " << w;
    }
  }
  // the completion handler of each message wrote the first word to host memory
  const auto hw = fabricvp::test::load_json(dir / "o/host_writes.json");
  ASSERT_EQ(hw.size(), 2u);
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["feedbacks"], 64);
  EXPECT_EQ(stats["workload"]["verified"], true);
}

TEST(Pspin, HistogramCountsEveryPayloadByte) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels +
                    "histogram.c --fill random --packets 16 --packet-bytes 512 -s 7 -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  // recompute the histogram from the packets the generator sent: ask it for the same packets through
  // the ping-pong kernel, whose egress pcap holds every packet as received
  const auto r2 = sh("run " + kPlatform + " --handlers " + kKernels +
                     "ping_pong.c --fill random --packets 16 --packet-bytes 512 -s 7 -o " + (dir / "p"));
  ASSERT_EQ(r2.code, 0) << r2.out;
  const auto pcap = file_bytes(dir / "p/egress.pcap");
  std::vector<uint32_t> want(256, 0);
  size_t at = 24, packets = 0;
  while (at + 16 <= pcap.size()) {
    uint32_t len;
    std::memcpy(&len, &pcap[at + 8], 4);
    for (size_t b = 28; b < len; ++b) ++want[pcap[at + 16 + b]];
    at += 16 + len;
    ++packets;
  }
  ASSERT_EQ(packets, 16u);
  const auto l1 = file_bytes(dir / "o/l1/cluster0.bin");
  for (int b = 0; b < 256; ++b) ASSERT_EQ(static_cast<uint32_t>(word(l1, kScratchpad + 4 * b)), want[b]) << "bin " << b;
}

TEST(Pspin, AggregateWritesEachMessageSumToTheHost) {
  TempDir dir;
  const auto r =
      sh("run " + kPlatform + " --handlers " + kKernels + "aggregate.c --messages 3 --packets 8 -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto hw = fabricvp::test::load_json(dir / "o/host_writes.json");
  ASSERT_EQ(hw.size(), 3u);
  const uint32_t words = (1024 - 28) / 4;
  std::map<uint64_t, uint32_t> got;
  for (const auto& w : hw) {
    const std::string data = w["data"];
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | std::stoul(data.substr(2 * i, 2), nullptr, 16);
    got[std::stoull(w["addr"].get<std::string>(), nullptr, 16)] = v;
  }
  for (uint32_t m = 0; m < 3; ++m) {
    uint32_t want = 0;
    for (uint32_t k = 0; k < 8; ++k)
      for (uint32_t w = 0; w < words; ++w) want += seq_word(m, k, w, 8, words);
    EXPECT_EQ(got[0xdeadbeefdeadbeefull + 8 * m], want) << "message " << m;
  }
}

TEST(Pspin, PingPongSendsEveryPacketBackWithSwappedIds) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels + "ping_pong.c -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto pcap = file_bytes(dir / "o/egress.pcap");
  uint32_t magic, linktype;
  std::memcpy(&magic, &pcap[0], 4);
  std::memcpy(&linktype, &pcap[20], 4);
  EXPECT_EQ(magic, 0xa1b23c4du);  // nanosecond pcap
  EXPECT_EQ(linktype, 228u);      // raw IPv4
  size_t at = 24, packets = 0;
  uint64_t last = 0;
  while (at + 16 <= pcap.size()) {
    uint32_t sec, ns, len;
    std::memcpy(&sec, &pcap[at], 4);
    std::memcpy(&ns, &pcap[at + 4], 4);
    std::memcpy(&len, &pcap[at + 8], 4);
    EXPECT_EQ(len, 1024u);
    const uint64_t t = uint64_t{sec} * 1000000000ull + ns;
    EXPECT_GE(t, last);
    last = t;
    EXPECT_EQ(word(pcap, at + 16 + 12), 0);  // source and destination swapped (message 0 sent from id 0 to 0)
    ++packets;
    at += 16 + len;
  }
  EXPECT_EQ(packets, 32u);
}

TEST(Pspin, FilterForwardsExactlyThePacketsWhoseKeyIsInTheTableFromAPcap) {
  TempDir dir;
  // a pcap of raw IPv4 packets (link type 228) whose first payload word is a key; the table holds k * 7919, k <= 300
  const uint32_t keys[] = {7919, 12345, 7919 * 300, 7919 * 301, 7919 * 150, 0};
  std::string pcap;
  auto put32 = [&](uint32_t v) { pcap.append(reinterpret_cast<const char*>(&v), 4); };
  auto put16 = [&](uint16_t v) { pcap.append(reinterpret_cast<const char*>(&v), 2); };
  put32(0xa1b2c3d4u);
  put16(2);
  put16(4);
  put32(0);
  put32(0);
  put32(65535);
  put32(228);
  for (uint32_t i = 0; i < 6; ++i) {
    std::vector<uint8_t> p(64, 0);
    p[0] = 0x50;
    const uint16_t len = 64;
    std::memcpy(&p[2], &len, 2);
    std::memcpy(&p[28], &keys[i], 4);
    put32(i);
    put32(0);
    put32(64);
    put32(64);
    pcap.append(reinterpret_cast<const char*>(p.data()), p.size());
  }
  const std::string in = dir.file("keys.pcap", pcap);
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels + "filter.c --pcap-in " + in + " --packets 6 -o " +
                    (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["packets_in"], 6);
  EXPECT_EQ(stats["sys"]["switch0"]["packets_out"], 3);
  const auto out = file_bytes(dir / "o/egress.pcap");
  std::vector<uint32_t> sent;
  for (size_t at = 24; at + 16 <= out.size();) {
    uint32_t len;
    std::memcpy(&len, &out[at + 8], 4);
    sent.push_back(static_cast<uint32_t>(word(out, at + 16 + 28)));
    at += 16 + len;
  }
  std::sort(sent.begin(), sent.end());
  EXPECT_EQ(sent, (std::vector<uint32_t>{7919, 7919 * 150, 7919 * 300}));
}

TEST(Pspin, NicSendsGoToOnePortToTheFirstPortsOrToAll) {
  TempDir dir;
  // Each payload packet is sent to nid 1 (port 1), to FABRICVP_NID_FIRST(2) (ports 0, 1), to every port
  // (FABRICVP_NID_ALL) and to FABRICVP_NID_FIRST(0), which names no port.
  const std::string c = dir.file("fanout.c",
                                 "#include <handler.h>\n"
                                 "__handler__ void fanout_ph(handler_args_t *args) {\n"
                                 "  task_t *t = args->task;\n"
                                 "  fabricvp_nic_command(1, 0, t->pkt_mem, 64);\n"
                                 "  fabricvp_nic_command(FABRICVP_NID_FIRST(2), 0, t->pkt_mem, 64);\n"
                                 "  fabricvp_nic_command(FABRICVP_NID_ALL, 0, t->pkt_mem, 64);\n"
                                 "  fabricvp_nic_command(FABRICVP_NID_FIRST(0), 0, t->pkt_mem, 64);\n"
                                 "}\n");
  const auto r = sh("run " + kPlatform + " --handlers " + c + " --packets 5 -p sys.switch0.ports=3 -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(FABRICVP_NID_FIRST(0)) names no port: not sent"), std::string::npos) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["packets_out"], 5 * (1 + 2 + 3));
  // per packet: port 1; ports 0, 1; ports 0, 1, 2 (the pcap's records carry no port: count them)
  const auto out = file_bytes(dir / "o/egress.pcap");
  size_t records = 0;
  for (size_t at = 24; at + 16 <= out.size(); ++records) {
    uint32_t len;
    std::memcpy(&len, &out[at + 8], 4);
    at += 16 + len;
  }
  EXPECT_EQ(records, 5u * 6);
}

TEST(Pspin, AFaultIsReportedWithHandlerPcAndAddressAndTheSwitchKeepsRunning) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels + "faults.c --ph faulty_ph -o " + (dir / "o"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("handler faulty_ph faulted: store/AMO access fault"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("address 0x1c100000"), std::string::npos) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["handler_faults"], 32);
  EXPECT_EQ(stats["sys"]["switch0"]["feedbacks"], 32);  // every packet still fed back
}

TEST(Pspin, TheWatchdogStopsAHandlerThatNeverReturns) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels +
                    "faults.c --ph forever_ph --packets 4 -p sys.switch0.watchdog_cycles=5000 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("watchdog"), std::string::npos) << r.out;
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["watchdog_kills"], 4);
}

TEST(Pspin, PrintfGoesToTheConsoleLog) {
  TempDir dir;
  const auto r =
      sh("run " + kPlatform + " --handlers " + kKernels + "faults.c --ph printing_ph --packets 3 -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir / "o/console.log");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("packet of message 0 on cluster 0 core 0"), std::string::npos) << all;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 3);
}

TEST(Pspin, ANullCommandHandleIssuesTheCommandThenFaults) {
  // PsPIN's own examples pass `false` as the spin_cmd_t* of spin_host_write.
  TempDir dir;
  const std::string src = dir.file("nullhandle.c", R"(
#include <handler.h>
#include <packets.h>
__handler__ void nullhandle_ph(handler_args_t *args) {
  task_t *task = args->task;
  uint64_t host = ((uint64_t)task->host_mem_high << 32) | task->host_mem_low;
  spin_host_write(host, 42, false);
}
void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **m) {
  volatile handler_fn h[] = {NULL, nullhandle_ph, NULL};
  *hh = h[0]; *ph = h[1]; *th = h[2]; (void)m;
}
)");
  const auto r = sh("run " + kPlatform + " --handlers " + src + " --packets 2 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 2) << r.out;
  const auto hw = fabricvp::test::load_json(dir / "o/host_writes.json");
  EXPECT_EQ(hw.size(), 2u);  // the writes went out
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["handler_faults"], 2);
}

TEST(Pspin, AFullL2BufferDropsOrPauses) {
  TempDir dir;
  // 8 KiB of L2 packet buffer, 64 packets of 1 KiB arriving back to back, a slow handler
  const std::string common = " --handlers " + kKernels +
                             "reduce.c --packets 64 --packet-gap-ns 0 -p sys.switch0.l2_packet_buffer_KiB=8 "
                             "-p sys.switch0.clusters=1 -p sys.switch0.cores_per_cluster=2";
  auto r = sh("run " + kPlatform + common + " -p sys.switch0.l2_full=drop -o " + (dir / "d"));
  EXPECT_EQ(r.code, 3) << r.out;  // not every packet came through
  auto stats = fabricvp::test::load_json(dir / "d/stats.json");
  const uint64_t dropped = stats["sys"]["switch0"]["packets_dropped"];
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(stats["sys"]["switch0"]["packets_in"].get<uint64_t>() + dropped, 64u);
  r = sh("run " + kPlatform + common + " -p sys.switch0.l2_full=pause -o " + (dir / "p"));
  EXPECT_EQ(r.code, 0) << r.out;
  stats = fabricvp::test::load_json(dir / "p/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["packets_dropped"], 0);
  EXPECT_GT(stats["sys"]["switch0"]["pause_ps"].get<uint64_t>(), 0u);
  EXPECT_LE(stats["sys"]["switch0"]["l2_peak_bytes"].get<uint64_t>(), 8192u);
}

TEST(Pspin, BadHandlerInputsAreClearErrors) {
  TempDir dir;
  auto r = sh("run " + kPlatform + " -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--handlers"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + " --handlers " + kKernels + "reduce.c --ph nosuch_ph -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--ph nosuch_ph: no such symbol"), std::string::npos) << r.out;
  // a data symbol named as the handler (it ran, and faulted on its first fetch), and one ending in _ph
  const std::string data = dir.file("data.c",
                                    "#include <handler.h>\nint table_ph[4] = {1, 2, 3, 4};\nint counter;\n"
                                    "void real_ph(handler_args_t *a) { (void)a; counter++; }\n");
  r = sh("run " + kPlatform + " --handlers " + data + " --ph counter -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--ph counter: the symbol is at 0x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(data, not a handler)"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + " --handlers " + data + " --packets 2 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 0) << r.out;  // real_ph is the one handler ending in _ph: table_ph is data
  const std::string bad =
      dir.file("bad.c", "#include <handler.h>\nvoid broken_ph(handler_args_t *a) { a->nosuch = 1; }\n");
  r = sh("run " + kPlatform + " --handlers " + bad + " -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("does not compile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nosuch"), std::string::npos) << r.out;  // the compiler's own message
  r = sh("run " + kPlatform + " --handlers " + kKernels + "reduce.c --packet-bytes 20 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--packet-bytes 20"), std::string::npos) << r.out;
  // an ELF compiled for another cluster count
  ASSERT_EQ(sh("run " + kPlatform + " --handlers " + kKernels + "reduce.c --packets 1 -o " + (dir / "c4")).code, 0);
  r = sh("run " + kPlatform + " --handlers " + (dir / "c4/reduce.elf") + " -p sys.switch0.clusters=8 -o " +
         (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("handlers compiled for NB_CLUSTERS=4"), std::string::npos) << r.out;
  // a PsPIN option on another kind of platform
  r = sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --handlers x.c -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--handlers: groq platforms do not take this option (flare and pspin do)"), std::string::npos)
      << r.out;
}

TEST(Pspin, SameInputsGiveIdenticalStatistics) {
  TempDir dir;
  const std::string args = " --handlers " + kKernels + "reduce.c --messages 4 --fill random";
  ASSERT_EQ(sh("run " + kPlatform + args + " -o " + (dir / "a")).code, 0);
  ASSERT_EQ(sh("run " + kPlatform + args + " -o " + (dir / "b")).code, 0);
  auto a = fabricvp::test::load_json(dir / "a/stats.json");
  auto b = fabricvp::test::load_json(dir / "b/stats.json");
  a.erase("run");
  b.erase("run");
  EXPECT_EQ(a, b);
  EXPECT_EQ(file_bytes(dir / "a/l1/cluster1.bin"), file_bytes(dir / "b/l1/cluster1.bin"));
}

}  // namespace

namespace {

// Seed 004 / PsPIN's model: with packets arriving faster than the cores serve
// them, the switch's packet rate is K cores / tau (tau = the payload handler's
// service time, plus the dispatch). The simulated steady feedback rate must
// agree within 5 %.
TEST(Pspin, ServiceTimeModelPredictsTheSaturatedFeedbackRate) {
  TempDir dir;
  for (const char* kernel : {"aggregate.c", "reduce.c"}) {
    const auto r = sh("run " + kPlatform + " --handlers " + kKernels + kernel + " --packets 512 --packet-gap-ns 0 -o " +
                      (dir / "o"));
    ASSERT_EQ(r.code, 0) << r.out;
    const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
    const double model = stats["workload"]["service_Mpps"];
    const double sim = stats["workload"]["steady_Mpps"];
    EXPECT_GT(model, 0.0);
    EXPECT_NEAR(sim / model, 1.0, 0.05) << kernel << ": model " << model << " Mpps, simulated " << sim << " Mpps";
    // and the offered load really exceeded it (400 Gbit/s of 1 KiB packets = 48.8 Mpps)
    EXPECT_LT(model, 48.8) << kernel;
  }
}

}  // namespace

namespace {

TEST(Pspin, TraceHasHandlerSpansAndOccupancyCountersAndPortsHaveStatistics) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels + "reduce.c --packets 8 --trace -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = fabricvp::test::load_json(dir / "o/trace.json");
  const auto& ev = j.is_object() ? j["traceEvents"] : j;
  size_t spans = 0;
  std::map<std::string, size_t> counters;
  for (const auto& e : ev) {
    if (e["ph"] == "X" && e["cat"] == "handler") ++spans;
    if (e["ph"] == "C") ++counters[e["name"].get<std::string>()];
  }
  EXPECT_EQ(spans, 9u);                                // 8 payload handlers + the completion handler
  EXPECT_GE(counters["l2_packet_buffer_bytes"], 16u);  // each packet in and out
  EXPECT_GE(counters["cluster0.tasks"], 16u);
  EXPECT_GE(counters["cluster0.l1_packet_buffer_bytes"], 16u);
  const auto stats = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(stats["sys"]["switch0"]["port0"]["packets_in"], 8);
  EXPECT_EQ(stats["sys"]["switch0"]["port0"]["bytes_in"], 8 * 1024);
}

}  // namespace

namespace {

// Flare's 512-core switch: 32 clusters x 16 cores. task_t then holds 32
// scratchpad pointers and no longer fits below PsPIN's doorbell: it moves to
// its own window (docs/pspin.md), and handlers compiled for 32 clusters see it.
TEST(Pspin, A512CoreSwitchRunsAndReducesPerHomeCluster) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels +
                    "reduce.c -p sys.switch0.clusters=32 -p sys.switch0.cores_per_cluster=16 --messages 32 "
                    "--packets 8 -o " +
                    (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const uint32_t words = (1024 - 28) / 4;
  for (uint32_t m : {0u, 5u, 31u}) {
    const auto l1 = file_bytes(dir / ("o/l1/cluster" + std::to_string(m) + ".bin"));
    for (uint32_t w = 0; w < words; w += 31) {
      uint32_t want = 0;
      for (uint32_t k = 0; k < 8; ++k) want += seq_word(m, k, w, 8, words);
      ASSERT_EQ(static_cast<uint32_t>(word(l1, kScratchpad + 4 * w)), want) << "message " << m << " word " << w;
    }
  }
}

}  // namespace

namespace {

TEST(Pspin, TheOwnClusterL1IsAlsoAt0x1b000000) {
  TempDir dir;
  const std::string src = dir.file("alias.c", R"(
#include <handler.h>
#include <packets.h>
__handler__ void alias_ph(handler_args_t *args) {
  task_t *task = args->task;
  uint32_t off = (uint32_t)task->scratchpad[args->cluster_id] - (0x10000000u + args->cluster_id * 0x400000u);
  amo_add((volatile int32_t *)(0x1b000000u + off), 1);
}
void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **m) {
  volatile handler_fn h[] = {NULL, alias_ph, NULL};
  *hh = h[0]; *ph = h[1]; *th = h[2]; (void)m;
}
)");
  const auto r = sh("run " + kPlatform + " --handlers " + src + " -o " + (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  int32_t total = 0;
  for (int c = 0; c < 4; ++c)
    total += word(file_bytes(dir / ("o/l1/cluster" + std::to_string(c) + ".bin")), kScratchpad);
  EXPECT_EQ(total, 32);  // one per packet, each into the scratchpad of the cluster that ran it
}

}  // namespace

namespace {

// The input-buffer model's closed forms (docs/flare.md): 16 ports in step onto 4 clusters of 8 cores, each
// block's 16 packets to its home cluster, which serves them in two turns: packet j waits floor(j / 8) x s, so
// s / 2 on average; staggered by one block, each step's packets spread over the clusters and none waits.
TEST(PspinInputBuffer, TheModelHasTheClosedFormsOfFig5) {
  fabricvp::pspin::InputBufferModel m;
  m.ports = 16;
  m.messages = 64;
  m.gap_ps = 81920;  // 1 KiB at 100 Gbit/s
  m.clusters = 4;
  m.cores = 8;
  m.period_ps = 1000;
  m.place_cycles = 16;
  m.ready_cycles = 52;
  m.service_cycles = 111;
  auto r = m.solve();
  EXPECT_DOUBLE_EQ(r.mean_wait_ps, 111 * 1000 / 2.0);
  EXPECT_FALSE(r.spills);
  EXPECT_EQ(r.peak_cluster_tasks, 16u);
  m.stagger = 1;
  r = m.solve();
  EXPECT_DOUBLE_EQ(r.mean_wait_ps, 0.0);
  EXPECT_EQ(r.peak_cluster_tasks, 8u);  // 4 packets a step, two steps' worth on the cores
  // Little's law: the mean occupancy is the arrival rate times the mean residence (no waiting here: a packet
  // stays from its arrival to the next clock edge, then ready_cycles + service_cycles); the run's ends
  // (filling, draining) make the time average a little lower.
  const double rate = 16.0 / 81920.0;
  double edge = 0;
  for (uint32_t j = 1; j <= 64; ++j) edge += double((j * 81920 + 999) / 1000 * 1000 - j * 81920);
  const double residence = edge / 64 + (52 + 111) * 1000.0;
  EXPECT_NEAR(r.mean_packets, rate * residence, 0.03 * rate * residence);
  EXPECT_LT(r.mean_packets, rate * residence);
  // A cluster that may hold fewer tasks than a block's packets sends the rest elsewhere: not modeled.
  m.stagger = 0;
  m.hers_per_cluster = 12;
  EXPECT_TRUE(m.solve().spills);
  m.cores = 0;
  EXPECT_THROW(m.solve(), std::invalid_argument);
}

// The switch against the model: a constant-service handler, 16 ports at line rate (--ports), in step and
// staggered, on PsPIN's 4 clusters of 8 cores. The model takes the measured tau; its mean occupancy, peak and
// wait equal the simulation's.
TEST(PspinInputBuffer, TheSimulatedBufferIsTheModels) {
  TempDir dir;
  const std::string common = " --handlers " + kKernels +
                             "service.c --define SERVICE_CYCLES=100 --ports 16 --packets 16 --messages 64 "
                             "--packet-bytes 1024 -p sys.switch0.ports=16 -p sys.switch0.port_Gbps=100";
  nlohmann::json s[2];
  for (int st = 0; st < 2; ++st) {
    const std::string out = dir / ("o" + std::to_string(st));
    const auto r = sh("run " + kPlatform + common + " --stagger " + std::to_string(st) + " -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("input buffer"), std::string::npos) << r.out;
    s[st] = fabricvp::test::load_json(out + "/stats.json");
    const auto& w = s[st]["workload"];
    const auto& sw = s[st]["sys"]["switch0"];
    EXPECT_EQ(w["ph_cycles_mean"].get<double>(), 103.0);
    EXPECT_NEAR(sw["l2_mean_packets"].get<double>(), w["model_l2_mean_packets"].get<double>(),
                0.01 * w["model_l2_mean_packets"].get<double>());
    EXPECT_EQ(sw["l2_peak_packets"], w["model_l2_peak_packets"]);
    EXPECT_NEAR(w["wait_ns"].get<double>(), w["model_wait_ns"].get<double>(), 0.5);
  }
  EXPECT_NEAR(s[0]["workload"]["wait_ns"].get<double>(), (100 + 3 + 8) / 2.0, 0.5);  // (tau + dispatch) / 2
  EXPECT_LT(s[1]["sys"]["switch0"]["l2_mean_packets"].get<double>(),
            0.8 * s[0]["sys"]["switch0"]["l2_mean_packets"].get<double>());
}

TEST(PspinInputBuffer, BadPortAndDefineOptionsAreClearErrors) {
  TempDir dir;
  const std::string h = " --handlers " + kKernels + "service.c";
  auto r = sh("run " + kPlatform + h + " --stagger 1 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--stagger staggers the ports: give --ports"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --ports 3 --packets 16 -p sys.switch0.ports=4 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--ports 3: must divide --packets 16"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --ports 4 --packets 16 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--ports 4: sys.switch0 has 1 port(s) (-p sys.switch0.ports=4)"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --ports 1 --packet-gap-ns 5 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--packet-gap-ns with --ports"), std::string::npos) << r.out;
  // Packets that could never have room in the packet buffers (they waited for ever, a hardware error).
  r = sh("run " + kPlatform + h + " --packet-bytes 8000 -p sys.switch0.l1_packet_buffer_KiB=4 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--packet-bytes 8000: larger than a cluster's L1 packet buffer (4 KiB, "
                       "sys.switch0.l1_packet_buffer_KiB)"),
            std::string::npos)
      << r.out;
  r = sh("run " + kPlatform + h + " --packet-bytes 8000 -p sys.switch0.l2_packet_buffer_KiB=4 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--packet-bytes 8000: larger than the L2 packet buffer"), std::string::npos) << r.out;
  {
    // One raw-IPv4 packet of 70,000 bytes.
    std::string pcap;
    auto w32 = [&](uint32_t v) { pcap.append(reinterpret_cast<const char*>(&v), 4); };
    for (uint32_t v : {0xa1b2c3d4u, 0x00040002u, 0u, 0u, 262144u, 101u}) w32(v);
    for (uint32_t v : {0u, 0u, 70000u, 70000u}) w32(v);
    pcap.append(70000, '\0');
    r = sh("run " + kPlatform + h + " --pcap-in " + dir.file("big.pcap", pcap) + " --packets 1 -o " + (dir / "o"));
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.out.find("packet 0 has 70000 bytes: an IPv4 packet holds at most 65535"), std::string::npos) << r.out;
  }
  for (const char* gap : {"inf", "nan", "1e300", "0x10", "' 5'", "-1", "5ns"}) {
    r = sh("run " + kPlatform + h + " --packet-gap-ns " + gap + " -o " + (dir / "o"));
    EXPECT_EQ(r.code, 1) << gap;
    EXPECT_NE(r.out.find("': expected a number of ns from 0 to 1e9"), std::string::npos) << r.out;
  }
  r = sh("run " + kPlatform + h + " --define 'X=1;true' -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--define 'X=1;true': expected NAME or NAME=VALUE"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --define SERVICE_CYCLES=abc -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("does not compile"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --define SERVICE_CYCLES=9, -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("an empty item after the last comma"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --define NB_CLUSTERS=2 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--define NB_CLUSTERS: set by the switch"), std::string::npos) << r.out;
  r = sh("run " + kPlatform + h + " --ports 0 -o " + (dir / "o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--ports 0: expected at least one port"), std::string::npos) << r.out;
}

// Where the model's assumptions fail, the run says so instead of printing it: one cluster of 32 cores that may
// hold only 20 tasks leaves 12 cores idle and sends the rest of a step's packets nowhere until one ends.
TEST(PspinInputBuffer, TheRunSaysWhenTheModelDoesNotApply) {
  TempDir dir;
  const auto r = sh("run " + kPlatform + " --handlers " + kKernels +
                    "service.c --define SERVICE_CYCLES=100 --ports 16 --packets 16 --messages 32 --packet-bytes 1024 "
                    "-p sys.switch0.ports=16 -p sys.switch0.port_Gbps=100 -p sys.switch0.clusters=1 -p "
                    "sys.switch0.cores_per_cluster=32 -o " +
                    (dir / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the input-buffer model does not apply: a cluster would hold more than hers_per_cluster 20"),
            std::string::npos)
      << r.out;
  const auto s = fabricvp::test::load_json(dir / "o/stats.json");
  EXPECT_EQ(s["workload"]["model_applies"], false);
}

TEST(PspinInputBuffer, TheExperimentPrintsModelAndSimulation) {
  TempDir dir;
  const auto r = sh("experiment flare-buffers --quick -o " + (dir / "x"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = fabricvp::test::load_json(dir / "x/flare-buffers.json");
  ASSERT_EQ(j["points"].size(), 6u);  // 2 switches x 3 port orders
  for (const auto& p : j["points"]) {
    EXPECT_NEAR(p["l2_mean_packets"].get<double>(), p["model_l2_mean_packets"].get<double>(),
                0.01 * p["model_l2_mean_packets"].get<double>())
        << p;
    EXPECT_EQ(p["l2_peak_packets"], p["model_l2_peak_packets"]) << p;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "x/flare-buffers.png"));
}

}  // namespace
