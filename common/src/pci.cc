#include "smddp/tools/pci.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "smddp/common/strings.h"

namespace smddp::tools {

std::optional<std::string> normalize_busid(std::string_view busid) {
  const std::string s(common::trim(busid));
  // [domain:]bus:device.function, hex fields.
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ':' || s[i] == '.') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (parts.size() == 3) parts.insert(parts.begin(), "0");
  if (parts.size() != 4) return std::nullopt;
  if (s.find('.') == std::string::npos || s.rfind('.') < s.rfind(':')) return std::nullopt;
  std::array<uint64_t, 4> v{};
  for (size_t i = 0; i < 4; ++i) {
    if (parts[i].empty() || parts[i].size() > 8) return std::nullopt;
    std::string_view f = common::trim(parts[i]);
    if (f.starts_with("0x") || f.starts_with("0X")) f.remove_prefix(2);
    if (f.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v[i], 16);
    if (ec != std::errc() || p != f.data() + f.size()) return std::nullopt;
  }
  if (v[0] > 0xffff || v[1] > 0xff || v[2] > 0x1f || v[3] > 7) return std::nullopt;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", v[0], v[1], v[2], v[3]);
}

}  // namespace smddp::tools
