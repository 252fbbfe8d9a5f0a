// The TCP store's client side (collectives/transport/src/bootstrap/tcp_store.cc): a
// rank joins a fake rank 0 that answers with the input's bytes, then asks
// get, add and set. Every reply it cannot use must end in one of the store's
// errors (TransportError, TimeoutError, UsageError), never in another
// exception, a crash or an allocation the reply's numbers ask for.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "fuzz_check.h"
#include "smddp/error.h"
#include "bootstrap/tcp_store.h"

namespace {

int g_listener = -1;
int g_port = 0;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(::bind(g_listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  FUZZ_CHECK(::listen(g_listener, 8) == 0);
  socklen_t len = sizeof a;
  FUZZ_CHECK(::getsockname(g_listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  g_port = ntohs(a.sin_port);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_listener < 0) LLVMFuzzerInitialize(nullptr, nullptr);
  // Rank 0's side: the input as every reply, then end of stream; what the
  // rank sends is read and dropped until it closes.
  std::thread server([data, size] {
    const int fd = ::accept4(g_listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::send(fd, data + done, size - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    char buf[4096];
    while (::recv(fd, buf, sizeof buf, 0) > 0) {
    }
    ::close(fd);
  });
  smddp::TcpStoreConfig config;
  config.master_addr = "127.0.0.1";
  config.master_port = g_port;
  config.rank = 1;
  config.world_size = 2;
  config.host = "fuzz";
  config.timeout_seconds = 5;
  try {
    smddp::TcpStore store(config);
    (void)store.get({"a/0", "b/1"});
    (void)store.add("counter", 1);
    store.set("k", "v");
  } catch (const smddp::TransportError&) {
  } catch (const smddp::TimeoutError&) {
  } catch (const smddp::UsageError&) {
  }
  server.join();
  return 0;
}
