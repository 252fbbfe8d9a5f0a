// The configuration table (smddp/config.h) and its parsers. The only file
// that reads SMDDP_* variables from the environment.
#include "smddp/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/config_internal.h"
#include "kernels/kernels.h"
#include "smddp/common/numbers.h"
#include "smddp/common/sizes.h"
#include "smddp/common/strings.h"
#include "smddp/error.h"
#include "smddp/types.h"

namespace smddp::config {
namespace {

using common::parse_integer;
using common::parse_size;
using common::split;
using common::to_lower;
using common::to_upper;

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
constexpr std::string_view kPattern = "<COLLECTIVE>";

// Sorted by subsystem: engine, then the tools. Defaults are text so the
// list and the README show them as a user would write them.
constexpr Setting kTable[] = {
    {"SMDDP_TIMEOUT", Type::Seconds, "300", 0, 0, 1, {}, kEngine,
     "Seconds a collective call may wait for a peer before it fails (smddp-bench -T overrides)"},
    {"SMDDP_RANKS_PER_NODE", Type::Integer, "", 1, 1 << 20, 1, {}, kEngine,
     "Split the ranks into virtual nodes of K consecutive ranks, to test hierarchical paths on one "
     "host; default: one node per host"},
    {"SMDDP_ALGORITHM_<COLLECTIVE>", Type::Algorithm, "auto", 0, 0, 1, {}, kEngine,
     "Force this algorithm for the collective, e.g. SMDDP_ALGORITHM_ALLREDUCE=ring "
     "(smddp-bench --list-algorithms names them)"},
    {"SMDDP_TUNING_FILE", Type::File, "", 0, 0, 1, {}, kEngine,
     "Selection rules tried before the built-in ones (docs/engine.md)"},
    {"SMDDP_MODEL_FILE", Type::File, "", 0, 0, 1, {}, kEngine,
     "smddp-model fit file whose tiers rank the algorithms across nodes; default: built-in figures "
     "per transport (docs/engine.md)"},
    {"SMDDP_LINK_PROBE", Type::Boolean, "1", 0, 0, 1, {}, kEngine,
     "Time the link between two nodes at communicator creation (two 4 MiB messages, about 70 ms at 1 Gbit/s); "
     "a link under a quarter of the built-in figures' bandwidth replaces it in the selection model "
     "(socket and MPI transports; docs/engine.md); 0 turns it off"},
    {"SMDDP_REDUCE_ISA", Type::Choice, "", 0, 0, 1, "generic,avx2,avx512", kEngine,
     "Reduction kernels; default: the best this CPU supports"},
    {"SMDDP_SHM_SLOT_BYTES", Type::Size, "1M", 4096, 1 << 30, 64, {}, kEngine,
     "Bytes of each staging slot of the node's shared-memory segment (4 per rank)"},
    {"SMDDP_SHM_CELL_BYTES", Type::Size, "64K", 4096, 1 << 30, 64, {}, kEngine,
     "Bytes of each message cell between two ranks of a node (16 per pair)"},
    {"SMDDP_CMA", Type::Boolean, "1", 0, 0, 1, {}, kEngine,
     "Single-copy reads between ranks of a node (process_vm_readv); 0 turns them off"},
    {"SMDDP_TRANSPORT", Type::Choice, "auto", 0, 0, 1, kNetworkTransportChoices, kEngine,
     "Transport between nodes; socket: plain TCP; auto: libfabric (EFA) when every rank has it, "
     "else socket when every rank reaches its partners, else MPI (smddp-bench --transport overrides)"},
    {"SMDDP_FABRIC_PROVIDER", Type::Name, "", 0, 0, 1, {}, kEngine,
     "libfabric provider of the fabric transport; default: a plain FI_PROVIDER, else efa when "
     "present, else tcp"},
    {"SMDDP_FABRIC_MAX_MSG", Type::Size, "", 1, kNoLimit, 1, {}, kEngine,
     "Largest piece the fabric transport sends; default: the provider's limit"},
    {"SMDDP_FABRIC_MR", Type::Choice, "auto", 0, 0, 1, "auto,always", kEngine,
     "Register buffers with libfabric: auto (when the provider needs it) or always"},
    {"SMDDP_FABRIC_SPIN", Type::Integer, "64", 0, 1000000, 1, {}, kEngine,
     "Completion-queue polls before a waiting rank sleeps"},
    {"SMDDP_FABRIC_NAP_US", Type::Integer, "200", 0, 999999, 1, {}, kEngine,
     "Microseconds a waiting rank sleeps on the completion queue at a time"},
    {"SMDDP_FABRIC_VERBOSE", Type::Boolean, "0", 0, 0, 1, {}, kEngine,
     "One line per rank naming the fabric provider, domain and piece size, or the socket "
     "transport's address and port"},
    {"SMDDP_CUDA_CHUNK_BYTES", Type::Size, "4M", 1024, int64_t{1} << 32, 1, {}, kEngine,
     "Chunk of the cuda_staged algorithm (CUDA builds)"},
    {"SMDDP_SOCKET_ADDRESS", Type::Name, "", 0, 0, 1, {}, kEngine,
     "Address the socket transport listens on; default: the one that reaches the TCP store "
     "(torchrun-style starts), else the host's first up, non-loopback IPv4 address"},
    {"SMDDP_SOCKET_SETUP_TIMEOUT", Type::Seconds, "5", 0, 0, 1, {}, kEngine,
     "Seconds transport auto gives the socket transport's setup connections before every rank "
     "takes MPI point-to-point instead"},
    {"SMDDP_STORE_PORT", Type::Integer, "", 1, 65535, 1, {}, kEngine,
     "TCP store port (torchrun-style starts); default: MASTER_PORT, the next one under "
     "torchrun's agent"},
    {"SMDDP_BOOTSTRAP_TIMEOUT", Type::Seconds, "60", 0, 0, 1, {}, kEngine,
     "Seconds torchrun-style ranks wait for each other at the TCP store; also the socket "
     "transport's limit on reaching a peer (and, with --transport socket, on its setup connections)"},
    {"SMDDP_STORE_SECRET", Type::Secret, "", 0, 0, 1, {}, kEngine,
     "Shared secret every rank proves to the TCP store and to its socket-transport peers (HMAC "
     "challenge-response); default: none, both are open to anyone who reaches them (docs/deploy.md)"},
    {"SMDDP_STORE_SECRET_FILE", Type::SecretFile, "", 0, 0, 1, {}, kEngine,
     "File holding SMDDP_STORE_SECRET (one trailing newline is dropped); instead of the variable"},
    {"SMDDP_STORE_BIND_ADDR", Type::Name, "", 0, 0, 1, {}, kEngine,
     "Address rank 0's TCP store listens on; default: MASTER_ADDR, which must be an address of "
     "rank 0's host (0.0.0.0: every interface)"},
    {"SMDDP_STORE_HANDSHAKE_TIMEOUT", Type::Seconds, "10", 0, 0, 1, {}, kEngine,
     "Seconds a TCP store connection has for its handshake, and for each message it begins; "
     "slower ones are dropped"},
    {"SMDDP_TEST_FLIP", Type::Text, "", 0, 0, 1, {}, kEngine,
     "For tests only: RANK:CALL:ELEMENT:BIT flips bit BIT of element ELEMENT of the receive buffer on "
     "job rank RANK after the communicator's call number CALL (from 1) completes, a silent corruption "
     "for smddp-bench -B to find"},
    {"SMDDP_SUPERVISE", Type::Boolean, "1", 0, 0, 1, {}, kBench,
     "A supervising process per rank reports the rank killed by a signal (exit 3); 0 runs the "
     "rank alone"},
    {"SMDDP_TEST_STALL_AT", Type::Text, "", 0, 0, 1, {}, kBench,
     "For tests: RANK:CALL stops that rank (SIGSTOP) before its call number CALL, to exercise the "
     "hang report"},
    {"SMDDP_BENCH_MEMORY", Type::Size, "", 1, kNoLimit, 1, {}, kBench,
     "Host memory the buffers of smddp-bench's ranks on one host may use together; default: 7/8 "
     "of MemAvailable. A larger -e is lowered to fit"},
    {"SMDDP_NVML_LIBRARY", Type::Library, "libnvidia-ml.so.1", 0, 0, 1, {}, kBench | kDiag,
     "NVML library to load (smddp-diag --nvml-library overrides)"},
    {"SMDDP_SYSFS_ROOT", Type::Directory, "/", 0, 0, 1, {}, kBench | kDiag,
     "Read /sys and /proc under this directory, for tests (smddp-diag --sysfs-root overrides; "
     "smddp-bench reads the fabric counters there)"},
    {"SMDDP_PROFILE_DIR", Type::Directory, "", 0, 0, 1, {}, kDiag,
     "Directory searched first for preflight profiles"},
    {"SMDDP_DIAG_FAULT", Type::Text, "", 0, 0, 1, {}, kDiag,
     "Faults to inject, for tests: a comma list of unreachable, clock_offset_ms=N, nccl_version=V[@HOST], corrupt[@HOST]"},
    {"SMDDP_ISOLATE_TOPOLOGY", Type::File, "", 0, 0, 1, {}, kDiag,
     "Topology file of isolate's rack-aware pairing: EC2 describe-instance-topology JSON or lines "
     "HOST LABEL... (isolate --topology overrides)"},
};

bool is_pattern(const Setting& s) { return s.name.ends_with(kPattern); }
std::string_view prefix_of(const Setting& s) { return s.name.substr(0, s.name.size() - kPattern.size()); }

std::string human_bytes(uint64_t v) {
  for (auto [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}}) {
    if (v >= (uint64_t{1} << shift) && v % (uint64_t{1} << shift) == 0) return std::to_string(v >> shift) + suffix;
  }
  return std::to_string(v);
}

std::string or_list(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  }
  return s;
}

std::optional<bool> parse_flag(const std::string& v) {
  const std::string l = to_lower(v);
  if (l == "1" || l == "true" || l == "yes" || l == "on") return true;
  if (l == "0" || l == "false" || l == "no" || l == "off") return false;
  return std::nullopt;
}

std::mutex g_checks_mutex;
std::map<std::string, std::function<void(const std::string&)>, std::less<>>& added_checks() {
  static std::map<std::string, std::function<void(const std::string&)>, std::less<>> checks;
  return checks;
}

const char* raw(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v && *v ? v : nullptr;
}

// "" when a secret of `bytes` is long enough, else the message (without it).
std::string secret_problem(std::string_view name, size_t bytes, const char* what) {
  if (bytes >= kMinSecretBytes && bytes <= kMaxSecretBytes) return "";
  return std::string(name) + ": expected a secret of " + std::to_string(kMinSecretBytes) + ".." +
         std::to_string(kMaxSecretBytes) + " bytes (" + (*what ? std::string(what) + " " : "has ") +
         std::to_string(bytes) + "; make one with: head -c 32 /dev/urandom | base64)";
}

// Reads a secret file that only its owner, this user, may read or write;
// "" and the contents (less one trailing newline), or what is wrong with it.
std::string read_secret_file(const std::string& path, std::string* contents) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::strerror(errno);
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0) why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if (st.st_uid != geteuid()) why = "owned by uid " + std::to_string(st.st_uid) + ", not by this user";
  else if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = std::string("mode ") + mode + ": not private to its owner (chmod 600 it)";
  }
  char buf[kMaxSecretBytes + 2];
  size_t got = 0;
  while (why.empty() && got < sizeof buf) {
    const ssize_t n = ::read(fd, buf + got, sizeof buf - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::strerror(errno);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (!why.empty()) return why;
  contents->assign(buf, got);
  explicit_bzero(buf, sizeof buf);  // one copy of the secret is enough
  if (contents->ends_with("\r\n")) contents->resize(contents->size() - 2);
  else if (contents->ends_with('\n')) contents->pop_back();
  return "";
}

// The value to parse: the environment's, else the default ("" for none).
std::string current(const Setting& s, std::string_view name) {
  const char* v = raw(std::string(name));
  return v ? v : std::string(s.fallback);
}

void require(const Setting& s, std::string_view name, const std::string& value) {
  if (std::string why = detail::problem(s, name, value); !why.empty()) throw UsageError(why);
}

const Setting& typed(std::string_view name, Type type) {
  const Setting* s = detail::find(name);
  if (!s || s->type != type) throw std::logic_error("config: no setting " + std::string(name) + " of this type");
  return *s;
}

}  // namespace

std::span<const Setting> table() { return kTable; }

std::vector<std::string> names_of(const Setting& s) {
  if (!is_pattern(s)) return {std::string(s.name)};
  std::vector<std::string> out;
  for (Collective c : all_collectives()) out.push_back(std::string(prefix_of(s)) + to_upper(to_string(c)));
  return out;
}

namespace detail {

const Setting* find(std::string_view name) {
  for (const Setting& s : kTable) {
    if (s.name == name) return &s;
    if (is_pattern(s) && name.starts_with(prefix_of(s))) {
      for (const auto& n : names_of(s)) {
        if (n == name) return &s;
      }
    }
  }
  return nullptr;
}

std::optional<Collective> collective_of(const Setting& s, std::string_view name) {
  if (!is_pattern(s) || !name.starts_with(prefix_of(s))) return std::nullopt;
  return parse_collective(to_lower(name.substr(prefix_of(s).size())));
}

std::string expectation(const Setting& s) {
  switch (s.type) {
    case Type::Integer:
      return "an integer " + std::to_string(s.lo) + ".." + std::to_string(s.hi);
    case Type::Size: {
      std::string e = s.hi == kNoLimit ? "bytes >= " + human_bytes(static_cast<uint64_t>(s.lo))
                                       : "bytes " + human_bytes(static_cast<uint64_t>(s.lo)) + ".." +
                                             human_bytes(static_cast<uint64_t>(s.hi));
      if (s.multiple > 1) e += ", a multiple of " + std::to_string(s.multiple);
      return e + " (like 4096, 64K, 1M)";
    }
    case Type::Boolean:
      return "0 or 1";
    case Type::Choice:
      return or_list(split(s.choices, ','));
    case Type::Seconds:
      return common::seconds_expectation(true);
    case Type::File:
      return "a readable file";
    case Type::Directory:
      return "a directory";
    case Type::Library:
      return "a library soname or a readable file";
    case Type::Algorithm:
      return "auto or an algorithm name";
    case Type::Name:
      return "a name (letters, digits, _ . : ; -)";
    case Type::Text:
      return "text";
    case Type::Secret:
      return "a secret of " + std::to_string(kMinSecretBytes) + ".." + std::to_string(kMaxSecretBytes) + " bytes";
    case Type::SecretFile:
      return "a file of yours, mode 0600 or stricter, holding a secret of " + std::to_string(kMinSecretBytes) +
             ".." + std::to_string(kMaxSecretBytes) + " bytes";
  }
  return "";
}

std::string problem(const Setting& s, std::string_view name, const std::string& value) {
  // A secret's value never appears in a message.
  if (s.type == Type::Secret) return secret_problem(name, value.size(), "");
  if (s.type == Type::SecretFile) {
    std::string contents;
    std::string why = read_secret_file(value, &contents);
    if (why.empty()) why = secret_problem(name, contents.size(), "the file holds");
    if (why.empty() && raw("SMDDP_STORE_SECRET")) why = std::string(name) + ": set it or SMDDP_STORE_SECRET, not both";
    return why.empty() || why.starts_with(name) ? why : std::string(name) + "='" + value + "': " + why;
  }
  const std::string head = std::string(name) + "='" + value + "': expected ";
  const std::string bad = head + expectation(s);
  switch (s.type) {
    case Type::Integer: {
      // The one decimal grammar (smddp/common/numbers.h); why it is not one, when it is not.
      std::string why;
      auto x = parse_integer(value, &why);
      if (!x) return std::string(name) + "='" + value + "': " + why + "; expected " + expectation(s);
      return *x >= s.lo && *x <= s.hi ? "" : bad;
    }
    case Type::Size: {
      // The grammar of every size (docs/bench.md#sizes); why it is not one, when it is not.
      std::string why;
      auto x = parse_size(value, &why);
      if (!x) return std::string(name) + "='" + value + "': " + why + "; expected " + expectation(s);
      return *x >= static_cast<uint64_t>(s.lo) && *x <= static_cast<uint64_t>(s.hi) && *x % s.multiple == 0 ? "" : bad;
    }
    case Type::Boolean:
      return parse_flag(value) ? "" : bad;
    case Type::Choice: {
      for (const auto& c : split(s.choices, ',')) {
        if (c == value) {
          // A path the CPU lacks is refused, not replaced by another.
          if (s.name == "SMDDP_REDUCE_ISA" && !kernels::kernel_table(value)) {
            std::vector<std::string> ok;
            for (const auto& isa : split(s.choices, ',')) {
              if (kernels::kernel_table(isa)) ok.push_back(isa);
            }
            return head + "a path this CPU supports: " + or_list(ok);
          }
          return "";
        }
      }
      return bad;
    }
    case Type::Seconds: {
      std::string why;
      if (common::parse_seconds(value, true, &why)) return "";
      return std::string(name) + "='" + value + "': " + why + "; expected " + expectation(s);
    }
    case Type::File:
    case Type::Library: {
      if (s.type == Type::Library && value.find('/') == std::string::npos) return "";  // the loader searches
      struct stat st {};
      if (stat(value.c_str(), &st) != 0) return head + expectation(s) + " (" + std::strerror(errno) + ")";
      if (!S_ISREG(st.st_mode)) return head + expectation(s) + " (not a regular file)";
      if (access(value.c_str(), R_OK) != 0) return head + expectation(s) + " (" + std::strerror(errno) + ")";
      return "";
    }
    case Type::Directory: {
      struct stat st {};
      if (stat(value.c_str(), &st) != 0) return head + expectation(s) + " (" + std::strerror(errno) + ")";
      return S_ISDIR(st.st_mode) ? "" : head + expectation(s) + " (not a directory)";
    }
    case Type::Name:
      // Not a list or an exclusion, as FI_PROVIDER may hold: one name.
      for (char c : value) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("_.:;-").find(c) == std::string_view::npos) {
          return bad;
        }
      }
      return "";
    case Type::Algorithm:  // names are checked against the registry by check()
    case Type::Text:
    case Type::Secret:
    case Type::SecretFile:
      return "";
  }
  return bad;
}

void run_added_checks(std::string_view name, const std::string& value) {
  std::function<void(const std::string&)> fn;
  {
    std::lock_guard lock(g_checks_mutex);
    auto it = added_checks().find(name);
    if (it == added_checks().end()) return;
    fn = it->second;
  }
  fn(value);
}

std::vector<std::pair<std::string, std::string>> environment_values(unsigned users) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Setting& s : kTable) {
    if (!(s.users & users)) continue;
    for (const auto& n : names_of(s)) {
      if (const char* v = raw(n)) out.emplace_back(n, v);
    }
  }
  return out;
}

std::vector<std::string> unknown_pattern_names() {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string_view kv = *e;
    const std::string_view name = kv.substr(0, kv.find('='));
    for (const Setting& s : kTable) {
      if (is_pattern(s) && name.starts_with(prefix_of(s)) && !find(name)) out.emplace_back(name);
    }
  }
  return out;
}

const char* launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}) {
    if (const char* v = std::getenv(var); v && *v) return v;
  }
  return nullptr;
}

}  // namespace detail

void add_check(std::string_view name, std::function<void(const std::string&)> check) {
  std::lock_guard lock(g_checks_mutex);
  added_checks()[std::string(name)] = std::move(check);
}

bool is_set(std::string_view name) {
  if (!detail::find(name)) throw std::logic_error("config: no setting " + std::string(name));
  return raw(std::string(name)) != nullptr;
}

int64_t integer(std::string_view name) {
  const Setting& s = typed(name, Type::Integer);
  const std::string v = current(s, name);
  if (v.empty()) return 0;
  require(s, name, v);
  return *parse_integer(v);
}

uint64_t bytes(std::string_view name) {
  const Setting& s = typed(name, Type::Size);
  const std::string v = current(s, name);
  if (v.empty()) return 0;
  require(s, name, v);
  return *parse_size(v);
}

double seconds(std::string_view name) {
  const Setting& s = typed(name, Type::Seconds);
  const std::string v = current(s, name);
  require(s, name, v);
  return *common::parse_seconds(v, true);
}

bool flag(std::string_view name) {
  const Setting& s = typed(name, Type::Boolean);
  const std::string v = current(s, name);
  require(s, name, v);
  return *parse_flag(v);
}

std::string secret(std::string_view name) {
  const Setting* s = detail::find(name);
  if (!s || (s->type != Type::Secret && s->type != Type::SecretFile)) {
    throw std::logic_error("config: no secret setting " + std::string(name));
  }
  const std::string v = current(*s, name);
  if (v.empty()) return v;
  require(*s, name, v);
  if (s->type == Type::Secret) return v;
  std::string contents;
  if (std::string why = read_secret_file(v, &contents); !why.empty()) throw UsageError(std::string(name) + ": " + why);
  return contents;
}

std::string text(std::string_view name) {
  const Setting* s = detail::find(name);
  if (!s || s->type == Type::Integer || s->type == Type::Size || s->type == Type::Seconds ||
      s->type == Type::Boolean || s->type == Type::Secret) {
    throw std::logic_error("config: no text setting " + std::string(name));
  }
  const std::string v = current(*s, name);
  if (!v.empty()) require(*s, name, v);
  return v;
}

void print(std::FILE* out, unsigned users, bool markdown) {
  if (markdown) {
    std::fprintf(out, "| Variable | Accepts | Default | Read by | Description |\n");
    std::fprintf(out, "|---|---|---|---|---|\n");
    for (const Setting& s : kTable) {
      std::string by;
      if (s.users & kEngine) by += "engine";
      if (s.users & kBench) by += std::string(by.empty() ? "" : ", ") + "smddp-bench";
      if (s.users & kDiag) by += std::string(by.empty() ? "" : ", ") + "smddp-diag";
      std::fprintf(out, "| `%.*s` | %s | %s | %s | %.*s |\n", static_cast<int>(s.name.size()), s.name.data(),
                   detail::expectation(s).c_str(),
                   s.fallback.empty() ? "-" : ("`" + std::string(s.fallback) + "`").c_str(), by.c_str(),
                   static_cast<int>(s.doc.size()), s.doc.data());
    }
    return;
  }
  std::fprintf(out, "%-30s %-20s %-11s %s\n", "name", "value", "source", "description");
  for (const Setting& s : kTable) {
    if (!(s.users & users)) continue;
    const std::string fallback = s.fallback.empty() ? "-" : std::string(s.fallback);
    if (is_pattern(s)) {
      std::fprintf(out, "%-30.*s %-20s %-11s %.*s\n", static_cast<int>(s.name.size()), s.name.data(),
                   fallback.c_str(), "default", static_cast<int>(s.doc.size()), s.doc.data());
      for (const auto& n : names_of(s)) {
        if (const char* v = raw(n)) std::fprintf(out, "%-30s %-20s %-11s %s\n", n.c_str(), v, "environment", "");
      }
      continue;
    }
    const char* v = raw(std::string(s.name));
    if (v && s.type == Type::Secret) v = "(set)";
    std::fprintf(out, "%-30.*s %-20s %-11s %.*s\n", static_cast<int>(s.name.size()), s.name.data(),
                 v ? v : fallback.c_str(), v ? "environment" : "default", static_cast<int>(s.doc.size()),
                 s.doc.data());
  }
}

}  // namespace smddp::config
