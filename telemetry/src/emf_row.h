// The EMF documents smddp-bench writes: one per result row, one per timeout.
// Layout in docs/metrics.md ("CloudWatch EMF").
#pragma once

#include <string>

#include "smddp/telemetry/emf.h"
#include "smddp/telemetry/metrics.h"

namespace smddp::telemetry {

// Timestamp: now. Dimension sets: the full result key and a per-size roll-up.
EmfDocument emf_row_document(const BenchRow& row, const std::string& ns, const std::string& job,
                             const std::string& host);
EmfDocument emf_timeout_document(const std::string& collective, const std::string& ns, const std::string& job,
                                 const std::string& host);

}  // namespace smddp::telemetry
