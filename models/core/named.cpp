#include "models/core/named.h"

#include <systemc>

namespace fabricvp::core {

std::string Named::name() const {
  std::string base = m_owner ? m_owner->name() : (m_prefix ? m_prefix : "");
  return base.empty() ? m_leaf : base + "." + m_leaf;
}

}  // namespace fabricvp::core
