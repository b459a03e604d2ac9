#include "sw/training/loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/core/config.h"
#include "models/core/context.h"

namespace fabricvp::training {

namespace {

enum class OpKind : uint8_t { compute, issue, wait, iteration_end };

struct Op {
  OpKind kind;
  uint32_t layer = 0, pass = 0;
};

}  // namespace

struct TrainingLoop::Npu {
  uint32_t id = 0;
  size_t pc = 0;  // index into the program
  uint32_t iteration = 0;
  // Per (layer, pass): collectives issued and results in place (completion + update time).
  std::vector<std::array<uint32_t, 3>> issued, done;
  std::vector<std::array<uint64_t, 3>> issue_time;
  bool waiting = false;
  uint32_t wait_layer = 0, wait_pass = 0;
  uint64_t wait_since = 0;
  uint32_t outstanding = 0;  // collectives in flight
  uint64_t busy_since = 0;
  bool computing = false;
  uint64_t compute_end = 0;  // of the running compute step
  bool finished = false;
  NpuTimes t;
};

struct TrainingLoop::Program {
  std::vector<Op> ops;
};

namespace {

/// The program of one iteration (see loop.h), the same at every NPU.
std::vector<Op> iteration_program(const Workload& w) {
  std::vector<Op> ops;
  const uint32_t L = static_cast<uint32_t>(w.layers.size());
  auto compute = [&](uint32_t l, uint32_t p) { ops.push_back({OpKind::compute, l, p}); };
  auto issue = [&](uint32_t l, uint32_t p) { ops.push_back({OpKind::issue, l, p}); };
  auto wait = [&](uint32_t l, uint32_t p) { ops.push_back({OpKind::wait, l, p}); };
  const Parallelism P = w.parallelism;
  const bool data_style = P == Parallelism::data || P == Parallelism::micro || w.is_dlrm();
  auto forward = [&](uint32_t i) {
    compute(i, kFwd);
    if (P == Parallelism::data || P == Parallelism::micro) return;
    if (w.is_dlrm()) {
      if (w.layers[i].pass[kFwd].comm == Comm::alltoall) issue(i, kFwd);
      if (i == w.dlrm_last_bottom_layer) wait(0, kFwd);
      return;
    }
    issue(i, kFwd);
    wait(i, kFwd);
  };
  for (uint32_t i = 0; i < L; ++i) {
    wait(i, kWg);  // the previous iteration's weight gradients of this layer
    forward(i);
  }
  for (uint32_t i = L; i-- > 0;) {
    if (data_style) {
      if (P == Parallelism::hybrid_dlrm && i == 0) wait(0, kIg);
      compute(i, kWg);
      issue(i, kWg);
      if (i > 0) {
        compute(i, kIg);
        if (w.is_dlrm() && i == w.dlrm_last_bottom_layer + 1) issue(0, kIg);
      }
      continue;
    }
    if (P == Parallelism::hybrid_transformer_fwd_in_bckwd &&
        std::find(w.checkpoint_initiates.begin(), w.checkpoint_initiates.end(), i) != w.checkpoint_initiates.end()) {
      // Recompute the activations since the nearest checkpoint before this layer.
      uint32_t from = 0;
      for (uint32_t c : w.checkpoints)
        if (c < i) from = std::max(from, c + 1);
      for (uint32_t k = from; k <= i; ++k) forward(k);
    }
    compute(i, kIg);
    if (i > 0 || w.is_transformer()) {
      issue(i, kIg);
      if (w.is_transformer()) wait(i, kIg);
    }
    compute(i, kWg);
    issue(i, kWg);
    if (!w.is_transformer()) wait(i, kIg);
  }
  ops.push_back({OpKind::iteration_end, 0, 0});
  return ops;
}

std::vector<uint32_t> range(uint32_t from, uint32_t to) {
  std::vector<uint32_t> v;
  for (uint32_t d = from; d < to; ++d) v.push_back(d);
  return v;
}

}  // namespace

TrainingLoop::TrainingLoop(const Workload& w, Platform& p, uint32_t iterations)
    : m_w(w), m_p(p), m_iterations(iterations) {
  if (iterations == 0) throw core::ConfigError("--iterations must be at least 1");
  check_run_length(w, iterations);
  const std::vector<uint32_t> sizes = p.dim_sizes();
  const uint32_t D = static_cast<uint32_t>(sizes.size());
  // The model-parallel boundary of the transformers: the first dimensions
  // whose sizes multiply to the group.
  uint32_t mp_dims = 0;
  if (w.is_transformer() && w.model_parallel_group > 1) {
    uint64_t prod = 1;
    while (mp_dims < D && prod < w.model_parallel_group) prod *= sizes[mp_dims++];
    if (prod != w.model_parallel_group && w.model_parallel_group < p.npus()) {
      std::string s;
      for (uint32_t x : sizes) s += (s.empty() ? "" : " x ") + std::to_string(x);
      throw core::ConfigError(fmt::format(
          "{}: model_parallel_NPU_group {} does not end on a dimension boundary of the {} fabric (fabricvp's "
          "communicators span whole dimensions; products of the first dimensions are 1{})",
          w.file, w.model_parallel_group, s, [&] {
            std::string t;
            uint64_t q = 1;
            for (uint32_t x : sizes) t += fmt::format(", {}", q *= x);
            return t;
          }()));
    }
  }
  const std::vector<uint32_t> all = range(0, D);
  for (uint32_t l = 0; l < w.layers.size(); ++l) {
    std::array<std::vector<uint32_t>, 3> d;
    const Parallelism P = w.parallelism == Parallelism::hybrid_customized ? w.layers[l].parallelism : w.parallelism;
    switch (P) {
      case Parallelism::data:
      case Parallelism::micro: d[kWg] = all; break;
      case Parallelism::hybrid_dlrm:
      case Parallelism::hybrid_dlrm_enhanced:
        d[kWg] = all;
        if (l == 0) d[kFwd] = d[kIg] = all;
        break;
      case Parallelism::model:
      case Parallelism::distributed_inference: d[kFwd] = d[kIg] = all; break;
      case Parallelism::hybrid_data_model:
        d[kFwd] = d[kIg] = range(0, std::min(1u, D));
        d[kWg] = range(1, D);
        break;
      case Parallelism::hybrid_model_data:
        d[kWg] = range(0, std::min(1u, D));
        d[kFwd] = d[kIg] = range(1, D);
        break;
      case Parallelism::hybrid_transformer:
      case Parallelism::hybrid_transformer_fwd_in_bckwd:
        if (w.model_parallel_group >= p.npus()) {
          d[kFwd] = d[kIg] = all;
        } else {
          d[kFwd] = d[kIg] = range(0, mp_dims);
          d[kWg] = range(mp_dims, D);
        }
        break;
      case Parallelism::hybrid_customized: break;
    }
    for (uint32_t q = 0; q < 3; ++q)
      if (w.layers[l].pass[q].comm == Comm::none) d[q].clear();
    m_dims.push_back(std::move(d));
  }
  m_program = std::make_unique<Program>(Program{iteration_program(w)});
  for (uint32_t i = 0; i < p.npus(); ++i) {
    auto n = std::make_unique<Npu>();
    n->id = i;
    const size_t L = w.layers.size();
    n->issued.assign(L, {0, 0, 0});
    n->done.assign(L, {0, 0, 0});
    n->issue_time.assign(L, {0, 0, 0});
    n->t.layer_compute.assign(L, {0, 0, 0});
    n->t.layer_exposed.assign(L, {0, 0, 0});
    n->t.layer_comm.assign(L, {0, 0, 0});
    m_npus.push_back(std::move(n));
  }
}

TrainingLoop::~TrainingLoop() = default;

void TrainingLoop::start() {
  for (auto& n : m_npus) {
    Npu* np = n.get();
    m_p.at(np->id, m_p.now(), [this, np] { step(*np); });
  }
}

bool TrainingLoop::done() const {
  for (const auto& n : m_npus)
    if (!n->finished) return false;
  return true;
}

double TrainingLoop::fraction_done() const {
  const double len = static_cast<double>(m_program->ops.size()), total = len * m_iterations;
  if (m_npus.empty() || total == 0) return 1.0;
  double sum = 0;
  for (const auto& n : m_npus)
    sum += n->finished ? 1.0
                       : std::min(1.0, (static_cast<double>(n->iteration) * len + static_cast<double>(n->pc)) / total);
  return sum / static_cast<double>(m_npus.size());
}

const NpuTimes& TrainingLoop::times(uint32_t npu) const { return m_npus.at(npu)->t; }

const std::vector<uint32_t>& TrainingLoop::dims(uint32_t layer, uint32_t pass) const { return m_dims[layer][pass]; }

void TrainingLoop::step(Npu& n) {
  const std::vector<Op>& program = m_program->ops;
  const size_t len = program.size();
  while (!n.finished) {
    if (n.iteration >= m_iterations) {
      // Drain: wait for every collective still in flight.
      for (uint32_t l = 0; l < m_w.layers.size(); ++l)
        for (uint32_t q = 0; q < 3; ++q)
          if (wait(n, l, q)) return;
      n.finished = true;
      n.t.end = m_p.now();
      return;
    }
    const Op& op = program[n.pc];
    switch (op.kind) {
      case OpKind::compute: {
        const uint64_t ps = m_p.compute_ps(n.id, m_w.layers[op.layer].pass[op.pass]);
        ++n.pc;
        if (ps == 0) break;
        const uint64_t start = m_p.now(), end = start + ps;
        n.t.compute += end - start;
        n.t.layer_compute[op.layer][op.pass] += end - start;
        m_p.computed(n.id, op.layer, op.pass, start, end);
        n.computing = true;
        n.compute_end = end;
        m_p.at(n.id, end, [this, &n] {
          n.computing = false;
          step(n);
        });
        return;
      }
      case OpKind::issue:
        ++n.pc;
        issue(n, op.layer, op.pass);
        break;
      case OpKind::wait:
        if (wait(n, op.layer, op.pass)) return;
        ++n.pc;
        break;
      case OpKind::iteration_end:
        n.t.iteration_end.push_back(m_p.now());
        n.t.iteration_compute.push_back(n.t.compute);
        n.t.iteration_exposed.push_back(n.t.exposed);
        ++n.iteration;
        n.pc = 0;
        break;
    }
    if (n.pc >= len) n.pc = 0;
  }
}

Tracks::Tracks(uint32_t npus, const char* unit) {
  auto& tr = core::Context::get().trace();
  if (!tr.enabled()) return;
  m_pid = tr.process("workload");
  for (uint32_t n = 0; n < npus; ++n) {
    tr.thread(m_pid, 2 * n + 1, fmt::format("{}{} compute", unit, n));
    tr.thread(m_pid, 2 * n + 2, fmt::format("{}{} collectives", unit, n));
  }
}

void Tracks::compute(uint32_t npu, const char* name, const std::string& node, uint64_t start, uint64_t end) const {
  auto& tr = core::Context::get().trace();
  if (m_pid && tr.in_window(start, end))
    tr.span(m_pid, 2 * npu + 1, name, "compute", start, end - start, fmt::format(R"("node":"{}")", node));
}

void Tracks::collective(const Call& call, const std::string& layer, uint64_t issue, uint64_t end) const {
  auto& tr = core::Context::get().trace();
  if (m_pid && tr.in_window(issue, end))
    tr.span(m_pid, 2 * call.npu + 2, fmt::format("{} {}", pass_name(call.pass), comm_name(call.comm)).c_str(),
            "collective", issue, end - issue,
            fmt::format(R"("layer":"{}","bytes":{},"iteration":{})", layer, call.bytes, call.iteration));
}

void TrainingLoop::ahead(uint64_t horizon_ps, const std::function<void(uint32_t, uint32_t, uint32_t)>& f) const {
  const std::vector<Op>& program = m_program->ops;
  const uint64_t now = m_p.now();
  for (const auto& up : m_npus) {
    const Npu& n = *up;
    for (uint32_t l = 0; l < n.issued.size(); ++l)
      for (uint32_t q = 0; q < 3; ++q)
        if (n.done[l][q] < n.issued[l][q]) f(n.id, l, q);
    if (n.finished) continue;
    uint64_t t = n.computing ? n.compute_end - now : 0;  // compute ahead of the step, from now
    // At most two iterations' steps: past that the program repeats (a workload with little compute would
    // otherwise be walked to its end at every re-plan).
    size_t steps = 2 * program.size();
    for (size_t pc = n.pc, it = n.iteration; it < m_iterations && t <= horizon_ps && steps-- > 0;) {
      const Op& op = program[pc];
      if (op.kind == OpKind::compute)
        t += m_p.compute_ps(n.id, m_w.layers[op.layer].pass[op.pass]);
      else if (op.kind == OpKind::issue && !m_dims[op.layer][op.pass].empty())
        f(n.id, op.layer, op.pass);
      else if (op.kind == OpKind::iteration_end)
        ++it;
      if (++pc == program.size()) pc = 0;
    }
  }
}

uint64_t TrainingLoop::steps_taken() const {
  const uint64_t len = m_program->ops.size();
  uint64_t s = 0;
  for (const auto& n : m_npus) s += n->finished ? len * m_iterations + 1 : n->iteration * len + n->pc;
  return s;
}

bool TrainingLoop::computing() const {
  for (const auto& n : m_npus)
    if (n->computing) return true;
  return false;
}

void TrainingLoop::issue(Npu& n, uint32_t layer, uint32_t pass) {
  const std::vector<uint32_t>& d = m_dims[layer][pass];
  if (d.empty()) return;  // no collective in this pass, or it spans no dimension
  const Pass& ps = m_w.layers[layer].pass[pass];
  Call c;
  c.npu = n.id;
  c.iteration = n.iteration;
  c.layer = layer;
  c.pass = pass;
  c.comm = ps.comm;
  c.bytes = ps.bytes;
  c.dims = d;
  ++n.issued[layer][pass];
  const uint64_t issued_at = m_p.now();
  n.issue_time[layer][pass] = issued_at;
  if (n.outstanding++ == 0) n.busy_since = issued_at;
  const uint64_t update = m_w.layers[layer].update_ns * 1000;
  m_p.collective(c, [this, &n, c, issued_at, update] {
    auto result = [this, &n, c, issued_at] {
      const uint64_t now = m_p.now();
      ++n.done[c.layer][c.pass];
      n.t.layer_comm[c.layer][c.pass] += now - issued_at;
      if (--n.outstanding == 0) n.t.comm_busy += now - n.busy_since;
      m_p.communicated(c, issued_at, now);
      if (n.waiting && n.wait_layer == c.layer && n.wait_pass == c.pass) {
        n.waiting = false;
        n.t.exposed += now - n.wait_since;
        n.t.layer_exposed[c.layer][c.pass] += now - n.wait_since;
        step(n);
      }
    };
    if (update == 0)
      result();
    else
      m_p.at(n.id, m_p.now() + update, result);
  });
}

bool TrainingLoop::wait(Npu& n, uint32_t layer, uint32_t pass) {
  if (n.done[layer][pass] >= n.issued[layer][pass]) return false;
  n.waiting = true;
  n.wait_layer = layer;
  n.wait_pass = pass;
  n.wait_since = m_p.now();
  return true;
}

std::string TrainingLoop::progress() const {
  std::string out;
  for (const auto& n : m_npus) {
    if (n->finished) continue;
    if (!out.empty()) out += "; ";
    out += fmt::format("npu{}: iteration {}", n->id, n->iteration);
    if (n->waiting)
      out += fmt::format(", waiting for layer {} {} {}", m_w.layers[n->wait_layer].name, pass_name(n->wait_pass),
                         comm_name(m_w.layers[n->wait_layer].pass[n->wait_pass].comm));
    if (out.size() > 2000) {
      out += "; ...";
      break;
    }
  }
  return out;
}

}  // namespace fabricvp::training
