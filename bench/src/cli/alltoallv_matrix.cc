#include "cli/alltoallv_matrix.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "smddp/common/numbers.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::bench {

std::vector<size_t> CountMatrix::send_counts(int rank) const {
  std::vector<size_t> out(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) out[j] = at(rank, j);
  return out;
}

std::vector<size_t> CountMatrix::recv_counts(int rank) const {
  std::vector<size_t> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[i] = at(i, rank);
  return out;
}

size_t CountMatrix::largest_buffer() const {
  size_t most = 0;
  for (int r = 0; r < n; ++r) {
    size_t row = 0, col = 0;
    for (int p = 0; p < n; ++p) {
      row += at(r, p);
      col += at(p, r);
    }
    most = std::max({most, row, col});
  }
  return most;
}

namespace {

// A square matrix of whitespace-separated values, '#' comments, through the
// bounded reader; `value` turns one field into its entry or throws. `unit`
// names the values in errors ("weights", "values"). Returns the side.
size_t read_square_matrix(const std::string& path, const std::string& what, const char* unit,
                          const std::function<uint64_t(const std::string& field, const std::string& where)>& value,
                          std::vector<uint64_t>* out) {
  std::istringstream in(tools::read_input_file(path, what));
  size_t width = 0, rows = 0, lineno = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++lineno;
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string field;
    size_t k = 0;
    while (fields >> field) {
      out->push_back(value(field, what + ": line " + std::to_string(lineno)));
      ++k;
    }
    if (k == 0) continue;
    if (width == 0) width = k;
    if (k != width) {
      throw UsageError(what + ": line " + std::to_string(lineno) + " has " + std::to_string(k) + " " + unit +
                       ", the first row " + std::to_string(width));
    }
    ++rows;
  }
  if (rows == 0) throw UsageError(what + ": no " + unit);
  if (rows != width) {
    throw UsageError(what + ": " + std::to_string(rows) + " rows of " + std::to_string(width) + " " + unit +
                     "; expected a square matrix");
  }
  return rows;
}

}  // namespace

std::vector<uint64_t> load_weights(const std::string& path) {
  const std::string what = "--alltoallv-matrix '" + path + "'";
  std::vector<uint64_t> out;
  read_square_matrix(path, what, "weights", [](const std::string& field, const std::string& where) -> uint64_t {
    if (field.find_first_not_of("0123456789") != std::string::npos || field.size() > 18) {
      throw UsageError(where + ": '" + field + "' is not a non-negative integer");
    }
    return std::stoull(field);
  }, &out);
  if (std::all_of(out.begin(), out.end(), [](uint64_t w) { return w == 0; })) {
    throw UsageError(what + ": every weight is 0");
  }
  return out;
}

double parse_alltoallv_spread(const std::string& text) {
  std::string why;
  const auto v = common::parse_number(text, &why);
  if (!v || *v < 0 || *v > 1) {
    throw UsageError("NCCL_TESTS_ALLTOALLV_SPREAD='" + text + "': " + (v ? "out of range" : why) +
                     "; expected 0..1 (0 uniform, 1 fully distance-weighted)");
  }
  return *v;
}

double parse_alltoallv_scale(const std::string& text) {
  std::string why;
  const auto v = common::parse_number(text, &why);
  if (!v || *v < 0 || *v > 1e9) {
    throw UsageError("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE='" + text + "': " + (v ? "out of range" : why) +
                     "; expected a factor 0..1000000000");
  }
  return *v;
}

std::vector<uint64_t> load_byte_matrix(const std::string& path, double scale, int* dim) {
  // No part of a petabyte: far past any buffer, and exact in a double.
  constexpr double kMaxPartBytes = 1125899906842624.0;  // 2^50
  const std::string what = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE='" + path + "'";
  std::vector<uint64_t> out;
  const size_t rows = read_square_matrix(path, what, "values", [scale](const std::string& field,
                                                                       const std::string& where) -> uint64_t {
    std::string why;
    const auto v = common::parse_number(field, &why);
    if (!v || *v < 0) {
      throw UsageError(where + ": '" + field + "' is not a number of bytes >= 0" + (v ? "" : " (" + why + ")"));
    }
    const double scaled = std::floor(*v * scale);
    if (scaled > kMaxPartBytes) {
      throw UsageError(where + ": '" + field + "' times NCCL_TESTS_ALLTOALLV_MATRIX_SCALE is more than 2^50 bytes");
    }
    // nccl-tests rounds every part down to 16 bytes.
    return static_cast<uint64_t>(scaled) & ~uint64_t{15};
  }, &out);
  if (rows > 1000000) throw UsageError(what + ": more than 1000000 ranks");
  if (std::all_of(out.begin(), out.end(), [](uint64_t b) { return b == 0; })) {
    throw UsageError(what + ": every part is 0 bytes (after the scale and rounding down to 16 bytes)");
  }
  *dim = static_cast<int>(rows);
  return out;
}

void check_alltoallv_ranks(const AlltoallvPattern& p, int n) {
  if (!p.weights.empty() && p.weights.size() != static_cast<size_t>(n) * n) {
    const auto side = static_cast<long>(std::lround(std::sqrt(static_cast<double>(p.weights.size()))));
    throw UsageError(p.origin + " is " + std::to_string(side) + " x " + std::to_string(side) + "; this job has " +
                     std::to_string(n) + " ranks");
  }
  if (p.fixed_bytes() && p.dim < n) {
    throw UsageError(p.origin + " is " + std::to_string(p.dim) + " x " + std::to_string(p.dim) + "; this job has " +
                     std::to_string(n) + " ranks (nccl-tests uses the first n rows and columns of a larger one)");
  }
}

namespace {

// The weights of an n-rank job (not a byte matrix).
std::vector<uint64_t> weights_for(const AlltoallvPattern& p, int n) {
  if (!p.weights.empty()) return p.weights;
  const size_t cells = static_cast<size_t>(n) * n;
  std::vector<uint64_t> w(cells);
  if (p.spread && n > 1) {
    // nccl-tests' part in units of S / (n * S_d), S_d = n(n-1)/2 the sum of
    // distances: (1-s) S_d + s d n; in integers of 2^20 steps, so that a
    // spread keeps 6 significant digits.
    const double s = *p.spread, sum_d = n * (n - 1) / 2.0;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const double d = (j - i + n) % n;
        w[static_cast<size_t>(i) * n + j] = static_cast<uint64_t>(std::llround(((1 - s) * sum_d + s * d * n) * 1048576.0));
      }
    }
    return w;
  }
  if (p.spread) return {1};  // one rank: everything to itself, as nccl-tests
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) w[static_cast<size_t>(i) * n + j] = static_cast<uint64_t>((i + j) % n + 1);
  }
  return w;
}

}  // namespace

CountMatrix alltoallv_counts(const AlltoallvPattern& p, int n, size_t count, size_t elem_size) {
  check_alltoallv_ranks(p, n);
  CountMatrix m{n, std::vector<size_t>(static_cast<size_t>(n) * n)};
  if (p.fixed_bytes()) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        m.counts[static_cast<size_t>(i) * n + j] = p.bytes[static_cast<size_t>(i) * p.dim + j] / elem_size;
      }
    }
    return m;
  }
  const std::vector<uint64_t> weights = weights_for(p, n);
  long double total = 0;
  for (uint64_t w : weights) total += static_cast<long double>(w);
  const long double cells = static_cast<long double>(n) * n;
  for (size_t k = 0; k < weights.size(); ++k) {
    m.counts[k] = static_cast<size_t>(std::floor(static_cast<long double>(weights[k]) * cells * count / total));
  }
  return m;
}

}  // namespace smddp::bench
