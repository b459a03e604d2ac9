// Training workloads without a simulation (sw/training): ASTRA-sim 1.0 text
// and YAML parsing (every keyword, every malformed case with its file:line),
// and the training loop's order, overlap and exposed communication on tiny
// hand-checked workloads against a platform whose collectives take a fixed time.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <vector>

#include "harness.h"
#include "models/core/config.h"
#include "sw/training/astra.h"
#include "sw/training/chakra.h"
#include "sw/training/loop.h"
#include "sw/training/workload.h"

using namespace fabricvp;
using namespace fabricvp::training;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

/// A platform whose time is a plain event queue and whose collectives take
/// `comm_ns` each (collectives on the same NPU do not interfere).
class FakePlatform final : public Platform {
 public:
  FakePlatform(uint32_t npus, std::vector<uint32_t> dims, uint64_t comm_ns)
      : m_n(npus), m_dims(dims), m_comm(comm_ns) {}
  uint32_t npus() const override { return m_n; }
  std::vector<uint32_t> dim_sizes() const override { return m_dims; }
  uint64_t now() const override { return m_now; }
  void at(uint32_t, uint64_t t, std::function<void()> fn) override { m_q.push({t, m_seq++, std::move(fn)}); }
  void collective(const Call& c, std::function<void()> done) override {
    calls.push_back(c);
    at(c.npu, m_now + m_comm * 1000, std::move(done));
  }
  void computed(uint32_t npu, uint32_t layer, uint32_t pass, uint64_t start, uint64_t) override {
    if (npu == 0) log.push_back(fmt::format("{}:{}@{}", pass_name(pass), layer, start / 1000));
  }
  void communicated(const Call& c, uint64_t issue, uint64_t end) override {
    if (c.npu == 0)
      log.push_back(
          fmt::format("{}{}:{}@{}-{}", comm_name(c.comm), pass_name(c.pass), c.layer, issue / 1000, end / 1000));
  }
  void run(uint64_t until_ps = UINT64_MAX) {
    while (!m_q.empty() && m_q.top().t <= until_ps) {
      Ev e = m_q.top();
      m_q.pop();
      m_now = e.t;
      e.fn();
    }
    if (until_ps != UINT64_MAX) m_now = std::max(m_now, until_ps);
  }
  std::vector<Call> calls;
  std::vector<std::string> log;

 private:
  struct Ev {
    uint64_t t, seq;
    std::function<void()> fn;
    bool operator<(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  uint32_t m_n;
  std::vector<uint32_t> m_dims;
  uint64_t m_comm, m_now = 0, m_seq = 0;
  std::priority_queue<Ev> m_q;
};

}  // namespace

TEST(TrainingWorkload, ReadsEveryAstraKeywordAndField) {
  test::TempDir dir;
  const std::string data = dir.file("data.txt",
                                    "DATA\n2\n"
                                    "l0\t-1\t100\tNONE\t0\t200\tNONE\t0\t300\tALLREDUCE\t4096\t7\n"
                                    "l1 -1 10 ALLGATHER 64 20 REDUCESCATTER 128 30 ALLTOALL 256 0\n");
  Workload w = parse_astra_text(data);
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.parallelism, Parallelism::data);
  EXPECT_EQ(w.layers[0].pass[kWg].comm, Comm::allreduce);
  EXPECT_EQ(w.layers[0].pass[kWg].bytes, 4096u);
  EXPECT_EQ(w.layers[0].pass[kIg].compute_ns, 200u);
  EXPECT_EQ(w.layers[0].update_ns, 7u);
  EXPECT_EQ(w.layers[1].pass[kFwd].comm, Comm::allgather);
  EXPECT_EQ(w.layers[1].pass[kIg].comm, Comm::reducescatter);
  EXPECT_EQ(w.layers[1].pass[kWg].comm, Comm::alltoall);
  EXPECT_EQ(w.layers[1].origin, data + ":4");
  // The text form round-trips.
  EXPECT_EQ(parse_astra_text(dir.file("again.txt", to_astra_text(w))).layers[1].pass[kWg].bytes, 256u);

  Workload t = parse_astra_text(
      dir.file("tr.txt",
               "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 checkpoints: 1 0 checkpoint_initiates: "
               "1 2\n3\na -1 1 NONE 0 1 NONE 0 1 NONE 0 0\nb -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n"
               "c -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n"));
  EXPECT_EQ(t.model_parallel_group, 4u);
  EXPECT_EQ(t.checkpoints, std::vector<uint32_t>{0});
  EXPECT_EQ(t.checkpoint_initiates, std::vector<uint32_t>{2});
  Workload d = parse_astra_text(dir.file("dlrm.txt",
                                         "HYBRID_DLRM 1\n2\na -1 1 ALLTOALL 8 1 ALLTOALL 8 1 NONE 0 0\n"
                                         "b -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n"));
  EXPECT_EQ(d.dlrm_last_bottom_layer, 1u);
  Workload c = parse_astra_text(dir.file("cust.txt",
                                         "HYBRID_CUSTOMIZED\n2\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0 DATA\n"
                                         "b -1 1 ALLREDUCE 8 1 NONE 0 1 NONE 0 0 MODEL\n"));
  EXPECT_EQ(c.layers[0].parallelism, Parallelism::data);
  EXPECT_EQ(c.layers[1].parallelism, Parallelism::model);
  for (const char* k : {"MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "MICRO", "DISTRIBUTED_INFERENCE",
                        "HYBRID_DLRM_ENHANCED 0", "HYBRID_TRANSFORMER model_parallel_NPU_group: 2"})
    EXPECT_NO_THROW(parse_astra_text(dir.file("k.txt", std::string(k) + "\n1\na -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n")))
        << k;
}

TEST(TrainingWorkload, MalformedInputIsAnErrorWithFileAndLine) {
  test::TempDir dir;
  const std::string ok = "a -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n";
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"DATAX\n1\n" + ok, ":1: unknown parallelism 'DATAX'"},
      {"DATA\n2\n" + ok, ":3: the file ends where a layer name was expected"},
      {"DATA\n1\na -1 1x NONE 0 1 NONE 0 1 NONE 0 0\n", ":3: layer a: fwd compute time: '1x' is not a non-negative"},
      {"DATA\n1\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCE -8 0\n", ":3: layer a: wg collective size: '-8'"},
      {"DATA\n1\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCEX 8 0\n", ":3: layer a: wg collective 'ALLREDUCEX'"},
      {"DATA\n1\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCEALLTOALL 8 0\n", "ASTRA-sim parses it but has no way to issue it"},
      {"DATA\n1\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 0 0\n", "a wg ALLREDUCE of 0 bytes"},
      {"DATA\n1\n" + ok + "junk\n", ":4: 'junk' after the last of the 1 layers"},
      {"DATA\nx\n" + ok, ":2: the number of layers: 'x'"},
      {"HYBRID_TRANSFORMER model_parallel_NPU_group:\n1\n" + ok, ":3: the number of layers: 'a'"},
      {"HYBRID_DLRM 5\n1\n" + ok, "DLRM_LAST_BOTTOM_LAYER 5 is not a layer"},
      {"HYBRID_CUSTOMIZED\n1\n" + ok, "the file ends where the layer's parallelism (HYBRID_CUSTOMIZED) was expected"},
      {"HYBRID_CUSTOMIZED\n1\na -1 1 NONE 0 1 NONE 0 1 NONE 0 0 FOO\n", ":3: layer a: parallelism 'FOO'"},
      {"", "the file ends where the parallelism keyword was expected"},
      // Sizes and times that would wrap a 64-bit count (of chunk bytes, of picoseconds).
      {"DATA\n1\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 18446744073709551615 0\n",
       ":3: layer a: a wg ALLREDUCE of 18446744073709551615 bytes: more than an NPU's memory may hold"},
      {"DATA\n1\na -1 20000000000000000 NONE 0 1 NONE 0 1 NONE 0 0\n",
       ":3: layer a: fwd compute time 20000000000000000 ns: the iteration's compute and update times add up"},
      {"DATA\n2\na -1 600000000000 NONE 0 1 NONE 0 1 NONE 0 0\nb -1 1 NONE 0 1 NONE 0 1 NONE 0 400000000000\n",
       ":4: layer b: update time 400000000000 ns: the iteration's compute and update times add up to more than "
       "1000000000000 ns"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file("bad.txt", c.text);
    const std::string err = error_of([&] { parse_astra_text(path); });
    EXPECT_NE(err.find(c.want), std::string::npos) << "input:\n" << c.text << "error: " << err;
    EXPECT_EQ(err.rfind(path, 0), 0u) << err;  // starts with the file name
  }
  EXPECT_NE(error_of([&] { parse_astra_text(dir.path / "missing.txt"); }).find("cannot open workload file"),
            std::string::npos);
}

TEST(TrainingWorkload, YamlFormHasTheSameContent) {
  test::TempDir dir;
  const std::string y = dir.file("w.yaml",
                                 "workload:\n"
                                 "  parallelism: HYBRID_TRANSFORMER\n"
                                 "  model_parallel_npu_group: 4\n"
                                 "  layers:\n"
                                 "    - name: attn\n"
                                 "      fwd: {compute_ns: 100, comm: ALLREDUCE, bytes: 64}\n"
                                 "      ig: {compute_ns: 200, comm: ALLREDUCE, bytes: 64}\n"
                                 "      wg: {compute_ns: 300, comm: ALLREDUCE, bytes: 4096}\n"
                                 "      update_ns: 5\n"
                                 "    - name: mlp\n"
                                 "      wg: {compute_ns: 3, comm: ALLREDUCE, bytes: 8}\n");
  Workload w = load_workload(y);
  EXPECT_EQ(to_astra_text(w),
            "HYBRID_TRANSFORMER model_parallel_NPU_group: 4\n2\n"
            "attn\t-1\t100\tALLREDUCE\t64\t200\tALLREDUCE\t64\t300\tALLREDUCE\t4096\t5\n"
            "mlp\t-1\t0\tNONE\t0\t0\tNONE\t0\t3\tALLREDUCE\t8\t0\n");
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"workload:\n  parallelism: DATA\n  layers:\n    - name: a\n      wg: {compute_ns: 1x}\n",
       ":5: compute_ns: '1x'"},
      {"workload:\n  parallelism: DATA\n  layers:\n    - name: a\n      wg: {comm: SUM, bytes: 4}\n",
       ":5: layer a: wg collective 'SUM'"},
      {"workload:\n  parallelism: DATA\n  layers:\n    - name: a\n      wgt: {}\n", ":5: unknown key 'wgt'"},
      {"workload:\n  parallelism: DATA\n  layers:\n    - name: a\n      fwd: {bytes: 4}\n",
       "has bytes but no collective"},
      {"workload:\n  parallelism: DATA\n", "workload.layers must be a list"},
      {"workload:\n  parallelism: DATA\n  layers: [\n", ":4:1: YAML syntax error: end of sequence flow not found"},
      {"workload:\n  parallelism: DATA\n  model_parallel_npu_group: 8\n  layers:\n    - name: a\n",
       ":3: model_parallel_npu_group goes with HYBRID_TRANSFORMER(_FWD_IN_BCKWD), not DATA"},
      {"workload:\n  parallelism: HYBRID_TRANSFORMER\n  model_parallel_npu_group: 2\n  checkpoints: [0]\n"
       "  layers:\n    - name: a\n",
       ":4: checkpoints goes with HYBRID_TRANSFORMER_FWD_IN_BCKWD, not HYBRID_TRANSFORMER"},
      {"workload:\n  parallelism: MODEL\n  dlrm_last_bottom_layer: 0\n  layers:\n    - name: a\n",
       ":3: dlrm_last_bottom_layer goes with HYBRID_DLRM(_ENHANCED), not MODEL"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file("bad.yaml", c.text);
    const std::string err = error_of([&] { load_workload(path); });
    EXPECT_NE(err.find(c.want), std::string::npos) << c.text << "error: " << err;
  }
  // The text form: one word per layer name, and no place for a pass's flops and mem_bytes (listed as dropped).
  for (const char* name : {"\"a b\"", "\"\""}) {
    const std::string path =
        dir.file("name.yaml", std::string("workload:\n  parallelism: DATA\n  layers:\n    - name: ") + name + "\n");
    const std::string err = error_of([&] { to_astra_text(load_workload(path)); });
    EXPECT_NE(err.find(":4: layer name '"), std::string::npos) << err;
    EXPECT_NE(err.find("a layer name there is one word"), std::string::npos) << err;
  }
  std::vector<std::string> dropped;
  to_astra_text(load_workload(dir.file("r.yaml",
                                       "workload:\n  parallelism: DATA\n  layers:\n    - name: a\n"
                                       "      fwd: {compute_ns: 5, flops: 100, mem_bytes: 8}\n")),
                &dropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped[0].find("flops and mem_bytes of 1 passes"), std::string::npos) << dropped[0];
}

namespace {
/// Two data-parallel layers: fwd 10 and 40 ns, ig 20 and 60, wg 30 and 70, each weight-gradient all-reduce with
/// 5 ns of update.
Workload two_layers(const test::TempDir& dir) {
  return parse_astra_text(dir.file("w.txt",
                                   "DATA\n2\n"
                                   "l0 -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100 5\n"
                                   "l1 -1 40 NONE 0 60 NONE 0 70 ALLREDUCE 100 5\n"));
}
}  // namespace

TEST(TrainingLoop, DataParallelOverlapsWeightGradientsWithTheBackwardPass) {
  test::TempDir dir;
  // Two layers; every collective takes 50 ns, updates 5 ns.
  Workload w = two_layers(dir);
  FakePlatform p(2, {2}, 50);
  TrainingLoop loop(w, p, 2);
  loop.start();
  p.run();
  ASSERT_TRUE(loop.done());
  // Iteration 0: fwd 0 [0,10], fwd 1 [10,50]; backward: wg 1 [50,120] -> its
  // all-reduce at 120 (result 175), ig 1 [120,180], wg 0 [180,210] -> all-reduce
  // 210 (result 265); layer 0 has no ig compute. (The log is in time order;
  // a compute is logged when it starts, a collective when its result is in place.)
  // Iteration 1: fwd 0 waits for l0's weights until 265 (exposed 55), [265,275];
  // fwd 1 [275,315] (l1's weights were ready at 175); wg 1 [315,385] -> 385..440;
  // ig 1 [385,445]; wg 0 [445,475] -> 475..530; the end waits until 530 (exposed 55).
  const std::vector<std::string> want = {
      "fwd:0@0",   "fwd:1@10",  "wg:1@50",  "ig:1@120", "ALLREDUCEwg:1@120-175", "wg:0@180", "ALLREDUCEwg:0@210-265",
      "fwd:0@265", "fwd:1@275", "wg:1@315", "ig:1@385", "ALLREDUCEwg:1@385-440", "wg:0@445", "ALLREDUCEwg:0@475-530"};
  EXPECT_EQ(p.log, want);
  const NpuTimes& t = loop.times(0);
  EXPECT_EQ(t.end, 530000u);
  EXPECT_EQ(t.compute, 2 * (10 + 40 + 70 + 60 + 30) * 1000u);
  EXPECT_EQ(t.exposed, 110000u);
  EXPECT_EQ(t.exposed + t.compute, t.end);
  EXPECT_EQ(t.iteration_end, (std::vector<uint64_t>{210000, 475000}));
  EXPECT_EQ(t.layer_exposed[0][kWg], 110000u);
  // Weight gradients span every dimension; nothing else communicates.
  for (const Call& c : p.calls) {
    EXPECT_EQ(c.pass, uint32_t(kWg));
    EXPECT_EQ(c.dims, std::vector<uint32_t>{0});
  }
  EXPECT_EQ(p.calls.size(), 2u * 2u * 2u);  // layers x iterations x NPUs
}

TEST(TrainingLoop, ReadsItsScheduleAhead) {
  // The workload of the test above: program fwd 0 (10 ns), fwd 1 (40), wg 1 (70), its all-reduce issued, ig 1
  // (60), wg 0 (30), its all-reduce issued; collectives take 50 ns and 5 ns of update.
  test::TempDir dir;
  Workload w = two_layers(dir);
  FakePlatform p(2, {2}, 50);
  TrainingLoop loop(w, p, 2);
  using Seen = std::vector<std::string>;
  auto ahead = [&](uint64_t ns) {
    Seen seen;
    loop.ahead(ns * 1000, [&](uint32_t npu, uint32_t layer, uint32_t pass) {
      seen.push_back(fmt::format("npu{}:{}:{}", npu, layer, pass_name(pass)));
    });
    return seen;
  };
  // At the start only compute counts, into the second iteration too: l1's all-reduce is 10 + 40 + 70 ns away,
  // l0's 210, the second iteration's 330 and 420.
  EXPECT_EQ(ahead(119), Seen{});
  EXPECT_EQ(ahead(120), (Seen{"npu0:1:wg", "npu1:1:wg"}));
  EXPECT_EQ(ahead(330), (Seen{"npu0:1:wg", "npu0:0:wg", "npu0:1:wg", "npu1:1:wg", "npu1:0:wg", "npu1:1:wg"}));
  EXPECT_EQ(ahead(1000000).size(), 8u);  // two per iteration and NPU, and no more
  EXPECT_FALSE(loop.computing());
  EXPECT_EQ(loop.steps_taken(), 0u);
  // At 130 ns: l1's all-reduce is in flight (issued at 120) and ig 1 runs until 180; l0's is issued after
  // the 50 ns left of it and 30 ns of wg 0.
  loop.start();
  p.run(130000);
  EXPECT_TRUE(loop.computing());
  EXPECT_GT(loop.steps_taken(), 0u);
  EXPECT_EQ(ahead(0), (Seen{"npu0:1:wg", "npu1:1:wg"}));
  EXPECT_EQ(ahead(79), (Seen{"npu0:1:wg", "npu1:1:wg"}));
  EXPECT_EQ(ahead(80), (Seen{"npu0:1:wg", "npu0:0:wg", "npu1:1:wg", "npu1:0:wg"}));
  p.run();
  ASSERT_TRUE(loop.done());
  EXPECT_EQ(loop.times(0).end, 530000u);  // reading ahead changes nothing
  EXPECT_EQ(ahead(1000000), Seen{});
  EXPECT_FALSE(loop.computing());
  // Without compute every step is "now": 1,000 iterations are read two iterations deep, not to their end.
  Workload idle = parse_astra_text(dir.file("idle.txt",
                                            "DATA\n2\n"
                                            "l0 -1 0 NONE 0 0 NONE 0 0 ALLREDUCE 100 0\n"
                                            "l1 -1 0 NONE 0 0 NONE 0 0 ALLREDUCE 100 0\n"));
  TrainingLoop long_run(idle, p, 1000);
  size_t seen = 0;
  long_run.ahead(0, [&](uint32_t, uint32_t, uint32_t) { ++seen; });
  EXPECT_EQ(seen, 2u * 2u * 2u);  // NPUs x iterations x all-reduces
}

TEST(TrainingLoop, HybridBlocksOnForwardAndInputGradientCollectives) {
  test::TempDir dir;
  // HYBRID_DATA_MODEL on 2 x 2: forward and input gradients on dimension 0, weights on dimension 1.
  Workload w = parse_astra_text(dir.file("w.txt",
                                         "HYBRID_DATA_MODEL\n2\n"
                                         "l0 -1 10 ALLGATHER 64 20 REDUCESCATTER 64 30 ALLREDUCE 100 0\n"
                                         "l1 -1 40 ALLGATHER 64 60 REDUCESCATTER 64 70 ALLREDUCE 100 0\n"));
  FakePlatform p(4, {2, 2}, 50);
  TrainingLoop loop(w, p, 1);
  loop.start();
  p.run();
  ASSERT_TRUE(loop.done());
  // fwd 0 [0,10], its all-gather blocks [10,60]; fwd 1 [60,100], all-gather [100,150];
  // backward l1: ig [150,210], its reduce-scatter 210..260 (non-blocking), wg [210,280],
  // all-reduce 280..330, wait for the ig collective (done at 260); l0: ig [280,300]
  // (no collective for layer 0), wg [300,330], all-reduce 330..380; the end waits until 380.
  const std::vector<std::string> want = {"fwd:0@0",
                                         "ALLGATHERfwd:0@10-60",
                                         "fwd:1@60",
                                         "ALLGATHERfwd:1@100-150",
                                         "ig:1@150",
                                         "wg:1@210",
                                         "REDUCESCATTERig:1@210-260",
                                         "ig:0@280",
                                         "wg:0@300",
                                         "ALLREDUCEwg:1@280-330",
                                         "ALLREDUCEwg:0@330-380"};
  EXPECT_EQ(p.log, want);
  EXPECT_EQ(loop.times(0).exposed, 50000u + 50000u + 50000u);
  EXPECT_EQ(loop.dims(0, kFwd), std::vector<uint32_t>{0});
  EXPECT_EQ(loop.dims(0, kWg), std::vector<uint32_t>{1});
}

TEST(TrainingLoop, TransformerGroupMustEndOnADimensionBoundary) {
  test::TempDir dir;
  Workload w = parse_astra_text(dir.file(
      "w.txt",
      "HYBRID_TRANSFORMER model_parallel_NPU_group: 8\n1\na -1 1 ALLREDUCE 8 1 ALLREDUCE 8 1 ALLREDUCE 8 0\n"));
  FakePlatform fits(32, {4, 2, 4}, 1), splits(64, {4, 4, 4}, 1);
  TrainingLoop ok(w, fits, 1);
  EXPECT_EQ(ok.dims(0, kFwd), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(ok.dims(0, kWg), std::vector<uint32_t>{2});
  const std::string err = error_of([&] { TrainingLoop bad(w, splits, 1); });
  EXPECT_NE(err.find("model_parallel_NPU_group 8 does not end on a dimension boundary of the 4 x 4 x 4 fabric"),
            std::string::npos)
      << err;
}

TEST(TrainingWorkload, JsonNumbersPastADoubleAreInputErrorsNamingTheFile) {
  // nlohmann reports them as out_of_range, not as a parse error (found by fuzz_astra).
  const std::string big = "{\"link-latency\": [7E7777]}";
  for (const char* name : {"net.json", "sys.json"}) {
    try {
      if (std::string(name) == "net.json")
        training::astra::read_network_string(big, name);
      else
        training::astra::read_system_string(big, name);
      ADD_FAILURE() << name << " accepted";
    } catch (const core::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(name) + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what();
    }
  }
}

TEST(TrainingWorkload, AstraKeysGivenTwiceOrUnknownAreErrorsAndLeftOutKeysAreListed) {
  // ASTRA-sim takes the last of a key given twice; nlohmann and yaml-cpp would too.
  const std::string net =
      "\"topologies-per-dim\": [\"Ring\"], \"units-count\": [4], \"links-count\": [2], "
      "\"link-bandwidth\": [200], \"link-latency\": [90]";
  struct Case {
    std::string name, text, want;
  };
  const Case cases[] = {
      {"net.json", "{" + net + ", \"units-count\": [8]}", "net.json:1:121: \"units-count\" is given twice"},
      {"net.json", "{" + net + ", \"link-bandwith\": [1]}", "net.json:1:121: unknown key \"link-bandwith\""},
      {"net.json", "{" + net + ", \"dimensions-count\": 2}",
       "net.json:1:121: \"dimensions-count\" 2 but \"topologies-per-dim\" lists 1"},
      // A JSON file's errors name the line and column of the key, or of the syntax error.
      {"sys.json", "{\n  \"endpoint-delay\": 10,\n  \"local-mem-bw\": -5\n}\n",
       "sys.json:3:3: local-mem-bw: '-5' is not a non-negative number"},
      {"sys.json", "{\n  \"endpoint-delay\": 10,\n}\n",
       "sys.json:3:1: not JSON: syntax error while parsing object key - unexpected '}'"},
      {"net.yml", "topology: [Ring]\nnpus_count: [4]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]\n",
       "net.yml:3: npus_count is given again (line 2 gave it first)"},
      {"sys.json", "{\"endpoint-delay\": 10, \"endpoint-delay\": 20}",
       "sys.json:1:24: \"endpoint-delay\" is given twice"},
      {"sys.txt", "endpoint-delay: 10\nendpoint-delay: 20\n",
       "sys.txt:2: endpoint-delay is given again (line 1 gave it first)"},
  };
  for (const Case& c : cases) {
    const std::string err = error_of([&] {
      if (c.name.rfind("net", 0) == 0)
        training::astra::read_network_string(c.text, c.name);
      else
        training::astra::read_system_string(c.text, c.name);
    });
    EXPECT_NE(err.find(c.want), std::string::npos) << c.text << "\nerror: " << err;
  }
  // The analytical backend's other keys: read, and listed back as not modeled.
  const training::astra::Network n = training::astra::read_network_string(
      "{" + net + ", \"topology-name\": \"Hierarchical\", \"dimensions-count\": 1, \"nic-latency\": [0]}", "net.json");
  ASSERT_EQ(n.dims.size(), 1u);
  EXPECT_EQ(n.ignored, (std::vector<std::string>{"nic-latency: [0]", "topology-name: \"Hierarchical\""}));
  // One key set per object: a key again in a nested object is refused, the same key in sibling objects is not.
  EXPECT_NE(error_of([] {
              training::astra::read_system_string("{\"a\": {\"k\": 1, \"k\": 2}}", "sys.json");
            }).find("sys.json:1:16: \"k\" is given twice"),
            std::string::npos);
  const std::string siblings =
      error_of([] { training::astra::read_system_string("{\"a\": [{\"k\": 1}, {\"k\": 2}]}", "sys.json"); });
  EXPECT_EQ(siblings.find("given twice"), std::string::npos) << siblings;
  EXPECT_FALSE(siblings.empty());  // refused for what it is: not a system key
}

TEST(TrainingWorkload, RunsPastThePicosecondClockAreRefusedWithTheirIterations) {
  // 10^12 ns of compute per iteration: 4503 iterations fit under kMaxRunNs (4.5e15 ns), 4504 do not; each
  // checkpoint initiate may re-run every forward pass, so two of them triple the bound.
  test::TempDir dir;
  const Workload w = parse_astra_text(dir.file("w.txt", "DATA\n1\na -1 1000000000000 NONE 0 0 NONE 0 0 NONE 0 0\n"));
  EXPECT_EQ(w.iteration_ns_bound, 1000000000000u);
  EXPECT_NO_THROW(check_run_length(w, 4503));
  const std::string err = error_of([&] { check_run_length(w, 4504); });
  EXPECT_NE(err.find("w.txt: 4504 iterations of up to 1000000000000 ns of compute and update each"), std::string::npos)
      << err;
  const Workload t = parse_astra_text(
      dir.file("t.txt",
               "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 checkpoints: 0 checkpoint_initiates: 2 "
               "0 1\n2\na -1 100 NONE 0 0 NONE 0 0 NONE 0 0\nb -1 100 NONE 0 0 NONE 0 0 NONE 0 0\n"));
  EXPECT_EQ(t.iteration_ns_bound, 600u);
}

TEST(TrainingWorkload, NetworkCountsPast32BitsAreInputErrorsNotCasts) {
  // A double past uint32_t was cast to the NPU count: undefined behaviour (found by fuzz_astra in CI).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"net.json",
       "{\"topologies-per-dim\": [\"Ring\"], \"units-count\": [1e20], \"links-count\": [2], "
       "\"link-bandwidth\": [1], \"link-latency\": [1]}"},
      {"net.json",
       "{\"topologies-per-dim\": [\"Switch\"], \"units-count\": [4], \"links-count\": [1e30], "
       "\"link-bandwidth\": [1], \"link-latency\": [1]}"},
      {"net.yml", "topology: [Ring]\nnpus_count: [4294967298]\nbandwidth: [1]\nlatency: [1]\n"},
  };
  for (const auto& c : cases) {
    const std::string &name = c.first, &text = c.second;  // (lambdas cannot capture structured bindings)
    const std::string err = error_of([&] { training::astra::read_network_string(text, name); });
    EXPECT_EQ(err.rfind(name + ":", 0), 0u) << err;
    EXPECT_NE(err.find("is not a whole number from"), std::string::npos) << err;
  }
  // Dimensions that each fit but whose product does not.
  const training::astra::Network n = training::astra::read_network_string(
      "topology: [Switch, Switch, Switch]\nnpus_count: [65536, 65536, 2]\nbandwidth: [1, 1, 1]\nlatency: [1, 1, 1]\n",
      "net.yml");
  const std::string err = error_of([&] { training::astra::platform_yaml(n); });
  EXPECT_NE(err.find("net.yml: more than 4294967295 NPUs in all"), std::string::npos) << err;
}

TEST(GraphRun, ReadsItsScheduleAheadAndRefusesMissingDependencies) {
  // npu0: 10 us of compute, a collective, 50 us of compute, a collective. Read ahead at the start, only the
  // compute before a node counts: the first collective is 10 us away, the second 60 us.
  auto node = [](uint64_t id, GraphNode::Kind kind, uint64_t us, std::vector<uint64_t> deps) {
    GraphNode n;
    n.id = id;
    n.kind = kind;
    n.duration_ns = us * 1000;
    n.comm = kind == GraphNode::coll ? Comm::allreduce : Comm::none;
    n.bytes = kind == GraphNode::coll ? 64 : 0;
    n.deps = std::move(deps);
    return n;
  };
  Graph g;
  g.file = "g.et";
  g.nodes = {node(0, GraphNode::comp, 10, {}), node(1, GraphNode::coll, 0, {0}), node(2, GraphNode::comp, 50, {0}),
             node(3, GraphNode::coll, 0, {2})};
  FakePlatform p(1, {1}, 5);
  GraphRun run({g}, p);
  auto ahead = [&](uint64_t us) {
    std::vector<uint32_t> seen;
    run.ahead(us * 1000000, [&](uint32_t npu, uint32_t k) {
      EXPECT_EQ(npu, 0u);
      seen.push_back(k);
    });
    return seen;
  };
  EXPECT_EQ(ahead(5), std::vector<uint32_t>{});
  EXPECT_EQ(ahead(20), std::vector<uint32_t>{1});
  EXPECT_EQ(ahead(100), (std::vector<uint32_t>{1, 3}));
  run.start();
  p.run();
  EXPECT_TRUE(run.done());
  EXPECT_EQ(run.finished_nodes(), 4u);
  EXPECT_EQ(ahead(100), std::vector<uint32_t>{});  // everything done
  // A dependency on a node the graph does not have, with ids that are the indices or not.
  for (uint64_t first : {0u, 7u}) {
    Graph bad;
    bad.file = "bad.et";
    bad.nodes = {node(first, GraphNode::comp, 1, {}), node(first + 1, GraphNode::comp, 1, {first + 5})};
    const std::string err = error_of([&] { GraphRun r({bad}, p); });
    EXPECT_NE(err.find("bad.et: a dependency on node " + std::to_string(first + 5) + ", which the graph does not have"),
              std::string::npos)
        << err;
  }
}
