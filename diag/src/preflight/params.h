// Typed check parameters, as a profile gives them. The schema of each check
// (names, types, defaults) is data in the check table (checks.h); the YAML
// loader validates against it, so a check body only reads typed values.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace smddp::diag {

enum class ParamType {
  Integer,          // 8
  CountOrAny,       // 8, or "any": found counts are reported, not judged
  Number,           // 0.5
  Size,             // 64MiB, 1GB, 4096
  SizeOrUnlimited,  // a size or "unlimited"
  Boolean,          // true / false
  String,           // efa
  StringList,       // [hw_slowdown, sw_thermal_slowdown]
};
std::string_view to_string(ParamType t);

// No upper bound: a threshold that is only compared (max_ms, max_celsius).
inline constexpr double kNoMax = std::numeric_limits<double>::infinity();

struct ParamSpec {
  ParamSpec(std::string_view n, ParamType t, std::string_view def, std::string_view h, double lower = 0,
            double upper = kNoMax)
      : name(n), type(t), default_value(def), help(h), min(lower), max(upper) {}
  std::string_view name;
  ParamType type;
  std::string_view default_value;  // YAML text; empty: required
  std::string_view help;
  double min = 0;                  // Integer/Number/Size lower bound
  // Integer/Number/Size upper bound: what a check allocates, waits or casts
  // to int stays bounded (a count to int, seconds to common::kMaxSeconds).
  double max = kNoMax;
};

// A bound as the messages and docs write it: "4 GiB" for a size, "10000000" for a count or seconds.
std::string bound_text(const ParamSpec& spec, double bound);

struct Unlimited {
  bool operator==(const Unlimited&) const = default;
};
using ParamValue = std::variant<int64_t, double, uint64_t, Unlimited, bool, std::string, std::vector<std::string>>;

class Params {
 public:
  void set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) > 0; }

  int64_t integer(const std::string& name) const;
  // nullopt: "any".
  std::optional<int64_t> count(const std::string& name) const;
  double number(const std::string& name) const;
  // nullopt: "unlimited".
  std::optional<uint64_t> size(const std::string& name) const;
  bool boolean(const std::string& name) const;
  const std::string& string(const std::string& name) const;
  const std::vector<std::string>& strings(const std::string& name) const;

  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  const ParamValue& at(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
};

// Parses one scalar of `type` from its text ("64MiB", "true"). nullopt when
// the text is not of that type. Lists are parsed by the caller.
std::optional<ParamValue> parse_scalar(ParamType type, const std::string& text);

}  // namespace smddp::diag
