#include "sw/training/workload.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"

namespace fabricvp::training {

namespace {

struct Kw {
  const char* name;
  Parallelism p;
};
const Kw kParallelisms[] = {
    {"DATA", Parallelism::data},
    {"MODEL", Parallelism::model},
    {"HYBRID_DATA_MODEL", Parallelism::hybrid_data_model},
    {"HYBRID_MODEL_DATA", Parallelism::hybrid_model_data},
    {"HYBRID_CUSTOMIZED", Parallelism::hybrid_customized},
    {"MICRO", Parallelism::micro},
    {"HYBRID_DLRM", Parallelism::hybrid_dlrm},
    {"HYBRID_DLRM_ENHANCED", Parallelism::hybrid_dlrm_enhanced},
    {"HYBRID_TRANSFORMER", Parallelism::hybrid_transformer},
    {"HYBRID_TRANSFORMER_FWD_IN_BCKWD", Parallelism::hybrid_transformer_fwd_in_bckwd},
    {"DISTRIBUTED_INFERENCE", Parallelism::distributed_inference},
};

std::string parallelism_list() {
  std::string s;
  for (const Kw& k : kParallelisms) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

/// Whitespace-separated tokens with their line numbers.
struct Token {
  std::string text;
  uint32_t line;
};

class Tokens {
 public:
  Tokens(const std::string& text, const std::string& path) : m_path(path) {
    std::istringstream f(text);
    std::string line;
    uint32_t n = 0;
    while (std::getline(f, line)) {
      ++n;
      std::istringstream ss(line);
      std::string t;
      while (ss >> t) m_tokens.push_back({t, n});
      m_last_line = n;
    }
  }
  bool done() const { return m_i >= m_tokens.size(); }
  const Token& next(const char* what) {
    if (done())
      throw core::ConfigError(fmt::format("{}:{}: the file ends where {} was expected", m_path, m_last_line, what));
    return m_tokens[m_i++];
  }
  const Token* peek() const { return done() ? nullptr : &m_tokens[m_i]; }
  [[noreturn]] void fail(const Token& t, const std::string& why) const {
    throw core::ConfigError(fmt::format("{}:{}: {}", m_path, t.line, why));
  }
  uint64_t unsigned_number(const char* what) {
    const Token& t = next(what);
    const std::string& s = t.text;
    if (s.empty() || s[0] < '0' || s[0] > '9') fail(t, fmt::format("{}: '{}' is not a non-negative integer", what, s));
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno == ERANGE) fail(t, fmt::format("{}: '{}' is out of range", what, s));
    if (!end || *end) fail(t, fmt::format("{}: '{}' is not a non-negative integer", what, s));
    return v;
  }
  int64_t signed_number(const char* what) {
    const Token& t = next(what);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(t.text.c_str(), &end, 10);
    if (errno == ERANGE || !end || *end || t.text.empty())
      fail(t, fmt::format("{}: '{}' is not an integer", what, t.text));
    return v;
  }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  std::vector<Token> m_tokens;
  size_t m_i = 0;
  uint32_t m_last_line = 0;
};

void check_layer_indices(const Workload& w, const std::vector<uint32_t>& v, const char* what) {
  for (uint32_t i : v)
    if (i >= w.layers.size())
      throw core::ConfigError(
          fmt::format("{}: {} names layer {}, but the workload has {} layers", w.file, what, i, w.layers.size()));
}

void validate(Workload& w) {
  check_layer_indices(w, w.checkpoints, "checkpoints");
  check_layer_indices(w, w.checkpoint_initiates, "checkpoint_initiates");
  if (w.is_dlrm() && w.dlrm_last_bottom_layer >= w.layers.size())
    throw core::ConfigError(fmt::format("{}: DLRM_LAST_BOTTOM_LAYER {} is not a layer ({} layers)", w.file,
                                        w.dlrm_last_bottom_layer, w.layers.size()));
  if (w.is_transformer() && w.model_parallel_group == 0)
    throw core::ConfigError(fmt::format("{}: model_parallel_NPU_group must be at least 1", w.file));
  if (w.layers.empty()) throw core::ConfigError(fmt::format("{}: a workload without layers", w.file));
  // Times run on a clock of picoseconds in 64 bits: an iteration's compute and update times together at most
  // kMaxIterationNs (and the run's at most kMaxRunNs: check_run_length), sizes at most what an NPU's memory may hold.
  constexpr uint64_t kMaxIterationNs = 1000000000000;  // 1,000 s
  constexpr uint64_t kMaxBytes = uint64_t(1) << 50;    // Memory::size_mib at most 2^30 MiB
  uint64_t total_ns = 0;
  auto add_time = [&](const Layer& l, uint64_t ns, const std::string& what) {
    if (ns > kMaxIterationNs - total_ns)
      throw core::ConfigError(
          fmt::format("{}: layer {}: {} {} ns: the iteration's compute and update times add up "
                      "to more than {} ns (1,000 s)",
                      l.origin, l.name, what, ns, kMaxIterationNs));
    total_ns += ns;
  };
  for (const Layer& l : w.layers) {
    for (uint32_t p = 0; p < 3; ++p) {
      const Pass& ps = l.pass[p];
      if (ps.comm != Comm::none && ps.bytes == 0)
        throw core::ConfigError(fmt::format("{}: layer {}: a {} {} of 0 bytes (use NONE for no collective)", l.origin,
                                            l.name, pass_name(p), comm_name(ps.comm)));
      if (ps.bytes > kMaxBytes)
        throw core::ConfigError(
            fmt::format("{}: layer {}: a {} {} of {} bytes: more than an NPU's memory may hold "
                        "(2^50 bytes)",
                        l.origin, l.name, pass_name(p), comm_name(ps.comm), ps.bytes));
      add_time(l, ps.compute_ns, fmt::format("{} compute time", pass_name(p)));
    }
    add_time(l, l.update_ns, "update time");
  }
  const uint64_t passes = 1 + w.checkpoint_initiates.size();  // an index may repeat: saturate, never wrap
  w.iteration_ns_bound = total_ns && passes > UINT64_MAX / total_ns ? UINT64_MAX : total_ns * passes;
}

}  // namespace

const char* parallelism_name(Parallelism p) {
  for (const Kw& k : kParallelisms)
    if (k.p == p) return k.name;
  return "?";
}

bool parse_parallelism(const std::string& s, Parallelism& out) {
  for (const Kw& k : kParallelisms)
    if (s == k.name) {
      out = k.p;
      return true;
    }
  return false;
}

const char* comm_name(Comm c) {
  switch (c) {
    case Comm::none: return "NONE";
    case Comm::allreduce: return "ALLREDUCE";
    case Comm::alltoall: return "ALLTOALL";
    case Comm::allgather: return "ALLGATHER";
    case Comm::reducescatter: return "REDUCESCATTER";
  }
  return "?";
}

bool parse_comm(const std::string& s, Comm& out) {
  for (Comm c : {Comm::none, Comm::allreduce, Comm::alltoall, Comm::allgather, Comm::reducescatter})
    if (s == comm_name(c)) {
      out = c;
      return true;
    }
  return false;
}

const char* pass_name(uint32_t p) {
  static const char* names[3] = {"fwd", "ig", "wg"};
  return p < 3 ? names[p] : "?";
}

Workload parse_astra_text(const std::string& path) {
  return parse_astra_text_string(core::read_input_file(path, "workload file"), path);
}

Workload parse_astra_text_string(const std::string& text, const std::string& path) {
  Tokens tk(text, path);
  Workload w;
  w.file = path;
  const Token& kw = tk.next("the parallelism keyword");
  if (!parse_parallelism(kw.text, w.parallelism))
    tk.fail(kw, fmt::format("unknown parallelism '{}' ({})", kw.text, parallelism_list()));
  if (w.is_transformer()) {
    tk.next("the label before the model-parallel group size (model_parallel_NPU_group:)");
    w.model_parallel_group = static_cast<uint32_t>(tk.unsigned_number("model_parallel_NPU_group"));
    if (w.parallelism == Parallelism::hybrid_transformer_fwd_in_bckwd) {
      for (auto* list : {&w.checkpoints, &w.checkpoint_initiates}) {
        tk.next(list == &w.checkpoints ? "the label 'checkpoints:'" : "the label 'checkpoint_initiates:'");
        const uint64_t n = tk.unsigned_number("the number of layer indices");
        for (uint64_t i = 0; i < n; ++i) list->push_back(static_cast<uint32_t>(tk.unsigned_number("a layer index")));
      }
    }
  } else if (w.is_dlrm()) {
    w.dlrm_last_bottom_layer = static_cast<uint32_t>(tk.unsigned_number("DLRM_LAST_BOTTOM_LAYER"));
  }
  const uint64_t layers = tk.unsigned_number("the number of layers");
  if (layers > 1000000) throw core::ConfigError(fmt::format("{}: {} layers", path, layers));
  for (uint64_t i = 0; i < layers; ++i) {
    Layer l;
    const Token& name = tk.next("a layer name");
    l.name = name.text;
    l.origin = fmt::format("{}:{}", path, name.line);
    l.reserved = tk.signed_number("the reserved (dependency) field");
    for (uint32_t p = 0; p < 3; ++p) {
      const std::string what = fmt::format("layer {}: {}", l.name, pass_name(p));
      l.pass[p].compute_ns = tk.unsigned_number((what + " compute time").c_str());
      const Token& ct = tk.next((what + " collective type").c_str());
      if (ct.text == "ALLREDUCEALLTOALL")
        tk.fail(ct,
                fmt::format("{} collective ALLREDUCEALLTOALL: ASTRA-sim parses it but has no way to issue it", what));
      if (!parse_comm(ct.text, l.pass[p].comm))
        tk.fail(ct, fmt::format("{} collective '{}' (ALLREDUCE, ALLTOALL, ALLGATHER, REDUCESCATTER or NONE)", what,
                                ct.text));
      l.pass[p].bytes = tk.unsigned_number((what + " collective size").c_str());
    }
    l.update_ns = tk.unsigned_number(fmt::format("layer {}: update time", l.name).c_str());
    l.parallelism = w.parallelism;
    if (w.parallelism == Parallelism::hybrid_customized) {
      const Token& pt = tk.next("the layer's parallelism (HYBRID_CUSTOMIZED)");
      if (!parse_parallelism(pt.text, l.parallelism) || l.parallelism == Parallelism::hybrid_customized)
        tk.fail(pt, fmt::format("layer {}: parallelism '{}' (DATA, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA)",
                                l.name, pt.text));
    }
    w.layers.push_back(std::move(l));
  }
  if (const Token* t = tk.peek())
    tk.fail(*t, fmt::format("'{}' after the last of the {} layers the file declares", t->text, layers));
  validate(w);
  return w;
}

namespace {

uint64_t yaml_uint(const std::string& path, const YAML::Node& n, const std::string& key) {
  const std::string s = n.Scalar();
  if (!n.IsScalar() || s.empty() || s[0] < '0' || s[0] > '9')
    throw core::ConfigError(fmt::format("{}: {}: '{}' is not a non-negative integer", core::yaml_at(path, n), key, s));
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno == ERANGE || !end || *end)
    throw core::ConfigError(fmt::format("{}: {}: '{}' is not a non-negative integer", core::yaml_at(path, n), key, s));
  return v;
}

}  // namespace

Workload parse_yaml(const std::string& path) {
  return parse_yaml_string(core::read_input_file(path, "workload file"), path);
}

Workload parse_yaml_string(const std::string& text, const std::string& path) {
  const YAML::Node root = core::load_yaml_document(text, path, "a workload is one");
  if (!root.IsMap() || !root["workload"])
    throw core::ConfigError(fmt::format("{}: a workload file needs a top-level 'workload:' map", path));
  const YAML::Node w_node = root["workload"];
  core::yaml_no_unknown_keys(path, root, {"workload"});
  core::yaml_no_unknown_keys(path, w_node,
                             {"description", "parallelism", "model_parallel_npu_group", "checkpoints",
                              "checkpoint_initiates", "dlrm_last_bottom_layer", "layers", "notes"});
  Workload w;
  w.file = path;
  const YAML::Node par = w_node["parallelism"];
  if (!par) throw core::ConfigError(fmt::format("{}: workload.parallelism is missing", core::yaml_at(path, w_node)));
  if (!parse_parallelism(par.Scalar(), w.parallelism))
    throw core::ConfigError(
        fmt::format("{}: unknown parallelism '{}' ({})", core::yaml_at(path, par), par.Scalar(), parallelism_list()));
  // What only some parallelisms read is refused with the others (never dropped silently).
  auto only_with = [&](const char* key, bool used, const char* with) {
    if (w_node[key] && !used)
      throw core::ConfigError(fmt::format("{}: {} goes with {}, not {}", core::yaml_at(path, w_node[key]), key, with,
                                          parallelism_name(w.parallelism)));
  };
  only_with("model_parallel_npu_group", w.is_transformer(), "HYBRID_TRANSFORMER(_FWD_IN_BCKWD)");
  only_with("dlrm_last_bottom_layer", w.is_dlrm(), "HYBRID_DLRM(_ENHANCED)");
  for (const char* key : {"checkpoints", "checkpoint_initiates"})
    only_with(key, w.parallelism == Parallelism::hybrid_transformer_fwd_in_bckwd, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
  if (const YAML::Node g = w_node["model_parallel_npu_group"])
    w.model_parallel_group = static_cast<uint32_t>(yaml_uint(path, g, "model_parallel_npu_group"));
  if (const YAML::Node g = w_node["dlrm_last_bottom_layer"])
    w.dlrm_last_bottom_layer = static_cast<uint32_t>(yaml_uint(path, g, "dlrm_last_bottom_layer"));
  for (auto [key, list] : {std::pair{"checkpoints", &w.checkpoints}, {"checkpoint_initiates", &w.checkpoint_initiates}})
    if (const YAML::Node n = w_node[key]) {
      if (!n.IsSequence())
        throw core::ConfigError(fmt::format("{}: {}: a list of layer indices", core::yaml_at(path, n), key));
      for (const auto& i : n) list->push_back(static_cast<uint32_t>(yaml_uint(path, i, key)));
    }
  const YAML::Node layers = w_node["layers"];
  if (!layers || !layers.IsSequence())
    throw core::ConfigError(fmt::format("{}: workload.layers must be a list of layers", core::yaml_at(path, w_node)));
  for (const auto& ln : layers) {
    if (!ln.IsMap()) throw core::ConfigError(fmt::format("{}: a layer must be a map", core::yaml_at(path, ln)));
    core::yaml_no_unknown_keys(path, ln, {"name", "fwd", "ig", "wg", "update_ns", "parallelism"});
    Layer l;
    l.origin = core::yaml_at(path, ln);
    if (!ln["name"]) throw core::ConfigError(fmt::format("{}: a layer without a name", l.origin));
    l.name = ln["name"].Scalar();
    for (uint32_t p = 0; p < 3; ++p) {
      const YAML::Node pn = ln[pass_name(p)];
      if (!pn) continue;  // no compute, no collective
      if (!pn.IsMap())
        throw core::ConfigError(
            fmt::format("{}: layer {}: {} must be a map", core::yaml_at(path, pn), l.name, pass_name(p)));
      core::yaml_no_unknown_keys(path, pn, {"compute_ns", "comm", "bytes", "flops", "mem_bytes"});
      if (pn["compute_ns"]) l.pass[p].compute_ns = yaml_uint(path, pn["compute_ns"], "compute_ns");
      if (pn["flops"]) l.pass[p].flops = yaml_uint(path, pn["flops"], "flops");
      if (pn["mem_bytes"]) l.pass[p].mem_bytes = yaml_uint(path, pn["mem_bytes"], "mem_bytes");
      if (pn["comm"] && !parse_comm(pn["comm"].Scalar(), l.pass[p].comm))
        throw core::ConfigError(
            fmt::format("{}: layer {}: {} collective '{}' (ALLREDUCE, ALLTOALL, ALLGATHER, REDUCESCATTER or NONE)",
                        core::yaml_at(path, pn["comm"]), l.name, pass_name(p), pn["comm"].Scalar()));
      if (pn["bytes"]) l.pass[p].bytes = yaml_uint(path, pn["bytes"], "bytes");
      if (l.pass[p].comm == Comm::none && l.pass[p].bytes != 0)
        throw core::ConfigError(fmt::format("{}: layer {}: {} has bytes but no collective (comm)",
                                            core::yaml_at(path, pn), l.name, pass_name(p)));
    }
    if (ln["update_ns"]) l.update_ns = yaml_uint(path, ln["update_ns"], "update_ns");
    l.parallelism = w.parallelism;
    if (const YAML::Node pp = ln["parallelism"]) {
      if (w.parallelism != Parallelism::hybrid_customized)
        throw core::ConfigError(
            fmt::format("{}: layer {}: a per-layer parallelism needs workload.parallelism HYBRID_CUSTOMIZED",
                        core::yaml_at(path, pp), l.name));
      if (!parse_parallelism(pp.Scalar(), l.parallelism) || l.parallelism == Parallelism::hybrid_customized)
        throw core::ConfigError(
            fmt::format("{}: layer {}: parallelism '{}'", core::yaml_at(path, pp), l.name, pp.Scalar()));
    } else if (w.parallelism == Parallelism::hybrid_customized) {
      throw core::ConfigError(
          fmt::format("{}: layer {}: HYBRID_CUSTOMIZED needs a parallelism per layer", l.origin, l.name));
    }
    w.layers.push_back(std::move(l));
  }
  validate(w);
  return w;
}

Workload load_workload(const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot);
  if (ext == ".yaml" || ext == ".yml") return parse_yaml(path);
  return parse_astra_text(path);
}

void check_run_length(const Workload& w, uint64_t iterations) {
  if (w.iteration_ns_bound && iterations > kMaxRunNs / w.iteration_ns_bound)
    throw core::ConfigError(
        fmt::format("{}: {} iterations of up to {} ns of compute and update each (recomputed forward passes "
                    "included): more than {} ns (52 days) in all, past what the 64-bit picosecond clock is trusted "
                    "with; run fewer iterations",
                    w.file, iterations, w.iteration_ns_bound, kMaxRunNs));
}

std::string to_astra_text(const Workload& w, std::vector<std::string>* dropped) {
  for (const Layer& l : w.layers)
    if (l.name.empty() ||
        std::any_of(l.name.begin(), l.name.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }))
      throw core::ConfigError(
          fmt::format("{}: layer name '{}': the text form separates its fields by white space, "
                      "so a layer name there is one word",
                      l.origin, l.name));
  if (dropped) {
    uint32_t with_roofline = 0;
    for (const Layer& l : w.layers)
      for (const Pass& p : l.pass) with_roofline += p.flops || p.mem_bytes;
    if (with_roofline)
      dropped->push_back(
          fmt::format("flops and mem_bytes of {} passes (the text form has no place for them; "
                      "NPUs with compute.timing: roofline time those passes by their compute_ns)",
                      with_roofline));
  }
  std::string s = parallelism_name(w.parallelism);
  if (w.is_transformer()) {
    s += fmt::format(" model_parallel_NPU_group: {}", w.model_parallel_group);
    if (w.parallelism == Parallelism::hybrid_transformer_fwd_in_bckwd) {
      s += fmt::format(" checkpoints: {}", w.checkpoints.size());
      for (uint32_t i : w.checkpoints) s += fmt::format(" {}", i);
      s += fmt::format(" checkpoint_initiates: {}", w.checkpoint_initiates.size());
      for (uint32_t i : w.checkpoint_initiates) s += fmt::format(" {}", i);
    }
  } else if (w.is_dlrm()) {
    s += fmt::format(" {}", w.dlrm_last_bottom_layer);
  }
  s += fmt::format("\n{}\n", w.layers.size());
  for (const Layer& l : w.layers) {
    s += fmt::format("{}\t{}", l.name, l.reserved);
    for (const Pass& p : l.pass) s += fmt::format("\t{}\t{}\t{}", p.compute_ns, comm_name(p.comm), p.bytes);
    s += fmt::format("\t{}", l.update_ns);
    if (w.parallelism == Parallelism::hybrid_customized) s += fmt::format("\t{}", parallelism_name(l.parallelism));
    s += "\n";
  }
  return s;
}

}  // namespace fabricvp::training
