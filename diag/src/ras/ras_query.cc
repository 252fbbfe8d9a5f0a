#include "ras/ras_query.h"

#include "smddp/common/strings.h"
#include "smddp/error.h"
#include "smddp/tools/exit_codes.h"

namespace smddp::diag {
namespace {

constexpr size_t kMaxStatusBytes = size_t{64} << 20;

// RAS answers within its own timeout per leg; the client allows as much
// again (as ncclras does) and the connect timeout on top.
double status_deadline(const RasQueryOptions& o) { return 2.0 * o.ras_timeout + o.connect_timeout; }

// Asks for JSON; false (text) when this NCCL answers ERROR (before 2.28.7).
bool ask_json(RasClient& client, const RasQueryOptions& o) {
  if (!o.json) return false;
  const std::string answer = client.command("SET FORMAT json", o.connect_timeout);
  const std::string upper = common::to_upper(answer);
  if (upper == "OK") return true;
  if (upper.rfind("ERROR", 0) == 0) return false;
  throw TransportError(client.address().text() + " answered '" + answer.substr(0, 80) + "' to 'SET FORMAT json'");
}

}  // namespace

RasStatus query_ras_status(const RasAddress& address, const RasQueryOptions& o, std::ostream& warnings, std::string* raw) {
  RasClient client(address, o.connect_timeout, warnings);
  client.expect_ok("TIMEOUT " + std::to_string(o.ras_timeout), o.connect_timeout);
  const bool json = ask_json(client, o);
  client.send(o.verbose ? "VERBOSE STATUS" : "STATUS", o.connect_timeout);
  std::string text = client.read_to_close(status_deadline(o), kMaxStatusBytes);
  if (raw) *raw = text;
  try {
    return json ? parse_ras_status_json(text) : parse_ras_status_text(text);
  } catch (const TransportError&) {
    throw;
  } catch (const std::exception& e) {
    // Not the job's failure: the answer is unreadable. One line, exit 3.
    throw TransportError(address.text() + ": cannot read its status: " + e.what());
  }
}

RasMonitor::RasMonitor(const RasAddress& address, const RasQueryOptions& o, std::ostream& warnings)
    : client_(address, o.connect_timeout, warnings) {
  ask_json(client_, o);
  const std::string answer = client_.command("MONITOR", o.connect_timeout);
  const std::string upper = common::to_upper(answer);
  if (upper.rfind("ERROR", 0) == 0) {
    throw tools::UnavailableError(address.text() + " has no RAS monitor mode (NCCL 2.29 or later): it answered '" +
                                  answer.substr(0, 80) + "'");
  }
  if (upper != "OK") throw TransportError(address.text() + " answered '" + answer.substr(0, 80) + "' to 'MONITOR'");
}

bool RasMonitor::poll(double timeout_s, std::vector<RasEvent>* events) {
  std::string bytes;
  const auto r = client_.read_some(timeout_s, &bytes);
  if (r == RasClient::Read::Timeout) return true;
  splitter_.feed(bytes);
  while (auto item = splitter_.next()) {
    if (item->front() == '{') {
      try {
        events->push_back(parse_ras_event_json(*item));
      } catch (const std::exception& e) {
        throw TransportError(client_.address().text() + ": cannot read a monitor event: " + e.what());
      }
    } else if (auto e = parse_ras_event_text(*item)) {
      events->push_back(std::move(*e));
    }
  }
  return r != RasClient::Read::Closed;
}

}  // namespace smddp::diag
