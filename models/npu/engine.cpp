#include "models/npu/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fabricvp::npu {

size_t CollectiveEngine::MsgKeyHash::operator()(const MsgKey& k) const {
  uint64_t h = k.coll * 0x9e3779b97f4a7c15ULL;
  h ^= (uint64_t(k.chunk) << 32 | uint64_t(k.phase) << 24 | uint64_t(k.ring) << 16 | k.step) + 0x632be59bd9b4e019ULL +
       (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

CollectiveEngine::CollectiveEngine(const sc_core::sc_object* owner, std::string name, uint32_t npu,
                                   core::ActionQueue& actions, CommBackend& backend,
                                   std::function<void(std::shared_ptr<Message>)> transmit,
                                   std::function<void(const Collective&)> done)
    : messages_sent(owner, nullptr, "messages_sent", "messages", "messages handed to the AFI"),
      messages_received(owner, nullptr, "messages_received", "messages", "messages received by the AFI"),
      bytes_sent(owner, nullptr, "bytes_sent", "bytes", "payload bytes sent (network bytes)"),
      bytes_received(owner, nullptr, "bytes_received", "bytes", "payload bytes received"),
      reduce_steps(owner, nullptr, "reduce_steps", "steps", "reduce steps (a received message added to local data)"),
      reduced_bytes(owner, nullptr, "reduced_bytes", "bytes", "bytes of messages added to local data"),
      peak_in_buffer_bytes(owner, nullptr, "peak_in_buffer_bytes", "bytes",
                           "most bytes received and waiting for their ring step (input buffers of all ports)"),
      m_name(std::move(name)),
      m_npu(npu),
      m_actions(actions),
      m_backend(backend),
      m_transmit(std::move(transmit)),
      m_done(std::move(done)) {}

void CollectiveEngine::submit(std::shared_ptr<Collective> c) {
  const CollectivePlan& plan = c->plan();
  auto a = std::make_unique<Active>();
  a->nphases = plan.phases();
  for (uint32_t p = 0; p < a->nphases; ++p) a->kmax = std::max(a->kmax, plan.rings(p));
  a->roles.resize(size_t(a->nphases) * a->kmax);
  a->after.assign(size_t(a->nphases) * a->kmax, -1);
  for (uint32_t p = 0; p < a->nphases; ++p)
    for (uint32_t q = 0; q < plan.rings(p); ++q) {
      a->roles[p * a->kmax + q] = plan.ring(p, q);
      const int32_t after = plan.ring_after(p, q);
      if (after >= static_cast<int32_t>(q) || after < -1)
        throw std::logic_error(
            fmt::format("{}: ring {} of phase {} waits for ring {} (must be an earlier one)", m_name, q, p, after));
      a->after[p * a->kmax + q] = after;
    }
  a->chunks.assign(plan.chunks(), ChunkState{});
  a->tasks.assign(size_t(plan.chunks()) * a->nphases * a->kmax, Task{});
  if (m_waiting.size() < a->nphases) m_waiting.resize(a->nphases);
  a->c = std::move(c);
  const uint32_t index = static_cast<uint32_t>(m_colls.size());
  if (!m_by_id.emplace(a->c->id.key(), index).second)
    throw std::logic_error(
        fmt::format("{}: collective {} on communicator {} submitted twice", m_name, a->c->id.seq, a->c->id.comm));
  m_colls.push_back(std::move(a));
  ++m_in_flight;
  m_backend.admit(index, *m_colls[index]->c);
  if (m_colls[index]->chunks.empty()) {  // nothing to move: done at once
    m_actions.at(now(), [this, index] {
      Active& e = *m_colls[index];
      e.c->done = true;
      e.c->completion_ps = now();
      --m_in_flight;
      m_done(*e.c);
    });
    return;
  }
  m_actions.at(now(), [this] { pump(); });
}

const ChunkPlan& CollectiveEngine::chunk_plan(ChunkRef c) const {
  const Active& a = *m_colls[c.coll];
  auto it = a.plans.find(c.chunk);
  if (it == a.plans.end())
    throw std::logic_error(fmt::format("{}: chunk {} of collective {} is not in flight", m_name, c.chunk, c.coll));
  return *it->second;
}

void CollectiveEngine::deliver(std::shared_ptr<Message> m) {
  m_actions.at(m->arrival_ps, [this, m] { on_message(m); });
}

void CollectiveEngine::send(std::shared_ptr<Message> m, uint64_t ready) {
  m_actions.at(ready, [this, m] {
    m->ready_ps = now();
    ++messages_sent;
    bytes_sent += m->bytes;
    // Read before it leaves (the link may move the bytes out).
    const uint64_t coll = m->coll;
    const uint32_t chunk = m->chunk, phase = m->phase, ring = m->ring, step = m->step;
    m_transmit(m);
    if (step == 0) sent_first(coll, chunk, phase, ring);
  });
}

void CollectiveEngine::sent_first(uint64_t coll, uint32_t chunk, uint32_t phase, uint32_t ring) {
  // A ring this member only sends on (a broadcast's source) is done when its
  // message has left: the data no longer needs to stay where it was read.
  auto it = m_by_id.find(coll);
  if (it == m_by_id.end()) return;
  Active& a = *m_colls[it->second];
  if (chunk >= a.chunks.size()) return;
  Task& t = a.tasks[task_id(a, chunk, phase, ring)];
  if (!t.live || t.total != 0 || t.phase != phase || t.chunk != chunk) return;
  t.live = false;
  if (--a.chunks[chunk].rings_left == 0) phase_done(ChunkRef{it->second, chunk}, phase);
}

std::shared_ptr<Message> CollectiveEngine::header(const Active& a, uint32_t chunk, uint32_t phase, uint32_t ring,
                                                  uint32_t step) const {
  auto m = std::make_shared<Message>();
  const RingRole& role = a.roles[phase * a.kmax + ring];
  m->src = m_npu;
  m->dst = role.next;
  m->coll = a.c->id.key();
  m->chunk = chunk;
  m->phase = static_cast<uint16_t>(phase);
  m->ring = static_cast<uint16_t>(ring);
  m->step = static_cast<uint16_t>(step);
  m->tx_port = role.port;
  return m;
}

void CollectiveEngine::pump() {
  // Later phases first: they free resources; within a phase the earliest (collective, chunk) first.
  for (uint32_t p = static_cast<uint32_t>(m_waiting.size()); p-- > 1;) {
    std::vector<ChunkRef>& w = m_waiting[p];
    while (!w.empty() && m_backend.try_enter(w.front(), p)) {
      const ChunkRef c = w.front();
      w.erase(w.begin());
      start_phase(c, p);
    }
  }
  // New chunks, first come first served.
  while (m_first_unloaded < m_colls.size() &&
         m_colls[m_first_unloaded]->next_load >= m_colls[m_first_unloaded]->c->plan().chunks())
    ++m_first_unloaded;
  const uint32_t ncolls = static_cast<uint32_t>(m_colls.size());
  for (uint32_t k = m_first_unloaded; k < ncolls; ++k) {
    const uint32_t i = m_lifo ? ncolls - 1 - (k - m_first_unloaded) : k;
    Active& a = *m_colls[i];
    const uint32_t n = a.c->plan().chunks();
    while (a.next_load < n) {
      const ChunkRef c{i, a.next_load};
      if (!m_backend.try_enter(c, 0)) return;
      ++a.next_load;
      a.plans.emplace(c.chunk, a.c->plan().chunk(c.chunk));
      m_backend.load(c);
    }
  }
}

void CollectiveEngine::loaded(ChunkRef c) { start_phase(c, 0); }

void CollectiveEngine::start_phase(ChunkRef c, uint32_t p) {
  Active& a = *m_colls[c.coll];
  ChunkState& cs = a.chunks[c.chunk];
  cs.phase = static_cast<int>(p);
  const uint32_t K = a.c->plan().rings(p);
  std::vector<uint32_t> started;
  cs.rings_left = 0;
  for (uint32_t q = 0; q < K; ++q) {
    const RingRole& role = a.roles[p * a.kmax + q];
    if (!role.active()) continue;
    Task& t = a.tasks[task_id(a, c.chunk, p, q)];
    // A ring it receives on is done after its last receive; one it only sends
    // on, when that message has left (sent_first).
    t = Task{c.chunk, p, q, 0, role.receives, false, true};
    ++cs.rings_left;
    started.push_back(q);
  }
  const ChunkPlan& plan = *a.plans.at(c.chunk);
  for (uint32_t q : started)
    if (a.roles[p * a.kmax + q].sends_first)
      m_backend.send_local(c, header(a, c.chunk, p, q, 0), plan.first_send(p, q));
  if (cs.rings_left == 0) {
    m_actions.at(now(), [this, c, p] { phase_done(c, p); });
    return;
  }
  for (uint32_t q : started) try_receive(TaskRef{c.coll, task_id(a, c.chunk, p, q)});
}

void CollectiveEngine::on_message(std::shared_ptr<Message> m) {
  ++messages_received;
  bytes_received += m->bytes;
  m_inbox_bytes += m->bytes;
  peak_in_buffer_bytes.note_max(m_inbox_bytes);
  const MsgKey k{m->coll, m->chunk, m->phase, m->ring, m->step};
  if (!m_inbox.emplace(k, m).second)
    throw std::logic_error(
        fmt::format("{}: message of collective {:#x} chunk {} phase {} ring {} step {} received twice", m_name, m->coll,
                    m->chunk, m->phase, m->ring, m->step));
  auto it = m_by_id.find(m->coll);
  if (it == m_by_id.end()) return;  // its collective is not submitted here yet
  Active& a = *m_colls[it->second];
  if (m->chunk < a.chunks.size() && a.chunks[m->chunk].phase == m->phase && m->ring < a.kmax)
    try_receive(TaskRef{it->second, task_id(a, m->chunk, m->phase, m->ring)});
}

void CollectiveEngine::try_receive(TaskRef id) {
  Active& a = *m_colls[id.coll];
  Task& t = a.tasks[id.task];
  if (!t.live || t.busy || t.step >= t.total) return;
  const int32_t after = a.after[t.phase * a.kmax + t.ring];
  if (after >= 0) {
    const Task& before = a.tasks[task_id(a, t.chunk, t.phase, static_cast<uint32_t>(after))];
    if (before.live && before.step < before.total) return;  // step_done retries when it has taken them all
  }
  const uint32_t first = a.roles[t.phase * a.kmax + t.ring].first_step;
  auto it = m_inbox.find(MsgKey{a.c->id.key(), t.chunk, static_cast<uint16_t>(t.phase), static_cast<uint16_t>(t.ring),
                                static_cast<uint16_t>(first + t.step)});
  if (it == m_inbox.end()) return;
  std::shared_ptr<Message> in = std::move(it->second);
  m_inbox.erase(it);
  m_inbox_bytes -= in->bytes;
  Step step = a.plans.at(t.chunk)->step(t.phase, t.ring, t.step);
  const uint64_t expect = (step.local.elems() + step.passthrough) * a.c->plan().esize();
  if (expect != in->bytes || (!in->data.empty() && in->data.size() != in->bytes))
    throw std::logic_error(fmt::format("{}: chunk {} phase {} ring {} step {}: {} bytes received for a {}-byte step",
                                       m_name, t.chunk, t.phase, t.ring, t.step, in->bytes, expect));
  t.busy = true;
  std::shared_ptr<Message> fwd = step.forward ? header(a, t.chunk, t.phase, t.ring, first + t.step + 1) : nullptr;
  m_backend.receive(id, std::move(in), std::move(step), std::move(fwd));
}

void CollectiveEngine::step_done(TaskRef id) {
  Active& a = *m_colls[id.coll];
  Task& t = a.tasks[id.task];
  t.busy = false;
  if (++t.step < t.total) {
    try_receive(id);
    return;
  }
  t.live = false;
  const uint32_t chunk = t.chunk, phase = t.phase, ring = t.ring;
  if (--a.chunks[chunk].rings_left == 0) {
    phase_done(ChunkRef{id.coll, chunk}, phase);
    return;
  }
  const uint32_t K = a.c->plan().rings(phase);
  for (uint32_t q = ring + 1; q < K; ++q)
    if (a.after[phase * a.kmax + q] == static_cast<int32_t>(ring))
      try_receive(TaskRef{id.coll, task_id(a, chunk, phase, q)});
}

void CollectiveEngine::phase_done(ChunkRef c, uint32_t p) {
  Active& a = *m_colls[c.coll];
  m_backend.leave(c, p);
  if (p + 1 < a.nphases) {
    std::vector<ChunkRef>& w = m_waiting[p + 1];
    const bool lifo = m_lifo;
    auto before = [lifo](const ChunkRef& x, const ChunkRef& y) {
      if (x.coll != y.coll) return lifo ? x.coll > y.coll : x.coll < y.coll;
      return x.chunk < y.chunk;
    };
    w.insert(std::upper_bound(w.begin(), w.end(), c, before), c);
  } else {
    a.chunks[c.chunk].phase = static_cast<int>(a.nphases);
    m_backend.finish(c);
  }
  pump();
}

void CollectiveEngine::chunk_done(ChunkRef c) {
  Active& a = *m_colls[c.coll];
  a.plans.erase(c.chunk);
  ++a.done;
  a.completion = std::max(a.completion, now());
  if (a.done == a.chunks.size()) {
    a.c->done = true;
    a.c->completion_ps = a.completion;
    --m_in_flight;
    m_done(*a.c);
    // What only a collective in flight needs goes now.
    std::vector<Task>().swap(a.tasks);
    std::vector<ChunkState>().swap(a.chunks);
  }
  pump();
}

std::string CollectiveEngine::progress() const {
  std::string out;
  for (const auto& a : m_colls) {
    if (a->c->done) continue;
    out += fmt::format("{}{} on communicator {} (#{}): {} of {} chunks done", out.empty() ? "" : "; ",
                       collective_name(a->c->plan().kind()), a->c->id.comm, a->c->id.seq, a->done, a->chunks.size());
  }
  return out;
}

}  // namespace fabricvp::npu
