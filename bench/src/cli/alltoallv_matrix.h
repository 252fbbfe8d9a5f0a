// The per-peer counts of alltoallv rows (MoE-like skew), from one of three
// patterns (docs/bench.md, "alltoallv"):
//
// - weights: an n x n matrix, row = sender, column = receiver, from
//   --alltoallv-matrix FILE, else the default w[i][j] = (i + j) % n + 1. A
//   row of size S bytes scales them so that the ranks send n*S bytes in all,
//   S on average (alltoall's S): counts[i][j] = floor(w[i][j] * n*n*c /
//   sum(w)), c = S / (n * element size), the same on every rank;
// - nccl-tests' distance-weighted spread (NCCL_TESTS_ALLTOALLV_SPREAD s in
//   0..1): the weights (1-s)/n + s*d/(n(n-1)/2), d = (j - i) mod n, so each
//   rank sends S, uniformly at s = 0 and more to more distant ranks at 1;
// - nccl-tests' byte matrix (NCCL_TESTS_ALLTOALLV_MATRIX_FILE, times
//   NCCL_TESTS_ALLTOALLV_MATRIX_SCALE): bytes per part, each rounded down to
//   16 bytes as nccl-tests does, the first n rows and columns of a matrix of
//   n or more; the row's size does not change them (-b must equal -e).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace smddp::bench {

struct CountMatrix {
  int n = 0;
  std::vector<size_t> counts;  // n*n, counts[from * n + to]

  size_t at(int from, int to) const { return counts[static_cast<size_t>(from) * n + to]; }
  std::vector<size_t> send_counts(int rank) const;  // row `rank`
  std::vector<size_t> recv_counts(int rank) const;  // column `rank`
  size_t largest_buffer() const;                    // max row or column sum
};

// Where a job's alltoallv parts come from; a default-constructed one is
// the default weights.
struct AlltoallvPattern {
  std::vector<uint64_t> weights;  // --alltoallv-matrix: n x n weights (empty: not given)
  std::optional<double> spread;   // NCCL_TESTS_ALLTOALLV_SPREAD
  std::vector<uint64_t> bytes;    // NCCL_TESTS_ALLTOALLV_MATRIX_FILE x SCALE: dim x dim, 16-byte multiples
  int dim = 0;
  std::string origin;  // what set it, for messages ("" for the default)

  bool fixed_bytes() const { return !bytes.empty(); }
};

// Reads the weights file: n lines of n non-negative integers separated by
// blanks, '#' comments and blank lines ignored, not all zero. Throws
// UsageError (one line) when it cannot be read or is malformed.
std::vector<uint64_t> load_weights(const std::string& path);

// NCCL_TESTS_ALLTOALLV_SPREAD and _MATRIX_SCALE values: a decimal number,
// 0..1 and 0..1e6; UsageError naming the variable otherwise (nccl-tests
// clamps or ignores what it cannot read).
double parse_alltoallv_spread(const std::string& text);
double parse_alltoallv_scale(const std::string& text);
// nccl-tests' matrix file: rows of blank-separated non-negative decimal
// numbers of bytes (as its reader takes them, '#' comments and blank lines
// besides), square, each times `scale` rounded down to 16 bytes, not all 0.
// UsageError (one line) naming the file, the line and why.
std::vector<uint64_t> load_byte_matrix(const std::string& path, double scale, int* dim);

// UsageError unless the pattern fits an n-rank job (a weights file n x n, a
// byte matrix n x n or larger).
void check_alltoallv_ranks(const AlltoallvPattern& p, int n);

// The n-rank job's parts for a row whose count argument is `count`
// (elements per peer on average; ignored by a byte matrix) of elements of
// `elem_size` bytes.
CountMatrix alltoallv_counts(const AlltoallvPattern& p, int n, size_t count, size_t elem_size);

}  // namespace smddp::bench
