// Text and JSON views of a Topology.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "topo/model.h"

namespace smddp::diag {

nlohmann::json topology_json(const Topology& topo);
std::string topology_text(const Topology& topo);

}  // namespace smddp::diag
