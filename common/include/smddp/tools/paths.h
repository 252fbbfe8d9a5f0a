// What writing an output file would replace, and the check every tool runs
// on its output flags before any work. One policy, shared with AtomicFile:
//  - a symbolic link is followed: the file it names is replaced, the link stays;
//  - a character device or FIFO (/dev/null, a pipe) is written to directly;
//  - a directory, a block device, a socket, or a regular file with other hard
//    links (replacing it would silently split the links) is refused.
#pragma once

#include <string>

namespace smddp::tools {

struct WriteTarget {
  enum Kind { kNew, kFile, kStream, kRefused };
  Kind kind = kNew;
  std::string path;     // after following symbolic links
  std::string refused;  // why, for kRefused: "is a directory"
};

WriteTarget resolve_write_target(const std::string& path);

// Whether two output paths would write the same file: the same target after
// symbolic links (compared as absolute, normalised paths), or, for existing
// files, the same device and inode (hard links, bind mounts).
bool same_file(const std::string& a, const std::string& b);

// Throws UsageError "<flag> '<path>': ..." when `path` could not be written
// later: refused by the policy above, a missing or unwritable directory, or
// a read-only file. "" (no file) and "-" (standard output) pass. Creates
// nothing that outlives the call.
void check_writable(const std::string& path, const std::string& flag);

}  // namespace smddp::tools
