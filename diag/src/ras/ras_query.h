// The two conversations smddp-diag has with NCCL's RAS service, shared by
// `smddp-diag ras` and the exporter's --ras collector: one status query,
// and a monitor connection that yields events as they come.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ras/ras_client.h"
#include "ras/ras_parse.h"

namespace smddp::diag {

struct RasQueryOptions {
  double connect_timeout = 2;  // connecting and each one-line answer
  int ras_timeout = 5;         // TIMEOUT sent: how long RAS waits for other processes
  bool json = true;            // ask for JSON (NCCL 2.28.7+); text when refused
  bool verbose = false;        // VERBOSE STATUS
};

// Connects, asks for the status and parses it. *raw gets RAS's answer as
// sent. Throws TimeoutError/TransportError (exit 3) naming host:port, and
// smddp::Error when the answer cannot be read.
RasStatus query_ras_status(const RasAddress& address, const RasQueryOptions& options, std::ostream& warnings,
                           std::string* raw = nullptr);

class RasMonitor {
 public:
  // Connects and enters monitor mode (JSON events where the server takes
  // SET FORMAT json). An NCCL without monitor mode (before 2.29) answers
  // ERROR: tools::UnavailableError (exit 69).
  RasMonitor(const RasAddress& address, const RasQueryOptions& options, std::ostream& warnings);
  // Waits at most `timeout_s` and appends the events that arrived; false
  // once the server closed the connection (the job ended).
  bool poll(double timeout_s, std::vector<RasEvent>* events);

 private:
  RasClient client_;
  RasStreamSplitter splitter_;
};

}  // namespace smddp::diag
