// The configuration table: every SMDDP_* environment variable the engine and
// its tools read, with its type, default, range and description, and the one
// parser for each type. Nothing outside collectives/core/src/core/config.cc calls
// getenv on an SMDDP_ name (tests/e2e/bench/config_e2e.py enforces it).
//
// check() validates every setting a program reads, once, before the ranks
// connect (Communicator::create calls it; the tools call check_or_exit
// first, so a bad value is one line from rank 0 and exit 64). The typed
// reads below parse the current value with the same parser; the defaults
// live only in the table.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace smddp::config {

enum class Type {
  Integer,    // decimal, in [lo, hi]
  Size,       // bytes: 4096, 64K, 16M, 1G (K/M/G/T, KB/KiB, ...), in [lo, hi], a multiple of `multiple`
  Boolean,    // 1/0, true/false, yes/no, on/off
  Choice,     // one of `choices` (comma list)
  Seconds,    // a finite number of seconds, > 0
  File,       // a regular file this process can read
  Directory,  // an existing directory
  Library,    // a shared library: a soname the loader searches, or a readable file
  Algorithm,  // auto, or an algorithm registered for the collective in the name
  Name,       // one word: letters, digits and _ . : ; - (a provider, a host, an address)
  Text,       // any non-empty value (checked by its reader, see add_check)
  Secret,     // kMinSecretBytes or more; never printed (--list-config shows "(set)")
  SecretFile, // a regular file of this user's, mode 0600 or stricter, holding a Secret
};

inline constexpr size_t kMinSecretBytes = 16;
inline constexpr size_t kMaxSecretBytes = 4096;

// Which programs read a setting: a program checks only its own.
enum Users : unsigned { kEngine = 1, kBench = 2, kDiag = 4 };

struct Setting {
  std::string_view name;      // a pattern row ends in <COLLECTIVE>: one variable per collective
  Type type;
  std::string_view fallback;  // the default, as text ("" when there is none)
  int64_t lo = 0, hi = 0;     // Integer and Size bounds
  uint64_t multiple = 1;      // Size
  std::string_view choices;   // Choice
  unsigned users = kEngine;
  std::string_view doc;       // one line
};

std::span<const Setting> table();

// The concrete names of a row: itself, or one per collective for a pattern.
std::vector<std::string> names_of(const Setting& s);

// Validates every setting of these users in the environment, once per
// process and mask; throws UsageError("NAME='value': expected ...").
void check(unsigned users);

// check(); on a bad value rank 0 (from the launcher's environment, as the
// ranks have not connected) prints "program: message", and every rank exits
// 64. Never returns on error.
void check_or_exit(const char* program, unsigned users);

// Under mpirun the first process to exit non-zero ends the job, and a line
// another rank printed may still be on its way to mpirun and be lost with it
// (seen: rank 2's exit 64 beat rank 0's usage line). A rank that exits with
// an error another rank reports calls this first: it waits half a second.
void yield_to_reporting_rank();

// A further check of a Text setting's value by the program that reads it;
// it throws UsageError with its own message. Register before check().
void add_check(std::string_view name, std::function<void(const std::string&)> check);

// Typed reads: the environment's value when set and non-empty, else the
// table's default. A bad value throws UsageError (when check() was skipped).
bool is_set(std::string_view name);
int64_t integer(std::string_view name);
uint64_t bytes(std::string_view name);
double seconds(std::string_view name);
bool flag(std::string_view name);
std::string text(std::string_view name);  // Choice, File, Directory, Library, Algorithm, Text, SecretFile
// A Secret's value, or a SecretFile's contents less one trailing newline;
// "" when not set.
std::string secret(std::string_view name);

// --list-config: name, value, source and description of these users'
// settings (plus every set variable of a pattern row); markdown: the whole
// table as README.md shows it. Values are shown as set, not checked.
void print(std::FILE* out, unsigned users, bool markdown);

}  // namespace smddp::config
