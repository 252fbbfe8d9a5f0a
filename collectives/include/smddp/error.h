// Error types. Bad user input is UsageError (exit 64 in the tools); runtime
// failures are typed so the tools can map them to documented exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace smddp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
