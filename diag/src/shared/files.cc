#include "shared/files.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "smddp/common/strings.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::diag {

namespace fs = std::filesystem;

SystemRoot::SystemRoot(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root == "/") return;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw UsageError("sysfs root '" + root + "' is not a directory");
  root_ = root;
}

SystemRoot SystemRoot::from_option(const std::string& option) {
  if (!option.empty()) return SystemRoot(option);
  return SystemRoot(config::text("SMDDP_SYSFS_ROOT"));  // a directory (checked); default "/"
}

std::string SystemRoot::path(const std::string& absolute) const { return root_ + absolute; }

std::optional<std::string> read_file(const std::string& path) { return tools::try_read_input_file(path); }

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::string();
  return std::string(common::trim_end(line));
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> link_target_name(const std::string& path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(path, ec);
  if (ec) return std::nullopt;
  std::string name = target.filename().string();
  if (name.empty()) name = target.parent_path().filename().string();
  return name;
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace smddp::diag
