// Decimal numbers: one grammar for every smddp tool's numeric flags, every
// SMDDP_* number and time setting and the preflight profiles' numbers, so
// that the same text is the same number everywhere. strtod and strtol(.., 0)
// also read "0x10" (16), "010" (8 in base 0), "inf", "nan" and overflow to
// HUGE_VAL; these parsers refuse each with a reason.
//
//   number:   [+-] digits [. digits] [(e|E) [+-] digits]   ("2", "-0.5", "1e3", ".5")
//   integer:  [+-] digits                                  (no fraction, no exponent)
//
// Leading and trailing whitespace is ignored. The value after conversion must
// be finite and fit its type ("1e999" and "99999999999999999999" are out of range).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace smddp::common {

// The longest wait any tool, setting or profile accepts, in seconds (about
// four months): a deadline in int64 nanoseconds cannot overflow, even after
// adding a few such waits together (4 x 1e7 s is 4e16 ns, of 9.2e18).
inline constexpr double kMaxSeconds = 1e7;

// nullopt for anything else; then `why`, when given, says what is wrong in a
// few words ("empty", "hexadecimal", "not finite", "out of range", ...).
std::optional<double> parse_number(std::string_view text, std::string* why = nullptr);
std::optional<int64_t> parse_integer(std::string_view text, std::string* why = nullptr);
// As parse_integer, and "negative" for a sign.
std::optional<uint64_t> parse_unsigned(std::string_view text, std::string* why = nullptr);

// A number of seconds 0..kMaxSeconds; with `positive`, above 0.
std::optional<double> parse_seconds(std::string_view text, bool positive, std::string* why = nullptr);
// "" when `seconds` is such a number, else what is wrong ("more than 10000000 seconds").
std::string seconds_problem(double seconds, bool positive);
// "seconds 0..10000000" or "seconds > 0, at most 10000000": what a time value must be, for messages.
std::string seconds_expectation(bool positive);

}  // namespace smddp::common
