// What preflight's consistency check gathers on each node: the versions of
// the driver and libraries a job runs on (facts), and each rank's
// NCCL_* / FI_* / SMDDP_* / RDMAV_* settings. docs/diag.md, "Consistency".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "preflight/consistency.h"
#include "shared/files.h"

namespace smddp::diag {

struct FactField {
  std::string_view name;
  std::string_view what;  // where the value comes from (docs, --help)
};
// Every fact, in report order; a golden file may name only these.
const std::vector<FactField>& fact_fields();

struct FactSources {
  SystemRoot root;           // /proc/driver/nvidia/version, /opt/amazon/efa_installed_packages under it
  std::string nvml_library;  // as the GPU checks load it
  std::string nccl_library = "libnccl.so.2";
  std::string nccl_version_fault;  // SMDDP_DIAG_FAULT nccl_version=V: reported instead of the library's
};

// The facts, and beside them where each came from (library paths, why a
// library is absent): the notes are reported, never compared.
struct GatheredFacts {
  Facts facts;
  Facts notes;
};
GatheredFacts gather_facts(const FactSources& sources);

// The prefixes of the settings compared across ranks and nodes.
const std::vector<std::string_view>& compared_prefixes();
// NCCL_*, FI_*, SMDDP_* or RDMAV_*, and not one that differs by design
// (SMDDP_DIAG_FAULT: the tests' fault injection).
bool is_compared_setting(std::string_view name);
// This process's compared settings.
Settings compared_settings();

// Helpers, exposed for the unit tests.
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." -> "535.104.05".
std::string driver_from_proc(const std::string& text);
// "# EFA installer version: 1.29.1" -> "1.29.1"; "" when absent.
std::string efa_installer_from(const std::string& text);
// ncclGetVersion's code -> "2.21.5" (2.9 and later: X*10000+Y*100+Z; before: X*1000+Y*100+Z).
std::string nccl_version_text(int code);
// The aws-ofi-nccl version its library carries ("Initializing aws-ofi-nccl 1.9.1"); "" when absent.
std::string ofi_nccl_version_in(std::string_view binary);

}  // namespace smddp::diag
