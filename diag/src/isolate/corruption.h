// Silent data corruption among isolate's tests (NodeTest::corruption). A
// wrong result is never noise, so each one ends in a verdict:
//  - a node is named on two witnesses: partners of its wrong tests that
//    returned right results elsewhere and have fewer wrong partners than
//    it (a node named first explains its own tests);
//  - a pair whose wrong result neither end reproduced with other partners,
//    once both were re-tested (or the schedule ended), is named as a pair:
//    the link or either node (a code of its own: escalate, not replace);
//  - a bisection group with wrong results is split like a slow one; one of
//    two or three nodes with wrong results and no member named above names
//    its members. A wrong result of a larger group whose halves then
//    returned right ones stays in the report's tests, unplaced.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "isolate/verdict.h"

namespace smddp::diag {

struct CorruptionFindings {
  struct Named {
    std::string why;
    std::string_view code;  // SMDDP-ISOLATE-CORRUPTION, or -UNPLACED for a pair or group
  };
  std::map<int, Named> named;  // by node
  std::set<int> retest;        // ends of an unexplained wrong result, to pair with others
};

// `retests`: the clean tests with other partners each end of an unexplained
// wrong result gets before the pair is named (0: named at once); `final`:
// the schedule has ended, so what is still open is named.
CorruptionFindings judge_corruption(const std::vector<NodeTest>& tests, const std::vector<std::string>& labels, int retests,
                                    bool final);

}  // namespace smddp::diag
