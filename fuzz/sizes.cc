// smddp::tools::parse_size (common/): never above kMaxSize, exact for plain
// decimals, and what it accepts prints back to the same number.
#include <cctype>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "smddp/error.h"
#include "smddp/tools/sizes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smddp::tools;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto v = parse_size(text);
  if (v) {
    FUZZ_CHECK(*v <= kMaxSize);
    FUZZ_CHECK(parse_size(std::to_string(*v)) == v);
    FUZZ_CHECK(parse_size(std::to_string(*v) + "B") == v);
    if (*v % 1024 == 0) FUZZ_CHECK(parse_size(std::to_string(*v / 1024) + "K") == v);
  }
  bool plain = !text.empty() && text.size() <= 18;
  for (char c : text) plain = plain && c >= '0' && c <= '9';
  if (plain) FUZZ_CHECK(v && *v == std::stoull(std::string(text)));
  try {
    FUZZ_CHECK(parse_size_or_throw(text, "--size") == *v);
  } catch (const smddp::UsageError&) {
    FUZZ_CHECK(!v);
  }
  return 0;
}
