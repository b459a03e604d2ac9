// Host memory for a model's large contents (an NPU's memory): anonymous pages
// that read as zero until written, so growing them costs no clearing pass in
// the program (the kernel gives zeroed pages), and growing keeps the contents
// without copying them (mremap). Transparent huge pages were tried for them
// and made the 64-NPU ACE run slower (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fabricvp::core {

class ZeroPages {
 public:
  ZeroPages() = default;
  ~ZeroPages();
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  uint8_t* data() { return m_p; }
  const uint8_t* data() const { return m_p; }
  /// Bytes held: the most asked of grow().
  size_t size() const { return m_size; }
  /// Hold at least n bytes; the new ones read as zero, the old ones are kept
  /// (data() may move). Throws std::bad_alloc when the system has no room.
  void grow(size_t n);

 private:
  uint8_t* m_p = nullptr;
  size_t m_size = 0, m_mapped = 0;
};

}  // namespace fabricvp::core
