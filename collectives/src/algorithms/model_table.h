// The cost model's selection table for a job (docs/engine.md, "Algorithms
// and selection"): at communicator creation, for this job's hosts, ranks
// per host, network transport and placement, every collective's host
// algorithms are drawn as step schedules (smddp/schedule.h) on a grid of
// sizes and ranked by the model's predicted time (smddp/model/cost_model.h),
// on the world and on the cross-node groups (one rank per node, inside
// hierarchical and sharded), whose choices the world's nested steps take.
// Adjacent sizes with the same winner merge into one rule; calls look the
// rules up as any other (selector.h), never evaluating the model.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "algorithms/selector.h"
#include "smddp/model/cost_model.h"
#include "smddp/schedule.h"

namespace smddp::model_table {

// The sizes ranked: 8 B, 16 B, ... 1 GiB (a range's winner is the one at its
// largest grid size; above 1 GiB the last range holds).
inline constexpr size_t kGridMin = 8;
inline constexpr size_t kGridMax = size_t{1} << 30;
// Drawing a schedule costs steps x ranks (a ring over 512 ranks: about 14
// ms a size), so a job of more than kProxyHosts.back() hosts is drawn on
// proxies of kProxyHosts hosts (its ranks per host, as every job at most
// kProxyRanksPerHost), and each candidate's time is carried to the job's
// host count H by the function a + b H + c floor(log2 H) + d / H that
// meets the proxies' times. A schedule's terms are such functions of H
// (steps: the ring's and the chain's n - 1, the trees' and the halvings'
// log2 n; bytes: (n - 1) / n of the vector), so the carried time is the one
// drawn at full scale (docs/engine.md, "Cost at setup", for how close;
// ModelTable.CarriedTimesMatchFullScaleDrawings).
inline constexpr std::array<int, 4> kProxyHosts = {2, 4, 8, 16};
// For a host count that is not a power of two: groups off powers of two,
// as the job's, so that the fix-up steps of recursive doubling,
// halving-doubling and recursive halving are drawn; the basis takes
// floor(log2 H), their step count, and a fifth function, 1 /
// 2^floor(log2 H), the share of the vector their halvings cut.
inline constexpr std::array<int, 5> kProxyHostsOffPowersOfTwo = {3, 5, 9, 17, 33};
inline constexpr int kProxyRanksPerHost = 16;

struct Scale {
  schedule::Topology topology;              // the job's (ranks per host at most kProxyRanksPerHost)
  std::vector<schedule::Topology> proxies;  // empty: drawn on `topology` itself
  std::vector<double> weights;              // time on `topology`: the sum of weights[k] x time on proxies[k]
  std::string text() const;                 // "" when drawn on the job's own topology; else how
};
Scale modelled_scale(const JobShape& job);
// One algorithm's predicted time on a scale, as the table ranks it (nested
// steps take `nested`'s choices); < 0 when its schedule declines there.
double predicted_at(const model::Model& m, const Selector& nested, Collective c, GroupKind group, const Scale& scale,
                    size_t bytes, const std::string& algorithm, const schedule::Options& options = {});

// The collectives the engine runs on the cross-node groups (hierarchical
// and sharded's nested allreduce) and on a node's ranks (their node phases).
bool runs_on_cross(Collective c);
bool runs_on_node(Collective c);

// Parameters and where they came from: SMDDP_MODEL_FILE (a tier it has no
// data for from the built-in figures), else job.link for the network tier,
// else the built-in figures for job.transport, with job.probed's bandwidth
// when it is under kProbeTakesOver of theirs. UsageError naming the file
// when it cannot be read or is not a model file.
struct Parameters {
  model::Model model;
  std::string source;
};
Parameters parameters(const JobShape& job);
// The built-in figures were measured on fast links with ranks sharing
// cores, where a single stream between two idle ranks (the probe) runs
// faster than the collectives do: the probe's bandwidth replaces theirs
// only on a link clearly slower, under a quarter of theirs (1 Gbit/s
// Ethernet against the socket figures' 0.96 GB/s).
inline constexpr double kProbeTakesOver = 0.25;
// Whether the probe can matter: SMDDP_LINK_PROBE on, no SMDDP_MODEL_FILE,
// no figures handed in, and a socket or MPI transport (fabric's built-in
// figures are EFA's, several NICs that one stream does not fill).
bool wants_link_probe(const JobShape& job);
// The built-in figures (c): the network tier of `transport` (socket, mpi,
// fabric; another name: socket's), the shm tier; each with its source.
Parameters builtin(std::string_view transport);

struct Ranked {
  std::vector<SelectionRule> rules;  // cross-node rows, then world rows
  std::string parameters;             // Parameters::source
  Scale scale;                        // the topology ranked, and how
};
// The model's rows for the job. `front` (the tuning file's rules) and `back`
// (the data rows) make the nested steps' choices with the cross-node rows,
// as the engine's selector will.
Ranked rank(const Parameters& p, const JobShape& job, const std::vector<SelectionRule>& front,
            const std::vector<SelectionRule>& back);

}  // namespace smddp::model_table
