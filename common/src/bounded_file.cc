#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "smddp/common/input_file.h"

namespace smddp::common {
namespace {

std::string mib_text(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string read_bounded_file(const std::string& path, size_t max_bytes, std::string* out) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once (and is then refused).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::strerror(errno);
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0) why = std::strerror(errno);
  else if (S_ISDIR(st.st_mode)) why = "a directory, not a file";
  else if (!S_ISREG(st.st_mode)) why = "not a regular file (a FIFO, device or socket)";
  else if (static_cast<unsigned long long>(st.st_size) > max_bytes) why = "larger than " + mib_text(max_bytes);
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

}  // namespace smddp::common
