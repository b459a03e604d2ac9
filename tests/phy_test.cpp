// C2C PHY: FEC framing and latency, seeded error injection decoded by the real
// codec, machine checks on uncorrectable codewords, software replay, and
// persistent faults on marginal links.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "models/c2c/phy.h"

using namespace fabricvp;

namespace {

const std::string kNode = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";

std::vector<uint64_t> sum_hist(const nlohmann::json& stats) {
  std::vector<uint64_t> h;
  for (auto& [name, link] : stats["sys"]["node0"].items()) {
    if (name.rfind("link", 0) != 0) continue;
    for (const char* d : {"a_to_b", "b_to_a"}) {
      const auto& a = link[d]["fec_symbol_errors_hist"];
      if (h.size() < a.size()) h.resize(a.size());
      for (size_t i = 0; i < a.size(); ++i) h[i] += a[i].get<uint64_t>();
    }
  }
  return h;
}

}  // namespace

TEST(Phy, FecLatencyIsPartOfTheHopLatency) {
  // KP4 carries 514 message symbols: 5140 bits accumulate in 51.4 ns at
  // 4 x 25 Gb/s, then 20 ns of decoder. The SerDes signals at 25 x 544/514.
  core::Context::get().config().load_string(test::node_yaml(2), "node.yaml");
  groq::CompilerParams rp;
  groq::System sys("sys");
  const c2c::Link& l = *sys.links[0];
  EXPECT_EQ(l.fec_latency_ps(), 71400u);
  EXPECT_EQ(l.a_to_b.latency_ps(), 60000u + 4000u + 71400u + 104600u);
  EXPECT_DOUBLE_EQ(l.line_gbps(), 25.0 * 544 / 514);
}

TEST(Phy, WithoutFecTheHopIs71NanosecondsShorter) {
  test::TempDir t;
  ASSERT_EQ(test::sh("run " + kNode + " --bytes 320 -q -o " + (t / "kp4")).code, 0);
  ASSERT_EQ(test::sh("run " + kNode + " --bytes 320 -q -p sys.node0.link*.fec=none -o " + (t / "none")).code, 0);
  ASSERT_EQ(test::sh("run " + kNode + " --bytes 320 -q -p sys.node0.link*.fec=kr4 -o " + (t / "kr4")).code, 0);
  const auto a = test::load_json(t / "kp4/stats.json"), b = test::load_json(t / "none/stats.json");
  // KR4 has the same message length, so the same latency
  EXPECT_EQ(test::load_json(t / "kr4/stats.json")["workload"]["simulated_ps"], a["workload"]["simulated_ps"]);
  EXPECT_TRUE(b["workload"]["verified"].get<bool>());
  // A one-vector all-reduce crosses two hops; the ADD in between is cycle aligned.
  const int64_t d = a["workload"]["simulated_ps"].get<int64_t>() - b["workload"]["simulated_ps"].get<int64_t>();
  EXPECT_GE(d, 2 * 71400 - 2 * 1112);
  EXPECT_LE(d, 2 * 71400 + 2 * 1112);
  EXPECT_EQ(b["sys"]["node0"]["link0_1"]["a_to_b"]["fec_codewords"], 0);
}

TEST(Phy, ZeroBerCountsCodewordsAndDecodesNothing) {
  test::TempDir t;
  ASSERT_EQ(test::sh("run " + kNode + " --bytes 1MiB -q -o " + (t / "o")).code, 0);
  const auto j = test::load_json(t / "o/stats.json");
  // 1 MiB all-reduce: 3277 vectors in 8 shards; each direction carries 2 bursts of 409 or 410 packets.
  const auto& d = j["sys"]["node0"]["link0_1"]["a_to_b"];
  EXPECT_EQ(d["packets"].get<uint64_t>(), 819u);
  EXPECT_EQ(d["fec_codewords"].get<uint64_t>(), (409u * 2624 + 5139) / 5140 + (410u * 2624 + 5139) / 5140);
  EXPECT_EQ(j["phy"]["bit_errors"], 0);
  const auto h = sum_hist(j);
  ASSERT_EQ(h.size(), 17u);  // 0..15 symbol errors and "more than t"
  EXPECT_EQ(h[0], j["phy"]["codewords"].get<uint64_t>());
}

TEST(Phy, BerUpTo1e3IsCorrectedAndNothingIsSilentlyCorrupted) {
  test::TempDir t;
  test::Result r = test::sh("run " + kNode + " --bytes 64KiB --dtype bf16 --ber 1e-3 --max-replays 0 -o " + (t / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("bit errors injected"), std::string::npos) << r.out;
  const auto j = test::load_json(t / "o/stats.json");
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_EQ(j["workload"]["simulated_ps"], j["workload"]["predicted_ps"]);
  const auto& p = j["phy"];
  // ~5.4 bit errors per 5440-bit codeword
  const double per_cw = p["bit_errors"].get<double>() / p["codewords"].get<double>();
  EXPECT_GT(per_cw, 4.8);
  EXPECT_LT(per_cw, 6.1);
  EXPECT_EQ(p["uncorrectable_codewords"], 0);
  EXPECT_EQ(p["miscorrected_codewords"], 0);
  EXPECT_EQ(p["silent_corrupted_vectors"], 0);
  // every codeword with errors was decoded and corrected, symbol counts agree with the histogram
  const auto h = sum_hist(j);
  uint64_t with = 0, symbols = 0;
  for (size_t e = 1; e < h.size(); ++e) {
    with += h[e];
    symbols += e * h[e];
  }
  EXPECT_EQ(h.back(), 0u);
  EXPECT_EQ(p["corrected_codewords"].get<uint64_t>(), with);
  EXPECT_EQ(p["corrected_symbols"].get<uint64_t>(), symbols);
}

TEST(Phy, LaneBurstsAreCorrected) {
  test::TempDir t;
  test::Result r = test::sh("run " + kNode + " --bytes 256KiB --burst 2e-5:12 --max-replays 0 -q -o " + (t / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = test::load_json(t / "o/stats.json");
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_GT(j["phy"]["bit_errors"].get<uint64_t>(), 100u);
  // a 12-bit burst on one lane touches 2-3 symbols of its lane: well inside t = 15
  EXPECT_EQ(j["phy"]["uncorrectable_codewords"], 0);
  EXPECT_GT(j["phy"]["corrected_symbols"].get<uint64_t>(), j["phy"]["corrected_codewords"].get<uint64_t>());
}

TEST(Phy, UncorrectableCodewordRaisesAMachineCheckAndTheReplayCompletes) {
  test::TempDir t;
  // Seed 2: the first attempt meets an uncorrectable codeword, the replay does not.
  test::Result r = test::sh("run " + kNode + " --bytes 256KiB --ber 1e-3 --seed 2 -o " + (t / "o"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("attempt 0: machine check"), std::string::npos) << r.out;
  const auto j = test::load_json(t / "o/stats.json");
  EXPECT_EQ(j["workload"]["replays"], 1);
  EXPECT_GT(j["workload"]["replayed_ps"].get<uint64_t>(), 0u);
  EXPECT_TRUE(j["workload"]["verified"].get<bool>());
  EXPECT_EQ(j["run"]["status"], "ok");
  const auto a0 = test::load_json(t / "o/stats.attempt0.json");
  EXPECT_EQ(a0["run"]["status"], "machine_check_replayed");
  EXPECT_GE(a0["phy"]["uncorrectable_codewords"].get<uint64_t>(), 1u);
  EXPECT_GE(a0["phy"]["flagged_vectors"].get<uint64_t>(), 1u);
  // without replay the same run fails with a hardware error naming the link
  test::Result once =
      test::sh("run " + kNode + " --bytes 256KiB --ber 1e-3 --seed 2 --max-replays 0 -q -o " + (t / "x"));
  EXPECT_EQ(once.code, 2) << once.out;
  EXPECT_NE(once.out.find("machine check: vector"), std::string::npos) << once.out;
}

TEST(Phy, MarginalLinkIsReportedAsAPersistentFault) {
  test::TempDir t;
  test::Result r =
      test::sh("run " + kNode + " --bytes 1MiB -p sys.node0.link0_1.ber=3e-3 -p sys.node0.link0_1.marginal=true -o " +
               (t / "o"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("persistent fault: sys.node0.link0_1."), std::string::npos) << r.out;
  EXPECT_EQ(test::load_json(t / "o/stats.json")["workload"]["replays"], 3);
}

TEST(Phy, ErrorInjectionIsDeterministic) {
  test::TempDir t;
  for (const char* o : {"a", "b"})
    ASSERT_EQ(test::sh("run " + kNode + " --bytes 128KiB --ber 5e-4 --burst 1e-6:20 --seed 9 -q -o " + (t / o)).code,
              0);
  auto a = test::load_json(t / "a/stats.json"), b = test::load_json(t / "b/stats.json");
  EXPECT_EQ(a["phy"], b["phy"]);
  EXPECT_EQ(a["sys"], b["sys"]);
  EXPECT_GT(a["phy"]["bit_errors"].get<uint64_t>(), 0u);
}

TEST(Phy, MiscorrectionIsDeliveredAndCounted) {
  // Adding a nonzero codeword to the sent word gives another codeword: the
  // decoder accepts it with no correction, and only the model knows it is wrong.
  c2c::FecLane lane(c2c::FecLane::Setup{c2c::FecCode::kr4, 4, 328, 0.0, 0.0, 8.0, 1});
  std::vector<uint16_t> msg(514, 0), cw(528);
  msg[3] = 0x155;
  c2c::RsCodec(c2c::FecCode::kr4).encode(msg.data(), cw.data());
  std::vector<uint32_t> flips;
  for (uint32_t s = 0; s < 528; ++s)
    for (uint32_t b = 0; b < 10; ++b)
      if ((cw[s] >> (9 - b)) & 1) flips.push_back(s * 10 + b);
  lane.inject_next(flips);
  ASSERT_TRUE(lane.next_codeword_has_errors());
  std::vector<uint8_t> p0(328, 0xa5), p1(328, 0x3c), received;
  const c2c::FecLane::Outcome o = lane.decode({p0.data(), p1.data()}, 0, received);
  EXPECT_EQ(o.kind, c2c::FecLane::Outcome::miscorrected);
  ASSERT_EQ(received.size(), 2u * 328);
  EXPECT_NE(0, std::memcmp(received.data(), p0.data(), 328));
  // symbol 3 (bits 30..39) of the message changed; nothing else in packet 0
  for (size_t i = 0; i < 328; ++i) {
    if (i < 3 || i > 4) {
      EXPECT_EQ(received[i], p0[i]) << i;
    }
  }
  // a single flipped bit, by contrast, is corrected
  lane.inject_next({1234});
  ASSERT_TRUE(lane.next_codeword_has_errors());
  EXPECT_EQ(lane.decode({p0.data(), p1.data()}, 0, received).kind, c2c::FecLane::Outcome::corrected);
}

TEST(Phy, BackToBackBurstsShareCodewordsAndAGapClosesOne) {
  // Three one-packet SENDs: 3 x 2624 bits. Back to back they are one stream in
  // ceil(7872 / 5140) = 2 codewords; with gaps each is completed with idle bits.
  test::TempDir t;
  std::filesystem::create_directories(t.path / "b2b");
  std::filesystem::create_directories(t.path / "gap");
  t.file("b2b/sys.node0.tsp0.s", ".queue 0\nSEND p0, @0, 1\nSEND p0, @1, 1\nSEND p0, @2, 1\n");
  t.file("b2b/sys.node0.tsp1.s", ".queue 11\nWAIT 445\nRECV p0, @0, 3\n");
  t.file("gap/sys.node0.tsp0.s", ".queue 0\nSEND p0, @0, 1\nWAIT 100\nSEND p0, @1, 1\nWAIT 200\nSEND p0, @2, 1\n");
  t.file("gap/sys.node0.tsp1.s",
         ".queue 11\nWAIT 445\nRECV p0, @0, 1\nWAIT 545\nRECV p0, @1, 1\nWAIT 645\nRECV p0, @2, 1\n");
  for (const char* ber : {"0", "2e-3"}) {
    for (const auto& [dir, expect] : std::vector<std::pair<std::string, uint64_t>>{{"b2b", 2}, {"gap", 3}}) {
      const std::string out = t / (dir + "-out-" + ber);
      test::Result r = test::sh("run " + kNode + " -p sys.tsps_per_node=2 --max-replays 0 --ber " + ber +
                                " --programs " + (t / dir) + " -q -o " + out);
      ASSERT_EQ(r.code, 0) << dir << " ber " << ber << "\n" << r.out;
      const auto d = test::load_json(out + "/stats.json")["sys"]["node0"]["link0_1"]["a_to_b"];
      EXPECT_EQ(d["bursts"].get<uint64_t>(), 3u) << dir;
      EXPECT_EQ(d["fec_codewords"].get<uint64_t>(), expect) << dir << " ber " << ber;
    }
  }
}
