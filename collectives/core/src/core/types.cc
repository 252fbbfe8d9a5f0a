#include "smddp/types.h"

#include <algorithm>
#include <array>

#include "smddp/common/strings.h"
#include "smddp/traits.h"

namespace smddp {
namespace {

// One row per DataType, in enum order: nccl-tests' name (what every output
// prints), then the other names -d accepts (ours before issue 22, torch's).
struct DtypeRow {
  DataType dtype;
  std::string_view name;
  size_t size;
  bool is_float;
  std::array<std::string_view, 3> aliases;
};
constexpr std::array<DtypeRow, kNumDataTypes> kDtypeRows = {{
    {DataType::Int8, "int8", 1, false, {"char"}},
    {DataType::Uint8, "uint8", 1, false, {}},
    {DataType::Int32, "int32", 4, false, {"int"}},
    {DataType::Uint32, "uint32", 4, false, {}},
    {DataType::Int64, "int64", 8, false, {}},
    {DataType::Uint64, "uint64", 8, false, {}},
    {DataType::Float16, "half", 2, true, {"float16", "fp16"}},
    {DataType::Bfloat16, "bfloat16", 2, true, {"bf16"}},
    {DataType::Float32, "float", 4, true, {"float32", "fp32"}},
    {DataType::Float64, "double", 8, true, {"float64", "fp64"}},
    {DataType::Float8E4M3, "f8e4m3", 1, true, {"fp8_e4m3", "float8_e4m3fn", "e4m3"}},
    {DataType::Float8E5M2, "f8e5m2", 1, true, {"fp8_e5m2", "float8_e5m2", "e5m2"}},
}};
constexpr bool dtype_rows_in_enum_order() {
  for (size_t i = 0; i < kDtypeRows.size(); ++i) {
    if (static_cast<size_t>(kDtypeRows[i].dtype) != i) return false;
  }
  return true;
}
static_assert(dtype_rows_in_enum_order(), "kDtypeRows must follow enum DataType");

constexpr auto kDtypes = [] {
  std::array<DataType, kNumDataTypes> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kDtypeRows[i].dtype;
  return out;
}();

// In enum order; the names are nccl-tests' too.
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

size_t dtype_size(DataType t) { return kDtypeRows[static_cast<size_t>(t)].size; }
bool dtype_is_float(DataType t) { return kDtypeRows[static_cast<size_t>(t)].is_float; }
std::string_view to_string(DataType t) { return kDtypeRows[static_cast<size_t>(t)].name; }
std::string_view to_string(ReduceOp op) { return kOpNames[static_cast<size_t>(op)]; }
std::string_view to_string(MemoryKind m) { return m == MemoryKind::Host ? "host" : "cuda"; }
std::string_view to_string(Collective c) { return kCollectiveNames[static_cast<size_t>(c)]; }

std::optional<DataType> parse_dtype(std::string_view name) {
  if (name.empty()) return std::nullopt;
  for (const DtypeRow& row : kDtypeRows) {
    if (row.name == name) return row.dtype;
    for (std::string_view alias : row.aliases) {
      if (alias == name) return row.dtype;
    }
  }
  return std::nullopt;
}
std::optional<ReduceOp> parse_op(std::string_view name) { return find_name(kOpNames, kOps, name); }
bool is_network_transport(std::string_view name) {
  const auto names = common::split(kNetworkTransportChoices, ',');
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string network_transport_list() { return common::join(common::split(kNetworkTransportChoices, ','), ", "); }

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
