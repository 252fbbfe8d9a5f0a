// The TCP store's challenge-response (docs/deploy.md, "Securing the TCP
// store"). Every rank and rank 0's store share a secret
// (SMDDP_STORE_SECRET or SMDDP_STORE_SECRET_FILE). On accept the store
// sends a fresh random nonce; the client's Hello carries its own nonce and
//   HMAC-SHA256(secret, "smddp-store client" | version | server nonce |
//               client nonce | rank | world size | host)
// and the store's Ok carries the same over "smddp-store server", so each
// side learns the other knows the secret without it crossing the wire, and
// a recorded handshake cannot be replayed (the nonces differ). The MAC is
// common/'s AuthFrame: every field length-framed, so no two contexts are
// the same bytes.
#pragma once

#include <string>

#include "bootstrap/tcp_store_wire.h"

namespace smddp::store {

// kNonceBytes random bytes (crypto::random_bytes; TransportError when there are none).
std::string random_nonce();

// SMDDP_STORE_SECRET, else SMDDP_STORE_SECRET_FILE's contents; empty when
// neither is set (UsageError for a malformed one).
std::string configured_secret();

std::string client_proof(const std::string& secret, const std::string& server_nonce, const Hello& hello);
std::string server_proof(const std::string& secret, const std::string& server_nonce, const Hello& hello);

// The Hello's proof equals the one `secret` gives (compared in constant time).
bool hello_is_authentic(const std::string& secret, const std::string& server_nonce, const Hello& hello);
bool server_is_authentic(const std::string& secret, const std::string& server_nonce, const Hello& hello,
                         const std::string& proof);

}  // namespace smddp::store
