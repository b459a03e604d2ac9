// Things to do at simulated times, in a fixed order: the one timed queue of
// fabricvp.
//
// TimedHeap<T> is a min-heap (4-ary) of items keyed by (time, order,
// sequence): equal times are taken in `order`, then in the order they were
// pushed (or by an explicit sequence number), so a run never depends on how a
// heap breaks ties. It has no SystemC in it; the TSP's data timeline drains
// one lazily, the HAC network keeps its slots and received codes in them.
//
// ActionQueue runs actions at their simulated time from one SC_METHOD:
// at(t, fn) posts a function; post(t, actor, what, arg) posts a typed action
// (core::Actor::act(what, arg)) that costs no allocation, for the modules that
// run one per message. Actions at equal times run in the order they were
// posted. One queue may serve many modules (all NPUs, links and switches of a
// fabric share their system's): SystemC then wakes once per distinct time,
// not once per module and action. NPU endpoints and the ACE run every
// message, DMA and datapath batch as one action at its exact completion time,
// never one event per byte.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include <systemc>

namespace fabricvp::core {

struct TimeKey {
  uint64_t t = 0;      ///< simulated time (ps, or cycles of a clock)
  uint64_t order = 0;  ///< at equal t, lower first
  uint64_t seq = 0;    ///< at equal (t, order), lower first
  bool operator<(const TimeKey& o) const {
    if (t != o.t) return t < o.t;
    if (order != o.order) return order < o.order;
    return seq < o.seq;
  }
};

/// Items by (time, order, sequence). Stored with their key, or, when KeyOf is
/// given, the key is read from the item itself (KeyOf{}(item) -> const
/// TimeKey&; it must not change while the item is in the heap): items that
/// carry their key cost no more than a pointer (the TSP timeline's cursors).
template <typename T, typename KeyOf = void>
class TimedHeap {
  static constexpr bool kStored = std::is_void_v<KeyOf>;
  using Entry = std::conditional_t<kStored, std::pair<TimeKey, T>, T>;

 public:
  bool empty() const { return m_heap.empty(); }
  size_t size() const { return m_heap.size(); }
  /// Push with the next sequence number of this heap.
  void push(uint64_t t, T item, uint64_t order = 0) {
    static_assert(kStored, "a heap that reads keys from its items takes push(item)");
    push(TimeKey{t, order, m_seq++}, std::move(item));
  }
  /// Push with an explicit key (keys must differ from every other key in the heap).
  void push(const TimeKey& k, T item) {
    static_assert(kStored, "a heap that reads keys from its items takes push(item)");
    m_heap.emplace_back(k, std::move(item));
    sift_up(m_heap.size() - 1);
  }
  /// Push an item that carries its key.
  void push(T item) {
    static_assert(!kStored, "this heap stores keys: push(time, item) or push(key, item)");
    m_heap.push_back(std::move(item));
    sift_up(m_heap.size() - 1);
  }
  const TimeKey& top_key() const { return key(m_heap.front()); }
  T& top() { return value(m_heap.front()); }
  /// Remove and return the earliest item.
  T pop() {
    T item = std::move(value(m_heap.front()));
    if (m_heap.size() > 1) {
      Entry last = std::move(m_heap.back());
      m_heap.pop_back();
      sift_down(std::move(last));
    } else {
      m_heap.pop_back();
    }
    return item;
  }
  void clear() { m_heap.clear(); }
  /// Sequence number the next push() will use (for keys made elsewhere).
  uint64_t next_seq() { return m_seq++; }
  /// Every item, in heap order (for destruction).
  std::vector<T> items() const {
    std::vector<T> out;
    for (const Entry& e : m_heap) out.push_back(value(e));
    return out;
  }

 private:
  static const TimeKey& key(const Entry& e) {
    if constexpr (kStored)
      return e.first;
    else
      return KeyOf{}(e);
  }
  static T& value(Entry& e) {
    if constexpr (kStored)
      return e.second;
    else
      return e;
  }
  static const T& value(const Entry& e) {
    if constexpr (kStored)
      return e.second;
    else
      return e;
  }
  static constexpr size_t kArity = 4;  // shallower than a binary heap: fewer cache lines per push and pop
  void sift_up(size_t i) {
    Entry e = std::move(m_heap[i]);
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!(key(e) < key(m_heap[parent]))) break;
      m_heap[i] = std::move(m_heap[parent]);
      i = parent;
    }
    m_heap[i] = std::move(e);
  }
  /// Put `e` in the root's place and move it down.
  void sift_down(Entry e) {
    const size_t n = m_heap.size();
    size_t i = 0;
    for (;;) {
      const size_t first = kArity * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = std::min(first + kArity, n);
      for (size_t c = first + 1; c < end; ++c)
        if (key(m_heap[c]) < key(m_heap[best])) best = c;
      if (!(key(m_heap[best]) < key(e))) break;
      m_heap[i] = std::move(m_heap[best]);
      i = best;
    }
    m_heap[i] = std::move(e);
  }
  std::vector<Entry> m_heap;
  uint64_t m_seq = 0;
};

/// A module that receives typed actions (ActionQueue::post): `what` says
/// which of its actions, `arg` what it is about (a message index, a chunk).
class Actor {
 public:
  virtual void act(uint32_t what, uint64_t arg) = 0;

 protected:
  ~Actor() = default;
};

class ActionQueue {
 public:
  /// Spawns the queue's SC_METHOD `name` in the module under construction.
  explicit ActionQueue(const char* name);
  ActionQueue(const ActionQueue&) = delete;
  ActionQueue& operator=(const ActionQueue&) = delete;

  /// Run `fn` at simulated time t (ps, >= now). Throws std::logic_error for a time in the past.
  void at(uint64_t t, std::function<void()> fn);
  /// Call who.act(what, arg) at simulated time t (ps, >= now); same order and checks as at().
  void post(uint64_t t, Actor& who, uint32_t what, uint64_t arg = 0) { push(Action{t, &who, arg, what}); }
  static uint64_t now() { return sc_core::sc_time_stamp().value(); }
  /// now(), read once per wake-up while the queue runs its actions.
  uint64_t time() const { return m_in_wake ? m_now : now(); }
  bool idle() const { return m_actions.empty(); }

 private:
  struct Action {
    uint64_t t;
    Actor* who;  ///< nullptr: run m_fns[arg]
    uint64_t arg;
    uint32_t what;
  };
  /// A radix heap (Ahuja et al.): nothing is posted before the last time
  /// taken, so bucket i holds the actions whose time first differs from it in
  /// bit i - 1, and bucket 0 those at that time, in posting order. A post is
  /// an append, an action moves down at most 64 buckets in its life; actions
  /// of equal time always share a bucket and keep their order.
  class Radix {
   public:
    bool empty() const { return m_size == 0; }
    void push(const Action& a) {
      m_b[bucket(a.t)].push_back(a);
      ++m_size;
    }
    /// Time of the earliest action (not empty). Changes nothing: actions
    /// may still be posted at any time from now on.
    uint64_t top_time() const {
      if (m_head < m_b[0].size()) return m_last;
      size_t i = 1;
      while (m_b[i].empty()) ++i;
      uint64_t least = m_b[i].front().t;
      for (const Action& a : m_b[i]) least = std::min(least, a.t);
      return least;
    }
    /// Whether an action is due at or before `t`; if so pop() takes the earliest.
    bool due(uint64_t t) {
      if (m_head < m_b[0].size()) return m_last <= t;
      if (m_size == 0) return false;
      size_t i = 1;
      while (m_b[i].empty()) ++i;
      std::vector<Action>& from = m_b[i];
      uint64_t least = from.front().t;
      for (const Action& a : from) least = std::min(least, a.t);
      if (least > t) return false;
      m_last = least;                                              // nothing can be posted before it any more
      for (const Action& a : from) m_b[bucket(a.t)].push_back(a);  // into lower buckets, in order
      from.clear();
      return true;
    }
    /// The earliest action, first posted first (after due() said there is one).
    Action pop() {
      --m_size;
      if (m_head + kAhead < m_b[0].size()) {  // the actor of an action soon due: likely not in cache
        const char* who = reinterpret_cast<const char*>(m_b[0][m_head + kAhead].who);
        if (who) {  // (an action without an actor: nothing to fetch, and null + 64 is undefined)
          __builtin_prefetch(who);
          __builtin_prefetch(who + 64);
        }
      }
      const Action a = m_b[0][m_head++];
      if (m_head == m_b[0].size()) {
        m_b[0].clear();
        m_head = 0;
      }
      return a;
    }

   private:
    static constexpr size_t kAhead = 2;
    size_t bucket(uint64_t t) const { return t == m_last ? 0 : 64 - static_cast<size_t>(__builtin_clzll(t ^ m_last)); }
    std::vector<Action> m_b[65];
    size_t m_head = 0;  // bucket 0 is taken from the front
    size_t m_size = 0;
    uint64_t m_last = 0;
  };
  void push(const Action& a);
  void wake();
  Radix m_actions;
  std::vector<std::function<void()>> m_fns;  // functions posted with at(), by slot
  std::vector<uint64_t> m_free_fns;          // their free slots
  sc_core::sc_event m_wake;
  uint64_t m_scheduled = ~uint64_t(0);  // the time the SC_METHOD is notified for
  uint64_t m_now = 0;                   // while in wake()
  bool m_in_wake = false;
};

}  // namespace fabricvp::core
