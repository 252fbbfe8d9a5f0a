// Unit tests of the preflight fixes of issues 15 and 16: duplicate profile
// keys, "any" counts, the setup fingerprint and drain reasons.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "preflight/profile.h"
#include "preflight/runner.h"
#include "preflight/writers.h"
#include "smddp/error.h"

namespace smddp::diag {
namespace {

std::string profile_error(const std::string& text) {
  try {
    parse_profile(text, "p.yaml");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(FixProfile, DuplicateKeysNameBothLines) {
  EXPECT_EQ(profile_error("checks:\n  memlock: {min: 1KiB}\n  memlock: {min: unlimited}\n"),
            "profile 'p.yaml': line 3: duplicate key 'checks.memlock' (first on line 2, again on line 3)");
  EXPECT_EQ(profile_error("name: a\nname: b\nchecks:\n  memlock: {min: 1KiB}\n"),
            "profile 'p.yaml': line 2: duplicate key 'name' (first on line 1, again on line 2)");
  EXPECT_EQ(profile_error("checks:\n  shm_size:\n    min: 1GiB\n    path: /a\n    min: 2GiB\n"),
            "profile 'p.yaml': line 5: duplicate key 'checks.shm_size.min' (first on line 3, again on line 5)");
}

// An alias inside its own anchor is a cycle in yaml-cpp's node graph, and
// nested aliases multiply: both end in one error, not a crash or a hang.
TEST(FixProfile, CyclicAndExplodingAliasesAreRefused) {
  EXPECT_NE(profile_error("a: &x [*x]\n").find("nested deeper than 32 levels"), std::string::npos);
  EXPECT_NE(profile_error("checks: &c\n  memlock: *c\n").find("nested deeper than 32 levels"), std::string::npos);
  std::string bomb = "a: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 8; ++i) {
    bomb += fmt::format("a{}: &a{} [", i, i);
    for (int j = 0; j < 10; ++j) bomb += fmt::format("{}*a{}", j ? ", " : "", i - 1);
    bomb += "]\n";
  }
  EXPECT_NE(profile_error(bomb).find("more than 100000 nodes once aliases are expanded"), std::string::npos);
}

TEST(FixProfile, CountOrAny) {
  Profile p = parse_profile("checks:\n  gpu_count: {expected: any}\n  efa_count: {expected: 4}\n", "p.yaml");
  ASSERT_EQ(p.checks.size(), 2u);
  EXPECT_FALSE(p.checks[0].params.count("expected"));
  EXPECT_EQ(p.checks[1].params.count("expected"), 4);
  EXPECT_NE(profile_error("checks:\n  gpu_count: {expected: some}\n").find("expected a count or 'any', got 'some'"), std::string::npos);
  EXPECT_NE(profile_error("checks:\n  gpu_count: {expected: -1}\n").find("must be at least 0"), std::string::npos);
  // The local profile judges no counts: any GPU node passes it.
  Profile local = load_profile("local");
  for (const auto& c : local.checks) {
    if (c.spec->name == "gpu_count" || c.spec->name == "efa_count") {
      EXPECT_FALSE(c.params.count("expected")) << c.spec->name;
    }
  }
}

TEST(FixPreflight, FingerprintCoversProfileChecksAndSkips) {
  auto fp = [](const std::string& text, std::vector<std::string> skip) {
    PreflightSetup s;
    s.profile = parse_profile(text, "p.yaml");
    s.skip = skip;
    select_checks(s.profile, {}, skip);
    return setup_fingerprint(s);
  };
  const std::string a = "name: a\nchecks:\n  memlock: {min: 1KiB}\n  disk_free: {min: 1MiB}\n";
  EXPECT_EQ(fp(a, {}), fp(a, {}));
  EXPECT_EQ(fp(a, {}), fp("name: a\nchecks:\n  disk_free: {min: 1MiB}\n  memlock: {min: 1KiB}\n", {}));  // same checks
  EXPECT_NE(fp(a, {}), fp("name: a\nchecks:\n  memlock: {min: 2KiB}\n  disk_free: {min: 1MiB}\n", {}));  // a threshold
  EXPECT_NE(fp(a, {}), fp(a, {"memlock"}));                                                             // --skip
  EXPECT_NE(fp(a, {}), fp("name: b\nchecks:\n  memlock: {min: 1KiB}\n  disk_free: {min: 1MiB}\n", {}));  // the name
}

TEST(FixDrain, ReasonKeepsWholeItemsWithinTheLimit) {
  const std::string c = "SMDDP-TEST-CODE";  // "smddp:SMDDP-TEST-CODE " is 22 characters
  EXPECT_EQ(drain_reason(c, {"gpu_count: expected 8 GPUs, NVML found 7"}), "smddp:SMDDP-TEST-CODE gpu_count: expected 8 GPUs, NVML found 7");
  EXPECT_EQ(drain_reason(c, {"a: one", "b: two"}), "smddp:SMDDP-TEST-CODE a: one; b: two");
  // 22 + 9 + " (+2 more)" = 41 fits 45; a second item would not.
  EXPECT_EQ(drain_reason(c, {"x: 123456", "y: 1234567890", "z: 1"}, 45), "smddp:SMDDP-TEST-CODE x: 123456 (+2 more)");
  // One item longer than the limit is cut at a word.
  std::string r = drain_reason(c, {"gpu_temperature: GPU 2 at 95 C, GPU 3 at 96 C, GPU 4 at 97 C"}, 50);
  EXPECT_EQ(r, "smddp:SMDDP-TEST-CODE gpu_temperature: GPU 2 at...");
  EXPECT_LE(r.size(), 50u);
  std::vector<std::string> many(40, "gpu_ecc: GPU 0 (0000:10:1c.0) has 3 uncorrectable ECC errors");
  r = drain_reason(c, many);
  EXPECT_LE(r.size(), kDrainReasonMax);
  EXPECT_NE(r.find(" more)"), std::string::npos);
  EXPECT_EQ(drain_reason(c, {"q: \"$HOME\" `x` \\n"}), "smddp:SMDDP-TEST-CODE q: ''HOME' 'x' 'n");
}

}  // namespace
}  // namespace smddp::diag
