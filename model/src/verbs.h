// smddp-model's verbs, as functions of their options writing to a stream,
// so the tests call them without a process. Each returns the exit code;
// bad input throws UsageError (exit 64, one line) before any output.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "fit.h"
#include "smddp/model/cost_model.h"

namespace smddp::model {

struct SizeRange {
  uint64_t min = 0, max = UINT64_MAX;
  bool contains(uint64_t b) const { return b >= min && b <= max; }
};

struct FitOptions {
  std::vector<std::string> results;
  std::string output;
  SizeRange sizes;
  schedule::Options schedule;
};
int run_fit(const FitOptions& o, std::ostream& out);

struct PredictOptions {
  std::string model;
  int hosts = 0, ranks_per_host = 0;
  std::vector<std::string> collectives;  // empty: allreduce
  uint64_t min_bytes = 1024, max_bytes = 64 << 20, factor = 2;
  std::string dtype = "float";
  bool json = false;
  std::string tuning_file;
};
int run_predict(const PredictOptions& o, std::ostream& out);

struct CheckOptions {
  std::string model;
  std::vector<std::string> results;
  SizeRange sizes;
};
int run_check(const CheckOptions& o, std::ostream& out);

struct ExportOptions {
  std::string model;
  std::string simai, astra_sim;
  int hosts = 2, ranks_per_host = 8;
  uint64_t bytes = 64 << 20;  // the size the bus bandwidths are taken at
};
int run_export(const ExportOptions& o, std::ostream& out);

// --- shared by the verbs -----------------------------------------------------

// The fitted parameters per tier, with each undetermined one and why (fit, tune).
void print_tiers(const Model& m, std::ostream& out);

struct Prediction {
  std::string algorithm;
  double time_us = 0, busbw_gbps = 0;
};
// Every algorithm of `c` that runs on the topology, at `bytes`.
std::vector<Prediction> predict_all(const Model& m, Collective c, const schedule::Topology& t, uint64_t bytes,
                                    size_t dtype_size);
// smddp-bench's bus bandwidth (GB/s) of a row of `bytes` taking `time_us` on n ranks.
double busbw_gbps(Collective c, int nranks, uint64_t bytes, double time_us);
// The collectives named, parsed; UsageError for an unknown one.
std::vector<Collective> parse_collectives(const std::vector<std::string>& names);

}  // namespace smddp::model
