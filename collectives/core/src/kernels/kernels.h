// The per-ISA reduction tables behind smddp/reduce.h.
//
// The same element loops (kernels_impl.h) are compiled three times, once per
// instruction set, each copy in its own namespace so that nothing compiled
// with AVX-512 flags can be picked by the linker for the portable path.
// dispatch.cc chooses one table at first use; tests and microbenchmarks ask
// for a specific one with kernel_table() to compare every path the CPU runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "smddp/types.h"

namespace smddp::kernels {

// dst[i] = op(srcs[0][i], ..., srcs[nsrc-1][i]); nsrc >= 1, count >= 0,
// dst may equal srcs[0] exactly.
using ReduceFn = void (*)(void* dst, const void* const* srcs, int nsrc, size_t count);
// dst[i] /= divisor, divisor >= 1.
using DivideFn = void (*)(void* dst, size_t count, int divisor);
// Element conversions of the 16- and 8-bit float types, the ones the kernels use.
using WidenFn = void (*)(const uint16_t* in, float* out, size_t count);
using NarrowFn = void (*)(const float* in, uint16_t* out, size_t count);
using Widen8Fn = void (*)(const uint8_t* in, float* out, size_t count);
using Narrow8Fn = void (*)(const float* in, uint8_t* out, size_t count);

struct KernelTable {
  std::string_view isa;  // "avx512", "avx2" or "generic"
  ReduceFn reduce[kNumDataTypes][kNumReduceOps];
  DivideFn divide[kNumDataTypes];
  WidenFn f16_to_float;
  NarrowFn float_to_f16;
  WidenFn bf16_to_float;
  NarrowFn float_to_bf16;
  Widen8Fn e4m3_to_float;
  Narrow8Fn float_to_e4m3;
  Widen8Fn e5m2_to_float;
  Narrow8Fn float_to_e5m2;
};

namespace generic {
extern const KernelTable kTable;
}
namespace avx2 {
extern const KernelTable kTable;
}
namespace avx512 {
extern const KernelTable kTable;
}

// The table for `isa`, or nullptr when the name is unknown or the CPU lacks it.
const KernelTable* kernel_table(std::string_view isa);

// The table to use given the value of SMDDP_REDUCE_ISA (nullptr or "" for
// none): the forced path when the CPU has it, else the best supported one
// (with a one-line warning on stderr when a forced path was refused).
const KernelTable& choose_table(const char* forced);

// The table in use: choose_table(SMDDP_REDUCE_ISA), once. The configuration
// check refuses a path this CPU lacks, so the warning is for direct callers.
const KernelTable& active_table();

}  // namespace smddp::kernels
