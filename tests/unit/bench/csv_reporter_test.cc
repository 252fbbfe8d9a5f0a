// The --csv file (csv_reporter.cc) read back by an RFC 4180 reader of its
// own: quoted fields (comma, double quote, CR LF) come back as written, and
// every number reads back as the same double or integer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "reporters/reporter.h"

namespace smddp::bench {
namespace {

using Records = std::vector<std::vector<std::string>>;

// RFC 4180: fields separated by commas, records ended by LF or CRLF (the
// last one too, as the reporter writes it); a quoted field may hold commas,
// CR, LF and doubled quotes. nullopt for anything else: a quote inside an
// unquoted field, text after a closing quote, an unterminated quote.
std::optional<Records> parse_csv(std::string_view s) {
  Records records;
  std::vector<std::string> record;
  size_t i = 0;
  while (i < s.size()) {
    std::string field;
    if (s[i] == '"') {
      for (++i;; ++i) {
        if (i >= s.size()) return std::nullopt;
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            field += '"';
            ++i;
            continue;
          }
          ++i;
          break;
        }
        field += s[i];
      }
    } else {
      for (; i < s.size() && s[i] != ',' && s[i] != '\r' && s[i] != '\n'; ++i) {
        if (s[i] == '"') return std::nullopt;
        field += s[i];
      }
    }
    record.push_back(std::move(field));
    if (i >= s.size()) return std::nullopt;  // no line break after the last record
    if (s[i] == ',') {
      ++i;
      if (i >= s.size()) return std::nullopt;
      continue;
    }
    if (s[i] == '\r') ++i;
    if (i >= s.size() || s[i] != '\n') return std::nullopt;
    ++i;
    records.push_back(std::move(record));
    record.clear();
  }
  return records;
}

TEST(CsvReader, RejectsWhatIsNotRfc4180) {
  EXPECT_FALSE(parse_csv("a,b\"c\n"));
  EXPECT_FALSE(parse_csv("\"a\"b\n"));
  EXPECT_FALSE(parse_csv("\"a\n"));
  EXPECT_FALSE(parse_csv("a,b"));
  const auto ok = parse_csv("a,\"b,\"\"c\"\"\r\nd\",\r\n\"\",x\n");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (Records{{"a", "b,\"c\"\r\nd", ""}, {"", "x"}}));
}

// Exactly the double `want`, from all of `text` (no errno check: strtod
// sets ERANGE for a subnormal such as 5e-324 and still reads it exactly).
void expect_double(const std::string& text, double want) {
  char* end = nullptr;
  const double got = std::strtod(text.c_str(), &end);
  EXPECT_TRUE(!text.empty() && *end == '\0') << "'" << text << "' is not a whole number";
  EXPECT_EQ(got, want) << "'" << text << "' reads back as " << got;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CsvReporterTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::TempDir() + "csv_reporter_test." + std::to_string(getpid()) + ".csv";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  Records write(const std::vector<RowResult>& rows) {
    auto reporter = make_csv_reporter(path_);
    reporter->begin(RunContext{});
    reporter->row(rows);
    reporter->end(Summary{});
    const std::string text = read_file(path_);
    auto records = parse_csv(text);
    EXPECT_TRUE(records) << "not RFC 4180:\n" << text;
    return records.value_or(Records{});
  }

  std::string path_;
};

TEST_F(CsvReporterTest, QuotedFieldsAndNumbersReadBackExactly) {
  RowResult a;
  a.collective = Collective::AllReduce;
  a.dtype = DataType::Float32;
  a.op = ReduceOp::Sum;
  a.bytes = size_t{1} << 40;
  a.count = a.bytes / 4;
  a.backend = "smddp";
  a.algorithm = "ring, \"tuned\"";
  a.time_us = 1234567.0;  // the stream default printed 1.23457e+06
  a.algbw_gbps = 0.1 + 0.2;
  a.busbw_gbps = 1.0 / 3.0;
  a.checked = true;
  a.wrong = 18446744073709551615ull;
  a.iterations = 20;
  a.ratio = 123456789012345678.0;
  a.stats = IterationStats{};
  a.stats->p50_us = 5e-324;
  a.stats->p95_us = 2.0 / 3.0;
  a.stats->p99_us = 1e300;
  a.straggler = Straggler{3, "node\"7\",\r\nrack b", 12.5};

  RowResult b;
  b.collective = Collective::Broadcast;
  b.dtype = DataType::Uint8;
  b.root = 1;
  b.bytes = 0;
  b.count = 0;
  b.backend = "mpi";
  b.algorithm = "";
  b.in_place = true;
  b.time_us = 0.7;

  const Records rec = write({a, b});
  ASSERT_EQ(rec.size(), 3u);
  for (const auto& r : rec) ASSERT_EQ(r.size(), 20u);
  EXPECT_EQ(rec[0][9], "time_us");
  EXPECT_EQ(rec[0][19], "straggler_host");

  const auto& x = rec[1];
  EXPECT_EQ(x[0], "allreduce");
  EXPECT_EQ(x[1], "float");
  EXPECT_EQ(x[2], "sum");
  EXPECT_EQ(x[3], "-1");
  EXPECT_EQ(x[4], "1099511627776");
  EXPECT_EQ(x[5], "274877906944");
  EXPECT_EQ(x[6], "smddp");
  EXPECT_EQ(x[7], "ring, \"tuned\"");
  EXPECT_EQ(x[8], "out-of-place");
  EXPECT_EQ(x[9], "1234567");
  expect_double(x[9], a.time_us);
  expect_double(x[10], a.algbw_gbps);
  expect_double(x[11], a.busbw_gbps);
  EXPECT_EQ(x[12], "18446744073709551615");
  EXPECT_EQ(x[13], "20");
  expect_double(x[14], a.ratio);
  expect_double(x[15], a.stats->p50_us);
  expect_double(x[16], a.stats->p95_us);
  expect_double(x[17], a.stats->p99_us);
  EXPECT_EQ(x[18], "3");
  EXPECT_EQ(x[19], "node\"7\",\r\nrack b");

  // No op, no check, no statistics, no straggler: empty fields.
  const auto& y = rec[2];
  EXPECT_EQ(y[0], "broadcast");
  EXPECT_EQ(y[2], "none");
  EXPECT_EQ(y[3], "1");
  EXPECT_EQ(y[7], "");
  EXPECT_EQ(y[8], "in-place");
  expect_double(y[9], 0.7);
  EXPECT_EQ(y[12], "");
  for (int i = 15; i < 20; ++i) EXPECT_EQ(y[i], "") << "field " << i;
}

}  // namespace
}  // namespace smddp::bench
