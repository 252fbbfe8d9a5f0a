// Open MPI's own collectives on MPI_COMM_WORLD, the baseline. float16 and
// bfloat16 have no MPI type in Open MPI 4.1: they travel as 2-byte derived
// types reduced by user-defined ops built on our kernels. avg is MPI_SUM
// followed by the same division the engine does.
#include <mpi.h>

#include <cstring>
#include <string>

#include "backend.h"
#include "smddp/error.h"
#include "smddp/reduce.h"

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

class MpiBackend final : public Backend {
 public:
  MpiBackend() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Type_contiguous(2, MPI_BYTE, &half_);
    MPI_Type_commit(&half_);
    MPI_Type_contiguous(2, MPI_BYTE, &bf16_);
    MPI_Type_commit(&bf16_);
    for (ReduceOp op : all_ops()) {
      half_ops_[static_cast<int>(op)] = make_op<DataType::Float16>(op);
      bf16_ops_[static_cast<int>(op)] = make_op<DataType::Bfloat16>(op);
    }
  }
  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (int i = 0; i < kNumReduceOps; ++i) {
      MPI_Op_free(&half_ops_[i]);
      MPI_Op_free(&bf16_ops_[i]);
    }
    MPI_Type_free(&half_);
    MPI_Type_free(&bf16_);
    MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return "mpi"; }
  std::string algorithm() const override { return "mpi"; }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  void run(const CollectiveArgs& a) override {
    const MPI_Datatype t = type(a.dtype);
    const MPI_Op op = mpi_op(a.dtype, a.op);
    const int n = static_cast<int>(a.count);
    const size_t es = dtype_size(a.dtype);
    const bool in_place = is_in_place(a);
    switch (a.collective) {
      case Collective::AllReduce:
        check(MPI_Allreduce(in_place ? MPI_IN_PLACE : a.send, a.recv, n, t, op, comm_), "MPI_Allreduce");
        break;
      case Collective::AllGather:
        check(MPI_Allgather(in_place ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, comm_), "MPI_Allgather");
        break;
      case Collective::ReduceScatter:
        if (in_place) {
          // MPI leaves the result at the start of the buffer; NCCL at rank*count.
          char* full = static_cast<char*>(a.recv) - rank_ * a.count * es;
          check(MPI_Reduce_scatter_block(MPI_IN_PLACE, full, n, t, op, comm_), "MPI_Reduce_scatter_block");
          std::memmove(a.recv, full, a.count * es);
        } else {
          check(MPI_Reduce_scatter_block(a.send, a.recv, n, t, op, comm_), "MPI_Reduce_scatter_block");
        }
        break;
      case Collective::Broadcast:
        if (rank_ == a.root && a.send != a.recv) std::memcpy(a.recv, a.send, a.count * es);
        check(MPI_Bcast(a.recv, n, t, a.root, comm_), "MPI_Bcast");
        break;
      case Collective::Reduce: {
        const void* send = (in_place && rank_ == a.root) ? MPI_IN_PLACE : a.send;
        check(MPI_Reduce(send, a.recv, n, t, op, a.root, comm_), "MPI_Reduce");
        break;
      }
      case Collective::AllToAll:
        check(MPI_Alltoall(in_place ? MPI_IN_PLACE : a.send, n, t, a.recv, n, t, comm_), "MPI_Alltoall");
        break;
      case Collective::Barrier:
        check(MPI_Barrier(comm_), "MPI_Barrier");
        break;
    }
    if (a.op == ReduceOp::Avg && collective_reduces(a.collective) &&
        (a.collective != Collective::Reduce || rank_ == a.root)) {
      divide(a.recv, a.count, a.dtype, size_);
    }
  }

 private:
  bool is_in_place(const CollectiveArgs& a) const {
    const size_t es = dtype_size(a.dtype);
    switch (a.collective) {
      case Collective::AllGather:
        return a.send == static_cast<const char*>(a.recv) + rank_ * a.count * es;
      case Collective::ReduceScatter:
        return a.recv == static_cast<const char*>(a.send) + rank_ * a.count * es;
      default:
        return a.send == a.recv;
    }
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
    }
    return MPI_BYTE;
  }

  MPI_Op mpi_op(DataType t, ReduceOp op) const {
    if (t == DataType::Float16) return half_ops_[static_cast<int>(op)];
    if (t == DataType::Bfloat16) return bf16_ops_[static_cast<int>(op)];
    switch (op) {
      case ReduceOp::Prod: return MPI_PROD;
      case ReduceOp::Min: return MPI_MIN;
      case ReduceOp::Max: return MPI_MAX;
      default: return MPI_SUM;
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  MPI_Datatype half_ = MPI_DATATYPE_NULL, bf16_ = MPI_DATATYPE_NULL;
  MPI_Op half_ops_[kNumReduceOps] = {};
  MPI_Op bf16_ops_[kNumReduceOps] = {};
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace smddp::bench
