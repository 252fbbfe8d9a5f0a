#include "smddp/tools/input_file.h"

#include "smddp/error.h"

namespace smddp::tools {

std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes) {
  std::string text;
  const std::string why = common::read_bounded_file(path, max_bytes, &text);
  if (!why.empty()) throw UsageError(what + ": cannot read: " + why);
  return text;
}

std::optional<std::string> try_read_input_file(const std::string& path, size_t max_bytes) {
  std::string text;
  if (!common::read_bounded_file(path, max_bytes, &text).empty()) return std::nullopt;
  return text;
}

}  // namespace smddp::tools
