// Value types shared by every layer: element types, reduction operators,
// memory kinds and the collective operations themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace smddp {

// Names (nccl-tests' first, ours as aliases), sizes and order: the one table
// in core/types.cc. Float8E4M3 is the "FN" variant (no infinities, NaN
// S.1111.111, max 448); Float8E5M2 is IEEE-like (infinities, NaN). Both as
// NCCL 2.24+ (ncclFloat8e4m3, ncclFloat8e5m2) and CUDA's __nv_fp8_* define them.
enum class DataType : uint8_t {
  Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Bfloat16, Float32, Float64, Float8E4M3, Float8E5M2,
};
inline constexpr int kNumDataTypes = 12;

enum class ReduceOp : uint8_t { Sum, Prod, Min, Max, Avg };
inline constexpr int kNumReduceOps = 5;

enum class MemoryKind : uint8_t { Host, Cuda };

// The transports between nodes a user can name: one list, read by the
// configuration table (SMDDP_TRANSPORT), smddp-bench's --transport and the
// engine's selection (CommunicatorOptions::network_transport). "auto" picks
// one at run time.
inline constexpr std::string_view kNetworkTransportChoices = "mpi,fabric,socket,auto";
bool is_network_transport(std::string_view name);
// The same list for messages: "mpi, fabric, socket, auto".
std::string network_transport_list();

enum class Collective : uint8_t {
  AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, Barrier,
  Gather, Scatter, SendRecv, AllToAllV,
};
// What each one is: smddp/traits.h.
inline constexpr int kNumCollectives = 11;

size_t dtype_size(DataType t);
bool dtype_is_float(DataType t);
// nccl-tests' names: int8 ... half float double bfloat16 f8e4m3 f8e5m2, and
// sum prod max min avg. parse_* also take our older names (float32,
// float16, bf16, fp8_e4m3, ...).
std::string_view to_string(DataType t);
std::string_view to_string(ReduceOp op);
std::string_view to_string(MemoryKind m);
std::string_view to_string(Collective c);

std::optional<DataType> parse_dtype(std::string_view name);
std::optional<ReduceOp> parse_op(std::string_view name);
std::optional<MemoryKind> parse_memory_kind(std::string_view name);
std::optional<Collective> parse_collective(std::string_view name);

std::span<const DataType> all_dtypes();
std::span<const ReduceOp> all_ops();
std::span<const Collective> all_collectives();

// True for collectives that combine values and so take a ReduceOp.
bool collective_reduces(Collective c);
// True for collectives with a root rank.
bool collective_has_root(Collective c);

}  // namespace smddp
