// File helpers and the system root. Every /sys and /proc path the diag tool
// reads goes through SystemRoot, so tests can point it at a fake tree
// (--sysfs-root DIR or SMDDP_SYSFS_ROOT): DIR/sys/class/infiniband, DIR/proc/stat...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace smddp::diag {

class SystemRoot {
 public:
  SystemRoot() = default;
  // "" or "/" means the real system. Throws UsageError when `root` is not a directory.
  explicit SystemRoot(std::string root);
  // The root from --sysfs-root when given, else SMDDP_SYSFS_ROOT, else "/".
  static SystemRoot from_option(const std::string& option);

  // An absolute system path ("/sys/class/net") under the root.
  std::string path(const std::string& absolute) const;
  bool is_real() const { return root_.empty(); }
  const std::string& root() const { return root_; }

 private:
  std::string root_;  // without trailing slash; empty for "/"
};

// The file's content, or nullopt when it cannot be read (tools::try_read_input_file:
// a regular file, bounded, never a blocking open).
std::optional<std::string> read_file(const std::string& path);
// The first line without trailing whitespace, or nullopt.
std::optional<std::string> read_line(const std::string& path);
// Names in a directory, sorted; empty when it is missing.
std::vector<std::string> list_dir(const std::string& path);
// The last path component a symlink points to ("../../0000:10:1b.0" -> "0000:10:1b.0").
std::optional<std::string> link_target_name(const std::string& path);

// Output files: smddp::tools::write_atomically and check_writable (common/).

std::string hostname();

}  // namespace smddp::diag
