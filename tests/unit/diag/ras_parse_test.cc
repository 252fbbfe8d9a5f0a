// NCCL RAS readers (ras/ras_parse.h), the failure code table and its copy
// in docs/diag.md, and what hostile answers do.
#include "ras/ras_parse.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "smddp/error.h"

namespace smddp::diag {
namespace {

std::string rank_json(int rank, int pid, int ops, const std::string& status = "") {
  return R"({"rank":)" + std::to_string(rank) + R"(,"host":"10.0.0.1","pid":)" + std::to_string(pid) +
         R"(,"cuda_dev":0,"nvml_dev":)" + std::to_string(rank) + R"(,"status":{"init_state":0,"async_error":0,)" +
         R"("finalize_called":false,"destroy_flag":false,"abort_flag":false)" + status +
         R"(},"collective_counts":{"AllReduce":)" + std::to_string(ops) + R"(,"Broadcast":1}})";
}

std::string status_json(const std::string& ranks, const std::string& missing = "") {
  return R"({"nccl_version":"2.29.1","communicators_count":1,"communicators":[{"hash":"0xc0mm","size":4,"ranks_count":3,)"
         R"("missing_ranks_count":1,"ranks":[)" + ranks + R"(],"missing_ranks":[)" + missing +
         R"(]}],"ras":{"collection_time_sec":0.1,"timeouts_count":3}})";
}

const std::string kMissingDead =
    R"({"rank":3,"host":"10.0.0.2","pid":88,"cuda_dev":1,"nvml_dev":1,"status":{"unresponsive":true,"considered_dead":true}})";

TEST(RasStatusJson, DeadAndUnresponsiveRanksBecomeCodes) {
  RasStatus s = parse_ras_status_json(status_json(rank_json(0, 10, 5) + "," + rank_json(1, 11, 5) + "," + rank_json(2, 12, 5),
                                                  kMissingDead));
  EXPECT_TRUE(s.json);
  EXPECT_EQ(s.nccl_version, "2.29.1");
  EXPECT_EQ(s.communicators, 1);
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.missing_ranks, 1);
  EXPECT_EQ(s.timeouts, 3);
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_EQ(s.failures[0].kind, RasFailureKind::PeerDead);
  EXPECT_EQ(s.failures[0].text(),
            "SMDDP-RAS-PEER-DEAD (replace): process 88 on node 10.0.0.2 managing GPU 1, rank 3 of communicator 0xc0mm: considered dead");
  EXPECT_EQ(s.counts.at("0xc0mm").at(1).operations, 6u);

  std::string unresponsive = kMissingDead;
  unresponsive.replace(unresponsive.find("\"considered_dead\":true"), 22, "\"considered_dead\":false");
  s = parse_ras_status_json(status_json(rank_json(0, 10, 5), unresponsive));
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_EQ(std::string(ras_code(s.failures[0].kind).code), "SMDDP-RAS-PEER-UNRESPONSIVE");
}

TEST(RasStatusJson, RankErrorsAreCommErrors) {
  RasStatus s = parse_ras_status_json(status_json(rank_json(0, 10, 5, ",\"async_error\":3") + "," +
                                                  rank_json(1, 11, 5).replace(rank_json(1, 11, 5).find("\"init_state\":0"), 14, "\"init_state\":5") +
                                                  "," + rank_json(2, 12, 5).replace(rank_json(2, 12, 5).find("\"init_state\":0"), 14, "\"init_state\":7")));
  ASSERT_EQ(s.failures.size(), 2u);  // 7 (ncclInProgress) is initialization, not an error
  EXPECT_EQ(s.failures[0].detail, "async_error 3");
  EXPECT_EQ(s.failures[1].detail, "init_state 5");
  EXPECT_EQ(std::string(ras_code(RasFailureKind::CommError).action), "re-run");
}

TEST(RasStatusJson, StuckRanksNeedTwoAnswers) {
  const std::string a = status_json(rank_json(0, 10, 9) + "," + rank_json(1, 11, 7) + "," + rank_json(2, 12, 9));
  const std::string b = status_json(rank_json(0, 10, 9) + "," + rank_json(1, 11, 7) + "," + rank_json(2, 12, 9));
  const std::string moved = status_json(rank_json(0, 10, 12) + "," + rank_json(1, 11, 8) + "," + rank_json(2, 12, 12));
  auto stuck = stuck_ranks(parse_ras_status_json(a), parse_ras_status_json(b));
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].rank, 1);
  EXPECT_EQ(stuck[0].detail, "at collective 8 while others are at 10");
  EXPECT_TRUE(stuck_ranks(parse_ras_status_json(a), parse_ras_status_json(moved)).empty());
  // All ranks level and idle (between steps): not stuck.
  const std::string level = status_json(rank_json(0, 10, 9) + "," + rank_json(1, 11, 9));
  EXPECT_TRUE(stuck_ranks(parse_ras_status_json(level), parse_ras_status_json(level)).empty());
}

TEST(RasStatusJson, HostileAnswersThrowOneError) {
  for (const std::string& bad : {std::string("not json"), std::string("[1]"), std::string(10000, '[') + std::string(10000, ']'),
                                 std::string(R"({"communicators":{}})"), std::string(R"({"communicators":[1]})"),
                                 std::string(R"({"communicators":[{"size":"four"}]})"),
                                 std::string(R"({"communicators":[{"ranks":[{"collective_counts":{"AllReduce":"x"}}]}]})"),
                                 std::string(R"({"communicators":[{"missing_ranks":[{"status":{"considered_dead":"yes"}}]}]})")}) {
    EXPECT_THROW(parse_ras_status_json(bad), Error) << bad.substr(0, 60);
  }
  EXPECT_EQ(parse_ras_status_json("{}").communicators, 0);  // an empty job: nothing wrong
}

TEST(RasStatusText, TheDeadBlockAndTheGroupTable) {
  const std::string text =
      "Communicators... (0.50s)\n=============\n\n"
      "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
      "    #  in group  per comm  per node  per comm  in group\n"
      "    0         2         2         1         2         4   RUNNING  INCOMPLETE\n"
      "    1         1         1         2         2         2     ABORT  ERROR\n\n"
      "Errors\n======\n\n"
      "DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
      "  Process 4455 on node 10.9.0.7 managing GPUs 2,3\n\n"
      "INCOMPLETE\n  Missing communicator data from 2 job processes\n"
      "  Process 4455 on node 10.9.0.7 managing GPUs 2,3\n"
      "  Process 4456 on node 10.9.0.8 managing GPU 0\n";
  RasStatus s = parse_ras_status_text(text);
  EXPECT_FALSE(s.json);
  EXPECT_EQ(s.communicators, 3);
  EXPECT_EQ(s.ranks, 6);
  ASSERT_EQ(s.failures.size(), 3u);
  EXPECT_EQ(s.failures[0].kind, RasFailureKind::CommError);
  EXPECT_EQ(s.failures[1].kind, RasFailureKind::PeerDead);
  EXPECT_EQ(s.failures[1].peer.gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.failures[2].kind, RasFailureKind::PeerUnresponsive);  // 4455 is dead, not also unresponsive
  EXPECT_EQ(s.failures[2].peer.pid, 4456);
  EXPECT_TRUE(parse_ras_status_text("").failures.empty());
  EXPECT_TRUE(parse_ras_status_text(std::string(100000, '\n') + "DEAD\n  Process x\n").failures.empty());
}

TEST(RasEvents, TextAndJsonEventsAndTheirCodes) {
  auto e = parse_ras_event_text("[2026-01-05 10:01:02] PEER_DEAD: Process 7203 on node 10.1.0.2 managing GPU 1 ");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event, "PEER_DEAD");
  EXPECT_EQ(e->timestamp, "2026-01-05 10:01:02");
  EXPECT_EQ(e->peer.pid, 7203);
  EXPECT_EQ(e->peer.host, "10.1.0.2");
  auto f = failure_for_event(*e);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, RasFailureKind::PeerDead);
  auto addr = parse_ras_event_text("[t] PEER_CONNECTING: 10.1.0.9<4711>");
  ASSERT_TRUE(addr);
  EXPECT_EQ(addr->addr, "10.1.0.9<4711>");
  EXPECT_FALSE(failure_for_event(*addr));
  for (const char* not_event : {"RAS Monitor Mode - watching", "=====", "", "[no close", "[t] lower_case: x", "[t] : x"}) {
    EXPECT_FALSE(parse_ras_event_text(not_event)) << not_event;
  }
  RasEvent j = parse_ras_event_json(
      R"({"timestamp":"t","group":"LIFECYCLE","event":"PEER_DEAD","peer":{"host":"h","pid":5,"cuda_devs":[1],"nvml_devs":[1,2]},"details":""})");
  EXPECT_EQ(j.peer.gpus, (std::vector<int>{1, 2}));
  EXPECT_EQ(failure_for_event(j)->text(), "SMDDP-RAS-PEER-DEAD (replace): process 5 on node h managing GPUs 1,2: PEER_DEAD at t");
  RasEvent a = parse_ras_event_json(R"({"event":"PEER_DEAD","peer":{"addr":"10.0.0.3<99>"}})");
  EXPECT_EQ(failure_for_event(a)->peer.host, "10.0.0.3<99>");  // known by address only
  EXPECT_THROW(parse_ras_event_json(R"({"group":"LIFECYCLE"})"), Error);
  EXPECT_THROW(parse_ras_event_json(R"({"event":"PEER_DEAD","peer":{"nvml_devs":["a"]}})"), Error);
  EXPECT_THROW(parse_ras_event_json("{"), Error);
}

TEST(RasStream, LinesAndMultiLineObjects) {
  RasStreamSplitter s;
  s.feed("[t] PEER_NEW: Process 1 on node a managing GPU 0\n{\n  \"event\": \"PEER_DEAD\",\n  \"details\": \"a } in \\\" a string\"");
  EXPECT_EQ(*s.next(), "[t] PEER_NEW: Process 1 on node a managing GPU 0\n");
  EXPECT_FALSE(s.next());  // the object has not ended
  s.feed("\n}\n[t2] X: y");
  auto obj = s.next();
  ASSERT_TRUE(obj);
  EXPECT_EQ(parse_ras_event_json(*obj).details, "a } in \" a string");
  EXPECT_FALSE(s.next());  // "[t2] X: y" has no newline yet
  RasStreamSplitter endless;
  endless.feed("{" + std::string(2 << 20, ' '));
  EXPECT_THROW(endless.next(), Error);
}

TEST(RasCodes, OneRowPerKindAndDocsDiagMdListsThem) {
  std::ifstream in(std::string(SMDDP_SOURCE_DIR) + "/docs/diag.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const auto& c : ras_codes()) {
    EXPECT_EQ(&ras_code(c.kind), &c);
    const std::string row = "| `" + std::string(c.code) + "` | " + std::string(c.action) + " |";
    EXPECT_NE(doc.str().find(row), std::string::npos) << "docs/diag.md lacks the row starting " << row;
  }
}

}  // namespace
}  // namespace smddp::diag
