// -B/--bitwise N (docs/bench.md, "Bitwise repeatability"): each checked row
// runs N times on identical inputs; repeat 1 is checked against the
// expected value (as -c checks), every further repeat bit for bit against
// repeat 1 on the same rank, and, where every rank must hold the same
// result, each repeat's output across the ranks of the group. This file
// holds the pieces: which comparisons apply, the element comparisons, the
// digests compared across ranks, and the one line each difference prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "smddp/types.h"

namespace smddp::bench {

// Largest -B: more repeats than this is a typo, not a test.
inline constexpr int kMaxBitwiseRepeats = 1000;
// Differences shown per row (each rank sends at most this many; rank 0 shows
// the first this many of all), the rest only counted.
inline constexpr size_t kBitwiseShown = 8;

// What every rank's output of a collective must equal across ranks.
enum class RankAgreement {
  None,  // each rank's output is its own (reduce-scatter, reduce, alltoall(v), gather, scatter, sendrecv)
  All,   // every rank of the group holds the same output (allreduce, allgather, broadcast: the root's)
};
RankAgreement rank_agreement(Collective c);
// "every rank" / "none": the JSON's and the docs' word for it.
const char* to_string(RankAgreement a);

// An output element unlike what it was compared with. `expected` and
// `received` are the element's bytes read as one little-endian integer
// (`bytes` of them, 1..8).
struct ElementMismatch {
  uint64_t element = 0;  // index into the rank's receive buffer
  uint64_t expected = 0, received = 0;
};

// -B: one rank's record of a row's repeats, gathered across the job at the
// row's end. (At namespace scope: clang cannot default-construct a nested
// struct with member initializers inside std::optional before its enclosing
// class is complete.)
struct RepeatRecord {
  uint64_t against_expected = 0, against_first_repeat = 0;
  std::vector<uint64_t> digests, differing;  // per repeat: output digest, differing elements
  std::vector<std::pair<int, ElementMismatch>> shown;  // (repeat, element), the first kBitwiseShown
  std::vector<uint64_t> calls;                         // the engine's call number of each repeat
  size_t element_bytes = 0;
};

// The bytes of element `index` of size `bytes` at `p`, as a little-endian integer.
uint64_t element_bits(const void* p, size_t index, size_t bytes);

// Differing elements of `got` against `want` (`count` elements of `bytes`
// each); the first `max` appended to *first.
size_t compare_elements(const void* want, const void* got, size_t count, size_t bytes,
                        std::vector<ElementMismatch>* first, size_t max);

// A 64-bit digest of `bytes` bytes, compared across ranks instead of the
// outputs themselves (which would cost a copy of every output per rank).
uint64_t output_digest(const void* p, size_t bytes);

// "0x3f800000": `value`'s low `bytes` bytes, most significant first.
std::string hex_bits(uint64_t value, size_t bytes);
// The bit positions where a and b differ, ascending (bit 0 least significant).
std::vector<int> differing_bits(uint64_t a, uint64_t b);

// One difference of a row, as rank 0 reports it.
struct BitDifference {
  enum class Against { Expected, FirstRepeat, Ranks };
  Against against = Against::Expected;
  int rank = 0;  // in the job
  std::string host;
  int repeat = 1;  // 1..N
  // Expected, FirstRepeat: the element and its bits. Ranks: `expected` is
  // the digest the group agreed on, held by rank `agreed_rank`; `received`
  // this rank's digest.
  uint64_t element = 0;
  size_t bytes = 0;
  uint64_t expected = 0, received = 0;
  int agreed_rank = -1;
};
// "expected value" / "repeat 1" / "ranks": the JSON's `against`.
const char* to_string(BitDifference::Against a);

// The line's text after its row label, e.g.
//   rank 1 on host-a, repeat 2 of 3, element 5: expected 0x40400000 (repeat 1), received 0x40400008, bit 3 differs
//   rank 1 on host-a, repeat 2 of 3: output differs from rank 0's, which the group agrees on (digest 0x... against 0x...)
std::string format_difference(const BitDifference& d, int repeats);

}  // namespace smddp::bench
