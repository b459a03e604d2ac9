// Configuration: YAML flattening, globs, precedence, and errors that name
// file, line and key.
#include <gtest/gtest.h>

#include <fstream>

#include "harness.h"
#include "models/core/config.h"
#include "models/core/param.h"

using namespace fabricvp;
using core::Config;
using core::ConfigError;

namespace {
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, GlobMatchesWithinOneSegment) {
  EXPECT_TRUE(core::glob_match("sys.node*.tsp*.clock_mhz", "sys.node0.tsp3.clock_mhz"));
  EXPECT_TRUE(core::glob_match("sys.node0.tsp*", "sys.node0.tsp"));
  EXPECT_FALSE(core::glob_match("sys.*.clock_mhz", "sys.node0.tsp3.clock_mhz"));  // '*' never crosses '.'
  EXPECT_TRUE(core::glob_match("sys.*.*.clock_mhz", "sys.node0.tsp3.clock_mhz"));
  EXPECT_FALSE(core::glob_match("sys.node0.tsp1*", "sys.node0.tsp2"));
  EXPECT_TRUE(core::glob_match("*", "anything"));
  EXPECT_FALSE(core::glob_match("*", "a.b"));
}

TEST(Config, NestedMapsFlattenAndLastMatchWins) {
  Config c;
  c.load_string("a:\n  b:\n    c: 1\n  x*:\n    y: 2\n  x1:\n    y: 3\n", "f.yaml");
  ASSERT_NE(c.find("a.b.c"), nullptr);
  EXPECT_EQ(c.find("a.b.c")->value, "1");
  EXPECT_EQ(c.find("a.b.c")->origin.str(), "f.yaml:3:5");
  EXPECT_EQ(c.find("a.x0.y")->value, "2");
  EXPECT_EQ(c.find("a.x1.y")->value, "3");  // later exact entry wins over the earlier glob
  c.add_override("a.x*.y=9");
  EXPECT_EQ(c.find("a.x1.y")->value, "9");  // -p comes after the file
  EXPECT_EQ(c.find("a.x1.y")->origin.str(), "-p a.x*.y=9");
  EXPECT_EQ(c.find("a.b.d"), nullptr);
}

TEST(Config, SyntaxAndStructureErrorsNameFileAndLine) {
  EXPECT_NE(error_of([] { Config().load_string("a:\n  b: [1, 2\n", "bad.yaml"); }).find("bad.yaml:"),
            std::string::npos);
  EXPECT_EQ(error_of([] { Config().load_string("a:\n  b: 1\n  b: 2\n", "dup.yaml"); }),
            "dup.yaml:3:3: duplicate key 'a.b' (first set on line 2)");
  EXPECT_EQ(error_of([] { Config().load_string("a:\n  b:\n", "null.yaml"); }), "null.yaml:2:3: key 'a.b' has no value");
  EXPECT_EQ(error_of([] { Config().load_file("/nonexistent/platform.yaml"); }),
            "/nonexistent/platform.yaml: cannot open platform file: No such file or directory");
  EXPECT_EQ(error_of([] { Config().add_override("novalue"); }), "-p novalue: expected key=value");
}

TEST(Config, TypedParametersParseAndRejectBadValues) {
  auto& cfg = core::Context::get().config();
  cfg.load_string("grp:\n  n: 12\n  x: 2.5\n  s: hello\n  b: true\n  bad_int: 12abc\n  neg: -1\n  big: 99\n", "p.yaml");
  core::Param<uint32_t> n("grp", "n", 1, "", "");
  core::Param<double> x("grp", "x", 0.0, "", "");
  core::Param<std::string> s("grp", "s", "", "", "");
  core::Param<bool> b("grp", "b", false, "", "");
  core::Param<uint32_t> dflt("grp", "unset", 7, "", "");
  EXPECT_EQ(n.get(), 12u);
  EXPECT_EQ(x.get(), 2.5);
  EXPECT_EQ(s.get(), "hello");
  EXPECT_TRUE(b.get());
  EXPECT_EQ(dflt.get(), 7u);
  EXPECT_EQ(dflt.source(), nullptr);
  EXPECT_EQ(n.source()->origin.str(), "p.yaml:2:3");
  EXPECT_EQ(error_of([] { core::Param<uint32_t> p("grp", "bad_int", 1, "", ""); }),
            "p.yaml:6:3: key 'grp.bad_int' (parameter grp.bad_int): expected unsigned 32-bit integer, got '12abc'");
  EXPECT_NE(error_of([] { core::Param<uint64_t> p("grp", "neg", 1, "", ""); }).find("p.yaml:7:3"), std::string::npos);
  EXPECT_EQ(error_of([] { core::Param<uint32_t> p("grp", "big", 1, "", "", 0, 10); }),
            "p.yaml:8:3: key 'grp.big' (parameter grp.big): value 99 out of range [0, 10]");
  EXPECT_NE(error_of([] {
              core::Param<std::string> p("grp", "s", "a", "", "", {"a", "b"});
            }).find("value 'hello' is not one of: a, b"),
            std::string::npos);
}

TEST(Config, UnknownKeyInPlatformFileIsAnErrorWithSuggestion) {
  auto& ctx = core::Context::get();
  ctx.config().load_string("sys:\n  tsps_per_node: 2\n  node0:\n    tsp*:\n      clok_mhz: 800\n", "plat.yaml");
  groq::CompilerParams rp;
  groq::System sys("sys");
  EXPECT_EQ(error_of([&] { ctx.config().check_all_used(systems::parameter_names()); }),
            "plat.yaml:5:7: unknown key 'sys.node0.tsp*.clok_mhz': it matches no parameter "
            "(did you mean 'sys.node0.tsp*.clock_mhz'?)");
}

TEST(Config, LikelyTyposNameOnlyKeysCloseToAParameterOfTheirObject) {
  Config c;
  c.load_string("grp:\n  portz: 4\n  ports: 2\nother:\n  portz: 1\ngrp2:\n  zzzzzzzz: 1\n", "t.yaml");
  (void)c.resolve("grp.ports");
  const std::vector<std::string> known{"grp.ports", "grp.clusters", "grp2.ports"};
  // other.portz: no parameter of `other` is known (not built yet); grp2.zzzzzzzz: nothing close.
  EXPECT_EQ(c.likely_typos(known), "\n  t.yaml:2:3: key 'grp.portz' has set no parameter (did you mean 'grp.ports'?)");
  EXPECT_EQ(c.likely_typos({}), "");
}

TEST(Config, KeyForAModuleThatDoesNotExistIsAnError) {
  auto& ctx = core::Context::get();
  ctx.config().load_string("sys:\n  tsps_per_node: 2\n  node0:\n    tsp5:\n      clock_mhz: 800\n", "plat.yaml");
  groq::CompilerParams rp;
  groq::System sys("sys");
  std::string e = error_of([&] { ctx.config().check_all_used(systems::parameter_names()); });
  EXPECT_EQ(e.rfind("plat.yaml:5:7: unknown key 'sys.node0.tsp5.clock_mhz'", 0), 0u) << e;
}

TEST(Config, KeyOfAModuleFamilyThePlatformLacksSaysWhy) {
  // A Dragonfly key on a single node: the error names file, line, key and the reason.
  auto& ctx = core::Context::get();
  ctx.config().load_string("sys:\n  tsps_per_node: 2\n  racks: 3\n  glink*:\n    lanes: 2\n", "plat.yaml");
  groq::CompilerParams rp;
  groq::System sys("sys");
  EXPECT_EQ(error_of([&] { ctx.config().check_all_used(systems::parameter_names()); }),
            "plat.yaml:3:3: key 'sys.racks' matches no parameter: only a Dragonfly has racks and global cables "
            "(sys.topology is groq_node)");
}

TEST(Config, WrongTypeInPlatformFileNamesFileLineAndKey) {
  auto& ctx = core::Context::get();
  ctx.config().load_string("sys:\n  node0:\n    link*:\n      lanes: four\n", "plat.yaml");
  EXPECT_EQ(error_of([&] { groq::System sys("sys"); }),
            "plat.yaml:4:7: key 'sys.node0.link*.lanes' (parameter sys.node0.link0_1.lanes): expected unsigned "
            "32-bit integer, got 'four'");
}

TEST(Config, ParametersTakeGlobValuesPerInstance) {
  auto& ctx = core::Context::get();
  ctx.config().load_string(
      "sys:\n  tsps_per_node: 3\n  node0:\n    tsp*:\n      clock_mhz: 1000\n    tsp2:\n      clock_mhz: 1250\n",
      "plat.yaml");
  groq::CompilerParams rp;
  groq::System sys("sys");
  ctx.config().check_all_used(systems::parameter_names());
  EXPECT_EQ(sys.chips[0]->clock_mhz.get(), 1000.0);
  EXPECT_EQ(sys.chips[1]->clock_mhz.get(), 1000.0);
  EXPECT_EQ(sys.chips[2]->clock_mhz.get(), 1250.0);
  EXPECT_EQ(sys.chips[2]->clock().ps(5), 4000u);
}
