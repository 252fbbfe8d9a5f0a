// Open MPI's own collectives on MPI_COMM_WORLD (or a split group's part of it), the baseline. float16,
// bfloat16 and the fp8 types have no MPI type in Open MPI 4.1: they travel as
// 2- and 1-byte derived types reduced by user-defined ops built on our
// kernels. avg is MPI_SUM followed by the same division the engine does.
#include <mpi.h>

#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/mpi_tuned.h"
#include "smddp/error.h"
#include "smddp/reduce.h"
#include "smddp/traits.h"

namespace smddp::bench {
namespace {

template <DataType T, ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<size_t>(*len), T, Op);
}

template <DataType T>
MPI_Op make_op(ReduceOp op) {
  MPI_User_function* fn = nullptr;
  switch (op) {
    case ReduceOp::Prod: fn = user_reduce<T, ReduceOp::Prod>; break;
    case ReduceOp::Min: fn = user_reduce<T, ReduceOp::Min>; break;
    case ReduceOp::Max: fn = user_reduce<T, ReduceOp::Max>; break;
    default: fn = user_reduce<T, ReduceOp::Sum>;
  }
  MPI_Op result;
  MPI_Op_create(fn, 1, &result);
  return result;
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw TransportError(std::string(what) + " failed: " + std::string(msg, len));
}

std::vector<std::string_view> tuned_collectives(const std::vector<Collective>& run);
std::string_view tuned_collective(Collective c);

class MpiBackend final : public Backend {
 public:
  // `tuned`: an Open MPI coll/tuned algorithm forced on the collectives that
  // offer it (mpi_tuned.h), or empty for MPI's default decision.
  MpiBackend(const std::string& tuned, const std::vector<Collective>& run, int group) : tuned_(tuned) {
    // Our own communicator: the world's ranks, or those of this rank's split group.
    const auto create = [&] {
      if (group < 0) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
        return;
      }
      int world_rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      check(MPI_Comm_split(MPI_COMM_WORLD, group, world_rank, &comm_), "MPI_Comm_split");
    };
    if (tuned_.empty()) {
      create();
    } else {
      const MpiTunedForce force(tuned_, tuned_collectives(run));
      create();  // reads the forced algorithms
      for (Collective c : all_collectives()) forced_[static_cast<size_t>(c)] = force.forces(tuned_collective(c));
      name_ = "mpi:" + tuned_;
    }
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Type_contiguous(2, MPI_BYTE, &half_);
    MPI_Type_commit(&half_);
    MPI_Type_contiguous(2, MPI_BYTE, &bf16_);
    MPI_Type_commit(&bf16_);
    MPI_Type_contiguous(1, MPI_BYTE, &e4m3_);
    MPI_Type_commit(&e4m3_);
    MPI_Type_contiguous(1, MPI_BYTE, &e5m2_);
    MPI_Type_commit(&e5m2_);
    for (ReduceOp op : all_ops()) {
      half_ops_[static_cast<int>(op)] = make_op<DataType::Float16>(op);
      bf16_ops_[static_cast<int>(op)] = make_op<DataType::Bfloat16>(op);
      e4m3_ops_[static_cast<int>(op)] = make_op<DataType::Float8E4M3>(op);
      e5m2_ops_[static_cast<int>(op)] = make_op<DataType::Float8E5M2>(op);
    }
  }
  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (int i = 0; i < kNumReduceOps; ++i) {
      MPI_Op_free(&half_ops_[i]);
      MPI_Op_free(&bf16_ops_[i]);
      MPI_Op_free(&e4m3_ops_[i]);
      MPI_Op_free(&e5m2_ops_[i]);
    }
    MPI_Type_free(&half_);
    MPI_Type_free(&bf16_);
    MPI_Type_free(&e4m3_);
    MPI_Type_free(&e5m2_);
    MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return name_; }
  std::string algorithm() const override { return forced_[static_cast<size_t>(last_)] ? tuned_ : "mpi"; }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  void run(const CollectiveArgs& a) override;

  // One MPI call per collective (kMpiCalls below), NCCL's conventions in.
  struct Call {
    const CollectiveArgs& a;
    MPI_Datatype t;
    MPI_Op op;
    int n;  // the count, as MPI takes it
    bool in_place;
  };
  void allreduce(const Call& c) {
    check(MPI_Allreduce(c.in_place ? MPI_IN_PLACE : c.a.send, c.a.recv, c.n, c.t, c.op, comm_), "MPI_Allreduce");
  }
  void allgather(const Call& c) {
    check(MPI_Allgather(c.in_place ? MPI_IN_PLACE : c.a.send, c.n, c.t, c.a.recv, c.n, c.t, comm_), "MPI_Allgather");
  }
  void reduce_scatter(const Call& c) {
    if (c.in_place) {
      // MPI leaves the result at the start of the buffer; NCCL at rank*count.
      const size_t bytes = c.a.count * dtype_size(c.a.dtype);
      char* full = static_cast<char*>(c.a.recv) - rank_ * bytes;
      check(MPI_Reduce_scatter_block(MPI_IN_PLACE, full, c.n, c.t, c.op, comm_), "MPI_Reduce_scatter_block");
      std::memmove(c.a.recv, full, bytes);
    } else {
      check(MPI_Reduce_scatter_block(c.a.send, c.a.recv, c.n, c.t, c.op, comm_), "MPI_Reduce_scatter_block");
    }
  }
  void broadcast(const Call& c) {
    if (rank_ == c.a.root && c.a.send != c.a.recv) std::memcpy(c.a.recv, c.a.send, c.a.count * dtype_size(c.a.dtype));
    check(MPI_Bcast(c.a.recv, c.n, c.t, c.a.root, comm_), "MPI_Bcast");
  }
  void reduce(const Call& c) {
    const void* send = (c.in_place && rank_ == c.a.root) ? MPI_IN_PLACE : c.a.send;
    check(MPI_Reduce(send, c.a.recv, c.n, c.t, c.op, c.a.root, comm_), "MPI_Reduce");
  }
  void alltoall(const Call& c) {
    check(MPI_Alltoall(c.in_place ? MPI_IN_PLACE : c.a.send, c.n, c.t, c.a.recv, c.n, c.t, comm_), "MPI_Alltoall");
  }
  void barrier_call(const Call&) { barrier(); }
  void gather(const Call& c) {
    // MPI_IN_PLACE is the root's alone; the root's block is already in place.
    const void* send = (c.in_place && rank_ == c.a.root) ? MPI_IN_PLACE : c.a.send;
    check(MPI_Gather(send, c.n, c.t, c.a.recv, c.n, c.t, c.a.root, comm_), "MPI_Gather");
  }
  void scatter(const Call& c) {
    void* recv = (c.in_place && rank_ == c.a.root) ? MPI_IN_PLACE : c.a.recv;
    check(MPI_Scatter(c.a.send, c.n, c.t, recv, c.n, c.t, c.a.root, comm_), "MPI_Scatter");
  }
  void sendrecv(const Call& c) {
    const int to = (rank_ + 1) % size_, from = (rank_ + size_ - 1) % size_;
    if (c.in_place) {
      check(MPI_Sendrecv_replace(c.a.recv, c.n, c.t, to, 0, from, 0, comm_, MPI_STATUS_IGNORE), "MPI_Sendrecv_replace");
    } else {
      check(MPI_Sendrecv(c.a.send, c.n, c.t, to, 0, c.a.recv, c.n, c.t, from, 0, comm_, MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
    }
  }
  void alltoallv(const Call& c) {
    // Counts and displacements as MPI's ints; packed by peer.
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    size_t so = 0, ro = 0;
    for (int p = 0; p < size_; ++p) {
      sc[p] = as_int(c.a.send_counts[p]);
      rc[p] = as_int(c.a.recv_counts[p]);
      sd[p] = as_int(so);
      rd[p] = as_int(ro);
      so += c.a.send_counts[p];
      ro += c.a.recv_counts[p];
    }
    const void* send = c.a.send;
    if (c.in_place) {
      // MPI_IN_PLACE would reuse the receive counts for sending: send a copy.
      const size_t bytes = so * dtype_size(c.a.dtype);
      if (saved_.size() < bytes) saved_.resize(bytes);
      std::memcpy(saved_.data(), c.a.send, bytes);
      send = saved_.data();
    }
    check(MPI_Alltoallv(send, sc.data(), sd.data(), c.t, c.a.recv, rc.data(), rd.data(), c.t, comm_), "MPI_Alltoallv");
  }

 private:
  static int as_int(size_t v) {
    if (v > static_cast<size_t>(std::numeric_limits<int>::max())) throw UsageError("mpi: a count above INT_MAX");
    return static_cast<int>(v);
  }

  bool is_in_place(const CollectiveArgs& a) const {
    const size_t offset = rank_ * a.count * dtype_size(a.dtype);
    const InPlace layout = traits(a.collective).in_place;
    if (layout == InPlace::SendInRecv) return a.send == static_cast<const char*>(a.recv) + offset;
    if (layout == InPlace::RecvInSend) return a.recv == static_cast<const char*>(a.send) + offset;
    return a.send == a.recv;
  }

  MPI_Datatype type(DataType t) const {
    switch (t) {
      case DataType::Int8: return MPI_INT8_T;
      case DataType::Uint8: return MPI_UINT8_T;
      case DataType::Int32: return MPI_INT32_T;
      case DataType::Uint32: return MPI_UINT32_T;
      case DataType::Int64: return MPI_INT64_T;
      case DataType::Uint64: return MPI_UINT64_T;
      case DataType::Float16: return half_;
      case DataType::Bfloat16: return bf16_;
      case DataType::Float32: return MPI_FLOAT;
      case DataType::Float64: return MPI_DOUBLE;
      case DataType::Float8E4M3: return e4m3_;
      case DataType::Float8E5M2: return e5m2_;
    }
    return MPI_BYTE;
  }

  MPI_Op mpi_op(DataType t, ReduceOp op) const {
    if (t == DataType::Float16) return half_ops_[static_cast<int>(op)];
    if (t == DataType::Bfloat16) return bf16_ops_[static_cast<int>(op)];
    if (t == DataType::Float8E4M3) return e4m3_ops_[static_cast<int>(op)];
    if (t == DataType::Float8E5M2) return e5m2_ops_[static_cast<int>(op)];
    switch (op) {
      case ReduceOp::Prod: return MPI_PROD;
      case ReduceOp::Min: return MPI_MIN;
      case ReduceOp::Max: return MPI_MAX;
      default: return MPI_SUM;
    }
  }

  std::string tuned_, name_ = "mpi";
  std::array<bool, kNumCollectives> forced_{};
  Collective last_ = Collective::AllReduce;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  MPI_Datatype half_ = MPI_DATATYPE_NULL, bf16_ = MPI_DATATYPE_NULL;
  MPI_Datatype e4m3_ = MPI_DATATYPE_NULL, e5m2_ = MPI_DATATYPE_NULL;
  MPI_Op half_ops_[kNumReduceOps] = {};
  MPI_Op bf16_ops_[kNumReduceOps] = {};
  MPI_Op e4m3_ops_[kNumReduceOps] = {};
  MPI_Op e5m2_ops_[kNumReduceOps] = {};
  std::vector<char> saved_;  // in-place alltoallv input
};

struct MpiCall {
  Collective collective;
  void (MpiBackend::*run)(const MpiBackend::Call&);
  std::string_view tuned;  // the collective in Open MPI's coll_tuned_<tuned>_algorithm; "" if none
};
constexpr std::array<MpiCall, kNumCollectives> kMpiCalls = {{
    {Collective::AllReduce, &MpiBackend::allreduce, "allreduce"},
    {Collective::AllGather, &MpiBackend::allgather, "allgather"},
    {Collective::ReduceScatter, &MpiBackend::reduce_scatter, "reduce_scatter_block"},
    {Collective::Broadcast, &MpiBackend::broadcast, "bcast"},
    {Collective::Reduce, &MpiBackend::reduce, "reduce"},
    {Collective::AllToAll, &MpiBackend::alltoall, "alltoall"},
    {Collective::Barrier, &MpiBackend::barrier_call, "barrier"},
    {Collective::Gather, &MpiBackend::gather, "gather"},
    {Collective::Scatter, &MpiBackend::scatter, "scatter"},
    {Collective::SendRecv, &MpiBackend::sendrecv, ""},
    {Collective::AllToAllV, &MpiBackend::alltoallv, "alltoallv"},
}};
static_assert(covers_every_collective(kMpiCalls), "one MPI call per collective, in enum order");

std::vector<std::string_view> tuned_collectives(const std::vector<Collective>& run) {
  std::vector<std::string_view> out;
  for (Collective c : run) {
    if (!kMpiCalls[static_cast<size_t>(c)].tuned.empty()) out.push_back(kMpiCalls[static_cast<size_t>(c)].tuned);
  }
  return out;
}
std::string_view tuned_collective(Collective c) { return kMpiCalls[static_cast<size_t>(c)].tuned; }

void MpiBackend::run(const CollectiveArgs& a) {
  last_ = a.collective;
  const Call call{a, type(a.dtype), mpi_op(a.dtype, a.op), static_cast<int>(a.count), is_in_place(a)};
  (this->*kMpiCalls[static_cast<size_t>(a.collective)].run)(call);
  if (a.op == ReduceOp::Avg && collective_reduces(a.collective) && traits(a.collective).receives_on(rank_, a.root)) {
    divide(a.recv, a.count, a.dtype, size_);
  }
}

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(const std::string& tuned, const std::vector<Collective>& run, int group) {
  return std::make_unique<MpiBackend>(tuned, run, group);
}

std::vector<MpiTunedAlgorithms> mpi_tuned_algorithm_list() {
  std::vector<MpiTunedAlgorithms> out;
  for (const auto& call : kMpiCalls) {
    if (call.tuned.empty()) continue;
    auto names = mpi_tuned_algorithms(call.tuned);
    std::erase(names, "ignore");  // value 0: no force, MPI's default decision (--backend mpi)
    out.push_back({call.collective, std::string(call.tuned), std::move(names)});
  }
  return out;
}

}  // namespace smddp::bench
