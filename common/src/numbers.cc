#include "smddp/common/numbers.h"

#include <charconv>
#include <cmath>

#include "smddp/common/strings.h"

namespace smddp::common {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The unsigned part of a number, checked against the grammar: the forms
// strtod/strtol would take beyond it are named.
struct Shape {
  std::string_view body;  // without the sign
  bool negative = false;
  bool fraction = false;  // a point or an exponent
};

std::optional<Shape> shape(std::string_view text, std::string* why) {
  auto refuse = [why](const char* reason) -> std::optional<Shape> {
    if (why) *why = reason;
    return std::nullopt;
  };
  text = trim(text);
  if (text.empty()) return refuse("empty");
  Shape s;
  if (text[0] == '+' || text[0] == '-') {
    s.negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) return refuse("hexadecimal");
  if (const std::string head = to_lower(text.substr(0, 3)); head == "inf" || head == "nan") return refuse("not finite");
  size_t i = 0, digits = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) ++digits;
  if (i < text.size() && text[i] == '.') {
    s.fraction = true;
    for (++i; i < text.size() && is_digit(text[i]); ++i) ++digits;
  }
  if (digits == 0) return refuse("not a decimal number");
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    s.fraction = true;
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    const size_t first = j;
    while (j < text.size() && is_digit(text[j])) ++j;
    if (j == first) return refuse("not a decimal number");
    i = j;
  }
  if (i != text.size()) return refuse("not a decimal number");
  s.body = text;
  return s;
}

template <typename T>
std::optional<T> refuse(std::string* why, const char* reason) {
  if (why) *why = reason;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_number(std::string_view text, std::string* why) {
  const auto s = shape(text, why);
  if (!s) return std::nullopt;
  double v = 0;
  // from_chars: the C locale's point whatever the process's locale.
  const auto [end, ec] = std::from_chars(s->body.data(), s->body.data() + s->body.size(), v);
  if (ec == std::errc::result_out_of_range) return refuse<double>(why, "out of range");
  if (ec != std::errc() || end != s->body.data() + s->body.size() || !std::isfinite(v)) {
    return refuse<double>(why, "not a decimal number");
  }
  return s->negative ? -v : v;
}

std::optional<int64_t> parse_integer(std::string_view text, std::string* why) {
  const auto s = shape(text, why);
  if (!s) return std::nullopt;
  if (s->fraction) return refuse<int64_t>(why, "not a whole number");
  // The magnitude as unsigned, so that -9223372036854775808 fits.
  uint64_t m = 0;
  const auto [end, ec] = std::from_chars(s->body.data(), s->body.data() + s->body.size(), m);
  const uint64_t limit = static_cast<uint64_t>(INT64_MAX) + (s->negative ? 1 : 0);
  if (ec == std::errc::result_out_of_range || m > limit) return refuse<int64_t>(why, "out of range");
  if (ec != std::errc() || end != s->body.data() + s->body.size()) return refuse<int64_t>(why, "not a decimal number");
  if (!s->negative) return static_cast<int64_t>(m);
  return m == limit ? INT64_MIN : -static_cast<int64_t>(m);
}

std::optional<uint64_t> parse_unsigned(std::string_view text, std::string* why) {
  const auto s = shape(text, why);
  if (!s) return std::nullopt;
  if (s->fraction) return refuse<uint64_t>(why, "not a whole number");
  if (s->negative) return refuse<uint64_t>(why, "negative");
  uint64_t m = 0;
  const auto [end, ec] = std::from_chars(s->body.data(), s->body.data() + s->body.size(), m);
  if (ec == std::errc::result_out_of_range) return refuse<uint64_t>(why, "out of range");
  if (ec != std::errc() || end != s->body.data() + s->body.size()) return refuse<uint64_t>(why, "not a decimal number");
  return m;
}

std::string seconds_expectation(bool positive) {
  const std::string most = std::to_string(static_cast<long long>(kMaxSeconds));
  return positive ? "seconds > 0, at most " + most : "seconds 0.." + most;
}

std::string seconds_problem(double seconds, bool positive) {
  if (!std::isfinite(seconds)) return "not finite";
  if (seconds < 0) return "negative";
  if (positive && !(seconds > 0)) return "not above 0";
  if (seconds > kMaxSeconds) return "more than " + std::to_string(static_cast<long long>(kMaxSeconds)) + " seconds";
  return "";
}

std::optional<double> parse_seconds(std::string_view text, bool positive, std::string* why) {
  const auto v = parse_number(text, why);
  if (!v) return std::nullopt;
  std::string problem = seconds_problem(*v, positive);
  if (problem.empty()) return v;
  if (why) *why = std::move(problem);
  return std::nullopt;
}

}  // namespace smddp::common
