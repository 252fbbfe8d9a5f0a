#include "smddp/tools/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "smddp/error.h"

namespace smddp::tools {

namespace fs = std::filesystem;

WriteTarget resolve_write_target(const std::string& path) {
  WriteTarget t;
  t.path = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (lstat(t.path.c_str(), &st) != 0) {
      if (errno == ENOENT) return t;  // kNew: a dangling link creates its target
      t.kind = WriteTarget::kRefused;
      t.refused = std::string("cannot be inspected: ") + std::strerror(errno);
      return t;
    }
    if (S_ISLNK(st.st_mode)) {
      if (hops == 40) return {WriteTarget::kRefused, t.path, "has too many levels of symbolic links"};
      std::error_code ec;
      fs::path link = fs::read_symlink(t.path, ec);
      if (ec) return {WriteTarget::kRefused, t.path, "is an unreadable symbolic link"};
      t.path = link.is_absolute() ? link.string() : (fs::path(t.path).parent_path() / link).string();
      continue;
    }
    if (S_ISDIR(st.st_mode)) return {WriteTarget::kRefused, t.path, "is a directory"};
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {WriteTarget::kStream, t.path, ""};
    if (!S_ISREG(st.st_mode)) return {WriteTarget::kRefused, t.path, "is not a regular file, character device or FIFO"};
    if (st.st_nlink > 1) {
      return {WriteTarget::kRefused, t.path,
              "has " + std::to_string(st.st_nlink) + " hard links; replacing it would split them"};
    }
    t.kind = WriteTarget::kFile;
    return t;
  }
}

bool same_file(const std::string& a, const std::string& b) {
  const WriteTarget ta = resolve_write_target(a), tb = resolve_write_target(b);
  std::error_code ea, eb;
  const fs::path pa = fs::weakly_canonical(fs::absolute(ta.path, ea), ea);
  const fs::path pb = fs::weakly_canonical(fs::absolute(tb.path, eb), eb);
  if (!ea && !eb && pa == pb) return true;
  struct stat sa {}, sb {};
  return stat(ta.path.c_str(), &sa) == 0 && stat(tb.path.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void check_writable(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  const std::string what = flag + " '" + path + "'";
  const WriteTarget t = resolve_write_target(path);
  if (t.kind == WriteTarget::kRefused) throw UsageError(what + " " + t.refused);
  if (t.kind == WriteTarget::kStream) {
    if (access(t.path.c_str(), W_OK) != 0) throw UsageError(what + ": " + std::strerror(errno));
    return;
  }
  const fs::path p(t.path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError(what + ": directory " + dir.string() + " does not exist");
  // Creating a probe file is the only reliable test (root passes access()).
  const std::string probe = (dir / (".smddp-probe." + std::to_string(getpid()))).string();
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw UsageError(what + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
  close(fd);
  unlink(probe.c_str());
  // Replacing needs only the directory, but a read-only file says "keep me".
  if (t.kind == WriteTarget::kFile && access(t.path.c_str(), W_OK) != 0) {
    throw UsageError(what + ": " + std::strerror(errno));
  }
}

}  // namespace smddp::tools
