// smddp::tools::read_input_file: the one bounded, non-blocking reading of a
// file a user names. Every refusal is one UsageError naming the input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "smddp/error.h"
#include "smddp/tools/input_file.h"

namespace smddp::tools {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("smddp-input-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string refusal(const std::string& path, size_t max_bytes = kMaxInputBytes) {
    try {
      read_input_file(path, "--thing '" + path + "'", max_bytes);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(InputFileTest, ReadsARegularFileWhole) {
  const auto p = dir_ / "a.json";
  std::ofstream(p) << "{\"a\": 1}\n";
  EXPECT_EQ(read_input_file(p, "x"), "{\"a\": 1}\n");
  EXPECT_EQ(try_read_input_file(p).value_or(""), "{\"a\": 1}\n");
  std::ofstream(dir_ / "empty");
  EXPECT_EQ(read_input_file(dir_ / "empty", "x"), "");
}

TEST_F(InputFileTest, RefusesWhatIsNotARegularFile) {
  EXPECT_NE(refusal(dir_ / "absent").find("No such file"), std::string::npos);
  EXPECT_NE(refusal(dir_).find("a directory"), std::string::npos);
  EXPECT_NE(refusal("/dev/zero").find("not a regular file"), std::string::npos);
  EXPECT_FALSE(try_read_input_file(dir_).has_value());
  EXPECT_EQ(refusal(dir_).rfind("--thing '", 0), 0u) << "the message names the input first";
}

TEST_F(InputFileTest, AFifoWithNoWriterIsRefusedAtOnce) {
  const auto fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A blocking open would never return: the test's time limit would end it.
  EXPECT_NE(refusal(fifo).find("not a regular file"), std::string::npos);
}

TEST_F(InputFileTest, AFileOverTheBoundIsRefusedNotLoaded) {
  const auto p = dir_ / "big";
  std::ofstream(p) << std::string(4096, 'x');
  EXPECT_EQ(read_input_file(p, "x", 4096).size(), 4096u);
  EXPECT_NE(refusal(p, 4095).find("larger than"), std::string::npos);
  // A symbolic link is followed to the file it names.
  fs::create_symlink(p, dir_ / "link");
  EXPECT_EQ(read_input_file(dir_ / "link", "x").size(), 4096u);
}

// common::read_file_tail: a growing log followed from an offset, bounded.
TEST_F(InputFileTest, TailReadsWhatIsNewAndAtMostTheBound) {
  const std::string path = (dir_ / "grows.log").string();
  { std::ofstream(path) << "0123456789"; }
  uint64_t offset = 0;
  std::string text;
  ASSERT_EQ(common::read_file_tail(path, 1 << 20, &offset, &text), "");
  EXPECT_EQ(text, "0123456789");
  EXPECT_EQ(offset, 0u);
  offset = 10;
  { std::ofstream(path, std::ios::app) << "abcdef"; }
  ASSERT_EQ(common::read_file_tail(path, 1 << 20, &offset, &text), "");
  EXPECT_EQ(text, "abcdef");
  EXPECT_EQ(offset, 10u);
  // More new bytes than the bound: the last ones, the offset moved on.
  offset = 0;
  ASSERT_EQ(common::read_file_tail(path, 4, &offset, &text), "");
  EXPECT_EQ(text, "cdef");
  EXPECT_EQ(offset, 12u);
  // Shorter than the offset (truncated or replaced): from the start.
  { std::ofstream(path) << "xy"; }
  offset = 16;
  ASSERT_EQ(common::read_file_tail(path, 1 << 20, &offset, &text), "");
  EXPECT_EQ(text, "xy");
  EXPECT_EQ(offset, 0u);
}

TEST_F(InputFileTest, TailRefusesWhatIsNotARegularFile) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  uint64_t offset = 0;
  std::string text = "kept";
  EXPECT_EQ(common::read_file_tail(fifo, 100, &offset, &text), "not a regular file (a FIFO, device or socket)");
  EXPECT_EQ(common::read_file_tail(dir_.string(), 100, &offset, &text), "a directory, not a file");
  EXPECT_EQ(text, "kept");
}

}  // namespace
}  // namespace smddp::tools
