// GPU checks through NVML. Without NVML these are skipped, not failed:
// gpu_count alone says whether the node should have had GPUs.
#include <fmt/format.h>

#include "preflight/checks.h"
#include "shared/text.h"

namespace smddp::diag {
namespace {

std::string gpu_name(const GpuSample& g) {
  return g.busid.empty() ? fmt::format("GPU {}", g.index) : fmt::format("GPU {} ({})", g.index, g.busid);
}

// Shared frame of the per-GPU checks: skip without NVML or GPUs, fail on
// NVML errors for the fields the check reads, and join per-GPU problems.
template <typename PerGpu>
CheckResult per_gpu(const NodeContext& ctx, const std::string& check, const std::string& what, PerGpu body) {
  if (!ctx.nvml.available) return CheckResult::skip(check, ctx.nvml.message);
  if (ctx.nvml.gpus.empty()) return CheckResult::pass(check, "no GPUs to check");
  std::vector<std::string> problems;
  nlohmann::json values = nlohmann::json::object();
  for (const auto& g : ctx.nvml.gpus) {
    if (auto p = body(g, values[std::to_string(g.index)]); !p.empty()) problems.push_back(gpu_name(g) + " " + p);
  }
  if (!problems.empty()) return CheckResult::fail(check, join(problems, "; "), values);
  return CheckResult::pass(check, fmt::format("{} GPUs {}", ctx.nvml.gpus.size(), what), values);
}

// NVML errors (other than "not supported") for one of the named queries.
std::string nvml_errors(const GpuSample& g, std::initializer_list<const char*> queries) {
  std::vector<std::string> hits;
  for (const auto& e : g.errors) {
    for (const char* q : queries) {
      if (e.rfind(q, 0) == 0) hits.push_back(e);
    }
  }
  return hits.empty() ? "" : "NVML error: " + join(hits, ", ");
}

}  // namespace

CheckResult check_gpu_count(const NodeContext& ctx, const Params& p) {
  const std::optional<int64_t> wanted = p.count("expected");
  const int64_t found = static_cast<int64_t>(ctx.nvml.gpus.size());
  if (!wanted) {
    // "any": a profile for whatever machine this is (local) reports, never judges.
    nlohmann::json values = {{"expected", "any"}, {"found", found}};
    if (!ctx.nvml.available) return CheckResult::pass("gpu_count", "0 GPUs (" + ctx.nvml.message + "); any count is accepted", values);
    return CheckResult::pass("gpu_count", fmt::format("{} GPUs; any count is accepted", found), values);
  }
  const int64_t expected = *wanted;
  nlohmann::json values = {{"expected", expected}, {"found", found}};
  if (!ctx.nvml.available) {
    if (expected == 0) return CheckResult::pass("gpu_count", "0 GPUs, as expected (" + ctx.nvml.message + ")", values);
    return CheckResult::fail("gpu_count", fmt::format("expected {} GPUs, found none: {}", expected, ctx.nvml.message), values);
  }
  if (found != expected) return CheckResult::fail("gpu_count", fmt::format("expected {} GPUs, NVML found {}", expected, found), values);
  return CheckResult::pass("gpu_count", fmt::format("{} GPUs", found), values);
}

CheckResult check_gpu_model(const NodeContext& ctx, const Params& p) {
  const std::string& name = p.string("name_contains");
  const uint64_t min_memory = p.size("min_memory").value_or(0);
  return per_gpu(ctx, "gpu_model", "match", [&](const GpuSample& g, nlohmann::json& v) -> std::string {
    v = {{"name", g.name}, {"memory_bytes", g.memory_total_bytes.value_or(0)}};
    if (!name.empty() && g.name.find(name) == std::string::npos) {
      return fmt::format("is '{}', expected a name containing '{}'", g.name, name);
    }
    if (min_memory > 0) {
      if (!g.memory_total_bytes) return "memory size unknown: " + nvml_errors(g, {"nvmlDeviceGetMemoryInfo"});
      if (*g.memory_total_bytes < min_memory) {
        return fmt::format("has {} memory (min {})", format_bytes(*g.memory_total_bytes), format_bytes(min_memory));
      }
    }
    return "";
  });
}

CheckResult check_gpu_ecc(const NodeContext& ctx, const Params& p) {
  const int64_t max = p.integer("max_uncorrectable");
  const bool aggregate = p.string("counter") == "aggregate";
  return per_gpu(ctx, "gpu_ecc", "within the ECC limit", [&](const GpuSample& g, nlohmann::json& v) -> std::string {
    auto count = aggregate ? g.ecc_uncorrected_aggregate : g.ecc_uncorrected_volatile;
    if (auto err = nvml_errors(g, {"nvmlDeviceGetTotalEccErrors"}); !err.empty()) return err;
    if (!count) return "";  // ECC not enabled or not supported
    v = {{"uncorrectable", *count}};
    if (static_cast<int64_t>(*count) > max) {
      return fmt::format("has {} uncorrectable ECC errors ({}; max {})", *count, aggregate ? "aggregate" : "volatile", max);
    }
    return "";
  });
}

CheckResult check_gpu_memory_retirement(const NodeContext& ctx, const Params& p) {
  const int64_t max_pages = p.integer("max_retired_pages");
  const bool fail_pending = p.boolean("fail_on_pending");
  const bool fail_remap = p.boolean("fail_on_remap_failure");
  return per_gpu(ctx, "gpu_memory_retirement", "without memory retirement problems",
                 [&](const GpuSample& g, nlohmann::json& v) -> std::string {
    if (auto err = nvml_errors(g, {"nvmlDeviceGetRetiredPages", "nvmlDeviceGetRemappedRows"}); !err.empty()) return err;
    std::vector<std::string> problems;
    const uint64_t pages = g.retired_pages_sbe.value_or(0) + g.retired_pages_dbe.value_or(0);
    v = {{"retired_pages", pages},
         {"retired_pending", g.retired_pages_pending.value_or(false)},
         {"remap_pending", g.remap_pending.value_or(false)},
         {"remap_failed", g.remap_failed.value_or(false)}};
    if (static_cast<int64_t>(pages) > max_pages) {
      problems.push_back(fmt::format("has {} retired pages ({} double-bit; max {})", pages, g.retired_pages_dbe.value_or(0), max_pages));
    }
    if (fail_pending && g.retired_pages_pending.value_or(false)) problems.push_back("has a page retirement pending (reset needed)");
    if (fail_pending && g.remap_pending.value_or(false)) problems.push_back("has a row remap pending (reset needed)");
    if (fail_remap && g.remap_failed.value_or(false)) problems.push_back("failed a row remap (replace the GPU)");
    return join(problems, ", ");
  });
}

CheckResult check_gpu_temperature(const NodeContext& ctx, const Params& p) {
  const double max = p.number("max_celsius");
  return per_gpu(ctx, "gpu_temperature", fmt::format("at or below {} C", max),
                 [&](const GpuSample& g, nlohmann::json& v) -> std::string {
    if (auto err = nvml_errors(g, {"nvmlDeviceGetTemperature"}); !err.empty()) return err;
    if (!g.temperature_c) return "";
    v = {{"celsius", *g.temperature_c}};
    if (*g.temperature_c > max) return fmt::format("at {} C (max {} C)", *g.temperature_c, max);
    return "";
  });
}

CheckResult check_gpu_throttle(const NodeContext& ctx, const Params& p) {
  uint64_t mask = 0;
  for (const auto& name : p.strings("reasons")) {
    for (const auto& r : throttle_reasons()) {
      if (r.name == name) mask |= r.bit;
    }
  }
  return per_gpu(ctx, "gpu_throttle", "not throttled", [&](const GpuSample& g, nlohmann::json& v) -> std::string {
    if (auto err = nvml_errors(g, {"nvmlDeviceGetCurrentClocksThrottleReasons"}); !err.empty()) return err;
    if (!g.throttle_reasons) return "";
    v = {{"reasons", throttle_reason_names(*g.throttle_reasons)}};
    if (uint64_t hit = *g.throttle_reasons & mask) return "throttled: " + join(throttle_reason_names(hit), ", ");
    return "";
  });
}

}  // namespace smddp::diag
