#include "common/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "smddp/config.h"
#include "smddp/error.h"

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

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
}

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::string();
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
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

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      throw Error("cannot write " + tmp + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
}

void check_writable(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  fs::path p(path);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw UsageError(flag + " '" + path + "' is a directory");
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(flag + " '" + path + "': directory " + dir.string() + " does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw UsageError(flag + " '" + path + "': cannot write in " + dir.string() + ": " + std::strerror(errno));
  }
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace smddp::diag
