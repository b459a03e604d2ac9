#include "sw/optical/hybrid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <utility>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"

namespace fabricvp::optical {

bool is_opgraph_file(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (path.substr(dot) != ".yaml" && path.substr(dot) != ".yml")) return false;
  const YAML::Node root =
      core::load_yaml_document(core::read_input_file(path, "workload file"), path, "a workload is one");
  return root.IsMap() && root["opgraph"];
}

OpGraph parse_opgraph(const std::string& path) {
  return parse_opgraph_string(core::read_input_file(path, "op graph file"), path);
}

OpGraph parse_opgraph_string(const std::string& text, const std::string& path) {
  const YAML::Node root = core::load_yaml_document(text, path, "an op graph is one");
  if (!root.IsMap() || !root["opgraph"])
    throw core::ConfigError(fmt::format("{}: an op graph file needs a top-level 'opgraph:' map", path));
  core::yaml_no_unknown_keys(path, root, {"opgraph"});
  const YAML::Node g = root["opgraph"];
  core::yaml_no_unknown_keys(path, g, {"description", "notes", "batch", "accuracy", "ops"});
  OpGraph out;
  out.file = path;
  if (g["description"]) out.description = g["description"].Scalar();
  if (const YAML::Node b = g["batch"]) {
    const double v = core::yaml_number(path, b, "batch");
    if (v < 1 || v != std::floor(v) || v > 1e9)
      throw core::ConfigError(
          fmt::format("{}: batch: '{}' is not a positive whole number of samples", core::yaml_at(path, b), b.Scalar()));
    out.batch = static_cast<uint64_t>(v);
  }
  if (const YAML::Node a = g["accuracy"]) {
    core::yaml_no_unknown_keys(path, a, {"table", "model"});
    for (const char* key : {"table", "model"})
      if (!a[key] || !a[key].IsScalar() || a[key].Scalar().empty())
        throw core::ConfigError(
            fmt::format("{}: accuracy: needs '{}' (the time-to-accuracy table and the model's "
                        "name in it)",
                        core::yaml_at(path, a), key));
    const std::filesystem::path table = a["table"].Scalar();
    out.accuracy_table =
        table.is_absolute() ? table.string() : (std::filesystem::path(path).parent_path() / table).string();
    out.accuracy_model = a["model"].Scalar();
  }
  const YAML::Node ops = g["ops"];
  if (!ops || !ops.IsSequence() || ops.size() == 0)
    throw core::ConfigError(fmt::format("{}: opgraph.ops must be a non-empty list of ops", core::yaml_at(path, g)));
  std::map<std::string, uint32_t> index;
  for (const auto& on : ops) {
    if (!on.IsMap()) throw core::ConfigError(fmt::format("{}: an op must be a map", core::yaml_at(path, on)));
    core::yaml_no_unknown_keys(path, on, {"name", "compute_us", "out_bytes", "weight_bytes", "inputs"});
    Op op;
    if (!on["name"] || !on["name"].IsScalar() || on["name"].Scalar().empty())
      throw core::ConfigError(fmt::format("{}: an op needs a name", core::yaml_at(path, on)));
    op.name = on["name"].Scalar();
    if (index.count(op.name))
      throw core::ConfigError(fmt::format("{}: op '{}' is named twice", core::yaml_at(path, on), op.name));
    for (const char* key : {"compute_us", "out_bytes"})
      if (!on[key])
        throw core::ConfigError(fmt::format("{}: op '{}' has no {}", core::yaml_at(path, on), op.name, key));
    op.compute_us = core::yaml_number(path, on["compute_us"], "compute_us");
    op.out_bytes = core::yaml_number(path, on["out_bytes"], "out_bytes");
    if (on["weight_bytes"]) op.weight_bytes = core::yaml_number(path, on["weight_bytes"], "weight_bytes");
    if (const YAML::Node in = on["inputs"]) {
      if (!in.IsSequence())
        throw core::ConfigError(fmt::format("{}: inputs: a list of op names", core::yaml_at(path, in)));
      for (const auto& name : in) {
        auto it = index.find(name.IsScalar() ? name.Scalar() : std::string());
        if (it == index.end())
          throw core::ConfigError(fmt::format("{}: op '{}': input '{}' is not an op before it",
                                              core::yaml_at(path, name), op.name,
                                              name.IsScalar() ? name.Scalar() : std::string("?")));
        op.inputs.push_back(it->second);
      }
    }
    index.emplace(op.name, static_cast<uint32_t>(out.ops.size()));
    out.ops.push_back(std::move(op));
  }
  return out;
}

OpGraph OpGraph::scaled(uint64_t local_batch) const {
  OpGraph g = *this;
  const double f = static_cast<double>(local_batch) / static_cast<double>(batch);
  g.batch = local_batch;
  for (Op& op : g.ops) {
    op.compute_us *= f;
    op.out_bytes *= f;
  }
  return g;
}

std::vector<training::Graph> hybrid_graphs(const OpGraph& g, const Placement& pl, uint32_t l,
                                           const std::vector<bool>& dp_dims, double bucket_bytes) {
  const uint32_t k = pl.k;
  std::vector<training::Graph> graphs(static_cast<size_t>(k) * l);
  for (uint32_t gpu = 0; gpu < graphs.size(); ++gpu) graphs[gpu].file = g.file;
  // Per group, the same nodes on device d of every group: build device d's
  // node list once per group with the group's GPU ids.
  for (uint32_t grp = 0; grp < l; ++grp) {
    auto gpu_of = [&](uint32_t dev) { return grp * k + dev; };
    auto add = [&](uint32_t dev, training::GraphNode n) {
      auto& nodes = graphs[gpu_of(dev)].nodes;
      n.id = nodes.size() + 1;
      nodes.push_back(std::move(n));
      return nodes.back().id;
    };
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> last_send, last_recv;  // (dev, peer dev) -> node id
    // A device's latest compute node so far: a receive is posted after it, in
    // the GPU's program order (posted all at once, receives would fill the
    // endpoint's chunks in flight and starve the sends they wait for).
    std::vector<uint64_t> last_comp(k, 0);
    // A transfer of `bytes` along devices path[0] -> path[1] -> ...; `after`: the
    // node at path[0] it waits for. Returns the receive node at the last device.
    auto transfer = [&](const std::vector<uint32_t>& path, uint64_t after, double bytes, const std::string& what) {
      uint64_t dep = after;
      for (size_t h = 0; h + 1 < path.size(); ++h) {
        const uint32_t a = path[h], b = path[h + 1];
        training::GraphNode s;
        s.kind = training::GraphNode::send;
        s.name = fmt::format("{} -> gpu{}", what, gpu_of(b));
        s.bytes = static_cast<uint64_t>(std::ceil(bytes));
        s.peer = gpu_of(b);
        s.deps = {dep};
        if (auto it = last_send.find({a, b}); it != last_send.end()) s.deps.push_back(it->second);
        last_send[{a, b}] = add(a, s);
        training::GraphNode r;
        r.kind = training::GraphNode::recv;
        r.name = fmt::format("{} <- gpu{}", what, gpu_of(a));
        r.bytes = s.bytes;
        r.peer = gpu_of(a);
        if (auto it = last_recv.find({b, a}); it != last_recv.end()) r.deps.push_back(it->second);
        if (last_comp[b]) r.deps.push_back(last_comp[b]);
        dep = last_recv[{b, a}] = add(b, r);
      }
      return dep;
    };
    auto path_of = [&](const Transfer& t) {
      std::vector<uint32_t> p{pl.subs[t.from].device};
      for (uint32_t v : t.via) p.push_back(v);
      p.push_back(pl.subs[t.to].device);
      return p;
    };
    std::vector<std::vector<uint32_t>> in(pl.subs.size()), out(pl.subs.size());
    for (uint32_t x = 0; x < pl.transfers.size(); ++x) {
      in[pl.transfers[x].to].push_back(x);
      out[pl.transfers[x].from].push_back(x);
    }
    // a sub-op's compute node ("a.3 fwd") after `deps`
    auto compute = [&](uint32_t s, const char* pass, std::vector<uint64_t> deps) {
      const SubOp& so = pl.subs[s];
      training::GraphNode c;
      c.kind = training::GraphNode::comp;
      c.name = fmt::format("{}.{} {}", g.ops[so.op].name, so.part, pass);
      c.duration_ns = static_cast<uint64_t>(std::llround(so.compute_us * 1000));
      c.deps = std::move(deps);
      return last_comp[so.device] = add(so.device, c);
    };
    // forward
    std::vector<uint64_t> fwd(pl.subs.size()), ig(pl.subs.size());
    std::vector<std::vector<uint64_t>> ready(pl.subs.size());  // what a sub-op's forward waits for
    for (uint32_t s = 0; s < pl.subs.size(); ++s) {
      const SubOp& so = pl.subs[s];
      const std::string name = fmt::format("{}.{}", g.ops[so.op].name, so.part);
      fwd[s] = compute(s, "fwd", ready[s]);
      for (uint32_t x : out[s]) {
        const Transfer& t = pl.transfers[x];
        const auto path = path_of(t);
        ready[t.to].push_back(path.size() == 2 && path[0] == path[1] ? fwd[s] : transfer(path, fwd[s], t.bytes, name));
      }
    }
    // backward, in reverse: gradients back along the paths reversed
    std::vector<std::vector<uint64_t>> grads(pl.subs.size());
    std::vector<uint64_t> last_allreduce(k, 0);  // per device: its previous all-reduce (issued in order, as NCCL does)
    // per device: the weight gradients waiting for their bucket's all-reduce
    struct Bucket {
      std::vector<uint64_t> wg;
      double bytes = 0;
      std::string first;
    };
    std::vector<Bucket> bucket(k);
    auto flush = [&](uint32_t dev) {
      Bucket& b = bucket[dev];
      if (b.wg.empty()) return;
      training::GraphNode ar;
      ar.kind = training::GraphNode::coll;
      ar.name = b.wg.size() == 1 ? b.first + " weights all-reduce"
                                 : fmt::format("{} .. ({} sub-ops) weights all-reduce", b.first, b.wg.size());
      ar.comm = training::Comm::allreduce;
      ar.bytes = static_cast<uint64_t>(std::ceil(b.bytes));
      ar.involved_dim = dp_dims;
      ar.deps = std::move(b.wg);
      if (last_allreduce[dev]) ar.deps.push_back(last_allreduce[dev]);
      last_allreduce[dev] = add(dev, ar);
      b = Bucket{};
    };
    for (uint32_t s = static_cast<uint32_t>(pl.subs.size()); s-- > 0;) {
      const SubOp& so = pl.subs[s];
      const std::string name = fmt::format("{}.{}", g.ops[so.op].name, so.part);
      std::vector<uint64_t> deps = grads[s];
      deps.push_back(fwd[s]);
      ig[s] = compute(s, "ig", std::move(deps));
      const uint64_t wg = compute(s, "wg", {ig[s]});
      if (so.weight_bytes > 0 && l > 1) {
        Bucket& b = bucket[so.device];
        if (b.wg.empty()) b.first = name;
        b.wg.push_back(wg);
        b.bytes += so.weight_bytes;
        if (b.bytes >= bucket_bytes) flush(so.device);
      }
      for (uint32_t x : in[s]) {
        const Transfer& t = pl.transfers[x];
        auto path = path_of(t);
        std::reverse(path.begin(), path.end());
        grads[t.from].push_back(
            path.size() == 2 && path[0] == path[1] ? ig[s] : transfer(path, ig[s], t.bytes, name + " grad"));
      }
    }
    for (uint32_t dev = 0; dev < k; ++dev) flush(dev);
  }
  return graphs;
}

}  // namespace fabricvp::optical
