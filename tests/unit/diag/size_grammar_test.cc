// One size grammar (docs/bench.md#sizes): the same strings through every
// entry point that reads a size, the command lines' parse_size_or_throw, an
// SMDDP_* size setting read through the configuration table, a tuning-file
// rule's max_bytes, a preflight check's size parameter and a profile
// baseline's bytes, must give the same bytes or be refused by every one.
// (In tests/unit/diag: the profile readers live in smddp-diag's library.)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/selector.h"
#include "preflight/profile.h"
#include "smddp/common/sizes.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/results/baseline.h"

namespace smddp {
namespace {

using Bytes = std::optional<uint64_t>;

struct Case {
  std::string text;
  Bytes bytes;  // nullopt: refused
};

// tests/unit/size_cases.json: [text, bytes or null], also read by the Python
// tool's check (tests/e2e/torch/torch_e2e.py, smddp-bench-torch's flags).
// Left out on purpose: "" (an empty SMDDP_* variable is an unset one, its
// default applies), "0" (below every size setting's floor: a range refusal,
// not the grammar's), "inf" (the tuning file's word for no limit) and '#'
// (a tuning-file comment).
std::vector<Case> cases() {
  std::ifstream in(std::string(SMDDP_SOURCE_DIR) + "/tests/unit/size_cases.json");
  EXPECT_TRUE(in) << "size_cases.json not found under " << SMDDP_SOURCE_DIR;
  std::vector<Case> out;
  for (const auto& row : nlohmann::json::parse(in)) {
    out.push_back({row.at(0).get<std::string>(), row.at(1).is_null() ? Bytes{} : Bytes{row.at(1).get<uint64_t>()}});
  }
  return out;
}

// smddp-bench -b/-e/-i, smddp-diag --bytes/--bw-bytes, smddp-model's flags.
Bytes via_command_line(const std::string& text) {
  try {
    return common::parse_size_or_throw(text, "-b");
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

// A size row of the configuration table, read as the engine reads it.
// SMDDP_FABRIC_MAX_MSG: 1 .. 2^63-1 bytes, any multiple.
Bytes via_setting(const std::string& text) {
  const char* name = "SMDDP_FABRIC_MAX_MSG";
  setenv(name, text.c_str(), 1);
  Bytes out;
  try {
    out = config::bytes(name);
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find(std::string(name) + "='"), 0u) << e.what();
  }
  unsetenv(name);
  return out;
}

Bytes via_tuning_file(const std::string& text) {
  try {
    const auto rules = parse_tuning("allreduce single " + text + " ring\n", "t.tuning");
    EXPECT_EQ(rules.size(), 1u);
    return rules.at(0).max_bytes;
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find("t.tuning:1: "), 0u) << e.what();
    return std::nullopt;
  }
}

// YAML double-quoted, so that the profile reader gets the text as it is.
std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\t' ? std::string("\\t") : std::string(1, c);
  }
  return out + "\"";
}

Bytes via_profile_check(const std::string& text) {
  try {
    const diag::Profile p =
        diag::parse_profile("name: t\nchecks:\n  shm_size: {min: " + yaml_quoted(text) + "}\n", "t.yaml");
    EXPECT_EQ(p.checks.size(), 1u);
    return p.checks.at(0).params.size("min");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("t.yaml"), std::string::npos) << e.what();
    return std::nullopt;
  }
}

Bytes via_profile_baseline(const std::string& text) {
  try {
    const results::Baseline b = results::parse_baseline_section(
        YAML::Load("entries:\n  - {collective: allreduce, bytes: " + yaml_quoted(text) + ", busbw_gbps: 1}\n"),
        "b.yaml");
    EXPECT_EQ(b.entries.size(), 1u);
    return b.entries.at(0).min_bytes;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("b.yaml"), std::string::npos) << e.what();
    return std::nullopt;
  }
}

TEST(SizesEverywhere, SameBytesOrSameRefusal) {
  const std::vector<Case> table = cases();
  ASSERT_GE(table.size(), 40u);
  size_t refused = 0;
  for (const Case& c : table) {
    refused += !c.bytes;
    const std::string& text = c.text;
    SCOPED_TRACE("'" + text + "'");
    EXPECT_EQ(common::parse_size(text), c.bytes);
    EXPECT_EQ(via_command_line(text), c.bytes);
    EXPECT_EQ(via_setting(text), c.bytes);
    EXPECT_EQ(via_tuning_file(text), c.bytes);
    EXPECT_EQ(via_profile_check(text), c.bytes);
    EXPECT_EQ(via_profile_baseline(text), c.bytes);
  }
  EXPECT_GT(refused, 10u);  // both halves of the table are there
}

// Each reader's refusal says what is wrong with the size, in the grammar's words.
TEST(SizesEverywhere, RefusalsGiveTheReason) {
  auto message = [](auto read) {
    try {
      read();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  setenv("SMDDP_FABRIC_MAX_MSG", "0x10", 1);
  EXPECT_EQ(message([] { (void)config::bytes("SMDDP_FABRIC_MAX_MSG"); }),
            "SMDDP_FABRIC_MAX_MSG='0x10': hexadecimal; expected bytes >= 1 (like 4096, 64K, 1M)");
  unsetenv("SMDDP_FABRIC_MAX_MSG");
  EXPECT_NE(message([] { (void)parse_tuning("allreduce single 1.5 ring\n", "t"); }).find("(not a whole number of bytes)"),
            std::string::npos);
  EXPECT_NE(message([] { (void)diag::parse_profile("checks:\n  shm_size: {min: -1G}\n", "p"); }).find("(negative)"),
            std::string::npos);
  EXPECT_NE(message([] {
              (void)results::parse_baseline_section(
                  YAML::Load("entries:\n  - {collective: allreduce, bytes: 8E, busbw_gbps: 1}\n"), "b");
            }).find("(more than 2^63-1 bytes)"),
            std::string::npos);
}

// The words that are not sizes but stand for one where they are read.
TEST(SizesEverywhere, EachReadersOwnWords) {
  EXPECT_EQ(parse_tuning("allreduce single inf ring\n", "t").at(0).max_bytes, SIZE_MAX);
  EXPECT_FALSE(common::parse_size("inf"));
  const diag::Profile p = diag::parse_profile("checks:\n  memlock: {min: unlimited}\n", "p");
  EXPECT_FALSE(p.checks.at(0).params.size("min"));  // nullopt: unlimited
  EXPECT_THROW(diag::parse_profile("checks:\n  shm_size: {min: unlimited}\n", "p"), UsageError);
}

}  // namespace
}  // namespace smddp
