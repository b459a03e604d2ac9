#include "sw/optical/accuracy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "models/core/config.h"
#include "models/core/input_file.h"
#include "models/core/yaml_input.h"

namespace fabricvp::optical {

AccuracyTable parse_accuracy_table(const std::string& path) {
  return parse_accuracy_table_string(core::read_input_file(path, "time-to-accuracy table"), path);
}

AccuracyTable parse_accuracy_table_string(const std::string& text, const std::string& path) {
  const YAML::Node root = core::load_yaml_document(text, path, "a time-to-accuracy table is one");
  if (!root.IsMap() || !root["time_to_accuracy"] || !root["time_to_accuracy"].IsSequence() ||
      root["time_to_accuracy"].size() == 0)
    throw core::ConfigError(
        fmt::format("{}: a time-to-accuracy table needs a top-level 'time_to_accuracy:' list of rows", path));
  core::yaml_no_unknown_keys(path, root, {"time_to_accuracy"});
  AccuracyTable t;
  t.file = path;
  for (const YAML::Node& r : root["time_to_accuracy"]) {
    core::yaml_no_unknown_keys(path, r, {"model", "batch", "iterations", "target", "source"});
    AccuracyRow row;
    row.where = core::yaml_at(path, r);
    for (const char* key : {"model", "batch", "iterations", "target", "source"})
      if (!r[key] || !r[key].IsScalar() || r[key].Scalar().empty())
        throw core::ConfigError(fmt::format("{}: a row needs '{}' (every row names its source)", row.where, key));
    row.model = r["model"].Scalar();
    const double b = core::yaml_number(path, r["batch"], "batch");
    if (b < 1 || b != std::floor(b) || b > 1e12)
      throw core::ConfigError(fmt::format("{}: batch: '{}' is not a positive whole number of samples",
                                          core::yaml_at(path, r["batch"]), r["batch"].Scalar()));
    row.batch = static_cast<uint64_t>(b);
    row.iterations = core::yaml_number(path, r["iterations"], "iterations");
    if (row.iterations < 1)
      throw core::ConfigError(fmt::format("{}: iterations: '{}' must be at least 1",
                                          core::yaml_at(path, r["iterations"]), r["iterations"].Scalar()));
    row.target = r["target"].Scalar();
    row.source = r["source"].Scalar();
    t.rows.push_back(std::move(row));
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const AccuracyRow& a, const AccuracyRow& b) {
    return std::tie(a.model, a.batch) < std::tie(b.model, b.batch);
  });
  for (size_t i = 1; i < t.rows.size(); ++i) {
    const AccuracyRow &a = t.rows[i - 1], &b = t.rows[i];
    if (a.model != b.model) continue;
    if (a.batch == b.batch)
      throw core::ConfigError(
          fmt::format("{}: model {} at batch {} is also in the row at {}", b.where, b.model, b.batch, a.where));
    if (b.iterations > a.iterations)
      throw core::ConfigError(fmt::format(
          "{}: model {}: {} iterations at batch {} are more than the {} at the smaller batch {} ({}); a larger "
          "batch never needs more steps (Shallue et al. 2019)",
          b.where, b.model, b.iterations, b.batch, a.iterations, a.batch, a.where));
  }
  return t;
}

std::optional<AccuracyEstimate> iterations_to_accuracy(const AccuracyTable& t, const std::string& model, uint64_t batch,
                                                       std::string& why) {
  std::vector<const AccuracyRow*> rows;
  for (const AccuracyRow& r : t.rows)
    if (r.model == model) rows.push_back(&r);
  if (rows.empty()) {
    why = fmt::format("{} has no row for model '{}'", t.file, model);
    return std::nullopt;
  }
  if (batch == 0) {
    why = "no global batch";
    return std::nullopt;
  }
  const AccuracyRow& first = *rows.front();
  if (batch <= first.batch) {
    const double it = first.iterations * static_cast<double>(first.batch) / static_cast<double>(batch);
    return AccuracyEstimate{it, batch == first.batch ? fmt::format("the row at {}", first.where)
                                                     : fmt::format("perfect scaling from the row at {}", first.where)};
  }
  for (size_t i = 1; i < rows.size(); ++i) {
    const AccuracyRow &a = *rows[i - 1], &b = *rows[i];
    if (batch > b.batch) continue;
    if (batch == b.batch) return AccuracyEstimate{b.iterations, fmt::format("the row at {}", b.where)};
    const double f = std::log(static_cast<double>(batch) / a.batch) / std::log(static_cast<double>(b.batch) / a.batch);
    const double it = std::exp(std::log(a.iterations) + f * (std::log(b.iterations) - std::log(a.iterations)));
    return AccuracyEstimate{it, fmt::format("log-log between the rows at {} and {}", a.where, b.where)};
  }
  why = fmt::format("batch {} is beyond the largest batch of '{}' in {} ({}, at {})", batch, model, t.file,
                    rows.back()->batch, rows.back()->where);
  return std::nullopt;
}

}  // namespace fabricvp::optical
