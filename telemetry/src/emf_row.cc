#include "emf_row.h"

#include <chrono>

namespace smddp::telemetry {
namespace {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string or_none(const std::string& value) { return value.empty() ? "none" : value; }

void add_context(EmfDocument& doc, const std::string& job, const std::string& host) {
  doc.set_property("Job", job);
  doc.set_property("Host", host);
}

}  // namespace

EmfDocument emf_row_document(const BenchRow& row, const std::string& ns, const std::string& job,
                             const std::string& host) {
  EmfDocument doc(ns, now_ms());
  doc.set_dimension("Collective", or_none(row.collective));
  doc.set_dimension("DataType", or_none(row.dtype));
  doc.set_dimension("Op", or_none(row.op));
  doc.set_dimension("Backend", or_none(row.backend));
  doc.set_dimension("Algorithm", or_none(row.algorithm));
  doc.set_dimension("Size", std::to_string(row.bytes));
  doc.set_dimension("Placement", row.in_place ? "in-place" : "out-of-place");
  if (row.group.empty()) {
    doc.add_dimension_set({"Collective", "DataType", "Op", "Backend", "Algorithm", "Size", "Placement"});
    doc.add_dimension_set({"Collective", "Backend", "Size"});
  } else {  // split groups: the group ("all" or a colour) in every set
    doc.set_dimension("Group", row.group);
    doc.add_dimension_set({"Collective", "DataType", "Op", "Backend", "Algorithm", "Size", "Placement", "Group"});
    doc.add_dimension_set({"Collective", "Backend", "Size", "Group"});
  }

  doc.add_metric("BusBandwidth", "Gigabytes/Second", row.busbw_gbps);
  doc.add_metric("AlgBandwidth", "Gigabytes/Second", row.algbw_gbps);
  doc.add_metric("Time", "Microseconds", row.time_us);
  if (row.max_us > 0) {
    doc.add_metric("LatencyMin", "Microseconds", row.min_us);
    doc.add_metric("LatencyP50", "Microseconds", row.p50_us);
    doc.add_metric("LatencyP95", "Microseconds", row.p95_us);
    doc.add_metric("LatencyP99", "Microseconds", row.p99_us);
    doc.add_metric("LatencyMax", "Microseconds", row.max_us);
  }
  doc.add_metric("WrongValues", "Count", static_cast<double>(row.wrong));
  if (row.bitwise_differences) {
    doc.add_metric("BitwiseDifferences", "Count", static_cast<double>(*row.bitwise_differences));
  }
  doc.add_metric("Iterations", "Count", static_cast<double>(row.iterations));

  doc.set_property("Bytes", row.bytes);
  doc.set_property("Count", row.count);
  if (row.root >= 0) doc.set_property("Root", row.root);
  add_context(doc, job, host);
  return doc;
}

EmfDocument emf_timeout_document(const std::string& collective, const std::string& ns, const std::string& job,
                                 const std::string& host) {
  EmfDocument doc(ns, now_ms());
  doc.set_dimension("Collective", or_none(collective));
  doc.add_dimension_set({"Collective"});
  doc.add_metric("Timeouts", "Count", 1);
  add_context(doc, job, host);
  return doc;
}

}  // namespace smddp::telemetry
