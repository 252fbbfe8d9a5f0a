// smddp::tools::AtomicFile: whole files or the old file, fsync'ed, and the
// documented policy for symbolic links, devices and hard links (paths.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "smddp/error.h"
#include "smddp/tools/atomic_file.h"

namespace smddp::tools {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("smddp-atomic-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    set_sync_function(nullptr);
    fs::remove_all(dir_);
  }
  // Only the named files: no temporary left behind.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, ReplacesContentWhole) {
  const fs::path p = dir_ / "out.json";
  write_atomically(p.string(), "old\n");
  write_atomically(p.string(), "new\n");
  EXPECT_EQ(slurp(p), "new\n");
  EXPECT_EQ(names(), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicFileTest, UncommittedWriteLeavesTheOldFile) {
  const fs::path p = dir_ / "out.json";
  write_atomically(p.string(), "old\n");
  {
    AtomicFile f(p.string());
    f.write("half of the new");
    EXPECT_EQ(slurp(p), "old\n") << "nothing shows before commit";
    EXPECT_TRUE(fs::exists(f.temporary()));
  }  // a crash or an exception before commit()
  EXPECT_EQ(slurp(p), "old\n");
  EXPECT_EQ(names(), std::vector<std::string>{"out.json"});
}

std::vector<bool> g_synced_dirs;
int counting_sync(int fd) {
  struct stat st {};
  fstat(fd, &st);
  g_synced_dirs.push_back(S_ISDIR(st.st_mode));
  return 0;
}
int failing_sync(int) {
  errno = EIO;
  return -1;
}

TEST_F(AtomicFileTest, FsyncsTheFileThenTheDirectory) {
  g_synced_dirs.clear();
  set_sync_function(&counting_sync);
  write_atomically((dir_ / "a").string(), "x");
  EXPECT_EQ(g_synced_dirs, (std::vector<bool>{false, true}));
}

TEST_F(AtomicFileTest, FailedFsyncKeepsTheOldFile) {
  const fs::path p = dir_ / "a";
  write_atomically(p.string(), "old");
  set_sync_function(&failing_sync);
  EXPECT_THROW(write_atomically(p.string(), "new"), Error);
  EXPECT_EQ(slurp(p), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"a"});
}

TEST_F(AtomicFileTest, KeepsPermissions) {
  const fs::path p = dir_ / "a";
  write_atomically(p.string(), "old");
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_atomically(p.string(), "new");
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::mask,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(AtomicFileTest, SymlinkIsFollowedAndKept) {
  fs::create_directories(dir_ / "real");
  write_atomically((dir_ / "real" / "target").string(), "old");
  fs::create_symlink("real/target", dir_ / "link");
  write_atomically((dir_ / "link").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_EQ(slurp(dir_ / "real" / "target"), "new");
  // A dangling link creates the file it names.
  fs::create_symlink("real/fresh", dir_ / "dangling");
  write_atomically((dir_ / "dangling").string(), "made");
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling"));
  EXPECT_EQ(slurp(dir_ / "real" / "fresh"), "made");
}

TEST_F(AtomicFileTest, HardLinkedFileIsRefused) {
  const fs::path p = dir_ / "a";
  write_atomically(p.string(), "old");
  fs::create_hard_link(p, dir_ / "b");
  EXPECT_THROW(write_atomically(p.string(), "new"), Error);
  EXPECT_EQ(slurp(dir_ / "b"), "old");
  EXPECT_EQ(slurp(p), "old");
}

TEST_F(AtomicFileTest, DirectoryIsRefused) {
  EXPECT_THROW(write_atomically(dir_.string(), "x"), Error);
}

TEST_F(AtomicFileTest, DeviceIsWrittenThrough) {
  write_atomically("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file("/dev/null")) << "still the device, not a file";
}

// A FIFO no process reads is refused at once: a blocking open would wait
// for a reader forever (the test's time limit would end it). With a reader
// the text goes through, and the FIFO stays a FIFO.
TEST_F(AtomicFileTest, FifoWithoutAReaderIsRefusedWithOne) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    write_atomically(fifo.string(), "x");
    FAIL() << "written with no reader";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a FIFO with no reader"), std::string::npos) << e.what();
  }
  EXPECT_EQ(names(), std::vector<std::string>{"fifo"}) << "no temporary left";
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_atomically(fifo.string(), "through");
  char buf[16] = {};
  EXPECT_EQ(read(reader, buf, sizeof buf), 7);
  EXPECT_EQ(std::string(buf), "through");
  close(reader);
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(AtomicFileTest, MissingDirectoryThrows) {
  EXPECT_THROW(write_atomically((dir_ / "no" / "such").string(), "x"), Error);
}

}  // namespace
}  // namespace smddp::tools
