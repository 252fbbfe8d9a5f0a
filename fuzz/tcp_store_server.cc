// The TCP store's server side (collectives/transport/src/bootstrap/tcp_store_server.cc):
// request bytes from up to four connections, decoded and handled as the
// server thread does (replay_for_fuzzing). Input: one byte for WORLD_SIZE
// (1..4), then records of [connection 0..3][length, u16 LE][bytes].
#include <string>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "bootstrap/tcp_store_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int world_size = 1 + data[0] % 4;
  std::vector<std::pair<int, std::string>> chunks;
  for (size_t i = 1; i < size;) {
    const int conn = data[i] % 4;
    size_t len = i + 2 < size ? data[i + 1] | (static_cast<size_t>(data[i + 2]) << 8) : 0;
    i += 3;
    if (i > size) break;
    len = std::min(len, size - i);
    chunks.emplace_back(conn, std::string(reinterpret_cast<const char*>(data + i), len));
    i += len;
  }
  (void)smddp::store::replay_for_fuzzing(world_size, chunks);
  return 0;
}
