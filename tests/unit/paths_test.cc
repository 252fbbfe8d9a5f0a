// smddp::tools::check_writable: the output-flag check both tools run first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "smddp/error.h"
#include "smddp/tools/paths.h"

namespace smddp::tools {
namespace {

namespace fs = std::filesystem;

std::string refusal(const std::string& path) {
  try {
    check_writable(path, "-J");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

class PathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("smddp-paths-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PathsTest, NewAndExistingFilesPassAndNothingIsLeft) {
  EXPECT_EQ(refusal((dir_ / "new.json").string()), "");
  std::ofstream(dir_ / "old.json") << "x";
  EXPECT_EQ(refusal((dir_ / "old.json").string()), "");
  EXPECT_FALSE(fs::exists(dir_ / "new.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << "no probe left";
}

TEST_F(PathsTest, NoFileAndStdoutPass) {
  EXPECT_EQ(refusal(""), "");
  EXPECT_EQ(refusal("-"), "");
  EXPECT_EQ(refusal("/dev/null"), "");
}

TEST_F(PathsTest, RefusalsNameTheFlagAndTheReason) {
  EXPECT_NE(refusal(dir_.string()).find("-J '" + dir_.string() + "' is a directory"), std::string::npos);
  EXPECT_NE(refusal((dir_ / "no" / "x.json").string()).find("does not exist"), std::string::npos);
  std::ofstream(dir_ / "a") << "x";
  fs::create_hard_link(dir_ / "a", dir_ / "b");
  EXPECT_NE(refusal((dir_ / "a").string()).find("hard links"), std::string::npos);
}

TEST_F(PathsTest, SymlinkIsJudgedByItsTarget) {
  fs::create_directories(dir_ / "d");
  fs::create_symlink("d", dir_ / "to-dir");
  EXPECT_NE(refusal((dir_ / "to-dir").string()).find("is a directory"), std::string::npos);
  fs::create_symlink("d/out.json", dir_ / "to-file");
  EXPECT_EQ(refusal((dir_ / "to-file").string()), "");
  const WriteTarget t = resolve_write_target((dir_ / "to-file").string());
  EXPECT_EQ(t.kind, WriteTarget::kNew);
  EXPECT_EQ(fs::path(t.path), dir_ / "d" / "out.json");
}

TEST_F(PathsTest, SameFileThroughSpellingsLinksAndInodes) {
  const std::string a = (dir_ / "a.json").string();
  EXPECT_TRUE(same_file(a, (dir_ / "." / "a.json").string()));  // not created yet
  EXPECT_TRUE(same_file(a, (dir_ / "sub" / ".." / "a.json").string()));
  EXPECT_FALSE(same_file(a, (dir_ / "b.json").string()));
  std::ofstream(a) << "x";
  fs::create_symlink("a.json", dir_ / "link.json");
  EXPECT_TRUE(same_file(a, (dir_ / "link.json").string()));
  fs::create_hard_link(a, dir_ / "hard.json");
  EXPECT_TRUE(same_file(a, (dir_ / "hard.json").string()));
  const auto cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_TRUE(same_file("a.json", a));
  fs::current_path(cwd);
  EXPECT_TRUE(same_file("/dev/null", "/dev/../dev/null"));
  EXPECT_FALSE(same_file("/dev/null", a));
}

TEST_F(PathsTest, UnwritableDirectory) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  fs::create_directories(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_NE(refusal((dir_ / "ro" / "x").string()).find("cannot write in"), std::string::npos);
  fs::permissions(dir_ / "ro", fs::perms::owner_all);
}

}  // namespace
}  // namespace smddp::tools
