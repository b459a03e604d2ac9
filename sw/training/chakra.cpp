#include "sw/training/chakra.h"
#include "models/core/output_file.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "sw/training/chakra/et_def.pb.h"

namespace fabricvp::training {

namespace {

namespace pb = ChakraProtoMsg;

bool int_of(const pb::AttributeProto& a, int64_t& out) {
  switch (a.value_case()) {
    case pb::AttributeProto::kInt32Val: out = a.int32_val(); return true;
    case pb::AttributeProto::kInt64Val: out = a.int64_val(); return true;
    case pb::AttributeProto::kUint32Val: out = a.uint32_val(); return true;
    case pb::AttributeProto::kUint64Val: out = static_cast<int64_t>(a.uint64_val()); return true;
    case pb::AttributeProto::kSint32Val: out = a.sint32_val(); return true;
    case pb::AttributeProto::kSint64Val: out = a.sint64_val(); return true;
    case pb::AttributeProto::kFixed32Val: out = a.fixed32_val(); return true;
    case pb::AttributeProto::kFixed64Val: out = static_cast<int64_t>(a.fixed64_val()); return true;
    case pb::AttributeProto::kSfixed32Val: out = a.sfixed32_val(); return true;
    case pb::AttributeProto::kSfixed64Val: out = a.sfixed64_val(); return true;
    default: return false;
  }
}

Graph read_one(const std::string& path) {
  const std::string data = core::read_input_file(path, "Chakra trace", core::kBinaryInputLimit);
  google::protobuf::io::ArrayInputStream ain(data.data(), static_cast<int>(data.size()));
  google::protobuf::io::CodedInputStream in(&ain);
  auto next = [&](google::protobuf::MessageLite& m, const char* what, size_t index) {
    if (in.CurrentPosition() == static_cast<int>(data.size())) return false;
    uint32_t len = 0;
    const int at = in.CurrentPosition();
    if (!in.ReadVarint32(&len))
      throw core::ConfigError(fmt::format("{}: byte {}: a truncated length before {} {}", path, at, what, index));
    const auto limit = in.PushLimit(static_cast<int>(len));
    if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
      throw core::ConfigError(
          fmt::format("{}: byte {}: {} {} is not a valid Chakra {} ({} bytes)", path, at, what, index, what, len));
    in.PopLimit(limit);
    return true;
  };
  Graph g;
  g.file = path;
  pb::GlobalMetadata meta;
  if (!next(meta, "GlobalMetadata", 0)) throw core::ConfigError(fmt::format("{}: an empty Chakra trace", path));
  std::map<uint64_t, size_t> index;
  uint64_t compute_ns = 0;  // the COMP nodes' durations so far
  pb::Node n;
  for (size_t i = 0; next(n, "Node", i); ++i) {
    GraphNode gn;
    gn.id = n.id();
    gn.name = n.name();
    const std::string where = fmt::format("{}: node {} ('{}')", path, n.id(), n.name());
    for (uint64_t d : n.data_deps()) gn.deps.push_back(d);
    for (uint64_t d : n.ctrl_deps()) gn.deps.push_back(d);
    int64_t comm_type = -1, comm_size = -1, comm_src = -1, comm_dst = -1;
    bool cpu = false;
    std::string pg;
    for (const pb::AttributeProto& a : n.attr()) {
      if (a.name() == "comm_type" && !int_of(a, comm_type))
        throw core::ConfigError(fmt::format("{}: comm_type is not an integer", where));
      if (a.name() == "comm_size" && !int_of(a, comm_size))
        throw core::ConfigError(fmt::format("{}: comm_size is not an integer", where));
      if (a.name() == "comm_src" && !int_of(a, comm_src))
        throw core::ConfigError(fmt::format("{}: comm_src is not an integer", where));
      if (a.name() == "comm_dst" && !int_of(a, comm_dst))
        throw core::ConfigError(fmt::format("{}: comm_dst is not an integer", where));
      if (a.name() == "is_cpu_op") cpu = a.value_case() == pb::AttributeProto::kBoolVal && a.bool_val();
      if (a.name() == "pg_name") pg = a.string_val();
      if (a.name() == "involved_dim") {
        if (a.value_case() != pb::AttributeProto::kBoolList)
          throw core::ConfigError(fmt::format("{}: involved_dim must be a bool_list", where));
        for (bool b : a.bool_list().values()) gn.involved_dim.push_back(b);
      }
    }
    switch (n.type()) {
      case pb::COMP_NODE:
        gn.kind = GraphNode::comp;
        if (n.duration_micros() > (kMaxRunNs - compute_ns) / 1000)
          throw core::ConfigError(
              fmt::format("{}: duration_micros {}: the trace's compute adds up to more than {} ns (52 days), past "
                          "what the 64-bit picosecond clock is trusted with",
                          where, n.duration_micros(), kMaxRunNs));
        gn.duration_ns = n.duration_micros() * 1000;
        compute_ns += gn.duration_ns;
        break;
      case pb::METADATA_NODE: gn.kind = GraphNode::metadata; break;
      case pb::COMM_SEND_NODE:
      case pb::COMM_RECV_NODE: {
        const bool send = n.type() == pb::COMM_SEND_NODE;
        gn.kind = send ? GraphNode::send : GraphNode::recv;
        const int64_t peer = send ? comm_dst : comm_src;
        if (peer < 0)
          throw core::ConfigError(
              fmt::format("{}: a {} without {}", where, send ? "send" : "receive", send ? "comm_dst" : "comm_src"));
        if (comm_size <= 0)
          throw core::ConfigError(fmt::format("{}: comm_size must be a positive number of bytes", where));
        gn.peer = static_cast<uint32_t>(peer);
        gn.bytes = static_cast<uint64_t>(comm_size);
        break;
      }
      case pb::COMM_COLL_NODE: {
        gn.kind = GraphNode::coll;
        if (cpu) throw core::ConfigError(fmt::format("{}: a collective on the CPU (is_cpu_op) is not modeled", where));
        if (!pg.empty() && pg != "0")
          throw core::ConfigError(fmt::format(
              "{}: process group '{}': fabricvp runs collectives on all ranks (pg_name empty or \"0\")", where, pg));
        switch (comm_type) {
          case pb::ALL_REDUCE: gn.comm = Comm::allreduce; break;
          case pb::ALL_GATHER: gn.comm = Comm::allgather; break;
          case pb::REDUCE_SCATTER: gn.comm = Comm::reducescatter; break;
          case pb::ALL_TO_ALL: gn.comm = Comm::alltoall; break;
          case -1: throw core::ConfigError(fmt::format("{}: a collective without comm_type", where));
          default:
            throw core::ConfigError(fmt::format(
                "{}: comm_type {} ({}): fabricvp runs ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER and ALL_TO_ALL", where,
                comm_type,
                pb::CollectiveCommType_IsValid(static_cast<int>(comm_type))
                    ? pb::CollectiveCommType_Name(static_cast<pb::CollectiveCommType>(comm_type))
                    : "unknown"));
        }
        if (comm_size <= 0)
          throw core::ConfigError(fmt::format("{}: comm_size must be a positive number of bytes", where));
        gn.bytes = static_cast<uint64_t>(comm_size);
        break;
      }
      default:
        throw core::ConfigError(fmt::format("{}: a {} is not modeled by fabricvp yet", where,
                                            pb::NodeType_IsValid(n.type()) ? pb::NodeType_Name(n.type()) : "node"));
    }
    if (!index.emplace(gn.id, g.nodes.size()).second)
      throw core::ConfigError(fmt::format("{}: node id {} appears twice", path, gn.id));
    g.nodes.push_back(std::move(gn));
    n.Clear();
  }
  for (const GraphNode& gn : g.nodes)
    for (uint64_t d : gn.deps)
      if (!index.count(d))
        throw core::ConfigError(
            fmt::format("{}: node {} ('{}') depends on node {}, which is not in the trace", path, gn.id, gn.name, d));
  return g;
}

}  // namespace

std::string chakra_prefix(const std::string& path) {
  // "<prefix>.<npu>.et" -> "<prefix>"
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".et") == 0) {
    const std::string stem = path.substr(0, path.size() - 3);
    const auto dot = stem.rfind('.');
    if (dot != std::string::npos && dot + 1 < stem.size() &&
        std::all_of(stem.begin() + static_cast<long>(dot) + 1, stem.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return stem.substr(0, dot);
  }
  return path;
}

std::vector<Graph> read_chakra(const std::string& prefix_or_file, uint32_t npus) {
  const std::string prefix = chakra_prefix(prefix_or_file);
  std::vector<Graph> out;
  for (uint32_t i = 0; i < npus; ++i) {
    const std::string f = fmt::format("{}.{}.et", prefix, i);
    if (!std::filesystem::exists(f))
      throw core::ConfigError(
          fmt::format("{}: missing: a Chakra workload needs one trace per NPU ({}.<0..{}>.et)", f, prefix, npus - 1));
    out.push_back(read_one(f));
  }
  return out;
}

void write_chakra(const std::string& path, const Graph& g) {
  std::string buf;
  {
    google::protobuf::io::StringOutputStream sout(&buf);
    google::protobuf::io::CodedOutputStream out(&sout);
    auto put = [&](const google::protobuf::MessageLite& m) {
      out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
      m.SerializeWithCachedSizes(&out);
    };
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    put(meta);
    for (const GraphNode& gn : g.nodes) {
      pb::Node n;
      n.set_id(gn.id);
      n.set_name(gn.name);
      for (uint64_t d : gn.deps) n.add_data_deps(d);
      if (gn.kind == GraphNode::comp) {
        n.set_type(pb::COMP_NODE);
        n.set_duration_micros(gn.duration_ns / 1000);
      } else if (gn.kind == GraphNode::metadata) {
        n.set_type(pb::METADATA_NODE);
      } else if (gn.kind == GraphNode::send || gn.kind == GraphNode::recv) {
        n.set_type(gn.kind == GraphNode::send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
        auto* a = n.add_attr();
        a->set_name(gn.kind == GraphNode::send ? "comm_dst" : "comm_src");
        a->set_int32_val(static_cast<int32_t>(gn.peer));
        a = n.add_attr();
        a->set_name("comm_size");
        a->set_int64_val(static_cast<int64_t>(gn.bytes));
      } else {
        n.set_type(pb::COMM_COLL_NODE);
        pb::CollectiveCommType t = pb::ALL_REDUCE;
        if (gn.comm == Comm::allgather) t = pb::ALL_GATHER;
        if (gn.comm == Comm::reducescatter) t = pb::REDUCE_SCATTER;
        if (gn.comm == Comm::alltoall) t = pb::ALL_TO_ALL;
        auto* a = n.add_attr();
        a->set_name("comm_type");
        a->set_int64_val(t);
        a = n.add_attr();
        a->set_name("comm_size");
        a->set_int64_val(static_cast<int64_t>(gn.bytes));
        if (!gn.involved_dim.empty()) {
          a = n.add_attr();
          a->set_name("involved_dim");
          for (bool b : gn.involved_dim) a->mutable_bool_list()->add_values(b);
        }
      }
      put(n);
    }
  }
  core::write_file(path, buf, "Chakra trace", true);
}

// ---- execution -----------------------------------------------------------------

struct GraphRun::Npu {
  GraphRun* run = nullptr;  // (callbacks capture the NPU and a node: small enough for std::function to hold)
  uint32_t id = 0;
  const Graph* g = nullptr;
  std::vector<uint32_t> indeg;
  std::vector<uint32_t> succ_first, succ;  // node k's successors: succ[succ_first[k] .. succ_first[k + 1])
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready_comp, ready_other;  // by node index
  bool computing = false;
  uint32_t outstanding = 0, remaining = 0, seq = 0;
  uint64_t last = 0, compute_end = 0;  // the running compute node's end
  uint32_t running = 0;                // and index
  std::vector<bool> done;              // per node
  std::vector<uint8_t> comp;           // per node: a compute node (read where successors become ready)
  uint32_t first_open = 0;             // the first node not done
  NpuTimes t;
};

GraphRun::GraphRun(std::vector<Graph> graphs, Platform& p) : m_graphs(std::move(graphs)), m_p(p) {
  const uint32_t D = static_cast<uint32_t>(p.dim_sizes().size());
  for (uint32_t i = 0; i < m_graphs.size(); ++i) {
    auto n = std::make_unique<Npu>();
    n->run = this;
    n->id = i;
    n->g = &m_graphs[i];
    const Graph& g = m_graphs[i];
    // node id -> index: the ids are the indices (hybrid_graphs, most traces), or looked up
    bool dense = true;
    for (uint32_t k = 0; k < g.nodes.size() && dense; ++k) dense = g.nodes[k].id == k;
    std::unordered_map<uint64_t, uint32_t> index;
    if (!dense)
      for (uint32_t k = 0; k < g.nodes.size(); ++k) index[g.nodes[k].id] = k;
    const size_t N = g.nodes.size();
    auto at = [&](uint64_t id) -> uint32_t {
      const auto it = dense ? index.end() : index.find(id);
      if (dense ? id >= N : it == index.end())
        throw core::ConfigError(fmt::format("{}: a dependency on node {}, which the graph does not have", g.file, id));
      return dense ? static_cast<uint32_t>(id) : it->second;
    };
    n->indeg.assign(N, 0);
    n->succ_first.assign(N + 1, 0);
    for (uint32_t k = 0; k < N; ++k) {
      const GraphNode& gn = g.nodes[k];
      if (gn.kind == GraphNode::coll && !gn.involved_dim.empty() && gn.involved_dim.size() < D)
        throw core::ConfigError(fmt::format("{}: node {} ('{}'): involved_dim has {} entries for {} dimensions", g.file,
                                            gn.id, gn.name, gn.involved_dim.size(), D));
      n->indeg[k] = static_cast<uint32_t>(gn.deps.size());
      for (uint64_t d : gn.deps) ++n->succ_first[at(d) + 1];
    }
    for (size_t k = 0; k < N; ++k) n->succ_first[k + 1] += n->succ_first[k];
    n->succ.resize(n->succ_first[N]);
    std::vector<uint32_t> fill(n->succ_first.begin(), n->succ_first.end() - 1);
    for (uint32_t k = 0; k < N; ++k)
      for (uint64_t d : g.nodes[k].deps) n->succ[fill[at(d)]++] = k;
    n->remaining = static_cast<uint32_t>(g.nodes.size());
    n->done.assign(g.nodes.size(), false);
    n->comp.resize(N);
    for (size_t k = 0; k < N; ++k) n->comp[k] = g.nodes[k].kind == GraphNode::comp;
    m_npus.push_back(std::move(n));
  }
}

GraphRun::~GraphRun() = default;

void GraphRun::start() {
  for (auto& up : m_npus) {
    Npu& n = *up;
    n.last = m_p.now();
    for (uint32_t k = 0; k < n.indeg.size(); ++k)
      if (n.indeg[k] == 0) (n.comp[k] ? n.ready_comp : n.ready_other).push(k);
    Npu* np = &n;
    m_p.at(n.id, m_p.now(), [this, np] { pump(*np); });
  }
}

void GraphRun::account(Npu& n) {
  const uint64_t now = m_p.now(), dt = now - n.last;
  if (n.computing) n.t.compute += dt;
  if (n.outstanding) n.t.comm_busy += dt;
  if (!n.computing && n.outstanding) n.t.exposed += dt;
  n.last = now;
}

void GraphRun::pump(Npu& n) {
  account(n);
  while (!n.ready_other.empty()) {
    const uint32_t k = n.ready_other.top();
    n.ready_other.pop();
    const GraphNode& gn = n.g->nodes[k];
    if (gn.kind == GraphNode::metadata) {
      finished(n, k);
      continue;
    }
    if (gn.kind == GraphNode::send || gn.kind == GraphNode::recv) {
      if (gn.peer >= m_npus.size() || gn.peer == n.id)
        throw core::ConfigError(fmt::format("{}: node {} ('{}'): peer npu{} is not another NPU of the {}", n.g->file,
                                            gn.id, gn.name, gn.peer, m_npus.size()));
      ++n.outstanding;
      Npu* np = &n;
      const bool send = gn.kind == GraphNode::send;
      m_p.p2p(n.id, send ? n.id : gn.peer, send ? gn.peer : n.id, gn.bytes, [np, k] {
        GraphRun& r = *np->run;
        r.account(*np);
        --np->outstanding;
        r.finished(*np, k);
        r.pump(*np);
      });
      continue;
    }
    Call c;
    c.npu = n.id;
    c.layer = n.seq++;
    c.pass = kWg;
    c.comm = gn.comm;
    c.bytes = gn.bytes;
    const uint32_t ndims = static_cast<uint32_t>(m_p.dim_sizes().size());
    for (uint32_t d = 0; d < ndims; ++d)
      if (gn.involved_dim.empty() || gn.involved_dim[d]) c.dims.push_back(d);
    if (c.dims.empty()) {  // no dimension involved: nothing to do
      finished(n, k);
      continue;
    }
    ++n.outstanding;
    if (n.id == 0) ++m_collectives;
    Npu* np = &n;
    const uint64_t issued = m_p.now();
    m_p.collective(c, [this, np, k, c, issued] {
      account(*np);
      m_p.communicated(c, issued, m_p.now());
      --np->outstanding;
      finished(*np, k);
      pump(*np);
    });
  }
  if (!n.computing && !n.ready_comp.empty()) {
    const uint32_t k = n.ready_comp.top();
    n.ready_comp.pop();
    n.computing = true;
    const uint64_t start = m_p.now(), end = start + n.g->nodes[k].duration_ns * 1000;
    n.compute_end = end;
    n.running = k;
    m_p.computed(n.id, k, kFwd, start, end);
    Npu* np = &n;
    m_p.at(n.id, end, [np, k] {
      GraphRun& r = *np->run;
      r.account(*np);
      np->computing = false;
      r.finished(*np, k);
      r.pump(*np);
    });
  }
  if (n.remaining == 0 && n.outstanding == 0 && !n.computing) n.t.end = m_p.now();
}

void GraphRun::finished(Npu& n, uint32_t k) {
  --n.remaining;
  ++m_finished;
  n.done[k] = true;
  while (n.first_open < n.done.size() && n.done[n.first_open]) ++n.first_open;
  for (uint32_t i = n.succ_first[k]; i < n.succ_first[k + 1]; ++i)
    if (const uint32_t s = n.succ[i]; --n.indeg[s] == 0) (n.comp[s] ? n.ready_comp : n.ready_other).push(s);
}

void GraphRun::ahead(uint64_t horizon_ps, const std::function<void(uint32_t, uint32_t)>& f) const {
  const uint64_t now = m_p.now();
  for (const auto& up : m_npus) {
    const Npu& n = *up;
    uint64_t t = 0;  // compute ahead of the node, from now
    for (uint32_t k = n.first_open; k < n.done.size() && t <= horizon_ps; ++k) {
      if (n.done[k]) continue;
      const GraphNode& gn = n.g->nodes[k];
      if (gn.kind == GraphNode::comp)
        t += n.computing && k == n.running ? n.compute_end - now : gn.duration_ns * 1000;
      else if (gn.kind == GraphNode::send || gn.kind == GraphNode::coll)
        f(n.id, k);
    }
  }
}

bool GraphRun::computing() const {
  for (const auto& n : m_npus)
    if (n->computing) return true;
  return false;
}

bool GraphRun::done() const {
  for (const auto& n : m_npus)
    if (n->remaining != 0 || n->outstanding != 0) return false;
  return true;
}

const NpuTimes& GraphRun::times(uint32_t npu) const { return m_npus.at(npu)->t; }

std::string GraphRun::progress() const {
  std::string out;
  for (const auto& n : m_npus) {
    if (n->remaining == 0) continue;
    out += fmt::format("{}npu{}: {} of {} nodes not run ({} collectives in flight)", out.empty() ? "" : "; ", n->id,
                       n->remaining, n->g->nodes.size(), n->outstanding);
    if (out.size() > 2000) break;
  }
  if (out.empty()) out = "every node ran";
  return out +
         " (a cycle in the dependencies, collectives issued in different orders at different NPUs, or more "
         "transfers waiting for their peers than an NPU keeps in flight: sys.npu*.comm_chunks)";
}

}  // namespace fabricvp::training
