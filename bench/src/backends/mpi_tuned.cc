// Forcing Open MPI's coll/tuned algorithms through MPI_T control variables
// (see mpi_tuned.h for why and when they are read).
#include "backends/mpi_tuned.h"

#include <mpi.h>

#include <cstdlib>
#include <optional>

#include "smddp/error.h"

namespace smddp::bench {
namespace {

constexpr const char* kDynamicRules = "OMPI_MCA_coll_tuned_use_dynamic_rules";

// MPI_T is initialised once for the process and stays up: its handles
// outlive a single force, and MPI_T_finalize before MPI_Finalize is optional.
void init_tool_interface() {
  static const bool ready = [] {
    int provided = 0;
    return MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
  }();
  if (!ready) throw TransportError("mpi: MPI_T_init_thread failed");
}

std::string variable_name(std::string_view tuned_collective) {
  return "coll_tuned_" + std::string(tuned_collective) + "_algorithm";
}

struct Variable {
  int index;
  MPI_T_enum choices;
};

std::optional<Variable> find_variable(std::string_view tuned_collective) {
  init_tool_interface();
  int index = -1;
  if (MPI_T_cvar_get_index(variable_name(tuned_collective).c_str(), &index) != MPI_SUCCESS) return std::nullopt;
  char name[256], desc[8];
  int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type;
  MPI_T_enum choices = MPI_T_ENUM_NULL;
  if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &choices, desc, &desc_len, &bind, &scope) !=
          MPI_SUCCESS ||
      choices == MPI_T_ENUM_NULL || type != MPI_INT) {
    return std::nullopt;
  }
  return Variable{index, choices};
}

// (value, name) of each choice of an algorithm variable.
std::vector<std::pair<int, std::string>> choices_of(const Variable& v) {
  std::vector<std::pair<int, std::string>> out;
  int n = 0, len = 0;
  char title[256];
  len = sizeof title;
  if (MPI_T_enum_get_info(v.choices, &n, title, &len) != MPI_SUCCESS) return out;
  for (int i = 0; i < n; ++i) {
    int value = 0;
    char item[256];
    len = sizeof item;
    if (MPI_T_enum_get_item(v.choices, i, &value, item, &len) != MPI_SUCCESS) continue;
    if (value == 0) continue;  // "ignore": the default decision
    out.emplace_back(value, item);
  }
  return out;
}

int read_int(int index) {
  MPI_T_cvar_handle h;
  int count = 0, value = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return 0;
  MPI_T_cvar_read(h, &value);
  MPI_T_cvar_handle_free(&h);
  return value;
}

bool write_int(int index, int value) {
  MPI_T_cvar_handle h;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS) return false;
  const bool ok = MPI_T_cvar_write(h, &value) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&h);
  return ok;
}

}  // namespace

bool is_mpi_backend(const std::string& backend) { return backend == "mpi" || backend.rfind("mpi:", 0) == 0; }

std::string mpi_tuned_name(const std::string& backend) {
  return backend.rfind("mpi:", 0) == 0 ? backend.substr(4) : std::string();
}

void request_mpi_tuned_rules() { setenv(kDynamicRules, "1", /*overwrite=*/0); }

std::vector<std::string> mpi_tuned_algorithms(std::string_view tuned_collective) {
  std::vector<std::string> names;
  if (auto v = find_variable(tuned_collective)) {
    for (auto& [value, name] : choices_of(*v)) names.push_back(name);
  }
  return names;
}

MpiTunedForce::MpiTunedForce(const std::string& algorithm, const std::vector<std::string_view>& tuned_collectives) {
  std::string offered;
  for (std::string_view c : tuned_collectives) {
    auto v = find_variable(c);
    if (!v) continue;
    for (auto& [value, name] : choices_of(*v)) {
      if (name != algorithm) {
        offered += (offered.empty() ? "" : ", ") + (tuned_collectives.size() > 1 ? std::string(c) + ":" : "") + name;
        continue;
      }
      const int before = read_int(v->index);
      if (!write_int(v->index, value)) throw TransportError("mpi: cannot force " + variable_name(c));
      saved_.push_back({v->index, before, std::string(c)});
    }
  }
  if (saved_.empty()) {
    throw UsageError("mpi:" + algorithm + ": no Open MPI tuned algorithm of that name for the collectives run" +
                     (offered.empty() ? std::string(" (this MPI has no coll/tuned)") : "; offered: " + offered));
  }
  const char* rules = std::getenv(kDynamicRules);
  if (!rules || std::string(rules) != "1") {
    throw UsageError("mpi:" + algorithm + ": " + kDynamicRules + " is not 1, so Open MPI ignores forced algorithms");
  }
}

MpiTunedForce::~MpiTunedForce() {
  for (const auto& s : saved_) write_int(s.index, s.value);
}

bool MpiTunedForce::forces(std::string_view tuned_collective) const {
  for (const auto& s : saved_) {
    if (s.collective == tuned_collective) return true;
  }
  return false;
}

}  // namespace smddp::bench
