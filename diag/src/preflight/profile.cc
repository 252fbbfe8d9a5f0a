#include "preflight/profile.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>

#include "preflight/baseline_profile.h"
#include "shared/text.h"
#include "smddp/common/sizes.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/tools/input_file.h"

#ifndef SMDDP_DIAG_PROFILE_DIR
#define SMDDP_DIAG_PROFILE_DIR ""
#endif
#ifndef SMDDP_DIAG_INSTALL_PROFILE_DIR
#define SMDDP_DIAG_INSTALL_PROFILE_DIR ""
#endif

namespace smddp::diag {
namespace fs = std::filesystem;
namespace {

class ProfileReader {
 public:
  explicit ProfileReader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    if (node.IsDefined() && node.Mark().line >= 0) {
      throw UsageError(fmt::format("profile '{}': line {}: {}", origin_, node.Mark().line + 1, what));
    }
    throw UsageError(fmt::format("profile '{}': {}", origin_, what));
  }

  // yaml-cpp keeps both entries of a repeated key and finds the first:
  // refuse them, naming both lines, in every mapping of the document.
  // An alias can name its own anchor (`&a [*a]`: a cycle) or repeat a large
  // node many times over; depth and node budgets keep the walk finite.
  void refuse_duplicate_keys(const YAML::Node& node, const std::string& where, int depth = 0) {
    constexpr int kMaxDepth = 32;
    constexpr long kMaxNodes = 100000;
    if (depth > kMaxDepth) fail(node, fmt::format("nested deeper than {} levels (an alias inside its own anchor?)", kMaxDepth));
    if (++walked_ > kMaxNodes) fail(node, fmt::format("more than {} nodes once aliases are expanded", kMaxNodes));
    if (node.IsSequence()) {
      for (const auto& item : node) refuse_duplicate_keys(item, where, depth + 1);
      return;
    }
    if (!node.IsMap()) return;
    std::map<std::string, int> seen;  // key -> line
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const int line = kv.first.Mark().line + 1;
      if (auto [it, fresh] = seen.emplace(key, line); !fresh) {
        fail(kv.first, fmt::format("duplicate key '{}{}' (first on line {}, again on line {})", where, key, it->second, line));
      }
      refuse_duplicate_keys(kv.second, where + key + ".", depth + 1);
    }
  }

  Profile read(const YAML::Node& root) {
    Profile p;
    if (!root.IsMap()) fail(root, "expected a mapping with name, description and checks");
    refuse_duplicate_keys(root, "");
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "name") {
        p.name = scalar(kv.second, "name");
      } else if (key == "description") {
        p.description = scalar(kv.second, "description");
      } else if (key == "checks") {
        // read below, in table order
      } else if (key == "baseline") {
        check_profile_baseline(kv.second, origin_);  // smddp-bench --baseline reads it
      } else {
        fail(kv.first, "unknown key '" + key + "' (expected name, description, checks, baseline)");
      }
    }
    const YAML::Node checks = root["checks"];
    if (!checks) fail(root, "no 'checks' mapping");
    if (!checks.IsMap() || checks.size() == 0) fail(checks, "'checks' must be a mapping of check names to parameters");
    for (const auto& kv : checks) {
      const std::string name = kv.first.as<std::string>();
      if (!find_check(name)) fail(kv.first, "unknown check '" + name + "' (known: " + known_check_names() + ")");
    }
    for (const CheckSpec& spec : check_specs()) {
      const YAML::Node node = checks[std::string(spec.name)];
      if (!node) continue;
      p.checks.push_back(CheckConfig{&spec, params(spec, node)});
    }
    return p;
  }

 private:
  long walked_ = 0;  // nodes visited by refuse_duplicate_keys

  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key + ": expected a string");
    return node.Scalar();
  }

  Params params(const CheckSpec& spec, const YAML::Node& node) const {
    const std::string where = "checks." + std::string(spec.name);
    if (!node.IsNull() && !node.IsMap()) fail(node, where + ": expected a mapping of parameters (or {})");
    if (node.IsMap()) {
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        bool known = std::any_of(spec.params.begin(), spec.params.end(), [&](const ParamSpec& ps) { return ps.name == key; });
        if (!known) {
          std::vector<std::string> names;
          for (const auto& ps : spec.params) names.emplace_back(ps.name);
          fail(kv.first, fmt::format("{}: unknown parameter '{}' (known: {})", where, key, names.empty() ? "none" : join(names, ", ")));
        }
      }
    }
    Params out;
    for (const ParamSpec& ps : spec.params) {
      const std::string key(ps.name);
      YAML::Node value = node.IsMap() ? node[key] : YAML::Node();
      if (!value) {
        if (ps.default_value.empty()) fail(node, fmt::format("{}: missing required parameter '{}' ({})", where, key, ps.help));
        out.set(key, typed(ps, YAML::Load(std::string(ps.default_value)), where + "." + key));
      } else {
        out.set(key, typed(ps, value, where + "." + key));
      }
    }
    if (spec.validate) {
      try {
        spec.validate(out);
      } catch (const UsageError& e) {
        fail(node, where + ": " + e.what());
      }
    }
    return out;
  }

  ParamValue typed(const ParamSpec& ps, const YAML::Node& value, const std::string& where) const {
    if (value.IsNull()) fail(value, where + ": has no value; expected " + std::string(to_string(ps.type)));
    if (ps.type == ParamType::StringList) {
      if (!value.IsSequence()) fail(value, where + ": expected a list of strings");
      std::vector<std::string> items;
      for (const auto& item : value) {
        if (!item.IsScalar()) fail(item, where + ": expected a list of strings");
        items.push_back(item.Scalar());
      }
      return items;
    }
    if (!value.IsScalar()) fail(value, where + ": expected " + std::string(to_string(ps.type)));
    auto parsed = parse_scalar(ps.type, value.Scalar());
    if (!parsed) {
      // A size says what is wrong with it, as everywhere (docs/bench.md#sizes).
      std::string why;
      if (ps.type == ParamType::Size || ps.type == ParamType::SizeOrUnlimited) (void)common::parse_size(value.Scalar(), &why);
      fail(value, fmt::format("{}: expected {}, got '{}'{}", where, to_string(ps.type), value.Scalar(),
                              why.empty() ? "" : " (" + why + ")"));
    }
    double number = 0;
    if (const auto* i = std::get_if<int64_t>(&*parsed)) number = static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&*parsed)) number = *d;
    if (const auto* s = std::get_if<uint64_t>(&*parsed)) number = static_cast<double>(*s);
    if (number < ps.min) fail(value, fmt::format("{}: must be at least {}, got '{}'", where, bound_text(ps, ps.min), value.Scalar()));
    if (number > ps.max) fail(value, fmt::format("{}: must be at most {}, got '{}'", where, bound_text(ps, ps.max), value.Scalar()));
    return *parsed;
  }

  std::string origin_;
};

std::string executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

std::vector<std::string> profile_search_dirs() {
  std::vector<std::string> dirs;
  if (std::string env = config::text("SMDDP_PROFILE_DIR"); !env.empty()) dirs.push_back(env);
  if (*SMDDP_DIAG_PROFILE_DIR) dirs.emplace_back(SMDDP_DIAG_PROFILE_DIR);
  if (std::string exe = executable_dir(); !exe.empty()) dirs.push_back(exe + "/../share/smddp/profiles");
  if (*SMDDP_DIAG_INSTALL_PROFILE_DIR) dirs.emplace_back(SMDDP_DIAG_INSTALL_PROFILE_DIR);
  return dirs;
}

Profile parse_profile(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError(fmt::format("profile '{}': line {}: malformed YAML: {}", origin, e.mark.line + 1, e.msg));
  }
  try {
    return ProfileReader(origin).read(root);
  } catch (const YAML::Exception& e) {
    throw UsageError(fmt::format("profile '{}': line {}: {}", origin, e.mark.line + 1, e.msg));
  }
}

Profile load_profile(const std::string& name_or_path) {
  if (name_or_path.empty()) throw UsageError("--profile is empty");
  std::string path;
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml") ||
                       name_or_path.ends_with(".yml");
  if (is_path) {
    path = name_or_path;
  } else {
    for (const auto& dir : profile_search_dirs()) {
      std::error_code ec;
      if (fs::exists(dir + "/" + name_or_path + ".yaml", ec)) {
        path = dir + "/" + name_or_path + ".yaml";
        break;
      }
    }
    if (path.empty()) {
      std::set<std::string> known;
      for (const auto& dir : profile_search_dirs()) {
        for (const auto& f : list_dir(dir)) {
          if (f.ends_with(".yaml")) known.insert(f.substr(0, f.size() - 5));
        }
      }
      throw UsageError(fmt::format("unknown profile '{}' (known: {}; or give a file path)", name_or_path,
                                   known.empty() ? "none found" : join({known.begin(), known.end()}, ", ")));
    }
  }
  Profile p = parse_profile(tools::read_input_file(path, "profile '" + path + "'"), path);
  p.path = path;
  if (p.name.empty()) p.name = fs::path(path).stem().string();
  return p;
}

void select_checks(Profile& profile, const std::vector<std::string>& only, const std::vector<std::string>& skip) {
  auto in_profile = [&](const std::string& name, const char* flag) {
    if (!find_check(name)) {
      throw UsageError(fmt::format("{}: unknown check '{}' (known: {})", flag, name, known_check_names()));
    }
    bool found = std::any_of(profile.checks.begin(), profile.checks.end(), [&](const CheckConfig& c) { return c.spec->name == name; });
    if (!found) throw UsageError(fmt::format("{}: profile '{}' has no check '{}'", flag, profile.name, name));
  };
  for (const auto& n : only) in_profile(n, "--checks");
  for (const auto& n : skip) in_profile(n, "--skip");
  std::vector<CheckConfig> kept;
  for (auto& c : profile.checks) {
    const std::string name(c.spec->name);
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    kept.push_back(std::move(c));
  }
  if (kept.empty()) throw UsageError("no checks left to run after --checks/--skip");
  profile.checks = std::move(kept);
}

}  // namespace smddp::diag
