#include "smddp/tools/fabric_counters.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace smddp::tools {
namespace {

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool read_number(const std::string& path, uint64_t& value) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  value = std::strtoull(text.c_str(), &end, 10);
  return *end == '\0';
}

void read_dir(const std::string& dir, const std::string& device, int port, FabricCounterSnapshot& out) {
  for (const auto& name : entries(dir)) {
    uint64_t value = 0;
    if (is_fabric_error_counter(name) && read_number(dir + "/" + name, value)) out[{device, port, name}] = value;
  }
}

}  // namespace

bool is_fabric_error_counter(std::string_view name) {
  // Counter files are identifiers; anything else (an editor's or a writer's
  // temporary file in a fake tree) is not a counter.
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  // Byte and packet totals of healthy traffic (rx_bytes, send_wrs) stay out;
  // "err" also matches errors, "drop" dropped, "retrans" retransmits.
  for (std::string_view word : {"retrans", "drop", "discard", "err", "timeout", "impaired", "unresponsive",
                                "link_down", "out_of_sequence", "out_of_buffer", "nak", "symbol_error",
                                "integrity", "overrun", "recovery"}) {
    if (name.find(word) != std::string_view::npos) return true;
  }
  return false;
}

FabricCounterSnapshot read_fabric_counters(const std::string& root) {
  std::string base = root == "/" ? "" : root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  base += "/sys/class/infiniband";
  FabricCounterSnapshot out;
  for (const auto& device : entries(base)) {
    const std::string dev = base + "/" + device;
    read_dir(dev + "/hw_counters", device, 0, out);
    for (const auto& port : entries(dev + "/ports")) {
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (*end || p <= 0) continue;
      for (const char* kind : {"hw_counters", "counters"}) {
        read_dir(dev + "/ports/" + port + "/" + kind, device, static_cast<int>(p), out);
      }
    }
  }
  return out;
}

std::vector<FabricCounterDelta> fabric_counter_deltas(const FabricCounterSnapshot& before,
                                                      const FabricCounterSnapshot& after) {
  std::vector<FabricCounterDelta> out;
  for (const auto& [key, value] : after) {
    auto b = before.find(key);
    const uint64_t old = b == before.end() ? 0 : b->second;
    const uint64_t delta = value >= old ? value - old : value;
    if (delta > 0) out.push_back({key, delta});
  }
  return out;
}

std::string to_string(const FabricCounterKey& key) {
  return key.device + "/" + (key.port > 0 ? std::to_string(key.port) + "/" : "") + key.name;
}

}  // namespace smddp::tools
