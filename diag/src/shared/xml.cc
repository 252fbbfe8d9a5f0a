#include "shared/xml.h"

#include <cctype>
#include <string>

#include "shared/text.h"
#include "smddp/error.h"

namespace smddp::diag {

const std::string* XmlElement::attribute(std::string_view key) const {
  for (const auto& [k, v] : attributes) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

constexpr int kMaxDepth = 256;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  XmlElement document() {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
    skip_misc();
    if (eof()) fail("no root element (empty document)");
    if (peek() != '<') fail("text before the root element");
    XmlElement root = element(0);
    skip_misc();
    if (!eof()) fail("content after the root element </" + root.name + ">");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError("line " + std::to_string(line_) + ": malformed XML: " + what);
  }
  bool eof() const { return pos_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool looking_at(std::string_view t) const { return s_.substr(pos_, t.size()) == t; }
  void advance(size_t n = 1) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i) {
      if (s_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  void skip_space() {
    while (!eof() && std::isspace(static_cast<unsigned char>(peek()))) advance();
  }
  void skip_until(std::string_view end, const char* what) {
    size_t found = s_.find(end, pos_);
    if (found == std::string_view::npos) fail(std::string("unterminated ") + what);
    advance(found + end.size() - pos_);
  }
  // Comments, processing instructions, DOCTYPE and whitespace outside the root.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (looking_at("<!--")) {
        skip_until("-->", "comment");
      } else if (looking_at("<?")) {
        skip_until("?>", "processing instruction");
      } else if (looking_at("<!DOCTYPE")) {
        skip_doctype();
      } else {
        return;
      }
    }
  }
  void skip_doctype() {
    int depth = 0;
    while (!eof()) {
      char c = peek();
      advance();
      if (c == '[') ++depth;
      if (c == ']') --depth;
      if (c == '>' && depth <= 0) return;
    }
    fail("unterminated DOCTYPE");
  }
  static bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
  static bool name_char(char c) {
    return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  }
  std::string name() {
    if (!name_start(peek())) fail(std::string("expected a name, found ") + describe(peek()));
    size_t start = pos_;
    while (!eof() && name_char(peek())) advance();
    return std::string(s_.substr(start, pos_ - start));
  }
  static std::string describe(char c) {
    if (c == '\0') return "end of file";
    return std::string("'") + c + "'";
  }
  std::string decode(std::string_view raw) const {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '<') fail("'<' inside an attribute value");
      if (raw[i] != '&') {
        out += raw[i];
        continue;
      }
      size_t semi = raw.find(';', i);
      if (semi == std::string_view::npos) fail("unterminated entity reference");
      std::string_view ent = raw.substr(i + 1, semi - i - 1);
      if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "amp") out += '&';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (!ent.empty() && ent[0] == '#') {
        std::optional<uint64_t> code;
        if (ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X')) {
          code = parse_hex(ent.substr(2));
        } else if (auto v = parse_int(ent.substr(1)); v && *v > 0) {
          code = static_cast<uint64_t>(*v);
        }
        if (!code || *code == 0 || *code > 0x7f) fail("unsupported character reference &" + std::string(ent) + ";");
        out += static_cast<char>(*code);
      } else {
        fail("unknown entity &" + std::string(ent) + ";");
      }
      i = semi;
    }
    return out;
  }

  XmlElement element(int depth) {
    if (depth > kMaxDepth) fail("elements nested deeper than 256 levels");
    XmlElement e;
    e.line = line_;
    advance();  // '<'
    e.name = name();
    for (;;) {
      bool had_space = std::isspace(static_cast<unsigned char>(peek()));
      skip_space();
      if (looking_at("/>")) {
        advance(2);
        return e;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (eof()) fail("unterminated start tag <" + e.name + ">");
      if (!had_space) fail("expected whitespace, '>' or '/>' in <" + e.name + ">, found " + describe(peek()));
      std::string key = name();
      skip_space();
      if (peek() != '=') fail("attribute '" + key + "' of <" + e.name + "> has no value");
      advance();
      skip_space();
      char quote = peek();
      if (quote != '"' && quote != '\'') fail("value of attribute '" + key + "' is not quoted");
      advance();
      size_t end = s_.find(quote, pos_);
      if (end == std::string_view::npos) fail("unterminated value of attribute '" + key + "'");
      std::string value = decode(s_.substr(pos_, end - pos_));
      advance(end + 1 - pos_);
      if (e.attribute(key)) fail("attribute '" + key + "' repeated in <" + e.name + ">");
      e.attributes.emplace_back(std::move(key), std::move(value));
    }
    // Content until the matching end tag.
    for (;;) {
      if (eof()) fail("element <" + e.name + "> (line " + std::to_string(e.line) + ") is never closed");
      if (looking_at("</")) {
        advance(2);
        std::string end_name = name();
        skip_space();
        if (peek() != '>') fail("expected '>' after </" + end_name);
        advance();
        if (end_name != e.name) {
          fail("</" + end_name + "> closes <" + e.name + "> opened on line " + std::to_string(e.line));
        }
        return e;
      }
      if (looking_at("<!--")) {
        skip_until("-->", "comment");
      } else if (looking_at("<![CDATA[")) {
        skip_until("]]>", "CDATA section");
      } else if (looking_at("<?")) {
        skip_until("?>", "processing instruction");
      } else if (peek() == '<') {
        e.children.push_back(element(depth + 1));
      } else {
        size_t next = s_.find('<', pos_);
        if (next == std::string_view::npos) next = s_.size();
        decode(s_.substr(pos_, next - pos_));  // validates entities
        advance(next - pos_);
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

XmlElement parse_xml(std::string_view text) { return Parser(text).document(); }

}  // namespace smddp::diag
