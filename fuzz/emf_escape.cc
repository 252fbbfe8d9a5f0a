// The CloudWatch EMF documents smddp-bench and smddp-diag write (telemetry/
// src/emf_row.cc, emf_document.cc), as a round trip: the input becomes every
// free-text member (host, job, collective, ...), the one-line document is
// read back by the strict JSON reader below (RFC 8259: no control
// characters in strings, only the standard escapes, paired surrogates,
// valid UTF-8), and the strings must come back as given when the input was
// valid UTF-8.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emf_row.h"
#include "fuzz_check.h"
#include "utf8.h"

namespace {

// Collects every string (keys and values) of one JSON text; false when the
// text is not exactly one valid JSON value.
class StrictJson {
 public:
  explicit StrictJson(std::string_view s) : s_(s) {}
  bool parse(std::vector<std::string>* strings) {
    out_ = strings;
    if (!value(0)) return false;
    return pos_ == s_.size();
  }

 private:
  bool value(int depth) {
    if (depth > 64 || pos_ >= s_.size()) return false;
    switch (s_[pos_]) {
      case '{': {
        ++pos_;
        if (peek('}')) return ++pos_, true;
        for (;;) {
          if (!peek('"') || !string() || !peek(':')) return false;
          ++pos_;
          if (!value(depth + 1)) return false;
          if (peek('}')) return ++pos_, true;
          if (!peek(',')) return false;
          ++pos_;
        }
      }
      case '[': {
        ++pos_;
        if (peek(']')) return ++pos_, true;
        for (;;) {
          if (!value(depth + 1)) return false;
          if (peek(']')) return ++pos_, true;
          if (!peek(',')) return false;
          ++pos_;
        }
      }
      case '"':
        return string();
      case 't':
        return word("true");
      case 'f':
        return word("false");
      case 'n':
        return word("null");
      default:
        return number();
    }
  }
  bool peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  bool digits() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  bool number() {
    if (peek('-')) ++pos_;
    if (peek('0')) ++pos_;
    else if (!digits()) return false;
    if (peek('.')) {
      ++pos_;
      if (!digits()) return false;
    }
    if (peek('e') || peek('E')) {
      ++pos_;
      if (peek('+') || peek('-')) ++pos_;
      if (!digits()) return false;
    }
    return true;
  }
  bool hex4(unsigned* v) {
    if (pos_ + 4 > s_.size()) return false;
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[pos_++];
      *v <<= 4;
      if (c >= '0' && c <= '9') *v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') *v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') *v |= static_cast<unsigned>(c - 'A' + 10);
      else return false;
    }
    return true;
  }
  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  bool string() {
    ++pos_;  // the opening quote
    std::string v;
    for (;;) {
      if (pos_ >= s_.size()) return false;
      const auto c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') break;
      if (c < 0x20) return false;
      if (c != '\\') {
        v += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': v += e; break;
        case 'b': v += '\b'; break;
        case 'f': v += '\f'; break;
        case 'n': v += '\n'; break;
        case 'r': v += '\r'; break;
        case 't': v += '\t'; break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xdc00 && cp <= 0xdfff) return false;  // a lone low surrogate
          if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo = 0;
            if (!word("\\u") || !hex4(&lo) || lo < 0xdc00 || lo > 0xdfff) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(v, cp);
          break;
        }
        default:
          return false;
      }
    }
    if (!smddp::fuzz::valid_utf8(v)) return false;
    out_->push_back(std::move(v));
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::vector<std::string>* out_ = nullptr;
};

void check_document(const std::string& line, const std::string& input) {
  FUZZ_CHECK(line.find('\n') == std::string::npos);  // one document per line
  std::vector<std::string> strings;
  if (!StrictJson(line).parse(&strings)) {
    std::fprintf(stderr, "not strict JSON: %s\n", line.c_str());
    FUZZ_CHECK(false);
  }
  if (smddp::fuzz::valid_utf8(input)) {
    bool found = false;
    for (const auto& s : strings) found = found || s == input;
    FUZZ_CHECK(found);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smddp::telemetry;
  const std::string input(reinterpret_cast<const char*>(data), size);
  BenchRow row;
  row.collective = row.dtype = row.op = row.backend = row.algorithm = input;
  row.bytes = 4096;
  row.time_us = 1;
  try {
    check_document(emf_row_document(row, "smddp/fuzz", input, input).serialize(), input);
    check_document(emf_timeout_document(input, "smddp/fuzz", input, input).serialize(), input);
  } catch (const std::invalid_argument&) {
    // A dimension name the input made invalid (empty, under "_aws"): refused, not written.
  }
  return 0;
}
