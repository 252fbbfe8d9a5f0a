// The Prometheus text smddp-bench serves and pushes (telemetry/src/
// bench_registry.cc, serialised by prometheus-cpp's TextSerializer), as a
// round trip: the input becomes every free-text label value (host, version,
// collective, backend, ...), the text is read back by the strict reader
// below, and each such label must come back as the registry's bounded
// value; output from valid UTF-8 must be valid UTF-8.
#include <prometheus/text_serializer.h>

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "bench_registry.h"
#include "fuzz_check.h"
#include "utf8.h"

namespace {

// Prometheus text format 0.0.4: "# HELP|TYPE ..." or
// name{label="value",...} number. Label values escape \\, \" and \n only.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
};

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

bool read_sample(std::string_view line, Sample* out) {
  size_t i = 0;
  while (i < line.size() && name_char(line[i], i == 0)) ++i;
  if (i == 0) return false;
  out->name = std::string(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const size_t start = i;
      while (i < line.size() && name_char(line[i], i == start)) ++i;
      if (i == start || line.substr(i, 2) != "=\"") return false;
      const std::string key(line.substr(start, i - start));
      i += 2;
      std::string value;
      for (;; ++i) {
        if (i >= line.size()) return false;
        if (line[i] == '"') break;
        if (line[i] != '\\') {
          value += line[i];
          continue;
        }
        if (++i >= line.size()) return false;
        if (line[i] == '\\' || line[i] == '"') value += line[i];
        else if (line[i] == 'n') value += '\n';
        else return false;
      }
      ++i;
      if (!out->labels.emplace(key, value).second) return false;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return false;
    ++i;
  }
  if (i >= line.size() || line[i] != ' ') return false;
  const std::string number(line.substr(i + 1));
  if (number.empty()) return false;
  char* end = nullptr;
  (void)std::strtod(number.c_str(), &end);
  return *end == '\0' || *end == ' ';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace smddp::telemetry;
  const std::string input(reinterpret_cast<const char*>(data), size);
  RunInfo run;
  run.version = run.backends = run.hosts_csv = run.mem = input;
  BenchRegistry registry(run, input);
  BenchRow row;
  row.collective = row.dtype = row.op = row.backend = row.algorithm = input;
  row.bytes = 4096;
  row.iterations = 3;
  row.min_us = row.p50_us = row.p95_us = row.p99_us = row.max_us = 1;
  registry.record(row);
  registry.record_timeout(input);
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());

  if (smddp::fuzz::valid_utf8(input)) FUZZ_CHECK(smddp::fuzz::valid_utf8(text));
  const std::set<std::string> free_text = {"version", "backends", "hosts", "host", "mem",      "collective",
                                           "dtype",   "op",       "backend", "algorithm"};
  // What row_labels and the info labels make of the input.
  const std::string expected = input.empty() ? "none" : input.substr(0, kMaxLabelValueLength);
  size_t samples = 0, checked = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    FUZZ_CHECK(end != std::string::npos);  // every line ends in a newline
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.starts_with("#")) {
      FUZZ_CHECK(line.starts_with("# HELP ") || line.starts_with("# TYPE "));
      continue;
    }
    Sample s;
    if (!read_sample(line, &s)) {
      std::fprintf(stderr, "not a Prometheus sample: %.*s\n", static_cast<int>(line.size()), line.data());
      FUZZ_CHECK(false);
    }
    ++samples;
    for (const auto& [key, value] : s.labels) {
      if (!free_text.count(key)) continue;
      ++checked;
      // Cut at a character boundary: the prefix of expected that is whole UTF-8.
      FUZZ_CHECK(expected.starts_with(value) && expected.size() - value.size() < 4);
      if (smddp::fuzz::valid_utf8(input)) FUZZ_CHECK(smddp::fuzz::valid_utf8(value));
    }
  }
  FUZZ_CHECK(samples > 0 && checked > 0);
  return 0;
}
