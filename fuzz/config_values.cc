// The configuration table's value parsers (collectives/core/src/core/config.cc),
// through detail::problem, the one function check() and the typed reads
// share: every row's type (integer, size, boolean, choice, seconds, name, ...)
// gets the input as a value. Rows whose check reads the file system (File,
// Directory, Library, SecretFile) are left out: their parser is stat(). A
// value accepted must also be accepted by the typed read of that row.
#include <cstdlib>
#include <string>

#include "core/config_internal.h"
#include "fuzz_check.h"
#include "smddp/config.h"
#include "smddp/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smddp::config;
  const std::string value(reinterpret_cast<const char*>(data), size);
  const bool has_nul = value.find('\0') != std::string::npos;  // an environment value cannot hold one
  for (const Setting& s : table()) {
    if (s.type == Type::File || s.type == Type::Directory || s.type == Type::Library || s.type == Type::SecretFile) {
      continue;
    }
    for (const std::string& name : names_of(s)) {
      const std::string why = detail::problem(s, name, value);
      if (!why.empty()) FUZZ_CHECK(why.find(name) == 0);  // the message names the variable first
      if (!why.empty() || has_nul || value.empty()) continue;
      // What problem() accepts, the typed read returns without a throw.
      FUZZ_CHECK(setenv(name.c_str(), value.c_str(), 1) == 0);
      try {
        switch (s.type) {
          case Type::Integer: {
            const int64_t x = integer(name);
            FUZZ_CHECK(x >= s.lo && x <= s.hi);
            break;
          }
          case Type::Size: {
            const uint64_t x = bytes(name);
            FUZZ_CHECK(x >= static_cast<uint64_t>(s.lo) && x <= static_cast<uint64_t>(s.hi) && x % s.multiple == 0);
            break;
          }
          case Type::Seconds: {
            const double x = seconds(name);
            FUZZ_CHECK(x > 0 && x <= 1e7);
            break;
          }
          case Type::Boolean:
            (void)flag(name);
            break;
          case Type::Secret:
            FUZZ_CHECK(secret(name) == value);
            break;
          default:
            FUZZ_CHECK(text(name) == value);
        }
      } catch (const smddp::UsageError& e) {
        std::fprintf(stderr, "%s accepted by problem() but not by its read: %s\n", name.c_str(), e.what());
        FUZZ_CHECK(false);
      }
      unsetenv(name.c_str());
    }
  }
  return 0;
}
