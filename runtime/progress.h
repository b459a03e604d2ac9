// The progress line of a long run (docs/reliability.md): on a terminal, and
// not with -q, one line on stderr kept up to date once the run has taken 2 s:
// the phase (elaborating, compiling, loading, simulating, checking), how long
// it has taken, and while simulating the simulated time reached, its rate and,
// where the kind knows how much of the workload is done, an ETA. A ticker
// thread prints it once a second; it only reads what the run's own thread
// hands it (phase and status text under a mutex), never the simulation.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace fabricvp::runtime {

class ProgressLine {
 public:
  /// Enabled: on a terminal and not quiet, or FABRICVP_PROGRESS=1 (=0 forces it off).
  static bool wanted(bool quiet);

  explicit ProgressLine(bool enabled);
  ~ProgressLine() { finish(); }
  /// Stop the ticker and end the line (before the summary is printed).
  void finish();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return m_enabled; }
  /// A new phase ("compiling"); its clock starts now, its status is cleared.
  void phase(const std::string& name);
  /// What the phase has reached ("1.2 ms simulated, 3.4e+05 ns/s, 40 %, ETA 12s").
  void status(const std::string& text);
  /// Seconds since the phase started.
  double phase_seconds() const;

 private:
  void tick();
  using Clock = std::chrono::steady_clock;
  const bool m_enabled;
  const Clock::time_point m_start;
  mutable std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_stop = false, m_shown = false;
  std::string m_phase, m_status;
  Clock::time_point m_phase_start;
  std::thread m_thread;
};

}  // namespace fabricvp::runtime
