// Things to do at simulated times, in a fixed order: the one timed queue of
// fabricvp.
//
// TimedHeap<T> is a min-heap (4-ary) of items keyed by (time, order,
// sequence): equal times are taken in `order`, then in the order they were
// pushed (or by an explicit sequence number), so a run never depends on how a
// heap breaks ties. It has no SystemC in it; the TSP's data timeline drains
// one lazily, the HAC network keeps its slots and received codes in them.
// TimeCalendar<T> keeps items by exact time, in push order within a time,
// for a clock that never goes back (the action queue's store: a radix heap).
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
#include <stdexcept>
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

/// Items by time, each time's items in the order they were pushed; a time
/// may not be pushed once a later one has been taken (a simulation's clock):
/// a radix heap. An item sits in the bucket of the highest bit in which its
/// time differs from the time taken last, so all items of one time share a
/// bucket; bucket 0 holds that time's items, first pushed first. When it runs
/// out, the lowest non-empty bucket's items move down, in order, in one
/// sequential pass, and the earliest of them land in bucket 0. An item is so
/// moved a few times at most and never sifted through a heap's levels or
/// looked up in a table: a few sequential writes per item, whether many items
/// share a time (every NPU of a ring at each step) or each has its own (the
/// messages of the SiP-ML fabrics). Items pushed at the time being taken join
/// bucket 0 and are taken in the same round.
template <typename T>
class TimeCalendar {
 public:
  struct Entry {
    uint64_t t;
    T item;
  };
  bool empty() const { return m_size == 0; }
  size_t size() const { return m_size; }
  /// Throws std::logic_error for a time before the one taken last.
  void push(uint64_t t, const T& item) {
    if (t < m_last) throw std::logic_error("TimeCalendar: a time before the one taken last");
    const unsigned b = bucket(t);
    m_b[b].push_back(Entry{t, item});
    if (b) {
      m_used |= bit(b);
      if (m_top_known && t < m_top) m_top = t;
    }
    ++m_size;
  }
  /// Time of the earliest item (not empty).
  uint64_t top_time() const {
    if (m_head < m_b[0].size()) return m_last;
    if (!m_top_known) {
      const std::vector<Entry>& low = m_b[lowest()];
      m_top = low.front().t;
      for (const Entry& e : low) m_top = std::min(m_top, e.t);
      m_top_known = true;
    }
    return m_top;
  }
  /// Whether an item is due at or before `t`; if so take() returns the earliest.
  bool due(uint64_t t) {
    if (m_head < m_b[0].size()) return m_last <= t;
    empty_out(m_b[0]);
    m_head = 0;
    if (m_size == 0 || top_time() > t) return false;
    const unsigned from = lowest();
    m_last = m_top;
    std::vector<Entry>& moving = m_b[from];
    for (const Entry& e : moving) {
      const unsigned b = bucket(e.t);  // below `from`: e.t and m_last agree above bit from - 1
      m_b[b].push_back(e);
      if (b) m_used |= bit(b);
    }
    m_used &= ~bit(from);
    empty_out(moving);
    m_top_known = false;
    return true;
  }
  /// The earliest item, first pushed first (after due() said there is one).
  const T& take() {
    --m_size;
    return m_b[0][m_head++].item;
  }
  /// After take(): the items after it at the same time, in order, and how
  /// many (valid until the next push() or due()): a caller may prefetch what
  /// they point to.
  std::pair<const Entry*, size_t> following() const {
    const std::vector<Entry>& now = m_b[0];
    return {now.data() + m_head, now.size() - m_head};
  }

 private:
  static constexpr size_t kRetain = size_t{1} << 16;
  unsigned bucket(uint64_t t) const {
    return t == m_last ? 0u : 64u - static_cast<unsigned>(__builtin_clzll(t ^ m_last));
  }
  static uint64_t bit(unsigned b) { return uint64_t{1} << (b - 1); }
  /// A bucket emptied: it keeps its room for the next items unless that is more than kRetain and than the
  /// items waiting (the room of a burst, given back).
  void empty_out(std::vector<Entry>& v) const {
    if (v.capacity() > std::max(kRetain, m_size))
      std::vector<Entry>().swap(v);
    else
      v.clear();
  }
  /// The lowest non-empty bucket above 0 (bucket 0 taken, some item waiting).
  unsigned lowest() const { return 1u + static_cast<unsigned>(__builtin_ctzll(m_used)); }

  std::vector<Entry> m_b[65];  // bucket 0: the time taken last; bucket b: highest differing bit b - 1
  size_t m_head = 0;           // bucket 0's next item
  uint64_t m_used = 0;         // bit b - 1: bucket b holds items
  uint64_t m_last = 0;         // the time taken last
  size_t m_size = 0;
  mutable uint64_t m_top = 0;  // the earliest time above bucket 0, when m_top_known
  mutable bool m_top_known = false;
};

/// A module that receives typed actions (ActionQueue::post): `what` says
/// which of its actions, `arg` what it is about (a message index, a chunk).
class Actor {
 public:
  virtual void act(uint32_t what, uint64_t arg) = 0;
  /// Prefetch stages (see prefetch()).
  static constexpr unsigned kPrefetchStages = 4;
  /// Called before act(what, arg) runs, at most once per stage (0 to
  /// kPrefetchStages - 1, fewer actions ahead at each; an action that comes
  /// up fewer places ahead skips the earlier stages), with the actor's first
  /// cache lines requested before stage 0 if it was far enough ahead: request
  /// what act() will read (__builtin_prefetch), reading only what earlier
  /// stages requested, without changing any state. A chain of pointers is so
  /// followed one link per stage.
  virtual void prefetch(uint32_t what, uint64_t arg, unsigned stage) const {
    (void)what;
    (void)arg;
    (void)stage;
  }
  /// Whether prefetch() is worth calling (set by an actor that has one).
  bool prefetches() const { return m_prefetches; }

 protected:
  explicit Actor(bool prefetches = false) : m_prefetches(prefetches) {}
  ~Actor() = default;

 private:
  bool m_prefetches;
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
  void post(uint64_t t, Actor& who, uint32_t what, uint64_t arg = 0) { push(t, Action{&who, arg, what}); }
  static uint64_t now() { return sc_core::sc_time_stamp().value(); }
  /// now(), read once per wake-up while the queue runs its actions.
  uint64_t time() const { return m_in_wake ? m_now : now(); }
  bool idle() const { return m_actions.empty(); }

 private:
  struct Action {  ///< its time is the calendar's
    Actor* who;    ///< nullptr: run m_fns[arg]
    uint64_t arg;
    uint32_t what;
  };
  /// Actions ahead of the one running: the actor's first kActorLines lines
  /// requested at kAhead[0], Actor::prefetch stage i at kAhead[i + 1].
  static constexpr unsigned kStages = Actor::kPrefetchStages;
  static constexpr size_t kAhead[kStages + 1] = {10, 8, 6, 4, 2}, kActorLines = 4;
  void push(uint64_t t, const Action& a);
  void wake();
  void run_due(uint64_t n);  ///< the actions due at n, those they post at n included
  TimeCalendar<Action> m_actions;
  std::vector<std::function<void()>> m_fns;  // functions posted with at(), by slot
  std::vector<uint64_t> m_free_fns;          // their free slots
  sc_core::sc_event m_wake;
  uint64_t m_scheduled = ~uint64_t(0);  // the time the SC_METHOD is notified for
  uint64_t m_now = 0;                   // while in wake()
  bool m_in_wake = false;
};

}  // namespace fabricvp::core
