// The Slurm name of this node, which is what `scontrol update nodename=`
// needs and which may differ from the host name (NodeName vs NodeHostName).
#pragma once

#include <string>
#include <vector>

namespace smddp::diag {

// SLURMD_NODENAME when set (slurmd sets it in prologs and job steps); else,
// when SLURM_JOB_NODELIST is set and scontrol runs, the entry of
// `scontrol show hostnames` that is this host (full or short name, or the
// only entry); else `host`.
std::string slurm_node_name(const std::string& host);

// A command's standard output (no shell; stderr discarded); *ok is false
// when it could not run or exited non-zero.
std::string run_capture(const std::vector<std::string>& argv, bool* ok);

}  // namespace smddp::diag
