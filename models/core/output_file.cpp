#include "models/core/output_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "models/core/config.h"

namespace fabricvp::core {

OutputFile::OutputFile(std::string path, std::string what, bool binary)
    : m_path(std::move(path)), m_what(std::move(what)) {
  errno = 0;
  m_f.open(m_path, binary ? std::ios::out | std::ios::trunc | std::ios::binary : std::ios::out | std::ios::trunc);
  if (!m_f) fail();
}

void OutputFile::close() {
  if (!m_f) fail();
  errno = 0;
  m_f.flush();
  if (!m_f) fail();
  m_f.close();
  if (!m_f) fail();
}

void OutputFile::fail() {
  if (!m_errno) m_errno = errno;
  const int e = m_errno > 0 ? m_errno : 0;
  throw ConfigError(fmt::format("{}: cannot write the {}{}", m_path, m_what,
                                e ? fmt::format(": {}", std::strerror(e)) : std::string()));
}

void write_file(const std::string& path, std::string_view text, const std::string& what, bool binary) {
  OutputFile f(path, what, binary);
  f.write(text.data(), text.size());
  f.close();
}

}  // namespace fabricvp::core
