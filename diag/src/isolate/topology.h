// Where each node of an isolate run sits in the network, for rack-aware
// pairing (docs/diag.md, "Rack-aware pairing"): one to four network-node
// labels per host, the top layer first, as EC2's describe-instance-topology
// lists an instance's NetworkNodes and Kubernetes labels a node
// (topology.k8s.aws/network-node-layer-1..3). Nodes whose last label is the
// same hang off the same network node: the same rack.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace smddp::diag {

// Labels by host name or EC2 instance id.
using TopologyMap = std::map<std::string, std::vector<std::string>>;

inline constexpr size_t kMaxTopologyLayers = 4;

// The text of a --topology file: the JSON of `aws ec2 describe-instance-topology`
// (Instances[].InstanceId and .NetworkNodes), or a table, one host a line:
// HOST LABEL [LABEL...], the same number of labels on every line (the top
// layer first; one label is a rack column), '#' comments. Throws UsageError,
// one line naming `what` and the line or entry at fault.
TopologyMap parse_topology(const std::string& text, const std::string& what);
// The file through the bounded reader (smddp/tools/input_file.h).
TopologyMap load_topology(const std::string& path, const std::string& what);

// A node's labels: by host name first, else by its instance id; nullopt when neither is listed.
std::optional<std::vector<std::string>> placement_of(const TopologyMap& map, const std::string& host,
                                                     const std::string& instance_id);

// Rack numbers, one per node, by the last label (0, 1, ... in order of first
// appearance); nodes without labels form one rack of their own.
std::vector<int> rack_ids(const std::vector<std::vector<std::string>>& layers);

// This host's EC2 instance id from the DMI board asset tag file (Nitro
// instances write their id there), or "" when the file holds none.
std::string ec2_instance_id(const std::string& dmi_asset_tag_path);

}  // namespace smddp::diag
