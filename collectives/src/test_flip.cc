#include "test_flip.h"

#include <limits>
#include <vector>

#include "smddp/common/numbers.h"
#include "smddp/config.h"
#include "smddp/error.h"
#include "smddp/traits.h"
#if SMDDP_CUDA_ENABLED
#include <cuda_runtime_api.h>
#endif

namespace smddp {

std::optional<TestFlip> parse_test_flip(std::string_view text, std::string* why) {
  const auto fail = [&](const std::string& w) -> std::optional<TestFlip> {
    if (why) *why = w;
    return std::nullopt;
  };
  // Digits and colons only: no sign, space, hex or empty field slips through.
  std::vector<std::string> fields(1);
  for (char c : text) {
    if (c == ':') fields.emplace_back();
    else if (c >= '0' && c <= '9') fields.back() += c;
    else return fail("expected RANK:CALL:ELEMENT:BIT, four decimal numbers (e.g. 1:120:5:3)");
  }
  if (fields.size() != 4) return fail("expected RANK:CALL:ELEMENT:BIT, four decimal numbers (e.g. 1:120:5:3)");
  struct Field {
    const char* name;
    uint64_t lo, hi;
  };
  constexpr uint64_t kMax63 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  constexpr Field kFields[4] = {{"RANK", 0, static_cast<uint64_t>(std::numeric_limits<int>::max())},
                                {"CALL", 1, kMax63},  // the engine's calls are numbered from 1
                                {"ELEMENT", 0, kMax63},
                                {"BIT", 0, 63}};
  uint64_t v[4] = {};
  for (size_t i = 0; i < 4; ++i) {
    std::string w;
    const auto x = common::parse_unsigned(fields[i], &w);
    if (!x) return fail(std::string(kFields[i].name) + " '" + fields[i] + "': " + w);
    if (*x < kFields[i].lo || *x > kFields[i].hi) {
      return fail(std::string(kFields[i].name) + " " + std::to_string(*x) + ": expected " +
                  std::to_string(kFields[i].lo) + ".." + std::to_string(kFields[i].hi));
    }
    v[i] = *x;
  }
  return TestFlip{static_cast<int>(v[0]), v[1], v[2], static_cast<unsigned>(v[3])};
}

std::optional<TestFlip> test_flip_from_environment() {
  if (!config::is_set("SMDDP_TEST_FLIP")) return std::nullopt;
  const std::string value = config::text("SMDDP_TEST_FLIP");
  std::string why;
  auto flip = parse_test_flip(value, &why);
  if (!flip) throw UsageError("SMDDP_TEST_FLIP='" + value + "': " + why);
  return flip;
}

bool apply_test_flip(const TestFlip& flip, const CollectiveArgs& args, int rank, int nranks) {
  const CollectiveTraits& t = traits(args.collective);
  if (!args.recv || !t.receives_on(rank, t.has_root ? args.root : -1)) return false;
  const size_t es = dtype_size(args.dtype);
  // This rank's output: alltoallv's per-peer counts, else the collective's extent.
  const size_t elements = buffer_counts(args.collective, args.count, nranks, args.send_counts, args.recv_counts).recv;
  if (flip.element >= elements || flip.bit >= 8 * es) return false;
  char* byte = static_cast<char*>(args.recv) + flip.element * es + flip.bit / 8;
  const auto mask = static_cast<unsigned char>(1u << (flip.bit % 8));
#if SMDDP_CUDA_ENABLED
  if (args.memory == MemoryKind::Cuda) {
    unsigned char b = 0;
    // The call is complete on return (communicator.h): plain copies suffice.
    if (cudaMemcpy(&b, byte, 1, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    b ^= mask;
    return cudaMemcpy(byte, &b, 1, cudaMemcpyHostToDevice) == cudaSuccess;
  }
#endif
  *reinterpret_cast<unsigned char*>(byte) ^= mask;
  return true;
}

}  // namespace smddp
