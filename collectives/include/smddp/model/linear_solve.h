// A small dense linear system, for the model's fit (smddp-model) and the
// selection table's carrying of proxy times to a job's scale.
#pragma once

#include <vector>

namespace smddp::model {

// Solves A x = b by Gaussian elimination with partial pivoting. A zero pivot
// (a singular A) leaves its unknown at 0.
std::vector<double> solve_linear(std::vector<std::vector<double>> a, std::vector<double> b);

}  // namespace smddp::model
