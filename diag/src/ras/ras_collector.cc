#include "ras/ras_collector.h"

#include <chrono>
#include <sstream>

#include "smddp/tools/exit_codes.h"

namespace smddp::diag {

RasCollector::RasCollector(prometheus::Registry& registry, RasAddress address, RasQueryOptions options, double interval_s,
                           std::ostream& warnings)
    : address_(std::move(address)), options_(options), interval_(interval_s), warnings_(warnings), metrics_(registry) {
  metrics_.set_down();
  thread_ = std::thread([this] { loop(); });
}

RasCollector::~RasCollector() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RasCollector::warn(const std::string& what) {
  if (!warned_) warnings_ << "smddp-diag exporter: warning: RAS at " << address_.text() << ": " << what << std::endl;
  warned_ = true;
}

void RasCollector::loop() {
  while (!stop_) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval_);
    query();
    for (;;) {
      const double left = std::chrono::duration<double>(next - std::chrono::steady_clock::now()).count();
      if (left <= 0 || stop_) break;
      follow(std::min(left, 0.2));
    }
  }
}

void RasCollector::query() {
  // Handshake warnings (another protocol version) go to the exporter's log once.
  std::ostringstream notes;
  try {
    RasStatus status = query_ras_status(address_, options_, notes);
    std::vector<RasFailure> failures = status.failures;
    if (last_) merge_failures(failures, stuck_ranks(*last_, status));
    merge_failures(failures, dead_from_events_);
    metrics_.set_status(status);
    metrics_.set_failures(failures);
    last_ = std::move(status);
    monitor_try_ = true;
    if (warned_) warnings_ << "smddp-diag exporter: RAS at " << address_.text() << " answers again" << std::endl;
    warned_ = false;
    if (!notes.str().empty() && monitor_supported_) warnings_ << notes.str() << std::flush;
  } catch (const std::exception& e) {
    metrics_.set_down();
    last_.reset();
    warn(e.what());
  }
}

void RasCollector::follow(double seconds) {
  if (!monitor_ && monitor_supported_ && monitor_try_) {
    monitor_try_ = false;  // once per answered status query
    std::ostringstream notes;
    try {
      monitor_ = std::make_unique<RasMonitor>(address_, options_, notes);
    } catch (const tools::UnavailableError&) {
      monitor_supported_ = false;  // NCCL before 2.29: status queries only
    } catch (const std::exception&) {
      // The next status query says what is wrong.
    }
  }
  if (!monitor_) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return;
  }
  std::vector<RasEvent> events;
  bool open = true;
  try {
    open = monitor_->poll(seconds, &events);
  } catch (const std::exception& e) {
    warn(e.what());
    open = false;
  }
  bool changed = false;
  for (const auto& e : events) {
    metrics_.count_event(e);
    if (auto f = failure_for_event(e); f && dead_from_events_.size() < 10000) {
      dead_from_events_.push_back(std::move(*f));
      changed = true;
    }
  }
  if (changed && last_) {
    std::vector<RasFailure> failures = last_->failures;
    merge_failures(failures, dead_from_events_);
    metrics_.set_failures(failures);
  }
  if (!open) {
    monitor_.reset();  // the job ended: its dead peers are no longer news
    dead_from_events_.clear();
  }
}

}  // namespace smddp::diag
