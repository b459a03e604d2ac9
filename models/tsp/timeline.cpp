#include "models/tsp/timeline.h"

namespace fabricvp::tsp {

Timeline::~Timeline() {
  for (Cursor* c : m_heap.items()) delete c;
}

void Timeline::add(std::unique_ptr<Cursor> c) { m_heap.push(c.release()); }

void Timeline::run(uint64_t horizon, const bool& stop) {
  while (!m_heap.empty() && !stop) {
    if (m_heap.top_key().t > horizon) break;
    Cursor* c = m_heap.pop();
    // Run this cursor while it stays the earliest (common when bursts do not interleave).
    bool alive;
    do {
      m_current = c->key.t;
      ++m_ops;
      alive = c->step();
    } while (alive && !stop && c->key.t <= horizon && (m_heap.empty() || c->key < m_heap.top_key()));
    if (alive)
      m_heap.push(c);
    else
      delete c;
  }
}

}  // namespace fabricvp::tsp
