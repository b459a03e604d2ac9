// Writing fabricvp's output files (stats, configurations, traces, CSV,
// programs, plots' data, result JSON) so that a failure is never silent: a
// directory that does not exist or is not writable, a full disk or a write
// error is a ConfigError "<path>: cannot write the <what>: <reason>" (exit 1),
// not a missing or truncated file and a run that says it succeeded.
#pragma once

#include <cerrno>
#include <cstddef>
#include <fstream>
#include <string>
#include <string_view>

namespace fabricvp::core {

class OutputFile {
 public:
  /// Creates (truncates) `path`; throws if it cannot. `what` names the file in
  /// errors ("statistics", "links CSV").
  OutputFile(std::string path, std::string what, bool binary = false);
  /// Closes without checking; call close() to know the file is complete.
  ~OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  template <class T>
  OutputFile& operator<<(const T& v) {
    m_f << v;
    note();
    return *this;
  }
  void write(const void* data, size_t n) {
    m_f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    note();
  }
  std::ostream& stream() { return m_f; }
  /// Flushes and closes; throws if any write failed.
  void close();

 private:
  /// Keep the reason of the first failed write (errno changes later).
  void note() {
    if (!m_f && !m_errno) m_errno = errno ? errno : -1;
  }
  [[noreturn]] void fail();
  int m_errno = 0;
  std::string m_path, m_what;
  std::ofstream m_f;
};

/// The whole file in one call: create, write `text`, close, checked.
void write_file(const std::string& path, std::string_view text, const std::string& what, bool binary = false);

}  // namespace fabricvp::core
