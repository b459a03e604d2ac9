// Things to do at simulated times, in a fixed order: the one timed queue of
// fabricvp.
//
// TimedHeap<T> is a min-heap of items keyed by (time, order, sequence): equal
// times are taken in `order`, then in the order they were pushed (or by an
// explicit sequence number), so a run never depends on how a heap breaks
// ties. It has no SystemC in it; the TSP's data timeline drains one lazily,
// the HAC network keeps its slots and received codes in them.
//
// ActionQueue runs callbacks at their simulated time from one SC_METHOD of
// its owner: at(t, fn) posts; actions at equal times run in the order they
// were posted. NPU endpoints and the ACE run every message, DMA and datapath
// batch as one action at its exact completion time, never one event per byte.
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
    std::push_heap(m_heap.begin(), m_heap.end(), Later{});
  }
  /// Push an item that carries its key.
  void push(T item) {
    static_assert(!kStored, "this heap stores keys: push(time, item) or push(key, item)");
    m_heap.push_back(std::move(item));
    std::push_heap(m_heap.begin(), m_heap.end(), Later{});
  }
  const TimeKey& top_key() const { return key(m_heap.front()); }
  T& top() { return value(m_heap.front()); }
  /// Remove and return the earliest item.
  T pop() {
    std::pop_heap(m_heap.begin(), m_heap.end(), Later{});
    T item = std::move(value(m_heap.back()));
    m_heap.pop_back();
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
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return key(b) < key(a); }
  };
  std::vector<Entry> m_heap;
  uint64_t m_seq = 0;
};

class ActionQueue {
 public:
  /// Spawns the queue's SC_METHOD `name` in the module under construction.
  explicit ActionQueue(const char* name);
  ActionQueue(const ActionQueue&) = delete;
  ActionQueue& operator=(const ActionQueue&) = delete;

  /// Run `fn` at simulated time t (ps, >= now). Throws std::logic_error for a time in the past.
  void at(uint64_t t, std::function<void()> fn);
  static uint64_t now() { return sc_core::sc_time_stamp().value(); }
  bool idle() const { return m_actions.empty(); }

 private:
  void wake();
  TimedHeap<std::function<void()>> m_actions;
  sc_core::sc_event m_wake;
  bool m_in_wake = false;
};

}  // namespace fabricvp::core
