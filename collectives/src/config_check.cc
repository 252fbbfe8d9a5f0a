// config::check: the table's own checks plus those that need the collectives
// layer (algorithm names against the registry, the tuning file's rules, the
// model file), so
// that a bad value is refused before any rank connects, never mid-run.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "algorithms/registry.h"
#include "algorithms/selector.h"
#include "core/config_internal.h"
#include "smddp/common/input_file.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/model/cost_model.h"
#include "test_flip.h"

namespace smddp::config {

void check(unsigned users) {
  static std::mutex mutex;
  static unsigned checked = 0;  // masks already found valid
  std::lock_guard lock(mutex);
  if ((checked & users) == users) return;
  for (const auto& name : detail::unknown_pattern_names()) {
    std::string collectives;
    for (Collective c : all_collectives()) collectives += (collectives.empty() ? "" : ", ") + std::string(to_string(c));
    throw UsageError(name + ": names no collective (" + collectives + ")");
  }
  for (const auto& [name, value] : detail::environment_values(users)) {
    const Setting& s = *detail::find(name);
    if (std::string why = detail::problem(s, name, value); !why.empty()) throw UsageError(why);
    if (s.type == Type::Algorithm && value != "auto") {
      const Collective c = *detail::collective_of(s, name);
      if (!find_algorithm(c, value)) {
        std::string names;
        for (const Algorithm& a : algorithm_registry()) {
          if (a.info.collective == c) names += ", " + std::string(a.info.name);
        }
        throw UsageError(name + "='" + value + "': expected auto" + names);
      }
    }
    if (name == "SMDDP_TUNING_FILE") {
      std::string text;
      if (const std::string why = common::read_bounded_file(value, common::kMaxInputBytes, &text); !why.empty()) {
        throw UsageError(name + "='" + value + "': cannot read: " + why);
      }
      try {
        parse_tuning(text, value);
      } catch (const UsageError& e) {
        throw UsageError(name + "='" + value + "': " + e.what());  // the file, the line and why
      }
    }
    if (name == "SMDDP_MODEL_FILE") {
      try {
        model::load(value);  // the one reader of model files
      } catch (const UsageError& e) {
        throw UsageError(name + "='" + value + "': " + e.what());  // the file and why
      }
    }
    if (name == "SMDDP_TEST_FLIP") {
      std::string why;
      if (!parse_test_flip(value, &why)) throw UsageError(name + "='" + value + "': " + why);
    }
    detail::run_added_checks(name, value);
  }
  checked |= users;
}

void check_or_exit(const char* program, unsigned users) {
  try {
    check(users);
  } catch (const UsageError& e) {
    // The ranks have not connected: rank 0 is known only from the launcher.
    const char* rank = detail::launcher_rank();
    if (!rank || std::atoi(rank) == 0) {
      std::fprintf(stderr, "%s: %s\n", program, e.what());
    } else {
      yield_to_reporting_rank();
    }
    std::fflush(stderr);
    std::exit(64);
  }
}

void yield_to_reporting_rank() { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }

}  // namespace smddp::config
