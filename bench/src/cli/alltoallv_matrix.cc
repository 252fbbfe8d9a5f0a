#include "cli/alltoallv_matrix.h"

#include <algorithm>
#include <cmath>
#include <sstream>

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

std::vector<uint64_t> load_weights(const std::string& path) {
  const std::string what = "--alltoallv-matrix '" + path + "'";
  std::istringstream in(tools::read_input_file(path, what));
  std::vector<uint64_t> out;
  size_t width = 0, rows = 0, lineno = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++lineno;
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string field;
    size_t k = 0;
    while (fields >> field) {
      if (field.find_first_not_of("0123456789") != std::string::npos || field.size() > 18) {
        throw UsageError(what + ": line " + std::to_string(lineno) + ": '" + field +
                         "' is not a non-negative integer");
      }
      out.push_back(std::stoull(field));
      ++k;
    }
    if (k == 0) continue;
    if (width == 0) width = k;
    if (k != width) {
      throw UsageError(what + ": line " + std::to_string(lineno) + " has " + std::to_string(k) +
                       " weights, the first row " + std::to_string(width));
    }
    ++rows;
  }
  if (rows == 0) throw UsageError(what + ": no weights");
  if (rows != width) {
    throw UsageError(what + ": " + std::to_string(rows) + " rows of " + std::to_string(width) +
                     " weights; expected a square matrix");
  }
  if (std::all_of(out.begin(), out.end(), [](uint64_t w) { return w == 0; })) {
    throw UsageError(what + ": every weight is 0");
  }
  return out;
}

std::vector<uint64_t> weights_for(const std::vector<uint64_t>& file, int n) {
  const size_t cells = static_cast<size_t>(n) * n;
  if (!file.empty()) {
    if (file.size() != cells) {
      const auto side = static_cast<long>(std::lround(std::sqrt(static_cast<double>(file.size()))));
      throw UsageError("--alltoallv-matrix is " + std::to_string(side) + " x " + std::to_string(side) +
                       "; this job has " + std::to_string(n) + " ranks");
    }
    return file;
  }
  std::vector<uint64_t> w(cells);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) w[static_cast<size_t>(i) * n + j] = static_cast<uint64_t>((i + j) % n + 1);
  }
  return w;
}

CountMatrix scale(const std::vector<uint64_t>& weights, int n, size_t count) {
  long double total = 0;
  for (uint64_t w : weights) total += static_cast<long double>(w);
  const long double cells = static_cast<long double>(n) * n;
  CountMatrix m{n, std::vector<size_t>(weights.size())};
  for (size_t k = 0; k < weights.size(); ++k) {
    m.counts[k] = static_cast<size_t>(std::floor(static_cast<long double>(weights[k]) * cells * count / total));
  }
  return m;
}

}  // namespace smddp::bench
