#include "sweep/bitwise.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "smddp/traits.h"

namespace smddp::bench {
namespace {

struct Agreement {
  Collective collective;
  RankAgreement ranks;
};

// Which outputs every rank of a group must hold alike. None: each rank's
// output is a block of its own (reduce-scatter, scatter, alltoall(v),
// sendrecv: what it must equal is another rank's input, which the check
// against the expected value compares), or exists on the root only
// (reduce, gather); barrier has none.
constexpr std::array<Agreement, kNumCollectives> kAgreement = {{
    {Collective::AllReduce, RankAgreement::All},  // every rank reduces the same inputs
    {Collective::AllGather, RankAgreement::All},  // every rank gathers the same blocks
    {Collective::ReduceScatter, RankAgreement::None},
    {Collective::Broadcast, RankAgreement::All},  // every rank holds the root's buffer
    {Collective::Reduce, RankAgreement::None},
    {Collective::AllToAll, RankAgreement::None},
    {Collective::Barrier, RankAgreement::None},
    {Collective::Gather, RankAgreement::None},
    {Collective::Scatter, RankAgreement::None},
    {Collective::SendRecv, RankAgreement::None},
    {Collective::AllToAllV, RankAgreement::None},
}};
static_assert(covers_every_collective(kAgreement), "one agreement per collective, in enum order");

}  // namespace

RankAgreement rank_agreement(Collective c) { return kAgreement[static_cast<size_t>(c)].ranks; }

const char* to_string(RankAgreement a) { return a == RankAgreement::All ? "every rank" : "none"; }

const char* to_string(BitDifference::Against a) {
  switch (a) {
    case BitDifference::Against::Expected: return "expected value";
    case BitDifference::Against::FirstRepeat: return "repeat 1";
    case BitDifference::Against::Ranks: return "ranks";
  }
  return "";
}

uint64_t element_bits(const void* p, size_t index, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p) + index * bytes;
  uint64_t v = 0;
  for (size_t i = 0; i < bytes && i < 8; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return v;
}

size_t compare_elements(const void* want, const void* got, size_t count, size_t bytes,
                        std::vector<ElementMismatch>* first, size_t max) {
  const auto* w = static_cast<const char*>(want);
  const auto* g = static_cast<const char*>(got);
  constexpr size_t kBlock = 4096;  // elements: memcmp finds equal blocks fast
  size_t differ = 0;
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t n = std::min(kBlock, count - base);
    if (std::memcmp(w + base * bytes, g + base * bytes, n * bytes) == 0) continue;
    for (size_t i = base; i < base + n; ++i) {
      if (std::memcmp(w + i * bytes, g + i * bytes, bytes) == 0) continue;
      ++differ;
      if (first && first->size() < max) first->push_back({i, element_bits(w, i, bytes), element_bits(g, i, bytes)});
    }
  }
  return differ;
}

uint64_t output_digest(const void* p, size_t bytes) {
  // FNV-1a's prime over 8-byte words, each word mixed first (splitmix64's
  // finaliser) so that a flipped bit anywhere moves the whole digest.
  const auto mix = [](uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t h = 0xcbf29ce484222325ULL ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ mix(w + i)) * 0x100000001b3ULL;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < bytes; ++k) tail |= static_cast<uint64_t>(b[i + k]) << (8 * k);
  return mix((h ^ mix(tail + i)) * 0x100000001b3ULL);
}

std::string hex_bits(uint64_t value, size_t bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s = "0x";
  for (size_t i = std::min<size_t>(bytes, 8); i-- > 0;) {
    s += kDigits[(value >> (8 * i + 4)) & 0xf];
    s += kDigits[(value >> (8 * i)) & 0xf];
  }
  return s;
}

std::vector<int> differing_bits(uint64_t a, uint64_t b) {
  std::vector<int> bits;
  for (int i = 0; i < 64; ++i) {
    if (((a ^ b) >> i) & 1) bits.push_back(i);
  }
  return bits;
}

std::string format_difference(const BitDifference& d, int repeats) {
  std::string s = "rank " + std::to_string(d.rank) + " on " + d.host + ", repeat " + std::to_string(d.repeat) +
                  " of " + std::to_string(repeats);
  if (d.against == BitDifference::Against::Ranks) {
    return s + ": output differs from rank " + std::to_string(d.agreed_rank) +
           "'s, which the group agrees on (digest " + hex_bits(d.received, 8) + " against " + hex_bits(d.expected, 8) +
           ")";
  }
  const auto bits = differing_bits(d.expected, d.received);
  std::string list;
  for (size_t i = 0; i < bits.size(); ++i) list += (i ? ", " : "") + std::to_string(bits[i]);
  return s + ", element " + std::to_string(d.element) + ": expected " + hex_bits(d.expected, d.bytes) + " (" +
         to_string(d.against) + "), received " + hex_bits(d.received, d.bytes) + ", bit" +
         (bits.size() == 1 ? " " : "s ") + list + (bits.size() == 1 ? " differs" : " differ");
}

}  // namespace smddp::bench
