#include "preflight/params.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "shared/text.h"
#include "smddp/common/numbers.h"
#include "smddp/common/sizes.h"
#include "smddp/error.h"

namespace smddp::diag {

std::string_view to_string(ParamType t) {
  switch (t) {
    case ParamType::Integer: return "an integer";
    case ParamType::CountOrAny: return "a count or 'any'";
    case ParamType::Number: return "a number";
    case ParamType::Size: return "a size (e.g. 64MiB)";
    case ParamType::SizeOrUnlimited: return "a size or 'unlimited'";
    case ParamType::Boolean: return "true or false";
    case ParamType::String: return "a string";
    case ParamType::StringList: return "a list of strings";
  }
  return "a value";
}

std::string bound_text(const ParamSpec& spec, double bound) {
  if (spec.type == ParamType::Size || spec.type == ParamType::SizeOrUnlimited) {
    return format_bytes(static_cast<uint64_t>(bound));
  }
  if (bound == std::floor(bound) && std::fabs(bound) < 1e15) return std::to_string(static_cast<long long>(bound));
  return fmt::format("{}", bound);
}

const ParamValue& Params::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error("internal: parameter '" + name + "' missing after validation");
  return it->second;
}

int64_t Params::integer(const std::string& name) const { return std::get<int64_t>(at(name)); }

std::optional<int64_t> Params::count(const std::string& name) const {
  const ParamValue& v = at(name);
  if (std::holds_alternative<Unlimited>(v)) return std::nullopt;
  return std::get<int64_t>(v);
}

double Params::number(const std::string& name) const {
  const ParamValue& v = at(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}

std::optional<uint64_t> Params::size(const std::string& name) const {
  const ParamValue& v = at(name);
  if (std::holds_alternative<Unlimited>(v)) return std::nullopt;
  return std::get<uint64_t>(v);
}

bool Params::boolean(const std::string& name) const { return std::get<bool>(at(name)); }
const std::string& Params::string(const std::string& name) const { return std::get<std::string>(at(name)); }
const std::vector<std::string>& Params::strings(const std::string& name) const {
  return std::get<std::vector<std::string>>(at(name));
}

std::optional<ParamValue> parse_scalar(ParamType type, const std::string& raw) {
  const std::string text(trim(raw));
  switch (type) {
    case ParamType::CountOrAny:
      if (text == "any") return ParamValue(Unlimited{});
      [[fallthrough]];
    case ParamType::Integer: {
      // Decimal only (smddp/common/numbers.h): "0x10" and "1.5" are refused.
      if (auto v = common::parse_integer(text)) return ParamValue(*v);
      return std::nullopt;
    }
    case ParamType::Number:
      if (auto v = parse_double(text)) return ParamValue(*v);
      return std::nullopt;
    case ParamType::SizeOrUnlimited:
      if (text == "unlimited" || text == "infinity") return ParamValue(Unlimited{});
      [[fallthrough]];
    case ParamType::Size:
      if (auto v = common::parse_size(text)) return ParamValue(*v);
      return std::nullopt;
    case ParamType::Boolean: {
      const std::string lower = common::to_lower(text);
      if (lower == "true" || lower == "yes" || lower == "on") return ParamValue(true);
      if (lower == "false" || lower == "no" || lower == "off") return ParamValue(false);
      return std::nullopt;
    }
    case ParamType::String:
      return ParamValue(raw);
    case ParamType::StringList:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace smddp::diag
