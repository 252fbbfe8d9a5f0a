// smddp::common::parse_size (common/), the one size grammar: never above
// kMaxSize, exact for plain decimals, what it accepts prints back to the same
// number, and what it refuses it names a reason for, on one line.
#include <cctype>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "smddp/common/sizes.h"
#include "smddp/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smddp::common;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto v = parse_size(text, &why);
  if (v) {
    FUZZ_CHECK(why.empty());
    FUZZ_CHECK(*v <= kMaxSize);
    FUZZ_CHECK(parse_size(std::to_string(*v)) == v);
    FUZZ_CHECK(parse_size(std::to_string(*v) + "B") == v);
    FUZZ_CHECK(parse_size(" " + std::to_string(*v) + " B ") == v);
    if (*v % 1024 == 0) FUZZ_CHECK(parse_size(std::to_string(*v / 1024) + "K") == v);
    if (*v % 1024 == 0) FUZZ_CHECK(parse_size(std::to_string(*v / 1024) + " KiB") == v);
  } else {
    FUZZ_CHECK(!why.empty());
  }
  bool plain = !text.empty() && text.size() <= 18;
  for (char c : text) plain = plain && c >= '0' && c <= '9';
  if (plain) FUZZ_CHECK(v && *v == std::stoull(std::string(text)));
  try {
    FUZZ_CHECK(parse_size_or_throw(text, "--size") == *v);
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(!v);
    FUZZ_CHECK(std::string_view(e.what()).starts_with("--size '"));
  }
  return 0;
}
