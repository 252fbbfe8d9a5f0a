// An independent check of a document against the CloudWatch EMF specification
// (CloudWatch_Embedded_Metric_Format_Specification.html): returns the
// violations, empty when the document is valid. Written from the spec, not
// from the library, so the library cannot agree with itself by construction.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smddp::telemetry::testing {

inline const std::set<std::string>& cloudwatch_units() {
  static const std::set<std::string> units = {
      "Seconds",          "Microseconds",     "Milliseconds",     "Bytes",           "Kilobytes",
      "Megabytes",        "Gigabytes",        "Terabytes",        "Bits",            "Kilobits",
      "Megabits",         "Gigabits",         "Terabits",         "Percent",         "Count",
      "Bytes/Second",     "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
      "Bits/Second",      "Kilobits/Second",  "Megabits/Second",  "Gigabits/Second", "Terabits/Second",
      "Count/Second",     "None"};
  return units;
}

inline std::vector<std::string> emf_violations(const nlohmann::json& doc) {
  std::vector<std::string> errors;
  auto fail = [&](const std::string& e) { errors.push_back(e); };
  if (!doc.is_object()) return {"document is not an object"};
  if (!doc.contains("_aws") || !doc["_aws"].is_object()) return {"no _aws object"};
  const auto& aws = doc["_aws"];
  if (!aws.contains("Timestamp") || !aws["Timestamp"].is_number_integer()) {
    fail("_aws.Timestamp is not an integer");
  } else {
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    const int64_t ts = aws["Timestamp"].get<int64_t>();
    if (ts < now_ms - 86'400'000 || ts > now_ms + 86'400'000) fail("_aws.Timestamp is not now in milliseconds");
  }
  if (!aws.contains("CloudWatchMetrics") || !aws["CloudWatchMetrics"].is_array() ||
      aws["CloudWatchMetrics"].empty()) {
    fail("_aws.CloudWatchMetrics is not a non-empty array");
    return errors;
  }
  for (const auto& directive : aws["CloudWatchMetrics"]) {
    if (!directive.contains("Namespace") || !directive["Namespace"].is_string() ||
        directive["Namespace"].get<std::string>().empty()) {
      fail("directive without a Namespace string");
    }
    if (!directive.contains("Dimensions") || !directive["Dimensions"].is_array()) {
      fail("Dimensions is not an array");
    } else {
      for (const auto& set : directive["Dimensions"]) {
        if (!set.is_array()) {
          fail("a dimension set is not an array");
          continue;
        }
        if (set.size() > 30) fail("a dimension set has more than 30 dimensions");
        for (const auto& key : set) {
          if (!key.is_string()) {
            fail("a dimension key is not a string");
          } else if (!doc.contains(key.get<std::string>()) || !doc[key.get<std::string>()].is_string()) {
            fail("dimension " + key.get<std::string>() + " has no string member");
          }
        }
      }
    }
    if (!directive.contains("Metrics") || !directive["Metrics"].is_array()) {
      fail("Metrics is not an array");
      continue;
    }
    if (directive["Metrics"].size() > 100) fail("more than 100 metrics");
    for (const auto& metric : directive["Metrics"]) {
      if (!metric.contains("Name") || !metric["Name"].is_string()) {
        fail("a metric without a Name");
        continue;
      }
      const std::string name = metric["Name"];
      if (metric.contains("Unit") && (!metric["Unit"].is_string() || !cloudwatch_units().count(metric["Unit"]))) {
        fail("metric " + name + " has an invalid Unit");
      }
      if (!doc.contains(name)) {
        fail("metric " + name + " has no value member");
      } else if (!doc[name].is_number() && !(doc[name].is_array() && doc[name].size() <= 100)) {
        fail("metric " + name + " value is not a number");
      }
    }
  }
  return errors;
}

}  // namespace smddp::telemetry::testing
