// Small string helpers of the diag commands: numbers, human-readable sizes
// and shell quoting. Splitting, joining and trimming are common/'s
// (smddp/common/strings.h), named here for the diag code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "smddp/common/strings.h"
#include "smddp/tools/pci.h"

namespace smddp::diag {

using common::join;
using common::split;
using common::trim;

// Sizes ("64MiB", "8M") are smddp::common::parse_size (docs/bench.md#sizes);
// decimal numbers common::parse_number/parse_integer (smddp/common/numbers.h).

// The whitespace-separated words of each line of a table file, '#' to the
// end of a line a comment: (line number from 1, words) of every line with
// words. isolate's --topology and --noise tables.
std::vector<std::pair<int, std::vector<std::string>>> table_lines(const std::string& text);

// A decimal integer, or hexadecimal (0x...) where a file the kernel or NCCL
// writes may hold either (sysfs, topology XML); nullopt otherwise. What a
// user types (profiles, flags) is decimal only: common::parse_integer.
std::optional<int64_t> parse_int(std::string_view text);
// Hexadecimal, with or without 0x: PCI ids, class codes, CPU masks.
std::optional<uint64_t> parse_hex(std::string_view text);
// common::parse_number: decimal, finite.
std::optional<double> parse_double(std::string_view text);

// 1536 -> "1.5 KiB"; exact powers print without decimals ("64 MiB").
std::string format_bytes(uint64_t bytes);
// Fixed decimals without trailing noise: format_number(2.50, 2) -> "2.50".
std::string format_number(double value, int decimals);

// Quotes for a POSIX shell when needed: abc -> abc, a b -> 'a b'.
std::string shell_quote(std::string_view word);

// Hex CPU mask as NCCL and the kernel write it ("000000ff,ffff0000") -> "0-7,48-63".
// nullopt for text that is not a mask.
std::optional<std::string> cpu_mask_to_list(std::string_view mask);

// False when JSON `text` nests objects and arrays deeper than `max_depth`
// (strings skipped): checked before parsing input from another program, so
// a hostile document cannot exhaust the stack of a recursive reader.
bool json_depth_within(std::string_view text, int max_depth);

// PCI bus ids ("dddd:bb:dd.f") are common/'s (smddp/tools/pci.h).
using tools::normalize_busid;

}  // namespace smddp::diag
