// The configuration table's parsers: the spellings accepted before the
// table keep working, garbage is refused with the variable's name.
#include "smddp/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "smddp/error.h"

namespace smddp {
namespace {

// Sets one variable for the scope of a test.
struct Env {
  Env(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~Env() { unsetenv(name_); }
  const char* name_;
};

std::string refusal(const char* name, const char* value, void (*read)()) {
  Env e(name, value);
  try {
    read();
  } catch (const UsageError& err) {
    return err.what();
  }
  return "";
}

TEST(Config, DefaultsComeFromTheTable) {
  EXPECT_EQ(config::seconds("SMDDP_TIMEOUT"), 300);
  EXPECT_EQ(config::bytes("SMDDP_SHM_SLOT_BYTES"), 1u << 20);
  EXPECT_EQ(config::integer("SMDDP_RANKS_PER_NODE"), 0);  // unset: one node per host
  EXPECT_TRUE(config::flag("SMDDP_CMA"));
  EXPECT_EQ(config::text("SMDDP_TRANSPORT"), "auto");
  EXPECT_EQ(config::text("SMDDP_ALGORITHM_ALLREDUCE"), "auto");
  EXPECT_FALSE(config::is_set("SMDDP_TIMEOUT"));
}

TEST(Config, SizesTakePlainBytesAndSuffixes) {
  for (const char* v : {"65536", "64K", "64k", "64KB", "64KiB"}) {
    Env e("SMDDP_SHM_CELL_BYTES", v);
    EXPECT_EQ(config::bytes("SMDDP_SHM_CELL_BYTES"), 65536u) << v;
  }
  Env e("SMDDP_SHM_SLOT_BYTES", "1G");
  EXPECT_EQ(config::bytes("SMDDP_SHM_SLOT_BYTES"), 1u << 30);
  // The grammar of smddp-bench's -b/-e (docs/bench.md#sizes), which the
  // settings refused before: a decimal, an exponent, a blank before the unit.
  const std::pair<const char*, uint64_t> tool_forms[] = {{"1.5M", 3u << 19}, {"6.4e4", 64000}, {"64 KiB", 65536}};
  for (const auto& [v, bytes] : tool_forms) {
    Env f("SMDDP_FABRIC_MAX_MSG", v);
    EXPECT_EQ(config::bytes("SMDDP_FABRIC_MAX_MSG"), bytes) << v;
  }
}

TEST(Config, BadValuesAreRefusedWithTheirName) {
  auto slot = [] { (void)config::bytes("SMDDP_SHM_SLOT_BYTES"); };
  for (const char* v : {"12Q", "4097", "100", "-8", "2G", "1.5", "0x10", "1e19", "1.5M + 1"}) {
    EXPECT_NE(refusal("SMDDP_SHM_SLOT_BYTES", v, slot).find(std::string("SMDDP_SHM_SLOT_BYTES='") + v + "'"),
              std::string::npos)
        << v;
  }
  auto timeout = [] { (void)config::seconds("SMDDP_TIMEOUT"); };
  for (const char* v : {"nan", "inf", "1e400", "-1", "0", "soon", "5s"}) {
    EXPECT_NE(refusal("SMDDP_TIMEOUT", v, timeout), "") << v;
  }
  auto spin = [] { (void)config::integer("SMDDP_FABRIC_SPIN"); };
  EXPECT_NE(refusal("SMDDP_FABRIC_SPIN", "lots", spin), "");  // was 0, silently
  auto cma = [] { (void)config::flag("SMDDP_CMA"); };
  EXPECT_NE(refusal("SMDDP_CMA", "maybe", cma), "");
  auto transport = [] { (void)config::text("SMDDP_TRANSPORT"); };
  EXPECT_EQ(refusal("SMDDP_TRANSPORT", "ucx", transport), "SMDDP_TRANSPORT='ucx': expected mpi, fabric, socket or auto");
}

TEST(Config, SecondsAndBooleans) {
  {
    Env e("SMDDP_TIMEOUT", "2.5");
    EXPECT_EQ(config::seconds("SMDDP_TIMEOUT"), 2.5);
  }
  for (const char* v : {"0", "false", "no", "off", "OFF"}) {
    Env e("SMDDP_CMA", v);
    EXPECT_FALSE(config::flag("SMDDP_CMA")) << v;
  }
}

TEST(Config, CheckNamesTheBadVariable) {
  {
    Env e("SMDDP_ALGORITHM_BROADCAST", "ring_of_fire");
    try {
      config::check(config::kEngine);
      FAIL() << "accepted";
    } catch (const UsageError& err) {
      EXPECT_NE(std::string(err.what()).find("SMDDP_ALGORITHM_BROADCAST='ring_of_fire'"), std::string::npos);
    }
  }
  Env e("SMDDP_TUNING_FILE", "/");
  EXPECT_THROW(config::check(config::kEngine), UsageError);  // a directory
}

}  // namespace
}  // namespace smddp
