#include "models/core/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "models/core/config.h"

namespace fabricvp::core {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string human(uint64_t b) {
  if (b >= (uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (uint64_t(1) << 30));
  if (b >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (uint64_t(1) << 20));
  return fmt::format("{} bytes", b);
}

/// Open `path` for reading without blocking and check it; returns the descriptor and its size.
int open_checked(const std::string& path, const char* what, uint64_t max_bytes, uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw ConfigError(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw ConfigError(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ConfigError(fmt::format("{}: {} is {}; give a file", path, what, kind_of(st.st_mode)));
  }
  size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    throw ConfigError(fmt::format("{}: {} of {} is over the {} limit; refused without reading it", path, what,
                                  human(size), human(max_bytes)));
  }
  return fd;
}

}  // namespace

std::string read_input_file(const std::string& path, const char* what, uint64_t max_bytes) {
  uint64_t size = 0;
  const int fd = open_checked(path, what, max_bytes, size);
  std::string out;
  out.resize(static_cast<size_t>(size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);  // a file that shrank while read: what was there
  return out;
}

void check_input_file(const std::string& path, const char* what, uint64_t max_bytes) {
  uint64_t size = 0;
  ::close(open_checked(path, what, max_bytes, size));
}

}  // namespace fabricvp::core
