// Things to do at simulated times, in a fixed order: the one timed queue of
// fabricvp.
//
// TimedHeap<T> is a min-heap (4-ary) of items keyed by (time, order,
// sequence): equal times are taken in `order`, then in the order they were
// pushed (or by an explicit sequence number), so a run never depends on how a
// heap breaks ties. It has no SystemC in it; the TSP's data timeline drains
// one lazily, the HAC network keeps its slots and received codes in them.
// TimeCalendar<T> keeps items by exact time, in push order within a time
// (the action queue's store: its cost is per distinct time, not per item).
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

/// Items by exact time, each time's items in the order they were pushed; a
/// time may not be pushed once a later one has been taken (a simulation's
/// clock). A slot per distinct time holds its items, a TimedHeap orders the
/// slots' times and an open-addressing table finds a time's slot: an item is
/// written once when pushed and read once when taken, whatever the spread of
/// times, and what costs more is per distinct time. (Many items share a time
/// in the fabrics: every NPU of a ring at each step.) Items pushed at the time
/// being taken join its slot and are taken in the same round.
template <typename T>
class TimeCalendar {
 public:
  bool empty() const { return m_size == 0; }
  size_t size() const { return m_size; }
  /// Distinct times in the table: those with items, and the time taken last until due() moves on.
  size_t times() const { return m_used; }
  void push(uint64_t t, const T& item) {
    m_slots[slot_of(t)].items.push_back(item);
    ++m_size;
  }
  /// Time of the earliest item (not empty).
  uint64_t top_time() const {
    if (m_cur != kNone && m_slots[m_cur].head < m_slots[m_cur].items.size()) return m_slots[m_cur].t;
    return m_times.top_key().t;
  }
  /// Whether an item is due at or before `t`; if so take() returns the earliest.
  bool due(uint64_t t) {
    if (m_cur != kNone) {
      const Slot& s = m_slots[m_cur];
      if (s.head < s.items.size()) return s.t <= t;
      release(m_cur);
      m_cur = kNone;
    }
    if (m_times.empty() || m_times.top_key().t > t) return false;
    m_cur = m_times.pop();
    return true;
  }
  /// The earliest item, first pushed first (after due() said there is one).
  /// `ahead` (optional) is the item `kAhead` places later in the same time, or
  /// nullptr: a caller may prefetch what it points to.
  const T& take(const T** ahead = nullptr) {
    Slot& s = m_slots[m_cur];
    --m_size;
    if (ahead) *ahead = s.head + kAhead < s.items.size() ? &s.items[s.head + kAhead] : nullptr;
    return s.items[s.head++];
  }

 private:
  static constexpr uint32_t kNone = ~uint32_t(0);
  static constexpr size_t kAhead = 2;
  static constexpr size_t kRetain = size_t{1} << 16;
  struct Slot {
    uint64_t t = 0;
    std::vector<T> items;
    size_t head = 0;
  };
  struct Entry {
    uint64_t t;
    uint32_t slot;  ///< kNone: empty
  };
  size_t home(uint64_t t) const { return static_cast<size_t>((t * 0x9E3779B97F4A7C15ull) >> m_shift); }
  uint32_t slot_of(uint64_t t) {
    if (t == m_last_t && m_last_slot != kNone) return m_last_slot;
    if (2 * (m_used + 1) > m_table.size()) grow();
    const size_t mask = m_table.size() - 1;
    size_t i = home(t);
    while (m_table[i].slot != kNone) {
      if (m_table[i].t == t) {
        m_last_t = t;
        return m_last_slot = m_table[i].slot;
      }
      i = (i + 1) & mask;
    }
    uint32_t slot;
    if (m_free.empty()) {
      slot = static_cast<uint32_t>(m_slots.size());
      m_slots.emplace_back();
    } else {
      slot = m_free.back();
      m_free.pop_back();
      m_free_capacity -= m_slots[slot].items.capacity();
    }
    m_slots[slot].t = t;
    m_table[i] = Entry{t, slot};
    ++m_used;
    m_times.push(t, slot);
    m_last_t = t;
    return m_last_slot = slot;
  }
  /// A slot taken to its end: out of the table (backward-shift deletion), its storage kept for another time
  /// while the free slots keep no more room than kRetain items or the items waiting.
  void release(uint32_t slot) {
    Slot& s = m_slots[slot];
    const size_t mask = m_table.size() - 1;
    size_t i = home(s.t);
    while (m_table[i].slot != slot) {
      if (m_table[i].slot == kNone) throw std::logic_error("TimeCalendar: a time's slot is not in its table");
      i = (i + 1) & mask;
    }
    for (size_t j = (i + 1) & mask; m_table[j].slot != kNone; j = (j + 1) & mask) {
      const size_t h = home(m_table[j].t);
      // j's entry may move to the hole at i if its home is not in (i, j] (cyclically)
      if (((j - h) & mask) >= ((j - i) & mask)) {
        m_table[i] = m_table[j];
        i = j;
      }
    }
    m_table[i].slot = kNone;
    --m_used;
    if (m_last_slot == slot) m_last_slot = kNone;
    s.items.clear();
    s.head = 0;
    if (m_free_capacity + s.items.capacity() > std::max(kRetain, m_size)) std::vector<T>().swap(s.items);
    m_free_capacity += s.items.capacity();
    m_free.push_back(slot);
  }
  void grow() {
    std::vector<Entry> old = std::move(m_table);
    const size_t n = old.empty() ? 64 : 2 * old.size();
    m_table.assign(n, Entry{0, kNone});
    m_shift = 64 - static_cast<unsigned>(__builtin_ctzll(n));
    for (const Entry& e : old)
      if (e.slot != kNone) {
        size_t i = home(e.t);
        while (m_table[i].slot != kNone) i = (i + 1) & (n - 1);
        m_table[i] = e;
      }
  }

  std::vector<Slot> m_slots;
  std::vector<uint32_t> m_free;  // slots of times taken, to reuse
  size_t m_free_capacity = 0;    // the room for items they keep
  TimedHeap<uint32_t> m_times;   // slots by time (one entry per distinct time)
  std::vector<Entry> m_table;    // time -> slot
  size_t m_used = 0;
  unsigned m_shift = 64;
  uint32_t m_cur = kNone;  // the slot being taken (the earliest time)
  uint64_t m_last_t = 0;   // the time last looked up, and its slot
  uint32_t m_last_slot = kNone;
  size_t m_size = 0;
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
  void push(const Action& a);
  void wake();
  TimeCalendar<Action> m_actions;
  std::vector<std::function<void()>> m_fns;  // functions posted with at(), by slot
  std::vector<uint64_t> m_free_fns;          // their free slots
  sc_core::sc_event m_wake;
  uint64_t m_scheduled = ~uint64_t(0);  // the time the SC_METHOD is notified for
  uint64_t m_now = 0;                   // while in wake()
  bool m_in_wake = false;
};

}  // namespace fabricvp::core
