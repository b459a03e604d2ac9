// Raw configuration: keys and values from platform files and -p overrides.
//
// A platform file is YAML; nested maps are flattened into dotted keys, so
//   sys: { node0: { tsp3: { clock_mhz: 900 } } }
// becomes "sys.node0.tsp3.clock_mhz". A key segment may contain '*', which
// matches any run of characters inside one segment ("sys.node*.tsp*.clock_mhz"
// sets the clock of every TSP). When several entries match a parameter, the
// last one wins: file order first, then -p overrides in command-line order.
// Every entry must set at least one parameter; check_all_used() reports the
// ones that do not, naming file, line and key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fabricvp::core {

/// Bad user input: platform files, -p overrides, CLI arguments, programs.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where a configuration value came from.
struct Origin {
  std::string file;  ///< path of the YAML file, or "-p" for a command-line override
  int line = 0;      ///< 1-based line, 0 if unknown
  int column = 0;    ///< 1-based column, 0 if unknown
  std::string str() const;
};

struct ConfigEntry {
  std::string key;    ///< flattened dotted key; may contain '*'
  std::string value;  ///< scalar text (a YAML sequence is joined with ',')
  Origin origin;
  mutable uint32_t uses = 0;  ///< number of parameters this entry was applied to
};

/// '*' matches any characters except '.'; everything else matches literally.
bool glob_match(std::string_view pattern, std::string_view name);

class Config {
 public:
  /// Load a YAML file; throws ConfigError naming the file (and line) on any problem.
  void load_file(const std::string& path);
  /// Load YAML text (used by tests); `name` is reported as the file name.
  void load_string(const std::string& text, const std::string& name);
  /// "-p key=value"
  void add_override(const std::string& assignment);
  void set(const std::string& key, const std::string& value, const Origin& origin);

  /// The entry that sets parameter `name` (last match), or nullptr.
  const ConfigEntry* find(const std::string& name) const;
  /// Like find(), and counts a use of every matching entry (also the ones a
  /// later entry overrides: they name a real parameter, so they are not errors).
  const ConfigEntry* resolve(const std::string& name) const;

  const std::vector<ConfigEntry>& entries() const { return m_entries; }
  const std::vector<std::string>& files() const { return m_files; }

  /// Throw ConfigError for the first entry that matched no parameter, with a
  /// suggestion from `known` (all declared parameter names), or the reason a
  /// family of keys does not exist (note_absent).
  void check_all_used(const std::vector<std::string>& known) const;
  /// For an error found while the modules are built, before check_all_used()
  /// can run: the entries that have set nothing and are close to a parameter
  /// of `known` (those declared so far) of the same object, one line each
  /// ("\n  file:line: key 'k' has set no parameter (did you mean 'p'?)"),
  /// or empty. A typo's default may be what the error is about.
  std::string likely_typos(const std::vector<std::string>& known) const;
  /// Keys starting with `prefix` name modules this platform does not have,
  /// because of `reason` (e.g. "sys.vlink": "sys.vertical_npus is 1: ...").
  /// An entry that sets nothing there is still an error; its message says why.
  void note_absent(const std::string& prefix, const std::string& reason);

 private:
  std::vector<ConfigEntry> m_entries;
  std::unordered_map<std::string, std::vector<size_t>> m_exact;
  std::vector<size_t> m_patterns;
  std::vector<std::string> m_files;
  std::vector<std::pair<std::string, std::string>> m_absent;  // (key prefix, reason)
};

/// Edit distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace fabricvp::core
