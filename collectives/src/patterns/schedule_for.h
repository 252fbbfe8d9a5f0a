// make() (smddp/schedule.h) as the engine's selector draws schedules to
// rank algorithms (algorithms/model_table.cc): its nested steps take
// `selector`'s choices, and the call may be on the cross-node groups (one
// rank per host; all ranks_per_host of them at once, sharing each host's
// link) as well as on the world.
#pragma once

#include "smddp/schedule.h"

#include "algorithms/registry.h"

namespace smddp {
class Selector;
}

namespace smddp::schedule {

// `group`: GroupKind::World or GroupKind::Cross. UsageError as make();
// `transfers` as make()'s.
Schedule make_for(const Selector& selector, Collective c, std::string_view algorithm, const Topology& topo,
                  GroupKind group, uint64_t bytes, size_t dtype_size, const Options& options,
                  std::vector<Transfer>* transfers = nullptr);

// The call as the registry's accept rules see it on a group of kind `group`
// of the modelled topology (what make() asks before drawing).
CallShape modelled_shape(Collective c, GroupKind group, const Topology& topo, uint64_t bytes, const Options& options);

}  // namespace smddp::schedule
