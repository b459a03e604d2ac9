#include "models/core/zero_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace fabricvp::core {

ZeroPages::~ZeroPages() {
  if (m_p) ::munmap(m_p, m_mapped);
}

void ZeroPages::grow(size_t n) {
  if (n <= m_size) return;
  if (n > m_mapped) {
    constexpr size_t kStep = size_t(2) << 20;  // grown 2 MiB at a time at least
    const size_t want = std::max(m_mapped + m_mapped / 4, (n + kStep - 1) / kStep * kStep);
    void* p = m_p ? ::mremap(m_p, m_mapped, want, MREMAP_MAYMOVE)
                  : ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    m_p = static_cast<uint8_t*>(p);
    m_mapped = want;
  }
  m_size = n;
}

}  // namespace fabricvp::core
