// The tuning-file parser (SMDDP_TUNING_FILE, collectives/src/algorithms/
// selector.cc): a malformed file is a UsageError naming the file and the
// line, never a crash; the rules it accepts are well formed, their sizes
// within the one size grammar's range (docs/bench.md#sizes) or inf.
#include <cstdint>
#include <string_view>

#include "algorithms/selector.h"
#include "fuzz_check.h"
#include "smddp/common/sizes.h"
#include "smddp/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& rule : smddp::parse_tuning(text, "fuzz.tuning")) {
      FUZZ_CHECK(!rule.candidates.empty());
      FUZZ_CHECK(rule.max_bytes == SIZE_MAX || rule.max_bytes <= smddp::common::kMaxSize);
      for (const auto& name : rule.candidates) FUZZ_CHECK(!name.empty());
    }
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(std::string_view(e.what()).find("fuzz.tuning") != std::string_view::npos);
  }
  return 0;
}
