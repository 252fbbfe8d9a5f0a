// Run-time choice of the reduction kernels, and the public entry points of
// smddp/reduce.h.
//
// The table is picked once, at first use: the best path the CPU supports, or
// the one SMDDP_REDUCE_ISA names when the CPU has it (a forced path the CPU
// lacks would crash with SIGILL, so it is refused with a warning instead).
// The CPU features checked are exactly those each file is compiled with.
#include <cpuid.h>

#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "kernels/kernels.h"
#include "smddp/config.h"
#include "smddp/reduce.h"

namespace smddp::kernels {
namespace {

// F16C from CPUID: clang has no __builtin_cpu_supports("f16c") (the fuzz build, scripts/fuzz.sh).
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma") && cpu_has_f16c();
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         cpu_has_f16c();
}

bool cpu_has_baseline() { return true; }

struct IsaPath {
  std::string_view name;
  bool (*supported)();
  const KernelTable* table;
};

// Best first; the last one runs everywhere.
constexpr IsaPath kPaths[] = {
    {"avx512", &cpu_has_avx512, &avx512::kTable},
    {"avx2", &cpu_has_avx2, &avx2::kTable},
    {"generic", &cpu_has_baseline, &generic::kTable},
};

const KernelTable& best_table() {
  for (const IsaPath& path : kPaths) {
    if (path.supported()) return *path.table;
  }
  return generic::kTable;
}

}  // namespace

const KernelTable* kernel_table(std::string_view isa) {
  for (const IsaPath& path : kPaths) {
    if (path.name == isa) return path.supported() ? path.table : nullptr;
  }
  return nullptr;
}

const KernelTable& choose_table(const char* forced) {
  if (forced == nullptr || *forced == '\0') return best_table();
  if (const KernelTable* table = kernel_table(forced)) return *table;
  const KernelTable& best = best_table();
  std::fprintf(stderr,
               "smddp: warning: SMDDP_REDUCE_ISA=%s is not a path this CPU supports "
               "(avx512, avx2, generic); using %.*s\n",
               forced, static_cast<int>(best.isa.size()), best.isa.data());
  return best;
}

const KernelTable& active_table() {
  static const KernelTable& table = choose_table(config::text("SMDDP_REDUCE_ISA").c_str());
  return table;
}

}  // namespace smddp::kernels

namespace smddp {
namespace {

size_t index_of(DataType dtype) {
  const auto i = static_cast<size_t>(dtype);
  SMDDP_CHECK(i < kNumDataTypes);
  return i;
}

size_t index_of(ReduceOp op) {
  const auto i = static_cast<size_t>(op);
  SMDDP_CHECK(i < kNumReduceOps);
  return i;
}

}  // namespace

void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, DataType dtype,
            ReduceOp op) {
  SMDDP_CHECK(nsrc >= 1);
  const kernels::ReduceFn fn = kernels::active_table().reduce[index_of(dtype)][index_of(op)];
  if (count == 0) return;
  fn(dst, srcs, nsrc, count);
}

void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  const void* srcs[2] = {dst, src};
  reduce(dst, srcs, 2, count, dtype, op);
}

void divide(void* dst, size_t count, DataType dtype, int divisor) {
  SMDDP_CHECK(divisor >= 1);
  const kernels::DivideFn fn = kernels::active_table().divide[index_of(dtype)];
  if (count == 0) return;
  fn(dst, count, divisor);
}

std::string_view reduce_isa() { return kernels::active_table().isa; }

}  // namespace smddp
