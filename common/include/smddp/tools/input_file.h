// The one way the tools read a file a user names (--baseline, --model,
// results, matrices): opened without blocking, so a FIFO with no writer
// cannot hang a tool; a regular file only; and never more than a bound
// read, so an endless (/dev/zero) or huge file is refused, not loaded.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace smddp::tools {

// Larger than any results, baseline or model file a tool writes.
inline constexpr size_t kMaxInputBytes = size_t{256} << 20;

// The file's contents. Throws UsageError "<what>: cannot read: <why>"
// (no such file, a directory, not a regular file, larger than the bound).
std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes = kMaxInputBytes);

// The same reading; nullopt instead of the error.
std::optional<std::string> try_read_input_file(const std::string& path, size_t max_bytes = kMaxInputBytes);

}  // namespace smddp::tools
