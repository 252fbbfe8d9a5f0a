// The socket transport's setup handshake (socket_transport.h): the higher
// rank of each pair connects to the lower one's listener and names itself
// in a hello. Without a secret the hello is magic, rank and job size. With
// one (docs/deploy.md, "Securing the TCP store") it is a mutual
// challenge-response: the connector sends its nonce, the listener answers
// with its nonce and its proof, the connector checks that and sends its own
// proof. Each proof is HMAC-SHA256(secret, role | listener | connector |
// size | both nonces), each field length-framed (common/'s AuthFrame), so
// neither can be replayed on another connection or reflected as the other.
#pragma once

#include <string>
#include <vector>

#include "smddp/common/socket_io.h"

namespace smddp::socket_setup {

// "2.5 s", for messages.
std::string seconds_text(double s);

// The connector's half of the hello to rank `listener` (`peer_name` for
// messages); false when the connection broke (worth another try). A
// listener that cannot prove the secret is final: TransportError.
bool say_hello(int fd, int me, int listener, int size, const std::string& secret, const std::string& peer_name,
               net::Clock::time_point deadline);

// The listener's half: takes one connection from each rank above `me`
// (of `by_rank.size()`), in any order, into by_rank[rank]. Hellos are read
// side by side, each within its own few seconds and never past its fixed
// size, so a stranger that is silent, slow or wrong delays no rank, and no
// connection takes a rank's slot before its hello (with a secret: its
// proof) is complete; a stranger is dropped with one line on stderr.
// TimeoutError at `deadline` names the ranks that did not connect.
void accept_from_higher(int listener, int me, const std::string& secret, std::vector<net::Fd>& by_rank,
                        net::Clock::time_point deadline, double timeout);

}  // namespace smddp::socket_setup
