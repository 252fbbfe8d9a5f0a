// The algorithm registry, as data: what `smddp-bench --list-algorithms` shows.
#pragma once

#include <span>
#include <string_view>

#include "smddp/types.h"

namespace smddp {

struct AlgorithmInfo {
  Collective collective;
  std::string_view name;
  std::string_view description;
  std::string_view constraints;  // when it declines an input
  bool host_memory;
  bool cuda_memory;
};

std::span<const AlgorithmInfo> list_algorithms();
bool algorithm_exists(Collective c, std::string_view name);

}  // namespace smddp
