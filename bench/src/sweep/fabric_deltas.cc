#include "sweep/fabric_deltas.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include "smddp/config.h"

namespace smddp::bench {

RowCounters::RowCounters(Communicator& comm, const std::vector<std::string>& hosts)
    : comm_(comm), host_(hosts.at(comm.rank())), root_(config::text("SMDDP_SYSFS_ROOT")) {
  reader_ = std::find(hosts.begin(), hosts.end(), host_) - hosts.begin() == comm.rank();
}

void RowCounters::before() {
  if (reader_) before_ = tools::read_fabric_counters(root_);
}

RowFabricCounters RowCounters::after() {
  // One text per rank, "R" when counters were read, then a line per moved
  // counter: device port name delta (sysfs names carry no blanks).
  std::string mine;
  if (reader_) {
    const tools::FabricCounterSnapshot now = tools::read_fabric_counters(root_);
    if (!now.empty() || !before_.empty()) mine = "R\n";
    for (const auto& d : tools::fabric_counter_deltas(before_, now)) {
      mine += d.key.device + " " + std::to_string(d.key.port) + " " + d.key.name + " " + std::to_string(d.delta) + "\n";
    }
  }
  const int n = comm_.size();
  uint64_t length = mine.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  comm_.allgather(&length, lengths.data(), 1, DataType::Uint64);
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  RowFabricCounters out;
  if (longest == 0) return out;
  mine.resize(longest, '\0');
  std::vector<char> all(longest * static_cast<size_t>(n));
  comm_.allgather(mine.data(), all.data(), longest, DataType::Uint8);
  if (comm_.rank() != 0) return out;
  for (int r = 0; r < n; ++r) {
    std::istringstream in(std::string(all.data() + longest * static_cast<size_t>(r), lengths[r]));
    std::string line;
    while (std::getline(in, line)) {
      if (line == "R") {
        out.read = true;
        continue;
      }
      std::istringstream fields(line);
      HostCounterDelta d;
      d.host = comm_.host(r);
      if (fields >> d.counter.key.device >> d.counter.key.port >> d.counter.key.name >> d.counter.delta) {
        out.deltas.push_back(std::move(d));
      }
    }
  }
  return out;
}

nlohmann::json fabric_counters_to_json(const RowFabricCounters& counters) {
  nlohmann::json deltas = nlohmann::json::array();
  for (const auto& d : counters.deltas) {
    deltas.push_back({{"host", d.host}, {"device", d.counter.key.device}, {"port", d.counter.key.port},
                      {"counter", d.counter.key.name}, {"delta", d.counter.delta}});
  }
  return deltas;
}

}  // namespace smddp::bench
