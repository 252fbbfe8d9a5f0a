// smddp-diag topo --nccl-topo (diag/src/topo/nccl_source.cc) over our XML
// reader (diag/src/shared/xml.cc): malformed XML or a topology that does not
// add up is one UsageError, never a crash or another exception.
#include <string_view>

#include "fuzz_check.h"
#include "shared/xml.h"
#include "smddp/error.h"
#include "topo/sources.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const smddp::diag::XmlElement root = smddp::diag::parse_xml(text);
    FUZZ_CHECK(!root.name.empty());
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with("line "));
  }
  smddp::fuzz::MemoryFile file(text);
  try {
    (void)smddp::diag::load_nccl_xml(file.path());
  } catch (const smddp::UsageError& e) {
    FUZZ_CHECK(std::string_view(e.what()).find(file.path()) != std::string_view::npos);
  }
  return 0;
}
