#include "isolate/noise.h"

#include <fmt/format.h>

#include <iterator>
#include <sstream>

#include "smddp/common/numbers.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::diag {

NoiseModel builtin_noise() {
  // 180 pair tests of 30 isolate runs on this project's namespace cluster
  // (scripts/netns-cluster.sh: 15 runs of 8 hosts and 15 of 4, one rank a
  // host, on 2 shared cores, with the probes of tests/e2e/diag/isolate_e2e.py:
  // 1 MiB allreduce, 4 windows of 4 x 256 KiB stream), rounds 1-2 of each
  // run: each test's allreduce busbw and stream rate over the median of its
  // run's tests (scripts/isolate-sim-table.py --noise-from prints these from
  // --json reports). 5 % of tests below 0.70 and 5 % above 1.5: a noisy fleet.
  static const NoiseSample kSamples[] = {
    {0.953, 0.564}, {1.016, 1.043}, {0.836, 1.007}, {0.747, 0.993}, {0.997, 1.207}, {1.422, 1.667}, {1.003, 0.961},
    {1.200, 0.964}, {1.054, 0.853}, {0.681, 1.003}, {1.100, 0.997}, {0.857, 0.948}, {1.161, 0.968}, {0.946, 1.097},
    {0.704, 1.173}, {1.272, 1.323}, {0.864, 0.702}, {0.654, 1.154}, {1.078, 0.925}, {1.122, 0.988}, {0.990, 1.069},
    {0.961, 1.012}, {1.285, 0.965}, {1.010, 1.622}, {0.776, 0.926}, {0.950, 0.735}, {0.752, 0.772}, {0.983, 1.320},
    {1.120, 1.080}, {1.017, 1.442}, {1.124, 0.794}, {1.128, 1.074}, {0.899, 0.741}, {1.037, 0.881}, {0.963, 0.819},
    {0.744, 1.119}, {1.040, 0.855}, {1.054, 1.257}, {0.869, 1.604}, {1.396, 1.373}, {0.972, 0.551}, {0.728, 0.890},
    {1.055, 0.910}, {0.954, 0.962}, {1.028, 1.393}, {0.959, 1.038}, {1.468, 1.787}, {1.566, 1.355}, {1.084, 0.620},
    {0.592, 1.222}, {0.885, 0.733}, {0.812, 0.689}, {1.225, 1.192}, {1.259, 0.962}, {0.916, 1.180}, {1.510, 1.038},
    {0.924, 0.755}, {1.157, 0.776}, {1.065, 0.979}, {0.976, 0.742}, {0.850, 1.414}, {1.012, 1.351}, {0.988, 1.021},
    {1.281, 1.553}, {1.021, 0.817}, {1.153, 0.982}, {0.698, 1.309}, {0.825, 1.018}, {1.812, 0.779}, {0.979, 1.051},
    {1.127, 1.199}, {0.893, 0.916}, {0.953, 0.593}, {0.776, 1.041}, {0.874, 0.853}, {0.928, 0.951}, {1.535, 1.462},
    {1.657, 1.122}, {1.047, 1.420}, {1.986, 0.959}, {0.914, 0.731}, {0.896, 1.174}, {1.112, 0.775}, {1.517, 1.081},
    {1.107, 1.202}, {0.995, 0.947}, {0.911, 1.053}, {1.005, 0.922}, {0.829, 0.901}, {1.512, 1.027}, {0.934, 0.805},
    {0.966, 0.988}, {1.210, 0.923}, {1.034, 1.100}, {0.871, 2.446}, {1.047, 1.012}, {0.993, 0.950}, {0.622, 1.659},
    {1.140, 0.739}, {1.007, 0.749}, {1.231, 1.018}, {0.955, 1.628}, {0.874, 0.998}, {1.171, 1.002}, {1.002, 0.548},
    {1.121, 0.995}, {0.998, 0.910}, {0.945, 1.005}, {0.768, 1.171}, {1.004, 0.802}, {1.417, 1.033}, {0.929, 1.042},
    {1.032, 0.752}, {0.848, 0.932}, {0.968, 1.018}, {0.730, 0.745}, {0.796, 2.213}, {1.473, 1.041}, {1.243, 1.183},
    {1.254, 0.982}, {1.223, 0.602}, {1.576, 1.561}, {0.777, 0.863}, {0.699, 1.137}, {0.668, 0.537}, {0.992, 0.948},
    {1.416, 1.146}, {1.008, 1.052}, {1.250, 0.528}, {0.810, 0.831}, {1.066, 1.279}, {0.934, 1.169}, {0.750, 1.095},
    {1.035, 1.203}, {1.371, 0.905}, {0.965, 0.870}, {0.952, 0.906}, {1.048, 1.094}, {1.096, 0.857}, {0.716, 1.165},
    {0.991, 1.061}, {1.923, 0.780}, {0.837, 1.244}, {1.009, 0.939}, {0.932, 0.978}, {1.052, 0.838}, {1.614, 1.295},
    {0.948, 1.022}, {0.758, 0.435}, {0.858, 0.749}, {1.667, 1.287}, {1.142, 1.251}, {0.940, 1.219}, {1.011, 1.362},
    {0.989, 0.781}, {1.014, 0.670}, {0.897, 0.945}, {1.956, 0.807}, {0.885, 1.340}, {1.103, 1.055}, {2.247, 0.918},
    {0.976, 0.860}, {1.024, 1.724}, {0.875, 1.082}, {0.595, 0.998}, {0.895, 1.159}, {1.105, 1.002}, {1.413, 0.738},
    {1.058, 0.716}, {0.675, 1.019}, {1.010, 0.981}, {0.990, 2.016}, {1.087, 0.895}, {0.960, 1.519}, {1.040, 1.056},
    {0.790, 0.944}, {0.915, 0.938}, {1.529, 0.776}, {0.698, 1.461}, {1.085, 1.062},
  };
  return {std::vector<NoiseSample>(std::begin(kSamples), std::end(kSamples)),
          "built-in: 180 pair tests of the namespace cluster"};
}

NoiseModel load_noise(const std::string& path) {
  const std::string text = tools::read_input_file(path, "--noise " + path, size_t{16} << 20);
  NoiseModel m;
  m.source = path;
  std::istringstream lines(text);
  int line_no = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) continue;
    if (words.size() != 2) throw UsageError(fmt::format("--noise {}: line {}: expected BUSBW_RATIO STREAM_RATIO", path, line_no));
    double v[2];
    for (size_t i = 0; i < 2; ++i) {
      std::string why;
      const auto x = common::parse_number(words[i], &why);
      if (!x || !(*x > 0) || *x > 100) {
        throw UsageError(fmt::format("--noise {}: line {}: '{}': {}", path, line_no, words[i],
                                     x ? "expected a ratio above 0, at most 100" : why));
      }
      v[i] = *x;
    }
    m.samples.push_back({v[0], v[1]});
  }
  if (m.samples.size() < kMinNoiseSamples) {
    throw UsageError(fmt::format("--noise {}: {} samples; at least {} needed", path, m.samples.size(), kMinNoiseSamples));
  }
  return m;
}

}  // namespace smddp::diag
