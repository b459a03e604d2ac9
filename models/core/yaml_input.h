// The YAML side of reading the user's files (platform, workload, network and
// sweep files): one document, parsed once, its size bounded, and errors that
// name the file and line.
//
// yaml-cpp shares the node an alias (*a) refers to, so a file of a few
// hundred bytes can stand for billions of nodes once walked (the "billion
// laughs"), and an anchor used inside itself (&a [*a]) is a loop. The
// document is therefore walked once, counting nodes as every reader would
// visit them, and refused past kYamlNodeLimit nodes or kYamlDepthLimit levels.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <initializer_list>
#include <string>

namespace fabricvp::core {

constexpr size_t kYamlNodeLimit = size_t(1) << 21;  ///< nodes, aliases expanded (a large platform has ~10^4)
constexpr int kYamlDepthLimit = 256;                ///< nesting levels, aliases expanded

/// The one document of `text` (a Null node if there is none). Throws
/// ConfigError naming `file` (and the line): a syntax error, more than one
/// document (`what` says what the file is: "a platform file is one"), or a
/// document past the node or depth limit.
YAML::Node load_yaml_document(const std::string& text, const std::string& file, const char* what);

/// "file:line" of a node.
std::string yaml_at(const std::string& file, const YAML::Node& n);

/// Throws ConfigError if `map` is not a map, for a key of it that is not in
/// `known` (listing them), for a key given twice, or for a key that is not a scalar.
void yaml_no_unknown_keys(const std::string& file, const YAML::Node& map, std::initializer_list<const char*> known);

/// The non-negative finite number a scalar node holds. Throws ConfigError
/// naming file:line and `key` for anything else (empty, a word, a trailing
/// character, out of range), never reading it as zero.
double yaml_number(const std::string& file, const YAML::Node& n, const char* key);

}  // namespace fabricvp::core
