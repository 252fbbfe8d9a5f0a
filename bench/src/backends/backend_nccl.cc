// NCCL's own collectives on device buffers: the GPU baseline, as nccl-tests
// measures it. One communicator per rank on the device prepare_device() chose
// (the rank among the processes of its host, modulo the devices), from a
// unique id that rank 0 makes and the engine broadcasts.
//
// Ordering: the stream is cudaStreamNonBlocking, so it does not wait for the
// legacy default stream. The harness finishes its fills and poisons on its
// own stream before run() (device_memory.cc), and everything issued here is
// on stream_.
//
// The communicator is non-blocking (ncclConfig_t.blocking = 0), so no NCCL
// call can hang the driver: every wait polls the stream and
// ncclCommGetAsyncError with a deadline (comm.timeout(), the -T value), and on
// expiry the communicator is aborted (ncclCommAbort) and the wait throws
// TimeoutError. NCCL errors, synchronous or asynchronous, abort it too.
//
// avg is ncclAvg: NCCL pre-multiplies floats by 1/n, which equals the
// engine's sum-then-divide exactly for power-of-two rank counts only.
// alltoall, alltoallv, gather, scatter and sendrecv are grouped
// ncclSend/ncclRecv as nccl-tests issues them (in place through a scratch
// copy where an input would be overwritten); the barrier is a one-element
// allreduce.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sched.h>
#include <time.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "backends/backend.h"
#include "smddp/error.h"
#include "smddp/traits.h"

namespace smddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::Int8: return ncclInt8;
    case DataType::Uint8: return ncclUint8;
    case DataType::Int32: return ncclInt32;
    case DataType::Uint32: return ncclUint32;
    case DataType::Int64: return ncclInt64;
    case DataType::Uint64: return ncclUint64;
    case DataType::Float16: return ncclFloat16;
    case DataType::Bfloat16: return ncclBfloat16;
    case DataType::Float32: return ncclFloat32;
    case DataType::Float64: return ncclFloat64;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DataType::Float8E4M3: return ncclFloat8e4m3;
    case DataType::Float8E5M2: return ncclFloat8e5m2;
#else
    case DataType::Float8E4M3:
    case DataType::Float8E5M2:
      throw UsageError("nccl: " + std::string(to_string(t)) + " needs NCCL 2.24 or later; this build has " +
                       std::to_string(NCCL_VERSION_CODE));
#endif
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
  }
  return ncclSum;
}

void check_cuda(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string(what) + ": " + cudaGetErrorString(rc));
}

// Spin on the first polls (small collectives finish in microseconds), then
// give the core away, then nap.
class Poll {
 public:
  explicit Poll(double seconds)
      : deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))) {}
  // One failed poll; true when the deadline has passed.
  bool pause_expired() {
    ++polls_;
    if (polls_ < 2000) return false;
    if (polls_ < 4000) {
      sched_yield();
    } else {
      timespec nap{0, 20'000};
      nanosleep(&nap, nullptr);
    }
    return (polls_ & 63) == 0 && Clock::now() >= deadline_;
  }

 private:
  Clock::time_point deadline_;
  uint64_t polls_ = 0;
};

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(Communicator& comm)
      : timeout_s_(comm.timeout()), rank_(comm.rank()), size_(comm.size()), host_(comm.host(comm.rank())) {
    // The status travels with the id, so a failure on rank 0 ends every rank.
    struct {
      int32_t status;
      ncclUniqueId id;
    } hello{};
    if (rank_ == 0) hello.status = ncclGetUniqueId(&hello.id);
    comm.broadcast(&hello, &hello, sizeof hello, DataType::Uint8, 0);
    what_ = "ncclCommInitRank";
    if (hello.status != ncclSuccess) {
      throw TransportError("ncclGetUniqueId failed on rank 0: " +
                           std::string(ncclGetErrorString(static_cast<ncclResult_t>(hello.status))));
    }
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaMalloc(&barrier_, sizeof(int32_t)), "cudaMalloc");
    // On our own stream and waited for: the non-blocking stream is not
    // ordered after the legacy default stream, so nothing may be left there.
    check_cuda(cudaMemsetAsync(barrier_, 0, sizeof(int32_t), stream_), "cudaMemsetAsync");
    if (const cudaError_t rc = cudaStreamSynchronize(stream_); rc != cudaSuccess) {
      cudaGetLastError();  // a device failure while waiting: exit 3, as in sync()
      throw TransportError(std::string("cudaStreamSynchronize: ") + cudaGetErrorName(rc) + ": " +
                           cudaGetErrorString(rc) + where());
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    start("ncclCommInitRank");
    issued(ncclCommInitRankConfig(&comm_, size_, hello.id, rank_, &config));
  }

  ~NcclBackend() override {
    if (comm_) {
      // Flush and free; a peer gone by now must not hang the exit.
      ncclResult_t rc = ncclCommFinalize(comm_);
      if ((rc == ncclSuccess || rc == ncclInProgress) && settled_quietly()) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    cudaFree(scratch_);
    cudaFree(barrier_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string_view name() const override { return "nccl"; }
  std::string algorithm() const override { return "nccl"; }
  void* stream() override { return stream_; }

  void run(const CollectiveArgs& a) override;

  // One NCCL call per collective (kNcclCalls below).
  void allreduce(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t op) {
    issued(ncclAllReduce(a.send, a.recv, a.count, t, op, comm_, stream_));
  }
  void allgather(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    issued(ncclAllGather(a.send, a.recv, a.count, t, comm_, stream_));
  }
  void reduce_scatter(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t op) {
    issued(ncclReduceScatter(a.send, a.recv, a.count, t, op, comm_, stream_));
  }
  void broadcast(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    issued(ncclBroadcast(a.send, a.recv, a.count, t, a.root, comm_, stream_));
  }
  void reduce(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t op) {
    issued(ncclReduce(a.send, a.recv, a.count, t, op, a.root, comm_, stream_));
  }
  void barrier_call(const CollectiveArgs&, ncclDataType_t, ncclRedOp_t) {
    issued(ncclAllReduce(barrier_, barrier_, 1, ncclInt32, ncclSum, comm_, stream_));
  }
  // Gather and scatter as nccl-tests: grouped point-to-point with the root;
  // the root's own block is a device copy (a no-op in place).
  void gather(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    const size_t bytes = a.count * dtype_size(a.dtype);
    char* recv = static_cast<char*>(a.recv);
    issued(ncclGroupStart());
    if (rank_ == a.root) {
      for (int peer = 0; peer < size_; ++peer) {
        if (peer != rank_) issued(ncclRecv(recv + peer * bytes, a.count, t, peer, comm_, stream_));
      }
    } else {
      issued(ncclSend(a.send, a.count, t, a.root, comm_, stream_));
    }
    issued(ncclGroupEnd());
    if (rank_ == a.root) own_block(recv + rank_ * bytes, a.send, bytes);
  }
  void scatter(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    const size_t bytes = a.count * dtype_size(a.dtype);
    const char* send = static_cast<const char*>(a.send);
    issued(ncclGroupStart());
    if (rank_ == a.root) {
      for (int peer = 0; peer < size_; ++peer) {
        if (peer != rank_) issued(ncclSend(send + peer * bytes, a.count, t, peer, comm_, stream_));
      }
    } else {
      issued(ncclRecv(a.recv, a.count, t, a.root, comm_, stream_));
    }
    issued(ncclGroupEnd());
    if (rank_ == a.root) own_block(a.recv, send + rank_ * bytes, bytes);
  }
  // Ring neighbour exchange, as nccl-tests' sendrecv.
  void sendrecv(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    const size_t bytes = a.count * dtype_size(a.dtype);
    const void* send = a.send == a.recv && bytes ? saved_copy(a.send, bytes) : a.send;
    issued(ncclGroupStart());
    issued(ncclSend(send, a.count, t, (rank_ + 1) % size_, comm_, stream_));
    issued(ncclRecv(a.recv, a.count, t, (rank_ + size_ - 1) % size_, comm_, stream_));
    issued(ncclGroupEnd());
  }
  void alltoall(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    const size_t bytes = a.count * dtype_size(a.dtype);
    const char* send = static_cast<const char*>(a.send);
    char* recv = static_cast<char*>(a.recv);
    // Grouped send/recv cannot run in place: send from a copy.
    if (a.send == a.recv && bytes) send = saved_copy(a.send, bytes * static_cast<size_t>(size_));
    issued(ncclGroupStart());
    for (int peer = 0; peer < size_; ++peer) {
      issued(ncclSend(send + peer * bytes, a.count, t, peer, comm_, stream_));
      issued(ncclRecv(recv + peer * bytes, a.count, t, peer, comm_, stream_));
    }
    issued(ncclGroupEnd());
  }
  // Per-peer counts, packed by peer (host arrays).
  void alltoallv(const CollectiveArgs& a, ncclDataType_t t, ncclRedOp_t) {
    const size_t es = dtype_size(a.dtype);
    size_t total = 0;
    for (int peer = 0; peer < size_; ++peer) total += a.send_counts[peer];
    const char* send = static_cast<const char*>(a.send);
    char* recv = static_cast<char*>(a.recv);
    if (a.send == a.recv && total) send = saved_copy(a.send, total * es);
    size_t so = 0, ro = 0;
    issued(ncclGroupStart());
    for (int peer = 0; peer < size_; ++peer) {
      issued(ncclSend(send + so * es, a.send_counts[peer], t, peer, comm_, stream_));
      issued(ncclRecv(recv + ro * es, a.recv_counts[peer], t, peer, comm_, stream_));
      so += a.send_counts[peer];
      ro += a.recv_counts[peer];
    }
    issued(ncclGroupEnd());
  }

  void sync() override {
    Poll poll(timeout_s_);
    for (;;) {
      const cudaError_t rc = cudaStreamQuery(stream_);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) {
        // A device failure: exit 3 (docs/gpu.md), like an NCCL error.
        abort_comm();
        cudaGetLastError();
        throw TransportError(what_ + ": CUDA error while waiting for NCCL: " + cudaGetErrorName(rc) + ": " +
                             cudaGetErrorString(rc) + where());
      }
      if (poll.pause_expired()) timed_out("waiting for the NCCL kernels");
      check_async();
    }
    check_async();
  }

  void barrier() override {
    run({Collective::Barrier, nullptr, nullptr, 0, DataType::Int32, ReduceOp::Sum, 0});
    sync();
  }

  // nccl-tests -G: the slice's calls captured on stream_ (thread-local mode,
  // as nccl-tests: NCCL's own threads may allocate meanwhile) into one graph,
  // launched `launches` times between two events once the ranks line up.
  double time_graph_us(const CollectiveArgs& a, int iters, int launches) override {
    struct Graph {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      cudaEvent_t begin = nullptr, end = nullptr;
      ~Graph() {
        if (exec) cudaGraphExecDestroy(exec);
        if (graph) cudaGraphDestroy(graph);
        if (begin) cudaEventDestroy(begin);
        if (end) cudaEventDestroy(end);
      }
    } g;
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
      for (int i = 0; i < iters; ++i) run(a);
    } catch (...) {
      cudaStreamEndCapture(stream_, &g.graph);  // ends the capture, so the stream stays usable
      cudaGetLastError();
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream_, &g.graph), "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&g.exec, g.graph, 0), "cudaGraphInstantiate");
    check_cuda(cudaEventCreate(&g.begin), "cudaEventCreate");
    check_cuda(cudaEventCreate(&g.end), "cudaEventCreate");
    barrier();
    start("CUDA graph of " + std::string(to_string(a.collective)));
    check_cuda(cudaEventRecord(g.begin, stream_), "cudaEventRecord");
    for (int l = 0; l < launches; ++l) check_cuda(cudaGraphLaunch(g.exec, stream_), "cudaGraphLaunch");
    check_cuda(cudaEventRecord(g.end, stream_), "cudaEventRecord");
    sync();
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, g.begin, g.end), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e3 / (static_cast<double>(iters) * launches);
  }

 private:
  void start(std::string what) {
    if (!comm_ && what != "ncclCommInitRank") {
      throw TransportError(what + ": the NCCL communicator is unusable after an earlier failure");
    }
    what_ = std::move(what);
  }

  // After an NCCL call: ncclInProgress means the non-blocking communicator is
  // still working on it, and nothing may be issued until it settles.
  void issued(ncclResult_t rc) {
    if (rc == ncclSuccess) return;
    if (rc != ncclInProgress) failed(rc);
    Poll poll(timeout_s_);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(comm_, &state);
      if (q != ncclSuccess) failed(q);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) failed(state);
      if (poll.pause_expired()) timed_out("waiting for NCCL to accept the call");
    }
  }

  void check_async() {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t q = ncclCommGetAsyncError(comm_, &state);
    if (q != ncclSuccess) failed(q);
    if (state != ncclSuccess && state != ncclInProgress) failed(state);
  }

  // `bytes` of `src` copied to the scratch buffer on stream_ (in-place inputs).
  const char* saved_copy(const void* src, size_t bytes) {
    if (bytes > scratch_bytes_) {
      cudaFree(scratch_);
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      check_cuda(cudaMalloc(&scratch_, bytes), "cudaMalloc of the in-place scratch buffer");
      scratch_bytes_ = bytes;
    }
    check_cuda(cudaMemcpyAsync(scratch_, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    return static_cast<const char*>(scratch_);
  }

  void own_block(void* dst, const void* src, size_t bytes) {
    if (dst == src || !bytes) return;
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
  }

  bool settled_quietly() {
    Poll poll(timeout_s_);
    for (;;) {
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return false;
      if (state == ncclSuccess) return true;
      if (state != ncclInProgress || poll.pause_expired()) return false;
    }
  }

  void abort_comm() {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  std::string where() const { return " on rank " + std::to_string(rank_) + " (" + host_ + ")"; }

  [[noreturn]] void failed(ncclResult_t rc) {
    const std::string detail = comm_ ? ncclGetLastError(comm_) : "";
    abort_comm();
    const std::string msg = what_ + ": NCCL error: " + ncclGetErrorString(rc) +
                            (detail.empty() ? "" : " (" + detail + ")") + where();
    if (rc == ncclInvalidUsage || rc == ncclInvalidArgument) throw Error(msg);
    throw TransportError(msg);
  }

  [[noreturn]] void timed_out(const char* doing) {
    abort_comm();
    throw TimeoutError(what_ + " timed out after " + std::to_string(std::lround(timeout_s_)) + " s " + doing +
                       where() + "; NCCL communicator aborted");
  }

  double timeout_s_;
  int rank_, size_;
  std::string host_;
  std::string what_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* barrier_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

struct NcclCall {
  Collective collective;
  void (NcclBackend::*run)(const CollectiveArgs&, ncclDataType_t, ncclRedOp_t);
};
constexpr std::array<NcclCall, kNumCollectives> kNcclCalls = {{
    {Collective::AllReduce, &NcclBackend::allreduce},
    {Collective::AllGather, &NcclBackend::allgather},
    {Collective::ReduceScatter, &NcclBackend::reduce_scatter},
    {Collective::Broadcast, &NcclBackend::broadcast},
    {Collective::Reduce, &NcclBackend::reduce},
    {Collective::AllToAll, &NcclBackend::alltoall},
    {Collective::Barrier, &NcclBackend::barrier_call},
    {Collective::Gather, &NcclBackend::gather},
    {Collective::Scatter, &NcclBackend::scatter},
    {Collective::SendRecv, &NcclBackend::sendrecv},
    {Collective::AllToAllV, &NcclBackend::alltoallv},
}};
static_assert(covers_every_collective(kNcclCalls), "one NCCL call per collective, in enum order");

void NcclBackend::run(const CollectiveArgs& a) {
  start(std::string(to_string(a.collective)));
  const ncclDataType_t t = nccl_type(a.dtype);
  const ncclRedOp_t op = nccl_op(a.op);
  (this->*kNcclCalls[static_cast<size_t>(a.collective)].run)(a, t, op);
}

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(Communicator& comm) { return std::make_unique<NcclBackend>(comm); }

}  // namespace smddp::bench
