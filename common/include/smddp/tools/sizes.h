// Byte sizes on the command line and in profiles, one meaning for every smddp
// tool (docs/bench.md#sizes): K, M, G, T, P, E are binary (1024, 1024^2, ...), as in
// nccl-tests, and so are KB/KiB, MB/MiB...: "1GB" is 2^30 bytes everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace smddp::tools {

// The largest size accepted: sizes travel as int64 (JSON, MPI counts).
inline constexpr uint64_t kMaxSize = static_cast<uint64_t>(INT64_MAX);

// "4096", "8K", "16m", "1.5GiB", "64 MB", "1e3", "2.5e6", "1e3K". Decimals and
// exponents are accepted when the result is a whole number of bytes ("0.5K"
// yes, "1.5" or "0.3K" no: nccl-tests would truncate them).
// nullopt for junk, negatives and anything above kMaxSize.
std::optional<uint64_t> parse_size(std::string_view text);

// parse_size, or UsageError "<flag> '<text>': expected a byte count like 8, 4K, 16M or 1G".
uint64_t parse_size_or_throw(std::string_view text, std::string_view flag);

}  // namespace smddp::tools
