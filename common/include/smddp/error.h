// Error types. Bad user input is UsageError (exit 64 in the tools); runtime
// failures are typed so the tools can map them to documented exit codes.
// Where a failure happened travels in fields(), so that no caller has to
// parse what(); the message text stays as it was for people and logs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace smddp {

// Where an error arose. Empty or -1/0 when it does not apply.
struct ErrorFields {
  std::string collective;  // the collective being run ("allreduce")
  int peer = -1;           // world rank of the peer involved
  std::string host;        // that peer's host name
  uint64_t sequence = 0;   // the call's number on its communicator, from 1
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorFields fields = {})
      : std::runtime_error(what), fields_(std::move(fields)) {}
  explicit Error(const char* what) : Error(std::string(what)) {}

  const ErrorFields& fields() const { return fields_; }
  const std::string& collective() const { return fields_.collective; }
  int peer() const { return fields_.peer; }
  const std::string& host() const { return fields_.host; }
  uint64_t sequence() const { return fields_.sequence; }

  // Fills the call's collective and sequence number where the thrower did
  // not know them (the communicator does, on the way out).
  void stamp_call(const std::string& collective, uint64_t sequence) {
    if (fields_.collective.empty()) fields_.collective = collective;
    if (fields_.sequence == 0) fields_.sequence = sequence;
  }

 private:
  ErrorFields fields_;
};

// The caller asked for something invalid (unknown algorithm, bad root, ...).
class UsageError : public Error {
 public:
  using Error::Error;
};

// An algorithm declines an input; the selector moves to the next candidate.
class NotSupported : public Error {
 public:
  using Error::Error;
};

// A wait passed its deadline. Names the collective, the peer and its host.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer process is gone (its pid vanished or its connection broke).
class PeerLostError : public Error {
 public:
  using Error::Error;
};

// A transport failed (MPI error, libfabric completion error, shm setup).
class TransportError : public Error {
 public:
  using Error::Error;
};

}  // namespace smddp
