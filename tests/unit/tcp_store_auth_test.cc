// The TCP store's handshake: proofs, the handshake messages' decoding, the
// frame splitter, and a store on loopback that accepts a rank with the
// secret and drops every stranger (wrong proof, garbage, oversized, a
// request before Hello, silence) while it goes on serving.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>

#include "smddp/error.h"
#include "smddp/common/socket_io.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/tcp_store_auth.h"
#include "bootstrap/tcp_store_server.h"
#include "bootstrap/tcp_store_wire.h"

namespace smddp::store {
namespace {

const std::string kSecret = "correct horse battery staple";

Hello hello_for(uint32_t rank, const std::string& server_nonce, const std::string& secret) {
  Hello h{rank, 1, "host-a", random_nonce(), ""};
  h.proof = client_proof(secret, server_nonce, h);
  return h;
}

TEST(StoreAuth, ProofsHoldOnlyForTheirSecretAndContext) {
  const std::string nonce = random_nonce();
  EXPECT_EQ(nonce.size(), kNonceBytes);
  EXPECT_NE(nonce, random_nonce());
  Hello h = hello_for(3, nonce, kSecret);
  EXPECT_TRUE(hello_is_authentic(kSecret, nonce, h));
  EXPECT_FALSE(hello_is_authentic("another secret of some length", nonce, h));
  EXPECT_FALSE(hello_is_authentic(kSecret, random_nonce(), h));  // a replay on a new connection
  Hello other_rank = h;
  other_rank.rank = 4;
  EXPECT_FALSE(hello_is_authentic(kSecret, nonce, other_rank));
  Hello other_host = h;
  other_host.host = "host-b";
  EXPECT_FALSE(hello_is_authentic(kSecret, nonce, other_host));
  Hello cut = h;
  cut.proof.pop_back();
  EXPECT_FALSE(hello_is_authentic(kSecret, nonce, cut));
  // The server's proof is not the client's reflected back.
  const std::string server = server_proof(kSecret, nonce, h);
  EXPECT_NE(server, h.proof);
  EXPECT_TRUE(server_is_authentic(kSecret, nonce, h, server));
  EXPECT_FALSE(server_is_authentic(kSecret, nonce, h, h.proof));
}

TEST(StoreWire, HandshakeMessagesRoundTripAndRefuseMalformedOnes) {
  const Challenge c{kVersion, kFlagSecretRequired, random_nonce()};
  const std::string frame = encode(c);
  Challenge back = decode_challenge(std::string_view(frame).substr(kHeadBytes));
  EXPECT_EQ(back.flags, c.flags);
  EXPECT_EQ(back.nonce, c.nonce);
  EXPECT_THROW(decode_challenge(Writer().u32(kVersion + 1).u32(0).str(c.nonce).frame(4).substr(kHeadBytes)),
               WireError);
  EXPECT_THROW(decode_challenge(Writer().u32(kVersion).u32(0).str("short").frame(4).substr(kHeadBytes)), WireError);

  const Hello h = hello_for(2, c.nonce, kSecret);
  const std::string payload = encode(h).frame(1).substr(kHeadBytes);
  Hello hb = decode_hello(payload);
  EXPECT_EQ(hb.rank, 2u);
  EXPECT_EQ(hb.host, "host-a");
  EXPECT_EQ(hb.proof, h.proof);
  EXPECT_THROW(decode_hello(payload + "x"), WireError);  // trailing bytes
  EXPECT_THROW(decode_hello(payload.substr(0, payload.size() - 1)), WireError);
  EXPECT_THROW(decode_hello(""), WireError);
}

TEST(StoreWire, NextFrameSplitsBoundsAndRefuses) {
  const std::string frame = Writer().str("key").str("value").frame(static_cast<uint8_t>(Op::Set));
  Head head;
  std::string_view payload;
  size_t used = 0;
  for (size_t n = 0; n < frame.size(); ++n) {
    EXPECT_EQ(next_frame(std::string_view(frame).substr(0, n), 1024, &head, &payload, &used),
              FrameState::Incomplete)
        << n;
  }
  ASSERT_EQ(next_frame(frame + "next", 1024, &head, &payload, &used), FrameState::Ready);
  EXPECT_EQ(used, frame.size());
  EXPECT_EQ(payload.size(), frame.size() - kHeadBytes);
  EXPECT_EQ(next_frame(frame, 5, &head, &payload, &used), FrameState::Bad);  // over the limit
  EXPECT_EQ(next_frame("G", 1024, &head, &payload, &used), FrameState::Bad);  // "GET / HTTP/1.1"
  EXPECT_EQ(next_frame(std::string("SMK", 3), 1024, &head, &payload, &used), FrameState::Incomplete);
}

// A raw connection to the store, for playing a stranger.
class Peer {
 public:
  explicit Peer(int port) {
    std::string error;
    auto eps = net::resolve("127.0.0.1", port, &error);
    int err = 0;
    fd_ = net::connect_once(eps.at(0), 5000, &err);
    EXPECT_TRUE(fd_) << net::errno_text(err);
  }
  void send(const std::string& bytes) {
    int err = 0;
    ASSERT_EQ(net::send_all(fd_.get(), bytes.data(), bytes.size(), net::deadline_in(5), &err), net::Io::Ok);
  }
  // The next frame, or nothing when the store closed the connection.
  std::optional<std::pair<Status, std::string>> frame(double seconds = 10) {
    char head_bytes[kHeadBytes];
    int err = 0;
    const auto deadline = net::deadline_in(seconds);
    net::Io io = net::recv_all(fd_.get(), head_bytes, sizeof head_bytes, deadline, &err);
    EXPECT_NE(io, net::Io::Timeout) << "the store neither answered nor closed";
    if (io != net::Io::Ok) return std::nullopt;
    Head head;
    EXPECT_TRUE(parse_head(head_bytes, &head));
    std::string payload(head.length, '\0');
    if (net::recv_all(fd_.get(), payload.data(), payload.size(), deadline, &err) != net::Io::Ok) return std::nullopt;
    return std::pair{static_cast<Status>(head.code), payload};
  }
  Challenge challenge() {
    auto f = frame();
    EXPECT_TRUE(f && f->first == Status::Challenge);
    return f ? decode_challenge(f->second) : Challenge{};
  }

 private:
  net::Fd fd_;
};

std::unique_ptr<Server> loopback_store(const std::string& secret, int world_size = 1) {
  std::string error;
  auto eps = net::resolve("127.0.0.1", 0, &error);
  return std::make_unique<Server>(eps.at(0), "test store", ServerOptions{world_size, 0, secret, 1.5});
}

TEST(StoreServer, AcceptsTheSecretAndDropsStrangersWhileServing) {
  auto server = loopback_store(kSecret);
  // Rank 0 joins with the secret and checks the store's proof.
  Peer rank0(server->port());
  const Challenge c = rank0.challenge();
  EXPECT_EQ(c.flags, kFlagSecretRequired);
  Hello good = hello_for(0, c.nonce, kSecret);
  rank0.send(encode(good).frame(static_cast<uint8_t>(Op::Hello)));
  auto ok = rank0.frame();
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->first, Status::Ok);
  EXPECT_TRUE(server_is_authentic(kSecret, c.nonce, good, Reader(ok->second).str()));

  // Strangers, each dropped.
  Peer wrong(server->port());
  Hello bad = hello_for(0, wrong.challenge().nonce, "not the secret, though long");
  wrong.send(encode(bad).frame(static_cast<uint8_t>(Op::Hello)));
  auto denied = wrong.frame();
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->first, Status::Denied);
  EXPECT_NE(Reader(denied->second).str().find("SMDDP_STORE_SECRET"), std::string::npos);
  EXPECT_FALSE(wrong.frame());

  Peer garbage(server->port());
  garbage.challenge();
  garbage.send("GET / HTTP/1.1\r\n\r\n");
  EXPECT_FALSE(garbage.frame());

  Peer oversized(server->port());
  oversized.challenge();
  oversized.send(Writer().u32(kMagic).frame(1).substr(0, 5) + std::string("\xff\xff\xff\x0f", 4));
  EXPECT_FALSE(oversized.frame());

  Peer early(server->port());
  early.challenge();
  early.send(Writer().str("join/0").str("me").frame(static_cast<uint8_t>(Op::Set)));
  EXPECT_FALSE(early.frame());

  // Both dropped at the 1.5 s handshake limit.
  Peer silent(server->port());
  silent.challenge();
  Peer halfway(server->port());
  halfway.challenge();
  const std::string h = encode(hello_for(0, random_nonce(), kSecret)).frame(1);
  halfway.send(h.substr(0, h.size() / 2));
  EXPECT_FALSE(silent.frame());
  EXPECT_FALSE(halfway.frame());

  // Rank 0, idle all this time, is still served.
  rank0.send(Writer().str("k").str("v").frame(static_cast<uint8_t>(Op::Set)));
  EXPECT_EQ(rank0.frame()->first, Status::Ok);
  rank0.send(Writer().u32(1000).u32(1).str("k").frame(static_cast<uint8_t>(Op::Get)));
  auto got = rank0.frame();
  ASSERT_TRUE(got);
  Reader r(got->second);
  EXPECT_EQ(r.u32(), 1u);
  EXPECT_EQ(r.str(), "v");
}

TEST(StoreServer, WithoutASecretAnyHelloJoins) {
  auto server = loopback_store("");
  Peer p(server->port());
  const Challenge c = p.challenge();
  EXPECT_EQ(c.flags, 0u);
  p.send(encode(Hello{0, 1, "h", random_nonce(), ""}).frame(static_cast<uint8_t>(Op::Hello)));
  auto ok = p.frame();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->first, Status::Ok);
}

// The fuzz targets' entry: the same handshake, then requests.
TEST(StoreServer, ReplayForFuzzingSpeaksTheHandshake) {
  const std::string hello = encode(Hello{0, 1, "h", random_nonce(), ""}).frame(static_cast<uint8_t>(Op::Hello));
  const std::string set = Writer().str("k").str("v").frame(static_cast<uint8_t>(Op::Set));
  const std::string sent = replay_for_fuzzing(1, {{0, hello + set}, {1, "garbage"}, {2, set}});
  // Three Challenges, then Ok to the Hello (with an empty proof) and to the Set.
  size_t challenges = 0, oks = 0;
  for (std::string_view rest = sent; !rest.empty();) {
    Head head;
    std::string_view payload;
    size_t used = 0;
    ASSERT_EQ(next_frame(rest, kMaxPayload, &head, &payload, &used), FrameState::Ready);
    challenges += head.code == static_cast<uint8_t>(Status::Challenge);
    oks += head.code == static_cast<uint8_t>(Status::Ok);
    rest.remove_prefix(used);
  }
  EXPECT_EQ(challenges, 3u);
  EXPECT_EQ(oks, 2u);
}

TcpStoreConfig client(int port, const std::string& secret) {
  TcpStoreConfig config;
  config.master_addr = "127.0.0.1";
  config.master_port = port;
  config.rank = 1;
  config.world_size = 2;
  config.host = "test";
  config.timeout_seconds = 5;
  config.secret = secret;
  return config;
}

// The client's errors name the reason, as a usage error (exit 64).
TEST(StoreClient, RefusedWhenTheSecretsDisagree) {
  auto with = loopback_store(kSecret, 2);
  auto without = loopback_store("", 2);
  const std::pair<int, std::string> cases[] = {
      {with->port(), "a different secret, long enough"}, {with->port(), ""}, {without->port(), kSecret}};
  for (const auto& [port, secret] : cases) {
    try {
      TcpStore store(client(port, secret));
      ADD_FAILURE() << "joined with secret '" << secret << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("SMDDP_STORE_SECRET"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace smddp::store
