#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "smddp/common/input_file.h"

namespace smddp::common {
namespace {

std::string mib_text(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Opens `path` without blocking (a FIFO with no writer returns at once) and
// refuses anything but a regular file: "" and *fd, or why not (no fd left open).
std::string open_regular(const std::string& path, int* fd, struct stat* st) {
  *fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (*fd < 0) return std::strerror(errno);
  std::string why;
  if (fstat(*fd, st) != 0) why = std::strerror(errno);
  else if (S_ISDIR(st->st_mode)) why = "a directory, not a file";
  else if (!S_ISREG(st->st_mode)) why = "not a regular file (a FIFO, device or socket)";
  if (!why.empty()) {
    ::close(*fd);
    *fd = -1;
  }
  return why;
}

}  // namespace

std::string read_bounded_file(const std::string& path, size_t max_bytes, std::string* out) {
  int fd = -1;
  struct stat st {};
  std::string why = open_regular(path, &fd, &st);
  if (!why.empty()) return why;
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) why = "larger than " + mib_text(max_bytes);
  std::string text;
  char buf[1 << 16];
  // One byte past the bound tells a file that grew (or a /proc file of size 0) from one that fits.
  while (why.empty()) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::strerror(errno);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) why = "larger than " + mib_text(max_bytes);
  }
  ::close(fd);
  if (why.empty()) *out = std::move(text);
  return why;
}

std::string read_file_tail(const std::string& path, size_t max_bytes, uint64_t* offset, std::string* out) {
  int fd = -1;
  struct stat st {};
  std::string why = open_regular(path, &fd, &st);
  if (!why.empty()) return why;
  // The size at this fstat is the end: bytes appended meanwhile wait for the next call.
  const uint64_t end = static_cast<uint64_t>(st.st_size);
  uint64_t start = *offset > end ? 0 : *offset;
  if (end - start > max_bytes) start = end - max_bytes;
  std::string text(static_cast<size_t>(end - start), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::strerror(errno);
    if (n <= 0) break;  // shrank under us: keep what was read
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (!why.empty()) return why;
  text.resize(done);
  *offset = start;
  *out = std::move(text);
  return "";
}

}  // namespace smddp::common
