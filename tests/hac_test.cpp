// HAC network, DESKEW family, alignment, long programs under drift, and
// `fabricvp hac` (docs/clocks.md).
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"

namespace fs = std::filesystem;
using namespace fabricvp;
using test::Bench;

namespace {

using test::Result;
using test::sh;

std::string tmp(const std::string& leaf) {
  return (fs::temp_directory_path() / ("fabricvp-hac-" + std::to_string(::getpid()) + "-" + leaf)).string();
}

const std::string kNode = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";

const tsp::SyncEvent* find(const tsp::Tsp& t, tsp::Op op, size_t nth = 0) {
  for (const tsp::SyncEvent& e : t.sync_log())
    if (e.op == op && nth-- == 0) return &e;
  return nullptr;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int32_t lane(const std::vector<uint8_t>& v, size_t i) {
  int32_t x;
  std::memcpy(&x, &v[4 * i], 4);
  return x;
}

}  // namespace

TEST(Hac, DeskewWaitsForTheNextEpochBoundaryAndRdhacReadsTheCounters) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nNOP 10\nDESKEW\nDESKEW\nRDHAC @5\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const tsp::SyncEvent* d0 = find(b.chip(0), tsp::Op::DESKEW, 0);
  const tsp::SyncEvent* d1 = find(b.chip(0), tsp::Op::DESKEW, 1);
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->issue_cycle, 10u);
  EXPECT_EQ(d0->cycle, 252u);
  EXPECT_EQ(d1->cycle, 504u);  // a DESKEW at a boundary waits a whole epoch
  EXPECT_EQ(b.chip(0).deskew_stall_cycles.get(), 242u + 252u);
  // RDHAC issued at 504, written at cycle 505: HAC 0, SAC 0, HAC - SAC 0, local and program cycle 504.
  EXPECT_EQ(b.chip(0).last_write_ps(), b.clk().ps(505));
  auto v = b.read_vec(0, 5);
  EXPECT_EQ(lane(v, 0), 0);
  EXPECT_EQ(lane(v, 1), 0);
  EXPECT_EQ(lane(v, 2), 0);
  EXPECT_EQ(lane(v, 3), 504);
  EXPECT_EQ(lane(v, 4), 504);
}

TEST(Hac, TransmitReleasesThePollingChildAtTheFirstBoundaryAfterArrival) {
  Bench b(test::node_yaml(2));
  // tsp0 port 0 and tsp1 port 0 are the two ends of link0_1.
  b.load(0, ".queue 0\nWAIT 300\nDESKEW\nTRANSMIT p0\nDESKEW\nNOTIFY\n");
  b.load(1, ".queue 0\nPOLL p0\nNOTIFY\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const tsp::SyncEvent* tx = find(b.chip(0), tsp::Op::TRANSMIT);
  const tsp::SyncEvent* poll = find(b.chip(1), tsp::Op::POLL);
  ASSERT_TRUE(tx && poll);
  EXPECT_EQ(tx->cycle, 504u);
  // The code arrives ~217 cycles later (< 252): released one epoch after the TRANSMIT.
  EXPECT_EQ(poll->cycle, 756u);
  EXPECT_EQ(poll->issue_cycle, 0u);
  EXPECT_EQ(poll->value, 3);  // boundaries tested: 252, 504, 756
  EXPECT_EQ(b.chip(1).polls.get(), 3u);
  // Parent and child NOTIFY at the same boundary (same clocks: the same ps).
  EXPECT_EQ(find(b.chip(0), tsp::Op::NOTIFY)->cycle, 756u);
  EXPECT_EQ(find(b.chip(1), tsp::Op::NOTIFY)->cycle, 756u);
  EXPECT_EQ(b.sys->hac->notifications.get(), 1u);
}

TEST(Hac, AlongerLinkTakesFloorLOverPeriodPlusOneEpochs) {
  // 200 ns more cable: L = 240 + 200 ns = 396 cycles -> floor(396/252) + 1 = 2 epochs.
  Bench b(test::node_yaml(2, "  node0:\n    link0_1:\n      propagation_ps: 204000\n"));
  b.load(0, ".queue 0\nDESKEW\nTRANSMIT p0\n");
  b.load(1, ".queue 0\nPOLL p0\n");
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  EXPECT_EQ(find(b.chip(1), tsp::Op::POLL)->cycle, 252u + 2 * 252u);
}

TEST(Hac, PollWithoutNotificationTimesOut) {
  Bench b(test::node_yaml(2, "  node0:\n    tsp1:\n      poll_timeout_epochs: 5\n"));
  b.load(1, ".queue 0\nPOLL p0\n");
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("no notification after 5 epochs"), std::string::npos) << b.errors()[0].message;
  EXPECT_EQ(b.errors()[0].cycle, 5 * 252);
}

TEST(Hac, TransmitOnAPortWithoutCableIsAProgramError) {
  Bench b(test::node_yaml(2));
  b.load(0, ".queue 0\nTRANSMIT p5\n");
  EXPECT_THROW(b.chip(0).start(), core::ConfigError);
}

TEST(Hac, RuntimeDeskewStallsTargetPlusDriftAndShiftsProgramTime) {
  // tsp1 runs 100 ppm fast; tsp0 (the root) is nominal. After 400,000 cycles
  // tsp1's SAC is ~40 cycles ahead of its HAC (aligned to tsp0).
  Bench b(test::node_yaml(2, "  node0:\n    tsp1:\n      clock_ppm: 100\n"));
  const std::string prog = ".queue 0\nWAIT 400000\nRUNTIME_DESKEW 256\nRDHAC @0\nWAIT 400500\nRDHAC @1\n";
  b.load(0, prog);
  b.load(1, prog);
  b.run();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  const tsp::SyncEvent* r0 = find(b.chip(0), tsp::Op::RUNTIME_DESKEW);
  const tsp::SyncEvent* r1 = find(b.chip(1), tsp::Op::RUNTIME_DESKEW);
  ASSERT_TRUE(r0 && r1);
  EXPECT_EQ(r0->value, 0);  // the root's HAC is its local time
  EXPECT_EQ(r0->cycle - r0->issue_cycle, 256u);
  EXPECT_NEAR(static_cast<double>(r1->value), 40.0, 6.0);
  EXPECT_EQ(static_cast<int64_t>(r1->cycle - r1->issue_cycle), 256 + r1->value);
  EXPECT_EQ(b.chip(1).program_shift(), r1->value);
  // After the stall both chips resume at the same real time (within the HAC alignment).
  const double t0 = static_cast<double>(b.chip(0).clock().ps(r0->cycle));
  const double t1 = static_cast<double>(b.chip(1).clock().ps(r1->cycle));
  EXPECT_LT(std::fabs(t1 - t0), 6 * 1111.2);
  // Program cycle 400500 on tsp1 is local cycle 400500 + shift; the SAC was resynchronized.
  auto v = b.read_vec(1, 1);
  EXPECT_EQ(lane(v, 3), 400500 + r1->value);
  EXPECT_EQ(lane(v, 4), 400500);
  EXPECT_LE(std::abs(lane(v, 2)), 1);  // HAC - SAC: little drift in 500 cycles
}

TEST(Hac, RuntimeDeskewWithTooSmallATargetIsAHardwareError) {
  Bench b(test::node_yaml(2, "  node0:\n    tsp1:\n      clock_ppm: -100\n"));
  b.load(0, ".queue 0\nWAIT 400000\nNOP 1\n");
  b.load(1, ".queue 0\nWAIT 400000\nRUNTIME_DESKEW 10\n");  // ~40 cycles slow: 10 - 40 < 1
  b.run();
  ASSERT_EQ(b.errors().size(), 1u);
  EXPECT_NE(b.errors()[0].message.find("more than the target stall"), std::string::npos) << b.errors()[0].message;
}

namespace {
/// The docs/examples/drift programs on two chips 200 ppm apart.
std::unique_ptr<Bench> long_program(const std::string& dir, double ppm1) {
  auto bench =
      std::make_unique<Bench>(test::node_yaml(2, "  node0:\n    tsp0:\n      clock_ppm: " + std::to_string(-ppm1) +
                                                     "\n    tsp1:\n      clock_ppm: " + std::to_string(ppm1) + "\n"));
  const std::string base = std::string(FABRICVP_SOURCE_DIR) + "/docs/examples/" + dir + "/";
  bench->write_vec(0, 0, test::pattern(3, 8));
  for (uint32_t c = 0; c < 2; ++c) {
    sw::Program p = sw::assemble_file(base + "sys.node0.tsp" + std::to_string(c) + ".s");
    for (uint32_t q = 0; q < p.queues.size(); ++q) {
      auto img = sw::encode_queue(p.queues[q]);
      bench->sys->host.write(c, tsp::kImemBase + q * tsp::kImemStride, img.data(), img.size());
    }
    bench->loaded.push_back(c);
  }
  bench->run();
  return bench;
}
}  // namespace

TEST(Hac, LongProgramUnderDriftFailsWithoutRuntimeDeskew) {
  std::unique_ptr<Bench> b = long_program("drift-nodeskew", 100.0);
  ASSERT_EQ(b->errors().size(), 1u);
  EXPECT_NE(b->errors()[0].message.find("RX underflow"), std::string::npos) << b->errors()[0].message;
  EXPECT_LT(b->errors()[0].cycle, 1000000);  // 80 cycles of drift in the first 400,000 break a 50-cycle margin
}

TEST(Hac, LongProgramUnderDriftRunsCleanWithRuntimeDeskew) {
  std::unique_ptr<Bench> b = long_program("drift", 100.0);
  ASSERT_TRUE(b->errors().empty()) << b->errors()[0].message;
  EXPECT_GT(b->now_ps(), 111000000000ULL);  // 10^8 cycles simulated
  EXPECT_EQ(b->chip(1).runtime_deskews.get(), 250u);
  EXPECT_EQ(b->chip(1).vectors_received.get(), 2000u);
  EXPECT_EQ(b->read_vec(1, 100, 8), test::pattern(3, 8));
  // 10^8 cycles at 200 ppm: tsp1's program time was pulled back by ~20,000 cycles in total.
  EXPECT_NEAR(static_cast<double>(b->chip(1).program_shift()), 20000.0, 20.0);
  EXPECT_EQ(b->chip(0).program_shift(), 0);
}

TEST(Hac, LongProgramRunsFromTheCommandLineInBothDriftDirections) {
  const std::string dir = std::string(FABRICVP_SOURCE_DIR) + "/docs/examples/";
  const std::string p = " -p sys.tsps_per_node=2 ";
  Result ok1 = sh("run " + kNode + " --programs " + dir + "drift" + p +
                  "-p sys.node0.tsp0.clock_ppm=-100 -p sys.node0.tsp1.clock_ppm=100 -q -o " + tmp("o1"));
  EXPECT_EQ(ok1.code, 0) << ok1.out;
  Result ok2 = sh("run " + kNode + " --programs " + dir + "drift" + p +
                  "-p sys.node0.tsp0.clock_ppm=100 -p sys.node0.tsp1.clock_ppm=-100 -q -o " + tmp("o2"));
  EXPECT_EQ(ok2.code, 0) << ok2.out;
  Result bad = sh("run " + kNode + " --programs " + dir + "drift-nodeskew" + p +
                  "-p sys.node0.tsp0.clock_ppm=-100 -p sys.node0.tsp1.clock_ppm=100 -q -o " + tmp("o3"));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("RX underflow"), std::string::npos) << bad.out;
  for (const char* o : {"o1", "o2", "o3"}) fs::remove_all(tmp(o));
}

TEST(Hac, ChildrenConvergeToTheRootWithinTheLinkJitter) {
  // Random initial phases, oscillators +-100 ppm, a 3-level tree (33 nodes).
  Bench b(
      "sys:\n  topology: dragonfly\n  racks: 1\n  nodes_per_rack: 5\n  hac:\n    initial: random\n"
      "  node*:\n    tsp*:\n      clock_ppm_spread: 100\n");
  hac::Network& net = *b.sys->hac;
  ASSERT_TRUE(net.exchanging());
  ASSERT_GE(net.height(), 2u);
  net.run_for(64 + 8 + 1200);
  sc_core::sc_start(sc_core::sc_time::from_value(static_cast<uint64_t>((64 + 8) * 256 * 1111.2)));
  ASSERT_TRUE(net.calibrated());
  const uint32_t n = static_cast<uint32_t>(b.sys->chips.size());
  // Bound: per hop, half the range of the cable's characterized latency.
  std::vector<double> bound(n, 0.0);
  double before = 0;
  for (uint32_t c = 0; c < n; ++c) {
    if (net.depth(c) <= 0) continue;
    const int32_t w = net.parent_cable(c);
    const auto& s = net.link_stats()[w];
    bound[c] = bound[net.parent(c)] + (s.max - s.min) / 2;
    before = std::max(before, std::fabs(net.offset_from_root(c)) - bound[c]);
  }
  EXPECT_GT(before, 0.0) << "random phases should start outside the bound";
  sc_core::sc_start();
  for (uint32_t c = 0; c < n; ++c) {
    if (net.depth(c) <= 0) continue;
    EXPECT_LE(std::fabs(net.offset_from_root(c)), bound[c]) << b.chip(c).name() << " depth " << net.depth(c);
  }
  EXPECT_GT(net.adjustments.get(), 0u);
}

TEST(Hac, InitialAlignmentOverheadMatchesTheFormula) {
  // Every cable 160 ns longer (L ~ 360 cycles: 2 epochs per hop) on a 3-node
  // dragonfly (a tree of height 2 from node0.tsp0).
  Bench b(
      "sys:\n  topology: dragonfly\n  racks: 1\n  nodes_per_rack: 3\n  hac:\n    exchange: on\n"
      "  node*:\n    link*:\n      propagation_ps: 164000\n  glink*:\n    propagation_ps: 164000\n");
  hac::Network& net = *b.sys->hac;
  const uint64_t begin = (64 + 16) * 256;
  net.run_for(64 + 16);
  sc_core::sc_start(sc_core::sc_time::from_value(static_cast<uint64_t>((64 + 8) * 256 * 1111.2)));
  ASSERT_TRUE(net.calibrated());
  uint32_t epochs = 0;
  auto progs = net.alignment_programs(begin, epochs);
  const uint32_t n = static_cast<uint32_t>(b.sys->chips.size());
  for (uint32_t c = 0; c < n; ++c) {
    if (progs[c].empty()) continue;
    auto img = sw::encode_queue(progs[c]);
    b.sys->host.write(c, tsp::kImemBase, img.data(), img.size());
    b.chip(c).start();
  }
  sc_core::sc_start();
  for (auto* t : b.sys->chips) t->finish();
  ASSERT_TRUE(b.errors().empty()) << b.errors()[0].message;
  double lmax = 0;
  for (uint32_t c = 0; c < n; ++c)
    if (net.parent_cable(c) >= 0) lmax = std::max(lmax, net.link_stats()[net.parent_cable(c)].max);
  const uint64_t formula = (static_cast<uint64_t>(std::ceil(lmax)) / 252 + 1) * net.height() * 252;
  const tsp::Tsp& root = b.chip(net.root());
  const uint64_t b0 = root.clock().ps(find(root, tsp::Op::DESKEW)->cycle);
  uint64_t last = 0, first_start = UINT64_MAX, last_start = 0;
  for (uint32_t c = 0; c < n; ++c) {
    if (const tsp::SyncEvent* e = find(b.chip(c), tsp::Op::POLL)) last = std::max(last, b.chip(c).clock().ps(e->cycle));
    const tsp::SyncEvent* s = find(b.chip(c), tsp::Op::NOTIFY);
    ASSERT_TRUE(s) << b.chip(c).name();
    first_start = std::min(first_start, b.chip(c).clock().ps(s->cycle));
    last_start = std::max(last_start, b.chip(c).clock().ps(s->cycle));
  }
  const double measured = static_cast<double>(last - b0) / root.clock().period_ps();
  ASSERT_EQ(net.height(), 2u);
  EXPECT_EQ(formula, 2u * 2u * 252u);
  EXPECT_NEAR(measured, static_cast<double>(formula), 3.0 * 4);  // the tree's HAC offsets, a few cycles per hop
  EXPECT_EQ(epochs, 4u);
  EXPECT_LT(static_cast<double>(last_start - first_start), 16 * 1111.2);  // everyone starts together
}

TEST(Hac, TableIsDeterministicForASeedAndTheJsonHasTheKeys) {
  const std::string a = tmp("a.json"), b = tmp("b.json"), c = tmp("c.json");
  Result ra = sh("hac " + kNode + " --iterations 3000 --seed 5 --json " + a);
  Result rb = sh("hac " + kNode + " --iterations 3000 --seed 5 --json " + b);
  Result rc = sh("hac " + kNode + " --iterations 3000 --seed 6 --json " + c);
  ASSERT_EQ(ra.code, 0) << ra.out;
  ASSERT_EQ(rb.code, 0) << rb.out;
  ASSERT_EQ(rc.code, 0) << rc.out;
  EXPECT_EQ(slurp(a), slurp(b));
  EXPECT_EQ(ra.out, rb.out);
  EXPECT_NE(slurp(a), slurp(c));
  nlohmann::json j = nlohmann::json::parse(slurp(a));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 28u);
  for (const auto& o : j) {
    ASSERT_EQ(o.size(), 5u);
    for (const char* k : {"link", "min", "mean", "max", "std"}) EXPECT_TRUE(o.contains(k)) << k;
    EXPECT_LE(o["min"].get<double>(), o["mean"].get<double>());
    EXPECT_LE(o["mean"].get<double>(), o["max"].get<double>());
  }
  EXPECT_EQ(j[0]["link"], "sys.node0.link0_1");
  EXPECT_NE(ra.out.find("sys.node0.link6_7"), std::string::npos);
  for (const auto& f : {a, b, c}) fs::remove(f);
}

TEST(Hac, DefaultCalibrationReproducesTable2) {
  const std::string f = tmp("t2.json");
  Result r = sh("hac " + kNode + " --iterations 100000 --json " + f);
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(slurp(f));
  for (const auto& o : j) {
    SCOPED_TRACE(o["link"].get<std::string>());
    // seed 000 Table 2: min 209-211, mean 216.27-217.35, max 225-228, std 2.63-2.93
    EXPECT_GE(o["mean"].get<double>(), 216.3);
    EXPECT_LE(o["mean"].get<double>(), 217.4);
    EXPECT_GE(o["std"].get<double>(), 2.6);
    EXPECT_LE(o["std"].get<double>(), 3.0);
    EXPECT_GE(o["min"].get<double>(), 207.5);
    EXPECT_LE(o["min"].get<double>(), 211.5);
    EXPECT_GE(o["max"].get<double>(), 224.5);
    EXPECT_LE(o["max"].get<double>(), 229.0);
  }
  fs::remove(f);
}

TEST(Hac, BadInputIsAnErrorWithAMessage) {
  Result zero = sh("hac " + kNode + " --iterations 0");
  EXPECT_EQ(zero.code, 1);
  EXPECT_NE(zero.out.find("--iterations: Value 0 not in range 1"), std::string::npos) << zero.out;
  Result key = sh("hac " + kNode + " --iterations 10 -p sys.hac.nosuchkey=3");
  EXPECT_EQ(key.code, 1);
  EXPECT_NE(key.out.find("nosuchkey"), std::string::npos) << key.out;
  Result off = sh("hac " + kNode + " --iterations 10 -p sys.hac.exchange=off");
  EXPECT_EQ(off.code, 1);
  EXPECT_NE(off.out.find("nothing to characterize"), std::string::npos) << off.out;
  Result missing = sh("hac /nonexistent/platform.yaml");
  EXPECT_NE(missing.code, 0);
  Result range = sh("hac " + kNode + " --iterations 10 -p sys.hac.max_adjust=0");
  EXPECT_EQ(range.code, 1);
  EXPECT_NE(range.out.find("max_adjust"), std::string::npos) << range.out;
}

TEST(Hac, AssemblerKnowsTheNewInstructionsAndRept) {
  sw::Program p = sw::assemble(
      ".queue 2\n.rept 3\nDESKEW\nTRANSMIT p4\n.endr\nPOLL p1\nRUNTIME_DESKEW 300\nRDHAC [0,1,0,7]\n", "t.s");
  ASSERT_EQ(p.queues.size(), 3u);
  ASSERT_EQ(p.queues[2].size(), 9u);
  EXPECT_EQ(p.queues[2][0].op, tsp::Op::DESKEW);
  EXPECT_EQ(p.queues[2][5].port, 4u);
  EXPECT_EQ(p.queues[2][5].line, 4u);  // repeated lines keep their source line
  EXPECT_EQ(p.queues[2][7].imm, 300u);
  sw::Program again = sw::assemble(sw::disassemble(p), "u.s");
  ASSERT_EQ(again.queues[2].size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    tsp::Instr x = p.queues[2][i], y = again.queues[2][i];
    x.line = y.line = 0;
    EXPECT_EQ(x, y) << i;
    EXPECT_EQ(tsp::Instr::decode(x.encode().data()), x);
  }
  EXPECT_THROW(sw::assemble(".queue 0\n.endr\n", "t.s"), core::ConfigError);
  EXPECT_THROW(sw::assemble(".queue 0\n.rept 2\nNOP\n", "t.s"), core::ConfigError);
  EXPECT_THROW(sw::assemble(".queue 0\nTRANSMIT\n", "t.s"), core::ConfigError);
  EXPECT_THROW(sw::assemble(".queue 0\nDESKEW 3\n", "t.s"), core::ConfigError);
}

TEST(Hac, ExchangeTakesLinkBandwidthAndTheScheduleAccountsForIt) {
  const std::string on = tmp("xon"), off = tmp("xoff");
  Result a = sh("run " + kNode + " --bytes 1MiB -q -p sys.hac.exchange=on -o " + on);
  ASSERT_EQ(a.code, 0) << a.out;  // verified and completed exactly as predicted
  ASSERT_EQ(sh("run " + kNode + " --bytes 1MiB -q -o " + off).code, 0);
  nlohmann::json j = nlohmann::json::parse(slurp(on + "/stats.json"));
  nlohmann::json k = nlohmann::json::parse(slurp(off + "/stats.json"));
  // one 2.56-ns PCS word every 256 cycles of 1.111 ns
  EXPECT_NEAR(j["sys"]["hac"]["link_share_pct"].get<double>(), 100.0 * 2560 / (256 * 1e6 / 900), 1e-9);
  EXPECT_GT(j["sys"]["hac"]["messages"].get<uint64_t>(), 0u);
  EXPECT_EQ(k["sys"]["hac"]["link_share_pct"].get<double>(), 0.0);
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_EQ(j["workload"]["simulated_ps"], j["workload"]["predicted_ps"]);
  const double ratio = k["workload"]["busbw_GBps"].get<double>() / j["workload"]["busbw_GBps"].get<double>();
  EXPECT_GT(ratio, 1.004);  // the bandwidth-bound all-reduce slows by about the share taken
  EXPECT_LT(ratio, 1.012);
  fs::remove_all(on);
  fs::remove_all(off);
}
