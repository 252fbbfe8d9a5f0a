// The rxm buffer defaults the fabric endpoint sets at load time
// (docs/engine.md, "rxm's buffers"). The environment is decided before
// main, so each case runs this binary again with the environment it needs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "smddp/fabric/endpoint.h"

namespace {

std::string env_or_unset(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

bool in_child() { return std::getenv("SMDDP_FABRIC_DEFAULTS_CHILD") != nullptr; }

// Runs one Child test in a fresh process with none of the four knobs set,
// then `assignments` (NAME=VALUE ...); true when it passed.
bool run_child(const std::string& test, const std::string& assignments) {
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) return false;
  const std::string cmd =
      "env -u FI_OFI_RXM_BUFFER_SIZE -u FI_OFI_RXM_EAGER_LIMIT -u FI_OFI_RXM_MSG_RX_SIZE -u FI_OFI_RXM_MSG_TX_SIZE "
      "SMDDP_FABRIC_DEFAULTS_CHILD=1 " + assignments + " \"" + std::string(self) + "\" --gtest_filter=FabricDefaultsChild." + test +
      " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

TEST(FabricDefaults, SetWhenTheUserSetNone) { EXPECT_TRUE(run_child("Ours", "")); }

TEST(FabricDefaults, AllLeftAloneWhenTheUserSetOne) {
  EXPECT_TRUE(run_child("UsersOnly", "FI_OFI_RXM_MSG_RX_SIZE=64"));
}

TEST(FabricDefaultsChild, Ours) {
  if (!in_child()) GTEST_SKIP() << "runs in the child of FabricDefaults.SetWhenTheUserSetNone";
  (void)smddp::fabric_provider_available("no-such-provider");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_BUFFER_SIZE"), "65536");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_EAGER_LIMIT"), "65536");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_MSG_RX_SIZE"), "32");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_MSG_TX_SIZE"), "32");
}

TEST(FabricDefaultsChild, UsersOnly) {
  if (!in_child()) GTEST_SKIP() << "runs in the child of FabricDefaults.AllLeftAloneWhenTheUserSetOne";
  (void)smddp::fabric_provider_available("no-such-provider");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_BUFFER_SIZE"), "(unset)");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_EAGER_LIMIT"), "(unset)");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_MSG_RX_SIZE"), "64");
  EXPECT_EQ(env_or_unset("FI_OFI_RXM_MSG_TX_SIZE"), "(unset)");
}
