// The opener lives in common/ (smddp::fabric_endpoint) so smddp-diag's link
// probe opens exactly the endpoint the transport uses.
#pragma once

#include "smddp/fabric/endpoint.h"
