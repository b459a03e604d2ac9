#include "models/tsp/timeline.h"

#include <algorithm>

namespace fabricvp::tsp {

namespace {
struct Later {
  bool operator()(const Cursor* a, const Cursor* b) const { return b->key < a->key; }
};
}  // namespace

Timeline::~Timeline() {
  for (Cursor* c : m_heap) delete c;
}

void Timeline::add(std::unique_ptr<Cursor> c) {
  m_heap.push_back(c.release());
  std::push_heap(m_heap.begin(), m_heap.end(), Later{});
}

void Timeline::run(uint64_t horizon, const bool& stop) {
  while (!m_heap.empty() && !stop) {
    Cursor* c = m_heap.front();
    if (c->key.t > horizon) break;
    std::pop_heap(m_heap.begin(), m_heap.end(), Later{});
    m_heap.pop_back();
    // Run this cursor while it stays the earliest (common when bursts do not interleave).
    bool alive;
    do {
      m_current = c->key.t;
      ++m_ops;
      alive = c->step();
    } while (alive && !stop && c->key.t <= horizon && (m_heap.empty() || c->key < m_heap.front()->key));
    if (alive) {
      m_heap.push_back(c);
      std::push_heap(m_heap.begin(), m_heap.end(), Later{});
    } else {
      delete c;
    }
  }
}

}  // namespace fabricvp::tsp
