// EmfDocument: builds CloudWatch EMF documents within the specification's limits.
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "smddp/telemetry/emf.h"

namespace smddp::telemetry {
namespace {

// CloudWatch's StandardUnit list (MetricDatum.Unit).
constexpr std::array<std::string_view, 27> kUnits = {
    "Seconds",          "Microseconds",     "Milliseconds",     "Bytes",
    "Kilobytes",        "Megabytes",        "Gigabytes",        "Terabytes",
    "Bits",             "Kilobits",         "Megabits",         "Gigabits",
    "Terabits",         "Percent",          "Count",            "Bytes/Second",
    "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
    "Bits/Second",      "Kilobits/Second",  "Megabits/Second",  "Gigabits/Second",
    "Terabits/Second",  "Count/Second",     "None"};

// CloudWatch limits on names and dimension values.
constexpr size_t kMaxNameLength = 255;
constexpr size_t kMaxDimensionValueLength = 1024;

void check_name(const std::string& what, const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) {
    throw std::invalid_argument(fmt::format("EMF {} name must have 1..{} characters", what, kMaxNameLength));
  }
  if (name == "_aws") throw std::invalid_argument("EMF member name _aws is reserved");
}

}  // namespace

bool is_cloudwatch_unit(const std::string& unit) {
  return std::find(kUnits.begin(), kUnits.end(), unit) != kUnits.end();
}

bool is_cloudwatch_namespace(const std::string& ns) {
  if (ns.empty() || ns.size() > kMaxNameLength || ns.rfind("AWS/", 0) == 0) return false;
  return std::all_of(ns.begin(), ns.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view(" ._/#:-").find(c) != std::string_view::npos;
  });
}

EmfDocument::EmfDocument(std::string ns, int64_t timestamp_ms)
    : namespace_(std::move(ns)), timestamp_ms_(timestamp_ms) {
  if (!is_cloudwatch_namespace(namespace_)) {
    throw std::invalid_argument(fmt::format("invalid CloudWatch namespace '{}'", namespace_));
  }
}

void EmfDocument::set_dimension(const std::string& name, const std::string& value) {
  check_name("dimension", name);
  if (std::any_of(metrics_.begin(), metrics_.end(), [&](const auto& m) { return m.first == name; })) {
    throw std::invalid_argument(fmt::format("EMF dimension '{}' is already a metric", name));
  }
  if (value.empty()) throw std::invalid_argument(fmt::format("EMF dimension '{}' has an empty value", name));
  members_[name] = value.substr(0, kMaxDimensionValueLength);
}

void EmfDocument::add_dimension_set(std::vector<std::string> names) {
  if (names.empty() || names.size() > kEmfMaxDimensionsPerSet) {
    throw std::invalid_argument(
        fmt::format("an EMF dimension set holds 1..{} dimensions, not {}", kEmfMaxDimensionsPerSet, names.size()));
  }
  dimension_sets_.push_back(std::move(names));
}

void EmfDocument::add_metric(const std::string& name, const std::string& unit, double value) {
  check_name("metric", name);
  if (!is_cloudwatch_unit(unit)) throw std::invalid_argument(fmt::format("'{}' is not a CloudWatch unit", unit));
  if (members_.contains(name)) throw std::invalid_argument(fmt::format("EMF member '{}' is already set", name));
  if (!std::isfinite(value)) return;
  if (metrics_.size() >= kEmfMaxMetrics) {
    throw std::invalid_argument(fmt::format("an EMF document holds at most {} metrics", kEmfMaxMetrics));
  }
  metrics_.emplace_back(name, unit);
  members_[name] = value;
}

void EmfDocument::set_property(const std::string& name, nlohmann::json value) {
  check_name("property", name);
  if (std::any_of(metrics_.begin(), metrics_.end(), [&](const auto& m) { return m.first == name; })) {
    throw std::invalid_argument(fmt::format("EMF member '{}' is already a metric", name));
  }
  members_[name] = std::move(value);
}

nlohmann::json EmfDocument::to_json() const {
  nlohmann::json dimensions = nlohmann::json::array();
  for (const auto& set : dimension_sets_) {
    for (const auto& name : set) {
      auto it = members_.find(name);
      if (it == members_.end() || !it->is_string()) {
        throw std::invalid_argument(fmt::format("EMF dimension '{}' has no string value", name));
      }
    }
    dimensions.push_back(set);
  }
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& [name, unit] : metrics_) metrics.push_back({{"Name", name}, {"Unit", unit}});

  nlohmann::json doc = members_;
  const nlohmann::json directive = {{"Namespace", namespace_}, {"Dimensions", dimensions}, {"Metrics", metrics}};
  doc["_aws"] = {{"Timestamp", timestamp_ms_}, {"CloudWatchMetrics", nlohmann::json::array({directive})}};
  return doc;
}

std::string EmfDocument::serialize() const {
  // replace: a hostile byte sequence becomes U+FFFD instead of an exception.
  return to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace smddp::telemetry
