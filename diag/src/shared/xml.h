// A small non-validating XML reader for the topology files we analyse
// (NCCL's topology dump). Elements, attributes, comments, processing
// instructions, DOCTYPE and CDATA; text content is kept only as a flag.
// No dependency: libxml2's headers are not part of our build dependencies.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace smddp::diag {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  int line = 0;

  // nullptr when absent.
  const std::string* attribute(std::string_view key) const;
};

// Parses a whole document and returns its root element. Throws
// smddp::UsageError "line N: <what is wrong>" for malformed input.
XmlElement parse_xml(std::string_view text);

}  // namespace smddp::diag
