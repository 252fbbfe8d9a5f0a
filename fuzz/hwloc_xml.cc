// smddp-diag topo --hwloc-xml (diag/src/topo/hwloc_source.cc): a saved hwloc
// topology, read by hwloc's own XML reader, then turned into our model.
#include <string_view>

#include "fuzz_check.h"
#include "smddp/error.h"
#include "topo/sources.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  smddp::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const smddp::diag::Topology t = smddp::diag::load_hwloc_xml(file.path());
    FUZZ_CHECK(t.pus > 0);
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(std::string_view(e.what()).find(file.path()) != std::string_view::npos);
  }
  return 0;
}
