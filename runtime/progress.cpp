#include "runtime/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "models/core/units.h"

namespace fabricvp::runtime {

bool ProgressLine::wanted(bool quiet) {
  const char* env = std::getenv("FABRICVP_PROGRESS");
  return env ? std::string(env) == "1" : (!quiet && ::isatty(2));
}

ProgressLine::ProgressLine(bool enabled) : m_enabled(enabled), m_start(Clock::now()), m_phase_start(m_start) {
  if (m_enabled) m_thread = std::thread([this] { tick(); });
}

void ProgressLine::finish() {
  if (!m_enabled || !m_thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
  if (m_shown) fmt::print(stderr, "\n");
}

void ProgressLine::phase(const std::string& name) {
  if (!m_enabled) return;
  std::lock_guard<std::mutex> lock(m_mu);
  m_phase = name;
  m_status.clear();
  m_phase_start = Clock::now();
}

void ProgressLine::status(const std::string& text) {
  if (!m_enabled) return;
  std::lock_guard<std::mutex> lock(m_mu);
  m_status = text;
}

double ProgressLine::phase_seconds() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return std::chrono::duration<double>(Clock::now() - m_phase_start).count();
}

void ProgressLine::tick() {
  std::unique_lock<std::mutex> lock(m_mu);
  while (!m_cv.wait_for(lock, std::chrono::seconds(1), [this] { return m_stop; })) {
    const double total = std::chrono::duration<double>(Clock::now() - m_start).count();
    if (total < 2.0 || m_phase.empty()) continue;
    const double in_phase = std::chrono::duration<double>(Clock::now() - m_phase_start).count();
    // \033[K clears what a longer earlier line left on the right.
    fmt::print(stderr, "\r{} {}{}{}\033[K", m_phase, core::human_duration(in_phase), m_status.empty() ? "" : ": ",
               m_status);
    std::fflush(stderr);
    m_shown = true;
  }
}

}  // namespace fabricvp::runtime
