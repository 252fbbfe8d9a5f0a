// SMDDP_TEST_FLIP=RANK:CALL:ELEMENT:BIT, a fault injector for tests only:
// after the call number CALL of a communicator completes on the process of
// job rank RANK, bit BIT of element ELEMENT of that call's receive buffer is
// flipped, so that a test can prove smddp-bench -B (and -c) find a silent
// corruption and name it (docs/engine.md, "Fault injection for tests").
//
//   RANK     the rank in the whole job (as error messages name it), 0..2^31-1
//   CALL     the communicator's own call count, from 1 (the "call #N" of its
//            error messages); every communicator of the process counts its
//            own calls: a split group's as well as the job's
//   ELEMENT  index into the receive buffer in elements of the call's dtype;
//            a call whose output on that rank is shorter is left alone
//   BIT      0..63, bit BIT % 8 of byte BIT / 8 of the element (on this
//            little-endian host: bit BIT of the element read as an integer);
//            a BIT past the element's width flips nothing
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "smddp/communicator.h"

namespace smddp {

struct TestFlip {
  int rank = 0;
  uint64_t call = 0;  // from 1
  uint64_t element = 0;
  unsigned bit = 0;
};

// The setting's grammar: four decimal numbers, colon-separated, each in its
// range; nullopt and, in *why, what is wrong with which field.
std::optional<TestFlip> parse_test_flip(std::string_view text, std::string* why = nullptr);

// SMDDP_TEST_FLIP of this process; nullopt when unset. UsageError when
// malformed (config::check refuses it before any rank connects).
std::optional<TestFlip> test_flip_from_environment();

// Flips the bit in `args`' receive buffer on `rank` of `nranks` (host or
// device memory) when the element is part of this rank's output; true when
// it flipped one.
bool apply_test_flip(const TestFlip& flip, const CollectiveArgs& args, int rank, int nranks);

}  // namespace smddp
