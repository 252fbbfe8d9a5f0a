// What the fuzz targets share: a check that holds under g++ replay and
// under libFuzzer alike (assert() vanishes with NDEBUG), and a way to give
// a path-taking loader bytes without a file on disk.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

// A property of the parser under test that failed: abort, so libFuzzer keeps
// the input and a replay fails.
#define FUZZ_CHECK(cond)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__, #cond);    \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace smddp::fuzz {

// An anonymous in-memory file holding `bytes`, named by its /proc path.
class MemoryFile {
 public:
  explicit MemoryFile(std::string_view bytes) : fd_(memfd_create("fuzz-input", MFD_CLOEXEC)) {
    FUZZ_CHECK(fd_ >= 0);
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      FUZZ_CHECK(n > 0);
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace smddp::fuzz
