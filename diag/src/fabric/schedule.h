// Which ranks probe each other, and when. Pure rank arithmetic, no I/O.
//
// A round is a set of disjoint pairs that run at the same time; every rank is
// in at most one pair per round. all_pairs_schedule is the circle method of a
// round-robin tournament: n-1 rounds for even n, n rounds for odd n (one rank
// rests in each), and every pair appears exactly once. Large jobs take
// sampled_schedule: a few of those rounds, spread evenly, so each rank still
// probes one partner per round without the n^2/2 pairs of the full matrix.
#pragma once

#include <utility>
#include <vector>

namespace smddp::diag {

using RankPair = std::pair<int, int>;  // first < second; first starts the exchange
using Round = std::vector<RankPair>;

std::vector<Round> all_pairs_schedule(int nranks);
std::vector<Round> sampled_schedule(int nranks, int max_rounds);

}  // namespace smddp::diag
