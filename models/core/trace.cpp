#include "models/core/trace.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "models/core/config.h"

namespace fabricvp::core {

namespace {
// ps -> "us.uuuuuu" (exact: 1 us = 1e6 ps).
std::string us(uint64_t ps) { return fmt::format("{}.{:06d}", ps / 1000000, ps % 1000000); }
}  // namespace

Trace::~Trace() {
  if (m_file) std::fclose(m_file);
}

void Trace::open(const std::string& path, uint64_t from_ps, uint64_t to_ps) {
  close();
  m_path = path;
  m_file = std::fopen(path.c_str(), "w");
  if (!m_file) throw ConfigError(fmt::format("{}: cannot write the trace: {}", path, std::strerror(errno)));
  m_from = from_ps;
  m_to = to_ps;
  m_events = 0;
  m_pids.clear();
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", m_file);
}

void Trace::close() {
  if (!m_file) return;
  std::fputs("\n]}\n", m_file);
  const bool bad = std::ferror(m_file) != 0;
  const int closed = std::fclose(m_file);
  m_file = nullptr;
  if (bad || closed != 0)
    throw ConfigError(fmt::format("{}: cannot write the trace{}", m_path,
                                  closed != 0 ? ": " + std::string(std::strerror(errno)) : ""));
}

void Trace::sep() {
  if (m_events++) std::fputs(",\n", m_file);
}

uint32_t Trace::process(const std::string& name) {
  auto it = m_pids.find(name);
  if (it != m_pids.end()) return it->second;
  uint32_t pid = static_cast<uint32_t>(m_pids.size() + 1);
  m_pids.emplace(name, pid);
  if (m_file) {
    sep();
    fmt::print(m_file, R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"{}"}}}})", pid, name);
    sep();
    fmt::print(m_file, R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", pid, pid);
  }
  return pid;
}

void Trace::thread(uint32_t pid, uint32_t tid, const std::string& name) {
  if (!m_file) return;
  sep();
  fmt::print(m_file, R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})", pid, tid, name);
}

void Trace::span(uint32_t pid, uint32_t tid, const char* name, const char* cat, uint64_t ts_ps, uint64_t dur_ps,
                 const std::string& args_json) {
  if (!in_window(ts_ps, ts_ps + dur_ps)) return;
  sep();
  fmt::print(m_file, R"({{"ph":"X","pid":{},"tid":{},"name":"{}","cat":"{}","ts":{},"dur":{},"args":{{{}}}}})", pid,
             tid, name, cat, us(ts_ps), us(dur_ps), args_json);
}

void Trace::counter(uint32_t pid, const char* name, uint64_t ts_ps, double value) {
  if (!in_window(ts_ps, ts_ps)) return;
  sep();
  fmt::print(m_file, R"({{"ph":"C","pid":{},"name":"{}","ts":{},"args":{{"value":{}}}}})", pid, name, us(ts_ps), value);
}

void Trace::instant(uint32_t pid, uint32_t tid, const char* name, uint64_t ts_ps, const std::string& args_json) {
  if (!in_window(ts_ps, ts_ps)) return;
  sep();
  fmt::print(m_file, R"({{"ph":"i","s":"t","pid":{},"tid":{},"name":"{}","ts":{},"args":{{{}}}}})", pid, tid, name,
             us(ts_ps), args_json);
}

}  // namespace fabricvp::core
