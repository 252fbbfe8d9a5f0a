// smddp-model's file reader (model::load: the bounded read, then the JSON
// and its fields, smddp/model/cost_model.h), which smddp-model predict,
// check and export, smddp-bench --model and --baseline and smddp-diag
// --model all share. A malformed file is one UsageError naming it, never a
// crash or another exception; a model it accepts holds finite parameters
// >= 0 and the engine's slot bounds, and reads back the same from its own
// JSON (to_json).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "smddp/error.h"
#include "smddp/model/cost_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const smddp::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  smddp::model::Model m;
  try {
    m = smddp::model::load(file.path());
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with(file.path()));
    return 0;
  }
  for (const auto& tier : m.tiers) {
    for (double v : tier.value) FUZZ_CHECK(std::isfinite(v) && v >= 0);
  }
  FUZZ_CHECK(m.options.shm_slot_bytes >= 4096);
  const smddp::model::Model back = smddp::model::from_json(smddp::model::to_json(m), "round trip");
  for (size_t t = 0; t < m.tiers.size(); ++t) {
    FUZZ_CHECK(back.tiers[t].value == m.tiers[t].value);
    FUZZ_CHECK(back.tiers[t].determined == m.tiers[t].determined);
  }
  FUZZ_CHECK(back.options.shm_slot_bytes == m.options.shm_slot_bytes && back.options.cma == m.options.cma &&
             back.options.dedicated_cores == m.options.dedicated_cores);
  return 0;
}
