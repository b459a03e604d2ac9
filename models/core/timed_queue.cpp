// sc_spawn needs the dynamic-process API, declared only with this macro set
// before the first <systemc>.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "models/core/timed_queue.h"

#include <fmt/format.h>

#include <stdexcept>

namespace fabricvp::core {

ActionQueue::ActionQueue(const char* name) {
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  opts.dont_initialize();
  opts.set_sensitivity(&m_wake);
  sc_core::sc_spawn([this] { wake(); }, name, &opts);
}

void ActionQueue::at(uint64_t t, std::function<void()> fn) {
  const uint64_t n = now();
  if (t < n) throw std::logic_error(fmt::format("action at {} ps posted at {} ps", t, n));
  const bool earlier = m_actions.empty() || t < m_actions.top_key().t;
  m_actions.push(t, std::move(fn));
  if (!m_in_wake && earlier) m_wake.notify(sc_core::sc_time::from_value(t - n));
}

void ActionQueue::wake() {
  const uint64_t n = now();
  m_in_wake = true;
  while (!m_actions.empty() && m_actions.top_key().t <= n) {
    std::function<void()> fn = m_actions.pop();
    fn();
  }
  m_in_wake = false;
  if (!m_actions.empty()) m_wake.notify(sc_core::sc_time::from_value(m_actions.top_key().t - n));
}

}  // namespace fabricvp::core
