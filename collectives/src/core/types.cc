#include "smddp/types.h"

#include <array>

#include "smddp/traits.h"

namespace smddp {
namespace {

constexpr std::array<DataType, kNumDataTypes> kDtypes = {
    DataType::Int8,    DataType::Uint8,    DataType::Int32,   DataType::Uint32,
    DataType::Int64,   DataType::Uint64,   DataType::Float16, DataType::Bfloat16,
    DataType::Float32, DataType::Float64,
};
constexpr std::array<std::string_view, kNumDataTypes> kDtypeNames = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64",
};
constexpr std::array<size_t, kNumDataTypes> kDtypeSizes = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};

constexpr std::array<ReduceOp, kNumReduceOps> kOps = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min,
                                                      ReduceOp::Max, ReduceOp::Avg};
constexpr std::array<std::string_view, kNumReduceOps> kOpNames = {"sum", "prod", "min", "max", "avg"};

// Names and order come from the traits rows (smddp/traits.h).
constexpr auto kCollectives = [] {
  std::array<Collective, kNumCollectives> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kCollectiveTraits[i].collective;
  return out;
}();
constexpr auto kCollectiveNames = [] {
  std::array<std::string_view, kNumCollectives> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kCollectiveTraits[i].name;
  return out;
}();

template <typename Enum, size_t N>
std::optional<Enum> find_name(const std::array<std::string_view, N>& names,
                              const std::array<Enum, N>& values, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return values[i];
  }
  return std::nullopt;
}

}  // namespace

size_t dtype_size(DataType t) { return kDtypeSizes[static_cast<size_t>(t)]; }
bool dtype_is_float(DataType t) {
  return t == DataType::Float16 || t == DataType::Bfloat16 || t == DataType::Float32 ||
         t == DataType::Float64;
}
std::string_view to_string(DataType t) { return kDtypeNames[static_cast<size_t>(t)]; }
std::string_view to_string(ReduceOp op) { return kOpNames[static_cast<size_t>(op)]; }
std::string_view to_string(MemoryKind m) { return m == MemoryKind::Host ? "host" : "cuda"; }
std::string_view to_string(Collective c) { return kCollectiveNames[static_cast<size_t>(c)]; }

std::optional<DataType> parse_dtype(std::string_view name) {
  // Accept the nccl-tests spellings as aliases.
  if (name == "half" || name == "fp16") return DataType::Float16;
  if (name == "bf16") return DataType::Bfloat16;
  if (name == "float" || name == "fp32") return DataType::Float32;
  if (name == "double" || name == "fp64") return DataType::Float64;
  if (name == "int") return DataType::Int32;
  if (name == "char") return DataType::Int8;
  return find_name(kDtypeNames, kDtypes, name);
}
std::optional<ReduceOp> parse_op(std::string_view name) { return find_name(kOpNames, kOps, name); }
std::optional<MemoryKind> parse_memory_kind(std::string_view name) {
  if (name == "host") return MemoryKind::Host;
  if (name == "cuda") return MemoryKind::Cuda;
  return std::nullopt;
}
std::optional<Collective> parse_collective(std::string_view name) {
  if (name == "reduce_scatter" || name == "reduce-scatter") return Collective::ReduceScatter;
  if (name == "all_reduce") return Collective::AllReduce;
  if (name == "all_gather") return Collective::AllGather;
  if (name == "alltoall" || name == "all_to_all") return Collective::AllToAll;
  return find_name(kCollectiveNames, kCollectives, name);
}

std::span<const DataType> all_dtypes() { return kDtypes; }
std::span<const ReduceOp> all_ops() { return kOps; }
std::span<const Collective> all_collectives() { return kCollectives; }

bool collective_reduces(Collective c) {
  return traits(c).reduces;
}
bool collective_has_root(Collective c) {
  return traits(c).has_root;
}

}  // namespace smddp
