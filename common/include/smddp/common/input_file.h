// The one bounded, non-blocking reader of a file a user names, for every
// layer: the engine's SMDDP_TUNING_FILE and, through smddp/tools/input_file.h,
// the tools' --baseline, --model, results and the rest. Opened without
// blocking, so a FIFO with no writer cannot hang the caller; a regular file
// only; and never more than a bound read, so an endless (/dev/zero) or huge
// file is refused, not loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace smddp::common {

// Larger than any results, baseline, model or tuning file the tools write.
inline constexpr size_t kMaxInputBytes = size_t{256} << 20;

// "" with the file's contents in *text, or why it cannot be read ("No such
// file or directory", "a directory, not a file", "not a regular file (a
// FIFO, device or socket)", "larger than 256 MiB"); *text is then untouched.
std::string read_bounded_file(const std::string& path, size_t max_bytes, std::string* text);

// The same opening and refusals for a file that grows while it is read (a
// log another process appends to): the bytes from `*offset` to the file's
// current end, at most the last `max_bytes` of them, in *text; *offset is
// moved to where the bytes start (later than asked when more than
// `max_bytes` were new; 0 when the file is now shorter than `*offset`, i.e.
// truncated or replaced). "" or why it cannot be read; no size refusal.
std::string read_file_tail(const std::string& path, size_t max_bytes, uint64_t* offset, std::string* text);

}  // namespace smddp::common
