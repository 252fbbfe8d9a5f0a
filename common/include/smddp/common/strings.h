// The small string helpers every layer needs (engine, tools, tests), in one
// place. Whitespace is the C locale's: space, \t, \n, \v, \f, \r.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace smddp::common {

bool is_space(char c);

// " a b\n" -> "a b". A view into `text`: keep `text` alive while it is used.
std::string_view trim(std::string_view text);
// Trailing whitespace only: "  1\n" -> "  1" (a sysfs or /proc line).
std::string_view trim_end(std::string_view text);

// The pieces between `sep`s, each trimmed, the empty ones dropped: the
// reading of a user's list. " a, ,b ," -> {"a", "b"}; "" -> {}.
std::vector<std::string> split(std::string_view text, char sep);

// {"a", "b"}, ", " -> "a, b".
std::string join(const std::vector<std::string>& parts, std::string_view sep);

// ASCII case mapping ("AllReduce" -> "allreduce"); other bytes unchanged.
std::string to_lower(std::string_view text);
std::string to_upper(std::string_view text);

// "[::1]" -> "::1" (an IPv6 literal as a bind address is written); anything
// else unchanged.
std::string strip_brackets(std::string_view address);

}  // namespace smddp::common
