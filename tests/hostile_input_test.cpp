// Hostile inputs (issue 12): input files that are not regular files, or too
// big, are refused before anything is read; more than one YAML document is
// refused; every command-line error exits with 1 (never CLI11's 100+), an
// unknown subcommand is named, and integers that do not fit are refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "harness.h"
#include "models/core/param.h"
#include "models/core/units.h"

using namespace fabricvp;

namespace {

void expect_refused(const std::string& args, const std::string& want) {
  test::Result r = test::sh(args);
  EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(want), std::string::npos) << args << "\n" << r.out;
}

}  // namespace

TEST(HostileInput, SpecialAndHugeFilesAreRefusedWithoutReading) {
  test::TempDir dir;
  const std::string fifo = (dir.path / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const std::string big = (dir.path / "big.yaml").string();
  ASSERT_EQ(truncate(dir.file("big.yaml", "sys:\n").c_str(), (off_t(64) << 20) + 1), 0);  // sparse
  const std::string plat = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  const std::string o = " -q -o " + (dir.path / "o").string();
  expect_refused("run /dev/zero" + o, "/dev/zero: platform file is a character device");
  expect_refused("run " + fifo + o, "platform file is a FIFO");
  expect_refused("run " + big + o, "platform file of 64.0 MiB is over the 64.0 MiB limit");
  expect_refused("run " + dir.path.string() + o, "directory");
  expect_refused("params /dev/zero", "platform file is a character device");
  expect_refused("run " + plat + " --workload " + fifo + o, "workload file is a FIFO");
  expect_refused("run " + plat + " --workload /dev/zero" + o, "character device");
  expect_refused("run " + plat + " --system " + fifo + " --bytes 64KiB" + o, "system file is a FIFO");
  const std::string net = (dir.path / "net.yml").string();
  ASSERT_EQ(mkfifo(net.c_str(), 0644), 0);
  expect_refused("convert astra --network " + net + " -o " + (dir.path / "n.yaml").string(), "network file is a FIFO");
  expect_refused("asm /dev/zero", "program file is a character device");
  expect_refused("sweep " + fifo + " -o " + (dir.path / "s").string(), "sweep file is a FIFO");
}

TEST(HostileInput, MoreThanOneYamlDocumentIsRefused) {
  test::TempDir dir;
  const std::string two = dir.file("two.yaml", "sys:\n  description: x\n---\nsys:\n  description: y\n");
  expect_refused("run " + two + " -q -o " + (dir.path / "o").string(),
                 "two.yaml:3:1: a second YAML document starts here ('---'); a platform file is one");
  const std::string w = dir.file("w.yaml", "workload:\n  parallelism: DATA\n  layers: []\n---\n");
  expect_refused("run " + std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml --workload " + w + " -q -o " +
                     (dir.path / "o").string(),
                 "a workload is one");
}

TEST(HostileInput, CommandLineErrorsExitWithOne) {
  test::TempDir dir;
  const std::string plat = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
  const std::string o = " -q -o " + (dir.path / "o").string();
  expect_refused("nosuch", "unknown subcommand 'nosuch' (ace-equiv, asm,");
  expect_refused("", "A subcommand is required");
  expect_refused("run " + plat + " --seed 99999999999999999999" + o,
                 "--seed: '99999999999999999999' is out of range for an integer of 64 bits");
  expect_refused("run " + plat + " --seed -1" + o, "--seed: '-1' is negative");
  expect_refused("run " + plat + " --seed \"\"" + o, "--seed: an empty value: expected a whole number");
  expect_refused("run " + plat + " --seed 1e3" + o, "--seed: '1e3': expected a whole number");
  expect_refused("run " + plat + " --no-such-option" + o, "--no-such-option");
  expect_refused("run " + (dir.path / "missing.yaml").string() + o, "missing.yaml");
  expect_refused("sweep x.yaml -j 0", "--jobs");
  expect_refused("experiment ace -j 0", "--jobs");
  expect_refused("hac " + std::string(FABRICVP_PLATFORMS) + "/pspin-switch.yaml",
                 "pspin-switch.yaml: a pspin platform: hac characterizes the HAC clock alignment of Groq platforms");
  expect_refused("run " + std::string(FABRICVP_PLATFORMS) + "/pspin-switch.yaml --handlers " +
                     std::string(FABRICVP_SOURCE_DIR) + "/sw/handlers/kernels/reduce.c --messages 4294967295" + o,
                 "--messages 4294967295: too large");
  // Options that set parameters are named as given, not as the -p override they once became.
  expect_refused("run " + plat + " --ber 2" + o,
                 "--ber 2: key 'sys.phy.ber' (parameter sys.phy.ber): value 2 out of range");
  // An empty text value is refused, in nested subcommands too.
  expect_refused("run " + plat + " --ber \"\"" + o, "--ber: an empty value");
  expect_refused("run " + plat + " --trace-window \"\"" + o, "--trace-window: an empty value");
  expect_refused("run " + plat + " --root= 3" + o, "--root=: an empty value");  // CLI11 took the 3
  expect_refused("convert astra --network " + std::string(FABRICVP_SOURCE_DIR) + "/README.md -o \"\"",
                 "--out: an empty value");
  // Counts that would run for ever are bounded.
  expect_refused("run " + plat + " --max-replays 4294967295" + o, "--max-replays");
  expect_refused("hac " + plat + " --align-exchanges 99999999999", "--align-exchanges");
  expect_refused("ace-equiv --transactions 99999999999999", "--transactions");
  expect_refused("fec bench --codewords 0", "--codewords");
  EXPECT_EQ(test::sh("--help").code, 0);
  EXPECT_EQ(test::sh("--version").code, 0);
}

TEST(HostileInput, IntegersAreDecimalOrHexNeverOctal) {
  // "010" is ten on the command line and in a parameter (strtoull's base 0 read it as octal 8).
  test::TempDir dir;
  const std::string o = (dir.path / "o").string();
  const std::string plat = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --bytes 4KiB -q -o " + o;
  for (const auto& [seed, want] : {std::pair<const char*, int>{"010", 10}, {"0x10", 16}, {"\" 7 \"", 7}}) {
    const test::Result r = test::sh("run " + plat + " --seed " + seed);
    ASSERT_EQ(r.code, 0) << seed << ": " << r.out;
    EXPECT_EQ(test::load_json(o + "/stats.json")["run"]["seed"], want) << seed;
  }
  uint64_t u = 0;
  EXPECT_TRUE(core::detail::parse_value("010", u));
  EXPECT_EQ(u, 10u);
  EXPECT_TRUE(core::detail::parse_value("0x1F", u));
  EXPECT_EQ(u, 31u);
  EXPECT_FALSE(core::detail::parse_value("08x", u));
  EXPECT_FALSE(core::detail::parse_value("0x", u));
  EXPECT_FALSE(core::detail::parse_value("-0x10", u));
  EXPECT_TRUE(core::detail::parse_value("+5", u));
  EXPECT_EQ(u, 5u);
  int64_t i = 0;
  EXPECT_TRUE(core::detail::parse_value("-010", i));
  EXPECT_EQ(i, -10);
  EXPECT_TRUE(core::detail::parse_value("-0x10", i));
  EXPECT_EQ(i, -16);
}

TEST(HostileInput, TraceWindowsReadAsTheReadmeWritesThemAndReversedOnesAreRefused) {
  test::TempDir dir;
  const std::string plat = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --bytes 64KiB --trace -q -o ";
  test::Result r = test::sh("run " + plat + (dir.path / "a").string() + " --trace-window 0:10us");
  EXPECT_EQ(r.code, 0) << r.out;  // the README's own example: zero needs no unit
  EXPECT_TRUE(std::filesystem::exists(dir.path / "a" / "trace.json"));
  expect_refused("run " + plat + (dir.path / "b").string() + " --trace-window 10us:5us",
                 "--trace-window 10us:5us: the window ends before it starts");
  expect_refused("run " + plat + (dir.path / "c").string() + " --trace-window 5:10us", "'5': unit must be");
  expect_refused("run " + plat + (dir.path / "d").string() + " --trace-window 0:99999999999ms", "past 2^64 ps");
  // A number with an exponent, as a time or a size (it read as 1 with the unit 'e3ns').
  EXPECT_EQ(core::parse_time_ps("1e3ns", "--trace-window"), 1000000u);
  EXPECT_EQ(core::parse_time_ps("2.5E-3us", "t"), 2500u);
  EXPECT_EQ(core::parse_bytes("1e3", "--bytes"), 1000u);
  EXPECT_EQ(core::parse_bytes("1e+1KiB", "--bytes"), 10240u);
  EXPECT_THROW(core::parse_time_ps("1ens", "t"), core::ConfigError);
  EXPECT_THROW(core::parse_time_ps("1e+ns", "t"), core::ConfigError);
  r = test::sh("run " + plat + (dir.path / "e").string() + " --trace-window 0:1e4ns");
  EXPECT_EQ(r.code, 0) << r.out;
}

// A reused output directory holds only what the last run wrote (and the
// user's own files): no stale trace.json or programs/ from an earlier run.
TEST(HostileInput, ReusedOutputDirectoryKeepsNoStaleOutputs) {
  test::TempDir dir;
  const std::string out = (dir.path / "o").string();
  ASSERT_EQ(
      test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml --bytes 64KiB --trace -q -o " + out).code,
      0);
  ASSERT_TRUE(std::filesystem::exists(dir.path / "o" / "trace.json"));
  ASSERT_TRUE(std::filesystem::exists(dir.path / "o" / "programs"));
  dir.file("o/mine.txt", "kept\n");
  ASSERT_EQ(test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml --bytes 64KiB -q -o " + out).code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "o" / "trace.json"));
  EXPECT_FALSE(std::filesystem::exists(dir.path / "o" / "programs"));
  EXPECT_TRUE(std::filesystem::exists(dir.path / "o" / "stats.json"));
  EXPECT_TRUE(std::filesystem::exists(dir.path / "o" / "mine.txt"));
}

// Every attempt of a run with replays is a child process; killing the parent
// alone must not leave it simulating.
TEST(HostileInput, KillingTheRunKillsItsAttempt) {
  test::TempDir dir;
  const std::string out = (dir.path / "killed").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string plat = std::string(FABRICVP_PLATFORMS) + "/ace-torus-4x4x4.yaml";
    execl(FABRICVP_BIN, FABRICVP_BIN, "run", plat.c_str(), "--bytes", "64MiB", "--max-replays", "2", "-q", "-o",
          out.c_str(), nullptr);
    _exit(127);
  }
  auto attempts = [&] {
    // "[k]illed" matches the path but not this shell's own command line.
    const std::string pattern = (dir.path / "[k]illed").string();
    FILE* p = popen(("pgrep -f -- '" + pattern + "' | grep -vx " + std::to_string(pid) + " | wc -l").c_str(), "r");
    char buf[32] = {};
    const size_t n = fread(buf, 1, sizeof buf - 1, p);
    pclose(p);
    return n ? std::stoi(buf) : 0;
  };
  int seen = 0;
  for (int i = 0; i < 100 && seen == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    seen = attempts();
  }
  ASSERT_GT(seen, 0) << "the attempt process never appeared";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  int left = 1;
  for (int i = 0; i < 40 && left; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = attempts();
  }
  EXPECT_EQ(left, 0) << "an attempt kept running after its parent was killed";
}

// A NOP or WAIT past 2^40 cycles would carry simulated time past 2^64 ps
// (a NOP of 2^64 - 1 cycles used to finish at time 0).
TEST(HostileInput, CycleCountsPast2To40AreRefused) {
  test::TempDir dir;
  expect_refused("asm " + dir.file("a.s", ".queue 0\nNOP 18446744073709551615\n"),
                 "a.s:2: NOP 18446744073709551615: at most 2^40 cycles");
  expect_refused("asm " + dir.file("b.s", ".queue 0\nNOP 20000000000000000\n"), "at most 2^40 cycles");
  expect_refused("asm " + dir.file("c.s", ".queue 0\nWAIT 1099511627777\n"), "WAIT 1099511627777: at most cycle 2^40");
  EXPECT_EQ(test::sh("asm " + dir.file("d.s", ".queue 0\nNOP 1099511627776\n")).code, 0);
}

// NOPs that are legal one by one but add up past the end of simulated time
// stop the run with an error (exit 2) at once; before, the program ran for ever.
TEST(HostileInput, ProgramsRunningPastTheEndOfSimulatedTimeAreStopped) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path / "p");
  dir.file("p/sys.node0.tsp0.s", ".tsp sys.node0.tsp0\n.queue 0\n.rept 20000\nNOP 1099511627776\n.endr\n");
  const auto start = std::chrono::steady_clock::now();
  test::Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml -p sys.tsps_per_node=2 -q " +
                            "--programs " + (dir.path / "p").string() + " -o " + (dir.path / "o").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("the program runs past the end of simulated time"), std::string::npos) << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST(HostileInput, AliasBombsAndAliasLoopsAreRefusedBeforeTheyExpand) {
  test::TempDir dir;
  // Nine levels of ten aliases: 10^9 nodes once walked, 400 bytes of text.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::string o = " -q -o " + (dir.path / "o").string();
  const std::string plat = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  const auto start = std::chrono::steady_clock::now();
  expect_refused("run " + dir.file("bomb.yaml", bomb) + o, "more than 2097152 YAML nodes once aliases are expanded");
  expect_refused("run " + plat + " --workload " + dir.file("w.yaml", bomb) + o, "w.yaml:");
  expect_refused("sweep " + dir.file("s.yaml", bomb) + " -o " + (dir.path / "s").string(), "an alias bomb?");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  // An anchor used inside itself is a loop: refused, not walked for ever.
  expect_refused("run " + dir.file("loop.yaml", "a: &a [1, *a]\n") + o, "nested deeper than 256 levels");
}

TEST(HostileInput, ProgramsThatExpandPastTheLineLimitAreRefused) {
  test::TempDir dir;
  expect_refused("asm " + dir.file("big.s", ".rept 10000000\nNOP 1\nNOP 1\n.endr\n"),
                 "big.s:1: .rept 10000000 of 2 lines makes the program longer than 4194304 lines");
}

// Legal parameters the compiler cannot schedule are refused before the run
// (exit 1, with the reason), never an internal error or a simulation known to
// fail; where the compiler can schedule them (one RECV per chunk on a link
// faster than the clock), the collective runs and checks.
TEST(HostileInput, PlatformsTheCompilerCannotScheduleAreRefusedWithTheReason) {
  test::TempDir dir;
  const std::string node = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
  const std::string o = " -q -o " + (dir.path / "o").string();
  expect_refused("run " + node + " -p 'sys.node0.tsp*.clock_mhz=1' --bytes 64KiB" + o,
                 "faster than the receiver's cycle of 1000000 ps");
  expect_refused("run " + node + " -p 'sys.node0.link*.lane_gbps=1000'" + o,
                 "the compiler cannot schedule this allreduce on this platform");
  test::Result r = test::sh("run " + std::string(FABRICVP_PLATFORMS) +
                            "/groq-node-ring.yaml -p 'sys.node0.link*.lane_gbps=1000' --bytes 1MiB" + o);
  EXPECT_EQ(r.code, 0) << r.out;
}

// A run is refused before it allocates when its estimated host memory is
// more than the machine (here: an address-space limit) has, naming the
// estimate; and the estimate is close to what runs really hold.
TEST(HostileInput, RunsNeedingMoreMemoryThanAvailableAreRefusedWithTheEstimate) {
  test::TempDir dir;
  const std::string o = " -q -o " + (dir.path / "o").string();
  auto limited = [&](const std::string& args) {
    return test::shell("ulimit -v 1048576; " + std::string(FABRICVP_BIN) + " " + args + " 2>&1");
  };
  const std::string groq = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
  const std::string npu = std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml";
  // More than the NPU's own memory is an input error, not an internal one.
  expect_refused("run " + npu + " --bytes 40GiB" + o,
                 "--bytes: 40 GiB of buffers do not fit an NPU's memory of 32 GiB");
  if (test::kSanitized) GTEST_SKIP() << "AddressSanitizer cannot start under ulimit -v and doubles the resident memory";
  const auto start = std::chrono::steady_clock::now();
  test::Result r = limited("run " + groq + " --bytes 200MiB" + o);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("this run needs about 2.2 GiB of host memory (1.6 GiB of SRAM written on 8 chips"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("available (the address-space limit (ulimit -v))"), std::string::npos) << r.out;
  r = limited("run " + npu + " --bytes 64MiB" + o);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("64 NPU memories of up to 64 MiB"), std::string::npos) << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  // The estimate against the peak the run really reached.
  r = test::sh("run " + groq + " --bytes 64MiB" + o);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json run = test::load_json((dir.path / "o" / "stats.json").string())["run"];
  const double est = run["host_estimate_mib"].get<double>(), peak = run["peak_rss_mib"].get<double>();
  EXPECT_GT(est, 0.8 * peak) << est << " MiB estimated, " << peak << " MiB peak";
  EXPECT_LT(est, 1.2 * peak) << est << " MiB estimated, " << peak << " MiB peak";
}

// Every output file is checked: a full disk (/dev/full) or a directory that
// does not exist is an error naming the file and the reason, exit 1, never a
// truncated file and a run that says it succeeded.
TEST(HostileInput, OutputsThatCannotBeWrittenAreErrorsNamingTheFile) {
  const std::string groq = std::string(FABRICVP_PLATFORMS) + "/groq-node.yaml";
  expect_refused("topology " + groq + " --json /dev/full",
                 "/dev/full: cannot write the topology JSON: No space left on device");
  expect_refused("topology " + std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml --json /no/such/dir/t.json",
                 "/no/such/dir/t.json: cannot write the topology JSON: No such file or directory");
  expect_refused("asm " + std::string(FABRICVP_SOURCE_DIR) + "/docs/examples/drift/sys.node0.tsp1.s -o /dev/full",
                 "/dev/full: cannot write the program: No space left on device");
  expect_refused(
      "convert astra --workload " + std::string(FABRICVP_SOURCE_DIR) + "/sw/workloads/resnet50.yaml -o /dev/full",
      "/dev/full: cannot write the converted file: No space left on device");
}

// An option the workload does not use is refused, naming it and why; the
// same option where it applies runs (none is accepted and ignored).
TEST(HostileInput, OptionsTheWorkloadDoesNotUseAreRefused) {
  test::TempDir dir;
  const std::string p = std::string(FABRICVP_PLATFORMS) + "/";
  const std::string o = " -q -o " + (dir.path / "o").string();
  const std::string groq = "run " + p + "groq-node.yaml --bytes 4KiB";
  expect_refused(groq + " --dst 3" + o, "--dst/--peer: only a p2p transfer has a destination (--workload allreduce)");
  expect_refused(groq + " --peer 3" + o, "--dst/--peer: only a p2p transfer");
  expect_refused(groq + " --src 2 --workload alltoall" + o, "--src/--root: only a broadcast (its root) or a p2p");
  expect_refused(groq + " --max-replays 2 --programs " + dir.path.string() + o,
                 "--bytes: describes a compiled collective; --programs runs hand-written programs instead");
  EXPECT_EQ(test::sh(groq + " --workload p2p --src 2 --dst 3" + o).code, 0);
  EXPECT_EQ(test::sh(groq + " --workload broadcast --root 2 --max-replays 1" + o).code, 0);
  const std::string npu = "run " + p + "npu-3d-64.yaml --bytes 64KiB";
  expect_refused(npu + " --dst 1" + o, "--dst/--peer: NPU platforms run collectives, not p2p transfers");
  expect_refused(npu + " --src 1" + o, "--src/--root: only a broadcast has a root (--workload allreduce)");
  expect_refused(npu + " --max-replays 1" + o, "--max-replays: npu platforms raise no machine checks");
  expect_refused(npu + " --collective allgather --group dim0" + o, "--group: give each --collective its group=DIMS");
  expect_refused(npu + " --collective allgather --workload allreduce" + o,
                 "--workload: give the collectives with --collective or one with --workload, not both");
  expect_refused(
      "run " + p + "npu-3d-64.yaml --workload " + FABRICVP_SOURCE_DIR "/sw/workloads/resnet50.yaml --bytes 1MiB" + o,
      "--bytes: a training workload's collective sizes come from its file");
  EXPECT_EQ(test::sh(npu + " --workload broadcast --src 5" + o).code, 0);
  const std::string pspin =
      "run " + p + "pspin-switch.yaml --handlers " FABRICVP_SOURCE_DIR "/sw/handlers/kernels/filter.c --packets 4";
  expect_refused(pspin + " --bytes 1MiB" + o, "--bytes: a PsPIN switch runs packet handlers");
  expect_refused(pspin + " --pcap-in " + dir.file("x.pcap", "") + " --fill zero" + o,
                 "--fill: the packets come from --pcap-in");
}

TEST(HostileInput, AnInputFoundWrongWhileTheSimulationRunsIsAnInputError) {
  // An NPU finds a collective larger than its memory only when the workload issues it, inside the simulation:
  // a plain input error (exit 1, the key to change), not SystemC's report of an exception in a process.
  test::TempDir dir;
  const std::string w = dir.file("big.txt", "DATA\n1\nl0 -1 100 NONE 0 200 NONE 0 300 ALLREDUCE 1099511627776 7\n");
  expect_refused("run " + std::string(FABRICVP_PLATFORMS) + "/npu-3d-64.yaml --workload " + w + " -q -o " +
                     (dir.path / "o").string(),
                 "fabricvp: error: sys.npu0: a 1099511627776-byte allreduce at address 0 does not fit "
                 "sys.npu0.memory.size_mib (32768 MiB)");
}
