// Perfetto / Chrome trace-event JSON writer (https://ui.perfetto.dev opens it).
//
// Off by default. When open, events are streamed to the file as they happen
// (nothing is buffered per event beyond the stdio buffer). pid = a chip or other
// top-level component, tid = a queue, port or link direction inside it.
// Timestamps are written in microseconds with 6 decimals, i.e. exact to 1 ps.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace fabricvp::core {

class Trace {
 public:
  ~Trace();
  /// Start writing to `path`; only events overlapping [from_ps, to_ps] are kept.
  void open(const std::string& path, uint64_t from_ps, uint64_t to_ps);
  /// Finish the file; throws ConfigError if any of it could not be written.
  void close();
  bool enabled() const { return m_file != nullptr; }
  bool in_window(uint64_t t0, uint64_t t1) const { return m_file && t1 >= m_from && t0 <= m_to; }

  /// Process id for a named component (creates the "process_name" record once).
  uint32_t process(const std::string& name);
  /// Name a thread (track) inside a process.
  void thread(uint32_t pid, uint32_t tid, const std::string& name);

  /// A span: "X" event. `args_json` is a JSON object body without braces, or empty.
  void span(uint32_t pid, uint32_t tid, const char* name, const char* cat, uint64_t ts_ps, uint64_t dur_ps,
            const std::string& args_json = {});
  /// A counter sample: "C" event.
  void counter(uint32_t pid, const char* name, uint64_t ts_ps, double value);
  /// An instant: "i" event (thread scope).
  void instant(uint32_t pid, uint32_t tid, const char* name, uint64_t ts_ps, const std::string& args_json = {});

  uint64_t events() const { return m_events; }

 private:
  void sep();
  std::FILE* m_file = nullptr;
  std::string m_path;
  uint64_t m_from = 0, m_to = UINT64_MAX;
  uint64_t m_events = 0;
  std::unordered_map<std::string, uint32_t> m_pids;
};

}  // namespace fabricvp::core
