#include "smddp/tools/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "smddp/error.h"
#include "smddp/tools/paths.h"

namespace smddp::tools {
namespace {

std::atomic<SyncFunction> g_sync{&::fsync};
std::atomic<unsigned> g_serial{0};  // two writers in one process never share a temporary

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error("cannot " + what + " " + path + ": " + std::strerror(err));
}

}  // namespace

SyncFunction set_sync_function(SyncFunction sync) { return g_sync.exchange(sync ? sync : &::fsync); }

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  const WriteTarget t = resolve_write_target(path);
  if (t.kind == WriteTarget::kRefused) throw Error("will not replace " + path + ": it " + t.refused);
  target_ = t.path;
  if (t.kind == WriteTarget::kStream) {
    // O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of
    // waiting for one forever; the writes after it block as usual.
    fd_ = open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd_ < 0 && errno == ENXIO) throw UsageError("cannot write " + target_ + ": a FIFO with no reader");
    if (fd_ < 0) fail("write", target_, errno);
    const int flags = fcntl(fd_, F_GETFL);
    if (flags < 0 || fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      const int err = errno;
      close(fd_);
      fd_ = -1;
      fail("write", target_, err);
    }
    return;
  }
  tmp_ = target_ + ".tmp." + std::to_string(getpid()) + "." + std::to_string(g_serial++);
  fd_ = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("write", tmp_, errno);
  // A replaced file keeps its permissions.
  struct stat st {};
  if (t.kind == WriteTarget::kFile && stat(target_.c_str(), &st) == 0) fchmod(fd_, st.st_mode & 07777);
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) unlink(tmp_.c_str());
}

void AtomicFile::write(std::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write", tmp_.empty() ? target_ : tmp_, errno);
    done += static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (committed_) return;
  if (tmp_.empty()) {  // a device or FIFO: nothing to rename or sync
    committed_ = true;
    close(fd_);
    fd_ = -1;
    return;
  }
  if (g_sync.load()(fd_) != 0) fail("fsync", tmp_, errno);
  if (close(fd_) != 0) {
    fd_ = -1;
    fail("close", tmp_, errno);
  }
  fd_ = -1;
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) fail("rename " + tmp_ + " to", target_, errno);
  committed_ = true;
  // The rename is durable once the directory entry is on disk.
  std::filesystem::path dir = std::filesystem::path(target_).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("open directory", dir.string(), errno);
  const int rc = g_sync.load()(dfd);
  const int err = errno;
  close(dfd);
  if (rc != 0) fail("fsync directory", dir.string(), err);
}

void write_atomically(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

}  // namespace smddp::tools
