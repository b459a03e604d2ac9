#include "models/core/yaml_input.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "models/core/config.h"

namespace fabricvp::core {

namespace {

struct Walk {
  const std::string& file;
  size_t nodes = 0;

  void visit(const YAML::Node& n, int depth) {
    if (++nodes > kYamlNodeLimit)
      throw ConfigError(fmt::format("{}: more than {} YAML nodes once aliases are expanded; refused (an alias bomb?)",
                                    yaml_at(file, n), kYamlNodeLimit));
    if (depth > kYamlDepthLimit)
      throw ConfigError(
          fmt::format("{}: YAML nested deeper than {} levels once aliases are expanded (an anchor "
                      "used inside itself?)",
                      yaml_at(file, n), kYamlDepthLimit));
    if (n.IsSequence()) {
      for (const YAML::Node& x : n) visit(x, depth + 1);
    } else if (n.IsMap()) {
      for (const auto& kv : n) {
        visit(kv.first, depth + 1);
        visit(kv.second, depth + 1);
      }
    }
  }
};

}  // namespace

std::string yaml_at(const std::string& file, const YAML::Node& n) {
  const int line = n.Mark().line;
  return line >= 0 ? fmt::format("{}:{}", file, line + 1) : file;
}

YAML::Node load_yaml_document(const std::string& text, const std::string& file, const char* what) {
  // YAML::LoadAll of yaml-cpp 0.7 can loop for ever, allocating, on some
  // malformed text (an empty document returned again and again; fixed
  // upstream after 0.8). So documents are counted with a loop that stops at
  // the second, and the first is built with YAML::Load, which parses one.
  struct Documents : YAML::EventHandler {
    int count = 0;
    YAML::Mark second;
    void OnDocumentStart(const YAML::Mark& m) override {
      if (++count == 2) second = m;
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } docs;
  YAML::Node root;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (docs.count < 2 && parser.HandleNextDocument(docs)) {
    }
    if (docs.count > 1)
      throw ConfigError(fmt::format("{}:{}:{}: a second YAML document starts here ('---'); {}", file,
                                    docs.second.line + 1, docs.second.column + 1, what));
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (docs.count == 0) return YAML::Node();
  Walk{file}.visit(root, 0);
  return root;
}

void yaml_no_unknown_keys(const std::string& file, const YAML::Node& map, std::initializer_list<const char*> known) {
  if (!map.IsMap()) throw ConfigError(fmt::format("{}: a map of keys was expected here", yaml_at(file, map)));
  std::map<std::string, int> seen;  // key -> its line (yaml-cpp keeps both of a key given twice; lookups see one)
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) throw ConfigError(fmt::format("{}: keys must be scalars", yaml_at(file, kv.first)));
    const std::string& k = kv.first.Scalar();
    if (const auto [it, fresh] = seen.emplace(k, kv.first.Mark().line + 1); !fresh)
      throw ConfigError(
          fmt::format("{}: {} is given again (line {} gave it first)", yaml_at(file, kv.first), k, it->second));
    bool ok = false;
    for (const char* x : known) ok |= k == x;
    if (!ok) {
      std::string list;
      for (const char* x : known) list += (list.empty() ? "" : ", ") + std::string(x);
      throw ConfigError(fmt::format("{}: unknown key '{}' (known: {})", yaml_at(file, kv.first), k, list));
    }
  }
}

}  // namespace fabricvp::core

namespace fabricvp::core {

double yaml_number(const std::string& file, const YAML::Node& n, const char* key) {
  const std::string s = n.IsScalar() ? n.Scalar() : std::string();
  errno = 0;
  char* end = nullptr;
  const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || errno == ERANGE || !end || *end || !std::isfinite(v) || v < 0)
    throw ConfigError(fmt::format("{}: {}: '{}' is not a non-negative number", yaml_at(file, n), key, s));
  return v;
}

}  // namespace fabricvp::core
