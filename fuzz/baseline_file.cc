// smddp-bench --baseline FILE's readers (smddp::results): a cost model when
// the file says so (is_model_file, load_model_baseline), else a YAML
// baseline (load_baseline, also a profile's `baseline:` section and what
// smddp-diag baseline learn writes). A malformed file is one UsageError
// naming it, never a crash or another exception; a baseline it accepts names
// only what the engine knows, and its entries judge a row without fault.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "smddp/error.h"
#include "smddp/results/baseline.h"
#include "smddp/results/model_baseline.h"

namespace {

bool names(const std::string& message, const std::string& path) { return message.find(path) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smddp::results;
  const smddp::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  ResultRow row;  // one row of every kind the gate meets
  row.collective = "allreduce";
  row.dtype = "float";
  row.backend = "smddp";
  row.memory = "host";
  row.bytes = 1 << 20;
  row.ranks = 4;
  row.hosts = 2;
  row.busbw_gbps = 1.0;
  try {
    if (is_model_file(file.path())) {
      const ModelBaseline m = load_model_baseline(file.path(), "--baseline", 0.25);
      const ModelGateResult g = gate_rows(m, {row});
      FUZZ_CHECK(g.judged + g.unpredicted.size() == 1);
      return 0;
    }
    const Baseline b = load_baseline(file.path());
    FUZZ_CHECK(b.tolerance >= 0 && b.tolerance < 1);
    for (const auto& e : b.entries) {
      FUZZ_CHECK(unknown_name("collective", e.collective).empty());
      FUZZ_CHECK(e.dtype.empty() || unknown_name("dtype", e.dtype).empty());
      FUZZ_CHECK(e.backend.empty() || unknown_name("backend", e.backend).empty());
      FUZZ_CHECK(e.memory.empty() || unknown_name("memory", e.memory).empty());
      FUZZ_CHECK(e.min_bytes <= e.max_bytes);
      FUZZ_CHECK(b.tolerance_of(e) >= 0 && b.tolerance_of(e) < 1);
    }
    const GateResult g = gate_rows(b, {row});
    FUZZ_CHECK(g.judged <= 1 && g.failures.size() <= static_cast<size_t>(g.judged));
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(names(e.what(), file.path()));
  }
  return 0;
}
