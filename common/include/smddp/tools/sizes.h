// Moved to smddp/common/sizes.h (smddp::common), the layer the engine can use
// too. This forwarder keeps branches written against the old name building;
// new code includes smddp/common/sizes.h.
#pragma once

#include "smddp/common/sizes.h"

namespace smddp::tools {
using common::kMaxSize;
using common::parse_size;
using common::parse_size_or_throw;
}  // namespace smddp::tools
