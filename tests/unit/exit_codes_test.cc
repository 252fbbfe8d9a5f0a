// The shared exit-code table: README.md's table lists the same codes for the
// same tools, and one failure maps to one code.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <new>
#include <regex>
#include <string>

#include "smddp/error.h"
#include "smddp/tools/exit_codes.h"

namespace smddp::tools {
namespace {

struct Row {
  bool bench = false, diag = false;
  bool operator==(const Row&) const = default;
};

// "| 3 | timeout ... | timeout ... |" rows of README's "Errors and exit codes".
std::map<int, Row> readme_rows() {
  std::ifstream in(std::string(SMDDP_SOURCE_DIR) + "/README.md");
  EXPECT_TRUE(in) << "README.md not found under " << SMDDP_SOURCE_DIR;
  std::map<int, Row> rows;
  const std::regex row(R"(^\|\s*(\d+)\s*\|([^|]*)\|([^|]*)\|\s*$)");
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Errors and exit codes";
    std::smatch m;
    if (!in_section || !std::regex_match(line, m, row)) continue;
    auto used = [](const std::string& cell) { return cell.find_first_not_of(" \t") != std::string::npos; };
    rows[std::stoi(m[1])] = Row{used(m[2]), used(m[3])};
  }
  return rows;
}

TEST(ExitCodes, ReadmeTableMatches) {
  std::map<int, Row> table;
  for (const ExitCodeUse& u : exit_code_uses()) table[u.code] = Row{u.bench, u.diag};
  const auto readme = readme_rows();
  ASSERT_FALSE(readme.empty()) << "no exit-code table in README.md";
  EXPECT_EQ(readme.size(), table.size());
  for (const auto& [code, row] : table) {
    auto it = readme.find(code);
    ASSERT_NE(it, readme.end()) << "README.md has no row for exit " << code;
    EXPECT_EQ(it->second.bench, row.bench) << "smddp-bench column of exit " << code;
    EXPECT_EQ(it->second.diag, row.diag) << "smddp-diag column of exit " << code;
  }
}

TEST(ExitCodes, OneFailureOneCode) {
  EXPECT_EQ(exit_code_for(UsageError("x")), 64);
  EXPECT_EQ(exit_code_for(UnavailableError("x")), 69);
  EXPECT_EQ(exit_code_for(TimeoutError("x")), 3);
  EXPECT_EQ(exit_code_for(PeerLostError("x")), 3);
  EXPECT_EQ(exit_code_for(TransportError("x")), 3);
  EXPECT_EQ(exit_code_for(Error("x")), 70);
  EXPECT_EQ(exit_code_for(std::runtime_error("x")), 70);
}

TEST(ExitCodes, SysexitsValues) {
  EXPECT_EQ(kExitUsage, 64);        // EX_USAGE
  EXPECT_EQ(kExitUnavailable, 69);  // EX_UNAVAILABLE
  EXPECT_EQ(kExitRuntime, 70);      // EX_SOFTWARE
}

}  // namespace
}  // namespace smddp::tools

namespace smddp::tools {
namespace {

// A tool's last line never shows libstdc++'s "std::bad_alloc".
TEST(ExitCodes, OutOfMemoryIsOneLineOfOurs) {
  EXPECT_EQ(error_text(std::bad_alloc()), "out of memory");
  EXPECT_EQ(exit_code_for(std::bad_alloc()), kExitRuntime);
  EXPECT_EQ(error_text(UsageError("-n 0x2: hexadecimal")), "-n 0x2: hexadecimal");
}

}  // namespace
}  // namespace smddp::tools
