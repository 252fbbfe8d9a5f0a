// The failure-code table: unique, well-formed codes, each with one allowed
// action; docs/diag.md's table equals it row for row.
#include "smddp/results/failure_codes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "smddp/error.h"

namespace smddp::results {
namespace {

TEST(FailureCodes, UniqueWellFormedWithAnAllowedAction) {
  const std::set<std::string> allowed = {"none", "re-run", "config", "reboot", "replace", "escalate"};
  std::set<std::string_view> seen;
  ASSERT_FALSE(failure_codes().empty());
  for (const auto& c : failure_codes()) {
    EXPECT_TRUE(seen.insert(c.code).second) << "duplicate " << c.code;
    EXPECT_TRUE(well_formed_code(c.code)) << c.code;
    EXPECT_TRUE(allowed.count(std::string(to_string(c.action)))) << c.code;
    EXPECT_EQ(parse_action(to_string(c.action)), c.action);
    EXPECT_FALSE(c.remediation.empty()) << c.code;
    EXPECT_EQ(c.remediation.find('\n'), std::string_view::npos) << c.code << ": one line";
    EXPECT_EQ(c.remediation.find('|'), std::string_view::npos) << c.code << ": no '|' (a Markdown table cell)";
    EXPECT_EQ(find_failure_code(c.code), &c);
  }
  // Every action has its traits row, in order.
  ASSERT_EQ(action_traits().size(), allowed.size());
  for (const auto& t : action_traits()) EXPECT_EQ(&traits(t.action), &t);
}

TEST(FailureCodes, WellFormedRejects) {
  EXPECT_TRUE(well_formed_code("SMDDP-A1-B"));
  for (const char* bad : {"", "SMDDP-", "SMDDP-a", "SMDDP--A", "SMDDP-A-", "smddp-A", "XSMDDP-A", "SMDDP-A B", "SMDDP-A_B"}) {
    EXPECT_FALSE(well_formed_code(bad)) << bad;
  }
  EXPECT_FALSE(well_formed_code("SMDDP-" + std::string(58, 'A')));  // 64 > a label value's 63
  EXPECT_FALSE(parse_action("watch"));
  EXPECT_FALSE(parse_action("reset"));
}

TEST(FailureCodes, NamedConstantsAreRowsAndUnknownThrows) {
  for (std::string_view c : {code::kPreflightCheckError, code::kPreflightNoResult, code::kPreflightAllreduceWrong,
                             code::kConfigMismatch, code::kFabricCounters, code::kIsolateSlowNode, code::kIsolateSlowLink,
                             code::kIsolateSlowGroup, code::kIsolateUnreachable, code::kIsolateProbeFailed,
                             code::kIsolateCorruption, code::kBenchBelowThreshold, code::kBenchBelowBaseline,
                             code::kBenchNotJudged, code::kBenchWrong, code::kBenchBitwise}) {
    EXPECT_NE(find_failure_code(c), nullptr) << c;
  }
  EXPECT_EQ(failure_code("SMDDP-UNCLASSIFIED").action, Action::Escalate);
  EXPECT_THROW(failure_code("SMDDP-NO-SUCH-CODE"), Error);
  EXPECT_EQ(most_severe(Action::Reboot, Action::Config), Action::Reboot);
  EXPECT_EQ(most_severe(Action::Config, Action::Replace), Action::Replace);
}

// The rows between `<!-- NAME:begin -->` and `<!-- NAME:end -->`, header and
// separator left out.
std::vector<std::string> doc_rows(const std::string& name) {
  std::ifstream in(std::string(SMDDP_SOURCE_DIR) + "/docs/diag.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const size_t begin = text.find("<!-- " + name + ":begin -->"), end = text.find("<!-- " + name + ":end -->");
  if (begin == std::string::npos || end == std::string::npos) return {};
  std::vector<std::string> rows;
  std::istringstream lines(text.substr(begin, end - begin));
  std::string line;
  int row = 0;
  while (std::getline(lines, line)) {
    if (line.starts_with("|") && ++row > 2) rows.push_back(line);
  }
  return rows;
}

TEST(FailureCodes, DocsDiagMdListsEveryRowInOrder) {
  std::vector<std::string> want;
  for (const auto& c : failure_codes()) {
    want.push_back("| `" + std::string(c.code) + "` | " + std::string(to_string(c.action)) + " | " + std::string(c.remediation) + " |");
  }
  EXPECT_EQ(doc_rows("codes"), want) << "docs/diag.md's failure-code table differs from results/src/failure_codes.cc";
  want.clear();
  for (const auto& t : action_traits()) {
    want.push_back("| " + std::string(to_string(t.action)) + " | " + (t.drain ? "yes" : "no") + " | " +
                   (t.taint_key.empty() ? std::string("none") : "`" + std::string(t.taint_key) + "=CODE:NoSchedule`") + " | " +
                   std::string(t.meaning) + " |");
  }
  EXPECT_EQ(doc_rows("actions"), want) << "docs/diag.md's action table differs from results/src/failure_codes.cc";
}

}  // namespace
}  // namespace smddp::results
