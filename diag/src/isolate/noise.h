// The noise of the simulated fabric (smddp-diag isolate --simulate): a test
// measures its nominal rate times a sample drawn, with replacement, from
// measured ratios: real isolate pair tests' allreduce busbw and stream rate,
// each over the median of its run's tests. Both of one test are drawn
// together (they share a moment of the fabric).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace smddp::diag {

struct NoiseSample {
  double busbw, stream;
};

struct NoiseModel {
  std::vector<NoiseSample> samples;
  std::string source;  // for the report
};

inline constexpr size_t kMinNoiseSamples = 10;

// This project's namespace cluster (noise.cc says how it was measured).
NoiseModel builtin_noise();
// --noise FILE: one test a line, "BUSBW_RATIO STREAM_RATIO", '#' comments;
// at least kMinNoiseSamples. Throws UsageError, one line.
NoiseModel load_noise(const std::string& path);

}  // namespace smddp::diag
