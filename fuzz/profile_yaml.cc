// smddp-diag's preflight profiles (diag/src/preflight/profile.cc): YAML text
// in, a Profile or one UsageError naming the origin out. yaml-cpp's own
// exceptions must not escape (they would end smddp-diag with 70, not 64).
#include <string>

#include "fuzz_check.h"
#include "preflight/profile.h"
#include "smddp/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const smddp::diag::Profile p = smddp::diag::parse_profile(text, "fuzz.yaml");
    for (const auto& c : p.checks) FUZZ_CHECK(c.spec != nullptr);
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(std::string(e.what()).find("fuzz.yaml") != std::string::npos);
  }
  return 0;
}
