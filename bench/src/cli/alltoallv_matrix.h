// The per-peer counts of alltoallv rows (MoE-like skew). Weights are an
// n x n matrix, row = sender, column = receiver: from --alltoallv-matrix
// FILE, else the default pattern w[i][j] = (i + j) % n + 1. A row of size S
// bytes scales them so that the ranks send n*S bytes in all, S on average
// (alltoall's S): counts[i][j] = floor(w[i][j] * n*n*c / sum(w)), c = S /
// (n * element size), the same on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Reads the weights file: n lines of n non-negative integers separated by
// blanks, '#' comments and blank lines ignored, not all zero. Throws
// UsageError (one line) when it cannot be read or is malformed.
std::vector<uint64_t> load_weights(const std::string& path);

// The weights of an n-rank job: `file` (from load_weights) when not empty,
// UsageError unless it is n x n; else the default pattern.
std::vector<uint64_t> weights_for(const std::vector<uint64_t>& file, int n);

CountMatrix scale(const std::vector<uint64_t>& weights, int n, size_t count);

}  // namespace smddp::bench
