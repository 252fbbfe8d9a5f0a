// Byte sizes: one grammar for every smddp tool's flags, every SMDDP_* size
// setting, the tuning file and the preflight profiles, so that the same text
// is the same number of bytes everywhere. The grammar is documented once, in
// docs/bench.md#sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace smddp::common {

// The largest size accepted: sizes travel as int64 (JSON, MPI counts).
inline constexpr uint64_t kMaxSize = static_cast<uint64_t>(INT64_MAX);

// What a size looks like, for messages.
inline constexpr std::string_view kSizeExamples = "a byte count like 8, 4K, 1.5M or 64 MiB (docs/bench.md#sizes)";

// "4096", "8K", "16m", "1.5GiB", "64 MB", "1e3", "2.5e6", "1e3K". Decimals
// and exponents are accepted when the result is a whole number of bytes
// ("0.5K" yes, "1.5" or "0.3K" no: nccl-tests would truncate them).
// nullopt for anything else; then `why`, when given, says what is wrong in a
// few words ("negative", "more than 2^63-1 bytes", "hexadecimal", ...).
std::optional<uint64_t> parse_size(std::string_view text, std::string* why = nullptr);

// parse_size, or UsageError "<what> '<text>': <why>; expected a byte count like ...".
uint64_t parse_size_or_throw(std::string_view text, std::string_view what);

}  // namespace smddp::common
