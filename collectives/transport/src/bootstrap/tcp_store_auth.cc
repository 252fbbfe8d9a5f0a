// The TCP store's proofs (tcp_store_auth.h).
#include "bootstrap/tcp_store_auth.h"

#include "smddp/common/auth_frame.h"
#include "smddp/common/crypto.h"
#include "smddp/config.h"

namespace smddp::store {
namespace {

crypto::AuthFrame proof_frame(const char* label, const std::string& server_nonce, const Hello& h) {
  crypto::AuthFrame frame(label);
  frame.u32(kVersion).field(server_nonce).field(h.nonce).u32(h.rank).u32(h.world_size).field(h.host);
  return frame;
}

constexpr char kClient[] = "smddp-store client", kServer[] = "smddp-store server";

}  // namespace

std::string random_nonce() { return crypto::random_bytes(kNonceBytes); }

std::string configured_secret() {
  return config::is_set("SMDDP_STORE_SECRET") ? config::secret("SMDDP_STORE_SECRET")
                                              : config::secret("SMDDP_STORE_SECRET_FILE");
}

std::string client_proof(const std::string& secret, const std::string& server_nonce, const Hello& hello) {
  return proof_frame(kClient, server_nonce, hello).mac(secret);
}

std::string server_proof(const std::string& secret, const std::string& server_nonce, const Hello& hello) {
  return proof_frame(kServer, server_nonce, hello).mac(secret);
}

bool hello_is_authentic(const std::string& secret, const std::string& server_nonce, const Hello& hello) {
  return proof_frame(kClient, server_nonce, hello).verify(secret, hello.proof);
}

bool server_is_authentic(const std::string& secret, const std::string& server_nonce, const Hello& hello,
                         const std::string& proof) {
  return proof_frame(kServer, server_nonce, hello).verify(secret, proof);
}

}  // namespace smddp::store
