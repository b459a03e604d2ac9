// fabricvp command line. Every subcommand lives in its own file of this
// folder and registers itself (tools/fabricvp/commands.h); main() sets them
// all up, parses, and runs the one given:
//   run        cmd_run.cpp        simulate a platform (the run driver, runtime/driver.h)
//   params     cmd_params.cpp     every parameter of a platform
//   topology   cmd_topology.cpp   describe an elaborated platform
//   experiment cmd_experiment.cpp studies made of many runs
//   asm, fec, hac, ace-equiv      tools of one subsystem
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>

#include "fabricvp_version.h"
#include "models/core/kernel.h"
#include "models/core/param.h"
#include "tools/fabricvp/commands.h"

int sc_main(int argc, char** argv) {
  fabricvp::core::init_kernel();
  CLI::App app{"fabricvp: SystemC/TLM-2.0 virtual platform of ML interconnect hardware"};
  app.require_subcommand(1);
  app.set_version_flag("--version", FABRICVP_VERSION);
  std::vector<fabricvp::cli::Handler> handlers;
  for (const auto& setup : fabricvp::cli::setups()) handlers.push_back(setup(app));
  // CLI11 reads an integer that does not fit its type as the type's largest
  // value, a negative one into an unsigned type as a huge one, an empty one as
  // 0 and "010" as octal 8; refuse the first three and read every integer
  // option of every subcommand as the parameters are read (base 10, or 16
  // after 0x): the validator hands CLI11 the number in decimal.
  auto fits = [](bool is_unsigned) {
    return CLI::Validator(
        [is_unsigned](std::string& v) -> std::string {
          const size_t at = v.find_first_not_of(" \t");
          if (at == std::string::npos) return "an empty value: expected a whole number";
          if (is_unsigned && v[at] == '-') return "'" + v + "' is negative; a count or size is >= 0";
          uint64_t u = 0;
          int64_t i = 0;
          if (is_unsigned ? !fabricvp::core::detail::parse_value(v, u) : !fabricvp::core::detail::parse_value(v, i)) {
            // Digits that do not fit, or not a number at all.
            std::string t = v.substr(at, v.find_last_not_of(" \t") - at + 1);
            if (t[0] == '-' || t[0] == '+') t.erase(0, 1);
            const bool hex = t.size() > 2 && (t.compare(0, 2, "0x") == 0 || t.compare(0, 2, "0X") == 0);
            const bool digits = !t.empty() && t.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789",
                                                                  hex ? 2 : 0) == std::string::npos;
            return "'" + v + (digits ? "' is out of range for an integer of 64 bits" : "': expected a whole number");
          }
          v = is_unsigned ? std::to_string(u) : std::to_string(i);
          return {};
        },
        "");
  };
  // Every subcommand's options, nested ones (convert astra) included.
  std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
  for (size_t i = 0; i < subs.size(); ++i)
    for (CLI::App* nested : subs[i]->get_subcommands([](CLI::App*) { return true; })) subs.push_back(nested);
  for (CLI::App* sub : subs)
    for (CLI::Option* o : sub->get_options()) {
      const std::string t = o->get_type_name();
      // An empty text value (`--ber ""`) is a mistake, never "not given".
      if (t == "TEXT")
        o->check(CLI::Validator(
            [](std::string& v) { return v.empty() ? std::string("an empty value") : std::string(); }, ""));
      if (t.rfind("UINT", 0) == 0) o->transform(fits(true));
      if (t.rfind("INT", 0) == 0) o->transform(fits(false));
    }
  // `--root=` with nothing after the '=': CLI11 takes the next word as its value.
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    const std::string a = argv[i];
    if (a.size() > 3 && a.compare(0, 2, "--") == 0 && a.find('=') == a.size() - 1) {
      std::fprintf(stderr, "fabricvp: error: %s: an empty value\nRun with --help for more information.\n", a.c_str());
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every other command-line error is bad input: exit code 1, as documented
    // (CLI11's own codes, 100 and up, are not).
    std::string msg = e.what();
    if (argc > 1 && argv[1][0] != '-') {
      bool known = false;
      std::string names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        known |= sub->get_name() == argv[1];
        names += (names.empty() ? "" : ", ") + sub->get_name();
      }
      if (!known) msg = std::string("unknown subcommand '") + argv[1] + "' (" + names + ")";
    }
    std::fprintf(stderr, "fabricvp: error: %s\nRun with --help for more information.\n", msg.c_str());
    return 1;
  }
  for (const auto& h : handlers)
    if (*h.sub) return h.run();
  return 1;
}
