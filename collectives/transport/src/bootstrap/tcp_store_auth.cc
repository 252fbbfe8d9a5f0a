// The TCP store's proofs (tcp_store_auth.h).
#include "bootstrap/tcp_store_auth.h"

#include <sys/random.h>

#include <cerrno>

#include "smddp/config.h"
#include "smddp/error.h"
#include "transports/sha256.h"
#include "transports/socket_io.h"

namespace smddp::store {
namespace {

std::string proof(const char* label, const std::string& secret, const std::string& server_nonce, const Hello& h) {
  Writer context;
  context.str(label).u32(kVersion).str(server_nonce).str(h.nonce).u32(h.rank).u32(h.world_size).str(h.host);
  // The frame's head is fixed bytes around the payload: harmless to include.
  return crypto::bytes(crypto::hmac_sha256(secret, context.frame(0)));
}

}  // namespace

std::string random_nonce() {
  std::string nonce(kNonceBytes, '\0');
  size_t got = 0;
  while (got < nonce.size()) {
    ssize_t n = ::getrandom(nonce.data() + got, nonce.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw TransportError("TCP store: getrandom: " + net::errno_text(errno));
    got += static_cast<size_t>(n);
  }
  return nonce;
}

std::string configured_secret() {
  return config::is_set("SMDDP_STORE_SECRET") ? config::secret("SMDDP_STORE_SECRET")
                                              : config::secret("SMDDP_STORE_SECRET_FILE");
}

std::string client_proof(const std::string& secret, const std::string& server_nonce, const Hello& hello) {
  return proof("smddp-store client", secret, server_nonce, hello);
}

std::string server_proof(const std::string& secret, const std::string& server_nonce, const Hello& hello) {
  return proof("smddp-store server", secret, server_nonce, hello);
}

bool hello_is_authentic(const std::string& secret, const std::string& server_nonce, const Hello& hello) {
  return crypto::equal_in_constant_time(client_proof(secret, server_nonce, hello), hello.proof);
}

bool server_is_authentic(const std::string& secret, const std::string& server_nonce, const Hello& hello,
                         const std::string& proof) {
  return crypto::equal_in_constant_time(server_proof(secret, server_nonce, hello), proof);
}

}  // namespace smddp::store
