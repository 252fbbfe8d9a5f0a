#include "fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "smddp/error.h"
#include "smddp/model/linear_solve.h"

namespace smddp::model {
namespace {

constexpr int kCols = kTiers * kParams;
constexpr double kSeparable = 1e-2;  // a column's part outside the others' span, relative
constexpr double kHuber = 1.345;     // in robust standard deviations (MAD)
constexpr int kIterations = 100;  // Gauss-Newton steps, each reweighted

using Matrix = std::vector<std::vector<double>>;

std::string col_name(int j) {
  return std::string(schedule::to_string(static_cast<Tier>(j / kParams))) + "." + kParamNames[j % kParams];
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// Lawson-Hanson non-negative least squares on the normal equations G x = h.
std::vector<double> nnls(const Matrix& g, const std::vector<double>& h) {
  const size_t n = h.size();
  std::vector<double> x(n, 0);
  if (n == 0) return x;
  std::vector<bool> in_p(n, false);
  const double tol = 1e-12 * std::max(1.0, *std::max_element(h.begin(), h.end(), [](double a, double b) {
    return std::abs(a) < std::abs(b);
  }));
  for (size_t outer = 0; outer < 3 * n + 10; ++outer) {
    int t = -1;
    double best = tol;
    for (size_t j = 0; j < n; ++j) {
      if (in_p[j]) continue;
      double w = h[j];
      for (size_t k = 0; k < n; ++k) w -= g[j][k] * x[k];
      if (w > best) best = w, t = static_cast<int>(j);
    }
    if (t < 0) break;
    in_p[t] = true;
    for (size_t inner = 0; inner < 3 * n + 10; ++inner) {
      std::vector<size_t> p;
      for (size_t j = 0; j < n; ++j) {
        if (in_p[j]) p.push_back(j);
      }
      Matrix gp(p.size(), std::vector<double>(p.size()));
      std::vector<double> hp(p.size());
      for (size_t a = 0; a < p.size(); ++a) {
        hp[a] = h[p[a]];
        for (size_t b = 0; b < p.size(); ++b) gp[a][b] = g[p[a]][p[b]];
      }
      const std::vector<double> zp = solve_linear(gp, hp);
      std::vector<double> z(n, 0);
      for (size_t a = 0; a < p.size(); ++a) z[p[a]] = zp[a];
      bool positive = true;
      for (size_t j : p) positive &= z[j] > 0;
      if (positive) {
        x = z;
        break;
      }
      double step = 1;
      for (size_t j : p) {
        if (z[j] <= 0) step = std::min(step, x[j] / (x[j] - z[j]));
      }
      for (size_t j = 0; j < n; ++j) x[j] += step * (z[j] - x[j]);
      for (size_t j : p) {
        if (x[j] <= 1e-15) in_p[j] = false, x[j] = 0;
      }
    }
  }
  return x;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

double median_abs_error(const std::vector<Residual>& rs) {
  std::vector<double> e;
  for (const auto& r : rs) e.push_back(std::abs(r.error_pct));
  return median(e);
}

FitResult fit(const std::vector<Row>& rows, const schedule::Options& options) {
  FitResult out;
  out.model.options = options;
  std::vector<const Row*> used;
  std::vector<Terms> xs;
  for (const Row& r : rows) {
    const auto s = schedule::make(r.collective, r.algorithm, {r.hosts, r.ranks_per_host}, r.bytes, r.dtype_size, options);
    if (!s.declined.empty()) {
      ++out.declined;
      continue;
    }
    used.push_back(&r);
    xs.push_back(terms(s));
  }
  if (used.empty()) throw UsageError("fit: no row to fit (no smddp rows of a known algorithm that runs on its topology)");
  const size_t m = used.size();

  // Columns relative to each row's time, scaled to unit norm.
  std::vector<std::vector<double>> col(kCols, std::vector<double>(m));
  std::array<double, kCols> scale{};
  for (int j = 0; j < kCols; ++j) {
    for (size_t i = 0; i < m; ++i) col[j][i] = xs[i][j] / used[i]->time_us;
    scale[j] = std::sqrt(dot(col[j], col[j]));
    if (scale[j] > 0) {
      for (double& v : col[j]) v /= scale[j];
    }
  }

  // Which columns the data separates: Gram-Schmidt in order of how much
  // each parameter matters (bandwidth, latency, reduction, overhead).
  const int order[] = {1 + kParams, 1, 0 + kParams, 0, 2 + kParams, 2, 3 + kParams, 3};
  std::vector<int> active;
  std::vector<std::vector<double>> basis;
  for (int j : order) {
    TierParams& tp = out.model.tiers[j / kParams];
    const int p = j % kParams;
    if (scale[j] == 0) {
      tp.note[p] = "no data";
      continue;
    }
    std::vector<double> r = col[j];
    for (const auto& q : basis) {
      const double c = dot(r, q);
      for (size_t i = 0; i < m; ++i) r[i] -= c * q[i];
    }
    const double left = std::sqrt(dot(r, r));
    if (left < kSeparable) {
      int partner = active.front();
      for (int a : active) {
        if (std::abs(dot(col[a], col[j])) > std::abs(dot(col[partner], col[j]))) partner = a;
      }
      tp.note[p] = "not separable from " + col_name(partner) + " in these rows: folded into it";
      continue;
    }
    for (double& v : r) v /= left;
    basis.push_back(r);
    active.push_back(j);
    tp.determined[p] = true;
  }

  // Log residuals, log(predicted / measured): symmetric, so a row measured
  // 10x too slow weighs as much as one 10x too fast (relative errors would
  // let underprediction cost at most 100%). Gauss-Newton on them: around
  // the current ratios q0, log q ~ log q0 + (q - q0) / q0, a linear
  // least-squares problem (solved non-negative); Huber weights from the
  // residuals' robust scale, reweighted every iteration.
  const size_t na = active.size();
  if (na == 0) throw UsageError("fit: the rows exercise no parameter (no row has a step)");
  auto ratios = [&](const std::vector<double>& v) {
    std::vector<double> q(m, 0);
    for (size_t i = 0; i < m; ++i) {
      for (size_t a = 0; a < na; ++a) q[i] += v[a] * col[active[a]][i];
    }
    return q;
  };
  auto solve_around = [&](const std::vector<double>& q0, const std::vector<double>& w) {
    Matrix g(na, std::vector<double>(na, 0));
    std::vector<double> h(na, 0);
    for (size_t i = 0; i < m; ++i) {
      const double target = 1 - std::log(q0[i]);
      for (size_t a = 0; a < na; ++a) {
        const double ca = col[active[a]][i] / q0[i];
        h[a] += w[i] * ca * target;
        for (size_t b = 0; b < na; ++b) g[a][b] += w[i] * ca * col[active[b]][i] / q0[i];
      }
    }
    return nnls(g, h);
  };
  auto floor_q = [](std::vector<double> q) {
    for (double& v : q) v = std::max(v, 1e-6);
    return q;
  };
  auto loss = [&](const std::vector<double>& v, const std::vector<double>& w) {
    const auto q = floor_q(ratios(v));
    double l = 0;
    for (size_t i = 0; i < m; ++i) l += w[i] * std::log(q[i]) * std::log(q[i]);
    return l;
  };
  std::vector<double> w(m, 1);
  std::vector<double> x = solve_around(std::vector<double>(m, 1.0), w);  // relative errors, to start
  for (int it = 0; it < kIterations; ++it) {
    const auto q = floor_q(ratios(x));
    std::vector<double> absres(m);
    for (size_t i = 0; i < m; ++i) absres[i] = std::abs(std::log(q[i]));
    // Robust scale; a floor so that a near-exact fit does not treat
    // rounding noise as outliers.
    const double k = kHuber * std::max(1.4826 * median(absres), 1e-3);
    for (size_t i = 0; i < m; ++i) w[i] = absres[i] <= k ? 1.0 : k / absres[i];
    std::vector<double> next = solve_around(q, w);
    // Damping: halve the step while it does not lower the loss.
    const double before = loss(x, w);
    for (int half = 0; half < 20 && loss(next, w) > before; ++half) {
      for (size_t a = 0; a < na; ++a) next[a] = (next[a] + x[a]) / 2;
    }
    double change = 0;
    for (size_t a = 0; a < na; ++a) change = std::max(change, std::abs(next[a] - x[a]) / std::max(std::abs(x[a]), 1e-300));
    x = next;
    if (change < 1e-12) break;
  }
  for (size_t a = 0; a < active.size(); ++a) {
    out.model.tiers[active[a] / kParams].value[active[a] % kParams] = x[a] / scale[active[a]];
  }
  for (size_t i = 0; i < m; ++i) {
    const auto s = schedule::make(used[i]->collective, used[i]->algorithm, {used[i]->hosts, used[i]->ranks_per_host},
                                  used[i]->bytes, used[i]->dtype_size, options);
    const double pred = predict_us(out.model, s);
    out.residuals.push_back({used[i], pred, (pred - used[i]->time_us) / used[i]->time_us * 100, w[i]});
  }
  return out;
}

}  // namespace smddp::model
