// The one way the tools read a file a user names (--baseline, --model,
// results, matrices): common's bounded reader (smddp/common/input_file.h:
// opened without blocking, a regular file only, never more than a bound
// read), with the tools' usage error.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "smddp/common/input_file.h"

namespace smddp::tools {

using common::kMaxInputBytes;

// The file's contents. Throws UsageError "<what>: cannot read: <why>"
// (no such file, a directory, not a regular file, larger than the bound).
std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes = kMaxInputBytes);

// The same reading; nullopt instead of the error.
std::optional<std::string> try_read_input_file(const std::string& path, size_t max_bytes = kMaxInputBytes);

}  // namespace smddp::tools
