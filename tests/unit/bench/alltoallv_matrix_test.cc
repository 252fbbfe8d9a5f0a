// alltoallv's patterns (bench/src/cli/alltoallv_matrix.h): nccl-tests'
// NCCL_TESTS_ALLTOALLV_SPREAD against its formula, its byte matrix with
// NCCL_TESTS_ALLTOALLV_MATRIX_SCALE, bad values and files refused with one
// line, and how the variables meet --alltoallv-matrix and NCCL_TESTS_SPLIT
// on the command line (parse_command_line, before any rank connects).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli/alltoallv_matrix.h"
#include "cli/collective_spec.h"
#include "smddp/error.h"
#include "sweep/run.h"

namespace smddp::bench {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/a2av_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

// nccl-tests' generated part from rank i to j of T bytes per rank, in bytes
// (before its rounding to 16 bytes).
double nccl_tests_part(double s, int i, int j, int n, double total) {
  const double d = (j - i + n) % n;
  return (1 - s) * total / n + s * d * total / (n * (n - 1) / 2.0);
}

TEST(AlltoallvMatrix, SpreadFollowsNcclTestsFormula) {
  const int n = 4;
  const size_t count = 6000, es = 4;  // elements per peer on average
  for (double s : {0.0, 0.25, 0.5, 1.0}) {
    AlltoallvPattern p;
    p.spread = s;
    const CountMatrix m = alltoallv_counts(p, n, count, es);
    for (int i = 0; i < n; ++i) {
      size_t sent = 0;
      for (int j = 0; j < n; ++j) {
        const double want = nccl_tests_part(s, i, j, n, static_cast<double>(n * count * es)) / es;
        EXPECT_NEAR(static_cast<double>(m.at(i, j)), want, 1.0) << "spread " << s << " " << i << "->" << j;
        sent += m.at(i, j);
      }
      EXPECT_NEAR(static_cast<double>(sent), static_cast<double>(n * count), n) << "each rank sends the row's size";
    }
  }
  AlltoallvPattern uniform;
  uniform.spread = 0.0;
  const CountMatrix u = alltoallv_counts(uniform, 3, 100, 8);
  for (size_t c : u.counts) EXPECT_EQ(c, 100u);
  AlltoallvPattern full;
  full.spread = 1.0;
  EXPECT_EQ(alltoallv_counts(full, 4, 600, 4).send_counts(0), (std::vector<size_t>{0, 400, 800, 1200}));
  EXPECT_EQ(alltoallv_counts(full, 1, 600, 4).counts, (std::vector<size_t>{600}));
}

TEST(AlltoallvMatrix, ByteMatrixIsScaledAlignedAndCut) {
  const std::string path = write_file("bytes", "100  200  150\n50   100  75\n\n300  150  200\n");
  AlltoallvPattern p;
  p.bytes = load_byte_matrix(path, 2, &p.dim);
  ASSERT_EQ(p.dim, 3);
  // x2, each rounded down to 16 bytes.
  EXPECT_EQ(p.bytes, (std::vector<uint64_t>{192, 400, 288, 96, 192, 144, 592, 288, 400}));
  const CountMatrix m3 = alltoallv_counts(p, 3, 12345, 4);  // the row's count does not matter
  EXPECT_EQ(m3.send_counts(0), (std::vector<size_t>{48, 100, 72}));
  EXPECT_EQ(m3.recv_counts(0), (std::vector<size_t>{48, 24, 148}));
  const CountMatrix m2 = alltoallv_counts(p, 2, 0, 8);  // the first 2 rows and columns
  EXPECT_EQ(m2.counts, (std::vector<size_t>{24, 50, 12, 24}));
  // The row is the matrix's: its size the largest row or column sum (nccl-tests' busiest rank).
  const RowCounts rc = row_counts(Collective::AllToAllV, 1 << 20, DataType::Float32, 3, p);
  EXPECT_EQ(rc.count, 0u);
  EXPECT_EQ(rc.bytes, 592u + 288 + 400);
  EXPECT_THROW(check_alltoallv_ranks(p, 4), UsageError);
  EXPECT_NO_THROW(check_alltoallv_ranks(p, 3));
  EXPECT_EQ(load_byte_matrix(write_file("float", "1e3 16.9\n0 32\n"), 1, &p.dim),
            (std::vector<uint64_t>{992, 16, 0, 32}));
}

TEST(AlltoallvMatrix, BadValuesAndFilesAreRefused) {
  for (const char* v : {"", "1.5", "-0.1", "abc", "nan", "inf", "0x1", "0.5x"}) {
    EXPECT_THROW(parse_alltoallv_spread(v), UsageError) << v;
  }
  EXPECT_EQ(parse_alltoallv_spread("0.25"), 0.25);
  for (const char* v : {"", "-1", "x", "1e10", "0x2"}) EXPECT_THROW(parse_alltoallv_scale(v), UsageError) << v;
  EXPECT_EQ(parse_alltoallv_scale("0.5"), 0.5);
  int dim = 0;
  for (const char* text : {"", "\n\n", "1 2\n3\n", "1 2 3\n4 5 6\n", "16 -16\n16 16\n", "16 x\n16 16\n",
                           "16 0x10\n16 16\n", "0 0\n0 0\n", "8 8\n8 8\n", "16 1e300\n16 16\n"}) {
    try {
      load_byte_matrix(write_file("bad", text), 1, &dim);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("NCCL_TESTS_ALLTOALLV_MATRIX_FILE='", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_THROW(load_byte_matrix(testing::TempDir() + "/no such matrix", 1, &dim), UsageError);
}

// The variables on the command line: values set, unset after each case.
class CommandLine : public testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"NCCL_TESTS_ALLTOALLV_SPREAD", "NCCL_TESTS_ALLTOALLV_MATRIX_FILE",
                          "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "NCCL_TESTS_SPLIT", "NCCL_TESTS_SPLIT_MASK"}) {
      unsetenv(v);
    }
  }
  static BenchOptions parse(std::vector<std::string> args) {
    args.insert(args.begin(), "smddp-bench");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    BenchOptions o;
    EXPECT_EQ(parse_command_line(static_cast<int>(argv.size()), argv.data(), o), -1);
    return o;
  }
};

TEST_F(CommandLine, AlltoallvVariablesAndTheirPrecedence) {
  setenv("NCCL_TESTS_ALLTOALLV_SPREAD", "0.5", 1);
  BenchOptions o = parse({"alltoallv", "-b", "1K", "-e", "4K"});
  ASSERT_TRUE(o.alltoallv.spread);
  EXPECT_EQ(*o.alltoallv.spread, 0.5);

  // --alltoallv-matrix wins over the variables.
  const std::string weights = write_file("weights", "1 2\n3 4\n");
  o = parse({"alltoallv", "--alltoallv-matrix", weights});
  EXPECT_FALSE(o.alltoallv.spread);
  EXPECT_EQ(o.alltoallv.weights, (std::vector<uint64_t>{1, 2, 3, 4}));
  // ... but their values are still checked.
  setenv("NCCL_TESTS_ALLTOALLV_SPREAD", "2", 1);
  EXPECT_THROW(parse({"alltoallv", "--alltoallv-matrix", weights}), UsageError);
  unsetenv("NCCL_TESTS_ALLTOALLV_SPREAD");

  const std::string bytes = write_file("cmd_bytes", "16 32\n48 64\n");
  setenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", bytes.c_str(), 1);
  setenv("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", "2", 1);
  o = parse({"alltoallv", "-b", "1M", "-e", "1M"});
  EXPECT_EQ(o.alltoallv.bytes, (std::vector<uint64_t>{32, 64, 96, 128}));
  // A byte matrix sets every part: no sweep (nccl-tests: -b must equal -e).
  EXPECT_THROW(parse({"alltoallv", "-b", "1K", "-e", "1M"}), UsageError);
  EXPECT_NO_THROW(parse({"allreduce", "-b", "1K", "-e", "1M"}));  // no alltoallv row
  // Conflicts: a spread beside a matrix file; a scale without one.
  setenv("NCCL_TESTS_ALLTOALLV_SPREAD", "0.5", 1);
  EXPECT_THROW(parse({"alltoallv", "-b", "1M", "-e", "1M"}), UsageError);
  unsetenv("NCCL_TESTS_ALLTOALLV_SPREAD");
  unsetenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE");
  EXPECT_THROW(parse({"alltoallv"}), UsageError);
}

TEST_F(CommandLine, SplitVariables) {
  EXPECT_FALSE(parse({"allreduce"}).split);
  EXPECT_THROW(parse({"allreduce", "--per-group"}), UsageError);  // nothing to split
  setenv("NCCL_TESTS_SPLIT", "MOD 2", 1);
  const BenchOptions o = parse({"allreduce", "--per-group"});
  ASSERT_TRUE(o.split);
  EXPECT_EQ(o.split->color(3), 1);
  EXPECT_TRUE(o.per_group);
  setenv("NCCL_TESTS_SPLIT", "MOD 0", 1);
  EXPECT_THROW(parse({"allreduce"}), UsageError);
}

}  // namespace
}  // namespace smddp::bench
