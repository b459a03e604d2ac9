// sc_spawn needs the dynamic-process API, declared only with this macro set
// before the first <systemc>.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "models/core/timed_queue.h"

#include <fmt/format.h>

#include <stdexcept>

#include "models/core/context.h"

namespace fabricvp::core {

ActionQueue::ActionQueue(const char* name) {
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  opts.dont_initialize();
  opts.set_sensitivity(&m_wake);
  sc_core::sc_spawn([this] { wake(); }, name, &opts);
}

void ActionQueue::at(uint64_t t, std::function<void()> fn) {
  uint64_t slot;
  if (m_free_fns.empty()) {
    slot = m_fns.size();
    m_fns.push_back(std::move(fn));
  } else {
    slot = m_free_fns.back();
    m_free_fns.pop_back();
    m_fns[slot] = std::move(fn);
  }
  push(t, Action{nullptr, slot, 0});
}

void ActionQueue::push(uint64_t t, const Action& a) {
  const uint64_t n = time();
  if (t < n) throw std::logic_error(fmt::format("action at {} ps posted at {} ps", t, n));
  m_actions.push(t, a);
  if (!m_in_wake && t < m_scheduled) {
    m_wake.notify(sc_core::sc_time::from_value(t - n));
    m_scheduled = t;
  }
}

void ActionQueue::wake() {
  const uint64_t n = now();
  m_now = n;
  m_in_wake = true;
  try {
    run_due(n);
  } catch (const ConfigError& e) {  // an input found wrong when used: the run ends with it (Context)
    m_in_wake = false;
    Context::get().config_failure(e);
    return;
  }
  m_in_wake = false;
  m_scheduled = ~uint64_t(0);
  if (!m_actions.empty()) {
    m_scheduled = m_actions.top_time();
    m_wake.notify(sc_core::sc_time::from_value(m_scheduled - n));
  }
}

void ActionQueue::run_due(uint64_t n) {
  while (m_actions.due(n)) {
    const Action a = m_actions.take();
    // Actions of one time run back to back, and with many endpoints each
    // finds its actor's state out of the cache: request the actor's first
    // lines kAhead[0] actions on, then let it follow its pointers one link per
    // stage as its action comes nearer.
    const auto [next, count] = m_actions.following();
    if (count >= kAhead[0] && next[kAhead[0] - 1].item.who) {
      const char* who = reinterpret_cast<const char*>(next[kAhead[0] - 1].item.who);
      for (size_t line = 0; line < kActorLines; ++line) __builtin_prefetch(who + 64 * line);
    }
    for (unsigned stage = kStages; stage-- > 0 && count >= kAhead[stage + 1];) {  // nearest first
      const Action& soon = next[kAhead[stage + 1] - 1].item;
      if (soon.who && soon.who->prefetches()) soon.who->prefetch(soon.what, soon.arg, stage);
    }
    if (a.who) {
      a.who->act(a.what, a.arg);
    } else {
      std::function<void()> fn = std::move(m_fns[a.arg]);
      m_free_fns.push_back(a.arg);
      fn();
    }
  }
}

}  // namespace fabricvp::core
