// The robust fit: the parameters of every tier (model.h) from measured rows,
// through each row's schedule. The fit minimises log(predicted / measured),
// so small sizes count as much as large ones and over- and underprediction
// alike (Gauss-Newton); Huber weights, reweighted every step, keep a few
// outliers from pulling it; every parameter stays >= 0 (Lawson-Hanson).
// A parameter the rows never exercise is "no data"; one whose terms are
// proportional (within 1%) to those of parameters already in the fit is
// "not separable" and folded into them (its value stays 0).
#pragma once

#include <string>
#include <vector>

#include "measured_rows.h"
#include "smddp/model/cost_model.h"

namespace smddp::model {

struct Residual {
  const Row* row = nullptr;
  double predicted_us = 0;
  double error_pct = 0;  // (predicted - measured) / measured * 100
  double weight = 1;     // the final Huber weight (< 1: treated as an outlier)
};

struct FitResult {
  Model model;
  std::vector<Residual> residuals;
  int declined = 0;  // rows whose algorithm cannot run on their topology
};

// UsageError when no row is left to fit.
FitResult fit(const std::vector<Row>& rows, const schedule::Options& options = {});

// Median of |error_pct| (0 for none).
double median_abs_error(const std::vector<Residual>& rs);

}  // namespace smddp::model
