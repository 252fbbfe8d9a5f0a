// Strict UTF-8 validation for the output round trips (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
#pragma once

#include <string_view>

namespace smddp::fuzz {

inline bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace smddp::fuzz
