// Output files that readers (node_exporter's textfile collector, a dashboard
// tailing -J) only ever see whole: the text goes to a temporary in the same
// directory, is fsync'ed, renamed over the target, and the directory is
// fsync'ed so the rename survives a power loss. What `path` may name follows
// smddp/tools/paths.h: symbolic links are followed (the file they name is
// replaced), devices and FIFOs are written directly, hard-linked files,
// directories and sockets are refused.
#pragma once

#include <string>
#include <string_view>

namespace smddp::tools {

class AtomicFile {
 public:
  // Creates the temporary (or opens the device). Throws smddp::Error;
  // UsageError for a FIFO that no process reads (opening it never waits).
  explicit AtomicFile(const std::string& path);
  // Without commit() the temporary is removed and `path` keeps its old
  // content: a write cut short never shows.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view text);
  // fsync, rename over the target, fsync the directory. Throws smddp::Error;
  // the old file is then untouched.
  void commit();

  // The file that commit() replaces (symbolic links followed).
  const std::string& target() const { return target_; }
  const std::string& temporary() const { return tmp_; }

 private:
  void discard();

  std::string path_, target_, tmp_;  // tmp_ empty for a device or FIFO
  int fd_ = -1;
  bool committed_ = false;
};

// AtomicFile(path), write(text), commit().
void write_atomically(const std::string& path, std::string_view text);

// Tests count and fail fsyncs through this; returns the previous function.
using SyncFunction = int (*)(int fd);
SyncFunction set_sync_function(SyncFunction sync);

}  // namespace smddp::tools
