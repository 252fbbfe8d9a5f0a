#include "preflight/node_facts.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <set>

#include <rdma/fabric.h>

#include "fabric/providers.h"
#include "shared/text.h"
#include "smddp/tools/input_file.h"
#include "smddp/version.h"
#include "system/cuda_probe.h"
#include "system/nvml.h"

extern char** environ;

#ifndef SMDDP_DIAG_COMMIT
#define SMDDP_DIAG_COMMIT "unknown"
#endif

namespace smddp::diag {
namespace {

constexpr std::string_view kNone = "none";
// aws-ofi-nccl's library is a few MiB; a file past this is not read for its version.
constexpr size_t kMaxPluginBytes = size_t{128} << 20;

std::string first_word_after(std::string_view text, std::string_view marker, std::string_view allowed) {
  const size_t at = text.find(marker);
  if (at == std::string_view::npos) return "";
  size_t b = at + marker.size();
  while (b < text.size() && text[b] == ' ') ++b;
  size_t e = b;
  while (e < text.size() && allowed.find(text[e]) != std::string_view::npos) ++e;
  return std::string(text.substr(b, e - b));
}

constexpr std::string_view kVersionChars = "0123456789.-_+abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

void nvidia_driver(const FactSources& s, GatheredFacts& g) {
  std::string why;
  if (auto nvml = Nvml::open(s.nvml_library, &why)) {
    g.facts["nvidia_driver"] = nvml->driver_version();
    g.notes["nvidia_driver"] = "NVML via " + nvml->library();
    return;
  }
  const std::string proc = s.root.path("/proc/driver/nvidia/version");
  if (auto text = read_file(proc)) {
    if (std::string v = driver_from_proc(*text); !v.empty()) {
      g.facts["nvidia_driver"] = v;
      g.notes["nvidia_driver"] = proc;
      return;
    }
  }
  g.facts["nvidia_driver"] = kNone;
  g.notes["nvidia_driver"] = why;
}

void nccl(const FactSources& s, GatheredFacts& g) {
  if (!s.nccl_version_fault.empty()) {
    g.facts["nccl"] = s.nccl_version_fault;
    g.notes["nccl"] = "SMDDP_DIAG_FAULT nccl_version";
    return;
  }
  // Loaded as a job would load it; never unloaded (a library with threads
  // or static state may not survive dlclose).
  void* handle = dlopen(s.nccl_library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    g.facts["nccl"] = kNone;
    g.notes["nccl"] = e ? e : s.nccl_library + ": cannot be loaded";
    return;
  }
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(handle, "ncclGetVersion"));
  int code = 0;
  g.facts["nccl"] = get && get(&code) == 0 ? nccl_version_text(code) : "unknown";
  g.notes["nccl"] = s.nccl_library;
}

// Where NCCL would find its network plugin: NCCL_NET_PLUGIN's name (or
// libnccl-net.so and aws-ofi-nccl's own names) in LD_LIBRARY_PATH and the
// EFA installer's directories.
void ofi_plugin(const FactSources& s, GatheredFacts& g) {
  std::vector<std::string> names;
  if (const char* p = std::getenv("NCCL_NET_PLUGIN"); p && *p) {
    const std::string v = p;
    if (v.find('/') != std::string::npos || v.ends_with(".so")) names.push_back(v);
    names.push_back("libnccl-net-" + v + ".so");
  }
  for (const char* n : {"libnccl-net.so", "libnccl-net-ofi.so", "libnccl-net-aws-ofi.so"}) names.emplace_back(n);
  std::vector<std::string> dirs;
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    for (const auto& d : split(ld, ':')) dirs.push_back(d);
  }
  for (const char* d : {"/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64", "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
                        "/opt/aws-ofi-nccl/lib", "/usr/local/lib", "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu"}) {
    dirs.emplace_back(d);
  }
  for (const auto& name : names) {
    std::vector<std::string> candidates;
    if (name.find('/') != std::string::npos) {
      candidates.push_back(name);
    } else {
      for (const auto& d : dirs) candidates.push_back(d + "/" + name);
    }
    for (const auto& path : candidates) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec)) continue;
      const std::string real = std::filesystem::canonical(path, ec).string();
      auto binary = tools::try_read_input_file(ec ? path : real, kMaxPluginBytes);
      const std::string v = binary ? ofi_nccl_version_in(*binary) : "";
      // A libnccl-net.so that is not aws-ofi-nccl is another plugin: keep looking.
      if (v.empty() && binary && binary->find("aws-ofi-nccl") == std::string::npos) continue;
      g.facts["aws_ofi_nccl"] = v.empty() ? "found, version unknown" : v;
      g.notes["aws_ofi_nccl"] = path;
      return;
    }
  }
  g.facts["aws_ofi_nccl"] = kNone;
}

void libfabric(GatheredFacts& g) {
  const uint32_t v = fi_version();
  g.facts["libfabric"] = fmt::format("{}.{}", FI_MAJOR(v), FI_MINOR(v));
  std::set<std::string> providers;
  std::string error;
  for (const auto& p : query_providers("", false, &error)) {
    providers.insert(fmt::format("{} {}.{}", p.provider, FI_MAJOR(p.version), FI_MINOR(p.version)));
  }
  g.facts["libfabric_providers"] = providers.empty() ? std::string(kNone) : join({providers.begin(), providers.end()}, ", ");
  if (providers.empty()) g.notes["libfabric_providers"] = error;
}

}  // namespace

const std::vector<FactField>& fact_fields() {
  static const std::vector<FactField> fields = {
      {"nvidia_driver", "NVIDIA driver: NVML's nvmlSystemGetDriverVersion, else /proc/driver/nvidia/version"},
      {"cuda_runtime", "the CUDA runtime smddp-diag loaded (cudaRuntimeGetVersion)"},
      {"cuda_driver", "the CUDA version the driver supports (cudaDriverGetVersion)"},
      {"nccl", "ncclGetVersion of the NCCL library loaded at run time (libnccl.so.2)"},
      {"aws_ofi_nccl", "the aws-ofi-nccl plugin NCCL would load, its version from the library"},
      {"libfabric", "fi_version() of the libfabric loaded"},
      {"libfabric_providers", "the providers fi_getinfo lists, with their versions"},
      {"efa_installer", "/opt/amazon/efa_installed_packages' installer version"},
      {"kernel", "uname -r"},
      {"smddp", "this build of smddp-diag: version and commit"},
  };
  return fields;
}

GatheredFacts gather_facts(const FactSources& s) {
  GatheredFacts g;
  nvidia_driver(s, g);
  const CudaVersions cuda = cuda_versions();
  g.facts["cuda_runtime"] = cuda.runtime;
  g.facts["cuda_driver"] = cuda.driver;
  nccl(s, g);
  ofi_plugin(s, g);
  libfabric(g);
  const std::string installed = s.root.path("/opt/amazon/efa_installed_packages");
  const auto text = read_file(installed);
  const std::string efa = text ? efa_installer_from(*text) : "";
  g.facts["efa_installer"] = efa.empty() ? std::string(kNone) : efa;
  utsname u{};
  g.facts["kernel"] = uname(&u) == 0 ? u.release : "unknown";
  g.facts["smddp"] = fmt::format("{} ({})", kVersion, SMDDP_DIAG_COMMIT);
  return g;
}

const std::vector<std::string_view>& compared_prefixes() {
  static const std::vector<std::string_view> p = {"NCCL_", "FI_", "SMDDP_", "RDMAV_"};
  return p;
}

bool is_compared_setting(std::string_view name) {
  if (name == "SMDDP_DIAG_FAULT") return false;
  return std::any_of(compared_prefixes().begin(), compared_prefixes().end(),
                     [&](std::string_view p) { return name.starts_with(p) && name.size() > p.size(); });
}

Settings compared_settings() {
  // Read for comparison only: the settings themselves are config.cc's to parse.
  Settings out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = kv.substr(0, eq);
    if (is_compared_setting(name)) out[std::string(name)] = std::string(kv.substr(eq + 1));
  }
  return out;
}

std::string driver_from_proc(const std::string& text) {
  // The NVRM line's first word that reads as a version: "... Kernel Module  535.104.05  Sat ..." and
  // "... Open Kernel Module for x86_64  550.54.15  Release Build ..." alike.
  const size_t at = text.find("NVRM version:");
  if (at == std::string::npos) return "";
  const size_t end = text.find('\n', at);
  for (const auto& word : split(std::string_view(text).substr(at, end == std::string::npos ? std::string::npos : end - at), ' ')) {
    const size_t dot = word.find('.');
    if (dot > 0 && dot != std::string::npos && std::isdigit(static_cast<unsigned char>(word[0]))) return word;
  }
  return "";
}

std::string efa_installer_from(const std::string& text) { return first_word_after(text, "EFA installer version:", kVersionChars); }

std::string nccl_version_text(int code) {
  if (code <= 0) return "unknown";
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::string ofi_nccl_version_in(std::string_view binary) {
  return first_word_after(binary, "Initializing aws-ofi-nccl ", kVersionChars);
}

}  // namespace smddp::diag
