#include "isolate/fault_spec.h"

#include <fmt/format.h>

#include <algorithm>

#include "shared/text.h"
#include "smddp/common/numbers.h"
#include "smddp/error.h"

namespace smddp::diag {

namespace {
constexpr FaultKind kKinds[] = {FaultKind::SlowNode, FaultKind::SlowLink, FaultKind::Stall, FaultKind::Flap, FaultKind::Corrupt};
}

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::SlowNode: return "slow-node";
    case FaultKind::SlowLink: return "slow-link";
    case FaultKind::Stall: return "stall";
    case FaultKind::Flap: return "flap";
    case FaultKind::Corrupt: return "corrupt";
  }
  return "?";
}

std::vector<FaultCount> parse_fault_spec(const std::string& spec) {
  std::vector<FaultCount> out;
  if (trim(spec) == "none") return out;
  if (spec.size() > 1000) throw UsageError("--faults: longer than 1000 characters");
  // Echoed in the message below: one line, printable.
  if (std::any_of(spec.begin(), spec.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    throw UsageError("--faults: a control character; expected KIND=COUNT[@FACTOR],...");
  }
  // split() drops empty items; an empty item between commas is still a typo.
  if (!trim(spec).empty() && (trim(spec).front() == ',' || trim(spec).back() == ',' || spec.find(",,") != std::string::npos)) {
    throw UsageError(fmt::format("--faults '{}': an empty item; expected KIND=COUNT[@FACTOR],...", spec));
  }
  for (const auto& item : split(spec, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw UsageError(fmt::format("--faults '{}': expected KIND=COUNT[@FACTOR] (slow-node, slow-link, stall, flap, corrupt)", item));
    }
    const std::string name(trim(std::string_view(item).substr(0, eq)));
    const auto kind = std::find_if(std::begin(kKinds), std::end(kKinds), [&](FaultKind k) { return name == fault_kind_name(k); });
    if (kind == std::end(kKinds)) {
      throw UsageError(fmt::format("--faults '{}': unknown kind '{}' (slow-node, slow-link, stall, flap, corrupt)", item, name));
    }
    if (std::any_of(out.begin(), out.end(), [&](const FaultCount& f) { return f.kind == *kind; })) {
      throw UsageError(fmt::format("--faults: {} given twice", name));
    }
    std::string_view rest = std::string_view(item).substr(eq + 1);
    const auto at = rest.find('@');
    const std::string_view count_text = rest.substr(0, at);
    std::string why;
    const auto count = common::parse_integer(count_text, &why);
    if (!count || *count < 0 || *count > kMaxFaultCount) {
      throw UsageError(fmt::format("--faults '{}': count '{}': {}", item, count_text,
                                   count ? fmt::format("expected 0 to {}", kMaxFaultCount) : why));
    }
    FaultCount f{*kind, static_cast<int>(*count), *kind == FaultKind::Corrupt ? 1.0 : 2.0};
    if (at != std::string_view::npos) {
      if (*kind == FaultKind::Stall) throw UsageError(fmt::format("--faults '{}': stall takes no @FACTOR", item));
      const std::string_view factor_text = rest.substr(at + 1);
      const auto factor = common::parse_number(factor_text, &why);
      if (*kind == FaultKind::Corrupt && (!factor || !(*factor > 0) || *factor > 1)) {
        throw UsageError(fmt::format("--faults '{}': rate '{}': {}", item, factor_text,
                                     factor ? "expected a fraction of the tests above 0, at most 1" : why));
      }
      if (*kind != FaultKind::Corrupt && (!factor || !(*factor > 1) || *factor > 1000)) {
        throw UsageError(fmt::format("--faults '{}': factor '{}': {}", item, factor_text,
                                     factor ? "expected a slowdown above 1, at most 1000" : why));
      }
      f.factor = *factor;
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace smddp::diag
