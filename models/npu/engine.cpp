#include "models/npu/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fabricvp::npu {

namespace {
uint64_t pack(ChunkRef c) { return uint64_t(c.coll) << 32 | c.chunk; }
ChunkRef unpack(uint64_t v) { return ChunkRef{static_cast<uint32_t>(v >> 32), static_cast<uint32_t>(v)}; }
}  // namespace

CollectiveEngine::CollectiveEngine(const sc_core::sc_object* owner, std::string name, uint32_t npu,
                                   core::ActionQueue& actions, CommBackend& backend,
                                   std::function<void(Message&)> transmit, std::function<void(const Collective&)> done)
    : core::Actor(true),
      m_actions(actions),
      m_backend(backend),
      m_transmit(std::move(transmit)),
      messages_sent(owner, "messages_sent", "messages", "messages handed to the AFI", m_hot.messages_sent),
      messages_received(owner, "messages_received", "messages", "messages received by the AFI",
                        m_hot.messages_received),
      bytes_sent(owner, "bytes_sent", "bytes", "payload bytes sent (network bytes)", m_hot.bytes_sent),
      bytes_received(owner, "bytes_received", "bytes", "payload bytes received", m_hot.bytes_received),
      reduce_steps(owner, "reduce_steps", "steps", "reduce steps (a received message added to local data)",
                   m_hot.reduce_steps),
      reduced_bytes(owner, "reduced_bytes", "bytes", "bytes of messages added to local data", m_hot.reduced_bytes),
      peak_in_buffer_bytes(owner, "peak_in_buffer_bytes", "bytes",
                           "most bytes received and waiting for their ring step (input buffers of all ports)",
                           m_hot.peak_in_buffer_bytes),
      m_name(std::move(name)),
      m_npu(npu),
      m_done(std::move(done)) {}

void CollectiveEngine::submit(std::shared_ptr<Collective> c) {
  const uint64_t key = c->id.key();
  if (m_by_id.count(key))
    throw std::logic_error(
        fmt::format("{}: collective {} on communicator {} submitted twice", m_name, c->id.seq, c->id.comm));
  // A finished collective's slot (and its vectors' storage) if there is one.
  uint32_t index;
  if (m_free_slots.empty()) {
    index = static_cast<uint32_t>(m_colls.size());
    m_colls.push_back(std::make_unique<Active>());
  } else {
    index = m_free_slots.back();
    m_free_slots.pop_back();
  }
  Active& e = *m_colls[index];
  const CollectivePlan& plan = c->plan();
  e.seq = m_submitted++;
  e.nphases = plan.phases();
  e.kmax = 1;
  for (uint32_t p = 0; p < e.nphases; ++p) e.kmax = std::max(e.kmax, plan.rings(p));
  e.roles.assign(size_t(e.nphases) * e.kmax, RingRole{});
  e.after.assign(size_t(e.nphases) * e.kmax, -1);
  for (uint32_t p = 0; p < e.nphases; ++p)
    for (uint32_t q = 0; q < plan.rings(p); ++q) {
      e.roles[p * e.kmax + q] = plan.ring(p, q);
      const int32_t after = plan.ring_after(p, q);
      if (after >= static_cast<int32_t>(q) || after < -1)
        throw std::logic_error(
            fmt::format("{}: ring {} of phase {} waits for ring {} (must be an earlier one)", m_name, q, p, after));
      e.after[p * e.kmax + q] = after;
    }
  e.chunks.resize(plan.chunks());
  e.next_load = 0;
  e.done = 0;
  e.completion = 0;
  e.timing_only = c->request.timing_only;
  e.esize = plan.esize();
  if (m_waiting.size() < e.nphases) m_waiting.resize(e.nphases);
  e.c = std::move(c);
  m_by_id.emplace(key, index);
  ++m_in_flight;
  if (!e.chunks.empty()) m_loading.emplace_back(index, e.seq);
  m_backend.admit(index, *e.c);
  // Messages that came before it was submitted here.
  auto early = m_early.find(key);
  if (early != m_early.end()) {
    const std::vector<uint32_t> msgs = std::move(early->second);
    m_early.erase(early);
    for (uint32_t msg : msgs) enqueue(e, index, msg);
  }
  m_actions.post(now(), *this, e.chunks.empty() ? kEmpty : kPump, index);
}

bool CollectiveEngine::served_before(const ChunkRef& x, const ChunkRef& y) const {
  if (x.coll != y.coll) {
    const uint64_t sx = m_colls[x.coll]->seq, sy = m_colls[y.coll]->seq;
    return m_lifo ? sx > sy : sx < sy;
  }
  return x.chunk < y.chunk;
}

const ChunkPlan& CollectiveEngine::chunk_plan(ChunkRef c) const {
  const Active& a = *m_colls[c.coll];
  if (c.chunk >= a.chunks.size() || !a.chunks[c.chunk].plan)
    throw std::logic_error(fmt::format("{}: chunk {} of collective {} is not in flight", m_name, c.chunk, c.coll));
  return *a.chunks[c.chunk].plan;
}

void CollectiveEngine::deliver(Message& m) {
  const uint32_t msg = m_pool.adopt(m);
  m_actions.post(m_pool[msg].arrival_ps, *this, kArrive, msg);
}

void CollectiveEngine::send(uint32_t msg, uint64_t ready) { m_actions.post(ready, *this, kSend, msg); }

void CollectiveEngine::prefetch(uint32_t what, uint64_t arg, unsigned stage) const {
  if (what != kArrive && what != kSend) return;
  static_assert(core::Actor::kPrefetchStages == 4, "the stages below");
  const uint32_t msg = static_cast<uint32_t>(arg);
  // An arrival most likely belongs to the collective looked up last (m_last_key names a live one).
  const bool known = what == kArrive && m_last_key != ~uint64_t(0);
  switch (stage) {
    case 0:
      m_pool.prefetch_block(msg);
      if (known) __builtin_prefetch(&m_colls[m_last_index]);
      return;
    case 1:
      m_pool.prefetch(msg);
      if (known) {
        const Active* a = m_colls[m_last_index].get();
        __builtin_prefetch(a);
        __builtin_prefetch(&a->roles);
        __builtin_prefetch(&a->chunks);
      }
      return;
  }
  // An arrival, for the collective looked up last: its chunk, then the chunk's task and plan.
  const Message& m = m_pool[msg];
  if (what != kArrive || m.coll != m_last_key) return;
  const Active& a = *m_colls[m_last_index];
  if (m.chunk >= a.chunks.size()) return;
  const ChunkState& cs = a.chunks[m.chunk];
  if (stage == 2) {
    __builtin_prefetch(&cs);
    return;
  }
  const size_t task = size_t(m.phase) * a.kmax + m.ring;
  if (cs.tasks && task < size_t(a.nphases) * a.kmax) __builtin_prefetch(&cs.tasks[task]);
  if (cs.plan) {
    const char* plan = reinterpret_cast<const char*>(cs.plan.get());
    __builtin_prefetch(plan);
    __builtin_prefetch(plan + 64);
  }
}

void CollectiveEngine::act(uint32_t what, uint64_t arg) {
  // No call of this engine is on the stack here: the slots released so far may serve new collectives.
  if (!m_released.empty()) {
    m_free_slots.insert(m_free_slots.end(), m_released.begin(), m_released.end());
    m_released.clear();
  }
  switch (what) {
    case kArrive: on_message(static_cast<uint32_t>(arg)); return;
    case kSend: {
      const uint32_t msg = static_cast<uint32_t>(arg);
      Message& m = m_pool[msg];
      m.ready_ps = now();
      ++m_hot.messages_sent;
      m_hot.bytes_sent += m.bytes;
      m_transmit(m);  // the receiver takes the payload; the header stays
      if (m.step == 0) sent_first(m);
      m_pool.give(msg);
      return;
    }
    case kPhaseDone: phase_done(unpack(arg)); return;
    case kEmpty: {  // a collective with nothing to move: done at once
      Active& e = *m_colls[arg];
      e.c->done = true;
      e.c->completion_ps = now();
      --m_in_flight;
      m_done(*e.c);
      release(static_cast<uint32_t>(arg));
      return;
    }
    case kPump: pump(); return;
    case kStepDone: {
      const TaskRef t = m_later[arg];
      m_later_free.push_back(static_cast<uint32_t>(arg));
      finish_step(t, now());
      return;
    }
  }
  throw std::logic_error(fmt::format("{}: unknown action {}", m_name, what));
}

CollectiveEngine::Task* CollectiveEngine::tasks(Active& a, uint32_t chunk) {
  ChunkState& cs = a.chunks[chunk];
  if (!cs.tasks) {
    const size_t n = size_t(a.nphases) * a.kmax;
    if (n < m_spare_tasks.size() && !m_spare_tasks[n].empty()) {
      cs.tasks = std::move(m_spare_tasks[n].back());
      m_spare_tasks[n].pop_back();
      std::fill_n(cs.tasks.get(), n, Task{});
    } else {
      cs.tasks = std::make_unique<Task[]>(n);
    }
  }
  return cs.tasks.get();
}

CollectiveEngine::Task* CollectiveEngine::task(TaskRef t) {
  Active& a = *m_colls[t.coll];
  if (t.chunk >= a.chunks.size()) return nullptr;  // the collective is complete
  return a.chunks[t.chunk].tasks ? &a.chunks[t.chunk].tasks[t.task] : nullptr;
}

void CollectiveEngine::sent_first(const Message& m) {
  // A ring this member only sends on (a broadcast's source) is done when its
  // message has left: the data no longer needs to stay where it was read.
  const auto found = m_by_id.find(m.coll);
  if (found == m_by_id.end()) return;  // the collective is complete here (its rings released)
  const uint32_t index = found->second;
  Active& a = *m_colls[index];
  const TaskRef id{index, m.chunk, m.phase * a.kmax + m.ring};
  Task* t = task(id);
  if (!t || !t->live || t->total != 0 || a.chunks[m.chunk].phase != m.phase) return;
  t->live = false;
  ring_done(ChunkRef{index, m.chunk}, m.ring, now());
}

uint32_t CollectiveEngine::header(const Active& a, uint32_t chunk, uint32_t phase, uint32_t ring, uint32_t step) {
  const uint32_t id = m_pool.take();
  Message& m = m_pool[id];
  const RingRole& role = a.roles[phase * a.kmax + ring];
  m.src = m_npu;
  m.dst = role.next;
  m.coll = a.c->id.key();
  m.chunk = chunk;
  m.phase = static_cast<uint16_t>(phase);
  m.ring = static_cast<uint16_t>(ring);
  m.step = static_cast<uint16_t>(step);
  m.tx_port = role.port;
  return id;
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
  // New chunks, first come first served (or last, with LIFO). Loading
  // stops at the first refusal, so the collectives with every chunk loaded
  // are always at the served end of the list.
  for (;;) {
    uint32_t i = 0;
    bool any = false;
    while (m_loading_head < m_loading.size()) {
      const auto [slot, seq] = m_lifo ? m_loading.back() : m_loading[m_loading_head];
      i = slot;
      const Active& a = *m_colls[i];
      if (a.c && a.seq == seq && a.next_load < a.chunks.size()) {
        any = true;
        break;
      }
      if (m_lifo)
        m_loading.pop_back();
      else
        ++m_loading_head;
    }
    if (!any) {
      m_loading.clear();
      m_loading_head = 0;
      return;
    }
    if (m_loading_head > 64 && m_loading_head * 2 > m_loading.size()) {  // drop the loaded prefix now and then
      m_loading.erase(m_loading.begin(), m_loading.begin() + static_cast<std::ptrdiff_t>(m_loading_head));
      m_loading_head = 0;
    }
    Active& a = *m_colls[i];
    const ChunkRef c{i, a.next_load};
    if (!m_backend.try_enter(c, 0)) return;
    ++a.next_load;
    a.chunks[c.chunk].plan = a.c->plan().chunk(c.chunk);
    tasks(a, c.chunk);
    m_backend.load(c);
  }
}

void CollectiveEngine::loaded(ChunkRef c) { start_phase(c, 0); }

void CollectiveEngine::start_phase(ChunkRef c, uint32_t p) {
  Active& a = *m_colls[c.coll];
  ChunkState& cs = a.chunks[c.chunk];
  Task* ts = tasks(a, c.chunk);
  cs.phase = static_cast<int>(p);
  cs.rings_left = 0;
  cs.phase_end = now();
  const uint32_t K = a.c->plan().rings(p);
  for (uint32_t q = 0; q < K; ++q) {
    const RingRole& role = a.roles[p * a.kmax + q];
    if (!role.active()) continue;
    // A ring it receives on is done after its last receive; one it only sends
    // on, when that message has left (sent_first).
    Task& t = ts[p * a.kmax + q];
    t.step = 0;
    t.total = role.receives;
    t.free_ps = now();
    t.busy = false;
    t.live = true;
    ++cs.rings_left;
  }
  const ChunkPlan& plan = *cs.plan;
  for (uint32_t q = 0; q < K; ++q) {
    const RingRole& role = a.roles[p * a.kmax + q];
    if (!role.sends_first) continue;
    const uint32_t msg = header(a, c.chunk, p, q, 0);
    if (a.timing_only)
      m_backend.send_local(c, msg, Span{}, plan.first_send_elems(p, q));
    else {
      const Span span = plan.first_send(p, q);
      m_backend.send_local(c, msg, span, span.elems());
    }
  }
  if (cs.rings_left == 0) {
    m_actions.post(now(), *this, kPhaseDone, pack(c));
    return;
  }
  for (uint32_t q = 0; q < K; ++q)
    if (a.roles[p * a.kmax + q].active()) try_receive(TaskRef{c.coll, c.chunk, p * a.kmax + q});
}

void CollectiveEngine::enqueue(Active& a, uint32_t coll, uint32_t msg) {
  const Message& m = m_pool[msg];
  if (m.chunk >= a.chunks.size() || m.phase >= a.nphases || m.ring >= a.kmax)
    throw std::logic_error(
        fmt::format("{}: a message for chunk {} phase {} ring {} of collective {:#x}, which has {} "
                    "chunks, {} phases, {} rings",
                    m_name, m.chunk, m.phase, m.ring, m.coll, a.chunks.size(), a.nphases, a.kmax));
  (void)coll;
  Task& t = tasks(a, m.chunk)[m.phase * a.kmax + m.ring];
  // Messages of a ring come in step order nearly always: append, else walk.
  uint32_t* link = &t.head;
  if (t.tail != MessagePool::kNone && m_pool[t.tail].step < m.step) link = &m_pool.next(t.tail);
  while (*link != MessagePool::kNone && m_pool[*link].step < m.step) link = &m_pool.next(*link);
  if (*link != MessagePool::kNone && m_pool[*link].step == m.step)
    throw std::logic_error(
        fmt::format("{}: message of collective {:#x} chunk {} phase {} ring {} step {} received twice", m_name, m.coll,
                    m.chunk, m.phase, m.ring, m.step));
  m_pool.next(msg) = *link;
  if (*link == MessagePool::kNone) t.tail = msg;
  *link = msg;
}

void CollectiveEngine::on_message(uint32_t msg) {
  const Message& m = m_pool[msg];
  ++m_hot.messages_received;
  m_hot.bytes_received += m.bytes;
  m_hot.inbox_bytes += m.bytes;
  m_hot.peak_in_buffer_bytes = std::max(m_hot.peak_in_buffer_bytes, m_hot.inbox_bytes);
  uint32_t index;
  if (m.coll == m_last_key) {
    index = m_last_index;
  } else {
    auto it = m_by_id.find(m.coll);
    if (it == m_by_id.end()) {  // its collective is not submitted here yet
      m_early[m.coll].push_back(msg);
      return;
    }
    index = it->second;
    m_last_key = m.coll;
    m_last_index = index;
  }
  Active& a = *m_colls[index];
  const TaskRef id{index, m.chunk, m.phase * a.kmax + m.ring};
  enqueue(a, index, msg);
  try_receive(id);
}

void CollectiveEngine::try_receive(TaskRef id) {
  Active& a = *m_colls[id.coll];
  const uint32_t p = id.task / a.kmax, q = id.task % a.kmax;
  for (;;) {
    Task* tp = task(id);
    if (!tp) return;
    Task& t = *tp;
    if (!t.live || t.busy || t.step >= t.total || a.chunks[id.chunk].phase != static_cast<int>(p)) return;
    uint64_t start = std::max(now(), t.free_ps);
    const int32_t after = a.after[id.task];
    if (after >= 0) {
      const Task& before = a.chunks[id.chunk].tasks[p * a.kmax + static_cast<uint32_t>(after)];
      if (before.live && before.step < before.total) return;  // ring_done retries when it has taken them all
      start = std::max(start, before.free_ps);
    }
    const uint32_t first = a.roles[id.task].first_step;
    const uint32_t msg = t.head;
    if (msg == MessagePool::kNone || m_pool[msg].step != first + t.step) return;
    t.head = m_pool.next(msg);
    if (t.head == MessagePool::kNone) t.tail = MessagePool::kNone;
    const Message& in = m_pool[msg];
    m_hot.inbox_bytes -= in.bytes;
    const ChunkPlan& plan = *a.chunks[id.chunk].plan;
    Step step;
    if (a.timing_only) {
      step = plan.shape(p, q, t.step);
    } else {
      step = plan.step(p, q, t.step);
      step.elems = step.local.elems();
    }
    const uint64_t expect = (step.elems + step.passthrough) * a.esize;
    if (expect != in.bytes || (!in.data.empty() && in.data.size() != in.bytes))
      throw std::logic_error(fmt::format("{}: chunk {} phase {} ring {} step {}: {} bytes received for a {}-byte step",
                                         m_name, id.chunk, p, q, t.step, in.bytes, expect));
    t.busy = true;
    t.in_receive = true;
    t.done_inside = false;
    const uint32_t fwd = step.forward ? header(a, id.chunk, p, q, first + t.step + 1) : MessagePool::kNone;
    m_backend.receive(id, msg, step, fwd, start);
    m_pool.give(msg);
    // The backend may have finished the step (and with it the chunk) inside receive().
    tp = task(id);
    if (!tp) return;
    tp->in_receive = false;
    if (!tp->done_inside) return;  // it reports later
  }
}

void CollectiveEngine::step_done(TaskRef id, uint64_t ready) {
  Task* tp = task(id);
  if (!tp || !tp->busy)
    throw std::logic_error(fmt::format("{}: step_done for a ring step that is not in progress", m_name));
  if (ready < now())
    throw std::logic_error(
        fmt::format("{}: a step's result in place at {} ps, before now ({} ps)", m_name, ready, now()));
  if (ready > now() && !m_backend.books_ahead()) {  // the ring moves on when the result is in place
    uint32_t slot;
    if (m_later_free.empty()) {
      slot = static_cast<uint32_t>(m_later.size());
      m_later.push_back(id);
    } else {
      slot = m_later_free.back();
      m_later_free.pop_back();
      m_later[slot] = id;
    }
    m_actions.post(ready, *this, kStepDone, slot);
    return;
  }
  finish_step(id, ready);
}

void CollectiveEngine::finish_step(TaskRef id, uint64_t ready) {
  Task& t = *task(id);
  t.busy = false;
  t.free_ps = ready;
  if (t.in_receive) t.done_inside = true;
  if (++t.step < t.total) {
    if (!t.in_receive) try_receive(id);
    return;
  }
  t.live = false;
  ring_done(ChunkRef{id.coll, id.chunk}, id.task % m_colls[id.coll]->kmax, ready);
}

void CollectiveEngine::ring_done(ChunkRef c, uint32_t ring, uint64_t ready) {
  Active& a = *m_colls[c.coll];
  ChunkState& cs = a.chunks[c.chunk];
  cs.phase_end = std::max(cs.phase_end, ready);
  if (--cs.rings_left == 0) {
    if (cs.phase_end > now())
      m_actions.post(cs.phase_end, *this, kPhaseDone, pack(c));
    else
      phase_done(c);
    return;
  }
  const uint32_t p = static_cast<uint32_t>(cs.phase);
  const uint32_t K = a.c->plan().rings(p);
  for (uint32_t q = ring + 1; q < K; ++q)
    if (a.after[p * a.kmax + q] == static_cast<int32_t>(ring)) try_receive(TaskRef{c.coll, c.chunk, p * a.kmax + q});
}

void CollectiveEngine::phase_done(ChunkRef c) {
  Active& a = *m_colls[c.coll];
  const uint32_t p = static_cast<uint32_t>(a.chunks[c.chunk].phase);
  m_backend.leave(c, p);
  if (p + 1 < a.nphases) {
    std::vector<ChunkRef>& w = m_waiting[p + 1];
    w.insert(std::upper_bound(w.begin(), w.end(), c,
                              [this](const ChunkRef& x, const ChunkRef& y) { return served_before(x, y); }),
             c);
  } else {
    a.chunks[c.chunk].phase = static_cast<int>(a.nphases);
    m_backend.finish(c);
  }
  pump();
}

void CollectiveEngine::chunk_done(ChunkRef c) {
  Active& a = *m_colls[c.coll];
  ChunkState& cs = a.chunks[c.chunk];
  cs.plan.reset();
  // Its task array serves a later chunk of the same shape (an op graph runs a collective per transfer).
  const size_t n = size_t(a.nphases) * a.kmax;
  if (cs.tasks && n <= kSpareTasksMax) {
    if (m_spare_tasks.size() <= n) m_spare_tasks.resize(n + 1);
    m_spare_tasks[n].push_back(std::move(cs.tasks));
  }
  cs.tasks.reset();
  ++a.done;
  a.completion = std::max(a.completion, now());
  if (a.done == a.chunks.size()) {
    a.c->done = true;
    a.c->completion_ps = a.completion;
    --m_in_flight;
    m_done(*a.c);
    release(c.coll);
  }
  pump();
}

void CollectiveEngine::release(uint32_t index) {
  // No message of a complete collective reaches this engine again: its
  // lookup entry goes, and its slot serves the next collective submitted.
  Active& a = *m_colls[index];
  const uint64_t key = a.c->id.key();
  m_by_id.erase(key);
  if (m_last_key == key) m_last_key = ~uint64_t(0);
  a.c.reset();
  a.chunks.clear();
  m_released.push_back(index);
}

std::string CollectiveEngine::progress() const {
  std::string out;
  for (const auto& a : m_colls) {
    if (!a->c || a->c->done) continue;
    out +=
        fmt::format("{}{} on communicator {} (#{}): {} of {} chunks done", out.empty() ? "" : "; ",
                    collective_name(a->c->plan().kind()), a->c->id.comm, a->c->id.seq, a->done, a->c->plan().chunks());
  }
  return out;
}

}  // namespace fabricvp::npu
