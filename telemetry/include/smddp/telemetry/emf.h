// CloudWatch Embedded Metric Format (EMF): one JSON document per event, read
// by the CloudWatch agent (UDP or TCP on port 25888, or a log file it tails).
// Layout (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
//   {"_aws": {"Timestamp": <ms since epoch>,
//             "CloudWatchMetrics": [{"Namespace": "...",
//                                    "Dimensions": [["Dim1", "Dim2"], ...],
//                                    "Metrics": [{"Name": "M", "Unit": "Seconds"}, ...]}]},
//    "Dim1": "value", "M": 1.5, "OtherProperty": ...}
// EmfDocument enforces the limits of the specification: at most 100 metrics
// per document, at most 30 dimensions per set, dimension values are strings,
// units come from the CloudWatch list. Serialisation escapes every string
// (invalid UTF-8 is replaced, never thrown on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smddp::telemetry {

inline constexpr size_t kEmfMaxMetrics = 100;
inline constexpr size_t kEmfMaxDimensionsPerSet = 30;

// True for a unit CloudWatch accepts ("Seconds", "Gigabytes/Second", "Count", "None", ...).
bool is_cloudwatch_unit(const std::string& unit);

// True for a valid CloudWatch namespace: 1..255 characters from
// [A-Za-z0-9 ._/#:-], not starting with "AWS/".
bool is_cloudwatch_namespace(const std::string& ns);

class EmfDocument {
 public:
  EmfDocument(std::string ns, int64_t timestamp_ms);

  // A string member that dimension sets may name. Throws std::invalid_argument
  // for an empty name, a name under "_aws" or one already used by a metric.
  void set_dimension(const std::string& name, const std::string& value);
  // A dimension set: names set_dimension gave (checked by serialize), 1..30 of them.
  void add_dimension_set(std::vector<std::string> names);
  // A metric definition and its value as a top-level member. Non-finite values
  // are dropped (JSON has no NaN). Throws std::invalid_argument for an unknown
  // unit, a duplicate name, or the 101st metric.
  void add_metric(const std::string& name, const std::string& unit, double value);
  // Any other top-level member (searchable in CloudWatch Logs, not a metric).
  void set_property(const std::string& name, nlohmann::json value);

  size_t metric_count() const { return metrics_.size(); }
  nlohmann::json to_json() const;
  // One line, no trailing newline. Throws std::invalid_argument when a
  // dimension set names a missing dimension.
  std::string serialize() const;

 private:
  std::string namespace_;
  int64_t timestamp_ms_;
  std::vector<std::vector<std::string>> dimension_sets_;
  std::vector<std::pair<std::string, std::string>> metrics_;  // name, unit
  nlohmann::json members_ = nlohmann::json::object();
};

// Where EMF documents go. write() sends one document (a newline is added where
// the transport needs one) and throws smddp::Error on failure; the next call
// tries again (TCP reconnects).
class EmfSink {
 public:
  virtual ~EmfSink() = default;
  virtual void write(const std::string& document) = 0;
  virtual std::string describe() const = 0;  // "udp://127.0.0.1:25888", "file /tmp/x"
};

// Parses FILE | udp://HOST[:PORT] | tcp://HOST[:PORT] (PORT default 25888,
// HOST may be "[v6]") and opens the sink. Throws smddp::UsageError for a
// malformed target or a file that cannot be opened for appending. Network
// sinks do not connect here: an agent that is down is a per-document warning.
std::unique_ptr<EmfSink> open_emf_sink(const std::string& target);

}  // namespace smddp::telemetry
