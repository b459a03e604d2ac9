// What parameters and statistics have in common: a hierarchical name made of
// an owner (a module, whose SystemC name is the prefix) or a fixed group
// ("run", "sched"), a leaf name, a unit and a description; and a registry of
// the live instances.
#pragma once

#include <string>
#include <vector>

namespace sc_core {
class sc_object;
}

namespace fabricvp::core {

class Named {
 public:
  Named(const sc_core::sc_object* owner, const char* prefix, const char* leaf, const char* unit, const char* desc)
      : m_owner(owner), m_prefix(prefix), m_leaf(leaf), m_unit(unit), m_desc(desc) {}
  /// owner name (or prefix) + "." + leaf
  std::string name() const;
  const sc_core::sc_object* owner() const { return m_owner; }
  const char* prefix() const { return m_prefix; }
  const char* leaf() const { return m_leaf; }
  const char* unit() const { return m_unit; }
  const char* description() const { return m_desc; }

 private:
  const sc_core::sc_object* m_owner;
  const char* m_prefix;
  const char* m_leaf;
  const char* m_unit;
  const char* m_desc;
};

/// Live instances in creation order; removal leaves a hole, so slots stay valid.
template <typename T>
class Registry {
 public:
  size_t add(T* item) {
    m_items.push_back(item);
    return m_items.size() - 1;
  }
  void remove(size_t slot) { m_items[slot] = nullptr; }
  std::vector<const T*> all() const {
    std::vector<const T*> out;
    for (T* t : m_items)
      if (t) out.push_back(t);
    return out;
  }

 private:
  std::vector<T*> m_items;
};

}  // namespace fabricvp::core
