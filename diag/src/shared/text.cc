#include "shared/text.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "smddp/common/numbers.h"

namespace smddp::diag {

std::optional<double> parse_double(std::string_view text) { return common::parse_number(text); }

std::optional<int64_t> parse_int(std::string_view text) {
  const std::string_view s = trim(text);
  if (s.starts_with("0x") || s.starts_with("0X")) {
    auto v = parse_hex(s);
    if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*v);
  }
  return common::parse_integer(s);
}

std::optional<uint64_t> parse_hex(std::string_view text) {
  std::string_view s = trim(text);
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string format_number(double value, int decimals) { return fmt::format("{:.{}f}", value, decimals); }

std::string format_bytes(uint64_t bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  if (v == std::floor(v)) return fmt::format("{:.0f} {}", v, names[u]);
  return fmt::format("{:.1f} {}", v, names[u]);
}

std::string shell_quote(std::string_view word) {
  bool plain = !word.empty();
  for (char c : word) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./_-").find(c) != std::string_view::npos)) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::optional<std::string> cpu_mask_to_list(std::string_view mask) {
  // Words are 32-bit hex groups, most significant first.
  std::vector<std::string> words = split(mask, ',');
  if (words.empty()) return std::nullopt;
  std::vector<bool> bits;
  for (auto it = words.rbegin(); it != words.rend(); ++it) {
    auto v = parse_hex(*it);
    if (!v || it->size() > 10) return std::nullopt;
    for (int b = 0; b < 32; ++b) bits.push_back((*v >> b) & 1u);
  }
  std::vector<std::string> ranges;
  for (size_t i = 0; i < bits.size(); ++i) {
    if (!bits[i]) continue;
    size_t j = i;
    while (j + 1 < bits.size() && bits[j + 1]) ++j;
    ranges.push_back(i == j ? std::to_string(i) : fmt::format("{}-{}", i, j));
    i = j;
  }
  return join(ranges, ",");
}

bool json_depth_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

std::vector<std::pair<int, std::vector<std::string>>> table_lines(const std::string& text) {
  std::vector<std::pair<int, std::vector<std::string>>> out;
  std::istringstream lines(text);
  int line_no = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (!words.empty()) out.emplace_back(line_no, std::move(words));
  }
  return out;
}

}  // namespace smddp::diag
